"""Run the E2E in its sandbox: set up, verify the cap, start, watch, stop, always tear down."""

from __future__ import annotations

import contextlib
import os
import select
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

from harness import contract
from qualify import records
from qualify.errors import SandboxError
from qualify.plan.limits import limit_mismatches
from qualify.plan.spec import HARNESS_SOURCE, RunSpec, harness_root
from qualify.run.children import Watchdog, reap, set_subreaper
from qualify.sandbox import Sandbox, SandboxInfo
from qualify.sandbox.base import Child, Probe, StartsItself, StopReport
from qualify.sandbox.cgroup.fs import LimitWatch, limit_files

if TYPE_CHECKING:
    # Imported once the E2E has started (``_watch``): the monitor, its samplers and readers,
    # the logs and the execution record are a tenth of what qualify imports, and nothing
    # before the E2E's start needs them.
    from qualify.run.execution import Execution
    from qualify.run.logs import BoundedLog
    from qualify.run.monitor import Monitor, MonitorResult
    from qualify.run.processes import Escape

POLL_S = 0.05
PIDFD_POLL_S = 0.25
"""With a pidfd the E2E's exit wakes the wait at once: the loop only wakes to look for an
escape or a signal to qualify, 4 times a second rather than 20."""
LOG_JOIN_S = 5.0


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


def _wait(
    spec: RunSpec,
    sandbox: Sandbox,
    process: Child,
    interrupts: Interrupts,
    monitor: Monitor,
    while_running: Callable[[], None] | None = None,
) -> tuple[bool, str | None]:
    """Wait for the child, calling ``while_running`` at each wake-up; stop it on timeout,
    interruption or an escape. Returns (timed out, why the run must be an ERROR)."""
    deadline = time.monotonic() + spec.timeout_s
    with _exit_waiter(process) as (wait_for_exit, poll_s):
        while process.poll() is None:
            escapes = monitor.processes.escapes
            if escapes:
                _stop(sandbox, process, 0.0)
                return False, escape_error(escapes)
            if interrupts.received:
                _stop(sandbox, process, spec.grace_s)
                return False, None
            if time.monotonic() >= deadline:
                _stop(sandbox, process, spec.grace_s)
                return True, None
            wait_for_exit(min(poll_s, max(0.0, deadline - time.monotonic())))
            if while_running is not None and process.poll() is None:
                while_running()
    return False, None


@contextlib.contextmanager
def _exit_waiter(process: Any) -> Iterator[tuple[Callable[[float], None], float]]:
    """A wait that returns the moment the E2E's root exits (a pidfd, Linux 5.3), or after
    the timeout, and how long to wait at most; a child without a host pid is polled."""
    pid = getattr(process, "pid", 0)
    try:
        fd = os.pidfd_open(pid) if isinstance(process, subprocess.Popen) else -1
    except OSError:
        fd = -1
    try:
        if fd < 0:
            yield time.sleep, POLL_S
        else:
            yield (lambda timeout: select.select([fd], [], [], timeout) and None), PIDFD_POLL_S
    finally:
        if fd >= 0:
            os.close(fd)


def escape_error(escapes: Sequence[Escape]) -> str:
    """The setup error of a run a process left: which one, and where it went."""
    first = escapes[0]
    more = f" (and {len(escapes) - 1} more)" if len(escapes) > 1 else ""
    return (
        f"process {first.pid} ({first.name}) left the run's cgroup{more}: it is now in "
        f"{first.cgroup or 'an unknown cgroup'}; it was killed, and the cap no longer bounded it"
    )


def _confirm_inside(probe: Probe, process: Child, pid: int, timeout_s: float = 2.0) -> None:
    """Wait until the launch shim has moved the E2E's root into the sandbox (or it ended)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and process.poll() is None:
        with contextlib.suppress(OSError, ValueError):
            if pid in probe.pids():
                return
        time.sleep(0.002)


def _signal_of(process: Any) -> str | None:
    """The signal that ended the E2E's root, as its starter knows it: a Popen's negative
    return code; a container's own account (``ContainerChild.signal``)."""
    if isinstance(process, subprocess.Popen):
        code = process.returncode
        return signal_label(-code) if code is not None and code < 0 else None
    name = getattr(process, "signal", None)
    return name if isinstance(name, str) else None


