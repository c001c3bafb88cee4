"""The CUDA OOM classifier's edges: which format a real message is, what it leaves unknown, which
listed process is the failing one, whether an MPS limit was crossed, and the allocator's own
rounding (segments, printed sizes) at its boundaries.

Expected values come from the messages in tests/data/samples/cuda_oom/ and from
c10/cuda/CUDACachingAllocator.cpp (kSmallSize 1 MiB, kSmallBuffer 2 MiB, kMinLargeAlloc 10 MiB,
kLargeBuffer 20 MiB, kRoundLarge 2 MiB; format_size prints two decimals).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from qualify.evidence.cuda_oom import CudaOom, parse_cuda_oom, printed_slack, segment_bytes

SAMPLES = Path(__file__).resolve().parent / "data" / "samples" / "cuda_oom"
KIB, MIB, GIB, TIB = 1 << 10, 1 << 20, 1 << 30, 1 << 40
NO_FREE = "the device's free memory"
NO_CACHE = "what PyTorch held reserved but unallocated (fragmentation)"
NO_CAP = "any per-process cap (none printed: no memory fraction was set)"
CUT_AFTER_HEAD = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB"
"""A log line cut right after the message's head (a truncated CI log)."""


def sample(prefix: str) -> str:
    (path,) = [p for p in SAMPLES.glob("*.txt") if p.name.startswith(prefix)]
    return path.read_text(encoding="utf-8")


def parsed(text: str) -> CudaOom:
    oom = parse_cuda_oom(text)
    assert oom is not None
    return oom


# ---- the format of every real message


@pytest.mark.parametrize(
    ("prefix", "form"),
    [
        ("rocm-hip-PYTORCH_HIP", "current"),
        ("rocm-hip-allowed", "current"),
        ("torch-cuda-allowed", "current"),
        ("torch-multiple-process", "current"),
        ("torch1.0-old", "legacy"),
        ("torch1.x-old", "legacy"),
        ("torch2.0-old", "legacy"),
        ("torch2.1-capacty-typo-including", "capacty-typo"),
        ("torch2.1-capacty-typo-no-process", "capacty-typo"),
        ("torch2.1-capacty-typo-process-has", "capacty-typo"),
        ("torch2.1-capacty-typo-wrapped", "capacty-typo"),
        ("torch2.10-PYTORCH_ALLOC_CONF", "current"),
        ("torch2.2plus", "current"),
        ("torch-npu-legacy-current-active-frag", "legacy"),
        ("torch-npu-legacy-current-active-capacity", "legacy"),
        ("torch2.x-no-docs-url", "current"),
        ("vllm-private-pools-cuda-graphs", "current"),
        ("vllm-private-pools-process-has", "current"),
        ("vllm-v1-engine-core", "current"),
        ("vllm-worker-rank1", "current"),
    ],
)
def test_format_of_each_real_message(prefix: str, form: str) -> None:
    oom = parsed(sample(prefix))
    assert oom.format == form
    assert oom.to_dict()["format"] == form


def test_an_out_of_tree_backend_prints_the_legacy_message_under_its_own_name() -> None:
    """Ascend's torch_npu: "NPU out of memory ... (NPU 3; ...)" with a "current active" figure
    the CUDA allocator never printed. The cache with 8.08 GiB unallocated, PyTorch holding most
    of the device, stood in the way of 5.03 GiB; where PyTorch held a sixth of a full device,
    the device did."""
    frag = parsed(sample("torch-npu-legacy-current-active-frag"))
    assert (frag.backend, frag.device, frag.format) == ("NPU", 3, "legacy")
    assert frag.reserved_bytes is not None and frag.allocated_bytes is not None
    assert round((frag.reserved_bytes - frag.allocated_bytes) / GIB, 2) == 8.08
    assert frag.kind == "fragmentation"
    full = parsed(sample("torch-npu-legacy-current-active-capacity"))
    assert (full.backend, full.device, full.requested_bytes) == ("NPU", 0, 22 * MIB)
    assert full.kind == "capacity"


def test_the_host_is_never_a_device_of_the_message() -> None:
    assert parse_cuda_oom("CPU out of memory. Tried to allocate 2.00 GiB") is None
    assert parse_cuda_oom("[ERROR out of memory. Tried to allocate 2.00 GiB") is None


