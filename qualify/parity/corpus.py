"""Compare a whole corpus of recorded cases and apply the gate."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import IO

from qualify.parity.case import compare_case
from qualify.parity.kinds import Side
from qualify.parity.records import IndexEntry, ParityInputError, Record, index_records, load_record
from qualify.parity.results import CaseResult, ParityReport
from qualify.plan.parity_gate import ParityGate
from qualify.untrusted import open_regular


def compare_files(native: Path, reference: Path | None, gate: ParityGate) -> ParityReport:
    """Compare the native side of ``native`` with the reference side of ``reference``.

    ``reference`` None means ``native`` holds both sides. Two passes: the first indexes
    every record by byte offset (and validates it), the second reads each case's pair by
    seek, so memory holds two records at a time whatever the number of cases. Bad input
    raises ParityInputError with one line naming the file and the line.
    """
    if reference is None:
        both = index_records(native, side=None)
        native_index, reference_index = both.by_side[Side.NATIVE], both.by_side[Side.REFERENCE]
        warnings = list(both.warnings)
    else:
        native_file = index_records(native, side=Side.NATIVE)
        reference_file = index_records(reference, side=Side.REFERENCE)
        native_index = native_file.by_side[Side.NATIVE]
        reference_index = reference_file.by_side[Side.REFERENCE]
        warnings = native_file.warnings + reference_file.warnings
    native_only = [case_id for case_id in native_index if case_id not in reference_index]
    warnings.extend(
        f"case {case_id!r} was recorded by the native side only: the gate does not count it"
        for case_id in native_only
    )
    results = _compare_all(
        [*reference_index, *native_only],
        (native, native_index),
        (reference or native, reference_index),
        gate,
    )
    return ParityReport(gate, tuple(results), tuple(warnings))


def _compare_all(
    case_ids: list[str],
    native: tuple[Path, dict[str, IndexEntry]],
    reference: tuple[Path, dict[str, IndexEntry]],
    gate: ParityGate,
) -> list[CaseResult]:
    with contextlib.ExitStack() as stack:
        try:
            native_handle = stack.enter_context(open_regular(native[0]))
            reference_handle = stack.enter_context(open_regular(reference[0]))
        except OSError as exc:
            raise ParityInputError(f"{exc.filename}: cannot be read ({exc.strerror})") from None
        results: list[CaseResult] = []
        for case_id in case_ids:
            native_entry, reference_entry = native[1].get(case_id), reference[1].get(case_id)
            native_record = _load(native_handle, native_entry)
            reference_record = _load(reference_handle, reference_entry)
            results.append(compare_case(case_id, native_record, reference_record, gate))
        return results


def _load(handle: IO[bytes], entry: IndexEntry | None) -> Record | None:
    return None if entry is None else load_record(handle, entry)
