"""Spread of a handful of repetitions, and when two arms really differ."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from typing import Any

from qualify.records import frozen_record


@frozen_record
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


REAL_CHANCE = 0.01
"""A difference is called real only when ranges this far apart would come by chance less
often than this, for two arms with no difference at all."""


def chance_apart(first: int, second: int) -> float:
    """The probability that the ranges of two samples of ``first`` and ``second`` values drawn
    from one continuous distribution do not overlap: all of one below all of the other, one
    ordering of the pooled values out of C(first + second, first), either way round. n = 2 per
    arm: 1 in 3; n = 3: 1 in 10; n = 5: 1 in 126."""
    if first < 1 or second < 1:
        return 1.0
    return min(1.0, 2 / math.comb(first + second, first))


def is_real(first: Spread | None, second: Spread | None) -> bool:
    """A difference is called real only when both arms have values, their ranges do not
    overlap, and ranges that far apart would come by chance less than 1% of the time
    (:func:`chance_apart`: from 5 repetitions per arm)."""
    if first is None or second is None or ranges_overlap(first, second):
        return False
    return chance_apart(first.count, second.count) < REAL_CHANCE


def too_few_to_call(first: Spread | None, second: Spread | None) -> str | None:
    """Why non-overlapping ranges are not called real (too few repetitions), or None."""
    if first is None or second is None or ranges_overlap(first, second):
        return None
    chance = chance_apart(first.count, second.count)
    if chance < REAL_CHANCE:
        return None
    return (
        f"ranges apart, but with n={first.count} and n={second.count} they are apart by chance "
        f"1 time in {round(1 / chance)}: not called real below a 1% chance (5 runs per arm)"
    )
