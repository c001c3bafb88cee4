"""``qualify merge``: run directories from many runners -> one JUnit and one index per head.

Runs are found by their audit. The same run seen twice (a run dir and its public/ copy,
or an artifact downloaded twice) is counted once; two runs of one family x profile are both
kept, latest first; an expected shard with no run is reported as MISSING, never dropped.

With ``--submitted`` (the records ``qualify submit`` keeps), every cell of every submission
is accounted for by its Slurm task: the run directory its qualify printed, else a row from what
Slurm recorded (the job's and each step's state, Slurm's own lines in the job's output).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from junitparser import TestCase, TestSuite

from harness import contract
from qualify.atomic import write_bytes_atomic, write_json_atomic
from qualify.commands._args import Commands, directory, format_option, printed_record
from qualify.commands.matrix import split_names
from qualify.errors import UsageError
from qualify.evidence.junit import JUnitCase, read_junit
from qualify.plan.output import check_output_dir
from qualify.publish.errorline import error_line
from qualify.records import frozen_record
from qualify.records import replace as replace_record
from qualify.report.junit import render, testcase, testsuite
from qualify.rundir import Audit, RunDir
from qualify.schedule.slurm import Slurm, TaskEvidence, gather, iso_to_epoch
from qualify.schedule.submission import SubmitRecord, find_records
from qualify.sizes import format_bytes
from qualify.verdict import EXIT_ERROR, EXIT_USAGE, PROVISIONAL_REASON, Verdict

MISSING = "MISSING"
MERGED = "qualify merge"
"""Name of the merged document's ``<testsuites>``."""
INDEX_SCHEMA_VERSION = 3
"""2: every run has ``slurm`` (null unless a submission's task ran it) and the index lists the
``submissions`` it accounted for. 3: every run has its family ``options`` and ``cap_bytes``."""
DEFAULT_OUT = Path("reports") / "merged"
"""Where merged records go without ``--out``: one directory per head below it."""


@frozen_record
class Shard:
    """One run found in the inputs (or an expected one that is missing: ``run_dir`` None)."""

    family: str
    profile: str
    run_id: str | None
    verdict: str
    head: str | None
    started: str | None
    source: str | None
    """The input DIR as given on the command line."""
    run_dir: RunDir | None
    audit: Audit | None
    slurm: dict[str, Any] | None = None
    """What Slurm recorded about the task that ran (or should have run) this cell."""
    reason: str | None = None
    """The reason of a row decided from Slurm's evidence (qualify wrote no final report)."""

    @property
    def slurm_row(self) -> bool:
        """True when the verdict is Slurm's evidence, not a qualify report."""
        return self.reason is not None

    @property
    def provisional(self) -> bool:
        """True when the audit is the one qualify writes before the E2E starts: it died."""
        return self.audit is not None and self.audit.reason == PROVISIONAL_REASON

    @property
    def exit_code(self) -> int:
        """The verdict's class code; MISSING and unknown verdicts are 4."""
        try:
            return Verdict(self.verdict).exit_code
        except ValueError:
            return EXIT_ERROR

    @property
    def cap_bytes(self) -> int | None:
        """The memory cap the run had in effect (None: uncapped, or no audit)."""
        if self.audit is None or self.audit.limits.in_effect is None:
            return None
        return self.audit.limits.in_effect.memory_bytes

    def relative(self) -> str | None:
        """The run directory relative to its input."""
        if self.run_dir is None or self.source is None:
            return None
        return str(self.run_dir.path.relative_to(Path(self.source)))

    def to_dict(self) -> dict[str, Any]:
        """The index entry."""
        memory = self.audit.memory if self.audit is not None else None
        path = self.relative()
        return {
            "family": self.family,
            "profile": self.profile,
            "run_id": self.run_id,
            "head": self.head,
            "verdict": self.verdict,
            "exit_code": self.exit_code,
            "reason": self.reason if self.slurm_row or self.audit is None else self.audit.reason,
            "started": self.started,
            "peaks": {
                "memory_bytes": memory.peak_bytes if memory else None,
                "phases": {phase.name: phase.peak_bytes for phase in memory.phases}
                if memory
                else {},
            },
            "options": dict(self.audit.family.options) if self.audit is not None else {},
            "cap_bytes": self.cap_bytes,
            "input": self.source,
            "path": path,
            "junit": None if path is None else str(Path(path) / contract.JUNIT),
            "slurm": self.slurm,
        }


