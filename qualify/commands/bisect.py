"""``qualify bisect``: the first commit at which a family is no longer PASSED under a cap.

Each probe runs the family of one commit, checked out in a git worktree of its own, with
everything else as typed (cap or profile, ``--set`` options, backend, image, qualify itself):
a whole ``qualify run`` in its own process, its run directory kept below
``OUT/<head>/<family>/bisect/<id>/runs/``. With ``--peak-over PHASE=SIZE`` a commit is bad when
that phase's peak exceeds SIZE (whatever the verdict). ``bisect.json`` beside the runs records
the range, every probe with its runs and the answer; it is rewritten after each probe.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from qualify.atomic import write_json_atomic
from qualify.commands._args import (
    Commands,
    command_line,
    experiment_common,
    experiment_options,
    printed_record,
)
from qualify.console import display_path
from qualify.errors import UsageError
from qualify.experiment.commits import Commit, CommitProbe, CommitSearch, search_commits
from qualify.experiment.repetition import Repetition, experiment, from_run_dir, run_once
from qualify.experiment.worktrees import (
    add_worktree,
    git,
    remove_worktree,
    resolve_commit,
    subject,
)
from qualify.plan.commit import repo_root
from qualify.plan.families import default_family_dirs, find_family
from qualify.publish.errorline import error_line
from qualify.records import frozen_record
from qualify.sizes import format_bytes, parse_size
from qualify.verdict import EXIT_ERROR, EXIT_USAGE

RECORD = "bisect.json"
WORKTREES = "worktrees"
RUNS = "runs"


@frozen_record
class BisectRequest:
    """``qualify bisect`` as typed."""

    family_name: str
    good: str
    bad: str
    repeat: int = 1
    peak_over: str | None = None
    mem: str | None = None
    profile: str | None = None
    sets: Sequence[str] = ()
    families_dirs: Sequence[Path] = ()
    repo: Path | None = None
    out: Path = Path("reports")
    timeout: str | None = None
    backend: str = "auto"
    image: str | None = None
    command_line: Sequence[str] = ()


def commit_range(root: Path, good: str, bad: str) -> list[Commit]:
    """The commits from ``good`` to ``bad``, both included, oldest first; UsageError when
    ``good`` is not an ancestor of ``bad``."""
    good_sha, bad_sha = resolve_commit(root, good, "--good"), resolve_commit(root, bad, "--bad")
    if good_sha == bad_sha:
        raise UsageError(f"--good {good!r} and --bad {bad!r} are the same commit")
    code, _ = git(root, "merge-base", "--is-ancestor", good_sha, bad_sha)
    if code != 0:
        raise UsageError(
            f"--good {good!r} is not an ancestor of --bad {bad!r}: give an older good commit"
        )
    _, listing = git(
        root, "log", "--reverse", "--ancestry-path", "--format=%H %s", f"{good_sha}..{bad_sha}"
    )
    commits = [Commit(good_sha, subject(root, good_sha))]
    for line in listing.splitlines():
        sha, _, text = line.partition(" ")
        commits.append(Commit(sha, text))
    return commits


def _peak_bound(text: str | None) -> tuple[str, int] | None:
    if text is None:
        return None
    phase, sep, size = text.partition("=")
    if not sep or not phase.strip() or not size.strip():
        raise UsageError(f"--peak-over {text!r}: give PHASE=SIZE, such as build:decode=300M")
    return phase.strip(), parse_size(size.strip(), what="--peak-over")


def _judge(run: Repetition, bound: tuple[str, int] | None) -> tuple[bool | None, str]:
    """Whether one run is bad, and why; None when it says nothing about the commit."""
    if run.verdict == "ERROR":
        return None, f"ERROR: {run.reason}"
    if bound is None:
        return not run.passed, run.verdict
    phase, limit = bound
    peak = run.phase_peaks.get(phase)
    if peak is None:
        return None, f"{run.verdict}, no phase {phase!r} recorded"
    over = "over" if peak > limit else "within"
    return peak > limit, f"{phase} peak {format_bytes(peak)} {over} {format_bytes(limit)}"


class _Prober:
    """Runs a commit's probe: a worktree, ``repeat`` runs, the worktree removed."""

    def __init__(
        self, request: BisectRequest, root: Path, directory: Path, timeout_s: float,
        stderr: TextIO,
    ) -> None:  # fmt: skip
        self.request, self.root, self.directory = request, root, directory
        self.timeout_s, self.stderr = timeout_s, stderr
        self.bound = _peak_bound(request.peak_over)
        self.count = 0

    def _args(self, worktree: Path) -> list[str]:
        request = self.request
        args = ["--family", request.family_name, "--repo", str(worktree)]
        args += ["--out", str(self.directory / RUNS), "--backend", request.backend]
        for directory in request.families_dirs:
            args += ["--families-dir", str(directory.resolve())]
        for option in request.sets:
            args += ["--set", option]
        for flag, given in (
            ("--mem", request.mem), ("--profile", request.profile),
            ("--image", request.image), ("--timeout", request.timeout),
        ):  # fmt: skip
            if given is not None:
                args += [flag, given]
        return args

    def __call__(self, commit: Commit) -> CommitProbe:
        self.count += 1
        worktree = self.directory / WORKTREES / commit.short
        if not add_worktree(self.root, worktree, commit.sha):
            return self._report(CommitProbe(commit, (), (), None, "git worktree add failed"))
        try:
            probe = self._runs(commit, worktree)
        finally:
            remove_worktree(self.root, worktree)
        return self._report(probe)

    def _runs(self, commit: Commit, worktree: Path) -> CommitProbe:
        runs: list[Repetition] = []
        results: list[bool] = []
        whys: list[str] = []
        args = self._args(worktree)
        for index in range(self.request.repeat):
            try:
                run_dir = run_once(args, cwd=Path.cwd(), timeout_s=self.timeout_s)
            except (UsageError, RuntimeError, OSError) as exc:
                why = f"could not be run: {exc}"
                return CommitProbe(commit, tuple(runs), tuple(results), None, why)
            run, _ = from_run_dir(
                run_dir, arm=commit.short, level="", index=index, relative_to=self.directory
            )
            runs.append(run)
            bad, why = _judge(run, self.bound)
            if bad is None:
                return CommitProbe(commit, tuple(runs), tuple(results), None, why)
            results.append(bad)
            whys.append(why)
        shown = ", ".join(dict.fromkeys(whys))
        if len(results) > 1:
            shown = f"{sum(results)}/{len(results)} bad: {shown}"
        return CommitProbe(commit, tuple(runs), tuple(results), any(results), shown)

    def _report(self, probe: CommitProbe) -> CommitProbe:
        what = {True: "bad", False: "good", None: "skipped"}[probe.bad]
        peaks = [run.peak_bytes for run in probe.runs if run.peak_bytes is not None]
        peak = f", peak {format_bytes(max(peaks))}" if peaks else ""
        self.stderr.write(
            f"qualify bisect: [{self.count}] {probe.commit.short} {probe.commit.subject[:50]!r}: "
            f"{what} ({probe.why}{peak})\n"
        )
        return probe


