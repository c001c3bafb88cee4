"""The GPU code on real captured data (tests/data/gpu/SOURCES.md says where each file is from).

- ``memory-stats-*.txt``: ``torch.cuda.memory_stats()`` reprs pasted in a public issue, read
  pair by pair and fed to ``harness._gpu.allocator_counters`` (the cuda_oom event fields).
- ``nvidia-smi-query-gpu-*.txt``: ``nvidia-smi --query-gpu=memory.used,memory.total
  --format=csv`` output, turned into what pynvml's ``nvmlDeviceGetMemoryInfo`` returns (bytes; v1
  struct, where ``used + free == total``) and fed to ``qualify.gpu.NvmlSampler`` through a
  stand-in NVML module at the seam.
- ``nvidia-smi-q-xml-*.xml``: whole ``nvidia-smi -q -x`` captures (device memory and the process
  list of one snapshot), fed to the sampler the same way; per-process ``N/A`` (WDDM) becomes
  ``usedGpuMemory=None`` as pynvml returns it.
- ``nvidia-smi-processes-*`` / ``nvidia-smi-mig-devices-*``: the process table and the MIG
  device table of one ``nvidia-smi`` printout, per MIG instance.
"""

from __future__ import annotations

import ast
import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from harness._gpu import allocator_counters
from qualify.evidence.cuda_oom import parse_cuda_oom
from qualify.nvml import (
    DeviceReading,
    NvmlSampler,
    device_reading,
    sample_record,
)
from qualify.rundir import RunDir

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
    query_gpu = GPU_DATA.glob("nvidia-smi-query-gpu-*.txt")
    assert sorted(p.name for p in query_gpu) == sorted(NVIDIA_SMI_CSV)
    assert sorted(p.name for p in GPU_DATA.glob("nvidia-smi-q-xml-*.xml")) == sorted(NVSMI_XML)


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
    summary = RunDir(tmp_path).gpu_summary()
    assert summary is not None
    kept = ("available", "samples", "devices", "peak_process_bytes")
    assert {key: summary[key] for key in kept} == {
        "available": True,
        "samples": 1,
        "devices": [
            {"index": i, "total_bytes": total * MIB, "peak_used_bytes": used * MIB,
             "peak_run_bytes": 0, "reserved_bytes": None}
            for i, (used, total) in enumerate(rows)
        ],
        "peak_process_bytes": {},
    }  # fmt: skip


def test_h800_reading_in_bytes() -> None:
    # 22001 MiB of 81559 MiB as pynvml returns them (nvidia-smi prints MiB, NVML counts bytes).
    name = "nvidia-smi-query-gpu-memory-csv-h800-2gpus-build-nanogpt.txt"
    (used, total), _ = read_query_gpu_csv(GPU_DATA / name)
    assert (used * MIB, total * MIB) == (23069720576, 85520809984)


# --- nvidia-smi -q -x captures (netdata's go.d nvidia_smi testdata) ---------------------------

NA = 0xFFFFFFFF  # NVML_VALUE_NOT_AVAILABLE: pynvml's gpuInstanceId/computeInstanceId off MIG

# file -> (product_name, (total, reserved, used, free) MiB of the device, process count)
NVSMI_XML: dict[str, tuple[str, tuple[int, int, int, int], int]] = {
    "nvidia-smi-q-xml-rtx2080-wddm-driver516-netdata.xml": (
        "NVIDIA GeForce RTX 2080", (8192, 182, 862, 7147), 26),
    "nvidia-smi-q-xml-rtx3060-laptop-driver515-netdata.xml": (
        "NVIDIA GeForce RTX 3060 Laptop GPU", (6144, 197, 5, 5940), 1),
    "nvidia-smi-q-xml-a100-sxm4-40gb-mig-driver510-netdata.xml": (
        "NVIDIA A100-SXM4-40GB", (40960, 605, 38, 40315), 0),
    "nvidia-smi-q-xml-h200-driver580-gpu-check.xml": (
        "NVIDIA H200", (143771, 616, 4, 143153), 0),
}  # fmt: skip


