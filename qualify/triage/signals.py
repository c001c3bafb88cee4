"""Every input gathered into one bag of evidence, grouped by what it can prove."""

from __future__ import annotations

import re
import signal
from typing import Any

from harness import contract
from qualify import records
from qualify.evidence.cuda_oom import CudaOom, parse_cuda_oom
from qualify.evidence.docker_state import DockerState
from qualify.evidence.evidence_line import Evidence
from qualify.evidence.pytest_reports import TestOutcomes
from qualify.evidence.scan import ScanResult
from qualify.judge.ladder import CRASH_SIGNALS
from qualify.records import frozen_record
from qualify.rundir import Audit
from qualify.triage.analysis import RunData

KILL_SIGNALS = ("SIGKILL", "SIGTERM")


@records.record
class Inputs:
    """What the user gave (or the run directory held), already parsed."""

    run: RunData | None = None
    logs: list[ScanResult] = records.field(default_factory=list)
    kernel: list[ScanResult] = records.field(default_factory=list)
    docker: list[DockerState] = records.field(default_factory=list)
    tests: list[TestOutcomes] = records.field(default_factory=list)
    problems: list[str] = records.field(default_factory=list)
    limits: list[tuple[Evidence, int]] = records.field(default_factory=list)
    """Memory limits the inputs state (a pod's ``limits.memory``)."""
    platform: Evidence | None = None
    """The first line of a log's head that names a platform running work under a limit of its
    own (a container, a pod, a batch job, a cgroup)."""
    used_up: Evidence | None = None
    """The first line of a log's head that says all of the machine's memory was used."""
    capped: Evidence | None = None
    """The first line of a log's head that sets a memory cap on the work."""


@frozen_record
class GpuHit:
    """One line saying a GPU ran out of memory (or that an engine's memory budget did).

    ``kind``: "torch" (PyTorch's allocator message, parsed into ``oom``), "engine" (a runtime or
    library other than PyTorch's allocator: TensorRT, ONNX Runtime, cuBLAS...; ``fields`` from
    ``qualify.evidence.gpu_lines``) or "budget" (an engine's own memory budget: vLLM's
    gpu_memory_utilization, ONNX Runtime's gpu_mem_limit, TensorRT-LLM's KV-cache fraction).
    """

    evidence: Evidence
    kind: str
    oom: CudaOom | None = None
    fields: dict[str, Any] = records.field(default_factory=dict)


