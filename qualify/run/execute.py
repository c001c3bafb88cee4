"""Run the E2E in its sandbox: set up, verify the cap, start, watch, stop, always tear down."""

from __future__ import annotations

import contextlib
import shutil
import signal
import subprocess
import threading
import time
import traceback
from collections.abc import Iterator
from pathlib import Path
from types import FrameType
from typing import Any

from harness import contract
from qualify.errors import SandboxError
from qualify.plan.limits import limit_mismatches
from qualify.plan.nvml import NvmlSampler
from qualify.plan.spec import HARNESS_SOURCE, RunSpec, harness_root
from qualify.run.execution import Execution
from qualify.run.logs import BoundedLog
from qualify.run.monitor import Monitor, MonitorResult
from qualify.sandbox import Sandbox, SandboxInfo
from qualify.sandbox.base import Child, StartsItself

POLL_S = 0.05


class Interrupts:
    """SIGINT/SIGTERM to qualify: remember the first, wake the wait loop, keep running."""

    def __init__(self) -> None:
        self.received: str | None = None
        self.event = threading.Event()

    def handler(self, signal_number: int, frame: FrameType | None) -> None:
        """Signal handler: record and wake; the run loop does the stopping."""
        self.received = self.received or signal.Signals(signal_number).name
        self.event.set()

    @contextlib.contextmanager
    def installed(self) -> Iterator[Interrupts]:
        """Install the handler for the duration of the run (main thread only)."""
        if threading.current_thread() is not threading.main_thread():
            yield self
            return
        previous = {s: signal.signal(s, self.handler) for s in (signal.SIGINT, signal.SIGTERM)}
        try:
            yield self
        finally:
            for number, old in previous.items():
                signal.signal(number, old)


def _stop(sandbox: Sandbox, process: Child, grace_s: float) -> None:
    """Terminate everything in the sandbox, wait ``grace_s``, then kill (nox's order)."""
    sandbox.kill_all(signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=grace_s)
    sandbox.kill_all(signal.SIGKILL)
    process.wait()


def _wait(spec: RunSpec, sandbox: Sandbox, process: Child, interrupts: Interrupts) -> bool:
    """Wait for the child; stop it on timeout or interruption. Returns True on timeout."""
    deadline = time.monotonic() + spec.timeout_s
    while process.poll() is None:
        if interrupts.received:
            _stop(sandbox, process, spec.grace_s)
            return False
        if time.monotonic() >= deadline:
            _stop(sandbox, process, spec.grace_s)
            return True
        interrupts.event.wait(POLL_S)
    return False


def _spawn(spec: RunSpec, sandbox: Sandbox) -> Any:
    """The started E2E: a Popen of ``wrap(argv)``, or what a self-starting backend returns."""
    if isinstance(sandbox, StartsItself):
        return sandbox.start(spec.argv, spec.workdir, spec.env, spec.run_dir)
    try:
        return subprocess.Popen(
            sandbox.wrap(spec.argv),
            cwd=spec.workdir,
            env=dict(spec.env),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
    except OSError as exc:
        raise SandboxError(f"cannot start the E2E: {exc.strerror}") from exc


def stage_harness(run_dir: Path) -> Path:
    """Copy the installed harness package into the run directory, where the sandbox's
    PYTHONPATH points (``qualify.plan.spec.harness_root``)."""
    target = harness_root(run_dir) / "harness"
    try:
        shutil.copytree(HARNESS_SOURCE, target, ignore=shutil.ignore_patterns("__pycache__"))
    except OSError as exc:
        raise SandboxError(f"cannot copy the harness into the run directory: {exc}") from exc
    return target


def execute(spec: RunSpec, sandbox: Sandbox, interrupts: Interrupts) -> Execution:
    """Run ``spec`` in ``sandbox``; never raises (failures become ``setup_error``)."""
    run_dir = spec.run_dir
    started_wall, started_mono = time.time(), time.monotonic()
    info: SandboxInfo | None = None
    monitor: Monitor | None = None
    monitor_result: MonitorResult | None = None
    logs: dict[str, BoundedLog] = {}
    returncode, timed_out, setup_error = None, False, None
    pid: int | None = None
    problems: list[str] = []
    try:
        stage_harness(spec.run_dir)
        info = sandbox.prepare(spec.limits)
        mismatches = limit_mismatches(spec.limits, info.in_effect) if info.capped else []
        if mismatches:
            raise SandboxError("limits in effect differ from those asked: " + "; ".join(mismatches))
        if interrupts.received:
            raise SandboxError(f"interrupted by {interrupts.received} before the E2E started")
        monitor = Monitor(
            sandbox.probe(),
            events_path=run_dir / contract.EVENTS,
            ack_path=run_dir / contract.PHASE_ACK,
            timeline_path=run_dir / contract.TIMELINE,
            interval_s=spec.sample_interval_s,
            gpu=NvmlSampler(mps=spec.gpu_budget is not None and spec.gpu_budget.mode == "mps"),
        )
        monitor.start()
        process = _spawn(spec, sandbox)
        pid = getattr(process, "pid", None)
        if not isinstance(sandbox, StartsItself):
            sandbox.attach(process.pid)
        streams = (
            ("stdout", process.stdout, contract.STDOUT),
            ("stderr", process.stderr, contract.STDERR),
        )
        for stream, pipe, name in streams:
            assert pipe is not None
            logs[stream] = BoundedLog(pipe, run_dir / name)
            logs[stream].start()
        timed_out = _wait(spec, sandbox, process, interrupts)
        returncode = process.returncode
    except SandboxError as exc:
        setup_error = str(exc)
    except Exception as exc:  # the toolkit failed: keep the traceback, blame nobody else
        setup_error = f"qualify failed: {type(exc).__name__}: {exc} (traceback in the debug log)"
        (run_dir / contract.DEBUG_LOG).write_text(traceback.format_exc(), encoding="utf-8")
    finally:
        if monitor is not None:
            monitor_result = monitor.stop()
        problems += sandbox.teardown()
        for log in logs.values():
            log.join(timeout=5)
        if isinstance(sandbox, StartsItself):
            # Read back at start and completed at teardown (the OOM signals of the container).
            info = sandbox.info() or info
    return Execution(
        sandbox=info,
        returncode=returncode,
        pid=pid if isinstance(pid, int) and pid > 0 else None,
        timed_out=timed_out,
        interrupted=interrupts.received,
        setup_error=setup_error,
        monitor=monitor_result,
        logs={name: log.stats() for name, log in logs.items()},
        started_wall=started_wall,
        started_mono=started_mono,
        ended_wall=time.time(),
        teardown_problems=tuple(problems),
    )