def _mib(text: str | None) -> int | None:
    """ "862 MiB" -> 862; "N/A" -> None (nvidia-smi's spelling of NVML_VALUE_NOT_AVAILABLE)."""
    value = (text or "").strip()
    if value == "N/A":
        return None
    match = re.fullmatch(r"(\d+) MiB", value)
    assert match is not None, value
    return int(match.group(1))


def _fb(node: ET.Element) -> tuple[int, int, int, int]:
    fb = node.find("fb_memory_usage")
    assert fb is not None
    values = [_mib(fb.findtext(name)) for name in ("total", "reserved", "used", "free")]
    assert None not in values
    return tuple(values)  # type: ignore[return-value]


def _instance_id(text: str | None) -> int:
    return NA if (text or "").strip() == "N/A" else int(text or "")


def read_nvsmi_xml(path: Path) -> dict[str, Any]:
    """The one GPU of a ``nvidia-smi -q -x`` capture: name, FB memory, processes, MIG devices."""
    gpus = ET.parse(path).getroot().findall("gpu")
    assert len(gpus) == 1
    gpu = gpus[0]
    processes = [
        {
            "pid": int(info.findtext("pid") or ""),
            "type": (info.findtext("type") or "").strip(),
            "used_mib": _mib(info.findtext("used_memory")),
            "gpu_instance_id": _instance_id(info.findtext("gpu_instance_id")),
            "compute_instance_id": _instance_id(info.findtext("compute_instance_id")),
        }
        for info in gpu.iter("process_info")
    ]
    mig = [
        {
            "gpu_instance_id": int(dev.findtext("gpu_instance_id") or ""),
            "compute_instance_id": int(dev.findtext("compute_instance_id") or ""),
            "fb": _fb(dev),
        }
        for dev in gpu.iter("mig_device")
    ]
    name = (gpu.findtext("product_name") or "").strip()
    return {"name": name, "fb": _fb(gpu), "processes": processes, "mig": mig}


def _pynvml() -> Any:
    try:
        import pynvml
    except ImportError:
        return None
    return pynvml


def nvml_memory(pynvml: Any, total_mib: int, free_mib: int) -> Any:
    """What ``nvmlDeviceGetMemoryInfo`` (v1) returns for that reading: used = total - free.

    nvidia-smi prints the v2 split (reserved and used apart); v1 counts the reserve as used.
    """
    total, free = total_mib * MIB, free_mib * MIB
    if pynvml is None:
        return SimpleNamespace(total=total, free=free, used=total - free)
    return pynvml.c_nvmlMemory_t(total=total, free=free, used=total - free)


def nvml_process(pynvml: Any, row: dict[str, Any]) -> Any:
    """What ``nvmlDeviceGetComputeRunningProcesses`` returns for a process row (None for N/A)."""
    used = None if row["used_mib"] is None else row["used_mib"] * MIB
    fields = {
        "pid": row["pid"],
        "usedGpuMemory": used,
        "gpuInstanceId": row["gpu_instance_id"],
        "computeInstanceId": row["compute_instance_id"],
    }
    return SimpleNamespace(**fields) if pynvml is None else pynvml.nvmlFriendlyObject(fields)


class CaptureNvml:
    """pynvml at the seam, answering with one ``nvidia-smi -q -x`` capture."""

    def __init__(self, capture: dict[str, Any], pynvml: Any):
        self.capture = capture
        self.pynvml = pynvml

    def nvmlInit(self) -> None:
        pass

    def nvmlDeviceGetCount(self) -> int:
        return 1

    def nvmlDeviceGetHandleByIndex(self, index: int) -> int:
        return index

    def nvmlDeviceGetMemoryInfo(self, handle: int, version: int | None = None) -> Any:
        total, reserved, used, free = self.capture["fb"]
        if version is None:
            return nvml_memory(self.pynvml, total, free)
        # nvmlDeviceGetMemoryInfo_v2: the driver's reserve apart from used, as nvidia-smi shows.
        return self.pynvml.c_nvmlMemory_v2_t(
            version, total * MIB, reserved * MIB, free * MIB, used * MIB
        )

    def nvmlDeviceGetComputeRunningProcesses(self, handle: int) -> list[Any]:
        # nvidia-smi lists graphics (G), compute (C) and both (C+G); the compute list holds C.
        rows = [row for row in self.capture["processes"] if "C" in row["type"].split("+")]
        return [nvml_process(self.pynvml, row) for row in rows]

    def nvmlShutdown(self) -> None:
        pass


