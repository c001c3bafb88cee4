"""Host-side GPU memory sampling through NVML (nvidia-ml-py's ``pynvml``, imported lazily).

The monitor owns one ``NvmlSampler`` and calls ``sample()`` once per sample (or every Nth): it
returns the compact record to put under ``"gpu"`` in the timeline and keeps peaks. No GPU, no
libnvidia-ml or no pynvml is recorded as absent (``{"available": false, "reason": ...}``),
never an error: the same run works on a CPU host.

NVML sees device memory as the driver does (CUDA contexts, cuBLAS workspaces, NCCL buffers and
other processes included); the PyTorch budget bounds only PyTorch's caching allocator. The two
are reported side by side for that reason.
"""

from __future__ import annotations

import contextlib
import importlib
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from harness import contract
from qualify.atomic import write_json_atomic
from qualify.records import frozen_record


@frozen_record
class DeviceReading:
    """One device at one sample, in bytes (pynvml's c_nvmlMemory_t: total, free, used)."""

    index: int
    total_bytes: int
    used_bytes: int
    processes: tuple[tuple[int, int | None], ...]
    """(pid, usedGpuMemory) from nvmlDeviceGetComputeRunningProcesses; None when NVML cannot
    tell (WDDM, or no permission for another container's process)."""
    reserved_bytes: int | None = None
    """Memory the driver keeps for itself (nvmlMemory_v2; None: only v1 answered, whose
    ``used`` includes it)."""
    mps_pids: tuple[int, ...] = ()
    """Pids NVML lists as MPS clients (nvmlDeviceGetMPSComputeRunningProcesses)."""


def device_reading(
    index: int, memory: Any, processes: Sequence[Any], mps_processes: Sequence[Any] = ()
) -> DeviceReading:
    """A reading from what pynvml returns: a ``c_nvmlMemory_t`` and process info objects.

    ``mps_processes`` (MPS clients) are merged into ``processes`` once per pid, keeping the
    reading that has a size.
    """
    merged: dict[int, int | None] = {}
    for info in (*processes, *mps_processes):
        used = None if info.usedGpuMemory is None else int(info.usedGpuMemory)
        pid = int(info.pid)
        if merged.get(pid) is None:
            merged[pid] = used
    return DeviceReading(
        index=index,
        total_bytes=int(memory.total),
        used_bytes=int(memory.used),
        reserved_bytes=int(memory.reserved) if hasattr(memory, "reserved") else None,
        processes=tuple(merged.items()),
        mps_pids=tuple(int(info.pid) for info in mps_processes),
    )


def sample_record(readings: Sequence[DeviceReading], pids: set[int] | None) -> dict[str, Any]:
    """The timeline entry: per device ``[index, used, total, run_bytes]`` and the run's pids.

    ``run_bytes`` sums the memory of the run's own processes (``pids``, None: all of them).
    """
    devices = []
    for reading in readings:
        ours = [(pid, used) for pid, used in reading.processes if pids is None or pid in pids]
        run_bytes = sum(used for _, used in ours if used is not None)
        devices.append([reading.index, reading.used_bytes, reading.total_bytes, run_bytes])
    return {"available": True, "devices": devices}


