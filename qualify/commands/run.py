"""``qualify run``: a family's E2E under a real memory cap, judged and reported.

``run`` reads in the order of a run: plan it (``build_spec``, the sandbox chosen), take over
dead runs, open the run directory with provisional reports, execute and judge, write the
reports and publish them, print the summary. What overlaps with it is in
``qualify.commands._overlap``.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import json
import os
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from harness import contract
from qualify import records
from qualify.commands import _overlap
from qualify.commands._args import (
    Commands,
    command_line,
    directory,
    families_dir_option,
    format_option,
    pass_env_option,
    secret_options,
)
from qualify.commands._progress import Progress
from qualify.console import printed
from qualify.errors import UsageError
from qualify.plan.request import RunRequest, build_spec
from qualify.plan.spec import RunSpec, harness_root
from qualify.publish.errorline import error_line
from qualify.records import frozen_record
from qualify.report.junit import provisional_junit
from qualify.run.execute import Interrupts, execute
from qualify.run.registry import RunGuard, guard_run, take_over_dead_runs
from qualify.rundir.directory import RunDir
from qualify.sandbox import CHOICES as BACKENDS
from qualify.sandbox import Sandbox, select_sandbox
from qualify.sandbox.cgroup.common import ShmTrial
from qualify.sandbox.cgroup.layout import current_layout
from qualify.verdict import EXIT_ERROR, EXIT_USAGE, PROVISIONAL_REASON

if TYPE_CHECKING:
    from qualify.commands.publish import Publication
    from qualify.judge.result import RunResult
    from qualify.run.execution import Execution


def _properties(result: RunResult) -> dict[str, str]:
    spec, sandbox = result.spec, result.execution.sandbox
    in_effect = sandbox.in_effect.memory_bytes if sandbox else None
    return {
        "qualify.verdict": result.verdict.value,
        "qualify.reason": result.reason,
        "qualify.family": spec.family.name,
        "qualify.profile": spec.profile,
        "qualify.commit.head": spec.commit.head,
        "qualify.commit.dirty": str(spec.commit.dirty).lower(),
        "qualify.backend": sandbox.backend if sandbox else spec.backend,
        "qualify.capped": str(bool(sandbox and sandbox.capped)).lower(),
        "qualify.limit.memory_bytes": str(in_effect),
        "qualify.run_id": spec.run_id,
    }


def write_reports(result: RunResult) -> None:
    """The JUnit file and the audit, committed as one unit (``RunDir.commit_reports``)."""
    from qualify.report.audit_of_run import build_audit, iso
    from qualify.report.junit import render_junit

    spec = result.spec
    junit = render_junit(
        spec.family.name,
        result.testcases,
        _properties(result),
        iso(result.execution.started_wall) or "",
        with_location=spec.junit_flavour == "xunit1",
        suite_properties=result.progress.suite_properties,
    )
    RunDir(spec.run_dir).commit_reports(junit, build_audit(result))


def _write_reports_making_room(result: RunResult) -> None:
    """The reports; on a full disk, the stored logs are emptied (their sizes stay recorded)
    and the reports written again: the verdict and its reason matter more than the output."""
    try:
        write_reports(result)
    except OSError as exc:
        if exc.errno not in (errno.ENOSPC, errno.EDQUOT):
            raise
        run_dir = RunDir(result.spec.run_dir)
        for stream in ("stdout", "stderr"):
            with contextlib.suppress(OSError):
                run_dir.log_path(stream).write_bytes(b"")
        note = "the E2E's stored output was emptied to make room for the reports (disk full)"
        execution = records.replace(
            result.execution, teardown_problems=(*result.execution.teardown_problems, note)
        )
        write_reports(records.replace(result, execution=execution))


HANDOFF_S = 0.5
"""How long qualify waits, its reports written, for the teardown before it exits and leaves
the rest (removing the emptied cgroups) to the run's watchdog."""


