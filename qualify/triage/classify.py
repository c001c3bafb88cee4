"""One decision over the bag of evidence: the class, the lines that decided it, conflicts.

The order is the verdict ladder of ``qualify.judge.ladder`` (most fundamental cause first): the
toolkit failed, the run timed out, a host OOM (cgroup, then global), a GPU OOM, a kill signal
with no OOM evidence, a crashed pytest-xdist worker with no cause, failed tests, a failed parity
gate, a pass. Disagreements between sources are kept as conflicts, never dropped.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from qualify.evidence.cuda_oom import CudaOom
from qualify.evidence.evidence_line import Evidence
from qualify.judge.gpu import GpuEvidence
from qualify.judge.ladder import LADDER, Cause
from qualify.records import frozen_record
from qualify.sizes import format_bytes
from qualify.triage.model import Finding, TriageClass
from qualify.triage.signals import Bag, GpuHit

HIGH, MEDIUM, LOW = "high", "medium", "low"
"""Confidence: the evidence states the cause / the class is inferred from a message that lacks
figures / the evidence is indirect (a report cut short, failure lines without a summary)."""


@frozen_record
class Decision:
    """The class, a one-line summary, the lines that decided it, and how sure it is."""

    triage_class: TriageClass
    summary: str
    evidence: tuple[Evidence, ...] = ()
    confidence: str = HIGH
    gaps: tuple[str, ...] = ()
    """What the deciding message does not give (said, never guessed)."""


def cuda_class(
    oom: CudaOom, budget_bytes: int | None, mps_limit_bytes: int | None = None
) -> TriageClass:
    """Budget, fragmentation or capacity, in the allocator's order (``CudaOom.kind``); a harness
    budget below the device counts as a cap, and so does an MPS limit the process's usage plus
    the request crossed."""
    kind = oom.kind
    if kind == "budget":
        return TriageClass.CUDA_OOM_BUDGET
    room = oom.free_bytes is None or oom.free_bytes >= oom.requested_bytes
    if budget_bytes is not None and room:
        return TriageClass.CUDA_OOM_BUDGET
    if oom.crosses(mps_limit_bytes):
        return TriageClass.CUDA_OOM_BUDGET
    if kind == "fragmentation":
        return TriageClass.CUDA_OOM_FRAGMENTATION
    return TriageClass.CUDA_OOM_CAPACITY


def harness_budget(bag: Bag) -> int | None:
    """The harness's GPU budget when it was below the device's total."""
    for _, event in bag.budgets:
        budget, total = event.get("budget_bytes"), event.get("total_bytes")
        if isinstance(budget, int) and (not isinstance(total, int) or budget < total):
            return budget
    return None


def mps_limit(bag: Bag) -> int | None:
    """The MPS pinned limit below a device's total that the harness recorded (mps mode)."""
    return GpuEvidence(budgets=tuple(event for _, event in bag.budgets)).mps_limit_bytes


def _cuda_summary(oom: CudaOom, triage_class: TriageClass) -> str:
    parts = [f"requested {format_bytes(oom.requested_bytes)}"]
    if oom.free_bytes is not None:
        parts.append(f"free {format_bytes(oom.free_bytes)} of {format_bytes(oom.total_bytes)}")
    unallocated = oom.unallocated_bytes
    if unallocated is not None:
        parts.append(f"reserved-unallocated {format_bytes(unallocated)}")
    if oom.allowed_bytes is not None:
        parts.append(f"allowed {format_bytes(oom.allowed_bytes)}")
    what = triage_class.value.removeprefix("CUDA_OOM_").lower()
    return f"{oom.backend} out of memory ({what}): " + ", ".join(parts)


def _toolkit(bag: Bag) -> Decision | None:
    if bag.infra:
        summary = "the toolkit, sandbox or container failed"
        return Decision(TriageClass.INFRA_ERROR, summary, tuple(bag.infra))
    return None


