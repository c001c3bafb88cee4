"""CUDA out-of-memory evidence: the allocator's message parsed, and the harness's events read.

The message text comes from c10/cuda/CUDACachingAllocator.cpp (DeviceCachingAllocator::malloc);
its formats across releases are in tests/data/samples/cuda_oom/ (REFERENCE note there):

- current (torch >= 2.2): "... GPU 0 has a total capacity of X of which Y is free. [Process P
  has Z memory in use. ][Including non-PyTorch memory, this process has Z memory in use. ]
  [B allowed; ]Of the allocated memory A is allocated by PyTorch, [with Q allocated in private
  pools (e.g., CUDA Graphs), ]and R is reserved by PyTorch but unallocated. ..."
- torch 2.1: the same with the typo "total capacty";
- legacy (torch 1.x-2.0): "(GPU 0; X total capacity; A already allocated; Y free; [B allowed; ]R
  reserved in total by PyTorch)", torch 1.0 printing "R cached" instead;
- Intel's XPU builds print the same sentences with "XPU out of memory"; IPEX's older XPU message
  has no free figure: "(GPU 0; X total capacity; A already allocated; R reserved in total by
  PyTorch)";
- out-of-tree backends print the legacy sentences with their own device name, Ascend's
  torch_npu with one more figure: "NPU out of memory. Tried to allocate X (NPU 3; T total
  capacity; A already allocated; C current active; Y free; R reserved in total by PyTorch)".

Sizes are printed with two decimals (format_size): parsed bytes are exact to that precision.

Which wall refused the allocation is decided in the order the allocator itself checks them
(DeviceCachingAllocator::malloc): a per-process cap first (``set_per_process_memory_fraction``:
the request, rounded up to the segment the allocator would map, on top of everything reserved,
crosses the "allowed" figure), then the cache's own free blocks (fragmentation: the reserved but
unallocated bytes left after the allocator released what it could would have covered the
request), then the device (capacity). A fragmented cache is not the wall when PyTorch holds under
half of the memory in use on the device: others filled it (capacity). What the message does not
show is said, never guessed.
"""

from __future__ import annotations

import re
from typing import Any

from qualify import records
from qualify.records import frozen_record

_SIZE = r"(\d+(?:\.\d+)?) (bytes|KiB|MiB|GiB|TiB)"
_UNITS = {"bytes": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40}
_DEVICE = (
    r"(?!(?:CPU|RAM|HOST|SYSTEM|OOM|ERROR|ERR|FATAL|WARN|WARNING|INFO|DEBUG|CRITICAL|SEVERE"
    r"|PANIC)\b)[A-Z][A-Z0-9]{1,7}"
)
"""A device type as PyTorch's allocators name it: CUDA, HIP, XPU, and the out-of-tree backends'
(Ascend's ``NPU``, Moore Threads' ``MUSA``) that print the same message with their own name;
never the host's, nor a log's severity ("ERROR out of memory. Tried to allocate ...")."""
_HEAD = re.compile(rf"\b({_DEVICE}) out of memory\. Tried to allocate {_SIZE}")
_TOTAL = re.compile(
    rf"\b{_DEVICE} (\d+) has a total (capacity|capacty) of {_SIZE} of which {_SIZE} is free"
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
    rf"\({_DEVICE}\s+(\d+); {_SIZE} total capacity; {_SIZE} already allocated; "
    r"(?:\d+(?:\.\d+)? (?:bytes|KiB|MiB|GiB|TiB) current active; )?"  # (torch_npu's)
    rf"(?:{_SIZE} free; )?(?:{_SIZE} allowed; )?"
    rf"{_SIZE} (reserved in total by PyTorch|cached)\)?"
)
_LEGACY_START = re.compile(rf"\s*\({_DEVICE}\s+(\d+);")
_REPORTER_PID = re.compile(r"\bpid[= ](\d+)\b")
_HINT = re.compile(r"try setting (\S+?)(?:=(\S+))? to avoid")
_HINT_VARIABLE = re.compile(r"\b(PYTORCH_\w*ALLOC_CONF)\b")
_COMMENT = re.compile(r"^\s*#+ ?", re.MULTILINE)
_NEXT_MESSAGE = " out of memory. Tried to allocate"
REPORTER_REACH = 200
"""How far before the message its log line's own pid is looked for ("pid=194255)": ...")."""
LEGACY_REACH = 400
"""How far after the head a legacy message's "(GPU 0; ...)" must end to be this message's."""


