"""The repetitions of an A/B summarised per sweep level and arm, the way a design review reads
them: availability k of n with every verdict, peak memory with its spread, each metric's
spread, the difference of means, ``real`` only when the arms' ranges do not overlap, and
coupled metrics judged together (a gain in one half bought with the other is a trade)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from qualify.experiment.repetition import Repetition
from qualify.experiment.stats import (
    Spread,
    is_real,
    relative_difference,
    spread,
    too_few_to_call,
)
from qualify.records import frozen_record

PEAK = "peak_bytes"
"""The name the cgroup peak is compared under, beside the family's own metrics."""


def higher_is_better(name: str, unit: str) -> bool:
    """Throughputs (a rate: ``tokens/s``) improve upward; times and sizes improve downward."""
    return unit.endswith("/s") or name.endswith("_per_s")


@frozen_record
class ArmSummary:
    """One arm at one level."""

    arm: str
    verdicts: tuple[str, ...]
    """Every repetition's verdict, in the order they ran."""
    peak: Spread | None
    rss_at_peak: Spread | None
    phases: dict[str, Spread]
    metrics: dict[str, tuple[str, Spread]]
    """name -> (unit, spread of the runs' values)."""

    @property
    def passed(self) -> int:
        """How many repetitions passed."""
        return self.verdicts.count("PASSED")

    @property
    def availability(self) -> str:
        """``k/n``."""
        return f"{self.passed}/{len(self.verdicts)}"

    def to_dict(self) -> dict[str, Any]:
        """The JSON form."""
        return {
            "arm": self.arm,
            "availability": self.availability,
            "passed": self.passed,
            "runs": len(self.verdicts),
            "verdicts": list(self.verdicts),
            "peak_bytes": _spread(self.peak),
            "rss_at_peak_bytes": _spread(self.rss_at_peak),
            "phases": {name: s.to_dict() for name, s in self.phases.items()},
            "metrics": {n: {"unit": u, **s.to_dict()} for n, (u, s) in self.metrics.items()},
        }


def _spread(value: Spread | None) -> dict[str, Any] | None:
    return value.to_dict() if value is not None else None


@frozen_record
class Comparison:
    """One metric, arm a against arm b."""

    name: str
    unit: str
    a: Spread | None
    b: Spread | None
    relative: float | None
    """(mean b - mean a) / |mean a|."""
    real: bool
    """The ranges do not overlap, with enough runs that this is not chance
    (``qualify.experiment.stats.is_real``)."""
    better: str | None
    """The arm that is better, when the difference is real."""

    def to_dict(self) -> dict[str, Any]:
        """The JSON form."""
        return {
            "name": self.name,
            "unit": self.unit,
            "a": _spread(self.a),
            "b": _spread(self.b),
            "relative_difference": self.relative,
            "real": self.real,
            "better": self.better,
            "not_called": too_few_to_call(self.a, self.b),
        }


def compare(name: str, unit: str, a: Spread | None, b: Spread | None) -> Comparison:
    """a against b: the difference of means, real only when the ranges do not overlap."""
    real = is_real(a, b)
    better = None
    if real and a is not None and b is not None:
        b_higher = b.mean > a.mean
        better = "b" if b_higher == higher_is_better(name, unit) else "a"
    relative = relative_difference(a, b) if a is not None and b is not None else None
    return Comparison(name, unit, a, b, relative, real, better)


def judge_group(group: Sequence[Comparison]) -> str:
    """One line on a coupled group: a win only when no half is really worse."""
    names = [c.name for c in group]
    if any(c.a is None or c.b is None for c in group):
        missing = [c.name for c in group if c.a is None or c.b is None]
        return f"not comparable: {', '.join(missing)} not recorded by both arms"
    winners = {c.better for c in group if c.real}
    if not winners:
        uncalled = [why for c in group if (why := too_few_to_call(c.a, c.b))]
        if uncalled:
            return f"not called in {' or '.join(names)}: {uncalled[0]}"
        return f"no real difference in {' or '.join(names)}"
    if len(winners) > 1:
        gains = ", ".join(f"{c.name} better in {c.better}" for c in group if c.real)
        return f"trade, not a win: {gains}"
    winner = winners.pop()
    equal = [c.name for c in group if not c.real]
    tail = f" (no real difference in {', '.join(equal)})" if equal else ""
    return f"{winner} better in {', '.join(c.name for c in group if c.real)}{tail}"


