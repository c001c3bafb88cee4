"""An A/B experiment as asked: two arms of family options, n runs each, the order, the sweep.

Everything is validated here, before any run: an arm may name family options only (the cap,
the image, the commit and the environment are pinned, never an arm's to change), the two arms
must really differ, and a coupled metric is asked for with its other halves or not at all.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence

from qualify import records
from qualify.errors import UsageError
from qualify.plan.families import Family, OptionValue
from qualify.plan.spec import merge_options
from qualify.records import frozen_record
from qualify.sizes import parse_size

ARMS = ("a", "b")
ORDERS = ("interleaved", "random")
MEM = "mem"
"""The sweep key that varies the cap itself."""


@frozen_record
class Level:
    """One sweep level: the cap (``--mem``) or a family option given to both arms."""

    label: str
    """"" without a sweep; ``850M`` or ``NAME=VALUE`` otherwise."""
    mem: str | None = None
    sets: Mapping[str, str] = records.field(default_factory=dict)


@frozen_record
class Slot:
    """One run to make: which level, which arm, its repetition number within the arm."""

    level: int
    arm: str
    repetition: int


@frozen_record
class AbPlan:
    """The validated experiment."""

    family: Family
    arms: Mapping[str, Mapping[str, str]]
    """Each arm's options as given (``--a``, ``--b``)."""
    resolved: Mapping[str, Mapping[str, OptionValue]]
    """Each arm's full options, defaults included (what the runs will see)."""
    common: Mapping[str, str]
    """``--set``: options given to both arms."""
    levels: tuple[Level, ...]
    n: int
    order: str
    seed: int
    metrics: tuple[str, ...] | None
    """The metrics asked for (None: every metric the runs record)."""
    commits: Mapping[str, str] | None = None
    """``--commits``: each arm's commit (the arms' options are then the same)."""

    @property
    def varied(self) -> tuple[str, ...]:
        """The option names allowed to differ between repetitions (the arms' and the sweep's)."""
        names = {name for arm in self.arms.values() for name in arm}
        names |= {name for level in self.levels for name in level.sets}
        return tuple(sorted(names))

    @property
    def differing(self) -> tuple[str, ...]:
        """The options whose values differ between the arms: the difference under test."""
        first, second = (self.resolved[arm] for arm in ARMS)
        return tuple(name for name in first if first[name] != second.get(name))

    def schedule(self) -> list[Slot]:
        """The order of the 2 x n runs of each level. Interleaved alternates which arm goes
        first in each pair (a b, b a, a b, ...): a drift over time then hits both arms alike,
        and neither arm always runs right after the other. Random shuffles with ``seed``."""
        slots: list[Slot] = []
        for level in range(len(self.levels)):
            if self.order == "random":
                chosen = [Slot(level, arm, i) for arm in ARMS for i in range(self.n)]
                random.Random(f"{self.seed}:{level}").shuffle(chosen)
                slots += chosen
                continue
            for i in range(self.n):
                pair = ARMS if i % 2 == 0 else ARMS[::-1]
                slots += [Slot(level, arm, i) for arm in pair]
        return slots


def parse_sets(items: Sequence[str]) -> dict[str, str]:
    """``--set NAME=VALUE`` (repeatable): options given to every run."""
    sets = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise UsageError(f"--set {item!r} is not valid: expected NAME=VALUE")
        sets[name.strip()] = value.strip()
    return sets


def parse_arm(text: str, flag: str, family: Family) -> dict[str, str]:
    """``NAME=VALUE[,NAME=VALUE...]`` of family options; anything else is refused."""
    options: dict[str, str] = {}
    for item in (part.strip() for part in text.split(",")):
        name, sep, value = item.partition("=")
        name = name.strip()
        if not sep or not name:
            raise UsageError(f"{flag} {text!r} is not valid: expected NAME=VALUE[,NAME=VALUE...]")
        if name not in family.options:
            valid = ", ".join(sorted(family.options)) or "none"
            raise UsageError(
                f"{flag} {name}: not an option of family {family.name}; the arms may differ "
                f"only in family options (valid: {valid}); the cap, image, commit and "
                "environment are pinned (vary the cap for both arms with --sweep mem=...)"
            )
        if name in options:
            raise UsageError(f"{flag} {text!r} is not valid: {name} is given twice")
        options[name] = value.strip()
    return options


