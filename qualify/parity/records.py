"""Read the parity file: index every case record by byte offset, then load records one by one.

The harness appends one JSON object per line. A first pass validates every line and keeps
only (case id, side) -> where the line is; the comparison then reads the two lines of each
case by seek, so memory does not grow with the number of cases.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from harness import contract
from qualify import records
from qualify.errors import UsageError
from qualify.parity.kinds import Side
from qualify.parity.results import RecordLocation, TokenRef, TopKEntry
from qualify.parity.topk_bytes import find_topk_span, nth_element
from qualify.records import frozen_record
from qualify.untrusted import READ_LIMIT_BYTES, open_regular_fd

_READ_BUFFER = 1 << 20
_REQUIRED = ("case_id", "side", "token_ids", "top_logprobs", "eos")
_MIN_ENTRY, _MAX_ENTRY = 2, 3


TOO_DEEP = "nested deeper than the decoder goes"
"""json raises RecursionError, not a decoding error, near a thousand levels."""


class ParityInputError(UsageError, ValueError):
    """A parity file that cannot be compared: one line naming the file and the line."""


@frozen_record
class IndexEntry:
    """Where one case record lies, and where its top_logprobs array lies within the line."""

    location: RecordLocation
    topk_span: tuple[int, int] | None
    """Byte span of ``top_logprobs`` within the line; None when the line needs a full parse."""


@frozen_record
class FileIndex:
    """The case records of one file, by side and case id (last record wins)."""

    by_side: dict[Side, dict[str, IndexEntry]]
    warnings: list[str]
    forced: dict[str, dict[str, IndexEntry]] = records.field(default_factory=dict)
    """Teacher-forced views by role (``contract.FORCED_ROLES``) and case id (last one wins)."""


@frozen_record
class Record:
    """One validated case record; the comparison holds at most two at a time."""

    where: str
    """``file:line`` for messages."""
    location: RecordLocation
    token_ids: list[int]
    token_texts: list[str] | None
    eos: bool
    topk_source: bytes | list[object]
    """The raw ``top_logprobs`` JSON (parsed on demand) or the parsed list."""
    logit_noise: list[float] | None = None
    """A noise view's per-position spread of low-precision minus FP32 log-probabilities."""

    def token_at(self, index: int) -> TokenRef | None:
        """The token generated at ``index`` (None past the end); text when recorded."""
        if index >= len(self.token_ids):
            return None
        text = self.token_texts[index] if self.token_texts is not None else None
        return TokenRef(self.token_ids[index], text)

    def topk_at(self, index: int) -> tuple[TopKEntry, ...]:
        """The top-k recorded at step ``index``, best first; empty when not recorded."""
        source = self.topk_source
        if isinstance(source, list):
            step = source[index] if index < len(source) else None
        else:
            try:
                step = nth_element(source, index)
            except json.JSONDecodeError as exc:
                raise ParityInputError(
                    f"{self.where}: field 'top_logprobs' is not valid JSON ({exc.msg})"
                ) from None
            except UnicodeDecodeError:
                raise ParityInputError(f"{self.where}: not valid UTF-8") from None
            except RecursionError:
                raise ParityInputError(
                    f"{self.where}: field 'top_logprobs' is not valid JSON ({TOO_DEEP})"
                ) from None
        return () if step is None else parse_topk_step(step, index, self.where)


def all_topk(record: Record) -> list[tuple[TopKEntry, ...]]:
    """Every step of ``record``'s top-k, parsed in one pass (``topk_at`` parses from the start
    of the array each time: right for one divergence, quadratic for a walk over every step)."""
    source = record.topk_source
    if isinstance(source, bytes):
        parsed = _loads(source, record.where)
        if not isinstance(parsed, list):
            raise ParityInputError(f"{record.where}: field 'top_logprobs' must be a list")
        source = parsed
    return [parse_topk_step(step, index, record.where) for index, step in enumerate(source)]


def parse_topk_step(step: object, index: int, where: str) -> tuple[TopKEntry, ...]:
    """Validate one step of ``top_logprobs`` and sort it best first, with gaps to the top-1."""
    entries = [_topk_entry(entry) for entry in step] if isinstance(step, list) else [None]
    valid = [entry for entry in entries if entry is not None]
    if len(valid) != len(entries):
        raise ParityInputError(
            f"{where}: field 'top_logprobs' step {index} must be a list of "
            "[token_id, logprob] or [token_id, logprob, text] entries"
        )
    valid.sort(key=lambda entry: -entry[1])
    best = valid[0][1] if valid else 0.0
    return tuple(TopKEntry(tid, logprob, text, best - logprob) for tid, logprob, text in valid)