def signal_label(number: int) -> str:
    """ "SIGKILL" for 9; "signal 99" for a number with no name."""
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


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
    PYTHONPATH points (``qualify.plan.spec.harness_root``). Its bytecode comes along, the
    sources' modification times kept, so that an E2E on the host's Python version imports the
    harness (its ``sitecustomize``: every Python process of the run) without compiling it."""
    target = harness_root(run_dir) / "harness"
    try:
        shutil.copytree(HARNESS_SOURCE, target)
    except OSError as exc:
        raise SandboxError(f"cannot copy the harness into the run directory: {exc}") from exc
    return target


@records.record
class _Run:
    """The pieces of one execution that teardown must undo, whatever stage it reached."""

    info: SandboxInfo | None = None
    monitor: Monitor | None = None
    watchdog: Watchdog | None = None
    subreaper: bool = False
    logs: dict[str, BoundedLog] = records.field(default_factory=dict)
    limits: LimitWatch | None = None


def _start(
    spec: RunSpec,
    sandbox: Sandbox,
    interrupts: Interrupts,
    run: _Run,
    on_started: Callable[[], None] | None = None,
) -> Any:
    """Confine, start the watchers, start the E2E, then call ``on_started``; returns the
    started child."""
    stage_harness(spec.run_dir)
    run.info = sandbox.prepare(spec.limits)
    mismatches = limit_mismatches(spec.limits, run.info.in_effect) if run.info.capped else []
    if mismatches:
        raise SandboxError("limits in effect differ from those asked: " + "; ".join(mismatches))
    if interrupts.received:
        raise SandboxError(f"interrupted by {interrupts.received} before the E2E started")
    cgroups = sandbox.cgroup_dirs()
    if cgroups:
        # The limits as set, read before the E2E can touch them; the monitor reads them again
        # at every sample and at the end.
        run.limits = LimitWatch(limit_files(cgroups))
        how = (
            "the limits are also watched:"
            if run.info.limits_locked
            else "the limits are watched, not locked: the E2E may write its cgroup files, so"
        )
        watched = (
            f"{how} {len(run.limits.files)} limit files of the run's cgroups and their ancestors "
            "are read at every sample and at the end, and a change is ERROR"
        )
        run.info = records.replace(run.info, notes=(*run.info.notes, watched))
        if run.watchdog is None:  # the caller's guard started none (``guard_run``)
            run.watchdog = Watchdog(cgroups)
        run.subreaper = set_subreaper(True)
    process = _spawn(spec, sandbox)
    _watch(spec, sandbox, run, process, cgroup=run.info.cgroup if cgroups else None)
    if on_started is not None:
        on_started()
    return process


def _watch(spec: RunSpec, sandbox: Sandbox, run: _Run, process: Any, cgroup: str | None) -> None:
    """The watchers of the started E2E: its logs, and the monitor. Both start once the E2E
    has: their imports and start-up (the first sample, the first round of the process reader)
    run beside the E2E's own start, not before it. That start is the launch shim's moves into
    the cgroups, the first of which waits for an RCU grace period of the kernel, then the
    interpreter's start-up. The monitor
    misses nothing: peaks come from the kernel's watermark, and the E2E reaches its first phase
    boundary long after."""
    from qualify.nvml import NvmlSampler
    from qualify.run.logs import BoundedLog
    from qualify.run.monitor import Monitor
    from qualify.run.processes import ProcessReader

    streams = (
        ("stdout", process.stdout, contract.STDOUT),
        ("stderr", process.stderr, contract.STDERR),
    )
    for stream, pipe, name in streams:
        assert pipe is not None
        run.logs[stream] = BoundedLog(pipe, spec.run_dir / name)
        run.logs[stream].start()
    probe = sandbox.probe()
    reader = ProcessReader(probe.pids, cgroup=cgroup)
    last_gasp = _last_gasp(spec, sandbox, run, probe)
    if run.watchdog is not None:
        reader.exempt.add(run.watchdog.pid)
    run.monitor = Monitor(
        probe,
        events_path=spec.run_dir / contract.EVENTS,
        ack_path=spec.run_dir / contract.PHASE_ACK,
        timeline_path=spec.run_dir / contract.TIMELINE,
        interval_s=spec.sample_interval_s,
        gpu=NvmlSampler(mps=spec.gpu_budget is not None and spec.gpu_budget.mode == "mps"),
        processes=reader,
        limits=run.limits,
        last_gasp=last_gasp,
    )
    run.monitor.start()
    if not isinstance(sandbox, StartsItself):
        sandbox.attach(process.pid)
        _confirm_inside(probe, process, process.pid)
    reader.root = process.pid if isinstance(process.pid, int) and process.pid > 0 else None


def _last_gasp(spec: RunSpec, sandbox: Sandbox, run: _Run, probe: Any) -> Any:
    """The last-gasp capture of a capped run (``qualify.run.last_gasp``), armed on the memory
    cgroup's thresholds where the kernel notifies them; None when nothing caps memory."""
    from qualify.run.last_gasp import LastGasp

    in_effect = run.info.in_effect if run.info is not None and run.info.capped else None
    cap = in_effect.memory_bytes if in_effect is not None else None
    if not cap:
        return None
    dirs = sandbox.cgroup_dirs()
    memory = next((d for d in dirs if (d / "memory.usage_in_bytes").exists()), None)
    later = getattr(probe, "memory_directory", None)  # a container's, once it runs
    return LastGasp(
        spec.run_dir, probe.pids, cap, memory_cgroup=memory, origin_mono=0.0,
        find_cgroup=later if memory is None else None,
    )  # fmt: skip


