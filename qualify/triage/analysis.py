"""A qualify run directory read for triage: audit, harness events, timeline, attribution.

Retention: for each phase A and the next phase B that starts after A ends, the memory A added
(usage at A's end minus usage at its start) that is still there when B starts (usage at B's
start minus usage at A's start); the smaller of the two is what A left resident while B ran.
Usage comes from the timeline's samples; windows come from the phase events (monotonic time,
the same clock as the samples) and their kernel-watermark peaks from the audit.
"""

from __future__ import annotations

import bisect
from pathlib import Path
from typing import Any

from harness import contract
from qualify import records
from qualify.records import frozen_record
from qualify.run.last_gasp import allocation_point, phase_at
from qualify.run.phases import PhaseTracker, PhaseWindow
from qualify.rundir import Audit, RunDir
from qualify.rundir.audit import read_audit

MAX_SAMPLES = 200_000
RETENTION_MIN_BYTES = 8 << 20
RETENTION_MIN_FRACTION = 0.02
KEPT_EVENTS = (
    contract.CUDA_OOM,
    contract.GPU_BUDGET,
    contract.GPU_ALLOCATOR,
    contract.GPU_HOOK_ERROR,
    contract.SESSION_FINISH,
)


@frozen_record
class Sample:
    """One timeline sample."""

    mono: float
    usage: int
    phases: tuple[str, ...]
    procs: tuple[tuple[int, str, int], ...] | None
    anon: int | None = None
    """Anonymous memory (no page cache): what a phase allocated and may fail to release."""

    @property
    def resident(self) -> int:
        """anon when the sandbox reports it, else the whole charge."""
        return self.anon if self.anon is not None else self.usage


@records.record
class RunData:
    """What triage reads from a run directory."""

    path: Path
    audit: Audit | None = None
    problems: list[str] = records.field(default_factory=list)
    events: list[dict[str, Any]] = records.field(default_factory=list)
    windows: list[PhaseWindow] = records.field(default_factory=list)
    samples: list[Sample] = records.field(default_factory=list)


def read_run_dir(path: Path) -> RunData:
    """Read what exists; every missing or broken file is a problem line, never an exception.
    ``path`` may be a qualify audit alone (a run directory holding only it)."""
    alone = path.is_file()
    run_dir = RunDir(path.parent if alone else path)
    data = RunData(path)
    read = read_audit(path) if alone else run_dir.read_audit()
    data.audit = read.audit
    if read.audit is None:
        data.problems.extend(read.problems)
    elif read.problems:
        shown = "; ".join(read.problems[:3]) + ("; ..." if len(read.problems) > 3 else "")
        data.problems.append(f"the audit does not match qualify's audit schema: {shown}")
    if alone:
        return data
    tracker = PhaseTracker()
    last_mono = 0.0
    for event in run_dir.events():
        kind = event.get("event")
        try:
            if kind in contract.BOUNDARY_EVENTS:
                tracker.apply(event)
            elif kind in KEPT_EVENTS:
                data.events.append(event)
            last_mono = max(last_mono, float(event.get("mono", 0.0)))
        except (TypeError, ValueError):
            continue
    data.samples = read_samples(run_dir)
    end = max(last_mono, data.samples[-1].mono if data.samples else 0.0)
    tracker.finish(end, 0.0)
    data.windows = tracker.windows
    if not run_dir.events_path.exists():
        data.problems.append("the events file is missing (no phases, no harness events)")
    if not data.samples:
        data.problems.append("the timeline is missing or has no samples (no retention)")
    return data


def read_samples(run_dir: RunDir) -> list[Sample]:
    """Samples with a usage, in time order (decimated beyond MAX_SAMPLES)."""
    samples: list[Sample] = []
    for sample in run_dir.timeline():
        if sample.usage is None or sample.mono is None:
            continue
        samples.append(Sample(sample.mono, sample.usage, sample.phases, sample.procs, sample.anon))
        if len(samples) >= MAX_SAMPLES:
            samples = samples[::2]
    return samples


def usage_at(samples: list[Sample], mono: float, resident: bool = False) -> int | None:
    """Usage (or resident anon memory) of the last sample at or before ``mono`` (the first
    after, if none before)."""
    if not samples:
        return None
    times = [s.mono for s in samples]
    sample = samples[max(bisect.bisect_right(times, mono) - 1, 0)]
    return sample.resident if resident else sample.usage


@frozen_record
class Retention:
    """Memory a phase added and still held when the next phase started."""

    phase: str
    next_phase: str
    added_bytes: int
    retained_bytes: int

    def to_dict(self) -> dict[str, Any]:
        """JSON form."""
        return records.asdict(self)


def _contains(outer: PhaseWindow, inner: PhaseWindow) -> bool:
    end = outer.end_mono if outer.end_mono is not None else float("inf")
    return outer.start_mono <= inner.start_mono and inner.start_mono < end


