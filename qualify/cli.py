"""Command line: parse and dispatch only; the work is in ``qualify.commands``."""

from __future__ import annotations

import argparse
import atexit
import contextlib
import math
import os
import re
import sys
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from harness import contract
from qualify import __version__
from qualify.sandbox import CHOICES as BACKENDS
from qualify.verdict import EXIT_PIPE_CLOSED, EXIT_USAGE

if TYPE_CHECKING:
    from qualify.publish.bundle import SecretSources


class _Parser(argparse.ArgumentParser):
    """argparse that reports bad usage as one line and exit code 2 (no usage dump)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        from qualify.publish.errorline import error_line

        sys.stderr.write(error_line(self.prog, message))
        raise SystemExit(EXIT_USAGE)


def _directory(text: str) -> Path:
    """An output directory: '' is not valid (``Path('')`` would silently be the current one)."""
    if not text:
        raise argparse.ArgumentTypeError(
            "'' is not valid (valid: a directory path; '.' for the current directory)"
        )
    return Path(text)


def _count(text: str) -> int:
    """A whole number >= 0."""
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not valid (valid: a whole number >= 0)")
    return value


def _nats(text: str) -> float:
    """A finite number of nats >= 0 (not nan, not inf)."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not valid (valid: a finite number of nats >= 0)"
        )
    return value


def _run_parser(commands: argparse._SubParsersAction[_Parser]) -> None:
    run = commands.add_parser("run", help="run a family's E2E under a real memory cap")
    run.add_argument("--family", required=True, help="family name (a directory with family.toml)")
    run.add_argument("--mem", help="memory cap: 512M, 48G (binary), 48GB (decimal)")
    run.add_argument("--profile", help="resource profile from cgroup_profiles/ (--mem overrides)")
    run.add_argument(
        "--families-dir",
        action="append",
        type=Path,
        default=[],
        help="where families live (repeatable; default: the repo's families/ and qualify's)",
    )
    run.add_argument("--out", type=_directory, default=Path("reports"), help="output root")
    run.add_argument("--timeout", help="E2E timeout (default: the family's)")
    run.add_argument("--backend", default="auto", choices=BACKENDS)
    run.add_argument("--repo", type=Path, help="the repo whose head is qualified (default: .)")
    run.add_argument(
        "--set",
        dest="sets",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="override a family option (repeatable)",
    )
    run.add_argument("--interval", default="50ms", help="monitor sample interval")
    run.add_argument("--base-ref", default="origin/main", help="ref for commit.base (merge-base)")
    run.add_argument("--image", help="docker image to run the E2E in (--backend docker/auto)")
    run.add_argument("--shm", help="docker: /dev/shm size, charged to the cap (default 64M)")
    run.add_argument(
        "--network", default="none", help="docker: network mode (default none; bridge, host)"
    )
    run.add_argument("--gpus", help="docker: GPUs as for docker run --gpus: all, N, or ids 0,1")
    run.add_argument(
        "--publish",
        "--publish-level",
        choices=("public", "internal"),
        default="public",
        help="sanitized bundle in public/: public (no raw logs) or internal (logs, no secrets)",
    )
    _secret_options(run)
    run.add_argument(
        "--junit-flavour",
        choices=("xunit2", "xunit1"),
        default="xunit2",
        help="xunit2 (junit-10 schema) or xunit1 (adds file/line on testcases)",
    )
    run.add_argument(
        "--gpu-mem",
        metavar="SIZE",
        help="GPU memory budget per process (e.g. 21.8G; default: the profile's)",
    )
    run.add_argument(
        "--gpu-budget-mode",
        choices=("torch", "mps", "auto"),
        default="torch",
        help="how the GPU budget is enforced: torch (PyTorch memory fraction, default), mps "
        "(CUDA MPS per-client pinned limit; needs a running MPS daemon), auto (mps when one runs)",
    )
    run.add_argument(
        "--cuda-history",
        action="store_true",
        help="record the CUDA allocator's history; snapshot on a CUDA OOM",
    )
    run.add_argument(
        "--mount-host-python",
        action="store_true",
        help="docker: bind the host's /usr and qualify's interpreter read-only into the image",
    )