def _timeout(bag: Bag) -> Decision | None:
    if not bag.timeouts or _after_a_memory_kill(bag):
        return None
    summary = "the run exceeded its time limit"
    if all("collective operation timeout" in e.text.lower() for e in bag.timeouts):
        summary = "a collective operation timed out (NCCL's watchdog ended the process)"
    # The crash the timeout caused (an abort from the watchdog's exception), next to it.
    near = [
        crash for crash in bag.crashes
        if crash.source == bag.timeouts[0].source and crash.line is not None
        and any(t.line is not None and abs(t.line - crash.line) <= 3 for t in bag.timeouts)
    ]  # fmt: skip
    return Decision(TriageClass.TIMEOUT, summary, tuple(bag.timeouts) + tuple(near[:2]))


def _after_a_memory_kill(bag: Bag) -> bool:
    """Whether every time limit's line comes just after a kill for memory in its log (within
    three lines: Slurm's "srun: error: pcc002: task 0: Out Of Memory", then Intel MPI's "job
    ending due to startup timeout"): the end that came first is the cause, the time limit its
    consequence."""
    kills = [
        (e.source, e.line)
        for e in (*bag.memcg_oom, *bag.global_oom, *bag.orchestrator_oom, *bag.oom_kills,
                  *bag.oomd, *(e for e, _ in bag.node_oom))
        if e.line is not None
    ]  # fmt: skip
    return bool(kills) and all(
        t.line is not None
        and any(source == t.source and 0 < t.line - line <= 3 for source, line in kills)
        for t in bag.timeouts
    )