def _topk_entry(entry: object) -> tuple[int, float, str | None] | None:
    """``(token_id, logprob, text)`` of one top-k entry, or None when it is malformed."""
    if not (isinstance(entry, list) and _MIN_ENTRY <= len(entry) <= _MAX_ENTRY):
        return None
    token_id, logprob, text = (*entry, None)[:3]
    # type() rather than isinstance(): a JSON true must not pass as the token id 1.
    if type(token_id) is not int or not _is_number(logprob):
        return None
    if text is not None and not isinstance(text, str):
        return None
    return token_id, float(logprob), text


def index_records(path: Path, side: Side | None) -> FileIndex:
    """Validate every line of ``path`` and index its case records.

    ``side`` keeps only that side's records (two-file mode); None keeps both. A line that is
    not valid JSON is an error unless it is the last one, which a killed writer may have left
    truncated: that one becomes a warning.
    """
    by_side: dict[Side, dict[str, IndexEntry]] = {Side.NATIVE: {}, Side.REFERENCE: {}}
    forced: dict[str, dict[str, IndexEntry]] = {role: {} for role in contract.FORCED_ROLES}
    first_line: dict[tuple[Side, str], int] = {}
    warnings: list[str] = []
    ignored = 0
    pending: ParityInputError | None = None
    for location, line in _lines(path):
        if line.isspace():
            continue
        if pending is not None:
            raise pending
        try:
            record, span = _parse(line, location)
        except ParityInputError as exc:
            pending = exc
            continue
        forced_header = _forced_header(record, _where(location))
        if forced_header is not None:
            case_id, role = forced_header
            if side is None or side is _ROLE_SIDE[role]:
                forced[role][case_id] = IndexEntry(location, span)
            continue
        header = _header(record, _where(location))
        if header is None:
            continue
        case_id, record_side = header
        if side is not None and record_side is not side:
            ignored += 1
            continue
        key = (record_side, case_id)
        if key in first_line:
            warnings.append(
                f"{_where(location)}: case {case_id!r} ({record_side.value}) recorded again "
                f"(first at line {first_line[key]}); the last record wins"
            )
        else:
            first_line[key] = location.line
        by_side[record_side][case_id] = IndexEntry(location, span)
    if pending is not None:
        warnings.append(f"{pending}: the last line is truncated and was ignored")
    if ignored and side is not None:
        warnings.append(
            f"{path}: {ignored} record(s) of the other side ignored: this file gives the "
            f"{side.value} side"
        )
    return FileIndex(by_side, warnings, forced)


def load_record(handle: IO[bytes], entry: IndexEntry) -> Record:
    """Read and validate the record ``entry`` points at."""
    location = entry.location
    handle.seek(location.offset)
    line = handle.read(location.length)
    record, _ = _parse(line, location, entry.topk_span)
    where = _where(location)
    span = entry.topk_span
    source = line[span[0] : span[1]] if span is not None else record["top_logprobs"]
    if not isinstance(source, bytes | list):
        raise ParityInputError(f"{where}: field 'top_logprobs' must be a list")
    if record.get("event") == contract.FORCED:
        forced_ids = _int_list(record, "forced_ids", where)
        noise = _logit_noise(record, len(forced_ids), where)
        return Record(where, location, forced_ids, None, False, source, noise)
    token_ids, token_texts = _tokens(record, where)
    return Record(where, location, token_ids, token_texts, record["eos"] is True, source)


def _lines(path: Path) -> Iterator[tuple[RecordLocation, bytes]]:
    try:
        handle = os.fdopen(open_regular_fd(path), "rb", buffering=_READ_BUFFER)
    except OSError as exc:
        raise ParityInputError(f"{path}: cannot be read ({exc.strerror})") from None
    with handle:
        size = os.fstat(handle.fileno()).st_size
        if size > READ_LIMIT_BYTES:  # (lines are read whole: a sparse file is one line)
            raise ParityInputError(f"{path}: {size} bytes, over the {READ_LIMIT_BYTES}-byte limit")
        offset = 0
        for number, line in enumerate(handle, start=1):
            yield RecordLocation(path, number, offset, len(line)), line
            offset += len(line)


def _where(location: RecordLocation) -> str:
    return f"{location.path}:{location.line}"


def _parse(
    line: bytes, location: RecordLocation, span: tuple[int, int] | None = None
) -> tuple[dict[str, object], tuple[int, int] | None]:
    """The line's object, with ``top_logprobs`` left unparsed (None) when its span is known."""
    span = span or find_topk_span(line)
    if span is not None:
        try:
            record = json.loads(line[: span[0]] + b"null" + line[span[1] :])
        except (ValueError, RecursionError):
            record = None
        # The span must have been the top-level key's value; anything else: parse it all.
        if isinstance(record, dict) and record.get("top_logprobs", False) is None:
            return record, span
    record = _loads(line, _where(location))
    if not isinstance(record, dict):
        raise ParityInputError(f"{_where(location)}: not a JSON object")
    if "top_logprobs" in record and not isinstance(record["top_logprobs"], list):
        raise ParityInputError(f"{_where(location)}: field 'top_logprobs' must be a list")
    return record, None