@frozen_record
class LevelSummary:
    """Both arms at one sweep level and their comparisons."""

    label: str
    arms: dict[str, ArmSummary]
    comparisons: list[Comparison]
    """The peak first, then the metrics in name order (coupled ones inside their groups)."""
    groups: list[tuple[tuple[str, ...], str]]
    """Each coupled group present and its one-line judgement."""

    def to_dict(self) -> dict[str, Any]:
        """The JSON form."""
        return {
            "level": self.label,
            "arms": {name: arm.to_dict() for name, arm in self.arms.items()},
            "comparisons": [c.to_dict() for c in self.comparisons],
            "coupled": [{"metrics": list(g), "judgement": j} for g, j in self.groups],
        }


def _values(
    runs: Sequence[Repetition], read: Callable[[Repetition], float | int | None]
) -> list[float]:
    return [float(v) for v in (read(run) for run in runs) if v is not None]


def _phase_spread(runs: Sequence[Repetition], phase: str) -> Spread | None:
    return spread([float(run.phase_peaks[phase]) for run in runs if phase in run.phase_peaks])


def summarise_arm(arm: str, runs: Sequence[Repetition], metrics: Sequence[str]) -> ArmSummary:
    """One arm's repetitions (of one level)."""
    phases = sorted({name for run in runs for name in run.phase_peaks})
    units = {name: m.unit for run in runs for name, m in run.metrics.items()}
    summaries: dict[str, tuple[str, Spread]] = {}
    for name in metrics:
        found = spread([v for v in (run.metric_value(name) for run in runs) if v is not None])
        if found is not None:
            summaries[name] = (units.get(name, ""), found)
    return ArmSummary(
        arm=arm,
        verdicts=tuple(run.verdict for run in runs),
        peak=spread(_values(runs, lambda run: run.peak_bytes)),
        rss_at_peak=spread(_values(runs, lambda run: run.rss_at_peak_bytes)),
        phases={name: found for name in phases if (found := _phase_spread(runs, name))},
        metrics=summaries,
    )


def ordered_metrics(
    runs: Sequence[Repetition], asked: Sequence[str] | None, coupled: Sequence[Sequence[str]]
) -> list[str]:
    """The metrics to report: those asked (else every one recorded), each coupled group kept
    together at the place of its first member."""
    recorded = sorted({name for run in runs for name in run.metrics})
    names = list(asked) if asked is not None else recorded
    ordered: list[str] = []
    for name in names:
        group = next((g for g in coupled if name in g), (name,))
        ordered += [member for member in group if member not in ordered]
    return ordered


def summarise_level(
    label: str,
    runs: Sequence[Repetition],
    arms: Sequence[str],
    asked: Sequence[str] | None,
    coupled: Sequence[Sequence[str]],
) -> LevelSummary:
    """Both arms of one level, compared."""
    metrics = ordered_metrics(runs, asked, coupled)
    summaries = {
        arm: summarise_arm(arm, [run for run in runs if run.arm == arm], metrics) for arm in arms
    }
    first, second = (summaries[arm] for arm in arms[:2])
    comparisons = [compare(PEAK, "bytes", first.peak, second.peak)]
    for name in metrics:
        unit_a, spread_a = first.metrics.get(name, ("", None))
        unit_b, spread_b = second.metrics.get(name, ("", None))
        comparisons.append(compare(name, unit_a or unit_b, spread_a, spread_b))
    by_name = {c.name: c for c in comparisons}
    groups = [
        (tuple(group), judge_group([by_name[name] for name in group]))
        for group in coupled
        if all(name in by_name for name in group)
    ]
    return LevelSummary(label, summaries, comparisons, groups)