def _host_oom(bag: Bag) -> Decision | None:
    cgroup = bag.memcg_oom + bag.docker_oom + bag.orchestrator_oom
    if bag.global_stated and not (bag.memcg_oom or bag.docker_oom):
        # The kernel's own report scopes the kill to the whole machine (CONSTRAINT_NONE, "Out of
        # memory: Killed process"): a scheduler's or a person's words that a limit was hit do
        # not override it (Umami's "running inside the Umami db container ... The Linux OOM
        # Killer terminated the process", above dmesg's "constraint=CONSTRAINT_NONE").
        cgroup = []
    if bag.host_alloc and not bag.kills and all(e in bag.limits_told for e in cgroup):
        # A person's words that a limit was crossed, no kill told anywhere, beside the program's
        # own refusal (Kimai's "console kimai:reset-dev exceeds the memory limit", over PHP's
        # "Allowed memory size of 134217728 bytes exhausted"): the limit was the program's own.
        cgroup = []
    if cgroup:
        usage = [e for e, _, _ in bag.memcg_usage[:1] if e not in cgroup[:8]]
        evidence = tuple(cgroup[:8] + usage)
        if bag.memcg_oom or bag.docker_oom:
            summary = "the memory cgroup's cap was hit (OOM kill)"
        else:
            summary = "the container or job hit its memory limit (OOM kill, as its scheduler says)"
        return Decision(TriageClass.CGROUP_OOM, summary, evidence)
    if bag.global_oom:
        summary = "the host ran out of memory (global OOM killer, no cgroup cap hit)"
        return Decision(TriageClass.GLOBAL_OOM, summary, tuple(bag.global_oom[:8]))
    if bag.oomd:
        summary = (
            "systemd-oomd killed the job's cgroup under memory pressure (the host's memory, "
            "not a cgroup cap)"
        )
        return Decision(TriageClass.GLOBAL_OOM, summary, tuple(bag.oomd[:8]))
    if bag.node_oom:
        named = {
            str(fields.get("ecosystem")) for _, fields in bag.node_oom if "ecosystem" in fields
        }
        who = " or ".join(sorted(named)) if named else "a memory monitor"
        summary = (
            f"{who} killed the job because the node ran low on memory (the host's memory, "
            "not a cgroup cap)"
        )
        # The other lines that say the same kill, unscoped, next to one of these (systemd's
        # "Failed with result 'oom-kill'" after "killed by the OOM killer").
        said = [e for e, _ in bag.node_oom[:8]]
        near = [
            k for k in bag.oom_kills
            if any(k.source == e.source and abs((k.line or 0) - (e.line or 0)) <= 3
                   for e in said)
        ]  # fmt: skip
        return Decision(TriageClass.GLOBAL_OOM, summary, (*said, *near[:4]))
    if bag.memcg_partial:
        summary = (
            "a memory cgroup's OOM report, cut before its kill line: the cgroup hit its limit "
            "(what was killed is not in the text)"
        )
        evidence = tuple((bag.oom_invoked + bag.memcg_partial)[:8])
        return Decision(TriageClass.CGROUP_OOM, summary, evidence, LOW)
    if bag.oom_invoked and (bag.capped is not None or bag.platform is not None):
        # Cut before its scope, but the input sets a memory cap on the work or runs it under a
        # platform's limit (runc's "a test that specifies 10m container cgroup limit"): that
        # limit's OOM kill, as an unscoped kill is read below.
        summary = (
            "the kernel's OOM killer ran; the report was cut before its scope and victim, and the "
            "input runs the work under a memory limit (a container, pod, job or cgroup): that "
            "limit's OOM kill, most likely"
        )
        limit = bag.capped or bag.platform
        evidence = (*bag.oom_invoked[:8], *([limit] if limit else []))
        return Decision(TriageClass.CGROUP_OOM, summary, evidence, LOW)
    if bag.oom_invoked:
        summary = (
            "the kernel's OOM killer ran; the report was cut before its scope and victim "
            "(no cgroup limit shown: taken as the host's memory)"
        )
        # The input's own sentence that the machine's memory was all used (collectd's "takes
        # all memory:" above the pasted report) is what the report shows: cited with it.
        shown = (*bag.oom_invoked[:8], *([bag.used_up] if bag.used_up is not None else []))
        return Decision(TriageClass.GLOBAL_OOM, summary, shown, LOW)
    if bag.oom_kills:
        # The line does not say whose limit was hit: a platform that runs work under a limit of
        # its own, named anywhere in the input (a pod, a container, a batch job), or qualify's
        # own run (always capped), is taken as whose; with none, the host's.
        capped = bag.platform is not None or bag.docker_oom or bag.audit_oom_kills is not None
        if capped:
            summary = (
                "an OOM kill; the line does not say whose limit was hit, and the input runs the "
                "work under a platform's limit (a container, pod, job or cgroup)"
            )
            evidence = (*bag.oom_kills[:8], *([bag.platform] if bag.platform else []))
            return Decision(TriageClass.CGROUP_OOM, summary, evidence, LOW)
        summary = (
            "an OOM kill; nothing in the input names a container, pod, job or cgroup limit: "
            "taken as the host's memory"
        )
        return Decision(TriageClass.GLOBAL_OOM, summary, tuple(bag.oom_kills[:8]), LOW)
    if bag.host_alloc and not bag.gpu:
        return _host_alloc(bag)
    return None


_REFUSAL_FIGURES = ("requested_bytes", "limit_bytes", "free_bytes")


