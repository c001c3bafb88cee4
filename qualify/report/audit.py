"""audit.json: the record of a run. Keys are stable; ``schema_version`` changes with them."""

from __future__ import annotations

import dataclasses
import time
from typing import Any

from qualify.cuda_oom import BUDGET_SCOPES, gpu_evidence
from qualify.diagnose import signal_name
from qualify.events import read_events
from qualify.gpu import read_summary
from qualify.judge import inside_limits
from qualify.result import RunResult
from qualify.sandbox.base import Limits

SCHEMA_VERSION = 1


def iso(wall: float | None) -> str | None:
    """UTC ISO-8601 with milliseconds."""
    if wall is None:
        return None
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(wall)) + f".{int(wall % 1 * 1000):03d}Z"


def _memory(result: RunResult) -> dict[str, Any]:
    monitor = result.execution.monitor
    if monitor is None:
        return {"peak_bytes": None, "peak_source": None, "phases": [], "processes_at_peak": []}
    origin = result.execution.started_mono
    return {
        "peak_bytes": monitor.peak_bytes,
        "peak_source": monitor.peak_source,
        "sampled_peak_bytes": monitor.sampled_peak_bytes,
        "sampled_peak_at": None
        if monitor.sampled_peak_mono is None
        else round(monitor.sampled_peak_mono - origin, 3),
        "phases": [window.to_dict(origin) for window in monitor.phases],
        "phases_dropped": monitor.phases_dropped,
        "processes_at_peak": [dataclasses.asdict(p) for p in monitor.processes_at_peak],
        "phase_at_end": result.phase_at_death,
    }


def _tests(result: RunResult) -> dict[str, Any]:
    outcomes = [case.outcome for case in result.testcases if not case.classname.endswith("parity")]
    return {
        "collected": result.progress.collected,
        "passed": outcomes.count("passed"),
        "failed": outcomes.count("failed"),
        "errors": outcomes.count("error"),
        "skipped": outcomes.count("skipped"),
        "running_at_end": result.progress.running,
        "running_when": result.progress.running_when,
        "not_run": len(result.progress.not_run),
        "pytest_exitstatus": result.progress.session_exitstatus,
    }


def _limits(requested: Limits, in_effect: Limits | None) -> dict[str, Any]:
    return {
        "requested": requested.as_dict(),
        "in_effect": in_effect.as_dict() if in_effect is not None else None,
    }


# --- GPU
def _gpu(result: RunResult, events: list[dict[str, Any]]) -> dict[str, Any]:
    run_dir = result.spec.run_dir
    evidence = gpu_evidence(events, run_dir / "stderr.log")
    section = evidence.to_dict(read_summary(run_dir))
    plan = result.spec.gpu_budget
    section["budget_plan"] = plan.as_dict() if plan is not None else None
    if plan is not None:
        section["budget_scope"] = BUDGET_SCOPES[plan.mode]
        if not evidence.budgets:
            section["budget_note"] = (
                "no process of the run initialized CUDA, so the budget was never applied"
            )
    return section


# --- end GPU


def build_audit(result: RunResult) -> dict[str, Any]:
    """The audit document of ``result``."""
    spec, execution = result.spec, result.execution
    sandbox = execution.sandbox
    monitor = execution.monitor
    events = list(read_events(spec.run_dir / "events.jsonl"))
    return {
        "schema_version": SCHEMA_VERSION,
        "run_id": spec.run_id,
        "verdict": result.verdict.value,
        "reason": result.reason,
        "interrupted": execution.interrupted,
        "family": {
            "name": spec.family.name,
            "description": spec.family.description,
            "e2e_command": list(spec.family.command),
            "options": dict(spec.options),
        },
        "profile": spec.profile,
        "commit": dataclasses.asdict(spec.commit),
        "sandbox": {
            "backend": sandbox.backend if sandbox else spec.backend,
            "capped": sandbox.capped if sandbox else None,
            "cgroup": sandbox.cgroup if sandbox else None,
            "notes": list(sandbox.notes) if sandbox else [],
            "inside": inside_limits(events),
        },
        "limits": _limits(spec.limits, sandbox.in_effect if sandbox else None),
        "memory": _memory(result),
        "oom": {"kills": monitor.oom_kills if monitor else None},
        "exit": {
            "code": execution.returncode,
            "signal": signal_name(execution.returncode),
            "pid": execution.pid,
            "timed_out": execution.timed_out,
        },
        "tests": _tests(result),
        "parity": result.parity.to_dict() if result.parity is not None else None,
        "parity_error": result.parity_error,
        "allocator": dataclasses.asdict(spec.allocator),
        "gpu": _gpu(result, events),
        "timings": {
            "started": iso(execution.started_wall),
            "ended": iso(execution.ended_wall),
            "wall_s": round(execution.ended_wall - execution.started_wall, 3),
            "started_mono": round(execution.started_mono, 4),
            "timeout_s": spec.timeout_s,
        },
        "monitor": {
            "interval_s": spec.sample_interval_s,
            "samples": monitor.samples if monitor else 0,
            "ack_timeouts": monitor.ack_timeouts if monitor else 0,
            "cpu_s": round(monitor.cpu_seconds, 4) if monitor else None,
        },
        "command": list(spec.command_line),
        "logs": {name: dataclasses.asdict(stats) for name, stats in execution.logs.items()},
        "environment": result.environment,
        "problems": list(execution.teardown_problems),
    }


def provisional_audit(run_id: str, family: str, profile: str, head: str) -> dict[str, Any]:
    """Written before the E2E starts: if qualify itself is SIGKILLed, this is what remains."""
    return {
        "schema_version": SCHEMA_VERSION,
        "run_id": run_id,
        "verdict": "ERROR",
        "reason": "qualify did not finish (it was killed before it could write its report)",
        "family": {"name": family},
        "profile": profile,
        "commit": {"head": head},
    }