def retentions(data: RunData, cap_bytes: int | None) -> list[Retention]:
    """Every phase that left memory resident into the phase after it, largest first."""
    windows = sorted(data.windows, key=lambda w: w.start_mono)
    samples = data.samples
    threshold = RETENTION_MIN_BYTES
    scale = cap_bytes or max((s.usage for s in samples), default=0)
    threshold = max(threshold, int(scale * RETENTION_MIN_FRACTION))
    found = []
    for index, phase in enumerate(windows):
        if phase.end_mono is None or phase.error == "unfinished":
            continue
        later = [
            w
            for w in windows[index + 1 :]
            if w.start_mono >= phase.end_mono and not _contains(w, phase)
        ]
        if not later:
            continue
        after = later[0]
        # Anonymous memory, not the page cache a staged plan leaves behind (the kernel reclaims
        # that under pressure; it is not what a phase holds on to).
        start = usage_at(samples, phase.start_mono, resident=True)
        end = usage_at(samples, phase.end_mono, resident=True)
        next_start = usage_at(samples, after.start_mono, resident=True)
        if start is None or end is None or next_start is None:
            continue
        retained = min(end - start, next_start - start)
        if retained >= threshold:
            found.append(Retention(phase.name, after.name, end - start, retained))
    return sorted(found, key=lambda r: r.retained_bytes, reverse=True)


def peak_sample(data: RunData) -> Sample | None:
    """The sample with the highest usage."""
    return max(data.samples, key=lambda s: s.usage, default=None)


def allocation_site(data: RunData) -> dict[str, Any] | None:
    """Where the run was allocating as it neared its cap (``qualify.run.last_gasp``), with
    the phase open then; None without a capture that has a stack."""
    captures = data.audit.memory.last_gasp if data.audit else []
    found = allocation_point(captures)
    started = data.audit.timings.started_mono if data.audit else None
    if found is not None and started is not None:
        found["phase"] = phase_at(data.windows, started + found["at_s"])
    return found


def processes_at_peak(data: RunData) -> list[dict[str, Any]]:
    """The largest processes at the peak: those read at the last last-gasp capture (at the
    cap), else the audit's record, else the nearest timeline one."""
    captures = data.audit.memory.last_gasp if data.audit else []
    if captures and captures[-1].processes:
        processes = sorted(captures[-1].processes, key=lambda p: p.rss_bytes, reverse=True)
        return [
            {
                "pid": p.pid,
                "name": p.name,
                "rss_bytes": p.rss_bytes,
                "cmdline": p.cmdline,
                "read": "at the cap",
            }
            for p in processes
        ]
    recorded = data.audit.memory.processes_at_peak if data.audit else []
    if recorded:
        return [records.asdict(process) for process in recorded]
    peak = peak_sample(data)
    if peak is None:
        return []
    with_procs = [s for s in data.samples if s.procs]
    if not with_procs:
        return []
    nearest = min(with_procs, key=lambda s: abs(s.mono - peak.mono))
    procs = sorted(nearest.procs or (), key=lambda p: p[2], reverse=True)
    return [{"pid": pid, "name": name, "rss_bytes": rss} for pid, name, rss in procs]


def running_test_of(data: RunData, pid: int, mono: float) -> tuple[str, str] | None:
    """(nodeid, phase) of the test whose phase process ``pid`` had started and not ended at
    ``mono``: the plugin's start lines carry the pid of the process that runs the test (a
    pytest-xdist worker, pytest-forked's child); an end line may come from another (the
    parent that reports the child's crash). None when it ran no test then."""
    last: dict[str, Any] | None = None
    for event in RunDir(data.path).events(containing=b'"test_phase"'):
        try:
            at = float(event.get("mono"))  # type: ignore[arg-type]
        except (TypeError, ValueError):
            continue
        if at > mono:
            continue  # (lines of several processes are not quite in time order)
        if event.get("state") == contract.TEST_START and event.get("pid") == pid:
            last = event
        elif (
            last is not None
            and event.get("state") == contract.TEST_END
            and event.get("nodeid") == last.get("nodeid")
            and at >= float(last["mono"])
        ):
            last = None  # it ended before the moment
    if last is None:
        return None
    return str(last.get("nodeid")), str(last.get("when"))


def phase_peaks(data: RunData) -> list[dict[str, Any]]:
    """name, peak_bytes (kernel watermark), start, end, error of each phase, from the audit."""
    if data.audit is None:
        return []
    return [
        {
            "name": phase.name,
            "peak_bytes": phase.peak_bytes,
            "start": phase.start,
            "end": phase.end,
            "error": phase.error,
        }
        for phase in data.audit.memory.phases
    ]
