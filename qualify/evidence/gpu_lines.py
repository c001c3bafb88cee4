"""GPU memory exhaustion as engines and runtimes other than PyTorch's allocator word it.

Each parser takes one log line and its lowercased text (``low``, computed once by the caller)
and returns a ``LineSignal`` or None; every pattern is guarded by a substring test on ``low``
so that the lines that merely mention memory cost one ``in`` each. The wordings are those of the
real artifacts in tests/data/triage/ (SOURCES.md there):

- TensorRT: "Error Code 1: Cuda Runtime (out of memory)", "Error Code 2: OutOfMemory",
  "Cuda Error in allocate: 2 (out of memory)" (TensorRT 7, also relayed by ONNX Runtime's
  TensorRT execution provider), "Requested amount of GPU memory (N bytes) could not be
  allocated" (a warning unless logged as an error), "Skipping tactic ... insufficient memory"
  (a warning: the builder goes on), "Engine building failed". Where it happened: the builder
  (globWriter, tactics, virtualMemoryBuffer) or the runtime (an execution context, a
  deserialized engine).
- ONNX Runtime CUDA EP: "BFCArena::AllocateRawInternal ... Failed to allocate memory for requested
  buffer of size N", "CudaCall CUDA failure 2: out of memory ; ... expr=...", "CUBLAS failure 3:
  CUBLAS_STATUS_ALLOC_FAILED", and the arena's own limit: "Available memory of X is smaller than
  requested bytes of Y" (gpu_mem_limit: a budget).
- vLLM (both engine generations): "No available memory for the cache blocks", "The model's max seq
  len (N) is larger than the maximum number of tokens that can be stored in KV cache (M)", "To
  serve at least one request with the models's max seq len (N), (X GiB KV cache is needed, which
  is larger than the available KV cache memory (Y GiB)", "Available KV cache memory: -X GiB".
  All are vLLM's own budget (gpu_memory_utilization) running out.
- TensorRT-LLM: "maxTokensInPagedKvCache must be large enough ..." (the KV-cache manager's
  budget), "CUDA runtime error in ...: out of memory" (tllmBuffers, ipcUtils), and the executor's
  "Executor creation failed due to insufficient GPU memory." with the failed component and the
  free memory on the following lines (read by the scanner as context: ``parse_trtllm_executor``).
- CUDA libraries and runtimes: PyTorch's "CUDA error: out of memory", cuBLAS
  "CUBLAS_STATUS_ALLOC_FAILED", cuDNN "CUDNN_STATUS_ALLOC_FAILED", the driver's
  "CUDA_ERROR_OUT_OF_MEMORY" (numba, TensorFlow, XLA), "cudaMalloc ... failed with out of memory",
  CNTK's and ORT's "CUDA failure 2: out of memory", HIP's "hipErrorOutOfMemory", Level Zero's
  "OUT_OF_DEVICE_MEMORY", nnabla's "Failed to allocate again.".
- Handled, not fatal: TensorFlow's BFC allocator "ran out of memory ... The caller indicates that
  this is not a failure", ComfyUI's "Ran out of memory when regular ... decoding, retrying with
  tiled VAE decoding", nnabla's "Failed to allocate. Freeing memory cache and retrying.".
"""

from __future__ import annotations

import re
from typing import Any

from qualify.evidence.evidence_line import LineSignal
from qualify.evidence.oom_parts import handled_code

_TRT_REQUESTED = re.compile(r"Requested amount of (?:GPU )?memory \((\d+) bytes\)")
_TRT_SIZE_WAS = re.compile(r"Requested size was (\d+) bytes")
_TRT_TACTIC = re.compile(r"insuff?icient memory on requested size of (\d+)")
_TRT_RUNTIME = ("executioncontext", "deserializ", "enqueue", "iexecutioncontext")
_TRT_BUILDER = ("builder", "globwriter", "tactic", "virtualmemorybuffer", "build")
_ORT_ARENA = re.compile(r"Failed to allocate memory for requested buffer of size (\d+)")
_ORT_LIMIT = re.compile(r"Available memory of (\d+) is smaller than requested bytes of (\d+)")
_EXPR = re.compile(r"expr=(\w+)")
_TF_BYTES = re.compile(r"failed to allocate [\d.]+\w? \((\d+) bytes\)")
_VLLM_MAX_LEN = re.compile(
    r"max seq len \((\d+)\) is larger than the maximum number of tokens that can be stored in "
    r"KV cache \((\d+)\)"
)
_VLLM_NEEDED = re.compile(
    r"max seq len \((\d+)\), \(([\d.]+) GiB KV cache is needed, which is larger than the "
    r"available KV cache memory \((-?[\d.]+) GiB\)(?:\. Based on the available memory, the "
    r"estimated maximum model length is (\d+))?"
)
_VLLM_AVAILABLE = re.compile(r"Available KV cache memory: (-[\d.]+) GiB")
_GIB = 1 << 30
_ASKED_ABOUT = re.compile(r"[`'\"]?[ \t]*\?[ \t]*$")
"""A question mark right after an error's constant, ending the line (a title's "Tensorboard gives
`CUDA_ERROR_OUT_OF_MEMORY`?"): the error asked about, not a program's report of it."""