@pytest.mark.parametrize("name", sorted(NVSMI_XML))
def test_real_nvsmi_xml_reads_as_captured(name: str) -> None:
    capture = read_nvsmi_xml(GPU_DATA / name)
    product, fb, process_count = NVSMI_XML[name]
    assert (capture["name"], capture["fb"], len(capture["processes"])) == (
        product,
        fb,
        process_count,
    )


@pytest.mark.parametrize("name", sorted(NVSMI_XML))
def test_real_fb_memory_blocks_add_up_to_the_rounding(name: str) -> None:
    # The driver splits total into reserved + used + free in bytes; nvidia-smi prints each one
    # in whole MiB, so the printed parts need not add up: in the older captures they fall 1 or
    # 2 MiB short of the total, in the H200's (driver 580) they are 2 MiB over. A test that
    # expects an exact sum fails; one that expects "never over" fails on the H200.
    capture = read_nvsmi_xml(GPU_DATA / name)
    blocks = [capture["fb"]] + [device["fb"] for device in capture["mig"]]
    for total, reserved, used, free in blocks:
        assert abs(total - (reserved + used + free)) <= 2


def test_wddm_capture_has_no_per_process_memory() -> None:
    # Windows (WDDM driver model): NVML cannot tell per-process memory; nvidia-smi prints N/A
    # for each of the 26 C+G processes, pynvml returns usedGpuMemory=None.
    name = "nvidia-smi-q-xml-rtx2080-wddm-driver516-netdata.xml"
    capture = read_nvsmi_xml(GPU_DATA / name)
    rows = capture["processes"]
    assert {row["type"] for row in rows} == {"C+G"}
    assert all(row["used_mib"] is None for row in rows)
    pids = [row["pid"] for row in rows]
    assert len(set(pids)) == 26
    assert (pids[0], pids[-1]) == (7724, 30212)

    pynvml = _pynvml()
    nvml = CaptureNvml(capture, pynvml)
    sampler = NvmlSampler(nvml=nvml)
    total, _, _, free = capture["fb"]
    used_v1 = (total - free) * MIB  # 1045 MiB: used 862 + reserved 182 + 1 MiB of rounding
    assert used_v1 == 1045 * MIB
    # Every pid is the run's, yet nothing is counted: N/A is not zero, it is left out.
    assert sampler.sample(set(pids)) == {
        "available": True,
        "devices": [[0, used_v1, total * MIB, 0]],
    }
    assert sampler.sample(None)["devices"] == [[0, used_v1, total * MIB, 0]]
    memory, processes = (
        nvml.nvmlDeviceGetMemoryInfo(0),
        nvml.nvmlDeviceGetComputeRunningProcesses(0),
    )
    reading = device_reading(0, memory, processes)
    assert reading.processes == tuple((pid, None) for pid in pids)
    summary = sampler.summary()
    assert summary["samples"] == 2
    assert summary["peak_process_bytes"] == {}
    assert summary["devices"] == [
        {"index": 0, "total_bytes": total * MIB, "peak_used_bytes": used_v1,
         "peak_run_bytes": 0, "reserved_bytes": None}
    ]  # fmt: skip