def _record(
    request: BisectRequest, head: str, search: CommitSearch | None, wall_s: float | None
) -> dict[str, Any]:
    document: dict[str, Any] = {
        "kind": "bisect",
        "family": request.family_name,
        "head": head,
        "command": list(request.command_line),
        "good": request.good,
        "bad": request.bad,
        "repeat": request.repeat,
        "peak_over": request.peak_over,
        "cap": request.mem or (f"profile {request.profile}" if request.profile else None),
        "sets": list(request.sets),
        "complete": search is not None,
        "wall_s": wall_s,
    }
    if search is not None:
        document.update(search.to_dict())
    return document


def _print(search: CommitSearch, stdout: TextIO) -> None:
    order = {commit.sha: index for index, commit in enumerate(search.commits)}
    stdout.write("commit        verdicts                          peak       subject\n")
    for probe in sorted(search.probes, key=lambda p: order[p.commit.sha]):
        peaks = [run.peak_bytes for run in probe.runs if run.peak_bytes is not None]
        mark = {True: "bad ", False: "good", None: "skip"}[probe.bad]
        verdicts = ",".join(run.verdict for run in probe.runs) or "-"
        peak = format_bytes(max(peaks)) if peaks else "-"
        stdout.write(
            f"{probe.commit.short}  {mark} {verdicts[:28]:<28} {peak:>10}  "
            f"{probe.commit.subject[:60]}{'  (flaky)' if probe.flaky else ''}\n"
        )
    if search.stopped:
        stdout.write(f"no boundary: {search.stopped}\n")
    elif search.first_bad is not None:
        stdout.write(f"first bad commit: {search.first_bad.sha} {search.first_bad.subject}\n")
    else:
        names = ", ".join(commit.short for commit in search.suspects)
        stdout.write(f"the first bad commit is one of: {names} (the others could not be run)\n")