def _complete_teardown(result: RunResult) -> RunResult:
    """Wait for the teardown that ran while the reports were written; a problem it met (a
    process that would not die, a cgroup that would not go) is added to the audit."""
    execution = result.execution
    if execution.teardown is None:
        return result
    problems: list[str] | None = execution.teardown.wait(HANDOFF_S)
    if problems is None:
        return result  # the kernel is still tearing processes down: the watchdog finishes
    leftover = [problem for problem in problems if problem not in execution.teardown_problems]
    if not leftover:
        return result
    execution = records.replace(
        execution, teardown_problems=(*execution.teardown_problems, *leftover)
    )
    result = records.replace(result, execution=execution)
    write_reports(result)
    return result


def _judge_or_error(spec: RunSpec, execution: Execution) -> RunResult:
    """The judged result; a bug in judging still yields reports (ERROR, traceback kept in the
    run's debug log)."""
    from qualify.judge.judgement import judge

    try:
        return judge(spec, execution, current_layout().version)
    except Exception as exc:
        import traceback

        RunDir(spec.run_dir).write_debug(traceback.format_exc())
        failed = records.replace(
            execution,
            setup_error=f"qualify failed while judging the run: {exc!r} (see the debug log)",
        )
        return judge(spec, failed, None)


def _write_provisional_junit(spec: RunSpec) -> None:
    """A valid JUnit file before the E2E starts: what remains if qualify itself is SIGKILLed
    (its first write also tells whether the run directory takes files at all)."""
    RunDir(spec.run_dir).write_junit(provisional_junit(spec.family.name, PROVISIONAL_REASON))


def _write_provisional_audit(spec: RunSpec, started_wall: float) -> None:
    """The provisional audit, written as soon as the E2E has started, while its interpreter
    starts (the audit's dataclasses cost a tenth of qualify's start-up to create). A qualify
    killed before this leaves the JUnit file; the run that takes it over writes the audit
    (``qualify.report.abandoned``). A failure here (a disk that filled) is the final
    reports' to report."""
    from qualify.report.audit_of_run import provisional_audit

    with contextlib.suppress(OSError):
        RunDir(spec.run_dir).write_audit(provisional_audit(spec, started_wall))


def _os_error(exc: OSError) -> str:
    """``No space left on device: <the file>`` (one line)."""
    from qualify.console import display_path

    where = f": {display_path(Path(exc.filename))}" if exc.filename else ""
    return f"{exc.strerror or exc}{where}"


def _take_over_and_guard(spec: RunSpec, sandbox: Sandbox, stderr: TextIO) -> RunGuard:
    """Take over every dead run on this machine, then register this one and start its
    watchdog, before its run directory and cgroups exist: from here on, a qualify killed at
    any moment leaves a registry entry that the next run takes over. The entry is released
    (``RunGuard.release``) only once the final reports and the report page are written."""
    for abandoned in take_over_dead_runs():
        from qualify.commands.publish import write_report
        from qualify.report.abandoned import take_over_one

        stderr.write(take_over_one(abandoned, spec.run_id, "qualify run", write_report))
    return guard_run(spec.run_id, spec.run_dir, sandbox.cgroup_dirs())


def _progress(request: RunRequest, spec: RunSpec, stderr: TextIO) -> Progress | None:
    """The live progress printer of the run (None with ``--quiet``)."""
    if request.quiet:
        return None

    def cleaner() -> Callable[[str], str]:
        from qualify.commands.publish import in_ci
        from qualify.publish.sanitize import Identities, Sanitizer
        from qualify.publish.sources import SecretSources

        sources = SecretSources.given(request.secret_env, request.secrets_file)
        try:
            known = sources.known()
        except UsageError:  # refused before the run: nothing to redact from it here
            known = []
        sanitizer = Sanitizer(
            os.environ,
            Identities.current(os.environ) if in_ci(os.environ) else Identities(),
            known=known,
            secret_env=sources.secret_env,
        )
        return sanitizer.clean

    timeline = spec.run_dir / contract.TIMELINE
    return Progress(timeline, spec.limits.memory_bytes, stderr, cleaner, spec.family.name)


