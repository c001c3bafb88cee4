"""GPU side: CUDA OOM parsing (every real sample), the torch hook, NVML sampling."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from harness import _gpu
from qualify.evidence.cuda_oom import CudaOom, parse_cuda_oom
from qualify.judge.gpu import gpu_evidence
from qualify.judge.ladder import Signals, decide
from qualify.nvml import NvmlSampler, device_reading, sample_record
from qualify.plan.mps import plan_budget
from qualify.plan.spec import HARNESS_ROOT, HARNESS_SITE, gpu_env
from qualify.report.audit_of_run import gpu_record
from qualify.rundir import RunDir
from qualify.verdict import Verdict
from tests.conftest import python_output, require

ROOT = Path(__file__).resolve().parent.parent
OOM_SAMPLES = ROOT / "tests" / "data" / "samples" / "cuda_oom"
GPU_DATA = ROOT / "tests" / "data" / "gpu"
UNITS = {"bytes": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}


def size(text: str | None) -> int | None:
    """ "12.50 MiB" as printed by torch -> bytes (None stays None)."""
    if text is None:
        return None
    number, unit = text.split()
    return round(float(number) * UNITS[unit])


# file prefix, requested, total, free, allocated by PyTorch, reserved but unallocated,
# process lines, "this process" (non-PyTorch included), allowed, hint variable, hint, kind
OOM_TABLE: list[tuple[Any, ...]] = [
    ("rocm-hip-PYTORCH_HIP", "432.00 MiB", "15.92 GiB", "7.12 GiB", "8.08 GiB", "321.96 MiB",
     [], None, None, "PYTORCH_HIP_ALLOC_CONF", "expandable_segments:True", "capacity"),
    ("rocm-hip-allowed", "2.00 MiB", "255.98 GiB", "244.65 GiB", "1017.01 MiB", "54.99 MiB",
     [], None, "1.05 GiB", "PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True",
     "budget"),  # the cap is tested first
    ("torch-cuda-allowed", "250.00 MiB", "79.19 GiB", "2.07 GiB", "74.23 GiB", "943.54 MiB",
     [], "77.11 GiB", "75.23 GiB", "PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True",
     "budget"),  # the cap is tested first
    ("torch-multiple-process", "86.00 MiB", "23.64 GiB", "264.00 MiB", "7.63 GiB", "40.11 MiB",
     [(2086283, "419.48 MiB"), (2797307, "14.85 GiB")], "8.04 GiB", None,
     "PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True", "capacity"),
    ("torch1.0-old", "12.50 MiB", "10.92 GiB", "9.28 GiB", "8.57 MiB", None,
     [], None, None, None, None, "capacity"),
    ("torch1.x-old", "2.26 GiB", "6.00 GiB", "3.03 GiB", "781.59 MiB", None,
     [], None, None, None, None, "capacity"),
    ("torch2.0-old", "1.63 GiB", "44.56 GiB", "565.31 MiB", "27.91 GiB", None,
     [], None, None, "PYTORCH_CUDA_ALLOC_CONF", "max_split_size_mb", "capacity"),
    ("torch2.1-capacty-typo-including", "32.00 MiB", "4.00 GiB", "41.56 MiB", "2.58 GiB",
     "1.90 MiB", [], "3.44 GiB", None, "PYTORCH_CUDA_ALLOC_CONF", "max_split_size_mb",
     "capacity"),
    ("torch2.1-capacty-typo-no-process", "55.57 GiB", "12.00 GiB", "9.02 GiB", "984.52 MiB",
     "463.48 MiB", [], None, None, "PYTORCH_CUDA_ALLOC_CONF", "max_split_size_mb", "capacity"),
    ("torch2.1-capacty-typo-process-has", "518.00 MiB", "21.67 GiB", "4.06 MiB", "21.32 GiB",
     "1018.00 KiB", [(2417585, "21.65 GiB")], None, None, "PYTORCH_CUDA_ALLOC_CONF",
     "max_split_size_mb", "capacity"),
    ("torch2.1-capacty-typo-wrapped", "64.00 MiB", "79.15 GiB", "38.09 GiB", "39.10 GiB",
     "427.46 MiB", [], "41.06 GiB", None, "PYTORCH_CUDA_ALLOC_CONF", "max_split_size_mb",
     "fragmentation"),
    ("torch2.10-PYTORCH_ALLOC_CONF", "32.00 GiB", "23.52 GiB", "23.05 GiB", "0 bytes",
     "0 bytes", [], "386.00 MiB", None, "PYTORCH_ALLOC_CONF", "expandable_segments:True",
     "capacity"),
    ("torch2.2plus", "22.00 MiB", "23.65 GiB", "11.06 MiB", "22.90 GiB", "194.87 MiB",
     [], "23.60 GiB", None, "PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True",
     "fragmentation"),
    ("torch2.x-no-docs-url", "20.00 MiB", "4.00 GiB", "2.35 GiB", "825.15 MiB", "24.85 MiB",
     [], None, None, "PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True", "fragmentation"),
    ("vllm-private-pools-cuda-graphs", "3.82 GiB", "79.14 GiB", "3.02 GiB", "75.34 GiB",
     "75.30 MiB", [(3620138, "76.10 GiB")], None, None, "PYTORCH_CUDA_ALLOC_CONF",
     "expandable_segments:True", "capacity"),
    ("vllm-private-pools-process-has", "546.00 MiB", "15.77 GiB", "514.19 MiB", "13.73 GiB",
     "736.86 MiB", [(562167, "15.25 GiB")], None, None, "PYTORCH_CUDA_ALLOC_CONF",
     "expandable_segments:True", "fragmentation"),
    ("vllm-v1-engine-core", "1.16 GiB", "7.75 GiB", "1.17 GiB", "4.81 GiB", "18.97 MiB",
     [], "5.02 GiB", None, "PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True", "capacity"),
    ("vllm-worker-rank1", "270.00 MiB", "21.98 GiB", "156.94 MiB", "21.42 GiB", "24.12 MiB",
     [], "21.80 GiB", None, "PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True", "capacity"),
    ("torch-npu-legacy-current-active-frag", "5.03 GiB", "60.96 GiB", "1.32 GiB", "49.47 GiB",
     None, [], None, None, None, "max_split_size_mb", "fragmentation"),
    ("torch-npu-legacy-current-active-capacity", "22.00 MiB", "60.97 GiB", "19.52 MiB",
     "10.24 GiB", None, [], None, None, None, "max_split_size_mb", "capacity"),
]  # fmt: skip


def sample_text(prefix: str) -> str:
    (path,) = [p for p in OOM_SAMPLES.glob("*.txt") if p.name.startswith(prefix)]
    return path.read_text(encoding="utf-8")


def test_the_table_covers_every_real_sample() -> None:
    names = {p.name for p in OOM_SAMPLES.glob("*.txt") if not p.name.startswith("REFERENCE")}
    covered = {n for n in names for row in OOM_TABLE if n.startswith(row[0])}
    assert covered == names
    assert parse_cuda_oom(sample_text("REFERENCE")) is None  # a note quoting code, no message


@pytest.mark.parametrize("row", OOM_TABLE, ids=[row[0] for row in OOM_TABLE])
def test_parse_cuda_oom_on_real_messages(row: tuple[Any, ...]) -> None:
    (prefix, requested, total, free, allocated, unallocated, processes, this, allowed,
     variable, hint, kind) = row  # fmt: skip
    oom = parse_cuda_oom(sample_text(prefix))
    assert oom is not None
    assert oom.requested_bytes == size(requested)
    assert oom.total_bytes == size(total)
    assert oom.free_bytes == size(free)
    assert oom.allocated_bytes == size(allocated)
    assert oom.reserved_unallocated_bytes == size(unallocated)
    assert oom.processes == tuple((pid, size(text)) for pid, text in processes)
    assert oom.this_process_bytes == size(this)
    assert oom.allowed_bytes == size(allowed)
    assert oom.hint_variable == variable
    assert oom.hint_setting == hint
    assert oom.kind == kind
    assert oom.to_dict()["kind"] == kind


def test_legacy_and_private_pool_and_device_details() -> None:
    legacy = parse_cuda_oom(sample_text("torch1.x-old"))
    assert legacy is not None
    assert (legacy.format, legacy.reserved_bytes) == ("legacy", size("1.24 GiB"))
    cached = parse_cuda_oom(sample_text("torch1.0-old"))
    assert cached is not None and cached.cached_bytes == size("4.68 MiB")
    pools = parse_cuda_oom(sample_text("vllm-private-pools-cuda-graphs"))
    assert pools is not None and pools.private_pool_bytes == size("58.00 MiB")
    hip = parse_cuda_oom(sample_text("rocm-hip-allowed"))
    assert hip is not None and (hip.backend, hip.private_pool_bytes) == ("HIP", size("17.00 MiB"))
    typo = parse_cuda_oom(sample_text("torch2.1-capacty-typo-wrapped"))
    assert typo is not None and typo.format == "capacty-typo"
    rank1 = parse_cuda_oom(sample_text("vllm-worker-rank1"))
    assert rank1 is not None and rank1.device == 1
    assert parse_cuda_oom("RuntimeError: CUDA error: an illegal memory access") is None


def test_budget_kind_when_the_device_had_room() -> None:
    oom = CudaOom("CUDA", "current", requested_bytes=100, free_bytes=1000, allowed_bytes=500)
    assert oom.kind == "budget"


def test_gpu_evidence_from_events_and_the_verdict(tmp_path: Path) -> None:
    message = sample_text("vllm-worker-rank1")
    events = [
        {"event": "gpu_budget", "device": 0, "fraction": 0.99, "applied": True},
        {"event": "cuda_oom", "source": "exception", "message": message},
        {"event": "phase_start", "phase": "x"},
    ]
    evidence = gpu_evidence(events)
    assert evidence.cuda_oom and evidence.budget_error is None
    assert evidence.oom_kind == "capacity"
    audit = gpu_record(evidence, None, None)
    assert audit.budget_scope is not None
    assert "PyTorch's caching allocator only" in audit.budget_scope
    assert audit.nvml == {"available": False, "reason": "not sampled"}
    verdict, reason = decide(Signals(returncode=1, cuda_oom=True, cuda_oom_kind="capacity"))
    assert verdict == Verdict.CUDA_OOM and "(capacity)" in reason


def test_budget_larger_than_the_device_is_an_error() -> None:
    fraction, error = _gpu.budget_fraction(30 << 30, 22 << 30)
    assert fraction is None and error is not None and "exceeds" in error
    event = {"event": "gpu_budget", "device": 0, "fraction": None, "error": error}
    evidence = gpu_evidence([event])
    assert evidence.budget_error is not None
    verdict, reason = decide(Signals(setup_error=evidence.budget_error, returncode=0))
    assert verdict == Verdict.ERROR and "exceeds" in reason
    assert _gpu.budget_fraction(11 << 30, 22 << 30) == (0.5, None)


def test_observer_only_kind_uses_the_counters() -> None:
    observed = {
        "event": "cuda_oom", "source": "observer", "requested_bytes": 100,
        "allocated_bytes": 900, "reserved_bytes": 950, "total_bytes": 10_000,
        "observer_limit_bytes": 1000,
    }  # fmt: skip
    assert gpu_evidence([observed]).oom_kind == "budget"


def test_oom_found_in_stderr_when_no_event(tmp_path: Path) -> None:
    run_dir = RunDir(tmp_path)
    run_dir.log_path("stderr").write_text("x" * 70_000 + "\n" + sample_text("torch2.2plus"))
    assert gpu_evidence([], run_dir.log_tail("stderr")).oom_kind == "fragmentation"


def test_expandable_in_settings() -> None:
    assert _gpu.expandable_in("expandable_segments:True") is True
    assert _gpu.expandable_in("max_split_size_mb:128,expandable_segments:False") is False
    assert _gpu.expandable_in("max_split_size_mb:128") is None
    assert _gpu.expandable_in("") is None


def test_gpu_env_and_pythonpath() -> None:
    assert gpu_env(None, False) == {}
    plan = plan_budget("torch", 22 << 30, {}, None)
    assert gpu_env(plan, True) == {
        "QUALIFY_GPU_BUDGET_BYTES": str(22 << 30),
        "QUALIFY_GPU_BUDGET_MODE": "torch",
        "QUALIFY_CUDA_HISTORY": "1",
    }
    assert (HARNESS_SITE / "sitecustomize.py").is_file()
    assert HARNESS_SITE.parent.parent == HARNESS_ROOT


def _run_family(tmp_path: Path, code: str, **extra: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("QUALIFY_")}
    env.update(
        PYTHONPATH=os.pathsep.join([str(HARNESS_ROOT), str(HARNESS_SITE)]),
        QUALIFY_EVENTS=str(tmp_path / "events.jsonl"),
        QUALIFY_RUN_DIR=str(tmp_path),
        **extra,
    )
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _events(tmp_path: Path) -> list[dict[str, Any]]:
    path = tmp_path / "events.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_hook_never_imports_torch_for_a_family_without_it(tmp_path: Path) -> None:
    done = _run_family(
        tmp_path,
        """
        import sys
        assert "torch" not in sys.modules
        import json
        assert "torch" not in sys.modules
        print(any(type(f).__name__ == "_TorchFinder" for f in sys.meta_path))
        """,
        QUALIFY_GPU_BUDGET_BYTES=str(1 << 30),
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "True"
    # Only the sandbox's limits (harness/_limits.py), no GPU event: CUDA was never touched.
    assert [event["event"] for event in _events(tmp_path)] == ["sandbox_limits"]


def test_hook_is_inert_outside_a_run(tmp_path: Path) -> None:
    code = "import sys; print(any(type(f).__name__ == '_TorchFinder' for f in sys.meta_path))"
    env = {k: v for k, v in os.environ.items() if not k.startswith("QUALIFY_")}
    env["PYTHONPATH"] = os.pathsep.join([str(HARNESS_ROOT), str(HARNESS_SITE)])
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "False"


@pytest.mark.family
def test_real_torch_import_queues_the_cuda_hook_and_records_a_raised_oom(tmp_path: Path) -> None:
    require("torch")
    message = sample_text("torch2.2plus").split("OutOfMemoryError: ", 1)[1].strip()
    done = _run_family(
        tmp_path,
        f"""
        import torch, torch.cuda
        queued = [c for c, _ in torch.cuda._queued_calls if "_on_cuda_init" in repr(c)]
        print(len(queued), type(torch.__spec__.loader).__name__)
        raise torch.OutOfMemoryError({message!r})
        """,
        QUALIFY_GPU_BUDGET_BYTES=str(1 << 30),
    )
    assert done.returncode == 1
    assert done.stdout.split() == ["1", "SourceFileLoader"]
    assert "torch.OutOfMemoryError: CUDA out of memory" in done.stderr  # the chained hook ran
    (oom,) = [e for e in _events(tmp_path) if e["event"] == "cuda_oom"]
    assert oom["source"] == "exception" and oom["message"] == message
    assert "counters_error" in oom  # a CPU build: no device to read counters from
    parsed = parse_cuda_oom(oom["message"])
    assert parsed is not None and parsed.kind == "fragmentation"


@pytest.mark.family
def test_cuda_oom_guard_records_once_and_reraises(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    torch = require("torch")
    monkeypatch.setenv("QUALIFY_EVENTS", str(tmp_path / "events.jsonl"))
    error = torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 MiB.")
    with pytest.raises(torch.OutOfMemoryError), _gpu.cuda_oom_guard(), _gpu.cuda_oom_guard():
        raise error
    with pytest.raises(ValueError), _gpu.cuda_oom_guard():
        raise ValueError("not an OOM")
    assert [e["source"] for e in _events(tmp_path)] == ["exception"]


def test_nvml_absent_on_this_host_is_recorded_not_raised(tmp_path: Path) -> None:
    pynvml = require("pynvml")
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as exc:
        expected = f"{type(exc).__name__}: {exc}"
    else:
        pynvml.nvmlShutdown()
        pytest.skip("this host has NVML: the absent path cannot be observed for real")
    assert str(expected).endswith((GPU_DATA / "nvml-absent-this-host.txt").read_text().strip())
    sampler = NvmlSampler()
    assert sampler.sample({1}) == {"available": False, "reason": expected}
    sampler.write_summary(tmp_path)
    assert RunDir(tmp_path).gpu_summary() == {"available": False, "reason": expected}


def test_a_host_without_the_nvml_library_is_told_without_importing_pynvml() -> None:
    """Where ``libnvidia-ml.so.1`` does not load, the sampler records pynvml's own reason
    without importing pynvml (its two hundred ctypes structures cost as much as a run's
    start); where it loads, pynvml is imported as before."""
    require("pynvml")
    code = (
        "import ctypes, sys\n"
        "from qualify.nvml import NvmlSampler\n"
        "try:\n"
        "    ctypes.CDLL('libnvidia-ml.so.1')\n"
        "    loads = True\n"
        "except OSError:\n"
        "    loads = False\n"
        "sampler = NvmlSampler()\n"
        "print(loads, sampler.available, 'pynvml' in sys.modules, sampler.absent()['reason'])\n"
    )
    loads, available, imported, reason = python_output(code).split(" ", 3)
    if loads == "True":
        assert imported == "True"
    else:
        assert (available, imported) == ("False", "False")
        assert reason == "NVMLError_LibraryNotFound: NVML Shared Library Not Found"


def test_nvml_missing_module_is_recorded() -> None:
    def missing() -> Any:
        raise ModuleNotFoundError("No module named 'pynvml'")

    sample = NvmlSampler(loader=missing).sample()
    assert sample == {"available": False, "reason": "ModuleNotFoundError: No module named 'pynvml'"}


def test_aggregation_with_pynvml_structures() -> None:
    pynvml = require("pynvml")
    total = size("23.64 GiB")
    assert total is not None
    used = size("14.85 GiB") + size("419.48 MiB")  # type: ignore[operator]
    memory = pynvml.c_nvmlMemory_t(total=total, free=total - used, used=used)
    procs = [
        pynvml.nvmlFriendlyObject(
            {"pid": 2797307, "usedGpuMemory": size("14.85 GiB"), "gpuInstanceId": 0xFFFFFFFF,
             "computeInstanceId": 0xFFFFFFFF}
        ),
        pynvml.nvmlFriendlyObject(
            {"pid": 2086283, "usedGpuMemory": size("419.48 MiB"), "gpuInstanceId": 0xFFFFFFFF,
             "computeInstanceId": 0xFFFFFFFF}
        ),
        pynvml.nvmlFriendlyObject(
            {"pid": 7, "usedGpuMemory": None, "gpuInstanceId": 0, "computeInstanceId": 0}
        ),
    ]  # fmt: skip
    reading = device_reading(0, memory, procs)
    assert reading.processes[2] == (7, None)
    record = sample_record([reading], {2086283, 7})
    assert record == {"available": True, "devices": [[0, used, total, size("419.48 MiB")]]}
    sampler = NvmlSampler(nvml=object())
    sampler._started = True  # seam: the readings are given, NVML itself is not called
    sampler.observe([reading], {2086283})
    summary = sampler.summary()
    assert summary["devices"] == [
        {"index": 0, "total_bytes": total, "peak_used_bytes": used,
         "peak_run_bytes": size("419.48 MiB"), "reserved_bytes": None}
    ]  # fmt: skip
    assert summary["peak_process_bytes"] == {"2086283": size("419.48 MiB")}


@pytest.mark.parametrize(
    ("unallocated", "kind"),
    [(20 << 20, "fragmentation"), ((20 << 20) - 1, "capacity"), ((20 << 20) + 1, "fragmentation")],
)
def test_fragmentation_starts_where_the_free_cache_covers_the_request(
    unallocated: int, kind: str
) -> None:
    """Reserved-but-unallocated bytes that cover the request exactly are fragmentation: the
    cache had the room, only not in one block (the boundary of the classifier)."""
    oom = CudaOom(
        backend="CUDA",
        format="current",
        requested_bytes=20 << 20,
        total_bytes=24 << 30,
        free_bytes=2 << 20,
        reserved_unallocated_bytes=unallocated,
    )
    assert oom.kind == kind


def test_allocator_settings_without_torchs_getter_are_the_variable_torch_reads(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """torch 2.11 (seen on an H200 with 2.11.0+cu130) has ``_accelerator_setAllocatorSettings``
    but no getter: the settings are then the variable torch reads, PYTORCH_ALLOC_CONF first."""
    from types import SimpleNamespace

    old = SimpleNamespace(_C=SimpleNamespace(_accelerator_setAllocatorSettings=None),
                          version=SimpleNamespace(hip=None))  # fmt: skip
    for name in _gpu.ALLOC_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    assert _gpu._allocator_settings_and_source(old) == (None, "environment")
    monkeypatch.setenv("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True")
    assert _gpu._allocator_settings_and_source(old) == ("expandable_segments:True", "environment")
    monkeypatch.setenv("PYTORCH_HIP_ALLOC_CONF", "expandable_segments:False")
    assert _gpu._allocator_settings(old) == "expandable_segments:True"  # a CUDA build
    hip = SimpleNamespace(_C=SimpleNamespace(), version=SimpleNamespace(hip="6.2"))
    assert _gpu._allocator_settings(hip) == "expandable_segments:False"
    monkeypatch.setenv("PYTORCH_ALLOC_CONF", "max_split_size_mb:64")
    assert _gpu._allocator_settings(old) == "max_split_size_mb:64"
    new = SimpleNamespace(_C=SimpleNamespace(_accelerator_getAllocatorSettings=lambda: "x:1"))
    assert _gpu._allocator_settings_and_source(new) == ("x:1", "torch")
