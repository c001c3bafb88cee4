"""The change against a base run (``qualify run --base-run DIR``): what a reviewer asks first.

``DIR`` is a run directory (a downloaded ``public/`` bundle is one), or a directory of earlier
runs (an artifact of many runs, a ``reports/`` tree). From a directory of runs, the base is the
latest run of the same family and profile whose head is this run's merge-base (``--base-ref``;
in a pull_request workflow the event's base); when none is, the latest run of the family and
profile, and the record says so. The runs are found by their audits, at most ``MAX_RUNS`` of
them, each audit read bounded (``RunDir.read_audit``); an unreadable one is skipped.

The comparison (``run_diff.diff_runs``) goes into the audit (``base``), the terminal summary
and the step summary, as one line and the phases whose peak changed.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from pathlib import Path

from harness import contract
from qualify import records
from qualify.evidence.junit import JUnitCase
from qualify.report.run_diff import RunDiff, diff_runs
from qualify.rundir import Audit, RunDir
from qualify.rundir.audit import BasePhaseRecord, BaseRunRecord
from qualify.sizes import format_bytes
from qualify.verdict import PROVISIONAL_REASON

MAX_RUNS = 5000
"""Run directories looked at in a directory of runs, at most."""
CHANGED_TESTS_KEPT = 50

GIVEN = "the run given"
MERGE_BASE = "its head is this run's merge-base"
LATEST = "the latest run of the family and profile (none at this run's merge-base)"


def _run_dirs(root: Path) -> Iterator[Path]:
    """Directories under ``root`` that hold an audit, ``public/`` copies only where their run
    directory is not there, at most ``MAX_RUNS``; links are not followed."""
    found = 0
    for directory, names, files in os.walk(root):
        names.sort()
        if contract.AUDIT not in files:
            continue
        path = Path(directory)
        if path.name == contract.PUBLIC_DIR and RunDir(path.parent).exists():
            continue
        yield path
        found += 1
        if found >= MAX_RUNS:
            return


def find_base(
    given: Path, family: str, profile: str, merge_base: str | None
) -> tuple[RunDir, Audit, str] | str:
    """(run directory, audit, how it was matched) of the base run, or why there is none."""
    if RunDir(given).exists():
        read = RunDir(given).read_audit()
        if read.audit is None:
            return f"its audit cannot be read ({'; '.join(read.problems[:2]) or 'no audit'})"
        return RunDir(given), read.audit, GIVEN
    candidates: list[tuple[str, str, Audit]] = []
    for path in _run_dirs(given):
        found = RunDir(path).read_audit().audit
        if found is None or found.reason == PROVISIONAL_REASON:
            continue
        if (found.family.name, found.profile) == (family, profile):
            candidates.append((found.timings.started or "", str(path), found))
    if not candidates:
        return f"no run of {family}/{profile} in it"
    at_base = [c for c in candidates if merge_base and audit_head(c[2]) == merge_base]
    chosen = max(at_base or candidates, key=lambda c: (c[0], c[1]))
    return RunDir(Path(chosen[1])), chosen[2], MERGE_BASE if at_base else LATEST


def audit_head(audit: Audit) -> str | None:
    """The head a run is recorded under (a pull_request run's PR head)."""
    return audit.head


def compare(
    given: Path,
    audit: Audit,
    cases: Sequence[JUnitCase],
    merge_base: str | None,
    shown: str,
) -> BaseRunRecord:
    """The record of this run (``audit``, ``cases``) against the base found in ``given``
    (``shown``: how ``given`` is printed)."""
    found = find_base(given, audit.family.name, audit.profile, merge_base)
    if isinstance(found, str):
        return BaseRunRecord(given=shown, problem=found, summary=f"no base run: {found}")
    base_dir, base, matched = found
    diff = diff_runs(base_dir, base, RunDir(Path(".")), audit, cases_b=cases)
    relative = os.path.relpath(base_dir.path, given) if base_dir.path != given else "."
    phases = [
        BasePhaseRecord(
            name=p.name, base_peak_bytes=p.peak_a, peak_bytes=p.peak_b,
            delta_bytes=p.peak_delta, base_seconds=p.seconds_a, seconds=p.seconds_b,
        )
        for p in diff.phases
    ]  # fmt: skip
    changed = [list(change) for change in diff.outcomes[:CHANGED_TESTS_KEPT]]
    return BaseRunRecord(
        given=shown,
        run_dir=relative,
        run_id=base.run_id,
        head=audit_head(base),
        matched_by=matched,
        verdict=[base.verdict, audit.verdict],
        peak_bytes=[diff.peak[0], diff.peak[1]],
        phases=phases,
        changed_tests=changed,
        changed_tests_count=len(diff.outcomes),
        summary=summary_line(diff, base, matched),
    )


def _signed(delta: int) -> str:
    return ("+" if delta >= 0 else "-") + format_bytes(abs(delta))


def summary_line(diff: RunDiff, base: Audit, matched: str) -> str:
    """``against base 1a2b3c4d5e6f (its head is this run's merge-base): peak +246 MiB
    (400 MiB -> 646 MiB), most in build:decode (+246 MiB); verdict PASSED -> OOM_KILLED;
    2 tests changed``."""
    head = (audit_head(base) or "?")[:12]
    parts = [f"against base {head} ({matched})"]
    before, after = diff.peak
    if before is not None and after is not None:
        parts.append(
            f"peak {_signed(after - before)} ({format_bytes(before)} -> {format_bytes(after)})"
        )
        grown = diff.largest_growth
        if grown is not None and grown.peak_delta:
            parts[-1] += f", most in {grown.name} ({_signed(grown.peak_delta)})"
    if diff.verdict[0] != diff.verdict[1]:
        parts.append(f"verdict {diff.verdict[0]} -> {diff.verdict[1]}")
    else:
        parts.append(f"verdict {diff.verdict[1]} in both")
    if diff.outcomes:
        parts.append(f"{len(diff.outcomes)} test(s) changed outcome")
    return parts[0] + ": " + "; ".join(parts[1:])


def changed_phases(record: BaseRunRecord) -> list[BasePhaseRecord]:
    """The phases whose peak changed, the largest change first."""
    moved = [p for p in record.phases if p.delta_bytes]
    return sorted(moved, key=lambda p: -abs(p.delta_bytes or 0))


def with_base(record: BaseRunRecord | None, audit: Audit) -> Audit:
    """``audit`` with its ``base``."""
    return records.replace(audit, base=record)