def _execute_and_judge(
    opened: Opened,
    interrupts: Interrupts,
    guard: RunGuard,
    request: RunRequest,
    stderr: TextIO,
) -> RunResult:
    """The E2E run (its progress on ``stderr``), then judged."""
    spec, sandbox = opened.planned.spec, opened.planned.sandbox
    started_wall = opened.started_wall
    preload = _overlap.EndOfRunImports()
    progress = _progress(request, spec, stderr)

    def started() -> None:
        # Once the E2E runs: the provisional audit, then the end of the run's imports.
        _write_provisional_audit(spec, started_wall)
        preload.start()
        if progress is not None:
            progress.start()

    try:
        execution = execute(spec, sandbox, interrupts, on_started=started, watchdog=guard.watchdog)
    finally:
        if progress is not None:
            progress.stop()
    preload.join()
    if spec.backend == "auto" and execution.sandbox and spec.docker is None:
        why = f"--backend auto chose {execution.sandbox.backend}: no --image was given"
        info = records.replace(execution.sandbox, notes=(why, *execution.sandbox.notes))
        execution = records.replace(execution, sandbox=info)
    return _judge_or_error(spec, execution)


@frozen_record
class Planned:
    """The run decided: its spec and the sandbox it runs in (nothing written yet)."""

    spec: RunSpec
    sandbox: Sandbox


@frozen_record
class Opened:
    """The run directory made, with its provisional JUnit file."""

    planned: Planned
    started_wall: float


@frozen_record
class Published:
    """The run's reports written and published."""

    result: RunResult
    publication: Publication


class _Stopped(Exception):
    """A step that cannot go on: the error line, the exit code, and what stdout still gets."""

    def __init__(self, line: str, code: int, stdout: str = "") -> None:
        super().__init__(line)
        self.line, self.code, self.stdout = line, code, stdout


def plan(request: RunRequest) -> Planned:
    """Validate every input and choose the sandbox; UsageError before anything is written."""
    base = request.base_run
    if base is not None and not base.is_dir():
        raise UsageError(
            f"--base-run {str(base)!r} is not a directory (valid: a run directory, or a "
            "directory of runs)"
        )
    spec = build_spec(request)
    sandbox = select_sandbox(
        spec.backend,
        spec.run_id,
        docker=spec.docker,
        family_dir=spec.family.directory,
        harness_root=harness_root(spec.run_dir),
    )
    return Planned(spec, sandbox)


def open_run_dir(planned: Planned) -> Opened:
    """The run directory and its provisional JUnit file."""
    spec = planned.spec
    try:
        spec.run_dir.mkdir(parents=True, exist_ok=False)
    except OSError as exc:
        # Checked at planning; what only the attempt shows (a denial os.access cannot see, a
        # file created in between) is still bad input, a full disk is not.
        code = EXIT_ERROR if exc.errno in (errno.ENOSPC, errno.EDQUOT) else EXIT_USAGE
        raise _Stopped(f"cannot create the run directory: {_os_error(exc)}", code) from None
    started_wall = time.time()
    try:
        _write_provisional_junit(spec)
    except OSError as exc:
        raise _Stopped(f"cannot write the run directory: {_os_error(exc)}", EXIT_ERROR) from None
    return Opened(planned, started_wall)


def report_and_publish(result: RunResult, request: RunRequest, stdout: TextIO) -> Published:
    """The JUnit file and the audit, the report page, public/ and the GitHub channels; then
    the teardown's last problems, added to the audit."""
    from qualify.commands.publish import publish_channels
    from qualify.console import display_path
    from qualify.publish.sources import SecretSources

    spec = result.spec
    if request.base_run is not None:
        result = _against_base(result, request.base_run)
    try:
        try:
            _write_reports_making_room(result)
            publication = publish_channels(
                RunDir(spec.run_dir),
                level=request.publish,
                environ=os.environ,
                stdout=stdout,
                secrets_from={**os.environ, **spec.env},
                sources=SecretSources.given(request.secret_env, request.secrets_file),
            )
        finally:
            result = _complete_teardown(result)
    except OSError as exc:
        # The provisional reports, written atomically as the E2E started, stay valid.
        raise _Stopped(
            f"cannot write the reports: {_os_error(exc)}",
            EXIT_ERROR,
            stdout=f"{display_path(spec.run_dir)}\n",
        ) from None
    except UsageError as exc:  # the secrets file, read at the start, is gone or changed
        raise _Stopped(
            f"publication failed: {exc}", EXIT_USAGE, stdout=f"{display_path(spec.run_dir)}\n"
        ) from None
    return Published(result, publication)