class NvmlSampler:
    """Samples every device; remembers per-device and per-process peaks for the audit.

    Used by qualify/monitor.py:
        self.gpu = NvmlSampler()                       # in __init__
        record["gpu"] = self.gpu.sample(set(pids))     # in _sample, every Nth sample
        self.gpu.write_summary(run_dir)                # after the loop, in run()
    """

    def __init__(
        self, nvml: Any = None, loader: Callable[[], Any] | None = None, mps: bool = False
    ):
        self._nvml = nvml
        self._mps = mps
        """Also list MPS clients (the run's budget is an MPS limit)."""
        self._mps_seen: set[int] = set()
        self._memory_v2: bool | None = None
        self._reserved: dict[int, int] = {}
        self._reason: str | None = None
        self._handles: list[Any] = []
        self._samples = 0
        self._peak_used: dict[int, int] = {}
        self._total: dict[int, int] = {}
        self._peak_run: dict[int, int] = {}
        self._peak_process: dict[int, int] = {}
        self._started = False
        self._loader = loader or _import_pynvml

    def _start(self) -> None:
        self._started = True
        try:
            if self._nvml is None:
                self._nvml = self._loader()
            self._nvml.nvmlInit()
            count = int(self._nvml.nvmlDeviceGetCount())
            self._handles = [self._nvml.nvmlDeviceGetHandleByIndex(i) for i in range(count)]
        except Exception as exc:  # ImportError, NVMLError_LibraryNotFound, DriverNotLoaded...
            self._reason = f"{type(exc).__name__}: {exc}"
            self._nvml = None
            return
        if not self._handles:
            self._reason = "NVML reports no GPU device"

    @property
    def available(self) -> bool:
        """True once NVML is initialized with at least one device."""
        if not self._started:
            self._start()
        return self._reason is None

    def absent(self) -> dict[str, Any]:
        """The record of a host without NVML readings."""
        return {"available": False, "reason": self._reason}

    def _memory_info(self, handle: Any) -> Any:
        """nvmlMemory_v2 (used without the driver's reserve) where the driver has it, else v1."""
        nvml = self._nvml
        version = getattr(nvml, "nvmlMemory_v2", None)
        if self._memory_v2 is not False and version is not None:
            try:
                memory = nvml.nvmlDeviceGetMemoryInfo(handle, version=version)
            except Exception:
                self._memory_v2 = False  # FunctionNotFound on old drivers: v1 from now on
            else:
                self._memory_v2 = True
                return memory
        return nvml.nvmlDeviceGetMemoryInfo(handle)

    def read(self) -> list[DeviceReading]:
        """One reading per device (raises pynvml's NVMLError)."""
        nvml = self._nvml
        readings = []
        for index, handle in enumerate(self._handles):
            memory = self._memory_info(handle)
            processes = nvml.nvmlDeviceGetComputeRunningProcesses(handle)
            clients = nvml.nvmlDeviceGetMPSComputeRunningProcesses(handle) if self._mps else []
            readings.append(device_reading(index, memory, processes, clients))
        return readings

    def sample(self, pids: set[int] | None = None) -> dict[str, Any]:
        """One timeline entry; an NVML failure mid-run is recorded in the entry, not raised."""
        if not self.available:
            return self.absent()
        try:
            readings = self.read()
        except Exception as exc:
            return {"available": True, "error": f"{type(exc).__name__}: {exc}"}
        self.observe(readings, pids)
        return sample_record(readings, pids)

    def observe(self, readings: Sequence[DeviceReading], pids: set[int] | None) -> None:
        """Fold readings into the peaks."""
        self._samples += 1
        for reading in readings:
            index = reading.index
            self._total[index] = reading.total_bytes
            if reading.reserved_bytes is not None:
                self._reserved[index] = reading.reserved_bytes
            self._peak_used[index] = max(self._peak_used.get(index, 0), reading.used_bytes)
            self._mps_seen.update(pid for pid in reading.mps_pids if pids is None or pid in pids)
            run_bytes = 0
            for pid, used in reading.processes:
                if used is None or (pids is not None and pid not in pids):
                    continue
                run_bytes += used
                self._peak_process[pid] = max(self._peak_process.get(pid, 0), used)
            self._peak_run[index] = max(self._peak_run.get(index, 0), run_bytes)

    def summary(self) -> dict[str, Any]:
        """Peaks over the run, for the audit's ``gpu.nvml``."""
        if not self.available:
            return self.absent()
        return {
            "available": True,
            "samples": self._samples,
            "devices": [
                {
                    "index": index,
                    "total_bytes": self._total[index],
                    "peak_used_bytes": self._peak_used[index],
                    "peak_run_bytes": self._peak_run.get(index, 0),
                    "reserved_bytes": self._reserved.get(index),
                }
                for index in sorted(self._total)
            ],
            "peak_process_bytes": {str(pid): used for pid, used in self._peak_process.items()},
            "mps_client_pids": sorted(self._mps_seen) if self._mps else None,
        }

    def write_summary(self, run_dir: Path) -> None:
        """Write the summary (atomically) where the audit reads it, then shut NVML down."""
        write_json_atomic(run_dir / contract.GPU_SUMMARY, self.summary())
        if self._nvml is not None and self._reason is None:
            try:
                self._nvml.nvmlShutdown()
            except Exception as exc:
                self._reason = f"nvmlShutdown: {exc}"


def device_totals(nvml: Any = None) -> tuple[list[int], str]:
    """Each device's total memory in bytes as NVML reads it on this host, and why none ("")."""
    sampler = NvmlSampler(nvml)
    if not sampler.available:
        return [], str(sampler.absent()["reason"])
    try:
        totals = [reading.total_bytes for reading in sampler.read()]
    except Exception as exc:
        return [], f"{type(exc).__name__}: {exc}"
    finally:
        with contextlib.suppress(Exception):
            sampler._nvml.nvmlShutdown()
    return totals, ""


class NVMLError_LibraryNotFound(Exception):
    """What ``pynvml.nvmlInit()`` raises on a host without ``libnvidia-ml.so.1``, raised here
    before ``pynvml`` is imported: the reason recorded is the one ``pynvml`` gives."""


_NVML_LIBRARY = "libnvidia-ml.so.1"


def _import_pynvml() -> Any:
    """``pynvml`` (nvidia-ml-py: pure Python, ctypes over ``libnvidia-ml.so.1``, which comes
    with the NVIDIA driver). Importing it defines some two hundred ctypes structures, as many
    instructions as the rest of a run's start; a Linux host where the library does not load
    (no driver: every CPU runner) is told so by one ``dlopen`` instead, in ``pynvml``'s words."""
    if "pynvml" not in sys.modules and sys.platform.startswith("linux"):
        import ctypes
        from importlib.util import find_spec

        if find_spec("pynvml") is not None:
            try:
                ctypes.CDLL(_NVML_LIBRARY)
            except OSError:
                raise NVMLError_LibraryNotFound("NVML Shared Library Not Found") from None
    return importlib.import_module("pynvml")