def _loads(data: bytes, where: str) -> object:
    try:
        return json.loads(data)
    except json.JSONDecodeError as exc:
        raise ParityInputError(f"{where}: not valid JSON ({exc.msg})") from None
    except UnicodeDecodeError:
        raise ParityInputError(f"{where}: not valid UTF-8") from None
    except RecursionError:
        raise ParityInputError(f"{where}: not valid JSON ({TOO_DEEP})") from None


def _header(record: dict[str, object], where: str) -> tuple[str, Side] | None:
    """(case id, side) of a case record after checking every field; None for other events."""
    event = record.get("event")
    if not isinstance(event, str):
        raise ParityInputError(f"{where}: field 'event' must be a string")
    if event != contract.CASE:
        return None
    for key in _REQUIRED:
        if key not in record:
            raise ParityInputError(f"{where}: field {key!r} is missing")
    case_id = record["case_id"]
    if not isinstance(case_id, str) or not case_id:
        raise ParityInputError(f"{where}: field 'case_id' must be a non-empty string")
    sides = [side.value for side in Side]
    if record["side"] not in sides:
        raise ParityInputError(
            f"{where}: field 'side' must be 'native' or 'reference', not {record['side']!r}"
        )
    if not isinstance(record["eos"], bool):
        raise ParityInputError(f"{where}: field 'eos' must be true or false")
    for key in ("prompt", "text"):
        if record.get(key) is not None and not isinstance(record[key], str):
            raise ParityInputError(f"{where}: field {key!r} must be a string or null")
    _tokens(record, where)
    return case_id, Side(record["side"])


_ROLE_SIDE = {"teacher": Side.NATIVE, "noise": Side.REFERENCE}
"""The side whose file holds each forced view in two-file mode (the engine's, the reference's)."""


def _forced_header(record: dict[str, object], where: str) -> tuple[str, str] | None:
    """(case id, role) of a forced view after checking its fields; None for other lines."""
    if record.get("event") != contract.FORCED:
        return None
    for key in ("case_id", "role", "forced_ids", "top_logprobs"):
        if key not in record:
            raise ParityInputError(f"{where}: field {key!r} is missing")
    case_id, role = record["case_id"], record["role"]
    if not isinstance(case_id, str) or not case_id:
        raise ParityInputError(f"{where}: field 'case_id' must be a non-empty string")
    if role not in contract.FORCED_ROLES:
        raise ParityInputError(
            f"{where}: field 'role' must be one of {', '.join(contract.FORCED_ROLES)}, not {role!r}"
        )
    forced_ids = _int_list(record, "forced_ids", where)
    _logit_noise(record, len(forced_ids), where)
    return case_id, str(role)


def _int_list(record: dict[str, object], key: str, where: str) -> list[int]:
    values = record.get(key)
    # type() rather than isinstance(): a JSON true must not pass as the token id 1.
    if not isinstance(values, list) or not set(map(type, values)) <= {int}:
        raise ParityInputError(f"{where}: field {key!r} must be a list of integers")
    return values


def _logit_noise(record: dict[str, object], length: int, where: str) -> list[float] | None:
    values = record.get("logit_noise")
    if values is None:
        return None
    numbers = values if isinstance(values, list) else []
    valid = isinstance(values, list) and len(numbers) == length
    if not valid or not all(_is_number(value) and 0 <= value < math.inf for value in numbers):
        raise ParityInputError(
            f"{where}: field 'logit_noise' must be null or a list of {length} finite "
            "numbers >= 0 (one per forced token)"
        )
    return [float(value) for value in numbers]


def _tokens(record: dict[str, object], where: str) -> tuple[list[int], list[str] | None]:
    token_ids = record.get("token_ids")
    # type() rather than isinstance(): a JSON true must not pass as the token id 1.
    if not isinstance(token_ids, list) or not set(map(type, token_ids)) <= {int}:
        raise ParityInputError(f"{where}: field 'token_ids' must be a list of integers")
    token_texts = record.get("token_texts")
    if token_texts is None:
        return token_ids, None
    if not isinstance(token_texts, list) or not set(map(type, token_texts)) <= {str}:
        raise ParityInputError(f"{where}: field 'token_texts' must be a list of strings or null")
    if len(token_texts) != len(token_ids):
        raise ParityInputError(
            f"{where}: field 'token_texts' has {len(token_texts)} entries for "
            f"{len(token_ids)} token ids"
        )
    return token_ids, token_texts


def _is_number(value: object) -> bool:
    # -inf is a legitimate log-probability (a masked token); NaN never is.
    return isinstance(value, int | float) and not isinstance(value, bool) and not math.isnan(value)