def test_a_message_cut_after_its_head_is_of_unknown_format_and_says_what_is_missing() -> None:
    oom = parsed(CUT_AFTER_HEAD)
    assert (oom.format, oom.requested_bytes, oom.device) == ("unknown", 20 * MIB, None)
    assert oom.kind == "capacity"  # nothing points at the cache or a cap
    # No cap is claimed absent: the part of the message that would print it is missing.
    assert oom.gaps() == [NO_FREE, NO_CACHE]


@pytest.mark.parametrize(
    ("prefix", "gaps"),
    [
        ("torch1.x-old", [NO_CAP]),  # free and reserved printed; no "allowed"
        ("torch1.0-old", [NO_CAP]),  # "cached" is the reserved-but-unallocated figure
        ("torch2.2plus", [NO_CAP]),
        ("torch-cuda-allowed", []),  # every figure the decision needs
        ("rocm-hip-allowed", []),
    ],
)
def test_gaps_of_real_messages(prefix: str, gaps: list[str]) -> None:
    assert parsed(sample(prefix)).gaps() == gaps


def test_torch_1_0_cached_figure_is_the_unallocated_cache_not_a_reservation() -> None:
    # (GPU 0; 10.92 GiB total capacity; 8.57 MiB already allocated; 9.28 GiB free;
    #  4.68 MiB cached)
    old = parsed(sample("torch1.0-old"))
    assert (old.reserved_bytes, old.cached_bytes) == (None, round(4.68 * MIB))
    assert old.unallocated_bytes == round(4.68 * MIB)
    # torch 1.x: "1.24 GiB reserved in total by PyTorch" minus "781.59 MiB already allocated"
    newer = parsed(sample("torch1.x-old"))
    assert (newer.reserved_bytes, newer.cached_bytes) == (round(1.24 * GIB), None)
    assert newer.unallocated_bytes == round(1.24 * GIB) - round(781.59 * MIB)


def test_private_pools_are_absent_when_not_printed() -> None:
    assert parsed(sample("torch2.2plus")).private_pool_bytes is None
    assert parsed(sample("vllm-private-pools-process-has")).private_pool_bytes is not None


# ---- several messages in one log: the first one, with its own figures only


def test_first_message_of_a_log_keeps_only_its_own_figures() -> None:
    log = "\n".join([CUT_AFTER_HEAD, sample("torch1.x-old"), sample("torch-cuda-allowed")])
    first = parsed(log)
    assert (first.format, first.requested_bytes) == ("unknown", 20 * MIB)
    assert (first.total_bytes, first.free_bytes, first.allowed_bytes) == (None, None, None)
    assert (first.hint_variable, first.hint_setting) == (None, None)
    # From the second message on, each is read on its own as well.
    second = parsed("\n".join([sample("torch1.x-old"), sample("torch-cuda-allowed")]))
    assert (second.format, second.total_bytes, second.allowed_bytes) == ("legacy", 6 * GIB, None)
    assert second.hint_variable is None  # the hint belongs to the next message


def test_allowed_figure_of_a_legacy_message_is_its_own() -> None:
    # torch 2.0 with set_per_process_memory_fraction printed "B allowed;" inside the brackets.
    text = (
        "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 100.00 MiB (GPU 0; "
        "44.56 GiB total capacity; 3.91 GiB already allocated; 30.31 GiB free; 4.00 GiB "
        "allowed; 3.93 GiB reserved in total by PyTorch)"
    )
    oom = parsed(text)
    assert (oom.format, oom.allowed_bytes, oom.reserved_bytes) == (
        "legacy",
        4 * GIB,
        round(3.93 * GIB),
    )
    assert oom.kind == "budget"


# ---- the pid the log line names, and how far a legacy body may be


def test_reporter_pid_is_the_log_lines_own() -> None:
    assert parsed(sample("vllm-worker-rank1")).reporter_pid == 194255


