"""From what happened to a verdict, test cases and a parity report."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from harness import contract
from qualify import cuts, records
from qualify import parity as parity_mod
from qualify.console import display_path
from qualify.evidence.junit import JUnitCase, parse_pytest_junit, split_nodeid
from qualify.judge.gpu import gpu_evidence
from qualify.judge.ladder import Signals, decide
from qualify.judge.progress import (
    ProgressReplay,
    RunProgress,
    cases_from_events,
    progress_from_events,
)
from qualify.judge.result import RunResult
from qualify.plan.fingerprint import fingerprint
from qualify.plan.limits import Limits, limit_mismatches
from qualify.plan.spec import RunSpec
from qualify.records import frozen_record
from qualify.run.execution import Execution
from qualify.run.monitor import MonitorResult
from qualify.rundir import RunDir
from qualify.rundir.events import PhaseLines, read_events
from qualify.sizes import format_bytes
from qualify.verdict import Verdict


def _phase_at_death(monitor: MonitorResult | None) -> str | None:
    if monitor is None:
        return None
    unfinished = [w for w in monitor.phases if w.error == "unfinished"]
    return unfinished[-1].name if unfinished else None


def _compare(spec: RunSpec) -> tuple[parity_mod.ParityReport | None, str | None]:
    path = RunDir(spec.run_dir).parity_path
    if spec.family.parity is None and not path.exists():
        return None, None
    gate = parity_mod.ParityGate.from_table(spec.family.parity or {})
    if not path.exists():
        return None, "no parity cases were recorded"
    try:
        return parity_mod.compare_files(path, None, gate), None
    except parity_mod.ParityInputError as exc:
        return None, str(exc)


def _resource_message(
    verdict: Verdict, reason: str, spec: RunSpec, execution: Execution, phase: str | None
) -> str:
    monitor = execution.monitor
    peak = monitor.peak_bytes if monitor else None
    limit = execution.sandbox.in_effect.memory_bytes if execution.sandbox else None
    where = f" in phase {phase}" if phase else ""
    memory = f"peak {format_bytes(peak)} of limit {format_bytes(limit)}"
    return f"{verdict.value}{where}: {reason}; {memory}"


WITHOUT_PLUGIN = (
    "pytest ran without qualify's plugin (its summary is in the output, the events hold no "
    "test): whatever started it did not pass on PYTHONPATH, PYTEST_PLUGINS, PYTEST_ADDOPTS and "
    "the QUALIFY_ variables (tox: pass_env), so the run has one testcase for the whole command"
)


def pytest_ran_unseen(run_dir: RunDir, progress: RunProgress) -> bool:
    """Whether pytest ran without the plugin: the E2E's output ends in pytest's summary line,
    which pytest prints after every plugin's end of the session, and the plugin never wrote
    its own."""
    if progress.session_exitstatus is not None or _streamed(progress):
        return False
    from qualify.evidence.lines import parse_pytest_line  # (its patterns: 40 ms to compile)

    for line in reversed(run_dir.log_tail("stdout", 4000).splitlines()[-20:]):
        signal = parse_pytest_line(line)
        if signal is not None and signal.kind in ("pytest_summary", "pytest_passed"):
            return True
    return False


TRACEBACK = "Traceback (most recent call last):"
EXCEPTION_LINE_LIMIT = 300


def exception_at_end(text: str) -> str | None:
    """The exception of the last Python traceback in ``text`` (``OSError: [Errno 30] ...``),
    when that traceback is what ``text`` ends with: its frames are indented, its exception line
    is not (a message may go on for a few lines). None otherwise. ``text`` may begin inside
    the traceback (a tail of a log)."""
    start = text.rfind(TRACEBACK)
    # A traceback longer than the tail read has lost its first line: its frames still say
    # what it is (``  File "...", line N``).
    frame = ("  File ",) if start < 0 else (" ", "\t")
    lines = text[start + len(TRACEBACK) if start >= 0 else 0 :].splitlines()
    framed = False
    for index, line in enumerate(lines):
        if line.startswith(frame) or (framed and line.startswith((" ", "\t"))):
            framed = True
        elif line.strip() and framed:
            if sum(1 for rest in lines[index + 1 :] if rest.strip()) > 5:
                return None  # more came after it: not how the process ended
            return cuts.head(line.strip(), EXCEPTION_LINE_LIMIT)
    return None


def _whole_command(
    spec: RunSpec, execution: Execution, verdict: Verdict, message: str, unseen: bool
) -> list[JUnitCase]:
    """One case for a family command that is not pytest (or died before collecting); a
    failing one says so when pytest ran all the same, out of the plugin's reach."""
    if execution.returncode is None:
        return []  # it never ran: the qualify case below carries the verdict
    passed = execution.returncode == 0 and not verdict.is_resource
    text = RunDir(spec.run_dir).log_tail("stderr", 4000) or None
    outcome = "passed" if passed else "failed"
    message = f"{message}; {WITHOUT_PLUGIN}" if unseen else message
    return [JUnitCase(spec.family.name, "e2e", outcome, 0.0, None if passed else message, text)]