def _signal(kind: str, **fields: Any) -> LineSignal:
    return LineSignal(kind, {k: v for k, v in fields.items() if v is not None})


def _stage(low: str) -> str | None:
    if any(word in low for word in _TRT_RUNTIME):
        return "runtime"
    if any(word in low for word in _TRT_BUILDER):
        return "builder"
    return None


def parse_tensorrt_line(line: str, low: str | None = None) -> LineSignal | None:
    """One TensorRT out-of-memory line (builder or runtime), or None."""
    low = line.lower() if low is None else low
    if "engine building failed" in low:
        return LineSignal("trt_build_failed")
    requested = None
    if "requested amount" in low:
        requested = _TRT_REQUESTED.search(line)
    elif "requested size was" in low:
        requested = _TRT_SIZE_WAS.search(line)
    engine = "onnxruntime-tensorrt" if "tensorrt_execution_provider" in low else "tensorrt"
    fatal = (
        "error code 2: outofmemory" in low
        or "outofmemory error in " in low  # (its "OutOfMemory Error in allocate: 0"; a bare
        # "OutOfMemory error" is any runtime's, a JVM's most often)
        or "out of memory error during" in low
        or "cuda runtime (out of memory)" in low
        or ("cuda error in" in low and "(out of memory)" in low)
        or (requested is not None and ("error" in low or "[e]" in low))
    )
    if fatal:
        size = int(requested.group(1)) if requested else None
        return _signal("trt_oom", requested_bytes=size, stage=_stage(low), engine=engine)
    tactic = _TRT_TACTIC.search(line) if "insuf" in low else None
    match = requested or tactic
    if match is not None:
        return LineSignal("trt_oom_warning", {"requested_bytes": int(match.group(1))})
    return None


def parse_engine_line(line: str, low: str | None = None) -> LineSignal | None:
    """A GPU out-of-memory line of a runtime or library other than PyTorch's allocator, a
    serving engine's budget running out, or an OOM that was handled; None otherwise."""
    low = line.lower() if low is None else low
    found = _budget(line, low)
    if found is not None:
        return found
    if "not a failure" in low and "ran out of memory" in low:
        return _signal("gpu_oom_handled", engine="tensorflow", detail="BFC allocator retry")
    if "retrying with tiled" in low and "out of memory" in low:
        return _signal("gpu_oom_handled", engine="comfyui", detail="tiled VAE decoding retry")
    if "freeing memory cache and retrying" in low:
        return _signal("gpu_oom_handled", engine="nnabla", detail="cache freed, retrying")
    return _library(line, low)


def _budget(line: str, low: str) -> LineSignal | None:
    if "cache blocks" in low and "no available memory for the cache blocks" in low:
        return _signal("gpu_budget", engine="vllm", what="no memory left for the KV cache")
    if "kv cache" in low:
        if match := _VLLM_MAX_LEN.search(line):
            return _signal(
                "gpu_budget",
                engine="vllm",
                what="the KV cache cannot hold one request of max_model_len",
                max_model_len=int(match[1]),
                kv_tokens=int(match[2]),
            )
        if match := _VLLM_NEEDED.search(line):
            return _signal(
                "gpu_budget",
                engine="vllm",
                what="the KV cache cannot hold one request of max_model_len",
                max_model_len=int(match[1]),
                needed_bytes=round(float(match[2]) * _GIB),
                available_bytes=round(float(match[3]) * _GIB),
                estimated_max_len=int(match[4]) if match[4] else None,
            )
        if match := _VLLM_AVAILABLE.search(line):
            return _signal(
                "gpu_budget",
                engine="vllm",
                what="nothing left for the KV cache after the weights and activations",
                available_bytes=round(float(match[1]) * _GIB),
            )
    if "maxtokensinpagedkvcache must be large enough" in low:
        return _signal(
            "gpu_budget", engine="tensorrt-llm", what="the paged KV cache cannot hold one sequence"
        )
    if "available memory of" in low and (match := _ORT_LIMIT.search(line)):
        return _signal(
            "gpu_budget",
            engine="onnxruntime",
            what="the CUDA arena's gpu_mem_limit",
            available_bytes=int(match[1]),
            requested_bytes=int(match[2]),
        )
    return None