def find_run_dirs(root: Path) -> list[Path]:
    """Run directories in ``root`` (itself or below), found by their audit; a public/ copy
    only when its run directory is not there (artifacts of public/ alone)."""
    found = [root] if RunDir(root).exists() else []
    found += sorted(path.parent for path in root.rglob(f"*/{contract.AUDIT}"))
    return [
        path
        for path in dict.fromkeys(found)
        if not (path.name == contract.PUBLIC_DIR and RunDir(path.parent).exists())
    ]


def read_shard(run_dir: Path, source: Path) -> Shard:
    """The shard of one run directory; an audit that cannot be read is a UsageError naming it."""
    directory = RunDir(run_dir)
    read = directory.read_audit()
    audit = read.audit
    if audit is None or not audit.family.name or not audit.profile:
        problem = "; ".join(read.problems) or "no family or profile"
        raise UsageError(f"{directory.audit_path} is not a qualify audit: {problem}")
    return Shard(
        family=audit.family.name,
        profile=audit.profile,
        run_id=audit.run_id or None,
        verdict=audit.verdict,
        head=audit.head,
        started=audit.timings.started,
        source=str(source),
        run_dir=directory,
        audit=audit,
    )


def collect(inputs: Sequence[Path]) -> list[Shard]:
    """Every run once (by run_id), grouped by family x profile, latest first within a group."""
    shards: dict[str, Shard] = {}
    for source in inputs:
        if not source.is_dir():
            raise UsageError(f"{source} is not a directory")
        for run_dir in find_run_dirs(source):
            shard = read_shard(run_dir, source)
            key = shard.run_id or str(run_dir.resolve())
            shards.setdefault(key, shard)
    latest_first = sorted(shards.values(), key=lambda s: (s.started or "", s.run_id or ""))
    latest_first.reverse()
    return sorted(latest_first, key=lambda s: (s.family, s.profile))


def parse_expected(expect: str | None, matrix_file: Path | None) -> list[tuple[str, str]]:
    """``family:profile,...`` and/or a matrix JSON (``{"include": [...]}``)."""
    pairs: list[tuple[str, str]] = []
    for item in split_names(expect, "--expect") if expect else []:
        family, sep, profile = item.partition(":")
        if not sep or not family or not profile:
            raise UsageError(f"--expect item {item!r} is not valid: expected family:profile")
        pairs.append((family, profile))
    if matrix_file is not None:
        try:
            document = json.loads(matrix_file.read_text(encoding="utf-8"))
            rows = document["include"] if isinstance(document, dict) else document
            pairs += [(str(row["family"]), str(row["profile"])) for row in rows]
        except (OSError, ValueError, KeyError, TypeError, RecursionError) as exc:
            raise UsageError(f"--matrix {matrix_file} is not a matrix JSON: {exc!r}") from None
    return list(dict.fromkeys(pairs))


def _missing(family: str, profile: str, head: str | None) -> Shard:
    return Shard(family, profile, None, MISSING, head, None, None, None, None)


def _suite(shard: Shard) -> TestSuite:
    """One suite named family/profile with the run's own testcases."""
    properties = {
        f"qualify.{name}": str(value or "")
        for name, value in (
            ("run_id", shard.run_id),
            ("verdict", shard.verdict),
            ("head", shard.head),
        )
    }
    cases: list[TestCase] = []
    problem = shard.reason or "shard missing: no run directory was found for it"
    if shard.run_dir is not None and not shard.slurm_row:
        document = read_junit(shard.run_dir.junit_path)
        cases = [case for suite in document for case in suite] if document is not None else []
        problem = "" if cases else "its JUnit file is missing, unreadable or has no testcases"
    if problem:
        lines = (shard.slurm or {}).get("lines") or []
        missing = JUnitCase(
            shard.family,
            shard.profile,
            "error",
            message=problem,
            text="\n".join(lines) or None,
            kind=shard.verdict,
        )
        cases = [testcase(missing)]
    return testsuite(f"{shard.family}/{shard.profile}", cases, properties)


def _write(
    out: Path,
    head: str,
    shards: Sequence[Shard],
    heads: Sequence[str],
    submissions: Sequence[str] = (),
) -> int:
    out.mkdir(parents=True, exist_ok=True)
    write_bytes_atomic(out / contract.JUNIT, render([_suite(shard) for shard in shards], MERGED))
    worst = max((shard.exit_code for shard in shards), default=0)
    write_json_atomic(
        out / "index.json",
        {
            "schema_version": INDEX_SCHEMA_VERSION,
            "head": head,
            "heads_merged": list(heads),
            "generated": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "exit_code": worst,
            "submissions": list(submissions),
            "runs": [shard.to_dict() for shard in shards],
        },
    )
    return worst


