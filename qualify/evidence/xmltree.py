"""The element tree junitparser builds on: lxml when it is installed, else the standard
library's ElementTree (junitparser decides at import). Parsers and writers that hand trees to
junitparser use the same one, or junitparser would be given elements it cannot handle."""

from __future__ import annotations

from typing import Any

import junitparser.junitparser as _junitparser

etree: Any = vars(_junitparser)["etree"]