@records.record
class Bag:
    """Evidence grouped by what it proves."""

    memcg_oom: list[Evidence] = records.field(default_factory=list)
    global_oom: list[Evidence] = records.field(default_factory=list)
    global_stated: list[Evidence] = records.field(default_factory=list)
    """The kernel's lines whose own words scope the kill to the whole machine (a constraint of
    CONSTRAINT_NONE, "Out of memory: Killed process"), not a bare kill's scope inferred."""
    memcg_partial: list[Evidence] = records.field(default_factory=list)
    """A memcg OOM report cut before its kill line (usage at the limit, the memcg call trace)."""
    oom_invoked: list[Evidence] = records.field(default_factory=list)
    """"invoked oom-killer" lines (the scope is given by the lines after it)."""
    orchestrator_oom: list[Evidence] = records.field(default_factory=list)
    """Kubernetes OOMKilled, docker events' "container oom", Slurm's OUT_OF_MEMORY."""
    limits_told: list[Evidence] = records.field(default_factory=list)
    """Those of ``orchestrator_oom`` that are a person's sentence that a memory limit was
    crossed, with no kill told ("console kimai:reset-dev exceeds the memory limit")."""
    oomd: list[Evidence] = records.field(default_factory=list)
    node_oom: list[tuple[Evidence, dict[str, Any]]] = records.field(default_factory=list)
    """A process killed because the node ran low on memory, as any monitor words it (Ray's,
    earlyoom, an eviction), read by its parts (``qualify.evidence.oom_parts``)."""
    oom_kills: list[Evidence] = records.field(default_factory=list)
    """An OOM kill whose text does not say whose limit (a cgroup's or the node's)."""
    host_alloc: list[tuple[Evidence, dict[str, Any]]] = records.field(default_factory=list)
    """A host-memory allocation refused and reported by the program (MemoryError, bad_alloc,
    ENOMEM, a runtime's heap limit), with no kill."""
    victims: list[dict[str, Any]] = records.field(default_factory=list)
    memcg_limits: list[tuple[Evidence, int]] = records.field(default_factory=list)
    memcg_usage: list[tuple[Evidence, int, int]] = records.field(default_factory=list)
    """(evidence, usage, limit) of each "memory: usage U, limit L" line."""
    stated_limits: list[tuple[Evidence, int | None, int]] = records.field(default_factory=list)
    """(evidence, usage or None, limit) a scheduler's or platform's kill line states
    (``job killed: mem 38427376kb exceeded limit 33554432kb``, ``(2528 > 1126)``)."""
    gpu: list[GpuHit] = records.field(default_factory=list)
    """GPU out-of-memory lines that were not handled, in file order."""
    gpu_handled: list[Evidence] = records.field(default_factory=list)
    """GPU out-of-memory lines the program handled (a retry, or a passing summary after it)."""
    trt_context: list[Evidence] = records.field(default_factory=list)
    """TensorRT's "Engine building failed" (what followed its OOM)."""
    trt_warnings: list[Evidence] = records.field(default_factory=list)
    interrupted: list[Evidence] = records.field(default_factory=list)
    """qualify's own record that it was interrupted (a signal to qualify) and stopped the E2E."""
    kills: list[Evidence] = records.field(default_factory=list)
    kill_signal: str | None = None
    killed: list[dict[str, Any]] = records.field(default_factory=list)
    """What a shell or a compiler said was killed (pid and command when given)."""
    timeouts: list[Evidence] = records.field(default_factory=list)
    crashes: list[Evidence] = records.field(default_factory=list)
    test_failures: list[Evidence] = records.field(default_factory=list)
    test_error_lines: list[Evidence] = records.field(default_factory=list)
    """pytest "E   AssertionError" lines (a failure with no summary line)."""
    parity: list[Evidence] = records.field(default_factory=list)
    infra: list[Evidence] = records.field(default_factory=list)
    passed: list[Evidence] = records.field(default_factory=list)
    docker_oom: list[Evidence] = records.field(default_factory=list)
    docker_not_oom: list[Evidence] = records.field(default_factory=list)
    budgets: list[tuple[Evidence, dict[str, Any]]] = records.field(default_factory=list)
    audit_oom_kills: int | None = None
    platform: Evidence | None = None
    """A line naming a platform that runs work under a limit of its own (``Inputs.platform``),
    or the docker state given: whose limit an unscoped OOM kill was."""
    used_up: Evidence | None = None
    """A line saying all of the machine's memory was used (``Inputs.used_up``): what a kill that
    says nothing of its cause was for."""
    capped: Evidence | None = None
    """A line setting a memory cap on the work (``Inputs.capped``): whose cap a kill that says
    nothing of its cause most likely hit."""
    exits: list[Evidence] = records.field(default_factory=list)
    """Non-zero exits that were not by a signal (an error exit: it says that, not why)."""
    exceptions: list[Evidence] = records.field(default_factory=list)
    """Exceptions printed (``RuntimeError: ...``) that name no memory and no test."""
    noted: list[Evidence] = records.field(default_factory=list)
    """Lines that say memory ran out or ran low but report no event (a title, a cause offered
    as one of several, a warning, low memory with no kill): shown when nothing decides."""

    @property
    def cuda(self) -> list[tuple[Evidence, CudaOom]]:
        """PyTorch's allocator messages (CUDA, HIP, XPU) among the GPU hits."""
        return [(hit.evidence, hit.oom) for hit in self.gpu if hit.oom is not None]

    @property
    def host_oom(self) -> list[Evidence]:
        """Every line proving a kernel, cgroup or orchestrator OOM kill."""
        nodes = [evidence for evidence, _ in self.node_oom]
        return (
            self.memcg_oom + self.global_oom + self.orchestrator_oom + self.oomd + nodes
            + self.oom_kills
        )  # fmt: skip


def _audit_evidence(key: str, value: Any) -> Evidence:
    return Evidence.of(contract.AUDIT, None, f"{key} = {value}", "audit")


_OOM_FRAME = re.compile(r"mem_cgroup_(?:oom|out_of_memory)")
_MEMCG_MARKS = ("kernel_memcg_trace", "kernel_task_in", "kernel_memcg_usage")


