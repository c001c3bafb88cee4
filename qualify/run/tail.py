"""Incremental reader of a JSON-lines file another process appends to (the monitor's view of
the harness events while the E2E runs)."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any

from harness.contract import decode_line
from qualify.untrusted import open_regular_fd

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

    def read(self, max_bytes: int | None = None) -> bytes:
        """The complete lines appended since the last read, as bytes (a partial last line
        waits for its newline); empty when there are none. With ``max_bytes``, from about
        that much of the file at most (the rest waits for the next read)."""
        if self._fd is None:
            try:
                self._fd = open_regular_fd(self.path)
            except OSError:  # missing, or not a regular file (a pipe is never opened)
                return b""
        size = READ_BYTES if max_bytes is None else max(1, min(READ_BYTES, max_bytes))
        chunk = os.pread(self._fd, size, self.offset)
        if not chunk:
            return b""  # the common case: one system call
        while len(chunk) % READ_BYTES == 0 and (max_bytes is None or len(chunk) < max_bytes):
            more = os.pread(self._fd, READ_BYTES, self.offset + len(chunk))  # more was appended
            if not more:
                break
            chunk += more
        self.offset += len(chunk)
        data = self._partial + chunk
        cut = data.rfind(b"\n") + 1
        self._partial = data[cut:]
        return data[:cut]

    def rest(self) -> bytes:
        """The partial last line held back, taken (what a writer killed mid-line left)."""
        rest, self._partial = self._partial, b""
        return rest

    def status(self) -> os.stat_result | None:
        """The open file's status (None: not opened yet, it did not exist)."""
        return os.fstat(self._fd) if self._fd is not None else None

    def shrank(self) -> bool:
        """The file is shorter than what was read of it: no longer the file that was read."""
        status = self.status()
        return status is not None and status.st_size < self.offset

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
