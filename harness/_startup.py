"""What every Python process of the E2E runs as it starts (qualify's ``sitecustomize``).

The first process of the run records the memory limits it sees (:mod:`harness._limits`), and
each puts a one-shot finder on ``sys.meta_path`` that sees the family's ``import torch``
(:mod:`harness._gpu` hooks CUDA then). This module and the contract load with nothing but
``os`` and ``sys``: the rest of the harness (and the ``json``, ``re`` and ``typing`` it
imports) loads only in the process that records the limits and in those that import torch.
An E2E with many worker processes pays the harness's start-up in each, so it stays a small
share of the interpreter's own (``benchmarks/bench_suite.py --only startup``).
"""

from __future__ import annotations

import os
import sys

from harness.contract import ENV_EVENTS, ENV_RUN_DIR, LIMITS_MARKER

TYPE_CHECKING = False
if TYPE_CHECKING:  # importlib.abc is slow to import: the import system asks for find_spec alone
    import importlib.abc
    import importlib.machinery
    import types
    from collections.abc import Sequence


def start() -> None:
    """The limits recorded once per run, the torch finder installed; a no-op outside a run."""
    if not os.environ.get(ENV_EVENTS):
        return
    for step in (_record_limits_once, _watch_for_torch, _dump_stacks_on_signal):
        try:  # one failing never keeps the other from running, nor breaks the start-up
            step()
        except Exception:
            continue


def _record_limits_once() -> None:
    run_dir = os.environ.get(ENV_RUN_DIR)
    if not run_dir:
        return
    try:
        fd = os.open(
            os.path.join(run_dir, LIMITS_MARKER), os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644
        )
    except OSError:
        return  # another process of the run read them first (or the run dir is read-only)
    os.close(fd)
    from harness import _limits

    _limits.record()


_stacks_fd: list[int] = []


def _dump_stacks_on_signal() -> None:
    """On ``STACK_SIGNAL`` (sent by qualify to a thread as the run nears its cap), faulthandler
    writes that thread's Python stack to the run's ``STACKS`` file at once, from C, even while the
    process is inside an allocation; then, where torch is loaded, a Python handler adds its
    allocator's state. Left alone when the program has its own handler for the signal."""
    # _signal, not signal: the module's Python half imports enum, a third of a millisecond
    # in every process of the E2E.
    import _signal  # type: ignore[import-not-found]
    import faulthandler

    from harness.contract import STACK_SIGNAL, STACKS

    events = os.environ.get(ENV_EVENTS, "")
    if _stacks_fd or _signal.getsignal(STACK_SIGNAL) not in (_signal.SIG_DFL, None):
        return
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK
    fd = os.open(os.path.join(os.path.dirname(events), STACKS), flags, 0o644)
    _stacks_fd.append(fd)
    _signal.signal(STACK_SIGNAL, _allocator_state)
    # The thread that takes the signal dumps its own stack: all_threads would read the other
    # threads' frames without their lock, and crash a process whose threads are ending.
    faulthandler.register(STACK_SIGNAL, file=fd, all_threads=False, chain=True)


def _allocator_state(signum: int, frame: object) -> None:
    """One line of the CUDA caching allocator's totals, where torch has initialised CUDA."""
    torch = sys.modules.get("torch")
    if torch is None or not _stacks_fd:
        return
    try:
        if not torch.cuda.is_initialized():
            return
        import json

        from harness.contract import TORCH_STATE

        stats = torch.cuda.memory_stats()
        keys = ("allocated_bytes.all.current", "reserved_bytes.all.current",
                "allocated_bytes.all.peak", "num_alloc_retries", "num_ooms")  # fmt: skip
        # pid first: qualify finds the line by its start (qualify.run.last_gasp)
        state = {"pid": os.getpid(), "cuda": {key: stats.get(key) for key in keys}}
        os.write(_stacks_fd[0], (TORCH_STATE + json.dumps(state) + "\n").encode())
    except Exception:
        return


_installed: list[bool] = []


def _watch_for_torch() -> None:
    if _installed:
        return
    _installed.append(True)
    if "torch" in sys.modules:
        from harness._gpu import on_torch

        on_torch(sys.modules["torch"])
    else:
        sys.meta_path.insert(0, _TorchFinder())


class _TorchFinder:
    """One-shot finder: lets ``import torch`` proceed, then runs ``_gpu.on_torch`` on the
    module. A ``MetaPathFinder`` by its ``find_spec`` (the import system asks for nothing
    else)."""

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,
        target: types.ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != "torch":
            return None
        if self in sys.meta_path:  # (contextlib is not imported here)
            sys.meta_path.remove(self)
        import importlib.util

        spec = importlib.util.find_spec(fullname)
        if spec is None or spec.loader is None:
            return spec
        spec.loader = _AfterExecLoader(spec.loader)  # type: ignore[assignment]
        return spec


class _AfterExecLoader:
    """Delegates to torch's own loader; after the module executed, queues the CUDA hook.

    A ``Loader`` by its ``create_module`` and ``exec_module``; the rest is the inner one's."""

    def __init__(self, inner: importlib.abc.Loader):
        self._inner = inner

    def __getattr__(self, name: str) -> object:
        # get_resource_reader, is_package... used by importlib.resources on torch.
        return getattr(self._inner, name)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType | None:
        return self._inner.create_module(spec)

    def exec_module(self, module: types.ModuleType) -> None:
        module.__spec__.loader = self._inner  # type: ignore[union-attr]
        module.__loader__ = self._inner
        self._inner.exec_module(module)
        from harness._gpu import on_torch

        on_torch(module)