@pytest.mark.parametrize(("before", "pid"), [(200, 4242), (201, None)])
def test_reporter_pid_is_looked_for_within_200_characters(before: int, pid: int | None) -> None:
    """A pid further back than 200 characters belongs to an earlier line, not this message's."""
    named = "pid=4242 "
    prefix = named + "w" * (before - len(named) - 1) + " "
    assert len(prefix) == before
    assert parsed(prefix + sample("torch1.x-old")).reporter_pid == pid  # starts with its head


@pytest.mark.parametrize(("ends_at", "form"), [(400, "legacy"), (401, "unknown")])
def test_legacy_body_must_end_within_400_characters_of_the_head(ends_at: int, form: str) -> None:
    """The legacy "(GPU 0; ...)" follows the head; one far after it is some other text's."""
    head = "CUDA out of memory. Tried to allocate 2.26 GiB"
    body = (
        "(GPU 0; 6.00 GiB total capacity; 781.59 MiB already allocated; 3.03 GiB free; "
        "1.24 GiB reserved in total by PyTorch"
    )
    filler = " " + "w" * (ends_at - len(body) - 2) + " "
    assert len(filler + body) == ends_at
    assert parsed(head + filler + body + ")").format == form


# ---- which listed process is the failing one


def test_only_listed_process_covering_the_reservation_is_this_one() -> None:
    oom = parsed(sample("torch2.1-capacty-typo-process-has"))  # Process 2417585 has 21.65 GiB
    own = [2417585, round(21.65 * GIB)]
    assert oom.to_dict()["self_process"] == own
    assert oom.to_dict()["processes"] == [own]
    assert oom.other_processes() == ()


def test_this_process_printed_leaves_every_listed_process_an_other() -> None:
    oom = parsed(sample("torch-multiple-process"))
    assert oom.to_dict()["self_process"] is None
    assert oom.to_dict()["processes"] == [
        [2086283, round(419.48 * MIB)],
        [2797307, round(14.85 * GIB)],
    ]
    assert oom.other_processes() == oom.processes


def listed(
    *processes: tuple[int, int],
    allocated_bytes: int | None = None,
    reserved_unallocated_bytes: int | None = None,
    reporter_pid: int | None = None,
) -> CudaOom:
    return CudaOom(
        "CUDA",
        "current",
        requested_bytes=20 * MIB,
        processes=processes,
        allocated_bytes=allocated_bytes,
        reserved_unallocated_bytes=reserved_unallocated_bytes,
        reporter_pid=reporter_pid,
    )


def test_the_pid_the_log_line_names_is_this_process() -> None:
    oom = listed((100, 30 * GIB), (200, 10 * GIB), allocated_bytes=8 * GIB,
                 reserved_unallocated_bytes=GIB, reporter_pid=100)  # fmt: skip
    assert oom.self_process() == (100, 30 * GIB)
    assert oom.other_processes() == ((200, 10 * GIB),)
    unlisted = listed((100, 30 * GIB), (200, 10 * GIB), allocated_bytes=8 * GIB,
                      reserved_unallocated_bytes=GIB, reporter_pid=300)  # fmt: skip
    assert unlisted.self_process() == (200, 10 * GIB)  # the smallest that covers 9 GiB


def test_single_listed_process_without_a_known_reservation_is_this_one() -> None:
    assert listed((7, 5 * GIB)).self_process() == (7, 5 * GIB)
    assert listed((7, 5 * GIB), (8, 6 * GIB)).self_process() is None  # no way to tell


def test_a_process_holding_less_than_pytorch_reserved_is_not_this_one() -> None:
    assert (
        listed((7, GIB), allocated_bytes=4 * GIB, reserved_unallocated_bytes=0).self_process()
        is None
    )
    two = listed((7, GIB), (8, 2 * GIB), allocated_bytes=4 * GIB, reserved_unallocated_bytes=0)
    assert two.self_process() is None
    assert two.other_processes() == two.processes