def _kernel(scan: ScanResult, bag: Bag) -> None:
    """Kernel reports. Before 4.19 "Kill process P ... or sacrifice child" (the selection) and
    "Killed process P" (the kill) are one event: the bare kill takes the scope of the selection
    before it, else memcg when the report shows a memcg (trace, "Task in", usage), else global."""
    memcg_marked = bool(scan.of_kind(*_MEMCG_MARKS))
    invoked = bool(scan.of_kind("kernel_invoked", "kernel_tasks"))
    selected: str | None = None
    for found in scan.signals:
        kind, fields, evidence = found.signal.kind, found.signal.fields, found.evidence
        scope = fields.get("scope")
        if kind == "kernel_select":
            selected = scope
        elif kind in ("kernel_killed", "kernel_no_killable") and scope in (None, "unknown"):
            scope = selected or ("memcg" if memcg_marked else "global")
        elif kind == "kernel_task_in":
            scope = "memcg"
        if kind == "kernel_killed":
            bag.victims.append({**fields, "scope": scope, "evidence": evidence})
        if kind == "kernel_memcg_usage":
            usage, limit = int(fields["usage_bytes"]), int(fields["limit_bytes"])
            bag.memcg_limits.append((evidence, limit))
            bag.memcg_usage.append((evidence, usage, limit))
            bag.memcg_partial.append(evidence)
        elif kind == "kernel_memcg_trace" and (invoked or _OOM_FRAME.search(evidence.text)):
            # A charge frame alone is any allocation's stack; with the OOM killer invoked, or
            # mem_cgroup_oom / mem_cgroup_out_of_memory, it is a memcg OOM.
            bag.memcg_partial.append(evidence)
        elif kind in ("kernel_invoked", "kernel_tasks"):  # the killer ran; no kill line yet
            bag.oom_invoked.append(evidence)
        elif kind == "oomd_kill":
            bag.oomd.append(evidence)
        elif kind.startswith("kernel_") and scope in ("memcg", "global"):
            (bag.memcg_oom if scope == "memcg" else bag.global_oom).append(evidence)
            if fields.get("scope") == "global":
                bag.global_stated.append(evidence)


_GPU_KINDS = {"trt_oom": "engine", "gpu_oom": "engine", "gpu_budget": "budget"}


def _limit_kill(bag: Bag, evidence: Evidence, fields: dict[str, Any]) -> None:
    """A kill for a memory limit, with the limit and the usage when its line states them."""
    bag.orchestrator_oom.append(evidence)
    if fields.get("told"):
        bag.limits_told.append(evidence)
    if fields.get("limit_bytes"):
        used = fields.get("allocated_bytes")
        bag.stated_limits.append((evidence, used, int(fields["limit_bytes"])))


_FAILURE_KINDS = ("test_failed", "pytest_summary", "xdist_crash")


def _console(scan: ScanResult, bag: Bag) -> None:
    gpu: list[GpuHit] = [GpuHit(e, "torch", oom=oom) for e, oom in scan.cuda_ooms]
    for found in scan.signals:
        kind, evidence, fields = found.signal.kind, found.evidence, found.signal.fields
        if kind == "exit_code":
            name = signal_name(fields["code"])
            if name in KILL_SIGNALS:
                bag.kills.append(evidence)
                bag.kill_signal = bag.kill_signal or name
            elif name in CRASH_SIGNALS:
                bag.crashes.append(evidence)
            elif name is None and fields["code"] != 0:
                bag.exits.append(evidence)
        elif kind == "shell_killed":
            bag.kills.append(evidence)
            bag.kill_signal = bag.kill_signal or "SIGKILL"
            bag.killed.append(dict(fields))
        elif kind in (
            "runner_shutdown", "canceled", "agent_lost", "probe_kill", "terminated_externally"
        ):  # fmt: skip
            bag.kills.append(evidence)
        elif kind == "timeout" and not fields.get("pid"):  # (one naming a pid: see below)
            bag.timeouts.append(evidence)
        elif kind in ("xdist_crash", "xdist_node_down", "shell_crash"):
            bag.crashes.append(evidence)
        elif kind in ("test_failed", "pytest_summary"):
            bag.test_failures.append(evidence)
        elif kind == "test_error_line":
            bag.test_error_lines.append(evidence)
        elif kind in _GPU_KINDS:
            gpu.append(GpuHit(evidence, _GPU_KINDS[kind], fields=dict(fields)))
        elif kind in ("gpu_oom_handled", "oom_handled"):
            bag.gpu_handled.append(evidence)
        elif kind == "limit_oom_kill":
            _limit_kill(bag, evidence, fields)
        elif kind == "node_oom_kill":
            bag.node_oom.append((evidence, dict(fields)))
        elif kind == "oom_kill":
            bag.oom_kills.append(evidence)
        elif kind == "host_alloc_failed":
            bag.host_alloc.append((evidence, dict(fields)))
        elif kind == "trt_build_failed":
            bag.trt_context.append(evidence)
        elif kind == "trt_oom_warning":
            bag.trt_warnings.append(evidence)
        elif kind == "exception_line":
            bag.exceptions.append(evidence)
        elif kind in ("memory_noted", "memory_low", "limit_noted"):
            bag.noted.append(evidence)
        elif kind in ("k8s_oomkilled", "docker_event_oom", "slurm_oom"):
            bag.orchestrator_oom.append(evidence)
    bag.timeouts.extend(_timeouts_a_kill_ended(scan, bag))
    gpu.sort(key=lambda hit: hit.evidence.line or 0)
    _handled(scan, _tensorrt_context(scan, gpu), bag)