_CATEGORY = {"passed": "passed", "failed": "failed", "error": "failed", "skipped": "skipped"}


def junit_disagreements(pytest_cases: list[JUnitCase], progress: RunProgress) -> list[str]:
    """Where pytest's own JUnit and the streamed events disagree (passed, failed or skipped,
    and which tests there are); each line names the test."""
    from_events = {(case.classname, case.name): case.outcome for case in progress.cases}
    if progress.running:
        from_events[split_nodeid(progress.running)] = "error"
    for nodeid in progress.not_run:
        from_events[split_nodeid(nodeid)] = "not run"
    from_junit = {(case.classname, case.name): case.outcome for case in pytest_cases}
    differing = []
    for key in from_events.keys() | from_junit.keys():
        ours, theirs = from_events.get(key, "absent"), from_junit.get(key, "absent")
        if _CATEGORY.get(ours, ours) != _CATEGORY.get(theirs, theirs):
            differing.append((key, ours, theirs))
    lines = []
    for key, ours, theirs in sorted(differing):  # only they are sorted: usually none
        name = "::".join(part for part in key if part)
        lines.append(f"{name}: JUnit says {theirs}, the events say {ours}")
    return lines


def _streamed(progress: RunProgress) -> bool:
    return bool(progress.collected or progress.cases or progress.running)


@frozen_record
class PytestJUnitRead:
    """pytest's JUnit file as read, and where it disagrees with the events' progress."""

    cases: list[JUnitCase] | None
    """None: missing or invalid."""
    disagreements: tuple[str, ...]


def read_pytest_junit(path: Path, progress: RunProgress) -> PytestJUnitRead:
    """pytest's JUnit at ``path`` read (None when missing or invalid) and compared with
    ``progress`` when the plugin streamed events."""
    cases = parse_pytest_junit(path)
    if cases and progress.reruns:
        cases = last_attempts(cases, progress)
    disagreements = junit_disagreements(cases, progress) if cases and _streamed(progress) else []
    return PytestJUnitRead(cases, tuple(disagreements))


def last_attempts(cases: list[JUnitCase], progress: RunProgress) -> list[JUnitCase]:
    """pytest's testcases without those of the attempts that a plugin ran again: pytest's
    JUnit writer ends a testcase at each attempt's teardown, and words an attempt that failed
    and was run again as a pass (pytest-rerunfailures reports its outcome as ``rerun``, flaky
    does not report it). The events say how many times each test was run again; each test's
    first that many testcases go."""
    dropping = {split_nodeid(nodeid): count for nodeid, count in progress.reruns}
    kept = []
    for case in cases:
        key = (case.classname, case.name)
        left = dropping.get(key, 0)
        if left:
            dropping[key] = left - 1
        else:
            kept.append(case)
    return kept


