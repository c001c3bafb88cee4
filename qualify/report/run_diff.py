"""Run against run: what changed from run A to run B (verdict, peak, each phase's peak and
duration, parity, each test's outcome), from their audits and JUnit files."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from qualify import records
from qualify.evidence.junit import (
    NOT_RUN,
    OWN_CLASSNAME,
    JUnitCase,
    family_counts,
    parse_pytest_junit,
)
from qualify.records import frozen_record
from qualify.rundir import Audit, RunDir
from qualify.sizes import format_bytes, format_duration

_MIB = 1 << 20


@frozen_record
class PhaseChange:
    """One phase in either run: its highest peak and summed duration in each (None: absent)."""

    name: str
    peak_a: int | None
    peak_b: int | None
    seconds_a: float | None
    seconds_b: float | None

    @property
    def peak_delta(self) -> int | None:
        if self.peak_a is None or self.peak_b is None:
            return None
        return self.peak_b - self.peak_a

    def to_dict(self) -> dict[str, Any]:
        return {**records.asdict(self), "peak_delta": self.peak_delta}


@frozen_record
class RunDiff:
    """The change from run A to run B."""

    a: str
    b: str
    verdict: tuple[str, str]
    peak: tuple[int | None, int | None]
    cap: tuple[int | None, int | None]
    phases: list[PhaseChange]
    parity: tuple[str | None, str | None]
    tests: tuple[dict[str, int], dict[str, int]]
    outcomes: list[tuple[str, str, str]]
    """(test, outcome in A, outcome in B) of every test whose outcome changed ("absent" when a
    run does not have it)."""

    @property
    def largest_growth(self) -> PhaseChange | None:
        """The phase whose peak grew the most (None when none grew)."""
        grown = [p for p in self.phases if (p.peak_delta or 0) > 0]
        return max(grown, key=lambda p: p.peak_delta or 0, default=None)

    def to_dict(self) -> dict[str, Any]:
        """JSON form (stable keys)."""
        growth = self.largest_growth
        return {
            "a": self.a,
            "b": self.b,
            "verdict": {"a": self.verdict[0], "b": self.verdict[1]},
            "peak_bytes": {"a": self.peak[0], "b": self.peak[1]},
            "cap_bytes": {"a": self.cap[0], "b": self.cap[1]},
            "phases": [phase.to_dict() for phase in self.phases],
            "largest_growth": growth.name if growth else None,
            "parity": {"a": self.parity[0], "b": self.parity[1]},
            "tests": {"a": self.tests[0], "b": self.tests[1]},
            "outcomes": [{"test": t, "a": a, "b": b} for t, a, b in self.outcomes],
        }


def phase_totals(audit: Audit) -> tuple[dict[str, int], dict[str, float], list[str]]:
    """Per phase name: the highest peak and the summed duration (a phase may run more than
    once), and the names in the order they first ran."""
    peaks: dict[str, int] = {}
    seconds: dict[str, float] = {}
    for phase in audit.memory.phases:
        if phase.peak_bytes is not None:
            peaks[phase.name] = max(peaks.get(phase.name, 0), phase.peak_bytes)
        if phase.start is not None and phase.end is not None:
            seconds[phase.name] = seconds.get(phase.name, 0.0) + phase.end - phase.start
    return peaks, seconds, list(dict.fromkeys(phase.name for phase in audit.memory.phases))


def _cases(run_dir: RunDir) -> list[JUnitCase]:
    return parse_pytest_junit(run_dir.junit_path) or []


def _outcomes(cases: list[JUnitCase]) -> dict[str, str]:
    """Each family test's outcome in the words of the counts (a test the run never reached
    is "not run", not "skipped"; qualify's own testcase and parity cases are not tests)."""
    return {
        f"{case.classname}::{case.name}": _bucket(case)
        for case in cases
        if case.classname != OWN_CLASSNAME and not case.classname.endswith("parity")
    }


def _bucket(case: JUnitCase) -> str:
    if case.outcome == "skipped" and (case.message or "").startswith(NOT_RUN):
        return "not run"
    return case.outcome


def _cap(audit: Audit) -> int | None:
    return audit.limits.in_effect.memory_bytes if audit.limits.in_effect else None


