"""The audit of a judged run (``qualify.rundir.audit.Audit``), and the provisional one."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness import contract
from qualify import records
from qualify.evidence.junit import family_counts
from qualify.plan.spec import RunSpec
from qualify.rundir.audit import (
    FLAKY_LISTED,
    Audit,
    CudaOomRecord,
    EscapeRecord,
    ExitRecord,
    FamilyRecord,
    GpuRecord,
    LimitsRecord,
    MemoryRecord,
    MonitorRecord,
    OomRecord,
    ParityRecord,
    PhaseRecord,
    ProcessesRecord,
    ProcessRecord,
    RefusedFile,
    SandboxRecord,
    TestsRecord,
    TimingsRecord,
)
from qualify.rundir.typed_json import from_json
from qualify.untrusted import survey
from qualify.verdict import PROVISIONAL_REASON, Verdict

if TYPE_CHECKING:
    # What only the judged run's audit needs: not imported before the E2E starts (the
    # provisional audit is written then).
    from qualify.judge.gpu import GpuEvidence
    from qualify.judge.result import RunResult
    from qualify.plan.mps import GpuBudgetPlan


def iso(wall: float | None) -> str | None:
    """UTC ISO-8601 with milliseconds."""
    if wall is None:
        return None
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(wall)) + f".{int(wall % 1 * 1000):03d}Z"


def _memory(result: RunResult) -> MemoryRecord:
    monitor = result.execution.monitor
    if monitor is None:
        return MemoryRecord()
    origin = result.execution.started_mono
    return MemoryRecord(
        peak_bytes=monitor.peak_bytes,
        peak_source=monitor.peak_source,
        sampled_peak_bytes=monitor.sampled_peak_bytes,
        sampled_peak_at=None
        if monitor.sampled_peak_mono is None
        else round(monitor.sampled_peak_mono - origin, 3),
        phases=[PhaseRecord(**window.to_dict(origin)) for window in monitor.phases],
        phases_dropped=monitor.phases_dropped,
        processes_at_peak=list(monitor.processes_at_peak),
        phase_at_end=result.phase_at_death,
        last_gasp=[
            records.replace(gasp, at_s=round(gasp.at_s - origin, 3)) for gasp in monitor.last_gasp
        ],
    )


def _tests(result: RunResult) -> TestsRecord:
    counts = family_counts(result.testcases)
    return TestsRecord(
        collected=result.progress.collected,
        passed=counts["passed"],
        failed=counts["failed"],
        errors=counts["errors"],
        skipped=counts["skipped"],
        running_at_end=result.progress.running,
        running_when=result.progress.running_when,
        not_run=counts["not_run"],
        pytest_exitstatus=result.progress.session_exitstatus,
        junit_disagreements=list(result.junit_disagreements),
        reruns=result.progress.rerun_count,
        flaky=list(result.progress.flaky[:FLAKY_LISTED]),
        flaky_count=len(result.progress.flaky),
    )


def _limits(result: RunResult) -> LimitsRecord:
    sandbox, cap = result.execution.sandbox, result.spec.limits.memory_bytes
    host = result.host_memory_bytes
    return LimitsRecord(
        requested=result.spec.limits,
        in_effect=sandbox.in_effect if sandbox else None,
        host_memory_bytes=host,
        cap_binds=None if cap is None or host is None else cap <= host,
    )


def _public(event: dict[str, Any]) -> dict[str, Any]:
    """An event as the audit keeps it (the monotonic stamp and sync token are internal)."""
    return {key: value for key, value in event.items() if key not in ("mono", "sync")}


def gpu_record(
    evidence: GpuEvidence, plan: GpuBudgetPlan | None, nvml: dict[str, Any] | None
) -> GpuRecord:
    """The audit's GPU section: the budget asked (``plan``) and what the harness saw of it, the
    allocator, CUDA OOMs and their kind, and NVML's peaks (``nvml``: None when not sampled)."""
    from qualify.judge.gpu import BUDGET_SCOPE, BUDGET_SCOPES

    parsed = evidence.oom
    mode = plan.mode if plan is not None else evidence.budget_mode or "torch"
    note = None
    if plan is not None and not evidence.budgets:
        note = "no process of the run initialized CUDA, so the budget was never applied"
    return GpuRecord(
        budget_mode=evidence.budget_mode,
        budget_scope=BUDGET_SCOPES.get(mode, BUDGET_SCOPE),
        budget_plan=plan.as_dict() if plan is not None else None,
        budget_note=note,
        budgets=[_public(event) for event in evidence.budgets],
        budget_error=evidence.budget_error,
        allocator_seen=[_public(event) for event in evidence.allocator],
        cuda_oom=CudaOomRecord(
            seen=evidence.cuda_oom,
            kind=evidence.oom_kind,
            events=[_public(event) for event in evidence.ooms],
            message=parsed.to_dict() if parsed is not None else None,
            from_log=evidence.logged is not None,
        ),
        hook_errors=[_public(event) for event in evidence.hook_errors],
        nvml=nvml if nvml is not None else {"available": False, "reason": "not sampled"},
    )