def test_v2_memory_reading_keeps_the_reserve_out_of_used() -> None:
    # The same WDDM capture through nvmlMemory_v2: used is the 862 MiB nvidia-smi printed and
    # the driver's 182 MiB reserve is reported apart (v1 counted both as used: 1045 MiB).
    pynvml = _pynvml()
    if pynvml is None:
        pytest.skip("pynvml is not installed")
    capture = read_nvsmi_xml(GPU_DATA / "nvidia-smi-q-xml-rtx2080-wddm-driver516-netdata.xml")
    nvml = CaptureNvml(capture, pynvml)
    nvml.nvmlMemory_v2 = pynvml.nvmlMemory_v2  # type: ignore[attr-defined]
    sampler = NvmlSampler(nvml=nvml)
    total, reserved, used, _ = capture["fb"]
    assert (reserved, used) == (182, 862)
    assert sampler.sample(None)["devices"] == [[0, used * MIB, total * MIB, 0]]
    device = sampler.summary()["devices"][0]
    assert (device["peak_used_bytes"], device["reserved_bytes"]) == (used * MIB, reserved * MIB)


def test_graphics_only_process_is_not_a_compute_process() -> None:
    # Linux laptop: Xorg (type G, 4 MiB) is the only process. The compute list NVML gives the
    # sampler is empty, so run_bytes is 0 while the device's used (v1) counts Xorg and the
    # driver's reserve: 6144 - 5940 = 204 MiB.
    name = "nvidia-smi-q-xml-rtx3060-laptop-driver515-netdata.xml"
    capture = read_nvsmi_xml(GPU_DATA / name)
    assert capture["processes"] == [
        {"pid": 28543, "type": "G", "used_mib": 4, "gpu_instance_id": NA,
         "compute_instance_id": NA}
    ]  # fmt: skip
    sampler = NvmlSampler(nvml=CaptureNvml(capture, _pynvml()))
    assert sampler.sample(None) == {"available": True, "devices": [[0, 204 * MIB, 6144 * MIB, 0]]}
    assert sampler.summary()["peak_process_bytes"] == {}


def test_mig_parent_used_is_the_sum_of_its_instances() -> None:
    # A100-SXM4-40GB with two MIG instances (GI 1 and GI 2, 19968 MiB each), no process: the
    # parent's used (38 MiB) is its instances' 19 + 19 MiB; the parent alone carries the
    # reserve (605 MiB), the instances report 0 reserved.
    name = "nvidia-smi-q-xml-a100-sxm4-40gb-mig-driver510-netdata.xml"
    capture = read_nvsmi_xml(GPU_DATA / name)
    assert [(d["gpu_instance_id"], d["compute_instance_id"]) for d in capture["mig"]] == [
        (1, 0),
        (2, 0),
    ]
    _, reserved, used, _ = capture["fb"]
    assert sum(d["fb"][2] for d in capture["mig"]) == used == 38
    assert [d["fb"][1] for d in capture["mig"]] == [0, 0]
    assert reserved == 605
    sampler = NvmlSampler(nvml=CaptureNvml(capture, _pynvml()))
    # v1 used = 40960 - 40315 = 645 MiB = 605 reserved + 38 used + 2 MiB of rounding.
    assert sampler.sample(None) == {"available": True, "devices": [[0, 645 * MIB, 40960 * MIB, 0]]}


# --- one nvidia-smi printout on a MIG host (XuehaiPan/nvitop PR #8) ----------------------------

_PROCESS_ROW = re.compile(
    r"\|\s+(\d+)\s+(N/A|\d+)\s+(N/A|\d+)\s+(\d+)\s+(C\+G|C|G)\s+(\S+)\s+(\d+)MiB \|"
)
_MIG_ROW = re.compile(r"\|\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+\|\s+(\d+)MiB / (\d+)MiB \|")

MIG_PROCESSES = "nvidia-smi-processes-mig-hydra1-nvitop-pr8-turn10.txt"
MIG_DEVICES = "nvidia-smi-mig-devices-fragment-hydra1-nvitop-pr8-turn10.txt"


def read_process_table(path: Path) -> list[dict[str, Any]]:
    """The rows of nvidia-smi's process table (GPU, GI, CI, PID, type, name, MiB)."""
    rows = []
    for gpu, gi, ci, pid, kind, name, mib in _PROCESS_ROW.findall(path.read_text("utf-8")):
        rows.append(
            {
                "gpu": int(gpu),
                "gpu_instance_id": _instance_id(gi),
                "compute_instance_id": _instance_id(ci),
                "pid": int(pid),
                "type": kind,
                "name": name,
                "used_mib": int(mib),
            }
        )
    return rows


