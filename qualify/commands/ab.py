"""``qualify ab``: an A/B of a runtime policy, n full runs per arm, everything else pinned.

The runs are interleaved (or shuffled with a recorded seed) so that drift hits both arms
alike; each is a whole ``qualify run`` in its own process with its own run directory below
``reports/<head>/<family>/ab/<id>/runs/``. After each run its pins (commit, tree, image,
limits, environment fingerprint) are compared with the first run's: a difference refuses the
experiment (exit 2) rather than comparing two things that are not one difference apart.
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from qualify import records
from qualify.commands._args import (
    Commands,
    command_line,
    experiment_common,
    experiment_options,
    positive,
    printed_record,
)
from qualify.console import display_path
from qualify.errors import UsageError
from qualify.experiment.ab_record import AB_JSON, RUNS_DIR, AbRecord, write_record
from qualify.experiment.pins import differences, limit_pins, pins
from qualify.experiment.plan import ARMS, AbPlan, Slot, build_plan, parse_sets
from qualify.experiment.repetition import Repetition, experiment, from_run_dir, run_once
from qualify.experiment.tables import show_spread, show_verdicts
from qualify.experiment.worktrees import add_worktree, remove_worktree, resolve_commit, subject
from qualify.plan.commit import repo_root
from qualify.plan.families import default_family_dirs, find_family
from qualify.publish.errorline import error_line
from qualify.records import frozen_record
from qualify.sizes import format_bytes
from qualify.verdict import EXIT_ERROR, EXIT_USAGE

WORKTREES = "worktrees"
"""Where ``--commits`` checks out each arm's commit, inside the experiment's directory."""

"""How long past the family's timeout a repetition may take (set-up, reports) before the
experiment gives up on it."""


@frozen_record
class AbRequest:
    """``qualify ab`` as typed."""

    family_name: str
    arm_a: str | None = None
    arm_b: str | None = None
    commits: str | None = None
    """``REF_A,REF_B``: the arms are these two commits (their families run as committed)."""
    n: int = 8
    mem: str | None = None
    profile: str | None = None
    sweep: str | None = None
    order: str = "interleaved"
    seed: int | None = None
    sets: Sequence[str] = ()
    metrics: str | None = None
    families_dirs: Sequence[Path] = ()
    repo: Path | None = None
    out: Path = Path("reports")
    timeout: str | None = None
    backend: str = "auto"
    image: str | None = None
    host: str | None = None
    command_line: Sequence[str] = ()


def _metrics(text: str | None) -> list[str] | None:
    if text is None:
        return None
    names = list(dict.fromkeys(part.strip() for part in text.split(",") if part.strip()))
    if not names:
        raise UsageError(f"--metrics {text!r} is empty: give comma-separated metric names")
    return names


def _run_args(
    request: AbRequest, plan: AbPlan, roots: dict[str, Path], runs: Path, slot: Slot
) -> list[str]:
    """The ``qualify run`` arguments of one slot: the same for every run but the arm's options
    (and the sweep level's), or with ``--commits`` the arm's worktree."""
    level = plan.levels[slot.level]
    args = ["--family", plan.family.name, "--repo", str(roots[slot.arm]), "--out", str(runs)]
    args += ["--backend", request.backend]
    for directory in request.families_dirs:
        args += ["--families-dir", str(directory.resolve())]
    options = {**plan.common, **plan.arms[slot.arm], **level.sets}
    for name, value in options.items():
        args += ["--set", f"{name}={value}"]
    if level.mem is not None:
        args += ["--mem", level.mem]
    if request.profile is not None:
        args += ["--profile", request.profile]
    for flag, given in (("--image", request.image), ("--timeout", request.timeout)):
        if given is not None:
            args += [flag, given]
    return args


def _cap(request: AbRequest, plan: AbPlan) -> str:
    if request.sweep is not None and plan.levels[0].mem is not None:
        return f"swept: {', '.join(level.label for level in plan.levels)}"
    if request.mem is not None:
        return request.mem
    if request.profile is not None:
        return f"profile {request.profile}"
    memory = plan.family.memory_bytes
    return f"family default ({format_bytes(memory)})" if memory else "qualify's default"


def _progress(stderr: TextIO, done: int, total: int, run: Repetition) -> None:
    level = f" {run.level}" if run.level else ""
    wall = f"{run.wall_s:.1f}s" if run.wall_s is not None else "-"
    stderr.write(
        f"qualify ab: [{done}/{total}]{level} arm {run.arm}: {run.verdict}, "
        f"peak {format_bytes(run.peak_bytes)}, {wall}\n"
    )


def _refusal(first: dict[str, Any], audit_pins: dict[str, Any], run: Repetition) -> str | None:
    lines = differences(first, audit_pins)
    if not lines:
        return None
    return f"run {run.index + 1} ({run.run_id}) differs from the first in " + "; ".join(lines)


def ab(request: AbRequest, stdout: TextIO = sys.stdout, stderr: TextIO = sys.stderr) -> int:
    """Run the experiment; 0 when done (whatever the verdicts: they are the data), 2 when
    refused, 4 when a run could not be made or qualify could not judge one (ERROR)."""
    started = time.monotonic()
    try:
        root = repo_root(request.repo if request.repo is not None else Path.cwd())
        search = list(request.families_dirs) or default_family_dirs(root)
        family = find_family(request.family_name, search)
        commits = _commits(request, root)
        plan = build_plan(
            family=family,
            arm_a=request.arm_a or "",
            arm_b=request.arm_b or "",
            commits=commits,
            sets=parse_sets(request.sets),
            n=request.n,
            mem=request.mem,
            sweep=request.sweep,
            order=request.order,
            seed=request.seed,
            metrics=_metrics(request.metrics),
        )
        where = experiment(root, request.out, family, "ab", request.timeout)
    except UsageError as exc:
        stderr.write(error_line("qualify ab", exc))
        return EXIT_USAGE
    directory = where.directory
    directory.mkdir(parents=True)
    record = AbRecord(
        id=directory.name,
        family=family.name,
        head=where.head,
        host=request.host or platform.node() or "unknown",
        created=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        command=list(request.command_line),
        arms=_arms_shown(plan, root),
        differing=(
            {"commit": dict(plan.commits)}
            if plan.commits is not None
            else {
                name: {arm: plan.resolved[arm][name] for arm in plan.resolved}
                for name in plan.differing
            }
        ),
        common=dict(plan.common),
        n=plan.n,
        order=plan.order,
        seed=plan.seed,
        cap=_cap(request, plan),
        levels=[level.label for level in plan.levels],
        coupled=[list(group) for group in family.coupled],
        metrics_asked=list(plan.metrics) if plan.metrics is not None else None,
        repetitions=[],
    )
    roots = {arm: root for arm in plan.arms}
    try:
        for arm, sha in (plan.commits or {}).items():
            roots[arm] = directory / WORKTREES / arm
            if not add_worktree(root, roots[arm], sha):
                stderr.write(error_line("qualify ab", f"git worktree add of {sha} failed"))
                return EXIT_ERROR
        code, made = _run_all(request, plan, roots, directory, record, where.run_timeout_s, stderr)
    finally:
        for arm in plan.commits or {}:
            remove_worktree(root, roots[arm])
    made = records.replace(made, wall_s=round(time.monotonic() - started, 3))
    write_record(directory, made)
    _print_summary(made, stdout)
    stdout.write(f"{display_path(directory)}\n")
    return code


def _commits(request: AbRequest, root: Path) -> dict[str, str] | None:
    """``--commits REF_A,REF_B`` resolved (arm -> commit), or None; the arms are given either
    as commits or as options (``--a``, ``--b``), never both."""
    if request.commits is None:
        if request.arm_a is None or request.arm_b is None:
            raise UsageError("give --a and --b (family options), or --commits REF_A,REF_B")
        return None
    if request.arm_a is not None or request.arm_b is not None:
        raise UsageError("--commits and --a/--b both set the arms: give one")
    refs = [ref.strip() for ref in request.commits.split(",")]
    if len(refs) != 2 or not all(refs):
        raise UsageError(f"--commits {request.commits!r} is not valid: expected REF_A,REF_B")
    shas = {
        arm: resolve_commit(root, ref, "--commits") for arm, ref in zip(ARMS, refs, strict=True)
    }
    if shas["a"] == shas["b"]:
        raise UsageError(f"--commits {request.commits!r}: both refs are the same commit")
    return shas


def _arms_shown(plan: AbPlan, root: Path) -> dict[str, dict[str, Any]]:
    """Each arm's options, or with ``--commits`` its commit and subject (the labels' text)."""
    if plan.commits is None:
        return {arm: dict(options) for arm, options in plan.arms.items()}
    return {
        arm: {"commit": f"{sha[:12]} {subject(root, sha)[:40]}"}
        for arm, sha in plan.commits.items()
    }


def _run_all(
    request: AbRequest,
    plan: AbPlan,
    roots: dict[str, Path],
    directory: Path,
    record: AbRecord,
    timeout_s: float,
    stderr: TextIO,
) -> tuple[int, AbRecord]:
    """Make every run in order; stop at the first refusal or failure to make one.

    ``ab.json`` is rewritten before the first run and after each one, marked incomplete, so
    that a ``qualify ab`` killed outright (SIGKILL, a cancelled job) still leaves the runs it
    made on record; the final record replaces it.
    """
    runs: list[Repetition] = []
    first_by_arm: dict[str, dict[str, Any]] = {}
    first_limits: dict[int, dict[str, Any]] = {}
    schedule = plan.schedule()
    for index, slot in enumerate(schedule):
        _write_incomplete(directory, record, runs, len(schedule))
        args = _run_args(request, plan, roots, directory / RUNS_DIR, slot)
        level = plan.levels[slot.level].label
        stderr.write(
            f"qualify ab: [{index + 1}/{len(schedule)}]{f' {level}' if level else ''} "
            f"arm {slot.arm} starts\n"
        )
        try:
            run_dir = run_once(args, cwd=Path.cwd(), timeout_s=timeout_s)
        except UsageError as exc:
            stderr.write(error_line("qualify ab", f"run {index + 1} refused: {exc}"))
            return EXIT_USAGE, records.replace(record, repetitions=runs, refused=str(exc))
        except (RuntimeError, OSError) as exc:
            stderr.write(error_line("qualify ab", f"run {index + 1} could not be made: {exc}"))
            failed = f"run {index + 1} could not be made: {exc}"
            return EXIT_ERROR, records.replace(record, repetitions=runs, refused=failed)
        except KeyboardInterrupt:
            stderr.write(f"qualify ab: interrupted during run {index + 1}\n")
            stopped = f"interrupted during run {index + 1} of {len(schedule)}"
            return EXIT_ERROR, records.replace(record, repetitions=runs, refused=stopped)
        label = plan.levels[slot.level].label
        run, audit = from_run_dir(
            run_dir, arm=slot.arm, level=label, index=index, relative_to=directory
        )
        runs.append(run)
        _progress(stderr, index + 1, len(schedule), run)
        found = pins(audit, varied=plan.varied)
        # With --commits the commit, tree and family differ between the arms by design: each
        # arm's runs are pinned to that arm's first run.
        first = first_by_arm.setdefault(slot.arm if plan.commits else "", found)
        limits = first_limits.setdefault(slot.level, limit_pins(audit))
        refusal = _refusal({**first, **limits}, {**found, **limit_pins(audit)}, run)
        if refusal is not None:
            stderr.write(error_line("qualify ab", f"refused: {refusal}"))
            return EXIT_USAGE, records.replace(record, repetitions=runs, refused=refusal)
    # A run qualify itself could not judge (ERROR) says nothing about the policy: exit 4.
    errors = any(run.verdict == "ERROR" for run in runs)
    return (EXIT_ERROR if errors else 0), records.replace(record, repetitions=runs)


def _write_incomplete(
    directory: Path, record: AbRecord, runs: list[Repetition], total: int
) -> None:
    incomplete = f"incomplete: {len(runs)} of {total} runs recorded (qualify ab did not finish)"
    write_record(directory, records.replace(record, repetitions=list(runs), refused=incomplete))


def _print_summary(record: AbRecord, stdout: TextIO) -> None:
    labels = record.arm_labels()
    for level in record.summaries():
        prefix = f"{level.label}: " if level.label else ""
        for name, arm in level.arms.items():
            stdout.write(
                f"{prefix}{labels[name]}: {show_verdicts(arm)}; "
                f"peak {show_spread(arm.peak, 'bytes')}\n"
            )
        for group, judgement in level.groups:
            stdout.write(f"{prefix}{' + '.join(group)}: {judgement}\n")
    if record.refused:
        stdout.write(f"refused: {record.refused}\n")


def add_parser(commands: Commands) -> None:
    parser = commands.add_parser(
        "ab", help="A/B of a runtime policy: n full runs per arm, everything else pinned"
    )
    experiment_options(parser)
    parser.add_argument("--a", dest="arm_a", metavar="NAME=VALUE[,...]", help="arm a's options")
    parser.add_argument("--b", dest="arm_b", metavar="NAME=VALUE[,...]", help="arm b's options")
    parser.add_argument(
        "--commits", metavar="REF_A,REF_B",
        help="the arms are two commits of --repo (each run in a worktree of its commit)",
    )  # fmt: skip
    parser.add_argument("--n", type=positive, default=8, help="runs per arm and level (default 8)")
    cap = parser.add_mutually_exclusive_group()
    cap.add_argument("--mem", help="memory cap of every run: 850M, 48G")
    cap.add_argument("--profile", help="resource profile of every run")
    parser.add_argument(
        "--sweep", metavar="mem=SIZE,... | NAME=V,...", help="levels, both arms each"
    )
    parser.add_argument(
        "--order",
        choices=("interleaved", "random"),
        default="interleaved",
        help="run order: interleaved (a b, b a, ...; default) or random (shuffled, --seed)",
    )
    parser.add_argument(
        "--seed", type=int, help="seed of --order random (default: drawn, recorded)"
    )
    parser.add_argument("--metrics", metavar="NAME,...", help="metrics to report (default: all)")
    parser.add_argument("--host", help="name of this host in the record (default: the machine's)")


def main(args: argparse.Namespace) -> int:
    request = AbRequest(
        **experiment_common(args),
        arm_a=args.arm_a,
        arm_b=args.arm_b,
        commits=args.commits,
        n=args.n,
        mem=args.mem,
        profile=args.profile,
        sweep=args.sweep,
        order=args.order,
        seed=args.seed,
        metrics=args.metrics,
        host=args.host,
        command_line=command_line(args),
    )
    return printed_record(lambda out: ab(request, out), AB_JSON, args.output_format, sys.stdout)
