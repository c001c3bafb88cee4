"""``python -m qualify``."""

from qualify.cli import entry

entry()
