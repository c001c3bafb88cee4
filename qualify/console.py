"""Printing to a standard stream whose reader may go away (``qualify run | head -3``)."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import TextIO

from qualify.untrusted import printable


def printed(stream: TextIO, text: str | None = None) -> None:
    """``text`` written to ``stream`` (none: the stream flushed). When its reader has gone
    away, the rest goes nowhere (``silence``): what qualify did (a run's reports, its exit
    code) stands, without a traceback. A lone surrogate (a test id's, a file name's
    undecodable byte) is written visibly (``\\xNN``) whatever the stream's encoding."""
    try:
        if text is None:
            stream.flush()
        else:
            stream.write(printable(text))
    except BrokenPipeError:
        silence(stream)


def silence(stream: TextIO) -> None:
    """Point ``stream``'s descriptor at /dev/null, so that what it still holds and anything
    written after (the exit's own flush) goes nowhere instead of failing again."""
    with contextlib.suppress(OSError, ValueError):  # (a stream without a descriptor)
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, stream.fileno())
        os.close(devnull)


def display_path(path: Path) -> str:
    """``path`` relative to the working directory when below it (reports name no host paths)."""
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)