def _against_base(result: RunResult, given: Path) -> RunResult:
    """``result`` with its comparison with the base run in ``given`` (``base_run``); a base
    that cannot be read is said in the record, never a failure of the run."""
    from qualify.console import display_path
    from qualify.report.audit_of_run import build_audit
    from qualify.report.base_run import compare

    commit = result.spec.commit
    merge_base = (commit.github or {}).get("base") or commit.base
    try:
        record = compare(
            given, build_audit(result), result.testcases, merge_base, display_path(given)
        )
    except OSError as exc:
        from qualify.rundir.audit import BaseRunRecord

        why = f"it cannot be read ({_os_error(exc)})"
        record = BaseRunRecord(
            given=display_path(given), problem=why, summary=f"no base run: {why}"
        )
    return records.replace(result, base=record)


def print_summary(
    published: Published, stdout: TextIO, stderr: TextIO, output_format: str = "text"
) -> int:
    """The summary and the run directory on stdout, publication failures on stderr; the exit
    code (a failed publication exits 4, fail closed; the verdict itself is unchanged). With
    ``output_format`` json, stdout is one JSON document instead: the paths written and the
    audit (as qualify's other output, sanitized)."""
    from qualify.commands.publish import terminal_json, terminal_text
    from qualify.console import display_path
    from qualify.report.terminal import render_summary

    result, publication = published.result, published.publication
    sanitizer = publication.sanitizer
    if output_format == "json":
        for reason in publication.reasons:
            stderr.write(f"qualify run: publication failed: {reason}\n")
        run_dir = RunDir(result.spec.run_dir)
        page = result.spec.run_dir / contract.REPORT_HTML
        document = {
            "run_dir": display_path(result.spec.run_dir),
            "report": display_path(page) if page.is_file() else None,
            "public": display_path(publication.bundle.public_dir)
            if publication.bundle.public_dir is not None
            else None,
            "audit": run_dir.read_json(contract.AUDIT),
        }
        printed(stdout, terminal_json(document, sanitizer, os.environ))
        printed(stdout)
        return max(result.verdict.exit_code, publication.exit_code)
    color = stdout.isatty() and "NO_COLOR" not in os.environ
    width = shutil.get_terminal_size().columns if color else 100
    summary = render_summary(result, color=color, width=width)
    printed(stdout, terminal_text(summary, sanitizer, os.environ))
    for reason in publication.reasons:
        stderr.write(f"qualify run: publication failed: {reason}\n")
    page = result.spec.run_dir / contract.REPORT_HTML
    if page.is_file():
        printed(stdout, sanitizer.redact(f"report page: {display_path(page)}\n"))
    # The last line is the run directory, a path the caller opens: secrets only are redacted.
    printed(stdout, sanitizer.redact(f"{display_path(result.spec.run_dir)}\n"))
    printed(stdout)
    return max(result.verdict.exit_code, publication.exit_code)


def run(
    request: RunRequest,
    stdout: TextIO = sys.stdout,
    stderr: TextIO = sys.stderr,
    output_format: str = "text",
) -> int:
    """Run one family once, in the order of a run: plan, take over dead runs and register
    this one, open the run directory, execute and judge, report and publish, print. Returns
    the verdict's exit code (2 for bad input). With ``output_format`` json, stdout holds one
    JSON document and nothing else (the GitHub annotations go to stderr)."""
    try:
        planned = plan(request)
    except UsageError as exc:
        stderr.write(error_line("qualify run", exc))
        return EXIT_USAGE
    guard = _take_over_and_guard(planned.spec, planned.sandbox, stderr)
    try:
        opened = open_run_dir(planned)
        interrupts = Interrupts()
        with interrupts.installed():
            result = _execute_and_judge(opened, interrupts, guard, request, stderr)
            annotations = stderr if output_format == "json" else stdout
            published = report_and_publish(result, request, annotations)
    except _Stopped as stopped:
        guard.release()
        stderr.write(error_line("qualify run", stopped.line))
        if output_format == "json":
            said = {"run_dir": stopped.stdout.strip() or None, "error": stopped.line}
            stdout.write(json.dumps(said, indent=2) + "\n")
        else:
            stdout.write(stopped.stdout)
        return stopped.code
    guard.release()  # the final reports are durable and the report page written
    return print_summary(published, stdout, stderr, output_format)