CLOCK_LAG_S = 0.05
"""How far a file's modification time may lag the ``time.time()`` read before it was written:
the kernel stamps files from a clock that advances once a tick (at most 10 ms)."""


def pytest_junit_path(spec: RunSpec, progress: RunProgress, not_before: float) -> Path | None:
    """The file pytest's JUnit writer wrote, as the session's end says: the E2E's own
    ``--junitxml`` (qualify asks for none) when it lies in the E2E's working directory, the
    family's or the run directory and was written after ``not_before`` (a wall time before
    the E2E started). None when it wrote none, for a file elsewhere (a container's own file
    system, any file of the host) or an older one: the events make the cases then."""
    named = progress.junit_path
    if named is None or not os.path.isabs(named):
        return None  # (the plugin writes the absolute path pytest writes to)
    path = os.path.realpath(named)
    roots = {os.path.realpath(d) for d in (spec.workdir, spec.family.directory, spec.run_dir)}
    if not any(path.startswith(root + os.sep) for root in roots):
        return None
    try:
        written = os.stat(path).st_mtime
    except OSError:
        return None
    return Path(path) if written >= not_before - CLOCK_LAG_S else None


def incomplete_reason(progress: RunProgress) -> str | None:
    """Why pytest's run is not complete, when the plugin saw it start; None when it is."""
    if not (progress.collected or progress.running or progress.cases):
        return None
    parts = []
    if progress.running:
        parts.append(f"test {progress.running} was running ({progress.running_when})")
    unfinished = progress.session_exitstatus is None
    if unfinished:
        parts.append("the session never finished")
    if progress.not_run and (unfinished or progress.running or progress.session_exitstatus == 0):
        parts.append(f"{len(progress.not_run)} of {progress.collected} collected test(s) never ran")
    return "; ".join(parts) or None


def _incomplete(execution: Execution, progress: RunProgress, stderr: str) -> str | None:
    """``incomplete_reason``, with the exception that ended pytest when its session never
    finished and its process ended on its own with a Python traceback at the end of
    ``stderr`` (a plugin's end of the session failing, pytest's JUnit writer among them)."""
    reason = incomplete_reason(progress)
    if reason is None or progress.session_exitstatus is not None:
        return reason
    if execution.signal is not None or execution.timed_out or execution.returncode in (None, 0):
        return reason
    exception = exception_at_end(stderr)
    return f"{reason} ({exception})" if exception else reason


def _cases(
    spec: RunSpec,
    execution: Execution,
    verdict: Verdict,
    message: str,
    progress: RunProgress,
    unseen: bool = False,
) -> tuple[list[JUnitCase], list[str]]:
    """The run's test cases and where pytest's JUnit disagreed with the events (which win);
    ``message``: the verdict's, for the cases that carry it; ``unseen``: pytest ran out of the
    plugin's reach (said in a failing whole-command case)."""
    pytest_cases, disagreements = None, []
    path = None
    if progress.session_exitstatus is not None:
        path = pytest_junit_path(spec, progress, execution.started_wall)
    if path is not None:
        read = read_pytest_junit(path, progress)
        pytest_cases, disagreements = read.cases, list(read.disagreements)
    streamed = _streamed(progress)
    if pytest_cases is not None and not disagreements and not incomplete_reason(progress):
        cases = pytest_cases
    elif streamed:
        cases = cases_from_events(progress, verdict, message)
    else:
        cases = _whole_command(spec, execution, verdict, message, unseen)
    return cases, disagreements


def _qualify_case(
    verdict: Verdict, message: str, reason: str, cases: list[JUnitCase], stderr: str
) -> JUnitCase | None:
    """qualify's own testcase, where the verdict needs one to be seen in JUnit: an error for
    ERROR, or for a resource death that no case carries; a failure for any other verdict but
    PASSED when no case fails (every test passed and the run did not: pytest's session broke
    after its tests, a command after pytest failed), so that a JUnit reader does not see it
    green."""
    carried = any(case.kind == verdict.value for case in cases)
    if verdict == Verdict.ERROR or (verdict.is_resource and not carried):
        return JUnitCase("qualify", "run", "error", 0.0, message, message, kind=verdict.value)
    if verdict != Verdict.PASSED and not any(c.outcome in ("failed", "error") for c in cases):
        said = f"{verdict.value}: {reason}"
        return JUnitCase("qualify", "run", "failed", 0.0, said, stderr or said, kind=verdict.value)
    return None


