"""``qualify run``: a family's E2E under a real memory cap, judged and reported.

Only what starts the E2E is imported before it starts; what judges, reports and publishes the
run is imported by a thread while the E2E runs (``END_OF_RUN_MODULES``), off the start-up path.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import importlib
import os
import shutil
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from qualify.console import printed
from qualify.errors import UsageError
from qualify.plan.request import RunRequest, build_spec
from qualify.plan.spec import RunSpec, harness_root
from qualify.publish.errorline import error_line
from qualify.report.junit import provisional_junit
from qualify.run.execute import Interrupts, execute
from qualify.run.registry import take_over_dead_runs
from qualify.rundir.directory import RunDir
from qualify.sandbox import Sandbox, select_sandbox
from qualify.sandbox.cgroup.layout import current_layout
from qualify.verdict import EXIT_ERROR, EXIT_USAGE, PROVISIONAL_REASON

if TYPE_CHECKING:
    from qualify.judge.judgement import PytestJUnitRead
    from qualify.judge.progress import ProgressReplay, RunProgress
    from qualify.judge.result import RunResult
    from qualify.publish.bundle import JsonlFields
    from qualify.run.execution import Execution
    from qualify.rundir.events import JsonlContent, JsonlFollower

    _Replayed = tuple[JsonlContent, RunProgress]
    """The events file's content and its replay, as ``_EventsAsTheyCome`` made them."""


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
    """The JUnit file and the audit, each atomically."""
    from qualify.report.audit_of_run import build_audit, iso
    from qualify.report.junit import render_junit

    spec = result.spec
    run_dir = RunDir(spec.run_dir)
    run_dir.write_junit(
        render_junit(
            spec.family.name,
            result.testcases,
            _properties(result),
            iso(result.execution.started_wall) or "",
            with_location=spec.junit_flavour == "xunit1",
        )
    )
    run_dir.write_audit(build_audit(result))


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
        execution = dataclasses.replace(
            result.execution, teardown_problems=(*result.execution.teardown_problems, note)
        )
        write_reports(dataclasses.replace(result, execution=execution))


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
    execution = dataclasses.replace(
        execution, teardown_problems=(*execution.teardown_problems, *leftover)
    )
    result = dataclasses.replace(result, execution=execution)
    write_reports(result)
    return result


