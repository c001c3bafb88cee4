"""Bounded capture of the E2E's stdout/stderr: the head and the tail are kept, sizes recorded."""

from __future__ import annotations

import collections
import dataclasses
import os
import threading
from pathlib import Path
from typing import IO

HEAD_BYTES = 1 << 20
TAIL_BYTES = 1 << 20
_CHUNK = 64 * 1024


@dataclasses.dataclass(frozen=True)
class LogStats:
    """What happened to one stream."""

    bytes_total: int = 0
    bytes_kept: int = 0
    truncated: bool = False


class BoundedLog(threading.Thread):
    """Copies a pipe into ``path``: the first ``head`` bytes as they come, the last ``tail``
    bytes at the end, with a marker saying how much was left out in between."""

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

    def run(self) -> None:
        """Drain the pipe until EOF (the child and all holders of the pipe exited)."""
        with self.path.open("wb") as out:
            while chunk := os.read(self.pipe.fileno(), _CHUNK):
                self._take(chunk, out)
            self._finish(out)
        self.pipe.close()

    def _take(self, chunk: bytes, out: IO[bytes]) -> None:
        if self.echo is not None:
            self.echo.write(chunk)
            self.echo.flush()
        room = max(0, self.head - self.total)
        self.total += len(chunk)
        if room:
            out.write(chunk[:room])
            out.flush()
            chunk = chunk[room:]
        if chunk:
            self._tail.append(chunk)
            self._tail_size += len(chunk)
            while self._tail_size - len(self._tail[0]) >= self.tail_limit:
                self._tail_size -= len(self._tail.popleft())

    def _finish(self, out: IO[bytes]) -> None:
        tail = b"".join(self._tail)[-self.tail_limit :] if self._tail else b""
        omitted = self.total - min(self.total, self.head) - len(tail)
        if omitted > 0:
            out.write(f"\n[qualify: {omitted} bytes omitted]\n".encode())
        out.write(tail)

    def stats(self) -> LogStats:
        """Sizes after the stream ended."""
        kept = min(self.total, self.head + self.tail_limit)
        return LogStats(bytes_total=self.total, bytes_kept=kept, truncated=kept < self.total)