def read_mig_devices(path: Path) -> list[dict[str, int]]:
    """The complete Memory-Usage cells of nvidia-smi's MIG device table."""
    keys = ("gpu", "gpu_instance_id", "compute_instance_id", "mig_dev", "used_mib", "total_mib")
    text = path.read_text("utf-8")
    return [dict(zip(keys, map(int, row), strict=True)) for row in _MIG_ROW.findall(text)]


def test_mig_printout_reads_as_captured() -> None:
    rows = read_process_table(GPU_DATA / MIG_PROCESSES)
    assert [(r["gpu"], r["pid"], r["used_mib"]) for r in rows] == [
        (0, 23824, 10725),
        (0, 33724, 12247),
        (1, 34965, 14195),
        (1, 42152, 149),
        (1, 46505, 9807),
        (2, 26294, 15191),
        (3, 46064, 9833),
    ]
    assert {r["type"] for r in rows} == {"C"}
    devices = read_mig_devices(GPU_DATA / MIG_DEVICES)
    assert [(d["gpu"], d["gpu_instance_id"], d["used_mib"]) for d in devices] == [
        (1, 3, 14366),
        (1, 5, 9826),
        (1, 6, 13),
        (2, 3, 15210),
    ]
    assert {d["total_mib"] for d in devices} == {19968}


def _instance_readings(pynvml: Any) -> list[DeviceReading]:
    """One reading per MIG instance of the printout, its processes matched by (GPU, GI, CI)."""
    rows = read_process_table(GPU_DATA / MIG_PROCESSES)
    readings = []
    for index, device in enumerate(read_mig_devices(GPU_DATA / MIG_DEVICES)):
        key = (device["gpu"], device["gpu_instance_id"], device["compute_instance_id"])
        mine = [
            r for r in rows if (r["gpu"], r["gpu_instance_id"], r["compute_instance_id"]) == key
        ]
        memory = nvml_memory(pynvml, device["total_mib"], device["total_mib"] - device["used_mib"])
        readings.append(device_reading(index, memory, [nvml_process(pynvml, r) for r in mine]))
    return readings