def diff_runs(
    run_a: RunDir,
    audit_a: Audit,
    run_b: RunDir,
    audit_b: Audit,
    cases_b: Sequence[JUnitCase] | None = None,
) -> RunDiff:
    """The change from A to B (``cases_b``: B's testcases, when its JUnit file is not written
    yet)."""
    peaks_a, seconds_a, names_a = phase_totals(audit_a)
    peaks_b, seconds_b, names_b = phase_totals(audit_b)
    phases = [
        PhaseChange(
            name, peaks_a.get(name), peaks_b.get(name), seconds_a.get(name), seconds_b.get(name)
        )
        for name in dict.fromkeys([*names_a, *names_b])
    ]
    tests_a = _cases(run_a)
    tests_b = list(cases_b) if cases_b is not None else _cases(run_b)
    outcomes_a, outcomes_b = _outcomes(tests_a), _outcomes(tests_b)
    changed = [
        (test, outcomes_a.get(test, "absent"), outcomes_b.get(test, "absent"))
        for test in dict.fromkeys([*outcomes_a, *outcomes_b])
        if outcomes_a.get(test) != outcomes_b.get(test)
    ]
    return RunDiff(
        a=str(run_a.path),
        b=str(run_b.path),
        verdict=(audit_a.verdict, audit_b.verdict),
        peak=(audit_a.memory.peak_bytes, audit_b.memory.peak_bytes),
        cap=(_cap(audit_a), _cap(audit_b)),
        phases=phases,
        parity=(
            audit_a.parity.reason if audit_a.parity else None,
            audit_b.parity.reason if audit_b.parity else None,
        ),
        tests=(family_counts(tests_a), family_counts(tests_b)),
        outcomes=changed,
    )


def _bytes(value: int | None) -> str:
    return format_bytes(value) if value is not None else "-"


def _signed(delta: int | None) -> str:
    if delta is None:
        return ""
    return ("+" if delta >= 0 else "-") + format_bytes(abs(delta))


def _seconds(value: float | None) -> str:
    return format_duration(value) if value is not None else "-"


def render_diff(diff: RunDiff) -> str:
    """The change as text: verdict, peak, the phase that grew most, a phase table, parity and
    the tests whose outcome changed."""
    lines = [f"A: {diff.a}", f"B: {diff.b}"]
    same = diff.verdict[0] == diff.verdict[1]
    lines.append(f"verdict: {diff.verdict[0]}" + ("" if same else f" -> {diff.verdict[1]}"))
    peak_delta = (
        diff.peak[1] - diff.peak[0]
        if diff.peak[0] is not None and diff.peak[1] is not None
        else None
    )
    lines.append(
        f"peak: {_bytes(diff.peak[0])} -> {_bytes(diff.peak[1])} {_signed(peak_delta)}".rstrip()
        + (
            f" (caps {_bytes(diff.cap[0])} and {_bytes(diff.cap[1])})"
            if diff.cap != (None, None)
            else ""
        )
    )
    growth = diff.largest_growth
    if growth is not None:
        lines.append(f"largest growth: {growth.name} {_signed(growth.peak_delta)} of peak")
    if diff.phases:
        rows = [("phase", "peak A", "peak B", "change", "time A", "time B")]
        rows += [
            (
                phase.name,
                _bytes(phase.peak_a),
                _bytes(phase.peak_b),
                _signed(phase.peak_delta),
                _seconds(phase.seconds_a),
                _seconds(phase.seconds_b),
            )
            for phase in diff.phases
        ]
        widths = [max(len(row[column]) for row in rows) for column in range(len(rows[0]))]
        lines += [
            "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
            for row in rows
        ]
    if diff.parity != (None, None) and diff.parity[0] != diff.parity[1]:
        lines.append(f"parity: {diff.parity[0] or '-'} -> {diff.parity[1] or '-'}")
    counts_a, counts_b = diff.tests
    if counts_a != counts_b:
        lines.append(f"tests: {_counts(counts_a)} -> {_counts(counts_b)}")
    for test, outcome_a, outcome_b in diff.outcomes[:50]:
        lines.append(f"  {test}: {outcome_a} -> {outcome_b}")
    if len(diff.outcomes) > 50:
        lines.append(f"  and {len(diff.outcomes) - 50} more tests changed")
    return "\n".join(lines) + "\n"


def _counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{value} {key.replace('_', ' ')}" for key, value in counts.items() if value)
