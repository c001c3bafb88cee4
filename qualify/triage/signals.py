"""Every input gathered into one bag of evidence, grouped by what it can prove."""

from __future__ import annotations

import dataclasses
import signal
from typing import Any

from harness import contract
from qualify.evidence.cuda_oom import CudaOom, parse_cuda_oom
from qualify.evidence.docker_state import DockerState
from qualify.evidence.model import Evidence
from qualify.evidence.scan import ScanResult
from qualify.evidence.testresults import TestOutcomes
from qualify.rundir import Audit
from qualify.triage.analysis import RunData

KILL_SIGNALS = ("SIGKILL", "SIGTERM")
_MEMCG_KINDS = ("kernel_oom_kill", "kernel_killed", "kernel_select", "kernel_task_in")


@dataclasses.dataclass
class Inputs:
    """What the user gave (or the run directory held), already parsed."""

    run: RunData | None = None
    logs: list[ScanResult] = dataclasses.field(default_factory=list)
    kernel: list[ScanResult] = dataclasses.field(default_factory=list)
    docker: list[DockerState] = dataclasses.field(default_factory=list)
    tests: list[TestOutcomes] = dataclasses.field(default_factory=list)
    problems: list[str] = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class Bag:
    """Evidence grouped by what it proves."""

    memcg_oom: list[Evidence] = dataclasses.field(default_factory=list)
    global_oom: list[Evidence] = dataclasses.field(default_factory=list)
    victims: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    memcg_limits: list[tuple[Evidence, int]] = dataclasses.field(default_factory=list)
    cuda: list[tuple[Evidence, CudaOom]] = dataclasses.field(default_factory=list)
    trt: list[Evidence] = dataclasses.field(default_factory=list)
    trt_warnings: list[Evidence] = dataclasses.field(default_factory=list)
    kills: list[Evidence] = dataclasses.field(default_factory=list)
    kill_signal: str | None = None
    timeouts: list[Evidence] = dataclasses.field(default_factory=list)
    crashes: list[Evidence] = dataclasses.field(default_factory=list)
    test_failures: list[Evidence] = dataclasses.field(default_factory=list)
    parity: list[Evidence] = dataclasses.field(default_factory=list)
    infra: list[Evidence] = dataclasses.field(default_factory=list)
    passed: list[Evidence] = dataclasses.field(default_factory=list)
    docker_oom: list[Evidence] = dataclasses.field(default_factory=list)
    docker_not_oom: list[Evidence] = dataclasses.field(default_factory=list)
    budgets: list[tuple[Evidence, dict[str, Any]]] = dataclasses.field(default_factory=list)
    audit_oom_kills: int | None = None


def _audit_evidence(key: str, value: Any) -> Evidence:
    return Evidence.of(contract.AUDIT, None, f"{key} = {value}", "audit")


def _kernel(scan: ScanResult, bag: Bag) -> None:
    invoked_memcg = bool(scan.of_kind("kernel_memcg_trace"))
    for found in scan.signals:
        kind, fields = found.signal.kind, found.signal.fields
        scope = fields.get("scope")
        if kind == "kernel_killed":
            bag.victims.append({**fields, "evidence": found.evidence})
        if kind == "kernel_memcg_usage":
            bag.memcg_limits.append((found.evidence, int(fields["limit_bytes"])))
        if kind in _MEMCG_KINDS and (scope == "memcg" or kind == "kernel_task_in"):
            bag.memcg_oom.append(found.evidence)
        elif kind in _MEMCG_KINDS and scope == "global":
            bag.global_oom.append(found.evidence)
        elif kind == "kernel_killed" and scope == "unknown":
            # Pre-4.x bare "Killed process": a memcg kill if "Task in ... limit of" or a memcg
            # call trace came with it, else the global killer.
            target = bag.memcg_oom if invoked_memcg or scan.of_kind("kernel_task_in") else None
            (target if target is not None else bag.global_oom).append(found.evidence)
        elif kind == "kernel_no_killable" and invoked_memcg:
            bag.memcg_oom.append(found.evidence)


def _console(scan: ScanResult, bag: Bag) -> None:
    for found in scan.signals:
        kind, evidence = found.signal.kind, found.evidence
        if kind == "exit_code":
            name = signal_name(found.signal.fields["code"])
            if name in KILL_SIGNALS:
                bag.kills.append(evidence)
                bag.kill_signal = bag.kill_signal or name
        elif kind in ("shell_killed", "runner_shutdown", "canceled"):
            bag.kills.append(evidence)
        elif kind == "timeout":
            bag.timeouts.append(evidence)
        elif kind in ("xdist_crash", "xdist_node_down"):
            bag.crashes.append(evidence)
        elif kind in ("test_failed", "pytest_summary"):
            bag.test_failures.append(evidence)
        elif kind in ("trt_oom", "trt_build_failed"):
            bag.trt.append(evidence)
        elif kind == "trt_oom_warning":
            bag.trt_warnings.append(evidence)
    bag.cuda.extend(scan.cuda_ooms)


