"""Host-side monitor thread: samples the sandbox, measures phase boundaries, writes the timeline.

It runs outside the capped cgroup, so it survives whatever kills the E2E. Its own memory stays
bounded however long the run is: samples go straight to the timeline file; only aggregates and
the processes at the highest sample are kept.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from pathlib import Path
from typing import IO, Any

from harness import contract
from qualify.nvml import NvmlSampler
from qualify.records import frozen_record
from qualify.run.last_gasp import LastGasp, LastGaspRecord
from qualify.run.phases import PhaseTracker, PhaseWindow
from qualify.run.processes import Escape, ProcessReader, ProcessSample
from qualify.run.tail import JsonlTail
from qualify.run.timeline import sample_line
from qualify.sandbox.base import Probe
from qualify.sandbox.cgroup.fs import LimitChange, LimitWatch
from qualify.untrusted import append_regular

TOP_PROCESSES = 5
FLUSH_EVERY = 20
STOP_JOIN_S = 1.0
DEFAULT_INTERVAL_S = 0.05
CPU_SHARE = 0.0055
"""The share of one core the sampling thread may use on average at the default interval (a
shorter interval asked for raises it in proportion). With the process reader's
(``processes.CPU_SHARE``, 0.25%) the monitor stays under 1% of a core whatever the E2E does: a
wake-up that cost more (cgroup files read slowly during a fork storm, a slower machine) is
followed by a longer pause, so that samples come less often rather than cost more. Both
threads run at their share on a busy suite or a fork storm; what neither pays back (the last
wake-up and round before the end, a few milliseconds) needs the 0.2% left."""
MAX_PAUSE_S = 1.0
"""The longest pause the share stretches a wake-up's to: boundaries are still seen within a
second (an E2E waits for their acknowledgement; see ``harness._events.sync_point``)."""
_BOUNDARY_MARKERS = tuple(
    contract.marker(kind) for kind in (*contract.BOUNDARY_EVENTS, contract.ACK_TIMEOUT)
)
_TEST_MARKER = contract.marker(contract.TEST_PHASE)


@frozen_record
class MonitorResult:
    """What the monitor saw over the whole run."""

    samples: int
    peak_bytes: int | None
    """The kernel's watermark over the run (max of every segment's reading)."""
    peak_source: str
    """"kernel" (cgroup watermark) or "samples" (no watermark available)."""
    sampled_peak_bytes: int | None
    sampled_peak_mono: float | None
    processes_at_peak: tuple[ProcessSample, ...]
    oom_kills: int | None
    """Delta of the oom_kill counter over the run (None: no counter)."""
    phases: tuple[PhaseWindow, ...]
    phases_dropped: int
    ack_timeouts: int
    cpu_seconds: float
    """CPU time of the monitor's own threads (the sampler and the process reader)."""
    pids_refused: int | None = None
    """Forks the pids limit refused over the run (None: no pids controller)."""
    limit_hits: int | None = None
    """How often usage reached the cap (None: unknown); 0 with OOM kills: the host's OOM."""
    escapes: tuple[Escape, ...] = ()
    """Processes of the run found alive outside its confinement."""
    problems: tuple[str, ...] = ()
    write_error: str | None = None
    """The first write of the monitor that failed (the disk filled up), if one did."""
    limit_changes: tuple[LimitChange, ...] = ()
    """Limit files of the run's cgroups or their ancestors whose value changed during the run."""
    limit_files: tuple[Path, ...] = ()
    """The limit files watched."""
    last_gasp: tuple[LastGaspRecord, ...] = ()
    """What the run's processes were doing as usage neared the cap (``at_s``: monotonic)."""


