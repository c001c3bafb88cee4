"""Incremental reader of a JSON-lines file another process appends to (the monitor's view of
the harness events while the E2E runs)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from harness.contract import decode_line


class JsonlTail:
    """Incremental reader: each ``poll()`` returns the complete lines appended since the last."""

    def __init__(self, path: Path):
        self.path = path
        self.offset = 0
        self._partial = b""

    def poll(self) -> list[dict[str, Any]]:
        """New complete records (a partial last line waits for its newline)."""
        try:
            size = os.stat(self.path).st_size
        except FileNotFoundError:
            return []
        if size <= self.offset:
            return []
        with self.path.open("rb") as handle:
            handle.seek(self.offset)
            chunk = handle.read(size - self.offset)
        self.offset += len(chunk)
        lines = (self._partial + chunk).split(b"\n")
        self._partial = lines.pop()
        return [record for record in map(decode_line, lines) if record is not None]
