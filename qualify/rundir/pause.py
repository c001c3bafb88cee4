"""A test-only pause: qualify stops itself at a named point, so that a test can kill it there.

Some windows of a run are a few microseconds wide (between the two renames that commit the
final reports): no watcher outside the process can SIGKILL qualify inside them reliably. With
``QUALIFY_TEST_PAUSE_AT=<point>`` in its environment, qualify sends itself SIGSTOP when it
reaches that point; the test sees it stopped (``waitpid`` with ``WUNTRACED``) and kills it.
For tests only: nothing else sets the variable, and unset it costs one dictionary lookup.
"""

from __future__ import annotations

import os
import signal

ENV_PAUSE_AT = "QUALIFY_TEST_PAUSE_AT"
JUNIT_FINAL = "junit-final"
"""The final JUnit file is in place, the final audit is still staged (``RunDir.commit_reports``)."""
TAKING_OVER = "taking-over"
"""A dead run's entry is locked by this qualify, its reports not completed yet
(``qualify.report.abandoned.take_over_one``)."""
POINTS = frozenset({JUNIT_FINAL, TAKING_OVER})


def pause_at(point: str) -> None:
    """Stop this process (SIGSTOP) when ``QUALIFY_TEST_PAUSE_AT`` names ``point``."""
    if os.environ.get(ENV_PAUSE_AT) == point:
        os.kill(os.getpid(), signal.SIGSTOP)
