"""CUDA out-of-memory evidence: the allocator's message parsed, and the harness's events read.

The message text comes from c10/cuda/CUDACachingAllocator.cpp (DeviceCachingAllocator::malloc);
its formats across releases are in tests/data/samples/cuda_oom/ (REFERENCE note there):

- current (torch >= 2.2): "... GPU 0 has a total capacity of X of which Y is free. [Process P
  has Z memory in use. ][Including non-PyTorch memory, this process has Z memory in use. ]
  [B allowed; ]Of the allocated memory A is allocated by PyTorch, [with Q allocated in private
  pools (e.g., CUDA Graphs), ]and R is reserved by PyTorch but unallocated. ..."
- torch 2.1: the same with the typo "total capacty";
- legacy (torch 1.x-2.0): "(GPU 0; X total capacity; A already allocated; Y free; R reserved in
  total by PyTorch)", torch 1.0 printing "R cached" instead.

Sizes are printed with two decimals (format_size): parsed bytes are exact to that precision.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

_SIZE = r"(\d+(?:\.\d+)?) (bytes|KiB|MiB|GiB|TiB)"
_UNITS = {"bytes": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40}
_HEAD = re.compile(rf"\b(CUDA|HIP) out of memory\. Tried to allocate {_SIZE}")
_TOTAL = re.compile(
    rf"GPU (\d+) has a total (capacity|capacty) of {_SIZE} of which {_SIZE} is free"
)
_PROCESS = re.compile(rf"Process (\d+) has {_SIZE} memory in use")
_THIS = re.compile(rf"Including non-PyTorch memory, this process has {_SIZE} memory in use")
_ALLOWED = re.compile(rf"{_SIZE} allowed;")
_OF_ALLOCATED = re.compile(
    rf"Of the allocated memory {_SIZE} is allocated by PyTorch, "
    rf"(?:with {_SIZE} allocated in private pools \(e\.g\., \w+ Graphs\), )?"
    rf"and {_SIZE} is reserved by PyTorch but unallocated"
)
_LEGACY = re.compile(
    rf"\(GPU (\d+); {_SIZE} total capacity; {_SIZE} already allocated; {_SIZE} free; "
    rf"{_SIZE} (reserved in total by PyTorch|cached)\)"
)
_LEGACY_START = re.compile(r"\s*\(GPU (\d+);")
_HINT = re.compile(r"try setting (\S+?)(?:=(\S+))? to avoid")
_HINT_VARIABLE = re.compile(r"\b(PYTORCH_\w*ALLOC_CONF)\b")
_COMMENT = re.compile(r"^\s*#+ ?", re.MULTILINE)


@dataclasses.dataclass(frozen=True)
class CudaOom:
    """One CUDA (or HIP) out-of-memory message, in bytes."""

    backend: str
    """"CUDA" or "HIP" (ROCm builds)."""
    format: str
    """"current", "capacty-typo" (torch 2.1), "legacy" (torch 1.x-2.0), or "unknown" (only the
    head of the message survived)."""
    requested_bytes: int
    device: int | None = None
    total_bytes: int | None = None
    free_bytes: int | None = None
    allocated_bytes: int | None = None
    """Allocated by PyTorch (the current format includes private pools in it)."""
    private_pool_bytes: int | None = None
    reserved_unallocated_bytes: int | None = None
    reserved_bytes: int | None = None
    """Legacy format only: "reserved in total by PyTorch"."""
    cached_bytes: int | None = None
    """torch 1.0 only: "cached"."""
    this_process_bytes: int | None = None
    """"Including non-PyTorch memory, this process has ..." (CUDA context included)."""
    processes: tuple[tuple[int, int], ...] = ()
    """(pid, bytes) of each "Process P has Z memory in use" sentence."""
    allowed_bytes: int | None = None
    """The per-process budget (set_per_process_memory_fraction) when one was set."""
    hint_variable: str | None = None
    """The allocator variable the hint names (PYTORCH_CUDA_ALLOC_CONF, PYTORCH_ALLOC_CONF...)."""
    hint_setting: str | None = None
    """What the hint suggests: "expandable_segments:True" or "max_split_size_mb"."""

    @property
    def kind(self) -> str:
        """ "fragmentation", "budget" or "capacity" (the CUDA_OOM sub-kind)."""
        unallocated = self.reserved_unallocated_bytes
        if unallocated is None and self.reserved_bytes is not None and self.allocated_bytes:
            unallocated = self.reserved_bytes - self.allocated_bytes
        if unallocated is not None and unallocated >= self.requested_bytes:
            return "fragmentation"
        if self.allowed_bytes is not None and (
            self.free_bytes is None or self.free_bytes >= self.requested_bytes
        ):
            return "budget"
        return "capacity"

    def crosses(self, limit_bytes: int | None) -> bool:
        """This process's usage (CUDA context included when printed) plus the request is over
        ``limit_bytes``: an MPS limit, which torch reports like a full device."""
        in_use = self.this_process_bytes
        if in_use is None and self.allocated_bytes is not None:
            in_use = self.allocated_bytes + (self.reserved_unallocated_bytes or 0)
        if limit_bytes is None or in_use is None:
            return False
        return in_use + self.requested_bytes > limit_bytes

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready, with the sub-kind."""
        record = dataclasses.asdict(self)
        record["processes"] = [list(entry) for entry in self.processes]
        record["kind"] = self.kind
        return record


