"""The GPU code on real captured data (tests/data/gpu/SOURCES.md says where each file is from).

- ``memory-stats-*.txt``: ``torch.cuda.memory_stats()`` reprs pasted in a public issue, read
  pair by pair and fed to ``harness._gpu.allocator_counters`` (the cuda_oom event fields).
- ``nvidia-smi-*.txt``: ``nvidia-smi --query-gpu=memory.used,memory.total --format=csv``
  output, turned into what pynvml's ``nvmlDeviceGetMemoryInfo`` returns (bytes; v1 struct, where
  ``used + free == total``) and fed to ``qualify.gpu.NvmlSampler`` through a stand-in NVML
  module at the seam.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from harness._gpu import allocator_counters
from qualify.gpu import NvmlSampler, read_summary

GPU_DATA = Path(__file__).resolve().parent / "data" / "gpu"
MIB = 1 << 20

# Every complete ('key', integer) pair of an OrderedDict repr (torch 1.x prints OrderedDict).
_PAIR = re.compile(r"\('[\w.]+', \d+\)")

# file -> (allocated_bytes, reserved_bytes, inactive_split_bytes, num_alloc_retries, num_ooms)
# as printed in the file; None where the fragment does not hold that key.
MEMORY_STATS: dict[str, tuple[int | None, ...]] = {
    "memory-stats-fragment-torch1.7-after-2-ooms-retries-33-minkowski-359.txt": (
        None, 50331648, None, 33, 2),
    "memory-stats-fragment-torch1.7-after-17-ooms-retries-52-minkowski-359.txt": (
        None, 2048917504, None, 52, 17),
    "memory-stats-fragment-torch1.7-inactive-split-retries-2-no-oom-minkowski-359.txt": (
        None, 50331648, 7514112, 2, 0),
    "memory-stats-fragment-torch1.7-allocated-bytes-minkowski-359.txt": (
        42817536, None, None, None, None),
}  # fmt: skip

# file -> per device (used MiB, total MiB), in nvidia-smi's row order (device index order).
NVIDIA_SMI_CSV: dict[str, list[tuple[int, int]]] = {
    "nvidia-smi-query-gpu-memory-csv-h800-2gpus-build-nanogpt.txt": [(22001, 81559)] * 2,
}


def read_memory_stats(path: Path) -> dict[str, int]:
    """The pairs of a pasted memory_stats() repr (line breaks inside names are the paste's)."""
    flat = path.read_text(encoding="utf-8").replace("\n", "")
    return dict(ast.literal_eval(pair) for pair in _PAIR.findall(flat))


def read_query_gpu_csv(path: Path) -> list[tuple[int, int]]:
    """(used MiB, total MiB) rows after the ``memory.used [MiB], memory.total [MiB]`` header."""
    lines = path.read_text(encoding="utf-8").splitlines()
    start = lines.index("memory.used [MiB], memory.total [MiB]") + 1
    rows = []
    for line in lines[start:]:
        match = re.fullmatch(r"(\d+) MiB, (\d+) MiB", line)
        if match is None:
            break
        rows.append((int(match.group(1)), int(match.group(2))))
    return rows


def test_every_file_has_a_row() -> None:
    assert sorted(p.name for p in GPU_DATA.glob("memory-stats-*.txt")) == sorted(MEMORY_STATS)
    assert sorted(p.name for p in GPU_DATA.glob("nvidia-smi-*.txt")) == sorted(NVIDIA_SMI_CSV)


@pytest.mark.parametrize("name", sorted(MEMORY_STATS))
def test_allocator_counters_on_real_memory_stats(name: str) -> None:
    stats = read_memory_stats(GPU_DATA / name)
    fields = ("allocated_bytes", "reserved_bytes", "inactive_split_bytes")
    fields += ("num_alloc_retries", "num_ooms")
    assert allocator_counters(stats) == dict(zip(fields, MEMORY_STATS[name], strict=True))


@pytest.mark.parametrize("name", sorted(MEMORY_STATS))
def test_real_memory_stats_are_intact(name: str) -> None:
    # The allocator keeps current == allocated - freed for every stat: a fragment read wrong
    # (a pair lost or split at a line break) shows here.
    stats = read_memory_stats(GPU_DATA / name)
    checked = 0
    for key, current in stats.items():
        prefix, _, metric = key.rpartition(".")
        if metric == "current" and f"{prefix}.allocated" in stats and f"{prefix}.freed" in stats:
            assert current == stats[f"{prefix}.allocated"] - stats[f"{prefix}.freed"], key
            checked += 1
    assert checked > 0


class StandInNvml:
    """pynvml at the seam: returns the captured readings in pynvml's own types."""

    def __init__(self, rows: list[tuple[int, int]], pynvml: Any):
        self._rows = rows
        self._pynvml = pynvml
        self.shut_down = False

    def nvmlInit(self) -> None:
        pass

    def nvmlDeviceGetCount(self) -> int:
        return len(self._rows)

    def nvmlDeviceGetHandleByIndex(self, index: int) -> int:
        return index

    def nvmlDeviceGetMemoryInfo(self, handle: int) -> Any:
        used_mib, total_mib = self._rows[handle]
        used, total = used_mib * MIB, total_mib * MIB
        # nvmlDeviceGetMemoryInfo (v1): used includes the driver's reserve, used + free == total.
        if self._pynvml is None:
            return SimpleNamespace(total=total, free=total - used, used=used)
        return self._pynvml.c_nvmlMemory_t(total=total, free=total - used, used=used)

    def nvmlDeviceGetComputeRunningProcesses(self, handle: int) -> list[Any]:
        return []  # --query-gpu carries no process rows

    def nvmlShutdown(self) -> None:
        self.shut_down = True


@pytest.mark.parametrize("name", sorted(NVIDIA_SMI_CSV))
def test_sampler_on_real_nvidia_smi_readings(name: str, tmp_path: Path) -> None:
    rows = read_query_gpu_csv(GPU_DATA / name)
    assert rows == NVIDIA_SMI_CSV[name]
    try:
        import pynvml
    except ImportError:
        pynvml = None
    nvml = StandInNvml(rows, pynvml)
    sampler = NvmlSampler(nvml=nvml)
    devices = [[i, used * MIB, total * MIB, 0] for i, (used, total) in enumerate(rows)]
    assert sampler.sample() == {"available": True, "devices": devices}
    sampler.write_summary(tmp_path)
    assert nvml.shut_down
    assert read_summary(tmp_path) == {
        "available": True,
        "samples": 1,
        "devices": [
            {"index": i, "total_bytes": total * MIB, "peak_used_bytes": used * MIB,
             "peak_run_bytes": 0}
            for i, (used, total) in enumerate(rows)
        ],
        "peak_process_bytes": {},
    }  # fmt: skip


def test_h800_reading_in_bytes() -> None:
    # 22001 MiB of 81559 MiB as pynvml returns them (nvidia-smi prints MiB, NVML counts bytes).
    name = "nvidia-smi-query-gpu-memory-csv-h800-2gpus-build-nanogpt.txt"
    (used, total), _ = read_query_gpu_csv(GPU_DATA / name)
    assert (used * MIB, total * MIB) == (23069720576, 85520809984)
