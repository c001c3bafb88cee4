"""What the harness's GPU events say about a run: budgets, allocator, CUDA OOMs, their kind."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from harness import contract
from qualify.records import frozen_record

if TYPE_CHECKING:
    from qualify.evidence.cuda_oom import CudaOom


def _parsed(text: str) -> CudaOom | None:
    """``parse_cuda_oom(text)``, its module (a dozen patterns to compile) imported only for a
    text that can hold a message it reads: each says "out of memory"."""
    if "memory" not in text:
        return None
    from qualify.evidence.cuda_oom import parse_cuda_oom

    return parse_cuda_oom(text)


@frozen_record
class GpuEvidence:
    """What the harness's GPU events say about a run (for the verdict and the audit)."""

    budgets: tuple[dict[str, Any], ...] = ()
    allocator: tuple[dict[str, Any], ...] = ()
    ooms: tuple[dict[str, Any], ...] = ()
    hook_errors: tuple[dict[str, Any], ...] = ()
    logged: CudaOom | None = None
    """An OOM message found in the tail of the E2E's stderr (a family whose hook never ran)."""

    @property
    def cuda_oom(self) -> bool:
        """True when any source saw a CUDA out-of-memory error."""
        return bool(self.ooms) or self.logged is not None

    @property
    def budget_error(self) -> str | None:
        """Why the GPU budget could not be applied (the run is then ERROR), or None."""
        for event in self.budgets:
            if event.get("error"):
                return f"GPU budget not applied on device {event.get('device')}: {event['error']}"
        return None

    @property
    def oom(self) -> CudaOom | None:
        """The first raised OOM message, parsed (None: only the observer saw it, or none)."""
        for event in self.ooms:
            message = event.get("message")
            if isinstance(message, str) and (parsed := _parsed(message)):
                return parsed
        return self.logged

    @property
    def budget_mode(self) -> str | None:
        """ "torch" or "mps" as the harness applied it (None: no budget event)."""
        for event in self.budgets:
            return str(event.get("mode") or "torch")
        return None

    @property
    def mps_limit_bytes(self) -> int | None:
        """The smallest MPS pinned limit below its device's total (None: no such limit)."""
        limits = [
            event["mps_limit_bytes"]
            for event in self.budgets
            if event.get("mode") == "mps"
            and event.get("applied")
            and isinstance(event.get("mps_limit_bytes"), int)
            and isinstance(event.get("total_bytes"), int)
            and event["mps_limit_bytes"] < event["total_bytes"]
        ]
        return min(limits) if limits else None

    @property
    def oom_kind(self) -> str | None:
        """The CUDA_OOM sub-kind, from the parsed message or the observer's counters.

        Under an MPS limit the driver refuses the allocation and torch reports it like a full
        device: "budget" when the process's usage plus the request crosses the limit.
        """
        if parsed := self.oom:
            if parsed.kind == "capacity" and parsed.crosses(self.mps_limit_bytes):
                return "budget"
            return parsed.kind
        for event in self.ooms:
            requested = event.get("requested_bytes")
            reserved, allocated = event.get("reserved_bytes"), event.get("allocated_bytes")
            if isinstance(requested, int) and isinstance(reserved, int) and allocated is not None:
                if reserved - allocated >= requested:
                    return "fragmentation"
                limit, total = event.get("observer_limit_bytes"), event.get("total_bytes")
                budgeted = isinstance(limit, int) and isinstance(total, int) and limit < total
                limit = self.mps_limit_bytes
                if budgeted or (limit is not None and reserved + requested > limit):
                    return "budget"
                return "capacity"
        return None


BUDGET_SCOPE = (
    "torch.cuda.set_per_process_memory_fraction bounds PyTorch's caching allocator only; "
    "the CUDA context, cuBLAS/cuDNN workspaces, NCCL and other libraries allocate outside it. "
    "nvml gives the device-level usage measured by the driver beside it."
)


MPS_BUDGET_SCOPE = (
    "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT is enforced by the driver on each MPS client process: it "
    "bounds every device allocation the process makes through CUDA (PyTorch, cuBLAS, NCCL, "
    "other libraries), per process, not per run; the limit is written in whole MiB, rounded "
    "down from the budget. nvml gives the device-level usage measured by the driver beside it."
)


BUDGET_SCOPES = {"torch": BUDGET_SCOPE, "mps": MPS_BUDGET_SCOPE}


_GPU_EVENTS = {
    contract.GPU_BUDGET: "budgets",
    contract.GPU_ALLOCATOR: "allocator",
    contract.CUDA_OOM: "ooms",
    contract.GPU_HOOK_ERROR: "hook_errors",
}


def gpu_evidence(events: Iterable[dict[str, Any]], log_tail: str = "") -> GpuEvidence:
    """The GPU events of a run, grouped; ``log_tail`` (the end of the E2E's stderr) is searched
    for an OOM message when no event is one (a family whose hook never ran)."""
    groups: dict[str, list[dict[str, Any]]] = {name: [] for name in _GPU_EVENTS.values()}
    for event in events:
        group = _GPU_EVENTS.get(str(event.get("event")))
        if group is not None:
            groups[group].append(event)
    logged = None
    if not groups["ooms"] and log_tail:
        logged = _parsed(log_tail)
    return GpuEvidence(**{name: tuple(items) for name, items in groups.items()}, logged=logged)