def _compare_parser(commands: argparse._SubParsersAction[_Parser]) -> None:
    compare = commands.add_parser("compare", help="token-by-token parity of recorded cases")
    compare.add_argument(
        "native",
        type=Path,
        help=f"a run directory, its {contract.PARITY} (both sides), or the native side",
    )
    compare.add_argument("reference", type=Path, nargs="?", help="the reference side")
    compare.add_argument("--min-exact", type=_count, help="cases that must match exactly")
    compare.add_argument("--near-tie-nats", type=_nats, help="near-tie threshold in nats")
    compare.add_argument("--tie-nats", type=_nats, help="tie threshold (float rounding) in nats")
    compare.add_argument("--count-near-ties", action="store_true", default=None)
    compare.add_argument("--format", dest="output_format", choices=("text", "json"), default="text")


def _report_parser(commands: argparse._SubParsersAction[_Parser]) -> None:
    report = commands.add_parser("report", help=f"write {contract.REPORT_HTML} of a run directory")
    report.add_argument("run_dir", type=Path, help="reports/<sha>/<family>/<profile>/<run-id>")
    report.add_argument(
        "--github",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="step summary, annotations, outputs (default: when GITHUB_ACTIONS=true)",
    )
    _secret_options(report)


def _listing_parsers(commands: argparse._SubParsersAction[_Parser]) -> None:
    commands.add_parser("profiles", help="list the resource profiles")
    families = commands.add_parser(
        "families", help="list the families qualify run can see and where each comes from"
    )
    families.add_argument("--families-dir", action="append", type=Path, default=[])
    families.add_argument("--repo", type=Path, help="repo whose families/ is searched (default: .)")
    families.add_argument(
        "--format", dest="output_format", choices=("text", "json"), default="text"
    )


def _env_name(text: str) -> str:
    """An environment variable name (letters, digits, ``_``; not starting with a digit)."""
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", text):
        raise argparse.ArgumentTypeError(
            f"{text!r} is not valid (valid: an environment variable name, [A-Za-z_][A-Za-z0-9_]*)"
        )
    return text


def _secret_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--secret-env",
        dest="secret_env",
        action="append",
        type=_env_name,
        default=[],
        metavar="NAME",
        help="redact this environment variable's value too, whatever its name (repeatable)",
    )
    parser.add_argument(
        "--secrets-file",
        dest="secrets_file",
        type=Path,
        metavar="FILE",
        help="more values to redact, one per line (for CI systems that mask their own)",
    )


def _publish_parser(commands: argparse._SubParsersAction[_Parser]) -> None:
    publish = commands.add_parser(
        "publish",
        help="publish a run directory again (report page, public/, the GitHub channels)",
    )
    publish.add_argument("run_dir", type=Path, help="reports/<sha>/<family>/<profile>/<run-id>")
    publish.add_argument(
        "--level",
        choices=("public", "internal"),
        help="what public/ may hold (default: the level the run was published at, else public)",
    )
    publish.add_argument(
        "--github",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="step summary, annotations, outputs (default: when GITHUB_ACTIONS=true)",
    )
    _secret_options(publish)


def _doctor_parser(commands: argparse._SubParsersAction[_Parser]) -> None:
    doctor = commands.add_parser(
        "doctor", help="which backends can cap memory on this machine, and why the others cannot"
    )
    doctor.add_argument("--format", dest="output_format", choices=("text", "json"), default="text")
    doctor.add_argument("--backend", default="auto", choices=BACKENDS, help="what run would ask")
    doctor.add_argument("--image", help="the docker image run would get (--image)")
    doctor.add_argument(
        "--plan",
        action="store_true",
        help="print the argv of `qualify run RUN_ARGS` on the chosen route (NUL-terminated), "
        "after making its docker image ready; the decision goes to stderr (the GitHub Action)",
    )
    doctor.add_argument("run_args", nargs=argparse.REMAINDER, help="-- RUN_ARGS (with --plan)")