def _judge_or_error(
    spec: RunSpec,
    execution: Execution,
    replayed: _Replayed | None = None,
    ahead: PytestJUnitRead | None = None,
) -> RunResult:
    """The judged result; a bug in judging still yields reports (ERROR, traceback kept in the
    run's debug log)."""
    from qualify.judge.judgement import judge

    try:
        return judge(spec, execution, current_layout().version, replayed, ahead)
    except Exception as exc:
        import traceback

        RunDir(spec.run_dir).write_debug(traceback.format_exc())
        failed = dataclasses.replace(
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
    from qualify.judge.judgement import display_path

    where = f": {display_path(Path(exc.filename))}" if exc.filename else ""
    return f"{exc.strerror or exc}{where}"


END_OF_RUN_MODULES = (
    "qualify.judge.judgement",
    "qualify.evidence.xmltree",  # junitparser: its readers and writers import it when used
    "qualify.commands.publish",
    "qualify.report.terminal",
    "rich.console",
    "rich.table",
)
"""Imported while the E2E runs: what the end of a run needs would otherwise be imported
before the E2E starts (a fifth of a second) or between its death and the reports (rich above
all). The GitHub channels, only used inside Actions, are imported there when needed."""
FAILED_RUN_MODULES = ("qualify.triage",)
"""What only a failed run's report page needs (a twentieth of a second): imported while the
run is judged, once the E2E ended with a failure (a non-zero exit, a signal)."""


def _preload(names: tuple[str, ...] = END_OF_RUN_MODULES) -> None:
    for name in names:
        with contextlib.suppress(ImportError):
            importlib.import_module(name)


def _prepare_end_of_run() -> None:
    """While the E2E runs: what the end of the run imports, the host's package versions that
    judging records (read once per process: a seventieth of a second), the type hints the
    audit is read back with, and the machine's fully qualified name that the sanitizer redacts
    (a lookup by the resolver)."""
    _preload(END_OF_RUN_MODULES)
    import socket

    from qualify.plan.fingerprint import package_versions
    from qualify.publish.sanitize import fully_qualified
    from qualify.rundir.audit import Audit
    from qualify.rundir.typed_json import prepare

    package_versions()
    prepare(Audit)
    with contextlib.suppress(OSError, UnicodeError):
        fully_qualified(socket.gethostname())


def _take_over_dead_runs(run_id: str, stderr: TextIO) -> None:
    """Clean up after every run on this machine whose qualify died, and complete its reports."""
    for abandoned in take_over_dead_runs():
        from qualify.report.abandoned import complete_abandoned

        directory = RunDir(abandoned.entry.run_dir)
        try:
            completed = complete_abandoned(directory, run_id, abandoned.problems)
        except OSError as exc:
            stderr.write(f"qualify run: cannot complete the dead run {directory.path}: {exc}\n")
            continue
        if completed:
            stderr.write(f"qualify run: completed the reports of a dead run: {directory.path}\n")


class _EventsAsTheyCome:
    """The run's events decoded, replayed and their fields gathered for the sanitizer's
    harvest while the E2E runs (at each wake-up of the wait for its end), which the end of the
    run would otherwise do after it: a suite's thousands of tests write megabytes of them. Once
    they say that pytest's session finished, pytest's JUnit is read too (``ahead``), while the
    E2E's interpreter shuts down, in a thread of its own (a large suite's file takes a second,
    and the wait must still see timeouts and signals). It starts once the imports of the end of
    the run are done (no import ever runs in two threads at once); anything that fails here is
    left to the end, which then reads the files itself."""

    def __init__(self, spec: RunSpec, preloading: threading.Thread, not_before: float) -> None:
        self._spec, self._path = spec, RunDir(spec.run_dir).events_path
        self._not_before = not_before
        self._preloading = preloading
        self._readers: tuple[JsonlFollower, ProgressReplay, JsonlFields] | None = None
        self._failed = False
        self._ahead: PytestJUnitRead | None = None
        self._reader: threading.Thread | None = None

    def poll(self) -> None:
        """Decode and replay what was appended since the last poll."""
        if self._failed or self._preloading.is_alive():
            return
        try:
            if self._readers is None:
                from qualify.judge.progress import ProgressReplay
                from qualify.publish.bundle import JsonlFields
                from qualify.rundir.events import JsonlFollower

                self._readers = JsonlFollower(self._path), ProgressReplay(), JsonlFields()
            follower, replay, fields = self._readers
            values = follower.poll()
            replay.feed(values)
            fields.feed(values)
        except Exception:
            self._failed = True
            return
        if self._reader is None and replay.session_finished:
            progress = replay.result()
            self._reader = threading.Thread(
                target=self._read_junit, args=(progress,), name="qualify-junit", daemon=True
            )
            self._reader.start()

    def _read_junit(self, progress: RunProgress) -> None:
        from qualify.judge.judgement import pytest_junit_path, read_pytest_junit

        with contextlib.suppress(Exception):
            path = pytest_junit_path(self._spec, progress, self._not_before)
            if path is not None:
                self._ahead = read_pytest_junit(path, progress)

    @property
    def ahead(self) -> PytestJUnitRead | None:
        """pytest's JUnit as read once its session finished (waiting for the reading if it
        still runs); None when it was not read."""
        if self._reader is not None:
            self._reader.join()
        return self._ahead

    def finish(self) -> _Replayed | None:
        """Once the E2E's processes are gone: the file's whole content and its replay."""
        if self._failed or self._readers is None:
            return None
        follower, replay, fields = self._readers
        try:
            from qualify.publish.bundle import gathered

            rest, content = follower.finish()
            if content is None:
                return None
            replay.feed(rest)
            fields.feed(rest)
            gathered(content, fields)
            return content, replay.result()
        except Exception:
            return None


def _execute_and_judge(
    spec: RunSpec, sandbox: Sandbox, interrupts: Interrupts, started_wall: float
) -> RunResult:
    """The E2E run and judged, what the end of the run needs imported meanwhile."""
    preloading = threading.Thread(target=_prepare_end_of_run, name="qualify-preload", daemon=True)

    def started() -> None:
        # Once the E2E runs (the start-up does not wait for either): the provisional audit,
        # then the imports of the end, joined when the E2E ends (no import ever runs in two
        # threads at once).
        _write_provisional_audit(spec, started_wall)
        preloading.start()

    events = _EventsAsTheyCome(spec, preloading, time.time())
    execution = execute(spec, sandbox, interrupts, on_started=started, while_running=events.poll)
    if preloading.is_alive():
        preloading.join()
    if preloading.ident is not None and execution.returncode != 0:
        # Judging imports nothing more (but the log-line parsers, which triage imports too,
        # for a failed command that is not pytest: it waits on their module's lock).
        preloading = threading.Thread(
            target=_preload, args=(FAILED_RUN_MODULES,), name="qualify-preload", daemon=True
        )
        preloading.start()
    if spec.backend == "auto" and execution.sandbox and spec.docker is None:
        why = f"--backend auto chose {execution.sandbox.backend}: no --image was given"
        info = dataclasses.replace(execution.sandbox, notes=(why, *execution.sandbox.notes))
        execution = dataclasses.replace(execution, sandbox=info)
    result = _judge_or_error(spec, execution, events.finish(), events.ahead)
    if preloading.is_alive():
        preloading.join()
    return result


def run(request: RunRequest, stdout: TextIO = sys.stdout, stderr: TextIO = sys.stderr) -> int:
    """Run one family once; returns the verdict's exit code (2 for bad input)."""
    try:
        spec = build_spec(request)
        sandbox = select_sandbox(
            spec.backend,
            spec.run_id,
            docker=spec.docker,
            family_dir=spec.family.directory,
            harness_root=harness_root(spec.run_dir),
        )
    except UsageError as exc:
        stderr.write(error_line("qualify run", exc))
        return EXIT_USAGE
    _take_over_dead_runs(spec.run_id, stderr)
    try:
        spec.run_dir.mkdir(parents=True, exist_ok=False)
    except OSError as exc:
        # Checked at planning; what only the attempt shows (a denial os.access cannot see, a
        # file created in between) is still bad input, a full disk is not.
        code = EXIT_ERROR if exc.errno in (errno.ENOSPC, errno.EDQUOT) else EXIT_USAGE
        stderr.write(
            error_line("qualify run", f"cannot create the run directory: {_os_error(exc)}")
        )
        return code
    started_wall = time.time()
    try:
        _write_provisional_junit(spec)
    except OSError as exc:
        stderr.write(error_line("qualify run", f"cannot write the run directory: {_os_error(exc)}"))
        return EXIT_ERROR
    interrupts = Interrupts()
    with interrupts.installed():
        result = _execute_and_judge(spec, sandbox, interrupts, started_wall)
        from qualify.commands.publish import publish_channels, terminal_text
        from qualify.judge.judgement import display_path
        from qualify.publish.bundle import SecretSources
        from qualify.report.terminal import render_summary

        try:
            try:
                _write_reports_making_room(result)
                publication = publish_channels(
                    RunDir(spec.run_dir),
                    level=request.publish,
                    environ=os.environ,
                    stdout=stdout,
                    secrets_from={**os.environ, **spec.env},
                    sources=SecretSources(tuple(request.secret_env), request.secrets_file),
                )
            finally:
                result = _complete_teardown(result)
        except OSError as exc:
            # The provisional reports, written atomically as the E2E started, stay valid.
            stderr.write(error_line("qualify run", f"cannot write the reports: {_os_error(exc)}"))
            stdout.write(f"{display_path(spec.run_dir)}\n")
            return EXIT_ERROR
    sanitizer = publication.sanitizer
    color = stdout.isatty() and "NO_COLOR" not in os.environ
    width = shutil.get_terminal_size().columns if color else 100
    summary = render_summary(result, color=color, width=width)
    printed(stdout, terminal_text(summary, sanitizer, os.environ))
    for reason in publication.reasons:
        stderr.write(f"qualify run: publication failed: {reason}\n")
    # The last line is the run directory, a path the caller opens: secrets only are redacted.
    printed(stdout, sanitizer.redact(f"{display_path(spec.run_dir)}\n"))
    printed(stdout)
    # A failed publication exits 4 (fail closed); the verdict itself is unchanged.
    return max(result.verdict.exit_code, publication.exit_code)
