"""From what happened to a verdict, test cases and a parity report."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from harness import contract
from qualify import parity as parity_mod
from qualify.evidence.junit import JUnitCase, parse_pytest_junit, split_nodeid
from qualify.judge.gpu import gpu_evidence
from qualify.judge.ladder import Signals, decide, signal_name
from qualify.judge.result import RunResult
from qualify.judge.tests import RunProgress, not_run_cases, progress_from_events
from qualify.plan.fingerprint import fingerprint
from qualify.plan.limits import Limits, limit_mismatches
from qualify.plan.spec import RunSpec
from qualify.run.execution import Execution
from qualify.run.monitor import MonitorResult
from qualify.rundir import RunDir
from qualify.sizes import format_bytes
from qualify.verdict import Verdict


def display_path(path: Path) -> str:
    """``path`` relative to the working directory when below it (reports name no host paths)."""
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


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


def _from_events(progress: RunProgress, verdict: Verdict, message: str) -> list[JUnitCase]:
    """Cases rebuilt from the plugin's events when pytest's own JUnit never got written."""
    cases = list(progress.cases)
    if progress.running:
        classname, name = split_nodeid(progress.running)
        text = f"{message} (during {progress.running_when})"
        cases.append(JUnitCase(classname, name, "error", 0.0, text, text, kind=verdict.value))
    reason = f"the run ended ({verdict.value}) before it started"
    return cases + not_run_cases(progress.not_run, reason)


def _whole_command(
    spec: RunSpec, execution: Execution, verdict: Verdict, message: str
) -> list[JUnitCase]:
    """One case for a family command that is not pytest (or died before collecting)."""
    if execution.returncode is None:
        return []  # it never ran: the qualify case below carries the verdict
    passed = execution.returncode == 0 and not verdict.is_resource
    text = RunDir(spec.run_dir).log_tail("stderr", 4000) or None
    outcome = "passed" if passed else "failed"
    return [JUnitCase(spec.family.name, "e2e", outcome, 0.0, None if passed else message, text)]


def _cases(
    spec: RunSpec,
    execution: Execution,
    verdict: Verdict,
    reason: str,
    progress: RunProgress,
    phase: str | None,
) -> list[JUnitCase]:
    message = _resource_message(verdict, reason, spec, execution, phase)
    pytest_cases = None
    if progress.session_exitstatus is not None:
        pytest_cases = parse_pytest_junit(RunDir(spec.run_dir).pytest_junit_path)
    if pytest_cases is not None:
        cases = pytest_cases
    elif progress.collected or progress.cases or progress.running:
        cases = _from_events(progress, verdict, message)
    else:
        cases = _whole_command(spec, execution, verdict, message)
    carried = any(case.kind == verdict.value for case in cases)
    if verdict == Verdict.ERROR or (verdict.is_resource and not carried):
        cases.append(
            JUnitCase("qualify", "run", "error", 0.0, message, message, kind=verdict.value)
        )
    return cases


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
    asked = dataclasses.replace(spec.limits, pids_max=None)
    problems = limit_mismatches(asked, seen)
    if not problems:
        return None
    return "limits read inside the sandbox differ from those asked: " + "; ".join(problems)


def judge(spec: RunSpec, execution: Execution, cgroup_version: int | None) -> RunResult:
    """Decide the verdict from every signal and derive the test cases and parity report."""
    run_dir = RunDir(spec.run_dir)
    events = list(run_dir.events())
    progress = progress_from_events(events)
    gpu = gpu_evidence(events, run_dir.log_tail("stderr"))
    inside = inside_limits(events)
    parity, parity_error = _compare(spec) if execution.setup_error is None else (None, None)
    monitor = execution.monitor
    failed = sum(1 for case in progress.cases if case.outcome in ("failed", "error"))
    parity_passed = None
    if parity is not None or parity_error is not None:
        parity_passed = parity.passed if parity is not None else False
    found = Signals(
        setup_error=execution.setup_error
        or inside_limits_error(spec, execution, inside)
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
    )
    verdict, reason = decide(found)
    phase = _phase_at_death(monitor)
    cases = _cases(spec, execution, verdict, reason, progress, phase)
    if parity is not None:
        repro = f"qualify compare {display_path(run_dir.parity_path)}"
        cases += parity_mod.junit_cases(parity, spec.family.name, repro)
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
    )


__all__ = ["judge", "signal_name"]
