"""Compare a whole corpus of recorded cases and apply the gate."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import IO

from qualify import records
from qualify.parity import noise
from qualify.parity.case import ForcedViews, compare_case
from qualify.parity.kinds import Side
from qualify.parity.noise import NoiseAccumulator, NoiseFloor
from qualify.parity.records import IndexEntry, ParityInputError, Record, index_records, load_record
from qualify.parity.results import CaseResult, ParityReport
from qualify.plan.parity_gate import ParityGate
from qualify.untrusted import open_regular


def compare_files(native: Path, reference: Path | None, gate: ParityGate) -> ParityReport:
    """Compare the native side of ``native`` with the reference side of ``reference``.

    ``reference`` None means ``native`` holds both sides. Three passes: the first indexes
    every record by byte offset (and validates it), the second reads each case's noise view
    with its reference record into the noise floor (``qualify.parity.noise``), the third reads
    each case's records by seek and compares them, so memory holds a few records at a time
    whatever the number of cases. The teacher view comes from ``native``'s file, the noise
    view from ``reference``'s. Bad input
    raises ParityInputError with one line naming the file and the line.
    """
    if reference is None:
        both = index_records(native, side=None)
        native_index, reference_index = both.by_side[Side.NATIVE], both.by_side[Side.REFERENCE]
        warnings = list(both.warnings)
        forced = both.forced
    else:
        native_file = index_records(native, side=Side.NATIVE)
        reference_file = index_records(reference, side=Side.REFERENCE)
        native_index = native_file.by_side[Side.NATIVE]
        reference_index = reference_file.by_side[Side.REFERENCE]
        warnings = native_file.warnings + reference_file.warnings
        forced = {"teacher": native_file.forced["teacher"], "noise": reference_file.forced["noise"]}
    native_only = [case_id for case_id in native_index if case_id not in reference_index]
    warnings.extend(
        f"case {case_id!r} was recorded by the native side only: the gate does not count it"
        for case_id in native_only
    )
    with contextlib.ExitStack() as stack:
        try:
            native_handle = stack.enter_context(open_regular(native))
            reference_handle = stack.enter_context(open_regular(reference or native))
        except OSError as exc:
            raise ParityInputError(f"{exc.filename}: cannot be read ({exc.strerror})") from None
        floor = _noise_floor(reference_handle, reference_index, forced["noise"])
        results: list[CaseResult] = []
        for case_id in [*reference_index, *native_only]:
            reference_record = _load(reference_handle, reference_index.get(case_id))
            views = ForcedViews(
                floor,
                _load(reference_handle, forced["noise"].get(case_id)),
                _load(native_handle, forced["teacher"].get(case_id)),
            )
            native_record = _load(native_handle, native_index.get(case_id))
            results.append(compare_case(case_id, native_record, reference_record, gate, views))
    return _report(gate, results, warnings, floor)


def _noise_floor(
    handle: IO[bytes], reference_index: dict[str, IndexEntry], noise: dict[str, IndexEntry]
) -> NoiseFloor | None:
    """The first pass: every case's noise view against its reference record."""
    accumulator = NoiseAccumulator()
    for case_id, entry in noise.items():
        reference_entry = reference_index.get(case_id)
        if reference_entry is not None:
            reference_record = load_record(handle, reference_entry)
            accumulator.add(case_id, reference_record, load_record(handle, entry))
    return accumulator.result()


def _report(
    gate: ParityGate, results: list[CaseResult], warnings: list[str], floor: NoiseFloor | None
) -> ParityReport:
    """The report, with the gate's false-fail odds when every reference case has them."""
    report = ParityReport(gate, tuple(results), tuple(warnings), floor)
    probabilities = [
        result.divergence_probability for result in results if result.reference is not None
    ]
    if floor is None or not probabilities or None in probabilities:
        return report
    divergence = [probability or 0.0 for probability in probabilities]
    return records.replace(
        report,
        false_fail_probability=noise.false_fail_probability(divergence, report.required),
        suggestion=noise.gate_suggestion(divergence, report.required),
    )


def _load(handle: IO[bytes], entry: IndexEntry | None) -> Record | None:
    return None if entry is None else load_record(handle, entry)