def _shard_parsers(commands: argparse._SubParsersAction[_Parser]) -> None:
    matrix = commands.add_parser("matrix", help="print a GitHub Actions strategy.matrix JSON")
    matrix.add_argument("--families", required=True, help="comma-separated family names")
    matrix.add_argument("--profiles", required=True, help="comma-separated profile names")
    matrix.add_argument("--families-dir", action="append", type=Path, default=[])
    matrix.add_argument("--repo", type=Path, help="repo whose families/ is searched (default: .)")
    merge = commands.add_parser("merge", help="merge run directories into one JUnit and index")
    merge.add_argument("dirs", nargs="+", type=Path, metavar="DIR", help="run dirs or trees")
    merge.add_argument("--out", type=_directory, help="default: reports/merged/<head-sha>/")
    merge.add_argument("--expect", metavar="FAMILY:PROFILE,...", help="shards that must exist")
    merge.add_argument("--matrix", type=Path, help="matrix JSON (qualify matrix) of the shards")
    merge.add_argument("--allow-mixed-heads", action="store_true")
    merge.add_argument(
        "--submitted",
        action="append",
        type=Path,
        default=[],
        metavar="PATH",
        help="qualify submit records (submit-*.json, or a directory of them): every cell of "
        "each is accounted for by its Slurm task (repeatable)",
    )


def _submit_parser(commands: argparse._SubParsersAction[_Parser]) -> None:
    submit = commands.add_parser(
        "submit", help="hand a family x profile matrix to Slurm (or emit Kubernetes Jobs)"
    )
    submit.add_argument("--engine", choices=("slurm", "kubernetes", "github"), default="slurm")
    submit.add_argument("--families", help="comma-separated family names")
    submit.add_argument("--profiles", help="comma-separated profile names")
    submit.add_argument("--mem", help="the cap of every cell (default: each profile's)")
    submit.add_argument(
        "--overhead", help="memory qualify needs beyond the cap (default 256M, measured)"
    )
    submit.add_argument("--time", help="time limit per cell: 2h, 45m (default: family's + 2m)")
    submit.add_argument("--partition", help="slurm: partition")
    submit.add_argument("--account", help="slurm: account")
    submit.add_argument(
        "--gpus-per-task", type=_count, help="GPUs per cell (default: the profile's)"
    )
    submit.add_argument("--cpus-per-task", type=_count, help="slurm: CPUs per cell")
    submit.add_argument(
        "--sbatch-arg",
        dest="sbatch_args",
        action="append",
        default=[],
        metavar="ARG",
        help="slurm: one more sbatch option for the arrays, e.g. --sbatch-arg=--qos=ci",
    )
    submit.add_argument(
        "--out", type=_directory, default=Path("reports"), help="output root, shared with nodes"
    )
    submit.add_argument("--wait", action="store_true", help="slurm: wait, print the verdicts")
    submit.add_argument("--poll", default="10s", help="slurm: --wait's polling interval")
    submit.add_argument("--retry", metavar="CELL", help="slurm: submit family/profile again")
    submit.add_argument("--repo", type=Path, help="the repo whose head is qualified (default: .)")
    submit.add_argument("--families-dir", action="append", type=Path, default=[])
    submit.add_argument("--emit", type=_directory, help="kubernetes: write the manifests here")
    submit.add_argument("--image", help="kubernetes: image holding qualify and the repository")
    submit.add_argument("--shm", help="kubernetes: memory-backed /dev/shm size (default 64M)")
    submit.add_argument("--pvc", help="kubernetes: claim mounted at /reports for the reports")


