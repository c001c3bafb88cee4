"""Reading the run's JSON-lines files (events, timeline) once the run has ended.

Lines are appended by processes that may be SIGKILLed at any time: a truncated or garbled
last line is expected and skipped; the readers never raise on content.
"""

from __future__ import annotations

import functools
import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

from harness import contract
from qualify.records import frozen_record
from qualify.run.timeline import TimelineSample
from qualify.untrusted import READ_LIMIT_BYTES, iter_chunks, open_regular

_CHUNK_LINES = 4096


@frozen_record
class JsonlContent:
    """A JSON-lines file read whole: the value of every line that decodes, in file order (not
    only objects), and the lines that do not (a cut last line, garbage), as they stand."""

    values: tuple[Any, ...]
    garbled: tuple[bytes, ...]
    line_feeds: int = 0
    """The line feeds of the bytes read (each line's end, the last line's if it has one)."""

    def records(self) -> Iterator[dict[str, Any]]:
        """The objects among the values (what ``read_jsonl`` yields)."""
        return (value for value in self.values if isinstance(value, dict))


def file_identity(status: os.stat_result) -> tuple[int, int, int, int, int]:
    """(device, inode, size, modification and change times in ns): what tells that a file read
    before is still the file as it was read. (The change time too: a write in place that sets the
    modification time back with ``utime`` still moves it, and no call sets it.)"""
    return status.st_dev, status.st_ino, status.st_size, status.st_mtime_ns, status.st_ctime_ns


_last_read: dict[tuple[int, ...], JsonlContent] = {}
"""The last files ``read_all`` read, by identity (device, inode, size, modification and change
times): the judge and the sanitizer's harvest read the same events file (and the report the
timeline) one after the other, and a suite's events are megabytes."""
_KEPT = 4


def read_all(path: Path, limit: int = READ_LIMIT_BYTES) -> JsonlContent:
    """Every line of a JSON-lines file, decoded where it decodes (see ``JsonlContent``); empty
    when the file is missing or not a regular file (``qualify.untrusted``). At most ``limit``
    bytes of data are read (a sparse file's holes are skipped). The last files read are kept
    while they are unchanged."""
    try:
        handle = open_regular(path)
    except OSError:
        return JsonlContent((), ())
    with handle:
        status = os.fstat(handle.fileno())
        identity = file_identity(status)
        if identity in _last_read:
            return _last_read[identity]
        data = _read_data(handle, limit)
    content = _content(data)
    if len(data) == status.st_size:  # nothing was appended while it was read (nor skipped)
        _remember(identity, content)
    return content


def _content(data: bytes) -> JsonlContent:
    """The values of the lines of ``data`` (``read_all``)."""
    values: list[Any] = []
    garbled: list[bytes] = []
    lines = data.split(b"\n")
    for start in range(0, len(lines), _CHUNK_LINES):
        _decode_into(lines[start : start + _CHUNK_LINES], values, garbled)
    return JsonlContent(tuple(values), tuple(garbled), len(lines) - 1)


class PhaseLines:
    """A JSON-lines file read whole, its lines the plugin's test-phase lines (``harness.contract``:
    ``encode_test_start``, ``encode_test_end``) and other lines each a JSON value alone: what
    ``read_all`` decodes, without a dict made for each phase line.

    ``rows`` holds one tuple a line, in file order (``_phase_lines``' groups): a start line's
    phase, node id, file and line (``""`` where it has none; the line as written, digits or
    ``null``), an end line's phase, node id and duration (as written: the outcome is
    ``passed``), or the other line's text; ``others`` the values of the other lines, in order.
    Only made where each line is one of these (every line ended, UTF-8, none blank, every other
    line a JSON value by itself: then ``read_all``'s values are the phase lines' records and
    those values in file order)."""

    __slots__ = ("others", "rows", "text")

    def __init__(self, rows: list[tuple[str, ...]], others: list[Any], text: str) -> None:
        self.rows = rows
        self.others = others
        self.text = text
        """The file's text (strict UTF-8)."""