RUN_EPILOG = """\
examples:
  qualify run --family tiny --mem 2G
  qualify run --family phi4 --profile standard --publish internal
  qualify run --family tiny --mem 900M --set size=small --set retain_plans=true

exit codes:
  0  PASSED
  1  FAILED or PARITY_FAILED
  2  bad input (one line on stderr; nothing written)
  3  OOM_KILLED, CUDA_OOM, KILLED or TIMEOUT
  4  ERROR (qualify or the sandbox failed), or a publication was withheld
"""


def add_parser(commands: Commands) -> None:
    run = commands.add_parser(
        "run",
        help="run a family's E2E under a real memory cap",
        description="Run a family's E2E under a real memory cap, judge it, write its JUnit, "
        "audit and report page, and publish a sanitized copy.",
        epilog=RUN_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    run.add_argument("--family", required=True, help="family name (a directory with family.toml)")
    run.add_argument("--mem", help="memory cap: 512M, 48G (binary), 48GB (decimal)")
    run.add_argument("--profile", help="resource profile from cgroup_profiles/ (--mem overrides)")
    families_dir_option(run)
    run.add_argument(
        "--out", type=directory, default=Path("reports"), help="output root (default reports)"
    )
    run.add_argument("--timeout", help="E2E timeout (default: the family's)")
    run.add_argument(
        "--backend",
        default="auto",
        choices=BACKENDS,
        help="how the cap is enforced (default auto: a container when --image is given, else "
        "a cgroup, directly, through sudo or in a systemd scope; qualify doctor says which "
        "work here)",
    )
    run.add_argument("--repo", type=Path, help="the repo whose head is qualified (default: .)")
    run.add_argument(
        "--set",
        dest="sets",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="override a family option (repeatable)",
    )
    run.add_argument("--interval", default="50ms", help="monitor sample interval (default 50ms)")
    run.add_argument(
        "--quiet",
        action="store_true",
        help="no progress on stderr while the E2E runs (default: a status line on a terminal, "
        "a line at each phase change and every 10 s otherwise)",
    )
    run.add_argument(
        "--base-ref",
        default="origin/main",
        help="ref for commit.base (merge-base; default origin/main)",
    )
    run.add_argument(
        "--base-run",
        type=Path,
        metavar="DIR",
        help="compare with a base run: a run directory (a downloaded public/ bundle) or a "
        "directory of runs, from which the latest of the family and profile at this run's "
        "merge-base is taken (default: no comparison)",
    )
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
        help="sanitized bundle in public/: public (no raw logs; default) or internal (logs, no "
        "secrets)",
    )
    secret_options(run)
    pass_env_option(run)
    run.add_argument(
        "--junit-flavour",
        choices=("xunit2", "xunit1"),
        default="xunit2",
        help="xunit2 (junit-10 schema; default) or xunit1 (adds file/line on testcases)",
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
    format_option(
        run, "the paths written (run_dir, report, public) and the audit, instead of the summary"
    )


def main(args: argparse.Namespace) -> int:
    prefetch = _overlap.CommitPrefetch.start(args.repo, args.base_ref, os.environ)
    if args.backend == "cgroup" or (args.backend == "auto" and not args.image):
        ShmTrial.start(os.environ)  # the private /dev/shm tried beside the start-up
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
            command_line=command_line(args),
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
            pass_env=args.pass_env,
            quiet=args.quiet,
            base_run=args.base_run,
            commit_prefetch=prefetch,
        ),
        output_format=args.output_format,
    )