def _printed_run(evidence: TaskEvidence, repo: Path, by_path: dict[Path, Shard]) -> Shard | None:
    """The run directory the task's qualify printed (its last line), among the shards."""
    printed = evidence.words.printed if evidence.words is not None else ()
    for line in reversed(printed):
        text = line.strip()
        if not text or len(text) > 4096 or "\0" in text:
            continue
        candidate = Path(text) if Path(text).is_absolute() else repo / text
        try:
            resolved = Path(os.path.normpath(candidate.resolve()))
        except (OSError, RuntimeError):
            continue
        shard = by_path.get(resolved)
        if shard is not None and (shard.family, shard.profile) == (
            evidence.family,
            evidence.profile,
        ):
            return shard
    return None


def _dead_run(evidence: TaskEvidence, shards: Sequence[Shard], taken: set[int]) -> Shard | None:
    """The run of the task's cell that started while the task ran, when its qualify never
    printed it (it died: the run is provisional, or completed as ERROR by a take-over)."""
    started = evidence.words.started if evidence.words is not None else None
    if started is None:
        return None
    ended = evidence.ended if evidence.ended is not None else time.time()
    for shard in shards:
        begun = iso_to_epoch(shard.started)
        if (
            id(shard) not in taken
            and shard.run_dir is not None
            and (shard.family, shard.profile) == (evidence.family, evidence.profile)
            and begun is not None
            and started - 2 <= begun <= ended + 2
        ):
            return shard
    return None


def account_for_submissions(
    shards: Sequence[Shard], records: Sequence[SubmitRecord], slurm: Slurm | None
) -> list[Shard]:
    """Each task of each submission accounted for: the run its qualify printed, annotated
    with Slurm's record; where qualify died before it printed one, a row decided from Slurm's
    evidence (taking the place of the provisional or taken-over run it left, if any)."""
    rows = list(shards)
    by_path = {
        Path(os.path.normpath(shard.run_dir.path.resolve())): shard
        for shard in shards
        if shard.run_dir is not None
    }
    tasks = [
        (record, cell, evidence[array.task(cell)])
        for record in records
        for evidence in [gather(record, slurm)]
        for array, cell in record.tasks()
    ]
    printed = [_printed_run(found, Path(record.repo), by_path) for record, _, found in tasks]
    taken = {id(run) for run in printed if run is not None}
    for (record, cell, found), own in zip(tasks, printed, strict=True):
        run = own if own is not None else _dead_run(found, rows, taken)
        final = run is not None and id(run) in taken
        if run is not None and not final and not run.provisional:
            final = run.verdict != Verdict.ERROR.value
        if run is not None and final:
            annotated = replace_record(run, slurm=found.to_dict())
        else:
            verdict, reason = found.verdict()
            annotated = Shard(
                family=cell.family,
                profile=cell.profile,
                run_id=run.run_id if run else None,
                verdict=verdict,
                head=record.head,
                started=run.started if run else None,
                source=run.source if run else None,
                run_dir=run.run_dir if run else None,
                audit=run.audit if run else None,
                slurm=found.to_dict(),
                reason=reason,
            )
        if run is not None:
            rows[rows.index(run)] = annotated
        else:
            rows.append(annotated)
        taken.add(id(annotated))
        if run is not None:
            taken.add(id(run))
    return rows


def _slurm_here() -> Slurm | None:
    """Slurm's commands, when this machine has them (a merge elsewhere reads output files)."""
    slurm = Slurm()
    return slurm if shutil.which("scontrol") else None


