"""Host-side monitor thread: samples the sandbox, measures phase boundaries, writes the timeline.

It runs outside the capped cgroup, so it survives whatever kills the E2E. Its own memory stays
bounded however long the run is: samples go straight to the timeline file; only aggregates and
the processes at the highest sample are kept.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import threading
import time
from pathlib import Path
from typing import IO, Any

from harness import contract
from qualify.plan.nvml import NvmlSampler
from qualify.run.phases import PhaseTracker, PhaseWindow
from qualify.run.processes import Escape, ProcessReader, ProcessSample
from qualify.run.tail import JsonlTail
from qualify.run.timeline import TimelineSample
from qualify.sandbox.base import Probe

TOP_PROCESSES = 5
FLUSH_EVERY = 20
STOP_JOIN_S = 1.0


@dataclasses.dataclass(frozen=True)
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
    """CPU time of the monitor thread itself."""
    pids_refused: int | None = None
    """Forks the pids limit refused over the run (None: no pids controller)."""
    limit_hits: int | None = None
    """How often usage reached the cap (None: unknown); 0 with OOM kills: the host's OOM."""
    escapes: tuple[Escape, ...] = ()
    """Processes of the run found alive outside its confinement."""
    problems: tuple[str, ...] = ()
    write_error: str | None = None
    """The first write of the monitor that failed (the disk filled up), if one did."""


class Monitor(threading.Thread):
    """Samples every ``interval_s``; checks for phase boundaries every ``boundary_poll_s``."""

    def __init__(
        self,
        probe: Probe,
        events_path: Path,
        ack_path: Path,
        timeline_path: Path,
        interval_s: float = 0.05,
        boundary_poll_s: float = 0.05,
        process_every: int = 4,
        gpu: NvmlSampler | None = None,
        processes: ProcessReader | None = None,
    ):
        super().__init__(name="qualify-monitor", daemon=True)
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
        self._pids_refused: int | None = None
        self._limit_hits: int | None = None
        self._timeline: IO[str] | None = None
        self.write_error: str | None = None
        self.problems: list[str] = []
        self.processes = processes or ProcessReader(probe.pids)
        self.gpu = gpu if gpu is not None else NvmlSampler()
        self._finished = False
        self.run_dir = timeline_path.parent

    @staticmethod
    def _safe(read: Any) -> Any:
        try:
            return read()
        except (OSError, ValueError):
            return None

    def run(self) -> None:
        """Loop until ``stop()``; one sample per interval, boundaries as soon as they appear."""
        cpu_start = time.thread_time()
        self.processes.start()
        try:
            self._timeline = self.timeline_path.open("a", encoding="utf-8")
        except OSError as exc:
            self._write_failed(self.timeline_path.name, exc)
            self._timeline = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115
        self._sample(self._timeline)
        next_sample = time.monotonic() + self.interval_s
        # time.sleep, not Event.wait: a timed Event.wait costs about 1.5x the CPU per
        # wake-up (a lock acquire with timeout), and the monitor wakes 40 times a second.
        while True:
            time.sleep(self.boundary_poll_s)
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
                self._cpu_seconds = time.thread_time() - cpu_start

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
            cpu_seconds=self._cpu_seconds,
            pids_refused=self._pids_refused,
            limit_hits=self._limit_hits,
            escapes=self.processes.escapes,
            problems=tuple(self.problems),
            write_error=self.write_error,
        )

    def _handle_events(self) -> None:
        for event in self.tail.poll():
            kind = event.get("event")
            if kind in contract.BOUNDARY_EVENTS:
                self._close_segment()
                self.tracker.apply(event)
                self._ack(event.get("sync"))
            elif kind == contract.TEST_PHASE:
                self._current_test = event.get("nodeid") if event.get("state") == "start" else None
            elif kind == contract.ACK_TIMEOUT:
                self._ack_timeouts += 1

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
            with self.ack_path.open("a", encoding="ascii") as handle:
                handle.write(f"{token}\n")
        except OSError as exc:
            self._write_failed(self.ack_path.name, exc)

    def _sample(self, timeline: IO[str], full: bool = False) -> None:
        mono, wall = time.monotonic(), time.time()
        usage = self._safe(self.probe.usage_bytes)
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
        sample = TimelineSample(
            t=wall,
            mono=mono,
            usage=usage,
            watermark=watermark,
            anon=breakdown.get("anon"),
            file=breakdown.get("file"),
            oom_kill=oom,
            phases=tuple(self.tracker.open_names()),
            test=self._current_test,
            procs=procs,
            gpu=gpu,
        )
        self._samples += 1
        if self.write_error is None:
            try:
                timeline.write(sample.to_line())
                if self._samples % FLUSH_EVERY == 0:
                    # About once a second: a qualify killed outright loses at most that much.
                    timeline.flush()
            except OSError as exc:
                self._write_failed(self.timeline_path.name, exc)

    def _write_failed(self, name: str, exc: OSError) -> None:
        """A write of the monitor failed (the disk filled up): sampling goes on, unwritten."""
        self.write_error = self.write_error or f"{name}: {exc.strerror}"