@pytest.mark.parametrize(
    ("reserved", "own"),
    [
        (GIB + 3 * MIB, (1, GIB)),  # "1.00 GiB" may be up to 5.12 MiB more
        (GIB + GIB // 200, (1, GIB)),  # exactly the printed rounding
        (GIB + GIB // 200 + 1, (2, 20 * GIB)),  # past it
    ],
)
def test_printed_rounding_of_a_listed_process(reserved: int, own: tuple[int, int]) -> None:
    oom = listed((1, GIB), (2, 20 * GIB), allocated_bytes=reserved, reserved_unallocated_bytes=0)
    assert oom.self_process() == own


# ---- an MPS limit: this process's usage plus the request


def test_mps_limit_crossed_by_a_real_message() -> None:
    # vllm-worker-rank1: this process has 21.80 GiB in use, tried to allocate 270.00 MiB.
    oom = parsed(sample("vllm-worker-rank1"))
    assert oom.crosses(22 * GIB)
    assert not oom.crosses(23 * GIB)
    assert not oom.crosses(None)


def test_mps_usage_is_this_process_when_printed_else_what_pytorch_holds() -> None:
    printed = CudaOom("CUDA", "current", requested_bytes=GIB, this_process_bytes=5 * GIB,
                      allocated_bytes=GIB)  # fmt: skip
    assert printed.crosses(5 * GIB + GIB // 2)  # 5 + 1 GiB, not 1 + 1 GiB
    held = CudaOom("CUDA", "current", requested_bytes=GIB, allocated_bytes=3 * GIB,
                   reserved_unallocated_bytes=GIB)  # fmt: skip
    assert held.crosses(4 * GIB + GIB // 2)  # 3 + 1 reserved + 1 requested
    assert not held.crosses(5 * GIB)  # reaching the limit exactly is not crossing it
    allocated = CudaOom("CUDA", "current", requested_bytes=GIB, allocated_bytes=3 * GIB)
    assert not allocated.crosses(4 * GIB)
    assert allocated.crosses(4 * GIB - 1)
    assert not CudaOom("CUDA", "unknown", requested_bytes=GIB).crosses(1)  # usage unknown


# ---- the allocator's rounding


@pytest.mark.parametrize(
    ("requested", "mapped"),
    [
        (1, 2 * MIB),
        (MIB, 2 * MIB),  # kSmallSize: still a small block
        (MIB + 1, 20 * MIB),
        (10 * MIB - 1, 20 * MIB),
        (10 * MIB, 10 * MIB),  # kMinLargeAlloc: rounded to 2 MiB from here
        (10 * MIB + 1, 12 * MIB),
        (GIB + 1, GIB + 2 * MIB),
    ],
)
def test_segment_the_allocator_maps(requested: int, mapped: int) -> None:
    assert segment_bytes(requested) == mapped
    assert isinstance(segment_bytes(requested), int)


@pytest.mark.parametrize(
    ("value", "slack"),
    [
        (0, 0),
        (1023, 0),  # printed in bytes: exact
        (KIB, KIB // 200),
        (MIB - 1, KIB // 200),
        (MIB, MIB // 200),
        (GIB - 1, MIB // 200),
        (GIB, GIB // 200),
        (TIB - 1, GIB // 200),
        (TIB, TIB // 200),
    ],
)
def test_rounding_of_a_printed_size(value: int, slack: int) -> None:
    """Two decimals in the largest unit the size reaches: half of 0.01 of that unit."""
    assert printed_slack(value) == slack
    assert isinstance(printed_slack(value), int)


def test_budget_boundary_includes_the_mapped_segment_and_the_rounding() -> None:
    """Over the cap when reserved + the segment the request maps + the printed rounding of both
    figures reaches "allowed"."""
    allowed = 8 * GIB
    slack = printed_slack(allowed) + printed_slack(7 * GIB)
    at = allowed - 20 * MIB - slack  # a 2 MiB request maps a 20 MiB segment
    reaching = CudaOom("CUDA", "current", requested_bytes=2 * MIB, allowed_bytes=allowed,
                       allocated_bytes=7 * GIB, reserved_unallocated_bytes=at - 7 * GIB,
                       free_bytes=10 * GIB)  # fmt: skip
    assert reaching.over_budget is True and reaching.kind == "budget"
    short = CudaOom("CUDA", "current", requested_bytes=2 * MIB, allowed_bytes=allowed,
                    allocated_bytes=7 * GIB, reserved_unallocated_bytes=at - 7 * GIB - 1,
                    free_bytes=10 * GIB)  # fmt: skip
    assert short.over_budget is False
