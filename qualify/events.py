"""Host-side reading of the harness's JSON-lines files (events.jsonl, parity.jsonl).

Lines are appended by processes that may be SIGKILLed at any time: a truncated or garbled
last line is expected and skipped; the reader never raises on content.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any


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
        return [record for record in map(_decode, lines) if record is not None]


def _decode(line: bytes) -> dict[str, Any] | None:
    try:
        record = json.loads(line)
    except ValueError:
        return None
    return record if isinstance(record, dict) else None


def read_events(path: Path) -> Iterator[dict[str, Any]]:
    """Every decodable record of a JSON-lines file, the truncated last line skipped."""
    try:
        handle = path.open("rb")
    except FileNotFoundError:
        return
    with handle:
        for line in handle:
            record = _decode(line)
            if record is not None:
                yield record