def _host_alloc(bag: Bag) -> Decision:
    # The refusal that states the most of its figures speaks for the others (a JVM's "Native
    # memory allocation (malloc) failed to allocate 215744 bytes" after its bare
    # "java.lang.OutOfMemoryError" lines); the first of those that state as many.
    first = max(
        range(len(bag.host_alloc)),
        key=lambda n: (sum(k in bag.host_alloc[n][1] for k in _REFUSAL_FIGURES), -n),
    )
    evidence, fields = bag.host_alloc[first]
    who = f"{fields['ecosystem']}: " if "ecosystem" in fields else ""
    summary = f"{who}an allocation of host memory was refused (nothing was killed)"
    if fields.get("implausible"):
        summary += (
            "; the size asked for is one no machine has (an overflow in the request: a bug, "
            "not memory running out)"
        )
    numbers = []
    if "requested_bytes" in fields:
        numbers.append(f"requested {format_bytes(fields['requested_bytes'])}")
    if "limit_bytes" in fields:
        numbers.append(f"limit {format_bytes(fields['limit_bytes'])}")
    if "free_bytes" in fields:
        numbers.append(f"free {format_bytes(fields['free_bytes'])}")
    if numbers:
        summary += ": " + ", ".join(numbers)
    gaps = ("whose limit refused it: a cgroup's, a container's, the host's or a runtime's heap",)
    more = tuple(e for n, (e, _) in enumerate(bag.host_alloc) if n != first)[:3]
    return Decision(TriageClass.HOST_ALLOC_FAILED, summary, (evidence, *more), MEDIUM, gaps)


def _gpu_oom(bag: Bag) -> Decision | None:
    if not bag.gpu:
        return None
    hit = bag.gpu[0]
    if hit.oom is not None:
        oom = hit.oom
        triage_class = cuda_class(oom, harness_budget(bag), mps_limit(bag))
        extra = tuple(e for e, _ in bag.budgets) if triage_class.name.endswith("BUDGET") else ()
        gaps = tuple(oom.gaps())
        confidence = HIGH if oom.free_bytes is not None else MEDIUM
        summary = _cuda_summary(oom, triage_class)
        return Decision(triage_class, summary, (hit.evidence, *extra), confidence, gaps)
    if hit.kind == "budget":
        return _engine_budget(hit, bag)
    return _engine_oom(hit, bag)


def _engine_name(fields: dict[str, Any]) -> str:
    return _ENGINES.get(str(fields.get("engine")), str(fields.get("engine") or "the GPU runtime"))


_ENGINES = {
    "tensorrt": "TensorRT",
    "onnxruntime-tensorrt": "ONNX Runtime's TensorRT execution provider",
    "onnxruntime": "ONNX Runtime",
    "vllm": "vLLM",
    "tensorrt-llm": "TensorRT-LLM",
    "pytorch": "PyTorch",
    "cuda": "a CUDA library",
    "tensorflow": "TensorFlow",
    "numba": "Numba",
    "xla": "XLA",
    "hip": "HIP",
    "level-zero": "Level Zero",
    "nnabla": "nnabla",
}


def _engine_budget(hit: GpuHit, bag: Bag) -> Decision:
    fields = hit.fields
    summary = f"{_engine_name(fields)}'s memory budget ran out: {fields.get('what')}"
    if fields.get("parts"):
        who = f"{fields['ecosystem']}: " if "ecosystem" in fields else ""
        device = fields.get("device", "an accelerator")
        summary = f"{who}an allocation on {device} was refused by a per-process limit"
    if "limit_bytes" in fields:
        summary += f" (limit {format_bytes(fields['limit_bytes'])})"
    numbers = []
    if "max_model_len" in fields:
        numbers.append(f"max_model_len {fields['max_model_len']}")
    if "kv_tokens" in fields:
        numbers.append(f"KV cache holds {fields['kv_tokens']} tokens")
    if "needed_bytes" in fields:
        numbers.append(f"needs {format_bytes(fields['needed_bytes'])} of KV cache")
    if "available_bytes" in fields:
        numbers.append(f"available {format_bytes(fields['available_bytes'])}")
    if "requested_bytes" in fields:
        numbers.append(f"requested {format_bytes(fields['requested_bytes'])}")
    if numbers:
        summary += " (" + ", ".join(numbers) + ")"
    evidence = _same_engine(hit, bag)
    return Decision(TriageClass.CUDA_OOM_BUDGET, summary, evidence)