_FIGURES = frozenset({"requested_bytes", "total_bytes", "free_bytes", "limit_bytes"})


def _fullest_first(gpu: list[GpuHit]) -> None:
    """The allocator's full message first when the first hit says only that memory ran out (an
    issue's title "RuntimeError: CUDA out of memory" before the message it pasted, with the
    device's total, free and reserved figures): the same refusal, told with what decides it."""
    if not gpu or gpu[0].oom is not None or _FIGURES & gpu[0].fields.keys():
        return
    full = next((at for at, hit in enumerate(gpu) if hit.oom is not None), None)
    if full is not None:
        gpu.insert(0, gpu.pop(full))


def _timeouts_a_kill_ended(scan: ScanResult, bag: Bag) -> list[Evidence]:
    """The timeouts that name their process's pid and that a kill of that pid follows
    ("WORKER TIMEOUT (pid:418)", then "Worker (pid:418) was sent SIGKILL!"): the kill enforces
    the timeout, so the run's time ran out. A kill of another pid is not its end."""
    ended = []
    for found in scan.of_kind("timeout"):
        pid, timed = found.signal.fields.get("pid"), found.evidence
        if not pid:
            continue
        own = re.compile(rf"\bpid\W{{0,2}}{pid}\b", re.IGNORECASE)
        if any(
            kill.source == timed.source and (kill.line or 0) > (timed.line or 0)
            and own.search(kill.text)
            for kill in bag.kills
        ):  # fmt: skip
            ended.append(timed)
    return ended


_TRT_ENGINES = ("tensorrt", "onnxruntime-tensorrt")


def _tensorrt_context(scan: ScanResult, gpu: list[GpuHit]) -> list[GpuHit]:
    """TensorRT prints one OOM over several lines: "Error Code 1: Cuda Runtime (out of memory)"
    names no stage, the "Error Code 2" line after it does (executionContext, safeDeserialize,
    globWriter), and the size is in the "Requested amount" warning between them. Each TensorRT
    hit of the log gets the stage of the first that names one, and the size of a warning within
    three lines of it."""
    trt = [hit for hit in gpu if hit.fields.get("engine") in _TRT_ENGINES]
    stage = next((hit.fields["stage"] for hit in trt if hit.fields.get("stage")), None)
    warnings = [
        (s.evidence.line or 0, s.signal.fields["requested_bytes"])
        for s in scan.of_kind("trt_oom_warning")
    ]
    out = []
    for found in gpu:
        hit = found
        if hit.fields.get("engine") in _TRT_ENGINES:
            fields = dict(hit.fields)
            if stage and not fields.get("stage"):
                fields["stage"] = stage
            line = hit.evidence.line or 0
            near = [size for at, size in warnings if abs(at - line) <= 3]
            if near and "requested_bytes" not in fields:
                fields["requested_bytes"] = near[0]
            hit = records.replace(hit, fields=fields)
        out.append(hit)
    return out


def _handled(scan: ScanResult, gpu: list[GpuHit], bag: Bag) -> None:
    """A GPU OOM followed in the same log by a passing pytest summary (and by no failure) was
    caught by the program (a test of the OOM path, a retry): it is not what ended the run."""
    # (a run's summary field stating success, "Status: successful", passes as a pytest summary)
    passes = [s.evidence.line or 0 for s in scan.of_kind("pytest_passed", "run_passed")]
    failures = [s.evidence.line or 0 for s in scan.of_kind(*_FAILURE_KINDS)]
    last_pass = max(passes, default=0)
    for hit in gpu:
        line = hit.evidence.line or 0
        if line < last_pass and not any(line <= failure for failure in failures):
            bag.gpu_handled.append(hit.evidence)
        else:
            bag.gpu.append(hit)
    if passes and not failures:
        last = scan.of_kind("pytest_passed", "run_passed")[-1]
        bag.passed.append(last.evidence)