def _docker(state: DockerState, bag: Bag) -> None:
    by_kind = {e.kind: e for e in state.evidence}
    if state.oom_killed or state.oom_event:
        bag.docker_oom.extend(
            e for e in state.evidence if e.kind in ("docker_oomkilled", "docker_event_oom")
        )
    elif state.oom_killed is False:
        bag.docker_not_oom.append(by_kind["docker_oomkilled"])
    name = signal_name(state.exit_code)
    exit_evidence = by_kind.get("docker_exitcode") or by_kind.get("docker_event_die")
    if name in KILL_SIGNALS and exit_evidence is not None:
        bag.kills.append(exit_evidence)
        bag.kill_signal = bag.kill_signal or name
    if state.error and "docker_error" in by_kind:
        bag.infra.append(by_kind["docker_error"])


def _run(run: RunData, bag: Bag) -> None:
    if run.audit is not None:
        _audit(run.audit, bag)
    for event in run.events:
        _run_event(event, bag)


def _audit(audit: Audit, bag: Bag) -> None:
    verdict, reason = audit.verdict, audit.reason
    kills = audit.oom.kills
    bag.audit_oom_kills = kills
    if kills is not None and kills > 0:
        bag.memcg_oom.append(_audit_evidence("oom.kills", kills))
    if audit.exit.timed_out:
        bag.timeouts.append(_audit_evidence("exit.timed_out", True))
    name = audit.exit.signal
    if name in KILL_SIGNALS and not audit.exit.timed_out:
        bag.kills.append(_audit_evidence("exit.signal", f"{name} (code {audit.exit.code})"))
        bag.kill_signal = bag.kill_signal or str(name)
    if verdict == "ERROR":
        bag.infra.append(_audit_evidence("verdict", f"ERROR: {reason}"))
    if verdict == "PARITY_FAILED" or (audit.parity is not None and not audit.parity.passed):
        bag.parity.append(_audit_evidence("verdict", f"{verdict}: {reason}"))
    failed = audit.tests.failed + audit.tests.errors
    if verdict == "FAILED" or (verdict not in ("OOM_KILLED", "CUDA_OOM") and failed):
        bag.test_failures.append(_audit_evidence("verdict", f"{verdict}: {reason}"))
    if verdict == "PASSED":
        bag.passed.append(_audit_evidence("verdict", f"PASSED: {reason}"))


def _run_event(event: dict[str, Any], bag: Bag) -> None:
    kind = event.get("event")
    if kind == contract.GPU_BUDGET and isinstance(event.get("budget_bytes"), int):
        text = (
            f"gpu_budget device {event.get('device')}: mode={event.get('mode') or 'torch'} "
            f"budget_bytes={event.get('budget_bytes')} total_bytes={event.get('total_bytes')} "
            f"applied={event.get('applied')}"
            + (f" mps_limit_bytes={event['mps_limit_bytes']}" if "mps_limit_bytes" in event else "")
        )
        bag.budgets.append((Evidence.of(contract.EVENTS, None, text, "gpu_budget"), event))
    if kind == contract.CUDA_OOM and isinstance(event.get("message"), str):
        parsed = parse_cuda_oom(event["message"])
        if parsed is not None:
            evidence = Evidence.of(contract.EVENTS, None, event["message"], "cuda_oom")
            bag.cuda.append((evidence, parsed))
    if kind == contract.SESSION_FINISH and event.get("exitstatus") == 0:
        bag.passed.append(Evidence.of(contract.EVENTS, None, "pytest exitstatus 0", "session"))


def gather(inputs: Inputs) -> Bag:
    """Sort every parsed input into the bag."""
    bag = Bag()
    for scan in inputs.kernel + inputs.logs:
        _kernel(scan, bag)
    for scan in inputs.logs + inputs.kernel:
        _console(scan, bag)
    for state in inputs.docker:
        _docker(state, bag)
    for outcomes in inputs.tests:
        bag.test_failures.extend(outcomes.failures)
        bag.parity.extend(outcomes.parity_failures[:5])
        clean = not (outcomes.failures or outcomes.resource_errors or outcomes.parity_failures)
        if outcomes.tests and clean:
            text = f"{outcomes.tests} test(s), none failed"
            bag.passed.append(Evidence.of(outcomes.source, None, text, "tests"))
    if inputs.run is not None:
        _run(inputs.run, bag)
    return bag


def signal_name(returncode: int | None) -> str | None:
    """ "SIGKILL" for -9 (Popen) and for 137 (a shell's 128+9); None for a normal exit."""
    if returncode is None:
        return None
    number = -returncode if returncode < 0 else returncode - 128 if returncode > 128 else 0
    if number <= 0:
        return None
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"