def _positive(text: str) -> int:
    """A whole number >= 1."""
    value = _count(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not valid (valid: a whole number >= 1)")
    return value


def _experiment_common(parser: argparse.ArgumentParser) -> None:
    """What every run of an experiment is given alike (as ``qualify run`` takes it)."""
    parser.add_argument(
        "--family", required=True, help="family name (a directory with family.toml)"
    )
    parser.add_argument(
        "--set",
        dest="sets",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a family option given to every run (repeatable)",
    )
    parser.add_argument("--families-dir", action="append", type=Path, default=[])
    parser.add_argument("--repo", type=Path, help="the repo whose head is qualified (default: .)")
    parser.add_argument("--out", type=_directory, default=Path("reports"), help="output root")
    parser.add_argument("--timeout", help="E2E timeout of each run (default: the family's)")
    parser.add_argument("--backend", default="auto", choices=BACKENDS)
    parser.add_argument("--image", help="docker image every run uses")


def _experiment_parsers(commands: argparse._SubParsersAction[_Parser]) -> None:
    ab = commands.add_parser(
        "ab", help="A/B of a runtime policy: n full runs per arm, everything else pinned"
    )
    _experiment_common(ab)
    ab.add_argument("--a", dest="arm_a", required=True, metavar="NAME=VALUE[,...]")
    ab.add_argument("--b", dest="arm_b", required=True, metavar="NAME=VALUE[,...]")
    ab.add_argument("--n", type=_positive, default=8, help="runs per arm and level (default 8)")
    cap = ab.add_mutually_exclusive_group()
    cap.add_argument("--mem", help="memory cap of every run: 850M, 48G")
    cap.add_argument("--profile", help="resource profile of every run")
    ab.add_argument("--sweep", metavar="mem=SIZE,... | NAME=V,...", help="levels, both arms each")
    ab.add_argument("--order", choices=("interleaved", "random"), default="interleaved")
    ab.add_argument("--seed", type=int, help="seed of --order random (default: drawn, recorded)")
    ab.add_argument("--metrics", metavar="NAME,...", help="metrics to report (default: all)")
    ab.add_argument("--host", help="name of this host in the record (default: the machine's)")
    headroom = commands.add_parser(
        "headroom", help="smallest passing cap by bisection, and the headroom per profile"
    )
    _experiment_common(headroom)
    headroom.add_argument("--lo", help="a cap expected to fail (default 64M)")
    headroom.add_argument("--hi", help="a cap expected to pass (default: the family's memory)")
    headroom.add_argument("--resolution", default="2%", help="2%% of the cap, or a size (16M)")
    headroom.add_argument("--repeat", type=_positive, default=3, help="runs at each boundary cap")


def _experiment(args: argparse.Namespace, arguments: Sequence[str]) -> int:
    common = {
        "family_name": args.family,
        "sets": args.sets,
        "families_dirs": args.families_dir,
        "repo": args.repo,
        "out": args.out,
        "timeout": args.timeout,
        "backend": args.backend,
        "image": args.image,
    }
    if args.command == "ab":
        from qualify.commands.ab import AbRequest, ab

        return ab(
            AbRequest(
                **common,
                arm_a=args.arm_a,
                arm_b=args.arm_b,
                n=args.n,
                mem=args.mem,
                profile=args.profile,
                sweep=args.sweep,
                order=args.order,
                seed=args.seed,
                metrics=args.metrics,
                host=args.host,
                command_line=["qualify", *arguments],
            )
        )
    from qualify.commands.headroom import HeadroomRequest, headroom

    return headroom(
        HeadroomRequest(
            **common, lo=args.lo, hi=args.hi, resolution=args.resolution, repeat=args.repeat
        )
    )


def _sources(args: argparse.Namespace) -> SecretSources:
    from qualify.publish.bundle import SecretSources

    return SecretSources(tuple(args.secret_env), args.secrets_file)


def _tokenizer_parser(commands: argparse._SubParsersAction[_Parser]) -> None:
    tokenizer = commands.add_parser(
        "tokenizer", help="export a tokenizer for a benchmark client and verify it there"
    )
    actions = tokenizer.add_subparsers(
        dest="tokenizer_command", required=True, parser_class=_Parser
    )
    export = actions.add_parser(
        "export", help="save a standalone fast tokenizer, proven identical on reload"
    )
    source = export.add_mutually_exclusive_group(required=True)
    source.add_argument("--model-dir", type=_directory, help="a Hugging Face tokenizer directory")
    source.add_argument("--family", help="a family's own tokenizer (tiny, phi4)")
    export.add_argument("--output-dir", type=_directory, required=True, help="must not exist yet")
    export.add_argument("--repo", type=Path, help="the repository whose families/ to search")
    verify = actions.add_parser(
        "verify", help="run the export's checks in the client's own environment"
    )
    verify.add_argument("export_dir", type=_directory, metavar="OUT", help="an export directory")
    verify.add_argument(
        "--client",
        default="aiperf",
        help="aiperf[==VERSION] or transformers[==VERSION] (default: aiperf==0.13.0; "
        "transformers: 4.57.6)",
    )
    verify.add_argument(
        "--python", type=Path, help="the client's interpreter (default: a cached venv of its own)"
    )


def _triage_parser(commands: argparse._SubParsersAction[_Parser]) -> None:
    triage = commands.add_parser("triage", help="why a run died and what to change")
    triage.add_argument(
        "paths",
        type=Path,
        nargs="*",
        metavar="PATH",
        help="run directory, console log, kernel log, docker inspect, JUnit... (kind read from "
        "the content; - is standard input)",
    )
    for flag in ("log", "inspect", "kernel", "junit", "report-log"):
        triage.add_argument(f"--{flag}", action="append", type=Path, default=[])
    triage.add_argument(
        "--format", dest="output_format", choices=("text", "markdown", "json"), default="text"
    )


_COMMANDS: dict[str, Callable[[argparse._SubParsersAction[_Parser]], None]] = {
    "run": _run_parser,
    "compare": _compare_parser,
    "profiles": _listing_parsers,
    "families": _listing_parsers,
    "triage": _triage_parser,
    "report": _report_parser,
    "publish": _publish_parser,
    "matrix": _shard_parsers,
    "merge": _shard_parsers,
    "submit": _submit_parser,
    "doctor": _doctor_parser,
    "tokenizer": _tokenizer_parser,
    "ab": _experiment_parsers,
    "headroom": _experiment_parsers,
}
"""Each command and the function that adds its parser (some add two), in ``--help``'s order."""


def build_parser(command: str | None = None) -> _Parser:
    """The command line; with ``command`` (a name of ``_COMMANDS``), only that command's parser
    under the top level: the whole command line takes a run's start-up 10 ms to build."""
    parser = _Parser(prog="qualify", description=__doc__)
    parser.add_argument("--version", action="version", version=f"qualify {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    builders = [_COMMANDS[command]] if command in _COMMANDS else _COMMANDS.values()
    for builder in dict.fromkeys(builders):  # each once, in order
        builder(commands)
    return parser


def entry() -> NoReturn:
    """The ``qualify`` console script and ``python -m qualify``: ``main``, then an exit that
    does not free the interpreter's objects one by one (a tenth of a ``qualify run``'s own
    time went there). Everything qualify writes is closed before ``main`` returns; the exit
    handlers still run (those of the caller's tools too, such as coverage's) and the standard
    streams are flushed. Python's own exit is kept while a thread that is not a daemon still
    runs (it waits for it) and under a profiler or tracer (they write their results after)."""
    try:
        code = main()
    except SystemExit as exc:
        if not (exc.code is None or isinstance(exc.code, int)):
            raise
        code = exc.code or 0
    except BrokenPipeError:  # stdout's reader went away (| head): as a SIGPIPE would end it
        from qualify.console import silence

        silence(sys.stdout)
        code = EXIT_PIPE_CLOSED
    others = [thread for thread in threading.enumerate() if thread is not threading.main_thread()]
    if any(thread.is_alive() and not thread.daemon for thread in others):
        raise SystemExit(code)
    if sys.getprofile() is not None or sys.gettrace() is not None:
        raise SystemExit(code)  # a profiler (python -m cProfile) writes its results after
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)


def main(argv: Sequence[str] | None = None) -> int:
    """What the ``qualify`` command does with ``argv`` (the command line's by default);
    returns the exit code."""
    arguments = list(sys.argv[1:] if argv is None else argv)
    args = build_parser(arguments[0] if arguments else None).parse_args(arguments)
    if args.command == "run":
        from qualify.plan.commit import CommitPrefetch

        # git reads the tree while Python imports what the run needs.
        prefetch = CommitPrefetch(args.repo, args.base_ref, os.environ)
        if args.backend in ("auto", "cgroup") and args.image is None:
            from qualify.sandbox.cgroup import prime

            prime.start_here()  # the kernel's first cgroup move, made beside the imports
        from qualify.commands.run import run
        from qualify.plan.request import RunRequest

        return run(
            RunRequest(
                family_name=args.family,
                mem=args.mem,
                profile_name=args.profile,
                families_dirs=args.families_dir,
                out=args.out,
                timeout=args.timeout,
                backend=args.backend,
                repo=args.repo,
                sets=args.sets,
                sample_interval=args.interval,
                base_ref=args.base_ref,
                command_line=["qualify", *arguments],
                image=args.image,
                shm=args.shm,
                network=args.network,
                gpus=args.gpus,
                mount_host_python=args.mount_host_python,
                gpu_mem=args.gpu_mem,
                gpu_budget_mode=args.gpu_budget_mode,
                cuda_history=args.cuda_history,
                junit_flavour=args.junit_flavour,
                publish=args.publish,
                secret_env=args.secret_env,
                secrets_file=args.secrets_file,
                commit_prefetch=prefetch,
            )
        )
    if args.command in ("ab", "headroom"):
        return _experiment(args, arguments)
    if args.command == "compare":
        from qualify.commands.compare import compare

        overrides = {
            key: value
            for key, value in (
                ("min_exact", args.min_exact),
                ("near_tie_nats", args.near_tie_nats),
                ("tie_nats", args.tie_nats),
                ("count_near_ties", args.count_near_ties),
            )
            if value is not None
        }
        return compare(
            native=args.native,
            reference=args.reference,
            gate=overrides,
            output_format=args.output_format,
        )
    if args.command == "report":
        from qualify.commands.report import report

        return report(run_dir=args.run_dir, github=args.github, sources=_sources(args))
    if args.command == "triage":
        from qualify.commands.triage import triage as triage_command

        return triage_command(
            paths=args.paths,
            logs=args.log,
            inspect=args.inspect,
            kernel=args.kernel,
            junit=args.junit,
            report_log=args.report_log,
            output_format=args.output_format,
        )
    if args.command == "publish":
        from qualify.commands.publish import publish

        return publish(
            run_dir=args.run_dir, level=args.level, github=args.github, sources=_sources(args)
        )
    if args.command == "doctor":
        from qualify.commands.doctor import doctor

        run_args = args.run_args[1:] if args.run_args[:1] == ["--"] else args.run_args
        return doctor(
            output_format=args.output_format,
            backend=args.backend,
            image=args.image,
            plan_run=args.plan,
            run_args=run_args,
        )
    if args.command == "families":
        from qualify.commands.families import families

        return families(
            families_dirs=args.families_dir, repo=args.repo, output_format=args.output_format
        )
    if args.command == "matrix":
        from qualify.commands.matrix import matrix

        return matrix(
            families=args.families,
            profiles=args.profiles,
            families_dirs=args.families_dir,
            repo=args.repo,
        )
    if args.command == "merge":
        from qualify.commands.merge import merge

        return merge(
            inputs=args.dirs,
            out=args.out,
            expect=args.expect,
            matrix_file=args.matrix,
            allow_mixed_heads=args.allow_mixed_heads,
            submitted=args.submitted,
        )
    if args.command == "submit":
        from qualify.commands.submit import SubmitRequest, submit

        return submit(
            SubmitRequest(
                engine=args.engine,
                families=args.families,
                profiles=args.profiles,
                mem=args.mem,
                overhead=args.overhead,
                time=args.time,
                partition=args.partition,
                account=args.account,
                gpus_per_task=args.gpus_per_task,
                cpus_per_task=args.cpus_per_task,
                sbatch_args=args.sbatch_args,
                out=args.out,
                wait=args.wait,
                poll=args.poll,
                retry=args.retry,
                repo=args.repo,
                families_dirs=args.families_dir,
                emit=args.emit,
                image=args.image,
                shm=args.shm,
                pvc=args.pvc,
                command_line=["qualify", *arguments],
            )
        )
    if args.command == "tokenizer":
        from qualify.commands import tokenizer

        if args.tokenizer_command == "export":
            return tokenizer.export(
                model_dir=args.model_dir,
                family=args.family,
                output_dir=args.output_dir,
                repo=args.repo,
            )
        return tokenizer.verify(export_dir=args.export_dir, client=args.client, python=args.python)
    from qualify.commands.profiles import profiles

    return profiles()
