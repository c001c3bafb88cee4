"""A one-line picture of memory usage against the cap over the run."""

from __future__ import annotations

from typing import Any

from qualify.triage.analysis import RunData

BARS = "▁▂▃▄▅▆▇█"
WIDTH = 60


def sparkline(run: RunData, cap_bytes: int | None, width: int = WIDTH) -> dict[str, Any] | None:
    """{"line", "scale_bytes", "peak_bytes", "seconds"}: each bar is the max of its bucket."""
    samples = run.samples
    if not samples:
        return None
    buckets = min(width, len(samples))
    maxima = [0] * buckets
    for index, sample in enumerate(samples):
        slot = index * buckets // len(samples)
        maxima[slot] = max(maxima[slot], sample.usage)
    peak = max(maxima)
    scale = cap_bytes or peak or 1
    bars = "".join(BARS[min(len(BARS) - 1, value * len(BARS) // (scale + 1))] for value in maxima)
    return {
        "line": bars,
        "scale_bytes": scale,
        "peak_bytes": peak,
        "seconds": round(samples[-1].mono - samples[0].mono, 3),
    }
