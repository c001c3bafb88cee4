"""Reading the run's JSON-lines files after the run (events, timeline).

Lines are appended by processes that may be SIGKILLed at any time: a truncated or garbled
last line is expected and skipped; the readers never raise on content.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from harness.contract import decode_line
from qualify.run.timeline import TimelineSample

_CHUNK_LINES = 4096


def read_jsonl(path: Path, containing: bytes | None = None) -> Iterator[dict[str, Any]]:
    """Every decodable record of a JSON-lines file, the truncated last line skipped; with
    ``containing``, only the records whose line holds those bytes (the others not decoded)."""
    try:
        handle = path.open("rb")
    except FileNotFoundError:
        return
    with handle:
        while True:
            lines = handle.readlines(_CHUNK_LINES * 256)
            if not lines:
                return
            if containing is not None:
                lines = [line for line in lines if containing in line]
            yield from _decode_lines(lines)


def _decode_lines(lines: list[bytes]) -> Iterator[dict[str, Any]]:
    """The records of whole lines in one parse (tens of thousands of short test events are
    decoded at C speed); when one line is cut or garbled, line by line."""
    kept = [line for line in lines if line.strip()]
    try:
        records = json.loads(b"[" + b",".join(kept) + b"]")
    except ValueError:
        for line in kept:
            record = decode_line(line)
            if record is not None:
                yield record
        return
    for record in records:
        if isinstance(record, dict):
            yield record


def read_timeline(path: Path) -> Iterator[TimelineSample]:
    """The monitor's samples in file (time) order."""
    for record in read_jsonl(path):
        sample = TimelineSample.from_record(record)
        if sample is not None:
            yield sample