def _library(line: str, low: str) -> LineSignal | None:
    if "failed to allocate memory for requested buffer" in low:
        match = _ORT_ARENA.search(line)
        return _signal(
            "gpu_oom",
            engine="onnxruntime",
            api="BFCArena",
            requested_bytes=int(match[1]) if match else None,
        )
    if "alloc_failed" in low:
        if "cublas_status_alloc_failed" in low:
            return _signal("gpu_oom", engine=_engine(low, "cuda"), api="cuBLAS")
        if "cudnn_status_alloc_failed" in low:
            return _signal("gpu_oom", engine=_engine(low, "cuda"), api="cuDNN")
    if "out of memory" in low:
        if "cuda error: out of memory" in low:
            default = "pytorch" if "torch" in low else "cuda"  # Julia, CuPy print it too
            return _signal("gpu_oom", engine=_engine(low, default), api="CUDA runtime")
        if (
            "cuda failure 2: out of memory" in low
            or "cuda failed with error 2 out of memory" in low
        ):
            expr = _EXPR.search(line)
            return _signal(
                "gpu_oom", engine=_engine(low, "cuda"), api=expr[1] if expr else "CUDA runtime"
            )
        if "cuda runtime error in" in low:
            return _signal("gpu_oom", engine=_engine(low, "cuda"), api="CUDA runtime")
        if "failed with out of memory" in low and "cuda" in low:
            return _signal("gpu_oom", engine="cuda", api="CUDA runtime")
    if "out_of_memory" in low and "cuda_error_out_of_memory" in low:
        if " on host" in low or " on the host" in low:
            return None  # pinned host memory refused through the driver: the host's (parts)
        if _ASKED_ABOUT.match(low, low.index("cuda_error_out_of_memory") + 24):
            return None  # asked about, not reported (a title's "gives `CUDA_ERROR_...`?")
        if handled_code(low, low.find("cuda_error_out_of_memory")):
            return None  # a value a change handles ("handle CUDA_ERROR_OUT_OF_MEMORY")
        sized = _TF_BYTES.search(line)
        return _signal(
            "gpu_oom",
            engine=_engine(low, "cuda"),
            api="CUDA driver",
            requested_bytes=int(sized[1]) if sized else None,
        )
    if "outofmemory" in low and ("hiperroroutofmemory" in low or "hip_error_outofmemory" in low):
        return _signal("gpu_oom", engine="hip", api="HIP runtime")
    if "out_of_device_memory" in low:
        if handled_code(low, low.find("error_out_of_device_memory")):
            return None  # a value a change handles (the line's parts still read it)
        # the same constant's name in two APIs: Vulkan's VK_ERROR_..., Level Zero's ZE_RESULT_...
        if "vk_error_out_of_device_memory" in low:
            return _signal("gpu_oom", engine="vulkan", api="Vulkan")
        return _signal("gpu_oom", engine="level-zero", api="Level Zero")
    if low.strip() == "failed to allocate again.":
        return _signal("gpu_oom", engine="nnabla", api="nnabla allocator")
    return None


def _engine(low: str, default: str) -> str:
    for needle, engine in (
        ("[tensorrt-llm]", "tensorrt-llm"),
        ("onnxruntime", "onnxruntime"),
        ("tensorflow", "tensorflow"),
        ("numba", "numba"),
        ("xla", "xla"),
        ("cubin", "xla"),
    ):
        if needle in low:
            return engine
    return default


_COMPONENT = re.compile(r"The following component could not be created: (.+)")
_TOTAL_GIB = re.compile(r"Total GPU memory \(GiB\): ([\d.]+)")
_FREE_GIB = re.compile(r"Free GPU memory before component creation attempt \(GiB\): ([\d.]+)")
EXECUTOR_HIT = b"Executor creation failed due to insufficient GPU memory"


def parse_trtllm_executor(context: str) -> LineSignal:
    """TensorRT-LLM's executor explaining its OOM over several lines (``context`` starts at the
    "Executor creation failed" line)."""
    component = _COMPONENT.search(context)
    total = _TOTAL_GIB.search(context)
    free = _FREE_GIB.search(context)
    return _signal(
        "gpu_oom",
        engine="tensorrt-llm",
        api="executor",
        component=component[1].strip() if component else None,
        total_bytes=round(float(total[1]) * _GIB) if total else None,
        free_bytes=round(float(free[1]) * _GIB) if free else None,
    )
