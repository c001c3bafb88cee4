"""The second GPU budget mode: CUDA MPS's per-client pinned device memory limit.

Where an MPS control daemon runs, every CUDA process that connects to it is an MPS client,
and the driver enforces ``CUDA_MPS_PINNED_DEVICE_MEM_LIMIT`` on it: a comma-separated list of
``<device ordinal>=<size>`` pairs read from the client's environment when CUDA initializes
(NVIDIA, Multi-Process Service, "Environment Variables", CUDA_MPS_PINNED_DEVICE_MEM_LIMIT;
CUDA >= 11.5). Unlike ``torch.cuda.set_per_process_memory_fraction`` it bounds every device
allocation the process makes through CUDA, whatever the library (PyTorch, cuBLAS, NCCL...).
The limit is per client process: two processes of one run may each use the whole budget.

Clients find the daemon through ``CUDA_MPS_PIPE_DIRECTORY`` (default ``/tmp/nvidia-mps``),
where the control daemon keeps its ``control`` endpoint (the docs speak of named pipes and
UNIX domain sockets; current daemons log "using socket .../control", so both are accepted) and
``nvidia-cuda-mps-control.pid``.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from pathlib import Path

from qualify.errors import UsageError
from qualify.records import frozen_record

ENV_LIMIT = "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"
ENV_PIPE_DIRECTORY = "CUDA_MPS_PIPE_DIRECTORY"
DEFAULT_PIPE_DIRECTORY = "/tmp/nvidia-mps"
PID_FILE = "nvidia-cuda-mps-control.pid"
MODES = ("torch", "mps", "auto")
MIB = 1 << 20


@frozen_record
class MpsDaemon:
    """An MPS control daemon this host's CUDA clients would connect to."""

    pipe_directory: Path
    control: str
    """What ``control`` is: "socket" or "fifo"."""
    pid: int | None
    """The control daemon's pid from its pid file (None: no pid file)."""

    def as_dict(self) -> dict[str, object]:
        """For the audit."""
        directory = str(self.pipe_directory)
        return {"pipe_directory": directory, "control": self.control, "pid": self.pid}


def pipe_directory(environ: Mapping[str, str]) -> Path:
    """Where clients look for the daemon (``CUDA_MPS_PIPE_DIRECTORY``, else the default)."""
    return Path(environ.get(ENV_PIPE_DIRECTORY) or DEFAULT_PIPE_DIRECTORY)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def find_daemon(environ: Mapping[str, str]) -> tuple[MpsDaemon | None, str]:
    """The daemon clients would reach, or None and why not (one line)."""
    directory = pipe_directory(environ)
    control = directory / "control"
    try:
        mode = control.stat().st_mode
    except FileNotFoundError:
        return None, f"no MPS control daemon: {control} does not exist"
    except OSError as exc:
        return None, f"no MPS control daemon: {control}: {exc.strerror}"
    if stat.S_ISSOCK(mode):
        kind = "socket"
    elif stat.S_ISFIFO(mode):
        kind = "fifo"
    else:
        return None, f"no MPS control daemon: {control} is neither a socket nor a FIFO"
    pid: int | None = None
    try:
        pid = int((directory / PID_FILE).read_text(encoding="ascii").strip())
    except FileNotFoundError:
        pid = None
    except (OSError, ValueError):
        return None, f"no MPS control daemon: {directory / PID_FILE} does not hold a pid"
    if pid is not None and not _pid_alive(pid):
        return None, f"no MPS control daemon: pid {pid} in {directory / PID_FILE} is not running"
    return MpsDaemon(directory, kind, pid), ""


def limit_value(budget_bytes: int, devices: int) -> str:
    """``CUDA_MPS_PINNED_DEVICE_MEM_LIMIT`` for ``devices`` ordinals, in whole MiB.

    Rounded down, so the limit in effect is never above the budget asked for. The harness
    reads it back per device with ``harness._gpu.mps_limit_bytes``.
    """
    if devices < 1:
        raise ValueError(f"an MPS limit needs at least one device, got {devices}")
    mib = budget_bytes // MIB
    if mib < 1:
        raise ValueError(f"an MPS limit of {budget_bytes} bytes is below 1 MiB")
    return ",".join(f"{ordinal}={mib}M" for ordinal in range(devices))


@frozen_record
class GpuBudgetPlan:
    """How the run's GPU budget is enforced, decided on the host before the run."""

    mode: str
    """"torch" (set_per_process_memory_fraction, by the harness) or "mps"."""
    budget_bytes: int
    env: Mapping[str, str]
    """Variables the sandbox gets on top of QUALIFY_GPU_BUDGET_BYTES."""
    daemon: MpsDaemon | None = None
    why: str = ""
    """Why this mode (auto) or what was checked."""

    def as_dict(self) -> dict[str, object]:
        """For the audit."""
        return {
            "mode": self.mode,
            "budget_bytes": self.budget_bytes,
            "env": dict(self.env),
            "mps_daemon": self.daemon.as_dict() if self.daemon else None,
            "why": self.why,
        }


def plan_budget(
    mode: str, budget_bytes: int, environ: Mapping[str, str], device_count: int | None
) -> GpuBudgetPlan:
    """Decide the budget mode; UsageError (one line) for what cannot work on this host.

    ``device_count`` is NVML's count on the host (None: NVML cannot tell), needed by the MPS
    mode to write one limit per device ordinal.
    """
    if mode not in MODES:
        raise UsageError(f"--gpu-budget-mode {mode!r} is not valid (valid: {', '.join(MODES)})")
    if mode == "torch":
        return GpuBudgetPlan("torch", budget_bytes, {}, why="asked for")
    daemon, reason = find_daemon(environ)
    if daemon is None:
        if mode == "auto":
            return GpuBudgetPlan("torch", budget_bytes, {}, why=f"auto: {reason}")
        raise UsageError(
            f"--gpu-budget-mode mps: {reason} (start nvidia-cuda-mps-control -d, or set "
            f"{ENV_PIPE_DIRECTORY} to its pipe directory)"
        )
    if environ.get(ENV_LIMIT):
        raise UsageError(
            f"--gpu-budget-mode {mode}: {ENV_LIMIT}={environ[ENV_LIMIT]} is already set; "
            "unset it or drop the GPU budget"
        )
    if not device_count:
        if mode == "auto":
            return GpuBudgetPlan("torch", budget_bytes, {}, why="auto: NVML reports no GPU")
        raise UsageError(f"--gpu-budget-mode {mode}: NVML reports no GPU to set an MPS limit on")
    env = {ENV_LIMIT: limit_value(budget_bytes, device_count)}
    if ENV_PIPE_DIRECTORY in environ:
        env[ENV_PIPE_DIRECTORY] = str(daemon.pipe_directory)
    why = "asked for" if mode == "mps" else f"auto: MPS control daemon in {daemon.pipe_directory}"
    return GpuBudgetPlan("mps", budget_bytes, env, daemon, why)
