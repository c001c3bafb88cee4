"""The smallest cap at which a family passes, found by bisection over real runs.

The search needs a passing cap above and a failing one below: ``hi`` is probed first (a
failure there that is not a resource death - tests that fail at every cap - ends the search
with that verdict), then ``lo``. Each probe halves the interval until it is within the asked
resolution; the two caps at the boundary are then run again (``repeat`` times in all) so that
a flaky boundary shows as such, and the reported caps are those whose every run agreed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from qualify.experiment.repetition import Repetition
from qualify.records import frozen_record
from qualify.verdict import Verdict

MIB = 1 << 20


@frozen_record
class Resolution:
    """How close the two boundary caps must be: a fraction of the passing cap, or bytes."""

    fraction: float | None = None
    bytes: int | None = None

    def tolerance(self, passing: int) -> int:
        """The largest gap, in bytes, at which the search stops."""
        if self.fraction is not None:
            return int(passing * self.fraction)
        return self.bytes or 0


@frozen_record
class Search:
    """The probes made and what they show."""

    probes: list[Repetition]
    smallest_passing: int | None
    """The smallest cap whose every run passed."""
    largest_failing: int | None
    """The largest cap below it whose every run died of a resource."""
    flaky: list[int]
    """Caps whose runs disagreed."""
    stopped: str | None
    """Why the search ended without a boundary (the verdict that stopped it)."""

    def to_dict(self) -> dict[str, Any]:
        """The JSON form."""
        return {
            "smallest_passing_bytes": self.smallest_passing,
            "largest_failing_bytes": self.largest_failing,
            "flaky_bytes": self.flaky,
            "stopped": self.stopped,
            "probes": [probe.to_dict() for probe in self.probes],
        }


Probe = Callable[[int], Repetition]


def _resource_death(run: Repetition) -> bool:
    try:
        return Verdict(run.verdict).is_resource
    except ValueError:
        return False


def _stop(run: Repetition, cap: str) -> str | None:
    """Why a probe ends the search: the toolkit failed, or a failure that is not memory."""
    if run.passed or _resource_death(run):
        return None
    if run.verdict == Verdict.ERROR.value:
        return f"ERROR at {cap}: {run.reason}"
    if cap == "--hi":
        return f"{run.verdict} at --hi, not a resource death: {run.reason}"
    return None  # a test failing only under a tight cap (a MemoryError) is a failing cap


def _verdicts(probes: list[Repetition]) -> dict[int, list[bool]]:
    by_cap: dict[int, list[bool]] = {}
    for probe in probes:
        if probe.limit_bytes is not None:
            by_cap.setdefault(probe.limit_bytes, []).append(probe.passed)
    return by_cap


def _conclude(probes: list[Repetition], stopped: str | None) -> Search:
    by_cap = _verdicts(probes)
    flaky = sorted(cap for cap, results in by_cap.items() if len(set(results)) > 1)
    passing = [cap for cap, results in by_cap.items() if all(results)]
    smallest = min(passing) if passing else None
    failing = [
        cap
        for cap, results in by_cap.items()
        if not any(results) and (smallest is None or cap < smallest)
    ]
    return Search(probes, smallest, max(failing) if failing else None, flaky, stopped)


def bisect(lo: int, hi: int, resolution: Resolution, repeat: int, probe: Probe) -> Search:
    """Search [lo, hi] with real runs (``probe(cap)``); caps are whole MiB."""
    probes = [probe(hi)]
    stopped = _stop(probes[0], "--hi")
    if stopped or not probes[0].passed:
        return _conclude(probes, stopped or f"{probes[0].verdict} at --hi: no passing cap")
    probes.append(probe(lo))
    if probes[-1].passed:
        return _conclude(probes, "passes at --lo: the boundary is below it")
    if stopped := _stop(probes[-1], "--lo"):
        return _conclude(probes, stopped)
    passing, failing = hi, lo
    while passing - failing > max(resolution.tolerance(passing), MIB):
        middle = (passing + failing) // 2 // MIB * MIB
        if middle in (passing, failing):
            break
        probes.append(probe(middle))
        if stopped := _stop(probes[-1], "a probe"):
            return _conclude(probes, stopped)
        if probes[-1].passed:
            passing = middle
        else:
            failing = middle
    for cap in (passing, failing):
        for _ in range(repeat - 1):
            probes.append(probe(cap))
            if stopped := _stop(probes[-1], "a probe"):
                return _conclude(probes, stopped)
    return _conclude(probes, None)
