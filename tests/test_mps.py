"""The MPS budget mode: the limit variable, finding the daemon, the plan, docker, the verdict.

The limit strings below are the ones people set in public reports and NVIDIA's docs:
``0=1G,1=2G`` (NVIDIA Multi-Process Service docs, CUDA_MPS_PINNED_DEVICE_MEM_LIMIT),
``0=1G,1=512MB`` (https://github.com/NVIDIA/nvidia-docker/issues/1576) and ``0=1000MB``
(https://github.com/NVIDIA/k8s-device-plugin/issues/594).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pynvml
import pytest

from harness import _gpu
from qualify.errors import UsageError
from qualify.evidence.cuda_oom import parse_cuda_oom
from qualify.judge.gpu import gpu_evidence
from qualify.nvml import NvmlSampler, device_reading, device_totals
from qualify.plan.docker import DockerOptions
from qualify.plan.limits import Limits
from qualify.plan.mps import (
    ENV_LIMIT,
    ENV_PIPE_DIRECTORY,
    PID_FILE,
    find_daemon,
    limit_value,
    plan_budget,
)
from qualify.plan.profiles import find_profile
from qualify.plan.request import RunRequest, _gpu_plan
from qualify.plan.spec import gpu_env
from qualify.report.audit_of_run import gpu_record
from qualify.sandbox.docker.backend import container_kwargs
from qualify.triage.classify import cuda_class
from qualify.triage.model import TriageClass
from tests.conftest import RunQualify
from tests.test_gpu import sample_text

GIB, MIB = 1 << 30, 1 << 20
H800_TOTAL = 81559 * MIB  # tests/data/gpu/nvidia-smi-query-gpu-memory-csv-h800-2gpus-build-nanogpt


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("0=1G,1=2G", {0: GIB, 1: 2 * GIB}),
        ("0=1G,1=512MB", {0: GIB, 1: 512 * MIB}),
        ("0=1000MB", {0: 1000 * MIB}),
    ],
)
def test_published_limit_strings_per_device(value: str, expected: dict[int, int]) -> None:
    for device, size in expected.items():
        assert _gpu.mps_limit_bytes(value, device) == size
    assert _gpu.mps_limit_bytes(value, 7) is None


def test_limit_value_rounds_down_to_whole_mib_for_every_device() -> None:
    budget = int(21.8 * GIB)  # the l4-budget profile
    assert find_profile("l4-budget").gpu.budget_bytes == budget  # type: ignore[union-attr]
    value = limit_value(budget, 2)
    assert value == "0=22323M,1=22323M"
    limits = [_gpu.mps_limit_bytes(value, device) for device in (0, 1)]
    assert all(limit is not None and 0 <= budget - limit < MIB for limit in limits)
    assert _gpu.mps_limit_bytes("0=lots", 0) is None
    with pytest.raises(ValueError, match="below 1 MiB"):
        limit_value(1000, 1)


def _socket_daemon(directory: Path) -> socket.socket:
    directory.mkdir(parents=True, exist_ok=True)
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(directory / "control"))
    (directory / PID_FILE).write_text(f"{os.getpid()}\n")
    return server


def test_find_daemon_socket_fifo_dead_pid_and_missing(tmp_path: Path) -> None:
    pipes = tmp_path / "socket"
    with _socket_daemon(pipes):
        daemon, why = find_daemon({ENV_PIPE_DIRECTORY: str(pipes)})
        assert daemon is not None and why == ""
        assert (daemon.control, daemon.pid) == ("socket", os.getpid())

    fifo_dir = tmp_path / "fifo"
    fifo_dir.mkdir()
    os.mkfifo(fifo_dir / "control")
    daemon, _ = find_daemon({ENV_PIPE_DIRECTORY: str(fifo_dir)})
    assert daemon is not None and (daemon.control, daemon.pid) == ("fifo", None)

    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], check=True,
                          capture_output=True, text=True).stdout.strip()  # fmt: skip
    (fifo_dir / PID_FILE).write_text(dead)
    daemon, why = find_daemon({ENV_PIPE_DIRECTORY: str(fifo_dir)})
    assert daemon is None and f"pid {dead}" in why and "not running" in why

    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "control").write_text("")
    assert "neither a socket nor a FIFO" in find_daemon({ENV_PIPE_DIRECTORY: str(plain)})[1]
    assert "does not exist" in find_daemon({ENV_PIPE_DIRECTORY: str(tmp_path / "no")})[1]


def test_plan_modes(tmp_path: Path) -> None:
    budget = 20 * GIB
    nothing = {ENV_PIPE_DIRECTORY: str(tmp_path / "none")}
    assert plan_budget("torch", budget, nothing, None).mode == "torch"
    auto = plan_budget("auto", budget, nothing, 2)
    assert auto.mode == "torch" and "auto: no MPS control daemon" in auto.why
    with pytest.raises(UsageError, match="--gpu-budget-mode mps: no MPS control daemon"):
        plan_budget("mps", budget, nothing, 2)
    with pytest.raises(UsageError, match="'magic' is not valid"):
        plan_budget("magic", budget, nothing, 2)

    pipes = tmp_path / "mps"
    environ = {ENV_PIPE_DIRECTORY: str(pipes)}
    with _socket_daemon(pipes):
        plan = plan_budget("auto", budget, environ, 2)
        assert plan.mode == "mps" and plan.daemon is not None
        assert plan.env == {ENV_LIMIT: "0=20480M,1=20480M", ENV_PIPE_DIRECTORY: str(pipes)}
        assert gpu_env(plan, False) == {
            "QUALIFY_GPU_BUDGET_BYTES": str(budget),
            "QUALIFY_GPU_BUDGET_MODE": "mps",
            **plan.env,
        }
        with pytest.raises(UsageError, match="NVML reports no GPU"):
            plan_budget("mps", budget, environ, None)
        fallback = plan_budget("auto", budget, environ, None)
        assert (fallback.mode, fallback.why) == ("torch", "auto: NVML reports no GPU")
        with pytest.raises(UsageError, match=f"{ENV_LIMIT}=0=1000MB is already set"):
            plan_budget("mps", budget, {**environ, ENV_LIMIT: "0=1000MB"}, 1)


class _Nvml:
    """pynvml's functions over fixed readings (the structures pynvml itself returns)."""

    def __init__(self, totals: list[int], used: int, clients: list[Any]):
        self.totals, self.used, self.clients = totals, used, clients

    def nvmlInit(self) -> None:
        pass

    def nvmlShutdown(self) -> None:
        pass

    def nvmlDeviceGetCount(self) -> int:
        return len(self.totals)

    def nvmlDeviceGetHandleByIndex(self, index: int) -> int:
        return index

    def nvmlDeviceGetMemoryInfo(self, handle: int) -> Any:
        return pynvml.c_nvmlMemory_t(
            self.totals[handle], self.totals[handle] - self.used, self.used
        )

    def nvmlDeviceGetComputeRunningProcesses(self, handle: int) -> list[Any]:
        return []

    def nvmlDeviceGetMPSComputeRunningProcesses(self, handle: int) -> list[Any]:
        return self.clients