_PLAIN = r'[^"\\\x00-\x1f]*+'
"""A JSON string's inside without an escape (no quote, backslash or control character)."""
_WHEN = r"(setup|call|teardown)"
_WHOLE = r"(?:0|[1-9][0-9]*+)"
"""A number without a sign, a fraction or an exponent, as JSON writes it (no leading zero)."""
_FIXED = rf"{_WHOLE}\.[0-9]++"
_INTEGER = r"(?:0|[1-9][0-9]{0,18}+)"
"""A process id or a line number: ``_WHOLE`` of 19 digits at most (``json`` reads no integer
of more than 4,300 digits: such a line is decoded, and found garbled, as before)."""


@functools.cache
def _phase_lines() -> re.Pattern[str]:
    """One line ended by a line feed: a test phase's start or passed end exactly as the plugin
    writes it (groups 1-4 and 5-7; times and durations as ``%.6f`` and ``%.9f`` write them, the
    process id and line number as ``%d``), or any other line (group 8). Compiled at first use."""
    stamp = rf',"t":{_FIXED},"mono":{_FIXED},"pid":{_INTEGER}\}}'
    start = (
        rf'start","when":"{_WHEN}","nodeid":"({_PLAIN})"'
        rf'(?:,"file":"({_PLAIN})","line":({_INTEGER}|null))?'
    )
    end = rf'end","when":"{_WHEN}","nodeid":"({_PLAIN})","outcome":"passed","duration":({_FIXED})'
    phase = rf'\{{"event":"{contract.TEST_PHASE}","state":"(?:{start}|{end}){stamp}'
    return re.compile(rf"(?:{phase}|([^\n]*+))\n")


def _phases(data: bytes) -> PhaseLines | None:
    """``data`` as ``PhaseLines``, where it is such a file and holds a phase line; else None."""
    if not data.endswith(b"\n") or b'"test_phase"' not in data:
        return None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    rows = _phase_lines().findall(text)
    others: list[Any] = []
    for row in rows:
        if row[7] or not (row[0] or row[4]):
            try:
                others.append(json.loads(row[7]))  # ("" for a blank line: not a value)
            except (ValueError, RecursionError):
                return None
    if len(others) == len(rows):
        return None  # (no phase line: the values decoded together cost less)
    return PhaseLines(rows, others, text)


PHASES_FROM = 1 << 16
"""Bytes from which ``read_events`` reads a file as ``PhaseLines``: compiling the expression
costs about what decoding 50 KB of phase lines costs more (a one-test run's file is read as
``read_all`` reads it)."""
_last_phases: dict[tuple[int, ...], PhaseLines] = {}


def read_events(path: Path, limit: int = READ_LIMIT_BYTES) -> JsonlContent | PhaseLines:
    """``read_all``, as ``PhaseLines`` where the file is such a file (an events file of a
    suite: most of its lines the plugin's); kept while unchanged, as ``read_all`` keeps its."""
    try:
        handle = open_regular(path)
    except OSError:
        return JsonlContent((), ())
    with handle:
        status = os.fstat(handle.fileno())
        identity = file_identity(status)
        if identity in _last_phases:
            return _last_phases[identity]
        if identity in _last_read:
            return _last_read[identity]
        data = _read_data(handle, limit)
    whole = len(data) == status.st_size  # nothing was appended while it was read (nor skipped)
    phases = _phases(data) if len(data) >= PHASES_FROM else None
    if phases is None:
        content = _content(data)
        if whole:
            _remember(identity, content)
        return content
    if whole:
        while len(_last_phases) >= _KEPT:
            del _last_phases[next(iter(_last_phases))]  # the oldest
        _last_phases[identity] = phases
    return phases


def remembered_phases(identity: tuple[int, ...]) -> PhaseLines | None:
    """What ``read_events`` read as ``PhaseLines`` of the file of this identity, when it still
    keeps it; else None."""
    return _last_phases.get(identity)


