"""Reading the run's JSON-lines files after the run (events, timeline).

Lines are appended by processes that may be SIGKILLed at any time: a truncated or garbled
last line is expected and skipped; the readers never raise on content.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from harness.contract import decode_line
from qualify.run.timeline import TimelineSample


def read_jsonl(path: Path) -> Iterator[dict[str, Any]]:
    """Every decodable record of a JSON-lines file, the truncated last line skipped."""
    try:
        handle = path.open("rb")
    except FileNotFoundError:
        return
    with handle:
        for line in handle:
            record = decode_line(line)
            if record is not None:
                yield record


def read_timeline(path: Path) -> Iterator[TimelineSample]:
    """The monitor's samples in file (time) order."""
    for record in read_jsonl(path):
        sample = TimelineSample.from_record(record)
        if sample is not None:
            yield sample