def test_budget_larger_than_the_device_is_refused_before_the_run() -> None:
    # The H800 reading (81559 MiB, 22001 MiB used, two devices) as NVML would return it.
    nvml = _Nvml([H800_TOTAL, H800_TOTAL], 22001 * MIB, [])
    assert device_totals(nvml) == ([H800_TOTAL, H800_TOTAL], "")
    with pytest.raises(UsageError, match=r"--gpu-mem 80G \(85899345920 bytes\) is larger than"):
        _gpu_plan(RunRequest("tiny", gpu_mem="80G"), None, nvml)
    plan = _gpu_plan(RunRequest("tiny", gpu_mem="79G"), None, nvml)
    assert plan is not None and (plan.mode, plan.budget_bytes) == ("torch", 79 * GIB)
    with pytest.raises(UsageError, match="needs a GPU budget"):
        _gpu_plan(RunRequest("tiny", gpu_budget_mode="mps"), None, nvml)
    with pytest.raises(UsageError, match="too small"):
        _gpu_plan(RunRequest("tiny", gpu_mem="100"), None, nvml)
    # This host's NVML, read for real: devices with their totals, or none and NVML's reason.
    totals, reason = device_totals(None)
    if os.path.exists("/dev/nvidiactl"):
        assert totals and all(total > 0 for total in totals) and reason == ""
    else:
        assert totals == [] and reason.startswith(("NVMLError", "ModuleNotFoundError"))


def test_sampler_lists_mps_clients_once_per_pid() -> None:
    # Sizes from the real OOM message of tests/data/samples/cuda_oom (processes 2086283 with
    # 419.48 MiB and 2797307 with 14.85 GiB on a 23.64 GiB device), one of them a client.
    small, large = int(419.48 * MIB), int(14.85 * GIB)
    total = int(23.64 * GIB)
    client = pynvml.nvmlFriendlyObject({"pid": 2797307, "usedGpuMemory": large})
    server = pynvml.nvmlFriendlyObject({"pid": 2086283, "usedGpuMemory": small})
    unknown = pynvml.nvmlFriendlyObject({"pid": 2797307, "usedGpuMemory": None})
    reading = device_reading(0, pynvml.c_nvmlMemory_t(total, 0, total), [server, unknown], [client])
    assert reading.processes == ((2086283, small), (2797307, large))
    assert reading.mps_pids == (2797307,)

    nvml = _Nvml([total], large + small, [client])
    sampler = NvmlSampler(nvml, mps=True)
    sampler.sample({2797307})
    assert sampler.summary()["mps_client_pids"] == [2797307]
    assert NvmlSampler(_Nvml([total], 0, [client])).summary()["mps_client_pids"] is None