def parse_sweep(text: str | None, mem: str | None, family: Family) -> tuple[Level, ...]:
    """``mem=800M,850M`` or ``NAME=V1,V2``: the levels, each run with both arms."""
    if text is None:
        return (Level("", mem),)
    key, sep, values = text.partition("=")
    key = key.strip()
    items = [value.strip() for value in values.split(",") if value.strip()]
    if not sep or not items:
        raise UsageError(f"--sweep {text!r} is not valid: expected mem=SIZE,SIZE,... or NAME=V,V")
    if len(set(items)) != len(items):
        raise UsageError(f"--sweep {text!r} is not valid: a level is given twice")
    if key == MEM:
        if mem is not None:
            raise UsageError(f"--sweep {text!r} and --mem {mem!r} both set the cap: give one")
        for item in items:
            parse_size(item, what="--sweep mem")
        return tuple(Level(item, item) for item in items)
    if key not in family.options:
        valid = ", ".join([MEM, *sorted(family.options)])
        raise UsageError(f"--sweep {key}: not a cap or an option of {family.name} (valid: {valid})")
    return tuple(Level(f"{key}={item}", mem, {key: item}) for item in items)


def check_metrics(asked: Sequence[str] | None, coupled: Sequence[Sequence[str]]) -> None:
    """Refuse half of a coupled group: its halves are quoted together or not at all."""
    if asked is None:
        return
    for group in coupled:
        present = [name for name in group if name in asked]
        if present and len(present) < len(group):
            missing = [name for name in group if name not in asked]
            raise UsageError(
                f"--metrics {','.join(asked)}: {', '.join(present)} is coupled with "
                f"{', '.join(missing)} in family.toml [ab] and is reported only together "
                f"(valid: --metrics {','.join(dict.fromkeys([*asked, *missing]))})"
            )


def build_plan(
    *,
    family: Family,
    arm_a: str,
    arm_b: str,
    sets: Mapping[str, str],
    n: int,
    mem: str | None,
    sweep: str | None,
    order: str,
    seed: int | None,
    metrics: Sequence[str] | None,
    commits: Mapping[str, str] | None = None,
) -> AbPlan:
    """Validate the experiment; UsageError (exit 2) names the first problem. With
    ``commits`` (arm -> commit) the arms differ by commit, and their options are both empty."""
    if n < 1:
        raise UsageError(f"--n {n} is not valid (valid: a whole number >= 1)")
    if order not in ORDERS:
        raise UsageError(f"--order {order!r} is not valid (valid: {', '.join(ORDERS)})")
    if mem is not None:
        parse_size(mem, what="--mem")
    if commits is not None:
        arms: dict[str, dict[str, str]] = {"a": {}, "b": {}}
    else:
        arms = {"a": parse_arm(arm_a, "--a", family), "b": parse_arm(arm_b, "--b", family)}
    for name in sets:
        if any(name in arm for arm in arms.values()):
            raise UsageError(f"--set {name}: also named by an arm (give it in --a and --b only)")
    levels = parse_sweep(sweep, mem, family)
    for level in levels:
        clash = [
            name for name in level.sets if name in sets or any(name in a for a in arms.values())
        ]
        if clash:
            raise UsageError(f"--sweep {clash[0]}: also set by --set or an arm (give it once)")
    resolved = {arm: merge_options(family, {**sets, **given}) for arm, given in arms.items()}
    plan = AbPlan(
        family=family,
        arms=arms,
        resolved=resolved,
        common=dict(sets),
        levels=levels,
        n=n,
        order=order,
        seed=seed if seed is not None else random.SystemRandom().randrange(2**31),
        metrics=tuple(metrics) if metrics is not None else None,
        commits=dict(commits) if commits is not None else None,
    )
    if commits is None and not plan.differing:
        shown = ", ".join(
            f"{k}={v!r}" for k, v in sorted(resolved["a"].items()) if k in plan.varied
        )
        raise UsageError(
            f"--a and --b resolve to the same options ({shown}): an A/B needs one difference"
        )
    check_metrics(plan.metrics, family.coupled)
    return plan
