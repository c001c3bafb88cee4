"""One decision over the bag of evidence: the class, the lines that decided it, conflicts.

The order is the verdict ladder of ``qualify.judge.ladder`` (most fundamental cause first): the
toolkit failed, the run timed out, a host OOM (cgroup, then global), a GPU OOM, a kill signal
with no OOM evidence, a crashed pytest-xdist worker with no cause, failed tests, a failed parity
gate, a pass. Disagreements between sources are kept as conflicts, never dropped.
"""

from __future__ import annotations

from collections.abc import Callable

from qualify.evidence.cuda_oom import CudaOom
from qualify.evidence.model import Evidence
from qualify.judge.gpu import GpuEvidence
from qualify.judge.ladder import LADDER, Cause
from qualify.sizes import format_bytes
from qualify.triage.model import Finding, TriageClass
from qualify.triage.signals import Bag

Decision = tuple[TriageClass, str, tuple[Evidence, ...]]


def cuda_class(
    oom: CudaOom, budget_bytes: int | None, mps_limit_bytes: int | None = None
) -> TriageClass:
    """Fragmentation, budget or capacity; a harness budget below the device counts as one,
    and so does an MPS limit the process's usage plus the request crossed."""
    kind = oom.kind
    if kind == "fragmentation":
        return TriageClass.CUDA_OOM_FRAGMENTATION
    if kind == "budget":
        return TriageClass.CUDA_OOM_BUDGET
    room = oom.free_bytes is None or oom.free_bytes >= oom.requested_bytes
    if budget_bytes is not None and room:
        return TriageClass.CUDA_OOM_BUDGET
    if oom.crosses(mps_limit_bytes):
        return TriageClass.CUDA_OOM_BUDGET
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
    if oom.reserved_unallocated_bytes is not None:
        parts.append(f"reserved-unallocated {format_bytes(oom.reserved_unallocated_bytes)}")
    if oom.allowed_bytes is not None:
        parts.append(f"allowed {format_bytes(oom.allowed_bytes)}")
    what = triage_class.value.removeprefix("CUDA_OOM_").lower()
    return f"{oom.backend} out of memory ({what}): " + ", ".join(parts)


def _toolkit(bag: Bag) -> Decision | None:
    if bag.infra:
        return TriageClass.INFRA_ERROR, "the toolkit, sandbox or container failed", tuple(bag.infra)
    return None


def _timeout(bag: Bag) -> Decision | None:
    if bag.timeouts:
        return TriageClass.TIMEOUT, "the run exceeded its time limit", tuple(bag.timeouts)
    return None


def _host_oom(bag: Bag) -> Decision | None:
    if bag.memcg_oom or bag.docker_oom:
        evidence = tuple(bag.memcg_oom + bag.docker_oom)
        return TriageClass.CGROUP_OOM, "the memory cgroup's cap was hit (OOM kill)", evidence
    if bag.global_oom:
        summary = "the host ran out of memory (global OOM killer, no cgroup cap hit)"
        return TriageClass.GLOBAL_OOM, summary, tuple(bag.global_oom)
    return None


def _gpu_oom(bag: Bag) -> Decision | None:
    if bag.cuda:
        first, oom = bag.cuda[0]
        triage_class = cuda_class(oom, harness_budget(bag), mps_limit(bag))
        extra = tuple(e for e, _ in bag.budgets) if triage_class.name.endswith("BUDGET") else ()
        return triage_class, _cuda_summary(oom, triage_class), (first, *extra)
    if bag.trt:
        summary = "TensorRT's builder ran out of GPU memory"
        return TriageClass.CUDA_OOM_CAPACITY, summary, tuple(bag.trt[:5])
    return None


def _signal(bag: Bag) -> Decision | None:
    if bag.kills:
        what = bag.kill_signal or "a kill"
        summary = f"the process was killed ({what}) and nothing shows an OOM"
        return TriageClass.EXTERNAL_KILL, summary, tuple(bag.kills)
    return None


def _crash(bag: Bag) -> Decision | None:
    if bag.crashes:
        summary = "a pytest-xdist worker crashed and nothing says why"
        return TriageClass.UNKNOWN, summary, tuple(bag.crashes[:5])
    return None


def _tests(bag: Bag) -> Decision | None:
    if bag.test_failures:
        return TriageClass.TEST_FAILURE, "tests failed", tuple(bag.test_failures[:10])
    return None


def _parity(bag: Bag) -> Decision | None:
    if bag.parity:
        return TriageClass.PARITY_FAILURE, "the parity gate was not met", tuple(bag.parity)
    return None


def _passed(bag: Bag) -> Decision | None:
    if bag.passed:
        return TriageClass.PASSED, "the run passed", tuple(bag.passed)
    return None


_RUNGS: dict[Cause, Callable[[Bag], Decision | None]] = {
    Cause.TOOLKIT: _toolkit,
    Cause.TIMEOUT: _timeout,
    Cause.HOST_OOM: _host_oom,
    Cause.GPU_OOM: _gpu_oom,
    Cause.SIGNAL: _signal,
    Cause.CRASH: _crash,
    Cause.TESTS: _tests,
    Cause.PARITY: _parity,
    Cause.PASSED: _passed,
}
"""What proves each rung in artifacts (an interruption of qualify shows as a signal here)."""


def decide(bag: Bag) -> Decision:
    """The class, a one-line summary, and the evidence that decided it: the first rung of the
    verdict ladder (``qualify.judge.ladder.LADDER``) the evidence proves."""
    for cause in LADDER:
        rung = _RUNGS.get(cause)
        decision = rung(bag) if rung is not None else None
        if decision is not None:
            return decision
    return TriageClass.UNKNOWN, "no signal decided the outcome", ()


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
    if (host_oom or bag.cuda) and bag.passed:
        found.append(Finding("a pass was recorded despite OOM evidence", tuple(bag.passed[:2])))
    return found
