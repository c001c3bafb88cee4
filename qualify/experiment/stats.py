"""Spread of a handful of repetitions, and when two arms really differ."""

from __future__ import annotations

import dataclasses
import statistics
from collections.abc import Sequence
from typing import Any


@dataclasses.dataclass(frozen=True)
class Spread:
    """A sample of repetitions: its size and how it is spread."""

    count: int
    minimum: float
    median: float
    maximum: float
    mean: float
    stdev: float
    """Sample standard deviation (n - 1); 0.0 for a single repetition."""

    @property
    def constant(self) -> bool:
        """True when every repetition gave the same value (a finding when count > 1)."""
        return self.count > 1 and self.minimum == self.maximum

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (``min``/``max`` as a reader expects them)."""
        return {
            "count": self.count,
            "min": self.minimum,
            "median": self.median,
            "max": self.maximum,
            "mean": self.mean,
            "stdev": self.stdev,
        }

    @classmethod
    def from_dict(cls, document: dict[str, Any]) -> Spread:
        """Read back what ``to_dict`` wrote."""
        return cls(
            int(document["count"]),
            float(document["min"]),
            float(document["median"]),
            float(document["max"]),
            float(document["mean"]),
            float(document["stdev"]),
        )


def spread(values: Sequence[float]) -> Spread | None:
    """The spread of ``values``; None when there are none."""
    if not values:
        return None
    return Spread(
        count=len(values),
        minimum=min(values),
        median=statistics.median(values),
        maximum=max(values),
        mean=statistics.fmean(values),
        stdev=statistics.stdev(values) if len(values) > 1 else 0.0,
    )


def ranges_overlap(first: Spread, second: Spread) -> bool:
    """True when the [min, max] ranges of the two samples share a point."""
    return first.minimum <= second.maximum and second.minimum <= first.maximum


def relative_difference(baseline: Spread, other: Spread) -> float | None:
    """(mean of ``other`` - mean of ``baseline``) / |mean of ``baseline``|; None for a zero
    baseline."""
    if baseline.mean == 0:
        return None
    return (other.mean - baseline.mean) / abs(baseline.mean)


def is_real(first: Spread | None, second: Spread | None) -> bool:
    """A difference is called real only when both arms have values and their ranges do not
    overlap: with a few repetitions per arm, anything less is within the noise we saw."""
    return first is not None and second is not None and not ranges_overlap(first, second)