def inside_limits(events: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The limits the family's first Python process read from inside the sandbox, or None."""
    for event in events:
        if event.get("event") == contract.SANDBOX_LIMITS:
            return {k: v for k, v in event.items() if k not in ("event", "t", "mono")}
    return None


def inside_limits_error(
    spec: RunSpec, execution: Execution, inside: dict[str, Any] | None
) -> str | None:
    """Why the limits seen inside a capped sandbox are not the ones asked (None: they are, or
    nothing inside could read them: a family without Python records nothing, and an unreadable
    cgroup is recorded in the audit only, the host having read the limits already)."""
    sandbox = execution.sandbox
    if inside is None or sandbox is None or not sandbox.capped or inside.get("error"):
        return None
    seen = Limits(inside.get("memory_bytes"), inside.get("swap_bytes"), None)
    asked = records.replace(spec.limits, pids_max=None)
    problems = limit_mismatches(asked, seen)
    if not problems:
        return None
    return "limits read inside the sandbox differ from those asked: " + "; ".join(problems)


def _overcharge(cap: int) -> int:
    """How far over its cap the kernel's watermark may legitimately go: a task being OOM-killed
    (or with a fatal signal pending) is charged past the limit rather than made to wait, and
    charges come in per-CPU batches."""
    return max(32 << 20, cap // 32)


def limits_held_error(spec: RunSpec, execution: Execution) -> str | None:
    """Why the limits asked did not hold for the whole run (None: they did, as far as the
    monitor saw): a limit file of the run's cgroups or their ancestors that changed while it
    ran (a test as root can write its own cap), or a peak, read from the kernel's watermark,
    above the memory cap asked (a cap raised and lowered again between two readings)."""
    monitor = execution.monitor
    if monitor is None:
        return None
    if monitor.limit_changes:
        changes = "; ".join(change.describe() for change in monitor.limit_changes[:3])
        more = len(monitor.limit_changes) - 3
        return (
            "the run's limits changed while it ran: "
            + changes
            + (f" (and {more} more)" if more > 0 else "")
        )
    cap, peak = spec.limits.memory_bytes, monitor.peak_bytes
    sandbox = execution.sandbox
    if (
        cap is not None
        and peak is not None
        and peak > cap + _overcharge(cap)
        and monitor.peak_source == "kernel"
        and sandbox is not None
        and sandbox.capped
    ):
        return (
            f"the run's peak of {peak} bytes (the kernel's watermark) is above the cap of {cap} "
            "bytes asked: the cap was not in force for the whole run"
        )
    return None


def judge(
    spec: RunSpec,
    execution: Execution,
    cgroup_version: int | None,
) -> RunResult:
    """Decide the verdict from every signal and derive the test cases and parity report."""
    run_dir = RunDir(spec.run_dir)
    content = read_events(run_dir.events_path)
    if isinstance(content, PhaseLines):  # (the phase lines replayed from their fields)
        replay = ProgressReplay()
        replay.feed_phases(content)
        progress = replay.result()
        events = [value for value in content.others if isinstance(value, dict)]
    else:
        values = content.values
        # (every value a record, as json.loads makes them: its records without a look at each)
        events = list(values) if {dict}.issuperset(map(type, values)) else list(content.records())
        progress = progress_from_events(events)
    stderr_tail = run_dir.log_tail("stderr")
    gpu = gpu_evidence(events, stderr_tail)
    stderr = cuts.tail(stderr_tail, 4000)  # (what a reason and a testcase quote)
    inside = inside_limits(events)
    parity, parity_error = _compare(spec) if execution.setup_error is None else (None, None)
    monitor = execution.monitor
    failed = sum(1 for case in progress.cases if case.outcome in ("failed", "error"))
    parity_passed = None
    if parity is not None or parity_error is not None:
        parity_passed = parity.passed if parity is not None else False
    host_memory = _host_memory_bytes()
    cap = spec.limits.memory_bytes
    found = Signals(
        setup_error=execution.setup_error
        or storage_error(execution)
        or inside_limits_error(spec, execution, inside)
        or limits_held_error(spec, execution)
        or gpu.budget_error,
        interrupted=execution.interrupted,
        timed_out=execution.timed_out,
        returncode=execution.returncode,
        oom_kills=monitor.oom_kills if monitor else None,
        tests_failed=failed,
        session_exitstatus=progress.session_exitstatus,
        parity_passed=parity_passed,
        parity_reason=parity_error or (parity.reason if parity is not None else None),
        cuda_oom=gpu.cuda_oom,
        cuda_oom_kind=gpu.oom_kind,
        signal=execution.signal,
        incomplete=_incomplete(execution, progress, stderr),
        cap_reached=_cap_reached(monitor, execution),
        host_memory_bytes=host_memory if cap is not None and cap > host_memory else None,
        pids_refused=(monitor.pids_refused or 0) if monitor else 0,
        pids_max=spec.limits.pids_max,
    )
    verdict, reason = decide(found)
    phase = _phase_at_death(monitor)
    unseen = pytest_ran_unseen(run_dir, progress)
    message = _resource_message(verdict, reason, spec, execution, phase)
    cases, disagreements = _cases(spec, execution, verdict, message, progress, unseen)
    if parity is not None:
        repro = f"qualify compare {display_path(run_dir.parity_path)}"
        cases += parity_mod.junit_cases(parity, spec.family.name, repro)
    own = _qualify_case(verdict, message, reason, cases, stderr)
    if own is not None:
        cases.append(own)
    return RunResult(
        spec=spec,
        execution=execution,
        verdict=verdict,
        reason=reason,
        progress=progress,
        testcases=tuple(cases),
        parity=parity,
        parity_error=parity_error,
        environment=fingerprint(
            cgroup_version, execution.sandbox.backend if execution.sandbox else spec.backend
        ),
        phase_at_death=phase if verdict != Verdict.PASSED else None,
        gpu=gpu,
        inside=inside,
        nvml=run_dir.gpu_summary(),
        junit_disagreements=tuple(disagreements),
        host_memory_bytes=host_memory,
        pytest_unseen=unseen,
    )


CAP_REACHED_FRACTION = 0.98
"""A watermark this close to the cap counts as the cap reached (pages in flight when the OOM
killer ran, rounding of the limit to pages)."""


def _cap_reached(monitor: MonitorResult | None, execution: Execution) -> bool | None:
    """Whether usage ever reached the cap: the kernel's count of charges that hit it, or the
    watermark at the cap; None when neither can tell (an OOM kill is then the cap's)."""
    if monitor is None:
        return None
    limit = execution.sandbox.in_effect.memory_bytes if execution.sandbox else None
    peak = monitor.peak_bytes if monitor.peak_source == "kernel" else None
    if (monitor.limit_hits or 0) > 0:
        return True
    if limit is None or peak is None:
        return None
    return peak >= limit * CAP_REACHED_FRACTION


def storage_error(execution: Execution) -> str | None:
    """Why the run's output could not be stored (a full disk): the toolkit's failure, never
    the family's."""
    failed = [stats.write_error for stats in execution.logs.values() if stats.write_error]
    if execution.monitor is not None and execution.monitor.write_error:
        failed.append(execution.monitor.write_error)
    if not failed:
        return None
    return f"qualify could not store the run's output in the run directory: {'; '.join(failed)}"


def _host_memory_bytes() -> int:
    """The host's RAM (what a cap above it cannot bind)."""
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


__all__ = ["judge"]
