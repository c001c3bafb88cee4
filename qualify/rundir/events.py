"""Reading the run's JSON-lines files after the run (events, timeline).

Lines are appended by processes that may be SIGKILLed at any time: a truncated or garbled
last line is expected and skipped; the readers never raise on content.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from qualify.run.timeline import TimelineSample

_CHUNK_LINES = 4096


@dataclasses.dataclass(frozen=True)
class JsonlContent:
    """A JSON-lines file read whole: the value of every line that decodes, in file order (not
    only objects), and the lines that do not (a cut last line, garbage), as they stand."""

    values: tuple[Any, ...]
    garbled: tuple[bytes, ...]

    def records(self) -> Iterator[dict[str, Any]]:
        """The objects among the values (what ``read_jsonl`` yields)."""
        return (value for value in self.values if isinstance(value, dict))


_last_read: dict[tuple[int, ...], JsonlContent] = {}
"""The last files ``read_all`` read, by identity (device, inode, size, modification time):
the judge and the sanitizer's harvest read the same events file (and the report the timeline)
one after the other, and a suite's events are megabytes."""
_KEPT = 4


def read_all(path: Path) -> JsonlContent:
    """Every line of a JSON-lines file, decoded where it decodes (see ``JsonlContent``); empty
    when the file is missing. The last files read are kept while they are unchanged."""
    try:
        handle = path.open("rb")
    except FileNotFoundError:
        return JsonlContent((), ())
    with handle:
        status = os.fstat(handle.fileno())
        identity = (status.st_dev, status.st_ino, status.st_size, status.st_mtime_ns)
        if identity in _last_read:
            return _last_read[identity]
        data = handle.read()
    values: list[Any] = []
    garbled: list[bytes] = []
    lines = data.split(b"\n")
    for start in range(0, len(lines), _CHUNK_LINES):
        _decode_into(lines[start : start + _CHUNK_LINES], values, garbled)
    content = JsonlContent(tuple(values), tuple(garbled))
    if len(data) == status.st_size:  # nothing was appended while it was read
        while len(_last_read) >= _KEPT:
            del _last_read[next(iter(_last_read))]  # the oldest
        _last_read[identity] = content
    return content


def read_jsonl(path: Path, containing: bytes | None = None) -> Iterator[dict[str, Any]]:
    """Every decodable record of a JSON-lines file, the truncated last line skipped; with
    ``containing``, only the records whose line holds those bytes (the others not decoded)."""
    if containing is None:
        yield from read_all(path).records()
        return
    try:
        handle = path.open("rb")
    except FileNotFoundError:
        return
    with handle:
        while True:
            lines = handle.readlines(_CHUNK_LINES * 256)
            if not lines:
                return
            values: list[Any] = []
            _decode_into([line for line in lines if containing in line], values, [])
            yield from (value for value in values if isinstance(value, dict))


def _decode_into(lines: list[bytes], values: list[Any], garbled: list[bytes]) -> None:
    """The values of whole lines in one parse (tens of thousands of short test events are
    decoded at C speed); when one line is cut or garbled, line by line."""
    kept = [line for line in lines if line.strip()]
    try:
        values += json.loads(b"[" + b",".join(kept) + b"]")
    except ValueError:
        for line in kept:
            try:
                values.append(json.loads(line))
            except ValueError:
                garbled.append(line.rstrip(b"\r\n"))  # (a line read with readlines)


def read_timeline(path: Path) -> Iterator[TimelineSample]:
    """The monitor's samples in file (time) order."""
    for record in read_jsonl(path):
        sample = TimelineSample.from_record(record)
        if sample is not None:
            yield sample