def _engine_oom(hit: GpuHit, bag: Bag) -> Decision:
    fields = hit.fields
    name = _engine_name(fields)
    stage = fields.get("stage")
    where = {"builder": " while building an engine", "runtime": " at inference (not the builder)"}
    api = fields.get("api")
    summary = f"{name} ran out of GPU memory{where.get(str(stage), '')}"
    if fields.get("parts"):  # read by its parts: name only what the line shows
        who = f"{fields['ecosystem']}: " if "ecosystem" in fields else ""
        summary = f"{who}an allocation on {fields.get('device', 'an accelerator')} was refused"
        if fields.get("implausible"):
            summary += (
                "; the size asked for is one no device has (an overflow in the request: a bug, "
                "not memory running out)"
            )
    if api:
        summary += f" ({api})"
    if fields.get("fragmentation") and "reserved_bytes" in fields and "allocated_bytes" in fields:
        # the allocator's pool stated, reserved and in use: what it held unallocated
        summary += (
            f"; its allocator held {format_bytes(fields['reserved_bytes'])} reserved, "
            f"{format_bytes(fields['allocated_bytes'])} of it in use: the rest would have held "
            "the request (fragmentation)"
        )
    numbers = []
    if "requested_bytes" in fields:
        numbers.append(f"requested {format_bytes(fields['requested_bytes'])}")
    if "free_bytes" in fields:
        total = fields.get("total_bytes")
        of = f" of {format_bytes(total)}" if total is not None else ""
        numbers.append(f"free {format_bytes(fields['free_bytes'])}{of}")
    if "component" in fields:
        numbers.append(f"creating {fields['component']}")
    if numbers:
        summary += ": " + ", ".join(numbers)
    gaps = ["the device's free and total memory"] if "free_bytes" not in fields else []
    if not fields.get("fragmentation"):
        gaps.append(
            "any per-process cap or allocator cache (the message cannot show fragmentation)"
        )
    confidence = HIGH if "free_bytes" in fields else MEDIUM
    evidence = _same_engine(hit, bag) + tuple(bag.trt_context[:2])
    triage_class = (
        TriageClass.CUDA_OOM_FRAGMENTATION
        if fields.get("fragmentation")
        else TriageClass.CUDA_OOM_CAPACITY
    )
    return Decision(triage_class, summary, evidence, confidence, tuple(gaps))


def _same_engine(hit: GpuHit, bag: Bag) -> tuple[Evidence, ...]:
    """The first hit and up to four more of the same engine or of the same message (the
    repeated lines of one OOM; the lines of one report within three of the first)."""
    engine, line = hit.fields.get("engine"), hit.evidence.line

    def same(other: GpuHit) -> bool:
        if other.fields.get("engine") == engine:
            return True
        near = other.evidence.line
        return (
            other.evidence.source == hit.evidence.source and line is not None
            and near is not None and abs(near - line) <= 3
        )  # fmt: skip

    more = [h.evidence for h in bag.gpu[1:] if same(h)]
    return (hit.evidence, *more[:4])


def _interrupted(bag: Bag) -> Decision | None:
    if not bag.interrupted:
        return None
    summary = (
        "qualify itself was interrupted and stopped the E2E (the job was canceled or timed out "
        "around it); nothing in the run decided its outcome"
    )
    return Decision(TriageClass.EXTERNAL_KILL, summary, tuple(bag.interrupted))


_NOT_KILLS = frozenset({"agent_lost", "probe_kill", "runner_shutdown", "canceled"})
"""Ends from outside that are not a kill for a resource (an agent gone, a probe, a shutdown)."""