def test_mig_instance_used_covers_its_processes() -> None:
    # Per-process memory leaves out the instance's own context, so an instance's used is at
    # least the sum of its processes: 14366 >= 14195 + 149, 9826 >= 9807, 13 >= 0 (no
    # process), 15210 >= 15191 (19 to 22 MiB apart).
    readings = _instance_readings(_pynvml())
    gaps = [(r.used_bytes - sum(used or 0 for _, used in r.processes)) // MIB for r in readings]
    assert gaps == [22, 19, 13, 19]


def test_mig_instances_through_the_sampler() -> None:
    readings = _instance_readings(_pynvml())
    assert [r.processes for r in readings] == [
        ((34965, 14195 * MIB), (42152, 149 * MIB)),
        ((46505, 9807 * MIB),),
        (),
        ((26294, 15191 * MIB),),
    ]
    # The run owns the two "python" processes of GPU 1; python3 (42152) and GPU 2 are not its.
    pids = {34965, 46505}
    record = sample_record(readings, pids)
    assert [device[3] for device in record["devices"]] == [14195 * MIB, 9807 * MIB, 0, 0]
    assert [device[3] for device in sample_record(readings, None)["devices"]] == [
        (14195 + 149) * MIB,
        9807 * MIB,
        0,
        15191 * MIB,
    ]
    sampler = NvmlSampler(nvml=object())
    sampler._started = True  # seam: the readings are given, NVML itself is not called
    sampler.observe(readings, pids)
    summary = sampler.summary()
    assert summary["peak_process_bytes"] == {"34965": 14884536320, "46505": 10283384832}
    assert [d["peak_run_bytes"] for d in summary["devices"]] == [14884536320, 10283384832, 0, 0]
    assert [d["peak_used_bytes"] for d in summary["devices"]] == [
        14366 * MIB,
        9826 * MIB,
        13 * MIB,
        15210 * MIB,
    ]


def test_a_legacy_message_cut_mid_line_is_still_legacy() -> None:
    # The after-2-OOMs fragment ends inside a torch 1.7 message: "OOM occurred: CUDA out of
    # memory. Tried to allocate 1.13 GiB (GPU 0; 15.78 GiB total capacity" (cut there).
    text = GPU_DATA / "memory-stats-fragment-torch1.7-after-2-ooms-retries-33-minkowski-359.txt"
    oom = parse_cuda_oom(text.read_text(encoding="utf-8"))
    assert oom is not None
    assert (oom.format, oom.device, oom.requested_bytes) == ("legacy", 0, int(1.13 * (1 << 30)))
    assert oom.total_bytes is None and oom.kind == "capacity"


# --- captured by scripts/gpu-check.sh on an H200 (torch 2.11.0+cu130, driver 580.159.04)


def _capture(name: str) -> dict[str, Any]:
    return json.loads((GPU_DATA / name).read_text())


def test_torch_2_11s_budget_oom_on_an_h200_reads_as_the_budget() -> None:
    """A 2 GiB tensor under a 1 GiB per-process fraction, with 139 GiB free on the device."""
    capture = _capture("cuda-oom-torch2.11-h200-budget-1gib-memory-stats.json")
    oom = parse_cuda_oom(capture["message"])
    assert oom is not None and oom.format == "current"
    assert (oom.kind, oom.requested_bytes, oom.allowed_bytes) == ("budget", 2 << 30, 1 << 30)
    assert oom.room_on_device is True
    stats = capture["memory_stats"]
    assert allocator_counters(stats) == {
        "allocated_bytes": 4194304, "reserved_bytes": 20971520, "inactive_split_bytes": 0,
        "num_alloc_retries": 1, "num_ooms": 1,
    }  # fmt: skip
    for key, current in stats.items():  # the allocator's own bookkeeping holds in the capture
        prefix, _, metric = key.rpartition(".")
        if metric == "current" and f"{prefix}.allocated" in stats:
            assert current == stats[f"{prefix}.allocated"] - stats[f"{prefix}.freed"], key


def test_torch_2_11s_capacity_oom_on_an_h200_reads_as_capacity() -> None:
    """Twice the device, no budget: the device's own capacity refused it."""
    capture = _capture("cuda-oom-torch2.11-h200-capacity.json")
    oom = parse_cuda_oom(capture["message"])
    assert oom is not None and oom.kind == "capacity" and oom.allowed_bytes is None
    assert oom.requested_bytes == 300218213990 and oom.room_on_device is False
    assert abs(oom.total_bytes - capture["total"]) <= capture["total"] // 1000  # printed rounded


def test_the_last_gasp_of_a_host_climb_beside_cuda_names_the_line_and_the_allocator() -> None:
    """A real run on the H200 (cgroup v2, --mem 3G): 512 MiB held on the GPU, then host memory
    grown 32 MiB at a time until the kill. The allocating line and torch's allocator state
    (waited for after the stack: its handler runs when the allocation returns) are both there."""
    from qualify.run.last_gasp import LastGaspRecord, allocation_point, allocation_words
    from qualify.rundir.typed_json import from_json

    audit = _capture("audit-last-gasp-host-climb-beside-cuda-h200.json")
    assert (audit["verdict"], audit["sandbox"]["backend"]) == ("OOM_KILLED", "cgroup-v2")
    captures = [from_json(LastGaspRecord, c)[0] for c in audit["memory"]["last_gasp"]]
    site = allocation_point(captures)
    assert site is not None
    assert (site["function"], site["line"], site["test"]) == (
        "grow_host_cache",
        8,
        "test_host_climb_beside_the_gpu",
    )
    assert site["allocator"]["allocated_bytes.all.current"] == 512 << 20
    assert allocation_words(site).startswith(
        "while `grow_host_cache` (test_hosthog.py:8) was allocating, called from "
        "test_host_climb_beside_the_gpu, at "
    )
    assert allocation_words(site).endswith(
        "; its CUDA caching allocator held 512 MiB allocated (512 MiB reserved) on the device"
    )