class Monitor(threading.Thread):
    """Samples every ``interval_s``; checks for phase boundaries every ``boundary_poll_s``;
    both less often when that would cost more than ``cpu_share`` of a core (see ``CPU_SHARE``)."""

    def __init__(
        self,
        probe: Probe,
        events_path: Path,
        ack_path: Path,
        timeline_path: Path,
        interval_s: float = DEFAULT_INTERVAL_S,
        boundary_poll_s: float = DEFAULT_INTERVAL_S,
        process_every: int = 4,
        gpu: NvmlSampler | None = None,
        processes: ProcessReader | None = None,
        cpu_share: float | None = None,
        limits: LimitWatch | None = None,
        last_gasp: LastGasp | None = None,
    ):
        super().__init__(name="qualify-monitor", daemon=True)
        self.cpu_share = cpu_share or CPU_SHARE * max(1.0, DEFAULT_INTERVAL_S / interval_s)
        self.probe = probe
        self.tail = JsonlTail(events_path)
        self.ack_path = ack_path
        self.timeline_path = timeline_path
        self.interval_s = interval_s
        self.boundary_poll_s = min(boundary_poll_s, interval_s)
        self.process_every = max(1, process_every)
        self.tracker = PhaseTracker()
        self.origin_mono = time.monotonic()
        self._stop_event = threading.Event()
        self._work = threading.Lock()
        self._samples = 0
        self._peak_watermark: int | None = None
        self._segment_sampled_max: int | None = None
        self._sampled_peak: tuple[int, float] | None = None
        self._processes_at_peak: tuple[ProcessSample, ...] = ()
        self._processes_peak = 0
        self._oom_start = self._safe(probe.oom_kills)
        self._oom_last = self._oom_start
        self._resettable = True
        self._ack_timeouts = 0
        self._current_test: str | None = None
        self._cpu_seconds = 0.0
        self._cpu_clock: int | None = None
        self._cpu_start = 0.0
        self._pids_refused: int | None = None
        self._limit_hits: int | None = None
        self._timeline: IO[str] | None = None
        self.write_error: str | None = None
        self.problems: list[str] = []
        self.processes = processes or ProcessReader(probe.pids)
        self.gpu = gpu if gpu is not None else NvmlSampler()
        self._finished = False
        self.run_dir = timeline_path.parent
        self.limits = limits
        self.last_gasp = last_gasp
        self._gasps: tuple[LastGaspRecord, ...] = ()

    @staticmethod
    def _safe(read: Any) -> Any:
        try:
            return read()
        except (OSError, ValueError):
            return None

    def run(self) -> None:
        """Loop until ``stop()``; one sample per interval, boundaries as soon as they appear."""
        # This thread's CPU clock: the loop paces itself by it, and whoever asks for the result
        # reads it from outside.
        self._cpu_clock = time.pthread_getcpuclockid(threading.get_ident())
        self._cpu_start = time.clock_gettime(self._cpu_clock)
        self.processes.start()
        try:
            self._timeline = self.timeline_path.open("a", encoding="utf-8")
        except OSError as exc:
            self._write_failed(self.timeline_path.name, exc)
            self._timeline = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115
        try:
            self._loop()
        finally:
            self._own_cpu()
            self._cpu_clock = None  # a thread's clock dies with it (its id may be reused)

    def _loop(self) -> None:
        assert self._timeline is not None and self._cpu_clock is not None
        self._sample(self._timeline)
        next_sample = time.monotonic() + self.interval_s
        pause, cpu = self.boundary_poll_s, time.clock_gettime(self._cpu_clock)
        # time.sleep, not Event.wait: a timed Event.wait costs about 1.5x the CPU per
        # wake-up (a lock acquire with timeout), and the monitor wakes 20 times a second.
        while True:
            time.sleep(pause)
            # What the last wake-up cost, its own wake included, sets the next pause: at most
            # ``cpu_share`` of a core on average (one clock read a wake-up, half a microsecond).
            before, cpu = cpu, time.clock_gettime(self._cpu_clock)
            pause = min(max(self.boundary_poll_s, (cpu - before) / self.cpu_share), MAX_PAUSE_S)
            # The work of one wake-up is done under a lock: stop() takes it over between two
            # wake-ups, without waiting for the sleep to end (it costs the kill-to-report).
            with self._work:
                if self._stop_event.is_set():
                    break
                self._handle_events()
                if time.monotonic() >= next_sample:
                    self._sample(self._timeline)
                    next_sample += self.interval_s
                    next_sample = max(next_sample, time.monotonic())

    def stop(self) -> MonitorResult:
        """Stop sampling and take the final readings straight from the sandbox.

        Called once every process of the run is gone (the sandbox is stopped, its counters
        still readable). The thread is waited for briefly, never for long: the final readings
        (events, the OOM counter, the watermark, refused forks) are taken here, in the caller.
        """
        self.processes.stop()
        self._stop_event.set()
        taken = self._work.acquire(timeout=STOP_JOIN_S)
        if not taken:
            self.problems.append(f"the monitor thread did not stop within {STOP_JOIN_S}s")
        try:
            return self._final()
        finally:
            if taken:
                self._work.release()

    def _final(self) -> MonitorResult:
        timeline = self._timeline
        if timeline is not None:
            self._handle_events()
            self._sample(timeline, full=True)
            self._close_segment()
            with contextlib.suppress(OSError):
                timeline.close()
        self.tail.close()
        if self.last_gasp is not None:
            self._gasps = tuple(self.last_gasp.close())
            self.problems.extend(self.last_gasp.problems)
        if self.limits is not None:  # read again at the end, the cgroups still there
            self.limits.check()
            self.limits.close()
        self._pids_refused = self._safe(self.probe.pids_refused)
        self._limit_hits = self._safe(self.probe.limit_hits)
        try:
            self.gpu.write_summary(self.run_dir)
        except OSError as exc:
            self._write_failed("the GPU summary", exc)
        self.probe.close()
        now_mono, now_wall = time.monotonic(), time.time()
        self.tracker.finish(now_mono, now_wall)
        return self.result()

    def result(self) -> MonitorResult:
        """Aggregates so far."""
        sampled = self._sampled_peak
        oom = None
        if self._oom_last is not None:
            oom = self._oom_last - (self._oom_start or 0)
        peak, source = self._peak_watermark, "kernel"
        if peak is None:
            peak, source = (sampled[0] if sampled else None), "samples"
        return MonitorResult(
            samples=self._samples,
            peak_bytes=peak,
            peak_source=source,
            sampled_peak_bytes=sampled[0] if sampled else None,
            sampled_peak_mono=sampled[1] if sampled else None,
            processes_at_peak=self._processes_at_peak,
            oom_kills=oom,
            phases=tuple(self.tracker.windows),
            phases_dropped=self.tracker.dropped,
            ack_timeouts=self._ack_timeouts,
            cpu_seconds=self._own_cpu() + self.processes.cpu_s,
            pids_refused=self._pids_refused,
            limit_hits=self._limit_hits,
            escapes=self.processes.escapes,
            problems=tuple(self.problems),
            write_error=self.write_error,
            limit_changes=tuple(self.limits.changes) if self.limits else (),
            limit_files=tuple(self.limits.files) if self.limits else (),
            last_gasp=self._gasps,
        )

    def _own_cpu(self) -> float:
        """CPU time of the sampling thread so far (the last reading once it has ended)."""
        clock = self._cpu_clock
        if clock is not None:
            with contextlib.suppress(OSError):
                self._cpu_seconds = time.clock_gettime(clock) - self._cpu_start
        return self._cpu_seconds

    def _handle_events(self) -> None:
        """The new events: phase boundaries and acknowledgement timeouts in order, and the
        test running now. Only their lines are decoded: a suite of short tests writes thousands
        of lines a second, and the monitor must stay near 1% of a core."""
        chunk = self.tail.read()
        if not chunk:
            return
        if any(marker in chunk for marker in _BOUNDARY_MARKERS):
            for line in chunk.split(b"\n"):
                if any(marker in line for marker in _BOUNDARY_MARKERS):
                    self._handle_event(contract.decode_line(line))
        self._track_test(chunk)

    def _handle_event(self, event: dict[str, Any] | None) -> None:
        kind = event.get("event") if event is not None else None
        if event is not None and kind in contract.BOUNDARY_EVENTS:
            self._close_segment()
            self.tracker.apply(event)
            self._ack(event.get("sync"))
        elif kind == contract.ACK_TIMEOUT:
            self._ack_timeouts += 1

    def _track_test(self, chunk: bytes) -> None:
        """The test running at the end of ``chunk``: that of its last test line, if a start."""
        end = len(chunk)
        while (at := chunk.rfind(_TEST_MARKER, 0, end)) >= 0:
            start = chunk.rfind(b"\n", 0, at) + 1
            stop = chunk.find(b"\n", at)
            event = contract.decode_line(chunk[start : stop if stop >= 0 else len(chunk)])
            if event is not None and event.get("event") == contract.TEST_PHASE:
                started = event.get("state") == contract.TEST_START
                self._current_test = event.get("nodeid") if started else None
                return
            end = start

    def _close_segment(self) -> None:
        """Read the watermark for the segment that ends now, charge it, reset it."""
        watermark = self._safe(self.probe.watermark_bytes) if self._resettable else None
        segment_peak = watermark if watermark is not None else self._segment_sampled_max
        if watermark is not None:
            self._peak_watermark = max(self._peak_watermark or 0, watermark)
        self.tracker.close_segment(segment_peak)
        if self._resettable and not self._safe(self.probe.reset_watermark):
            # Without a reset the watermark is monotonic and says nothing per segment; the
            # run-wide reading taken above stays valid.
            self._resettable = False
        usage = self._safe(self.probe.usage_bytes)
        self._segment_sampled_max = usage

    def _ack(self, token: Any) -> None:
        if not token:
            return
        try:
            append_regular(self.ack_path, f"{token}\n".encode("ascii"))
        except OSError as exc:
            self._write_failed(self.ack_path.name, exc)

    def _sample(self, timeline: IO[str], full: bool = False) -> None:
        if self.limits is not None:
            # Every sample: a test that raises its own cap must not get a window to use it.
            self.limits.check()
        mono, wall = time.monotonic(), time.time()
        usage = self._safe(self.probe.usage_bytes)
        if self.last_gasp is not None and not full:
            self.last_gasp.observe(usage)  # where no kernel threshold notifies it
        breakdown = self._safe(self.probe.memory_breakdown) or {}
        # The watermark, the OOM counter and the processes are read every ``process_every``
        # samples (and at every phase boundary and at the end): each read is a syscall, and the
        # monitor must stay near 1% of a core. Every watermark reading counts toward the run's
        # peak, not only those at boundaries.
        every_nth = full or self._samples % self.process_every == 0
        watermark = None
        if every_nth and self._resettable:
            watermark = self._safe(self.probe.watermark_bytes)
            if watermark is not None:
                self._peak_watermark = max(self._peak_watermark or 0, watermark)
        oom = self._safe(self.probe.oom_kills) if every_nth else None
        if oom is not None:
            self._oom_last = oom
        is_peak = usage is not None and (
            self._sampled_peak is None or usage > self._sampled_peak[0]
        )
        # While memory grows every sample is a new peak: processes are read on a peak only when
        # it is clearly higher (+2%) than the last one they were read at, so the monitor's cost
        # stays flat during a long climb.
        capture_peak = is_peak and usage is not None and usage > self._processes_peak * 1.02
        procs: tuple[tuple[int, str, int], ...] | None = None
        gpu: dict[str, Any] | None = None
        if every_nth or capture_peak:
            processes = self.processes.snapshot  # never waits: read by its own thread
            procs = tuple((p.pid, p.name, p.rss_bytes) for p in processes)
            if self.gpu.available:
                gpu = self.gpu.sample(set(self._safe(self.probe.pids) or []))
                self.tracker.charge_gpu(sum(device[3] for device in gpu.get("devices", [])))
            if capture_peak and usage is not None:
                self._processes_at_peak = processes
                self._processes_peak = usage
        if usage is not None:
            if is_peak:
                self._sampled_peak = (usage, mono)
            if self._segment_sampled_max is None or usage > self._segment_sampled_max:
                self._segment_sampled_max = usage
        line = sample_line(
            wall,
            mono,
            usage,
            watermark,
            breakdown.get("anon"),
            breakdown.get("file"),
            oom,
            self.tracker.open_names(),
            self._current_test,
            procs,
            gpu,
        )
        self._samples += 1
        if self.write_error is None:
            try:
                timeline.write(line)
                if self._samples % FLUSH_EVERY == 0:
                    # About once a second: a qualify killed outright loses at most that much.
                    timeline.flush()
            except OSError as exc:
                self._write_failed(self.timeline_path.name, exc)

    def _write_failed(self, name: str, exc: OSError) -> None:
        """A write of the monitor failed (the disk filled up): sampling goes on, unwritten."""
        self.write_error = self.write_error or f"{name}: {exc.strerror}"