def _signal(bag: Bag) -> Decision | None:
    if not bag.kills:
        return None
    kinds = {e.kind for e in bag.kills}
    plain = bag.kill_signal in (None, "SIGKILL") and not kinds & _NOT_KILLS
    if plain and bag.capped is not None:
        # A kill that says nothing of its cause, under a memory cap the input sets on the work
        # (docker's --memory, Slurm's --mem): that cap's OOM kill, most likely.
        summary = (
            "a process was killed (SIGKILL) under a memory cap the input sets on the work: the "
            "cap's OOM kill, most likely (no kernel report or exit state in the text confirms it)"
        )
        evidence = (*bag.kills[:8], bag.capped, *([bag.used_up] if bag.used_up else []))
        return Decision(TriageClass.CGROUP_OOM, summary, evidence, MEDIUM)
    if bag.used_up is not None and plain:
        # A kill that says nothing of its cause, and the input says the machine's memory was all
        # used: the OOM killer's, the container's or job's when a platform is named.
        evidence = (*bag.kills[:8], bag.used_up, *([bag.platform] if bag.platform else []))
        if bag.platform is not None:
            summary = (
                "a process was killed (SIGKILL) as the input says its memory was all used or its "
                "use excessive, under a platform's limit (a container, pod, job or cgroup): its "
                "OOM kill, most likely (no kernel report or exit state in the text confirms it)"
            )
            return Decision(TriageClass.CGROUP_OOM, summary, evidence, MEDIUM)
        summary = (
            "a process was killed (SIGKILL) as the input says the machine's memory was all used or "
            "its use excessive: the kernel's OOM killer, most likely (no kernel report in the "
            "text confirms it)"
        )
        return Decision(TriageClass.GLOBAL_OOM, summary, evidence, MEDIUM)
    if bag.kill_signal:
        summary = f"the process was killed ({bag.kill_signal}) and nothing shows an OOM"
    elif "agent_lost" in kinds:
        summary = "the CI agent was lost mid-job (its host went away) and nothing shows an OOM"
    elif "probe_kill" in kinds:
        summary = (
            "the orchestrator killed the container after failed liveness probes (not for memory)"
        )
    elif "runner_shutdown" in kinds:
        summary = "the runner shut down under the job and nothing shows an OOM"
    elif "terminated_externally" in kinds:
        summary = "something outside the job ended it, and nothing shows why (no OOM shown)"
    else:
        summary = "the job was canceled and nothing shows an OOM"
    return Decision(TriageClass.EXTERNAL_KILL, summary, tuple(bag.kills[:8]))


def _crash(bag: Bag) -> Decision | None:
    if bag.crashes:
        summary = "a process crashed (a pytest-xdist worker, a signal) and nothing says why"
        # The exception the crash reported, next to it (C++'s "what(): ..." after "terminate
        # called"): the message a reader looks for first.
        said = [
            e for e in bag.exceptions
            if e.line is not None and any(
                c.source == e.source and c.line is not None and abs(c.line - e.line) <= 3
                for c in bag.crashes
            )
        ]  # fmt: skip
        return Decision(TriageClass.UNKNOWN, summary, (*bag.crashes[:5], *said[:2]), LOW)
    return None


def _tests(bag: Bag) -> Decision | None:
    if bag.test_failures:
        more = bag.test_error_lines[: max(0, 10 - len(bag.test_failures))]
        return Decision(TriageClass.TEST_FAILURE, "tests failed", (*bag.test_failures[:10], *more))
    if bag.test_error_lines:
        summary = "tests failed (pytest's E lines; no summary or FAILED line in the text)"
        evidence = tuple(bag.test_error_lines[:10])
        return Decision(TriageClass.TEST_FAILURE, summary, evidence, MEDIUM)
    return None


def _parity(bag: Bag) -> Decision | None:
    if bag.parity:
        return Decision(
            TriageClass.PARITY_FAILURE, "the parity gate was not met", tuple(bag.parity)
        )
    return None


def _passed(bag: Bag) -> Decision | None:
    if bag.passed:
        return Decision(TriageClass.PASSED, "the run passed", tuple(bag.passed))
    return None