def bisect(request: BisectRequest, stdout: TextIO = sys.stdout, stderr: TextIO = sys.stderr) -> int:
    """Search; 0 when a first bad commit is named, 4 when the ends do not bracket a change or
    skipped commits hide it, 2 for bad input."""
    started = time.monotonic()
    try:
        if request.repeat < 1:
            raise UsageError(f"--repeat {request.repeat}: give 1 or more")
        _peak_bound(request.peak_over)
        root = repo_root(request.repo if request.repo is not None else Path.cwd())
        commits = commit_range(root, request.good, request.bad)
        search_dirs = list(request.families_dirs) or default_family_dirs(root)
        family = find_family(request.family_name, search_dirs)
        where = experiment(root, request.out, family, "bisect", request.timeout)
    except UsageError as exc:
        stderr.write(error_line("qualify bisect", exc))
        return EXIT_USAGE
    directory = where.directory
    directory.mkdir(parents=True)
    write_json_atomic(directory / RECORD, _record(request, where.head, None, None))
    stderr.write(
        f"qualify bisect: {len(commits)} commits from {commits[0].short} to {commits[-1].short}; "
        f"about {max(1, (len(commits) - 2).bit_length())} probes after both ends\n"
    )
    prober = _Prober(request, root, directory, where.run_timeout_s, stderr)
    try:
        search = search_commits(commits, prober)
    except KeyboardInterrupt:
        stderr.write("qualify bisect: interrupted\n")
        return EXIT_ERROR
    finally:
        git(root, "worktree", "prune")
    wall = round(time.monotonic() - started, 3)
    write_json_atomic(directory / RECORD, _record(request, where.head, search, wall))
    _print(search, stdout)
    stdout.write(f"{display_path(directory)}\n")
    return 0 if search.first_bad is not None else EXIT_ERROR


def add_parser(commands: Commands) -> None:
    parser = commands.add_parser(
        "bisect",
        help="the first commit at which a family is no longer PASSED under a cap",
        description=(
            "Run the family of each probed commit (a git worktree of it) under the same cap "
            "and options, halving the range from --good to --bad; print the first bad commit "
            "and every probe. Exit 0 when a commit is named, 4 when the ends do not bracket "
            "a change (or skipped commits hide it), 2 for bad input."
        ),
    )
    experiment_options(parser)
    parser.add_argument("--good", required=True, metavar="REF", help="a commit that passes")
    parser.add_argument("--bad", required=True, metavar="REF", help="a later commit that fails")
    cap = parser.add_mutually_exclusive_group()
    cap.add_argument("--mem", help="memory cap of every run: 850M, 48G")
    cap.add_argument("--profile", help="resource profile of every run")
    parser.add_argument(
        "--repeat", type=int, default=1, metavar="N",
        help="runs per probed commit; a commit is bad when any run is (default 1)",
    )  # fmt: skip
    parser.add_argument(
        "--peak-over", metavar="PHASE=SIZE",
        help="a commit is bad when this phase's peak exceeds SIZE (instead of not PASSED)",
    )  # fmt: skip


def main(args: argparse.Namespace) -> int:
    request = BisectRequest(
        **experiment_common(args),
        good=args.good,
        bad=args.bad,
        repeat=args.repeat,
        peak_over=args.peak_over,
        mem=args.mem,
        profile=args.profile,
        command_line=command_line(args),
    )
    return printed_record(lambda out: bisect(request, out), RECORD, args.output_format, sys.stdout)
