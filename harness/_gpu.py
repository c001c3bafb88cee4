"""GPU side of the harness: budget, allocator record and CUDA OOM evidence, all lazy.

Nothing here imports torch, and nothing imports this module before the family imports torch:
:mod:`harness._startup` puts a one-shot finder on ``sys.meta_path`` in every process of the
E2E; the finder lets the import run unchanged and then calls :func:`on_torch`, which queues
``_on_cuda_init`` with ``torch.cuda._lazy_call``. torch runs queued calls inside
``torch.cuda._lazy_init`` right after ``torch._C._cuda_init()`` (torch 2.13
torch/cuda/__init__.py), that is, before the first CUDA allocation of the process: the budget
is in place before the family allocates anything.

Events (one JSON line each in the run's events file, stamped with t, mono and pid):

- ``gpu_budget``: ``mode, device, fraction, total_bytes, budget_bytes, applied`` and ``error``
  when the budget could not be applied (larger than the device, or torch refused it). In mps
  mode (``QUALIFY_GPU_BUDGET_MODE=mps``) the driver enforces ``CUDA_MPS_PINNED_DEVICE_MEM_LIMIT``
  itself: the event records the limit this process's environment gives the device
  (``mps_limit_bytes``) and what ``cudaMemGetInfo`` reports under it (``mem_get_info``).
- ``gpu_allocator``: the allocator variables the process saw, the settings string torch parsed
  (``settings_source`` "torch"; before torch 2.12, which has no getter, the variable torch reads:
  "environment"), the backend, and whether ``expandable_segments`` is on in that string.
- ``cuda_oom``: ``source`` ("observer": torch's out-of-memory observer, exact numbers; or
  "exception": a raised ``torch.OutOfMemoryError`` with its message), the allocator counters of
  the device, and ``snapshot`` when ``QUALIFY_CUDA_HISTORY=1`` dumped one.
- ``gpu_hook_error``: the hook itself failed; the family's run is never broken by the hook.
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys
import threading
import types
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from harness import contract, cuts
from harness._events import emit
from harness.contract import ENV_EVENTS, ENV_RUN_DIR

ENV_BUDGET = contract.ENV_GPU_BUDGET
ENV_BUDGET_MODE = contract.ENV_GPU_BUDGET_MODE
ENV_MPS_LIMIT = "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"
_MPS_UNITS = {"": 1, "B": 1, "K": 1 << 10, "KB": 1 << 10, "M": 1 << 20, "MB": 1 << 20}
_MPS_UNITS |= {"G": 1 << 30, "GB": 1 << 30, "T": 1 << 40, "TB": 1 << 40}
ENV_HISTORY = contract.ENV_CUDA_HISTORY
ALLOC_VARIABLES = ("PYTORCH_ALLOC_CONF", "PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_HIP_ALLOC_CONF")
HISTORY_MAX_ENTRIES = 100_000

_state = {"torch_seen": False, "snapshot_done": False}
_lock = threading.Lock()


def budget_bytes(environ: dict[str, str] | os._Environ[str] | None = None) -> int | None:
    """The GPU budget asked by the host, or None (unset or empty means no budget)."""
    raw = (os.environ if environ is None else environ).get(ENV_BUDGET, "").strip()
    return int(raw) if raw else None


def budget_fraction(budget: int, total: int) -> tuple[float | None, str | None]:
    """The fraction for ``set_per_process_memory_fraction``, or None and why it cannot be."""
    if budget <= 0:
        return None, f"GPU budget {budget} bytes must be positive"
    if total <= 0:
        return None, f"device total memory reads {total} bytes"
    if budget > total:
        return None, f"GPU budget {budget} bytes exceeds the device's {total} bytes"
    return budget / total, None


def mps_limit_bytes(value: str | None, device: int) -> int | None:
    """The limit ``CUDA_MPS_PINNED_DEVICE_MEM_LIMIT`` ("0=1G,1=512MB") sets on ``device``."""
    for pair in (value or "").split(","):
        ordinal, sep, size = pair.partition("=")
        if not sep or ordinal.strip() != str(device):
            continue
        size = size.strip()
        digits = len(size) - len(size.lstrip("0123456789"))
        unit = _MPS_UNITS.get(size[digits:].strip().upper())
        if digits and unit is not None:
            return int(size[:digits]) * unit
    return None


def expandable_in(settings: str | None) -> bool | None:
    """Whether an allocator settings string turns ``expandable_segments`` on (None: unset)."""
    if not settings:
        return None
    found: bool | None = None
    for item in settings.split(","):
        key, _, value = item.partition(":")
        if key.strip() == "expandable_segments":
            found = value.strip().lower() in ("true", "1")
    return found


def on_torch(torch: Any) -> None:
    """torch was imported: queue the CUDA init hook and chain the exception hooks."""
    with _lock:
        if _state["torch_seen"]:
            return
        _state["torch_seen"] = True
    try:
        _chain_excepthooks()
        torch.cuda._lazy_call(functools.partial(_on_cuda_init, torch))
    except Exception as exc:
        _hook_error("on_torch", exc)


def _hook_error(where: str, exc: BaseException) -> None:
    emit(
        {"event": contract.GPU_HOOK_ERROR, "where": where, "error": f"{type(exc).__name__}: {exc}"}
    )


def _on_cuda_init(torch: Any) -> None:
    # Runs inside torch.cuda._lazy_init: every failure is recorded, never raised, since a
    # raise here becomes the family's DeferredCudaCallError.
    for step in (_record_allocator, _apply_budget, _attach_observer, _start_history):
        try:
            step(torch)
        except Exception as exc:
            _hook_error(step.__name__, exc)


def _allocator_settings(torch: Any) -> str | None:
    return _allocator_settings_and_source(torch)[0]


def _allocator_settings_and_source(torch: Any) -> tuple[str | None, str]:
    """The settings string the caching allocator parsed, and where it was read: "torch" (its
    own getter, torch 2.12 and later) or "environment" (older torch has no getter: the variable
    torch reads, in its order: ``PYTORCH_ALLOC_CONF``, then the backend's own)."""
    getter = getattr(getattr(torch, "_C", None), "_accelerator_getAllocatorSettings", None)
    if getter is not None:
        return str(getter()), "torch"
    hip = bool(getattr(getattr(torch, "version", None), "hip", None))
    names = ("PYTORCH_ALLOC_CONF", "PYTORCH_HIP_ALLOC_CONF" if hip else "PYTORCH_CUDA_ALLOC_CONF")
    for name in (*names, "PYTORCH_CUDA_ALLOC_CONF") if hip else names:
        if os.environ.get(name):
            return os.environ[name], "environment"
    return None, "environment"


def _record_allocator(torch: Any) -> None:
    settings, source = _allocator_settings_and_source(torch)
    backend = None
    with contextlib.suppress(Exception):
        backend = str(torch.cuda.get_allocator_backend())
    emit(
        {
            "event": contract.GPU_ALLOCATOR,
            "variables": {name: os.environ.get(name) for name in ALLOC_VARIABLES},
            "settings": settings,
            "settings_source": source,
            "backend": backend,
            "expandable_segments": expandable_in(settings),
            "torch_version": str(torch.__version__),
            "device_count": int(torch.cuda.device_count()),
        },
        durable=True,
    )


def _apply_budget(torch: Any) -> None:
    budget = budget_bytes()
    if budget is None:
        return
    mode = os.environ.get(ENV_BUDGET_MODE) or "torch"
    # Every visible device: the sandbox's CUDA_VISIBLE_DEVICES already names what the run owns.
    for device in range(int(torch.cuda.device_count())):
        total = int(torch.cuda.get_device_properties(device).total_memory)
        fraction, error = budget_fraction(budget, total)
        record: dict[str, Any] = {
            "event": contract.GPU_BUDGET,
            "mode": mode,
            "device": device,
            "fraction": fraction,
            "total_bytes": total,
            "budget_bytes": budget,
            "applied": False,
        }
        if mode == "mps":
            _record_mps(torch, device, record, error)
            continue
        if fraction is not None:
            try:
                torch.cuda.set_per_process_memory_fraction(fraction, device)
                record["applied"] = True
            except Exception as exc:
                error = f"set_per_process_memory_fraction failed: {exc}"
        if error:
            record["error"] = error
        emit(record, durable=True)


def _record_mps(torch: Any, device: int, record: dict[str, Any], error: str | None) -> None:
    """mps mode: nothing to apply here (the driver read the limit at init); record it."""
    value = os.environ.get(ENV_MPS_LIMIT)
    limit = mps_limit_bytes(value, device)
    record.update(fraction=None, mps_limit_env=value, mps_limit_bytes=limit)
    with contextlib.suppress(Exception):
        free, seen_total = torch.cuda.mem_get_info(device)
        record["mem_get_info"] = [int(free), int(seen_total)]
    if error is None and limit is None:
        error = f"{ENV_MPS_LIMIT}={value!r} sets no limit on device {device}"
    record["applied"] = error is None
    if error:
        record["error"] = error
    emit(record, durable=True)


def _attach_observer(torch: Any) -> None:
    attach = getattr(torch._C, "_cuda_attach_out_of_memory_observer", None)
    if attach is None:
        emit(
            {"event": contract.GPU_HOOK_ERROR, "where": "observer", "error": "no OOM observer API"}
        )
        return

    def observer(device: int, alloc: int, device_limit: int, device_free: int) -> None:
        # Called by the caching allocator after it released its lock, before it raises.
        try:
            record_oom(
                torch,
                source="observer",
                device=int(device),
                requested_bytes=int(alloc),
                observer_limit_bytes=int(device_limit),
                observer_free_bytes=int(device_free),
            )
        except Exception as exc:
            _hook_error("observer", exc)

    attach(observer)


def _start_history(torch: Any) -> None:
    if os.environ.get(ENV_HISTORY) != "1" or not os.environ.get(ENV_RUN_DIR):
        return
    torch.cuda.memory._record_memory_history(max_entries=HISTORY_MAX_ENTRIES)
    emit({"event": contract.CUDA_HISTORY, "state": "recording", "max_entries": HISTORY_MAX_ENTRIES})


# cuda_oom event field -> torch.cuda.memory_stats() key (names stable since torch 1.4, the
# allocator statistics of https://github.com/pytorch/pytorch/pull/27361).
ALLOCATOR_COUNTERS = {
    "allocated_bytes": "allocated_bytes.all.current",
    "reserved_bytes": "reserved_bytes.all.current",
    "inactive_split_bytes": "inactive_split_bytes.all.current",
    "num_alloc_retries": "num_alloc_retries",
    "num_ooms": "num_ooms",
}


def allocator_counters(stats: Mapping[str, Any]) -> dict[str, Any]:
    """The ``cuda_oom`` allocator fields from a ``memory_stats()`` dict (None: key absent)."""
    return {field: stats.get(key) for field, key in ALLOCATOR_COUNTERS.items()}


def _device_counters(torch: Any, device: int) -> dict[str, Any]:
    stats = torch.cuda.memory_stats(device)
    free, total = torch.cuda.mem_get_info(device)
    return {"total_bytes": int(total), "free_bytes": int(free), **allocator_counters(stats)}


def _dump_snapshot(torch: Any) -> str | None:
    run_dir = os.environ.get(ENV_RUN_DIR)
    if os.environ.get(ENV_HISTORY) != "1" or not run_dir:
        return None
    with _lock:
        if _state["snapshot_done"]:
            return None
        _state["snapshot_done"] = True
    path = os.path.join(run_dir, contract.CUDA_SNAPSHOT)
    torch.cuda.memory._dump_snapshot(path)
    return path


def record_oom(
    torch: Any,
    *,
    source: str,
    device: int | None = None,
    message: str | None = None,
    **extra: Any,
) -> None:
    """Write one ``cuda_oom`` event with the allocator counters of ``device``."""
    record: dict[str, Any] = {
        "event": contract.CUDA_OOM,
        "source": source,
        "device": device,
        "requested_bytes": extra.pop("requested_bytes", None),
    }
    try:
        index = int(torch.cuda.current_device()) if device is None else device
        record["device"] = index
        record.update(_device_counters(torch, index))
    except Exception as exc:
        record["counters_error"] = f"{type(exc).__name__}: {exc}"
    record["allocator_conf"] = _allocator_settings(torch)
    record["message"] = message
    record.update(extra)
    try:
        record["snapshot"] = _dump_snapshot(torch)
    except Exception as exc:
        record["snapshot_error"] = f"{type(exc).__name__}: {exc}"
    emit(record, durable=True)


def is_cuda_oom(exc: BaseException) -> bool:
    """True for ``torch.OutOfMemoryError`` (checked by name: torch is never imported here)."""
    torch = sys.modules.get("torch")
    oom_type = getattr(torch, "OutOfMemoryError", None) if torch is not None else None
    return isinstance(oom_type, type) and isinstance(exc, oom_type)


def record_exception(exc: BaseException) -> None:
    """Record a raised ``torch.OutOfMemoryError`` once (guards and hooks may both see it)."""
    if not os.environ.get(ENV_EVENTS) or not is_cuda_oom(exc):
        return
    if getattr(exc, "_qualify_recorded", False):
        return
    with contextlib.suppress(Exception):
        exc._qualify_recorded = True  # type: ignore[attr-defined]
    try:
        record_oom(sys.modules["torch"], source="exception", message=cuts.head(str(exc), 4000))
    except Exception as hook_exc:
        _hook_error("record_exception", hook_exc)


@contextlib.contextmanager
def cuda_oom_guard() -> Iterator[None]:
    """Record a ``torch.OutOfMemoryError`` leaving the block as a ``cuda_oom`` event, re-raise."""
    try:
        yield
    except BaseException as exc:
        record_exception(exc)
        raise


def _chain_excepthooks() -> None:
    previous_sys: Callable[..., Any] = sys.excepthook
    previous_thread: Callable[..., Any] = threading.excepthook

    def sys_hook(
        kind: type[BaseException], value: BaseException, tb: types.TracebackType | None
    ) -> None:
        record_exception(value)
        previous_sys(kind, value, tb)

    def thread_hook(args: threading.ExceptHookArgs) -> None:
        if args.exc_value is not None:
            record_exception(args.exc_value)
        previous_thread(args)

    sys.excepthook = sys_hook
    threading.excepthook = thread_hook