_RUNGS: dict[Cause, Callable[[Bag], Decision | None]] = {
    Cause.TOOLKIT: _toolkit,
    Cause.INTERRUPTED: _interrupted,
    Cause.TIMEOUT: _timeout,
    Cause.HOST_OOM: _host_oom,
    Cause.GPU_OOM: _gpu_oom,
    Cause.SIGNAL: _signal,
    Cause.CRASH: _crash,
    Cause.TESTS: _tests,
    Cause.PARITY: _parity,
    Cause.PASSED: _passed,
}
"""What proves each rung in artifacts: one entry per rung of the ladder (a test holds it)."""


def decide(bag: Bag) -> Decision:
    """The first rung of the verdict ladder (``qualify.judge.ladder.LADDER``) the evidence
    proves, with the lines that decided it."""
    for cause in LADDER:
        decision = _RUNGS[cause](bag)
        if decision is not None:
            return decision
    if bag.noted or bag.exits or bag.exceptions:
        said = []
        if bag.exceptions:
            said.append("an exception was raised, its cause not stated")
        if bag.exits:
            said.append("a process exited with an error code (not a signal)")
        if bag.noted:
            said.append(
                "memory is mentioned, but no line reports an OOM kill or a refused allocation "
                "(a warning, a title, or a cause offered as possible)"
            )
        summary = "no signal decided the outcome; " + "; ".join(said)
        evidence = bag.exceptions[:2] + bag.exceptions[2:][-1:] + bag.exits[:3] + bag.noted[:5]
        return Decision(TriageClass.UNKNOWN, summary, tuple(evidence), LOW)
    return Decision(TriageClass.UNKNOWN, "no signal decided the outcome", (), LOW)


def missing_for(triage_class: TriageClass, bag: Bag, had_kernel: bool) -> list[str]:
    """What would have made the answer firmer."""
    missing = []
    if triage_class is TriageClass.UNKNOWN:
        if bag.crashes:
            missing.append("why the worker died: its exit signal or a kernel log (--kernel)")
        else:
            missing.append(
                "any decisive signal: an OOM report, an exit code or signal, a CUDA OOM message, "
                "test results (--junit/--report-log) or a qualify run directory"
            )
    if triage_class is TriageClass.EXTERNAL_KILL and not had_kernel and not bag.docker_not_oom:
        missing.append(
            "a kernel log (--kernel) or docker inspect (--inspect): without one an OOM kill "
            "cannot be ruled out (exit 137 is also what an OOM kill looks like)"
        )
    return missing


def conflicts(bag: Bag) -> list[Finding]:
    """Sources that disagree, each with both sides' lines."""
    found = []
    host_oom = bag.memcg_oom or bag.global_oom
    if bag.docker_not_oom and host_oom:
        found.append(
            Finding(
                "docker says OOMKilled=false, but the kernel or the cgroup counter reports an "
                "OOM kill (docker only flags the container's own OOM event; a kill of a child "
                "process or one seen through another cgroup leaves it false)",
                tuple(bag.docker_not_oom + (bag.memcg_oom + bag.global_oom)[:3]),
            )
        )
    if bag.docker_oom and bag.global_oom and not bag.memcg_oom:
        found.append(
            Finding(
                "docker says OOMKilled=true, but the kernel report is a global (host) OOM",
                tuple(bag.docker_oom + bag.global_oom[:3]),
            )
        )
    if bag.memcg_oom and bag.global_oom:
        found.append(
            Finding(
                "both a cgroup OOM and a global OOM were reported",
                tuple(bag.memcg_oom[:2] + bag.global_oom[:2]),
            )
        )
    kernel_memcg = [e for e in bag.memcg_oom if e.kind != "audit"]
    if bag.audit_oom_kills == 0 and kernel_memcg:
        found.append(
            Finding(
                "the run's cgroup counted 0 OOM kills, but the kernel log reports a memcg kill "
                "(another cgroup, or a log from another run)",
                tuple(kernel_memcg[:3]),
            )
        )
    if (host_oom or bag.gpu) and bag.passed:
        found.append(Finding("a pass was recorded despite OOM evidence", tuple(bag.passed[:2])))
    return found