def merge(
    *,
    inputs: Sequence[Path],
    out: Path | None = None,
    expect: str | None = None,
    matrix_file: Path | None = None,
    allow_mixed_heads: bool = False,
    submitted: Sequence[Path] = (),
    slurm: Slurm | None = None,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
) -> int:
    """Merge; exit 0 when every run passed, else the worst class code (missing = 4)."""
    stdout, stderr = stdout or sys.stdout, stderr or sys.stderr
    from qualify.experiment.merge import ab_inputs, holds_records, merge_ab

    if ab_inputs(inputs):  # A/B results (qualify ab) from several hosts: one table per level
        given = (("--expect", expect), ("--matrix", matrix_file), ("--submitted", submitted))
        return merge_ab(
            inputs=inputs,
            out=out,
            stdout=stdout,
            stderr=stderr,
            run_flags=[flag for flag, value in given if value],
        )
    for source in inputs:
        if holds_records(source):
            stderr.write(
                f"qualify merge: {source} holds A/B results (ab.json) beside other runs: their "
                "runs are merged as runs (qualify merge of the A/B directories alone merges "
                "them as A/B results)\n"
            )
    try:
        shards = collect(inputs)
        expected = parse_expected(expect, matrix_file)
        records = find_records(submitted) if submitted else []
        if records:
            shards = account_for_submissions(shards, records, slurm or _slurm_here())
        heads = sorted({shard.head or "unknown" for shard in shards}) or ["unknown"]
        if len(heads) > 1 and not allow_mixed_heads:
            raise UsageError(
                f"runs of different heads: {', '.join(heads)} (merge one head at a time, "
                "or pass --allow-mixed-heads)"
            )
        if not shards and not expected and not records:
            raise UsageError(
                f"no run directories ({contract.AUDIT}) under {', '.join(map(str, inputs))}"
            )
        targets = {
            head: (out or DEFAULT_OUT) / head if out is None or len(heads) > 1 else out
            for head in heads
        }
        for target in targets.values():
            what = "--out" if out is not None else "the default --out"
            check_output_dir(out or DEFAULT_OUT, what, below=target)
    except UsageError as exc:
        stderr.write(error_line("qualify merge", exc))
        return EXIT_USAGE
    worst = 0
    for head in heads:
        group = [shard for shard in shards if (shard.head or "unknown") == head]
        present = {(shard.family, shard.profile) for shard in group}
        group += [_missing(f, p, head) for f, p in expected if (f, p) not in present]
        group.sort(key=lambda s: (s.family, s.profile))
        target = targets[head]
        ids = [record.id for record in records if record.head == head]
        worst = max(worst, _write(target, head, group, heads, ids))
        for line in _row_lines(group):
            stdout.write(line + "\n")
        stdout.write(f"{target}\n")
    return worst


def _row_lines(group: Sequence[Shard]) -> list[str]:
    """One line per run: family/profile, run id, verdict, cap, and the options whose values
    differ between the runs of its family and profile (what tells runs of an A/B apart)."""
    varied: dict[tuple[str, str], set[str]] = {}
    seen: dict[tuple[str, str], dict[str, set[str]]] = {}
    for shard in group:
        options = shard.audit.family.options if shard.audit is not None else {}
        values = seen.setdefault((shard.family, shard.profile), {})
        for name, value in options.items():
            values.setdefault(name, set()).add(repr(value))
    for key, values in seen.items():
        varied[key] = {name for name, found in values.items() if len(found) > 1}
    lines = []
    for shard in group:
        options = shard.audit.family.options if shard.audit is not None else {}
        cap = format_bytes(shard.cap_bytes) if shard.cap_bytes is not None else "-"
        shown = " ".join(
            f"{name}={options[name]}"
            for name in sorted(varied[(shard.family, shard.profile)])
            if name in options
        )
        line = f"{shard.family}/{shard.profile} {shard.run_id or '-'} {shard.verdict} cap {cap}"
        lines.append(f"{line} {shown}".rstrip())
    return lines


def add_parser(commands: Commands) -> None:
    parser = commands.add_parser("merge", help="merge run directories into one JUnit and index")
    parser.add_argument("dirs", nargs="+", type=Path, metavar="DIR", help="run dirs or trees")
    parser.add_argument("--out", type=directory, help="default: reports/merged/<head-sha>/")
    parser.add_argument("--expect", metavar="FAMILY:PROFILE,...", help="shards that must exist")
    parser.add_argument("--matrix", type=Path, help="matrix JSON (qualify matrix) of the shards")
    parser.add_argument(
        "--allow-mixed-heads",
        action="store_true",
        help="merge runs of different head commits (one index and JUnit per head)",
    )
    format_option(parser, "the index (index.json) of the last head merged")
    parser.add_argument(
        "--submitted",
        action="append",
        type=Path,
        default=[],
        metavar="PATH",
        help="qualify submit records (submit-*.json, or a directory of them): every cell of "
        "each is accounted for by its Slurm task (repeatable)",
    )


def main(args: argparse.Namespace) -> int:
    def merged(out: TextIO) -> int:
        return merge(
            inputs=args.dirs,
            out=args.out,
            expect=args.expect,
            matrix_file=args.matrix,
            allow_mixed_heads=args.allow_mixed_heads,
            submitted=args.submitted,
            stdout=out,
        )

    return printed_record(merged, "index.json", args.output_format, sys.stdout)
