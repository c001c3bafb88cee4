"""Exact per-phase peaks from boundary events and watermark readings.

The window between two consecutive boundaries (any phase start or end, from any process) is a
segment; its peak is the kernel watermark read at the segment's end, after which the watermark
is reset. A phase's peak is the largest peak of the segments it was open in.
"""

from __future__ import annotations

from typing import Any

from harness import contract
from qualify import records

MAX_PHASES = 10_000


@records.record
class PhaseWindow:
    """One execution of a phase (phases may repeat and nest)."""

    name: str
    pid: int
    start_mono: float
    start_wall: float
    end_mono: float | None = None
    end_wall: float | None = None
    peak_bytes: int | None = None
    error: str | None = None
    """Exception type that left the phase, or "unfinished" when the process died inside it."""
    gpu_peak_bytes: int | None = None
    """Largest GPU memory of the run's processes sampled (NVML) while the phase was open."""

    def to_dict(self, origin_mono: float) -> dict[str, Any]:
        """Audit form, times relative to the run's start."""
        return {
            "name": self.name,
            "pid": self.pid,
            "start": round(self.start_mono - origin_mono, 4),
            "end": None if self.end_mono is None else round(self.end_mono - origin_mono, 4),
            "peak_bytes": self.peak_bytes,
            "gpu_peak_bytes": self.gpu_peak_bytes,
            "error": self.error,
        }


class PhaseTracker:
    """Open and closed phase windows, fed with boundary events in file order."""

    def __init__(self) -> None:
        self.windows: list[PhaseWindow] = []
        self.open: list[PhaseWindow] = []
        self.dropped = 0

    def open_names(self) -> list[str]:
        """Names of the phases open now, outermost first."""
        return [window.name for window in self.open]

    def close_segment(self, segment_peak: int | None) -> None:
        """Charge the peak of the segment that just ended to every open phase."""
        if segment_peak is None:
            return
        for window in self.open:
            if window.peak_bytes is None or segment_peak > window.peak_bytes:
                window.peak_bytes = segment_peak

    def charge_gpu(self, used_bytes: int) -> None:
        """Charge a GPU sample (bytes used by the run's processes) to every open phase."""
        for window in self.open:
            window.gpu_peak_bytes = max(window.gpu_peak_bytes or 0, used_bytes)

    def apply(self, event: dict[str, Any]) -> None:
        """Open or close a window for a phase_start / phase_end event."""
        name, pid = str(event.get("phase")), int(event.get("pid", 0))
        mono, wall = float(event.get("mono", 0.0)), float(event.get("t", 0.0))
        if event.get("event") == contract.PHASE_START:
            window = PhaseWindow(name, pid, mono, wall)
            self.open.append(window)
            if len(self.windows) < MAX_PHASES:
                self.windows.append(window)
            else:
                self.dropped += 1
            return
        for window in reversed(self.open):
            if window.name == name and window.pid == pid:
                window.end_mono, window.end_wall = mono, wall
                window.error = event.get("error")
                self.open.remove(window)
                return

    def finish(self, end_mono: float, end_wall: float) -> None:
        """Close the windows of processes that died inside a phase."""
        for window in self.open:
            window.end_mono, window.end_wall = end_mono, end_wall
            window.error = window.error or "unfinished"
        self.open.clear()