def _docker(state: DockerState, bag: Bag) -> None:
    by_kind = {e.kind: e for e in state.evidence}
    if state.oom_killed or state.oom_event:
        bag.docker_oom.extend(
            e for e in state.evidence if e.kind in ("docker_oomkilled", "docker_event_oom")
        )
    elif state.oom_killed is False:
        bag.docker_not_oom.append(by_kind["docker_oomkilled"])
    if state.memory_bytes is not None and "docker_memory" in by_kind:
        bag.memcg_limits.append((by_kind["docker_memory"], state.memory_bytes))
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
    if audit.interrupted:
        bag.interrupted.append(_audit_evidence("interrupted", audit.interrupted))
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
            bag.gpu.append(GpuHit(evidence, "torch", oom=parsed))
    if kind == contract.SESSION_FINISH and event.get("exitstatus") == 0:
        bag.passed.append(Evidence.of(contract.EVENTS, None, "pytest exitstatus 0", "session"))


def gather(inputs: Inputs) -> Bag:
    """Sort every parsed input into the bag."""
    bag = Bag()
    bag.memcg_limits.extend(inputs.limits)
    bag.platform = inputs.platform
    bag.used_up = inputs.used_up
    bag.capped = inputs.capped
    for scan in inputs.kernel + inputs.logs:
        _kernel(scan, bag)
    for scan in inputs.logs + inputs.kernel:
        _console(scan, bag)
    _fullest_first(bag.gpu)
    for state in inputs.docker:
        _docker(state, bag)
    for outcomes in inputs.tests:
        if outcomes.qualify and inputs.run is None:
            _qualify_junit(outcomes, bag)
        bag.test_failures.extend(outcomes.failures)
        bag.parity.extend(outcomes.parity_failures[:5])
        clean = not (outcomes.failures or outcomes.resource_errors or outcomes.parity_failures)
        if outcomes.tests and clean:
            text = f"{outcomes.tests} test(s), none failed"
            bag.passed.append(Evidence.of(outcomes.source, None, text, "tests"))
    if inputs.run is not None:
        _run(inputs.run, bag)
    return bag


def _qualify_junit(outcomes: TestOutcomes, bag: Bag) -> None:
    """qualify's own JUnit without its run directory: the verdict its properties record, and
    the resource errors its testcases carry, as the audit would give them."""
    properties = outcomes.qualify
    verdict, reason = properties.get("qualify.verdict"), properties.get("qualify.reason", "")
    if not verdict:
        return

    def said(key: str, value: str) -> Evidence:
        return Evidence.of(outcomes.source, None, f"{key} = {value}", "junit_property")

    stated = said("qualify.verdict", f"{verdict}: {reason}")
    limit = properties.get("qualify.limit.memory_bytes", "")
    if verdict == "OOM_KILLED":
        bag.memcg_oom.append(stated)
        if limit.isdigit():
            bag.memcg_limits.append((said("qualify.limit.memory_bytes", limit), int(limit)))
    elif verdict == "CUDA_OOM":
        for evidence in outcomes.resource_errors or [stated]:
            parsed = parse_cuda_oom(evidence.text)
            hit = GpuHit(evidence, "torch", oom=parsed) if parsed else None
            bag.gpu.append(hit or GpuHit(evidence, "engine", fields={"engine": "the GPU runtime"}))
    elif verdict == "TIMEOUT":
        bag.timeouts.append(stated)
    elif verdict == "KILLED":
        bag.kills.append(stated)
    elif verdict == "ERROR":
        bag.infra.append(stated)
    elif verdict == "PARITY_FAILED":
        bag.parity.append(stated)
    elif verdict == "PASSED":
        bag.passed.append(stated)


def signal_name(returncode: int | None) -> str | None:
    """ "SIGKILL" for -9 (Popen) and for 137 (a shell's 128+9); None for a normal exit."""
    if returncode is None:
        return None
    number = -returncode if returncode < 0 else returncode - 128 if returncode > 128 else 0
    if not 0 < number < 128:
        return None  # not a signal: Windows' NTSTATUS codes (3221225477 is 0xC0000005)
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"