class Teardown:
    """The end of a run that no report waits for: the killed processes torn down by the
    kernel, the confinement removed, the watchdog released, the adopted orphans reaped (the
    run's registry entry stays until its caller's reports are final). Started as soon as
    everything is killed; ``wait`` collects its problems."""

    def __init__(self, sandbox: Sandbox, run: _Run):
        self._sandbox, self._run = sandbox, run
        self._problems: list[str] = []
        # A daemon: when qualify exits before it ends, the watchdog finishes the job.
        self._thread = threading.Thread(target=self._work, name="qualify-teardown", daemon=True)
        self._thread.start()

    def _work(self) -> None:
        run = self._run
        if run.limits is not None and run.monitor is None:  # the monitor closes its own
            run.limits.close()
        try:
            self._problems += self._sandbox.teardown()
        finally:
            if run.subreaper:
                reap(run.monitor.processes.adopted if run.monitor else ())
                set_subreaper(False)
            if run.watchdog is not None:
                run.watchdog.release()

    def wait(self, timeout_s: float | None = None) -> list[str] | None:
        """Wait for the end; its problems, or None when it is still going after ``timeout_s``."""
        self._thread.join(timeout_s)
        return None if self._thread.is_alive() else self._problems


def _finish(
    sandbox: Sandbox, run: _Run, process: Any
) -> tuple[MonitorResult | None, StopReport, Teardown]:
    """Kill first, then read: nothing here waits for the kernel to tear the run down."""
    # The E2E's root led its own session: one killpg takes its whole process group at once
    # (a fork storm's thousands of shells), before the per-process pass over the cgroup.
    popen = isinstance(process, subprocess.Popen)
    stopped = sandbox.stop(process.pid if popen else None)
    for log in run.logs.values():
        if popen:  # a container's logs end with the container, through the engine
            log.writers_killed()
        log.join(timeout=LOG_JOIN_S)
    monitor = run.monitor.stop() if run.monitor is not None else None
    for escape in monitor.escapes if monitor else ():
        with contextlib.suppress(OSError):
            os.kill(escape.pid, signal.SIGKILL)
    return monitor, stopped, Teardown(sandbox, run)


def execute(
    spec: RunSpec,
    sandbox: Sandbox,
    interrupts: Interrupts,
    on_started: Callable[[], None] | None = None,
    while_running: Callable[[], None] | None = None,
    watchdog: Watchdog | None = None,
) -> Execution:
    """Run ``spec`` in ``sandbox``; never raises (failures become ``setup_error``).
    ``watchdog``: the one started for the sandbox's cgroups before they were created (one is
    started here when the sandbox has cgroups and none was given).
    ``on_started`` is called once the E2E runs (what can wait until then: the caller's
    imports for the end of the run), ``while_running`` each time the wait for its end wakes
    (a quarter of a second apart at most: the caller's reading of the run's files as they
    grow). Neither may raise."""
    run_dir = spec.run_dir
    started_wall, started_mono = time.time(), time.monotonic()
    run = _Run(watchdog=watchdog)
    returncode, timed_out, setup_error = None, False, None
    pid: int | None = None
    killed_by: str | None = None
    process: Any = None
    try:
        process = _start(spec, sandbox, interrupts, run, on_started)
        pid = getattr(process, "pid", None)
        assert run.monitor is not None
        timed_out, setup_error = _wait(
            spec, sandbox, process, interrupts, run.monitor, while_running
        )
        returncode = process.returncode
        killed_by = _signal_of(process)
    except SandboxError as exc:
        setup_error = str(exc)
    except Exception as exc:  # the toolkit failed: keep the traceback, blame nobody else
        setup_error = f"qualify failed: {type(exc).__name__}: {exc} (traceback in the debug log)"
        import traceback

        (run_dir / contract.DEBUG_LOG).write_text(traceback.format_exc(), encoding="utf-8")
    finally:
        monitor, stopped, teardown = _finish(sandbox, run, process)
        problems = [*stopped.problems, *(monitor.problems if monitor else ())]
        info = run.info
        if isinstance(sandbox, StartsItself):
            # Its teardown completes what was read back (the OOM signals of the container).
            problems += teardown.wait() or []
            info = sandbox.info() or info
    if setup_error is None and monitor is not None and monitor.escapes:
        setup_error = escape_error(monitor.escapes)
    from qualify.run.execution import Execution

    return Execution(
        sandbox=info,
        returncode=returncode,
        pid=pid if isinstance(pid, int) and pid > 0 else None,
        timed_out=timed_out,
        interrupted=interrupts.received,
        setup_error=setup_error,
        monitor=monitor,
        logs={name: log.stats() for name, log in run.logs.items()},
        started_wall=started_wall,
        started_mono=started_mono,
        ended_wall=time.time(),
        teardown_problems=tuple(problems),
        signal=killed_by,
        killed_at_end=stopped.killed,
        killed_at_end_count=stopped.killed_count,
        teardown=teardown,
    )