def remembered(identity: tuple[int, ...]) -> JsonlContent | None:
    """What ``read_all`` read of the file of this identity (``file_identity``), when it still
    keeps it; else None."""
    return _last_read.get(identity)


def _read_data(handle: BinaryIO, limit: int) -> bytes:
    """The data regions of a file, up to ``limit`` bytes."""
    chunks: list[bytes] = []
    taken = 0
    for _, chunk in iter_chunks(handle):
        chunks.append(chunk[: limit - taken])
        taken += len(chunks[-1])
        if taken >= limit:
            break
    return b"".join(chunks)


def _remember(identity: tuple[int, ...], content: JsonlContent) -> None:
    while len(_last_read) >= _KEPT:
        del _last_read[next(iter(_last_read))]  # the oldest
    _last_read[identity] = content


def read_jsonl(path: Path, containing: bytes | None = None) -> Iterator[dict[str, Any]]:
    """Every decodable record of a JSON-lines file, the truncated last line skipped; with
    ``containing``, only the records whose line holds those bytes (the others not decoded)."""
    if containing is None:
        yield from read_all(path).records()
        return
    try:
        handle = open_regular(path)
    except OSError:
        return
    with handle:
        for lines in _line_batches(handle, containing=containing):
            values: list[Any] = []
            _decode_into([line for line in lines if containing in line], values, [])
            yield from (value for value in values if isinstance(value, dict))


def _line_batches(
    handle: BinaryIO, limit: int = READ_LIMIT_BYTES, containing: bytes | None = None
) -> Iterator[list[bytes]]:
    """The whole lines of the first ``limit`` bytes of data, a chunk's worth at a time (a line
    longer than a chunk is kept whole up to ``limit``; a sparse file's holes are skipped). With
    ``containing``, a chunk's worth of whole lines none of which can hold those bytes (they
    are nowhere in it) is left out, unsplit."""
    partial: list[bytes] = []
    taken = 0
    for _, data in iter_chunks(handle):
        chunk = data[: limit - taken]
        taken += len(chunk)
        if b"\n" in chunk:
            joined = b"".join([*partial, chunk])
            if containing is not None and containing not in joined:
                partial = [joined[joined.rfind(b"\n") + 1 :]]  # (the line the next chunk ends)
            else:
                lines = joined.split(b"\n")
                partial = [lines.pop()]
                yield lines
        else:
            partial.append(chunk)  # (joined once its line ends: no copy per chunk)
        if taken >= limit:
            return
    if any(partial):
        yield [b"".join(partial)]


def _decode_into(lines: list[bytes], values: list[Any], garbled: list[bytes]) -> None:
    """The values of whole lines in one parse (tens of thousands of short test events are
    decoded at C speed); when one line is cut or garbled, line by line. A line nested deeper
    than the decoder goes (``RecursionError``, about a thousand levels) is garbled too."""
    if len(lines) > 1 and not lines[-1]:  # whole lines, the last one ended (a file's end)
        # Each line as it stands: a blank one among them makes the text no JSON (an empty
        # element), a lone blank one the empty list, as without it.
        try:
            values += json.loads(b"[" + b",".join(lines[:-1]) + b"]")
            return
        except (ValueError, RecursionError):
            pass
    kept = [line for line in lines if line.strip()]
    try:
        values += json.loads(b"[" + b",".join(kept) + b"]")
    except (ValueError, RecursionError):
        for line in kept:
            try:
                values.append(json.loads(line))
            except (ValueError, RecursionError):
                garbled.append(line.rstrip(b"\r\n"))  # (a line read with readlines)


def read_timeline(path: Path) -> Iterator[TimelineSample]:
    """The monitor's samples in file (time) order."""
    for record in read_jsonl(path):
        sample = TimelineSample.from_record(record)
        if sample is not None:
            yield sample