def _family(spec: RunSpec) -> FamilyRecord:
    return FamilyRecord(
        name=spec.family.name,
        description=spec.family.description,
        e2e_command=list(spec.family.command),
        options=dict(spec.options),
        directory=_family_directory(spec),
        outside_repo=spec.family_outside_repo,
        content_sha256=spec.family_content_sha256,
    )


def _family_directory(spec: RunSpec) -> str:
    directory = spec.family.directory
    if directory.is_relative_to(spec.repo.resolve()):
        return directory.relative_to(spec.repo.resolve()).as_posix()
    return str(directory)


def _parity(result: RunResult) -> ParityRecord | None:
    """The parity record; each case's pointer into its records relative to the run directory
    (a file of the run is named as the run directory names it, wherever it is read later: a
    downloaded bundle, another machine)."""
    if result.parity is None:
        return None
    document = result.parity.to_dict()
    for case in document.get("per_case", []):
        for side in ("native", "reference"):
            record = (case.get(side) or {}).get("record")
            if isinstance(record, dict) and isinstance(record.get("file"), str):
                record["file"] = _in_run(record["file"], result.spec.run_dir)
    record, _ = from_json(ParityRecord, document, "parity")
    return record


def _in_run(path: str, run_dir: Path) -> str:
    """``path`` relative to ``run_dir`` when it is inside it, else as it is."""
    try:
        return str(Path(path).resolve().relative_to(run_dir.resolve()))
    except (OSError, ValueError):
        return path


def build_audit(result: RunResult) -> Audit:
    """The audit of ``result``."""
    spec, execution = result.spec, result.execution
    sandbox = execution.sandbox
    monitor = execution.monitor
    return Audit(
        run_id=spec.run_id,
        verdict=result.verdict.value,
        reason=result.reason,
        interrupted=execution.interrupted,
        family=_family(spec),
        profile=spec.profile,
        commit=spec.commit,
        sandbox=SandboxRecord(
            backend=sandbox.backend if sandbox else spec.backend,
            capped=sandbox.capped if sandbox else None,
            cgroup=sandbox.cgroup if sandbox else None,
            notes=list(sandbox.notes) if sandbox else [],
            inside=result.inside,
            env_withheld=list(spec.env_withheld),
            env_passed=list(spec.env_passed),
        ),
        limits=_limits(result),
        memory=_memory(result),
        oom=OomRecord(kills=monitor.oom_kills if monitor else None),
        exit=ExitRecord(
            code=execution.returncode,
            signal=execution.signal,
            pid=execution.pid,
            timed_out=execution.timed_out,
        ),
        processes=ProcessesRecord(
            killed_at_end=[ProcessRecord(pid, name) for pid, name in execution.killed_at_end],
            killed_at_end_count=execution.killed_at_end_count,
            escaped=[EscapeRecord(e.pid, e.name, e.cgroup) for e in monitor.escapes]
            if monitor
            else [],
            pids_refused=monitor.pids_refused if monitor else None,
        ),
        tests=_tests(result),
        parity=_parity(result),
        parity_error=result.parity_error,
        allocator=spec.allocator,
        gpu=gpu_record(result.gpu, spec.gpu_budget, result.nvml),
        timings=TimingsRecord(
            started=iso(execution.started_wall),
            ended=iso(execution.ended_wall),
            wall_s=round(execution.ended_wall - execution.started_wall, 3),
            started_mono=round(execution.started_mono, 4),
            timeout_s=spec.timeout_s,
        ),
        monitor=MonitorRecord(
            interval_s=spec.sample_interval_s,
            samples=monitor.samples if monitor else 0,
            ack_timeouts=monitor.ack_timeouts if monitor else 0,
            cpu_s=round(monitor.cpu_seconds, 4) if monitor else None,
        ),
        command=list(spec.command_line),
        logs=dict(execution.logs),
        environment=result.environment,
        problems=list(execution.teardown_problems),
        base=result.base,
        refused_files=refused_files(spec.run_dir),
    )


def refused_files(run_dir: Path) -> list[RefusedFile]:
    """What the E2E left in the run directory that qualify does not read whole."""
    skip = (contract.PUBLIC_DIR, contract.HARNESS_DIR)
    return [
        RefusedFile(refusal.name, refusal.reason, refusal.detail)
        for refusal in survey(run_dir, skip=skip)
        if not refusal.name.startswith(".public")
    ]


def provisional_audit(spec: RunSpec, started_wall: float) -> Audit:
    """Written before the E2E starts: if qualify itself is SIGKILLed, this is what remains."""
    return Audit(
        run_id=spec.run_id,
        verdict=Verdict.ERROR.value,
        reason=PROVISIONAL_REASON,
        family=_family(spec),
        profile=spec.profile,
        commit=spec.commit,
        sandbox=SandboxRecord(
            backend=spec.backend,
            env_withheld=list(spec.env_withheld),
            env_passed=list(spec.env_passed),
        ),
        limits=LimitsRecord(spec.limits, None),
        allocator=spec.allocator,
        timings=TimingsRecord(started=iso(started_wall), timeout_s=spec.timeout_s),
        monitor=MonitorRecord(interval_s=spec.sample_interval_s),
        command=list(spec.command_line),
    )
