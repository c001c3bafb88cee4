"""``qualify merge`` of A/B results from several hosts: one table per level, hosts kept apart.

The method asks for a result reproduced on a second host, not averaged with it: every host
keeps its own rows, and a difference is called reproduced only when it is real, the same way
round, on every host. Records of different experiments (another family, head, pair of arms,
options or levels) are refused rather than put side by side.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from harness import contract
from qualify.atomic import write_json_atomic
from qualify.errors import UsageError
from qualify.experiment.ab_record import AbRecord, find_records, read_record, write_pages
from qualify.plan.output import check_output_dir
from qualify.publish.errorline import error_line
from qualify.records import replace as replace_record

MERGED_JSON = "ab-merged.json"
SAME_EXPERIMENT = ("family", "head", "arms", "common", "levels", "coupled", "metrics_asked")
"""What records must share to be merged: the same experiment, run on other hosts."""


def ab_inputs(inputs: Sequence[Path]) -> bool:
    """True when every input is A/B results alone: it holds an A/B record and no run directory
    outside one (then the merge is an A/B merge; otherwise every run directory, those of A/B
    records included, is merged as a run)."""
    return bool(inputs) and all(_records_only(source) for source in inputs)


def holds_records(source: Path) -> bool:
    """Whether ``source`` holds an A/B record (``ab.json``)."""
    return source.is_dir() and bool(find_records(source))


def _records_only(source: Path) -> bool:
    if not source.is_dir():
        return False
    found = find_records(source)
    return bool(found) and all(
        any(audit.is_relative_to(directory) for directory in found)
        for audit in source.rglob(contract.AUDIT)
    )


def collect_records(inputs: Sequence[Path]) -> list[AbRecord]:
    """Every record once (by id), in input order; an input without one is refused."""
    records: dict[str, AbRecord] = {}
    for source in inputs:
        found = find_records(source) if source.is_dir() else []
        if not found:
            raise UsageError(
                f"{source} holds no A/B record (ab.json): merge A/B results and run "
                "directories separately"
            )
        loose = [
            audit.parent
            for audit in source.rglob(contract.AUDIT)
            if not any(audit.is_relative_to(directory) for directory in found)
        ]
        if loose:
            raise UsageError(
                f"{source} holds run directories outside any A/B record ({loose[0]}): merge "
                "A/B results and run directories separately"
            )
        for directory in found:
            record = read_record(directory)
            records.setdefault(record.id, record)
    return list(records.values())


def check_same_experiment(records: Sequence[AbRecord]) -> None:
    """Refuse records that are not repetitions of one experiment."""
    first = records[0]
    for record in records[1:]:
        for name in SAME_EXPERIMENT:
            mine, theirs = getattr(first, name), getattr(record, name)
            if mine != theirs:
                raise UsageError(
                    f"A/B records {first.id} and {record.id} are different experiments: "
                    f"{name} is {mine!r} in one and {theirs!r} in the other"
                )


def host_labels(records: Sequence[AbRecord]) -> list[AbRecord]:
    """The records, a host that ran the experiment twice told apart by the record's id."""
    seen: dict[str, int] = {}
    for record in records:
        seen[record.host] = seen.get(record.host, 0) + 1
    return [
        record if seen[record.host] == 1 else _relabel(record, f"{record.host} ({record.id})")
        for record in records
    ]


def _relabel(record: AbRecord, host: str) -> AbRecord:
    return replace_record(record, host=host)


def merge_ab(
    *,
    inputs: Sequence[Path],
    out: Path | None,
    stdout: TextIO,
    stderr: TextIO,
    run_flags: Sequence[str] = (),
) -> int:
    """Merge A/B records into ``out`` (default ``reports/merged/<head>/ab``): the per-host
    record documents in ``ab-merged.json``, and ``ab.md``/``ab.html`` with hosts apart."""
    try:
        if run_flags:
            raise UsageError(
                f"{run_flags[0]} applies to run directories, not to A/B results (ab.json): "
                "merge them separately"
            )
        records = host_labels(collect_records(inputs))
        check_same_experiment(records)
        target = out or Path("reports") / "merged" / records[0].head / "ab"
        check_output_dir(target, "--out")
    except UsageError as exc:
        stderr.write(error_line("qualify merge", exc))
        return 2
    target.mkdir(parents=True, exist_ok=True)
    document: dict[str, Any] = {
        "kind": "qualify-ab-merged",
        "schema_version": 1,
        "generated": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "hosts": [record.host for record in records],
        "records": [record.to_dict() for record in records],
    }
    write_json_atomic(target / MERGED_JSON, document)
    write_pages(target, records)
    for record in records:
        runs = len(record.repetitions)
        state = f"refused: {record.refused}" if record.refused else f"{runs} runs"
        stdout.write(f"{record.family} ab {record.id} on {record.host}: {state}\n")
    stdout.write(f"{target}\n")
    return 0
