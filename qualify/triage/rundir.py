"""A qualify run directory read for triage: audit, harness events, timeline, attribution.

Retention: for each phase A and the next phase B that starts after A ends, the memory A added
(usage at A's end minus usage at its start) that is still there when B starts (usage at B's
start minus usage at A's start); the smaller of the two is what A left resident while B ran.
Usage comes from timeline.jsonl samples; windows come from the phase events (monotonic time,
the same clock as the samples) and their kernel-watermark peaks from audit.json.
"""

from __future__ import annotations

import bisect
import dataclasses
import json
from pathlib import Path
from typing import Any

from qualify.events import read_events
from qualify.phases import PhaseTracker, PhaseWindow

MAX_AUDIT_BYTES = 16 << 20
MAX_SAMPLES = 200_000
RETENTION_MIN_BYTES = 8 << 20
RETENTION_MIN_FRACTION = 0.02
KEPT_EVENTS = ("cuda_oom", "gpu_budget", "gpu_allocator", "gpu_hook_error", "session_finish")


@dataclasses.dataclass(frozen=True)
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


@dataclasses.dataclass
class RunData:
    """What triage reads from a run directory."""

    path: Path
    audit: dict[str, Any] | None = None
    problems: list[str] = dataclasses.field(default_factory=list)
    events: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    windows: list[PhaseWindow] = dataclasses.field(default_factory=list)
    samples: list[Sample] = dataclasses.field(default_factory=list)

    def get(self, *keys: str) -> Any:
        """audit[k1][k2]... or None when any level is missing or not a dict."""
        node: Any = self.audit
        for key in keys:
            if not isinstance(node, dict):
                return None
            node = node.get(key)
        return node


def read_run_dir(path: Path) -> RunData:
    """Read what exists; every missing or broken file is a problem line, never an exception."""
    data = RunData(path)
    data.audit = _read_audit(path / "audit.json", data.problems)
    tracker = PhaseTracker()
    last_mono = 0.0
    for event in read_events(path / "events.jsonl"):
        kind = event.get("event")
        try:
            if kind in ("phase_start", "phase_end"):
                tracker.apply(event)
            elif kind in KEPT_EVENTS:
                data.events.append(event)
            last_mono = max(last_mono, float(event.get("mono", 0.0)))
        except (TypeError, ValueError):
            continue
    data.samples = read_timeline(path / "timeline.jsonl")
    end = max(last_mono, data.samples[-1].mono if data.samples else 0.0)
    tracker.finish(end, 0.0)
    data.windows = tracker.windows
    if not (path / "events.jsonl").exists():
        data.problems.append("events.jsonl is missing (no phases, no harness events)")
    if not data.samples:
        data.problems.append("timeline.jsonl is missing or has no samples (no retention)")
    return data


def _read_audit(path: Path, problems: list[str]) -> dict[str, Any] | None:
    try:
        with path.open("rb") as handle:
            raw = handle.read(MAX_AUDIT_BYTES)
        audit = json.loads(raw)
    except FileNotFoundError:
        problems.append(f"{path.name} is missing")
        return None
    except (OSError, ValueError) as exc:
        problems.append(f"{path.name} is not valid JSON ({type(exc).__name__})")
        return None
    if not isinstance(audit, dict):
        problems.append(f"{path.name} is not a JSON object")
        return None
    return audit


def _sample(record: dict[str, Any]) -> Sample | None:
    usage, mono = record.get("usage"), record.get("mono")
    if not isinstance(usage, int) or not isinstance(mono, int | float):
        return None
    phases = record.get("phases")
    procs = record.get("procs")
    parsed = None
    if isinstance(procs, list):
        parsed = tuple(
            (int(p[0]), str(p[1]), int(p[2]))
            for p in procs
            if isinstance(p, list) and len(p) == 3 and isinstance(p[2], int)
        )
    names = tuple(str(n) for n in phases) if isinstance(phases, list) else ()
    anon = record.get("anon")
    return Sample(float(mono), usage, names, parsed, anon if isinstance(anon, int) else None)


def read_timeline(path: Path) -> list[Sample]:
    """Samples in time order (streamed; decimated beyond MAX_SAMPLES)."""
    samples: list[Sample] = []
    for record in read_events(path):
        sample = _sample(record)
        if sample is None:
            continue
        samples.append(sample)
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


@dataclasses.dataclass(frozen=True)
class Retention:
    """Memory a phase added and still held when the next phase started."""

    phase: str
    next_phase: str
    added_bytes: int
    retained_bytes: int

    def to_dict(self) -> dict[str, Any]:
        """JSON form."""
        return dataclasses.asdict(self)


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


def processes_at_peak(data: RunData) -> list[dict[str, Any]]:
    """The largest processes at the peak: the audit's record, else the nearest timeline one."""
    recorded = data.get("memory", "processes_at_peak")
    if isinstance(recorded, list) and recorded:
        return [p for p in recorded if isinstance(p, dict)]
    peak = peak_sample(data)
    if peak is None:
        return []
    with_procs = [s for s in data.samples if s.procs]
    if not with_procs:
        return []
    nearest = min(with_procs, key=lambda s: abs(s.mono - peak.mono))
    procs = sorted(nearest.procs or (), key=lambda p: p[2], reverse=True)
    return [{"pid": pid, "name": name, "rss_bytes": rss} for pid, name, rss in procs]


def phase_peaks(data: RunData) -> list[dict[str, Any]]:
    """name, peak_bytes (kernel watermark), error of each phase window, from the audit."""
    phases = data.get("memory", "phases")
    if not isinstance(phases, list):
        return []
    keys = ("name", "peak_bytes", "start", "end", "error")
    return [{k: p.get(k) for k in keys} for p in phases if isinstance(p, dict)]
