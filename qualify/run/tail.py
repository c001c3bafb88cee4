"""Incremental reader of a JSON-lines file another process appends to (the monitor's view of
the harness events while the E2E runs)."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any

from harness.contract import decode_line

READ_BYTES = 1 << 20


class JsonlTail:
    """Incremental reader: each ``read()`` returns the complete lines appended since the last.

    The file is opened once it exists and kept open: a poll is one ``pread`` (the writers only
    ever append to it).
    """

    def __init__(self, path: Path):
        self.path = path
        self.offset = 0
        self._partial = b""
        self._fd: int | None = None

    def read(self) -> bytes:
        """The complete lines appended since the last read, as bytes (a partial last line
        waits for its newline); empty when there are none."""
        if self._fd is None:
            try:
                self._fd = os.open(self.path, os.O_RDONLY | os.O_CLOEXEC)
            except FileNotFoundError:
                return b""
        chunk = os.pread(self._fd, READ_BYTES, self.offset)
        if not chunk:
            return b""  # the common case: one system call
        while len(chunk) % READ_BYTES == 0:  # more than one read's worth appended
            more = os.pread(self._fd, READ_BYTES, self.offset + len(chunk))
            if not more:
                break
            chunk += more
        self.offset += len(chunk)
        data = self._partial + chunk
        cut = data.rfind(b"\n") + 1
        self._partial = data[cut:]
        return data[:cut]

    def poll(self) -> list[dict[str, Any]]:
        """New complete records, decoded."""
        lines = self.read().split(b"\n")
        return [record for record in map(decode_line, lines) if record is not None]

    def close(self) -> None:
        """Release the file (a later ``read`` opens it again)."""
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = None
