"""Bounded capture of the E2E's stdout/stderr: the head and the tail are kept, sizes recorded."""

from __future__ import annotations

import collections
import contextlib
import os
import select
import threading
from pathlib import Path
from typing import IO

from qualify.cuts import SEAM, seam
from qualify.records import frozen_record

HEAD_BYTES = 1 << 20
TAIL_BYTES = 1 << 20
SEAM_BYTES = SEAM
"""How far from a cut the log looks for a line or word boundary to cut at instead: a cut
inside a value would leave a piece of it on either side, each too short to recognize."""
_CHUNK = 64 * 1024
_WAKE_S = 0.05
"""How often a pump blocked on an empty pipe looks whether the writers were killed."""
_SETTLE_S = 0.01
"""How long a pump waits for a write in flight once the writers were killed."""
_GATHER_S = 0.02
"""After a read shorter than a chunk, how long the pump lets output gather before it reads
again. The E2E's output is unbuffered (``PYTHONUNBUFFERED``: nothing is lost in a buffer
when it is killed), so a suite printing pytest's progress writes one character a test: read as
it comes, that woke the pump for each of them (a read per test); with the pause, at most 50
reads a second. A flood, read in full chunks, is read
back to back; the pipe holds 64 KiB, so a writer waits for the pump only when it writes more
than that within the pause."""


@frozen_record
class LogStats:
    """What happened to one stream."""

    bytes_total: int = 0
    bytes_kept: int = 0
    truncated: bool = False
    write_error: str | None = None
    """Why the log could not be stored (the disk filled up): the pipe was drained anyway."""


class BoundedLog(threading.Thread):
    """Copies a pipe into ``path``: the first ``head`` bytes as they come, the last ``tail``
    bytes at the end, with a marker saying how much was left out in between. Both cuts are
    moved back (the head's end) or on (the tail's start) to a line's end, or a word's, within
    :data:`SEAM_BYTES`; without one, those bytes are left out too: never a word in two
    pieces."""

    def __init__(
        self,
        pipe: IO[bytes],
        path: Path,
        head: int = HEAD_BYTES,
        tail: int = TAIL_BYTES,
        echo: IO[bytes] | None = None,
    ):
        super().__init__(name=f"qualify-log-{path.name}", daemon=True)
        self.pipe, self.path, self.head, self.tail_limit = pipe, path, head, tail
        self.echo = echo
        self.total = 0
        self._tail: collections.deque[bytes] = collections.deque()
        self._tail_size = 0
        self._head_end = b""  # the head's last SEAM_BYTES
        self._kept: int | None = None  # set when the cuts were made
        self.write_error: str | None = None
        self._writers_killed = threading.Event()
        self._short = False
        self.reads = 0
        """Reads of the pipe that returned output."""

    def writers_killed(self) -> None:
        """Every process that could write to the pipe has been sent SIGKILL: what is in the
        pipe now is all there will be. The pump drains it and ends without waiting for the
        end-of-file, which comes only once the kernel has torn the last writer down."""
        self._writers_killed.set()

    def _read(self) -> bytes:
        fd = self.pipe.fileno()
        if self._short:
            self._writers_killed.wait(_GATHER_S)  # ends at once when the writers are killed
        while True:
            if self._writers_killed.is_set():
                # A write already in flight when the signal came lands within microseconds.
                ready, _, _ = select.select([fd], [], [], _SETTLE_S)
                return self._counted(os.read(fd, _CHUNK) if ready else b"")
            ready, _, _ = select.select([fd], [], [], _WAKE_S)
            if ready:
                return self._counted(os.read(fd, _CHUNK))

    def _counted(self, chunk: bytes) -> bytes:
        self._short = len(chunk) < _CHUNK
        self.reads += bool(chunk)
        return chunk

    def run(self) -> None:
        """Drain the pipe until EOF (the child and all holders of the pipe exited); a write
        that fails (a full disk) is recorded and the pipe drained on regardless, so the E2E
        never blocks on a full pipe."""
        out: IO[bytes] | None = None
        try:
            out = self.path.open("wb")
        except OSError as exc:
            self._failed(exc)
        while chunk := self._read():
            if out is None:
                self.total += len(chunk)
                continue
            try:
                self._take(chunk, out)
            except OSError as exc:
                self._failed(exc)
                out = self._abandon(out)
        if out is not None:
            try:
                self._finish(out)
                out.close()
            except OSError as exc:
                self._failed(exc)
                self._abandon(out)
        self.pipe.close()

    def _failed(self, exc: OSError) -> None:
        self.write_error = self.write_error or f"{self.path.name}: {exc.strerror}"

    @staticmethod
    def _abandon(out: IO[bytes]) -> None:
        with contextlib.suppress(OSError):
            out.close()

    def _take(self, chunk: bytes, out: IO[bytes]) -> None:
        if self.echo is not None:
            self.echo.write(chunk)
            self.echo.flush()
        room = max(0, self.head - self.total)
        self.total += len(chunk)
        if room:
            out.write(chunk[:room])
            out.flush()
            self._head_end = (self._head_end + chunk[:room])[-SEAM_BYTES:]
            chunk = chunk[room:]
        if chunk:
            self._tail.append(chunk)
            self._tail_size += len(chunk)
            while self._tail_size - len(self._tail[0]) >= self.tail_limit:
                self._tail_size -= len(self._tail.popleft())

    def _finish(self, out: IO[bytes]) -> None:
        tail = b"".join(self._tail)[-self.tail_limit :] if self._tail else b""
        head = min(self.total, self.head)
        omitted = self.total - head - len(tail)
        if omitted > 0:
            dropped = len(self._head_end) - seam(self._head_end, last=True)
            if dropped:
                head -= dropped
                out.seek(head)
                out.truncate()
            start = seam(tail[:SEAM_BYTES], last=False)
            tail = tail[start:]
            omitted += dropped + start
            out.write(f"\n[qualify: {omitted} bytes omitted]\n".encode())
        out.write(tail)
        self._kept = min(self.total, head + len(tail))

    def stats(self) -> LogStats:
        """Sizes after the stream ended."""
        kept = min(self.total, self.head + self.tail_limit) if self._kept is None else self._kept
        return LogStats(
            bytes_total=self.total,
            bytes_kept=kept,
            truncated=kept < self.total,
            write_error=self.write_error,
        )