def size_bytes(number: str, unit: str) -> int:
    """ "12.50", "MiB" -> bytes (format_size's units are binary)."""
    return round(float(number) * _UNITS[unit])


def _normalize(text: str) -> str:
    # Messages wrapped over lines (and commented out, as in notes) read as one sentence.
    return " ".join(_COMMENT.sub("", text).split())


def parse_cuda_oom(text: str) -> CudaOom | None:
    """The first CUDA/HIP out-of-memory message in ``text`` (a log, a traceback), or None."""
    flat = _normalize(text)
    head = _HEAD.search(flat)
    if head is None:
        return None
    rest = flat[head.end() :]
    end = rest.find(" out of memory. Tried to allocate")
    rest = rest if end < 0 else rest[:end]
    fields: dict[str, Any] = {
        "backend": head.group(1),
        "requested_bytes": size_bytes(head.group(2), head.group(3)),
    }
    legacy = _LEGACY.search(rest)
    total = _TOTAL.search(rest)
    if total is not None:
        fields["format"] = "current" if total.group(2) == "capacity" else "capacty-typo"
        fields["device"] = int(total.group(1))
        fields["total_bytes"] = size_bytes(total.group(3), total.group(4))
        fields["free_bytes"] = size_bytes(total.group(5), total.group(6))
    elif legacy is not None:
        fields.update(_legacy_fields(legacy))
    elif cut := _LEGACY_START.match(rest):
        # A legacy message cut before its numbers (a truncated log line).
        fields["format"] = "legacy"
        fields["device"] = int(cut.group(1))
    else:
        fields["format"] = "unknown"
    fields.update(_usage_fields(rest))
    return CudaOom(**fields)


def _legacy_fields(match: re.Match[str]) -> dict[str, Any]:
    groups = match.groups()
    last = size_bytes(groups[7], groups[8])
    return {
        "format": "legacy",
        "device": int(groups[0]),
        "total_bytes": size_bytes(groups[1], groups[2]),
        "allocated_bytes": size_bytes(groups[3], groups[4]),
        "free_bytes": size_bytes(groups[5], groups[6]),
        "reserved_bytes": last if groups[9] != "cached" else None,
        "cached_bytes": last if groups[9] == "cached" else None,
    }


def _usage_fields(rest: str) -> dict[str, Any]:
    fields: dict[str, Any] = {
        "processes": tuple(
            (int(pid), size_bytes(number, unit)) for pid, number, unit in _PROCESS.findall(rest)
        )
    }
    if this := _THIS.search(rest):
        fields["this_process_bytes"] = size_bytes(this.group(1), this.group(2))
    if allowed := _ALLOWED.search(rest):
        fields["allowed_bytes"] = size_bytes(allowed.group(1), allowed.group(2))
    if usage := _OF_ALLOCATED.search(rest):
        groups = usage.groups()
        fields["allocated_bytes"] = size_bytes(groups[0], groups[1])
        if groups[2] is not None:
            fields["private_pool_bytes"] = size_bytes(groups[2], groups[3])
        fields["reserved_unallocated_bytes"] = size_bytes(groups[4], groups[5])
    if hint := _HINT.search(rest):
        name, value = hint.group(1), hint.group(2)
        if name.startswith("PYTORCH_"):
            fields["hint_variable"], fields["hint_setting"] = name, value
        else:
            fields["hint_setting"] = name
    if "hint_variable" not in fields and (variable := _HINT_VARIABLE.search(rest)):
        fields["hint_variable"] = variable.group(1)
    return fields