KIB, MIB = 1 << 10, 1 << 20
SMALL_SIZE = 1 * MIB
"""Requests up to this are served from 2 MiB segments (kSmallSize / kSmallBuffer)."""
MIN_LARGE_ALLOC = 10 * MIB
"""Requests below this (and above SMALL_SIZE) map a 20 MiB segment (kMinLargeAlloc)."""


def segment_bytes(requested: int) -> int:
    """What the caching allocator maps for a request it cannot serve from its cache
    (``get_allocation_size``): 2 MiB up to 1 MiB, 20 MiB below 10 MiB, else rounded up to 2 MiB."""
    if requested <= SMALL_SIZE:
        return 2 * MIB
    if requested < MIN_LARGE_ALLOC:
        return 20 * MIB
    return -(-requested // (2 * MIB)) * (2 * MIB)


def printed_slack(value: int) -> int:
    """How far a size printed with two decimals can be from the true one (half the last digit,
    in the unit format_size picked for it)."""
    for unit in (1 << 40, 1 << 30, 1 << 20, 1 << 10):
        if value >= unit:
            return unit // 200
    return 0


SLACK_BYTES = 64 << 20
"""Reserved-but-unallocated memory the caching allocator leaves as a matter of course."""


@frozen_record
class CudaOom:
    """One CUDA (or HIP, or XPU) out-of-memory message, in bytes."""

    backend: str
    """"CUDA", "HIP" (ROCm builds), "XPU" (Intel GPUs), or an out-of-tree backend's name
    (``NPU``)."""
    format: str
    """"current", "capacty-typo" (torch 2.1), "legacy" (torch 1.x-2.0, IPEX), or "unknown" (only
    the head of the message survived)."""
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
    reporter_pid: int | None = None
    """The pid the log line itself names ("(VllmWorker rank=1 pid=194255)"), when it does."""

    @property
    def reserved_total_bytes(self) -> int | None:
        """Everything PyTorch's allocator held: allocated plus reserved-but-unallocated."""
        if self.allocated_bytes is not None and self.reserved_unallocated_bytes is not None:
            return self.allocated_bytes + self.reserved_unallocated_bytes
        return self.reserved_bytes

    @property
    def unallocated_bytes(self) -> int | None:
        """Reserved but unallocated: printed (current format) or reserved minus allocated."""
        if self.reserved_unallocated_bytes is not None:
            return self.reserved_unallocated_bytes
        if self.reserved_bytes is not None and self.allocated_bytes is not None:
            return max(self.reserved_bytes - self.allocated_bytes, 0)
        return self.cached_bytes

    @property
    def over_budget(self) -> bool | None:
        """Whether the request crossed the per-process cap: what PyTorch reserved plus the
        segment the request maps reaches the "allowed" figure (within the printed rounding).
        None: no cap printed, or nothing reserved is known."""
        if self.allowed_bytes is None:
            return None
        reserved = self.reserved_total_bytes
        if reserved is None:
            return None
        slack = printed_slack(self.allowed_bytes) + printed_slack(reserved)
        return reserved + segment_bytes(self.requested_bytes) + slack >= self.allowed_bytes

    @property
    def room_on_device(self) -> bool | None:
        """The device reported at least the request free (None: no free figure)."""
        if self.free_bytes is None:
            return None
        return self.free_bytes >= self.requested_bytes

    @property
    def kind(self) -> str:
        """ "budget", "fragmentation" or "capacity" (the CUDA_OOM sub-kind), tested in the
        allocator's own order: the cap, then the cache, then the device."""
        over = self.over_budget
        if over:
            return "budget"
        if self._fragmented and not self.others_dominate:
            return "fragmentation"
        if self.allowed_bytes is not None and over is None and self.room_on_device is not False:
            return "budget"
        return "capacity"

    @property
    def _fragmented(self) -> bool:
        """The cache, not the device, stood in the way: its reserved-but-unallocated memory
        could serve the request and, when the device had no room left, is more than the
        allocator's normal slack (blocks are rounded up to 2 MiB and 20 MiB, and the message
        prints GiB to two decimals: under ``SLACK_BYTES`` and under 5% of the reservation, the
        cache is as full as the device), or it holds more free blocks than allocated ones (the
        allocator's own fragmentation sign)."""
        unallocated = self.unallocated_bytes
        if unallocated is None:
            return False
        reserved = self.reserved_total_bytes
        # With room on the device the refusal cannot be the device's: any cache that could
        # serve it was in the way. With none, the cache counts only beyond its normal slack.
        beyond_slack = (
            self.room_on_device is not False or unallocated >= SLACK_BYTES
            or reserved is None or unallocated * 20 >= reserved
        )  # fmt: skip
        if unallocated >= self.requested_bytes and beyond_slack:
            return True
        allocated = self.allocated_bytes
        return allocated is not None and unallocated > allocated and unallocated >= SLACK_BYTES

    @property
    def others_dominate(self) -> bool:
        """PyTorch's own reservation is under half of what is in use on the device: the device
        is full of someone else's memory (other processes, other libraries), and a fragmented
        cache is not what stands between the request and the device."""
        reserved = self.reserved_total_bytes
        if reserved is None or self.total_bytes is None or self.free_bytes is None:
            return False
        in_use = self.total_bytes - self.free_bytes
        return reserved * 2 < in_use

    def crosses(self, limit_bytes: int | None) -> bool:
        """This process's usage (CUDA context included when printed) plus the request is over
        ``limit_bytes``: an MPS limit, which torch reports like a full device."""
        in_use = self.this_process_bytes
        if in_use is None and self.allocated_bytes is not None:
            in_use = self.allocated_bytes + (self.reserved_unallocated_bytes or 0)
        if limit_bytes is None or in_use is None:
            return False
        return in_use + self.requested_bytes > limit_bytes

    def self_process(self) -> tuple[int, int] | None:
        """The "Process P has Z" sentence that is this process itself, when one is.

        PyTorch names its own process "this process" only when NVML's pid equals its own; inside
        a PID namespace (a container) NVML reports host pids, so the failing process is listed
        as "Process P" like any other. Then it is the one the log line's own pid names, else the
        only one listed, else the smallest usage that covers what PyTorch itself reserved (a
        process holding less than PyTorch reserved cannot be this one).
        """
        if self.this_process_bytes is not None or not self.processes:
            return None
        if self.reporter_pid is not None:
            for entry in self.processes:
                if entry[0] == self.reporter_pid:
                    return entry
        reserved = self.reserved_total_bytes
        covering = [
            entry
            for entry in self.processes
            if reserved is None or entry[1] + printed_slack(entry[1]) >= reserved
        ]
        if len(self.processes) == 1:  # NVML lists every process on the device, this one too
            return covering[0] if covering else None
        if reserved is None:
            return None
        return min(covering, key=lambda entry: entry[1]) if covering else None

    def other_processes(self) -> tuple[tuple[int, int], ...]:
        """The processes that really are others (this process itself left out)."""
        own = self.self_process()
        return tuple(entry for entry in self.processes if entry != own)

    def gaps(self) -> list[str]:
        """What the message does not give that the decision would need."""
        missing = []
        if self.free_bytes is None:
            missing.append("the device's free memory")
        if self.unallocated_bytes is None:
            missing.append("what PyTorch held reserved but unallocated (fragmentation)")
        if self.allowed_bytes is None and self.format != "unknown":
            missing.append("any per-process cap (none printed: no memory fraction was set)")
        return missing

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready, with the sub-kind and which listed process is this one."""
        record = records.asdict(self)
        record["processes"] = [list(entry) for entry in self.processes]
        record["kind"] = self.kind
        own = self.self_process()
        record["self_process"] = list(own) if own else None
        return record


def size_bytes(number: str, unit: str) -> int:
    """ "12.50", "MiB" -> bytes (format_size's units are binary)."""
    return round(float(number) * _UNITS[unit])


def _normalize(text: str) -> str:
    # Messages wrapped over lines (and commented out, as in notes) read as one sentence.
    return " ".join(_COMMENT.sub("", text).split())


def parse_cuda_oom(text: str, reporter_pid: int | None = None) -> CudaOom | None:
    """The first CUDA/HIP/XPU out-of-memory message in ``text`` (a log, a traceback), or None.

    ``reporter_pid``: the pid the log line names, when the caller read it from the line's head.
    """
    if "memory" not in text:  # (every message read here says "out of memory")
        return None
    flat = _normalize(text)
    head = _HEAD.search(flat)
    if head is None:
        return None
    rest = flat[head.end() :].partition(_NEXT_MESSAGE)[0]  # up to the next message, if any
    fields: dict[str, Any] = {
        "backend": head.group(1),
        "requested_bytes": size_bytes(head.group(2), head.group(3)),
    }
    if reporter_pid is None and (
        pid := _REPORTER_PID.search(flat[: head.start()][-REPORTER_REACH:])
    ):
        reporter_pid = int(pid.group(1))
    fields["reporter_pid"] = reporter_pid
    legacy = _LEGACY.search(rest[:LEGACY_REACH])
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
    if legacy is None and (allowed := _ALLOWED.search(rest)):
        fields["allowed_bytes"] = size_bytes(allowed.group(1), allowed.group(2))
    fields.update(_hint_fields(rest))
    return CudaOom(**fields)


def _sized(groups: tuple[str | Any, ...], at: int) -> int | None:
    number, unit = groups[at], groups[at + 1]
    return size_bytes(number, unit) if number is not None else None


def _legacy_fields(match: re.Match[str]) -> dict[str, Any]:
    groups = match.groups()
    last = _sized(groups, 9)
    cached = groups[11] == "cached"
    return {
        "format": "legacy",
        "device": int(groups[0]),
        "total_bytes": _sized(groups, 1),
        "allocated_bytes": _sized(groups, 3),
        "free_bytes": _sized(groups, 5),
        "allowed_bytes": _sized(groups, 7),
        "reserved_bytes": None if cached else last,
        "cached_bytes": last if cached else None,
    }


def _usage_fields(rest: str) -> dict[str, Any]:
    fields: dict[str, Any] = {
        "processes": tuple(
            (int(pid), size_bytes(number, unit)) for pid, number, unit in _PROCESS.findall(rest)
        )
    }
    if this := _THIS.search(rest):
        fields["this_process_bytes"] = size_bytes(this.group(1), this.group(2))
    if usage := _OF_ALLOCATED.search(rest):
        groups = usage.groups()
        fields["allocated_bytes"] = size_bytes(groups[0], groups[1])
        fields["private_pool_bytes"] = _sized(groups, 2)
        fields["reserved_unallocated_bytes"] = size_bytes(groups[4], groups[5])
    return fields


def _hint_fields(rest: str) -> dict[str, str | None]:
    """The variable and setting the hint names: "try setting PYTORCH_CUDA_ALLOC_CONF=x to
    avoid", or (torch 2.0) "try setting max_split_size_mb to avoid ... PYTORCH_CUDA_ALLOC_CONF"."""
    hint = _HINT.search(rest)
    if hint is not None and hint.group(1).startswith("PYTORCH_"):
        return {"hint_variable": hint.group(1), "hint_setting": hint.group(2)}
    variable = _HINT_VARIABLE.search(rest)
    return {
        "hint_variable": variable.group(1) if variable else None,
        "hint_setting": hint.group(1) if hint else None,
    }