def test_an_oom_over_the_mps_limit_is_a_budget_oom() -> None:
    # A real torch >= 2.2 message: 270.00 MiB requested, "this process has 21.80 GiB memory in
    # use" on a 21.98 GiB device (an L4) with 156.94 MiB free. Without a limit it is capacity.
    text = sample_text("vllm-worker-rank1-gpu1")
    message = text.split("OutOfMemoryError: ", 1)[1]
    oom = {"event": "cuda_oom", "source": "exception", "message": message}
    assert gpu_evidence([oom]).oom_kind == "capacity"

    def budget(limit: int) -> dict[str, Any]:
        return {"event": "gpu_budget", "mode": "mps", "device": 0, "applied": True,
                "total_bytes": int(21.98 * GIB), "mps_limit_bytes": limit}  # fmt: skip

    evidence = gpu_evidence([budget(20 * GIB), oom])
    assert evidence.budget_mode == "mps" and evidence.mps_limit_bytes == 20 * GIB
    assert evidence.oom_kind == "budget"
    assert "each MPS client" in (gpu_record(evidence, None, None).budget_scope or "")
    # 21.80 GiB + 270 MiB = 22.06 GiB: any limit below 22.06 GiB explains it; a limit equal to
    # the device's total is no limit at all.
    assert gpu_evidence([budget(int(22.05 * GIB)), oom]).mps_limit_bytes is None
    assert gpu_evidence([budget(int(21.98 * GIB)), oom]).oom_kind == "capacity"
    assert gpu_evidence([budget(int(21.97 * GIB)), oom]).oom_kind == "budget"
    # Triage reads the same message with the same rule.
    parsed = parse_cuda_oom(message)
    assert parsed is not None and parsed.crosses(int(22.05 * GIB))
    assert cuda_class(parsed, None, 20 * GIB) is TriageClass.CUDA_OOM_BUDGET
    assert cuda_class(parsed, None, None) is TriageClass.CUDA_OOM_CAPACITY


def test_docker_mps_mounts_the_pipes_and_shares_ipc(tmp_path: Path) -> None:
    common: dict[str, Any] = dict(
        limits=Limits(GIB, 0, 64), argv=["python", "-c", "pass"], cwd=tmp_path, env={},
        run_dir=tmp_path / "run", family_dir=tmp_path / "family", harness_root=tmp_path / "h",
        run_id="r", user="0:0", gpu_requests=[],
    )  # fmt: skip
    plain = container_kwargs(options=DockerOptions("img"), **common)
    assert "ipc_mode" not in plain and plain["shm_size"] == 64 << 20
    pipes = str(tmp_path / "mps")
    mps = container_kwargs(options=DockerOptions("img", mps_pipe_directory=pipes), **common)
    assert mps["ipc_mode"] == "host" and "shm_size" not in mps
    assert mps["volumes"][pipes] == {"bind": pipes, "mode": "rw"}
    assert mps["environment"]["CUDA_MPS_PIPE_DIRECTORY"] == pipes


def test_a_real_run_records_the_plan_and_that_cuda_never_started(
    repo: Path, run_qualify: RunQualify, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An MPS control socket answers, but this host has no GPU: auto falls back to the torch
    # fraction, and since the family never initializes CUDA the budget is never applied.
    pipes = tmp_path / "mps"
    monkeypatch.setenv(ENV_PIPE_DIRECTORY, str(pipes))
    with _socket_daemon(pipes):
        result = run_qualify(
            "run", "--family", "hog", "--repo", str(repo), "--mem", "256M",
            "--set", "second_mib=1", "--gpu-mem", "1G", "--gpu-budget-mode", "auto",
        )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    gpu = result.audit()["gpu"]
    if gpu["nvml"].get("available"):
        pytest.skip("this host has a GPU: the fallback is not what happens here")
    assert gpu["budget_plan"] == {
        "mode": "torch", "budget_bytes": GIB, "env": {}, "mps_daemon": None,
        "why": "auto: NVML reports no GPU",
    }  # fmt: skip
    assert gpu["budgets"] == [] and "never applied" in gpu["budget_note"]
    assert "caching allocator only" in gpu["budget_scope"]
