"""``[option_values]`` of family.toml: the values an option may take, checked before a run.

An option is either limited to a list of values (``size = ["ci", "full"]``) or, when it is a
number, to a range (``prompts = { min = 1, max = 10 }``, either bound optional). The family's
own default must satisfy its rule, and ``qualify run --set`` is checked against it before
anything is written, so a typo is a one-line usage error (exit 2) and never a capped run that
dies inside the E2E.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from qualify.errors import UsageError
from qualify.records import frozen_record

OptionValue = bool | int | float | str
_RANGE_KEYS = ("min", "max")


@frozen_record
class OptionRule:
    """What one option may be: one of ``values``, or a number within ``minimum``..``maximum``."""

    values: tuple[OptionValue, ...] | None = None
    """The allowed values (None: any value of the option's type within the range)."""
    minimum: float | None = None
    """Smallest allowed number (inclusive), None when unbounded."""
    maximum: float | None = None
    """Largest allowed number (inclusive), None when unbounded."""

    def problem(self, value: OptionValue) -> str | None:
        """Why ``value`` is not allowed (what would be valid), or None when it is."""
        if self.values is not None:
            if any(_same(value, allowed) for allowed in self.values):
                return None
            return "valid: " + ", ".join(_show(allowed) for allowed in self.values)
        if isinstance(value, bool) or not isinstance(value, int | float):
            return None
        if (self.minimum is not None and value < self.minimum) or (
            self.maximum is not None and value > self.maximum
        ):
            return "valid: " + self.describe_range()
        return None

    def describe_range(self) -> str:
        """``1 to 10``, ``at least 1`` or ``at most 10``."""
        low, high = _number(self.minimum), _number(self.maximum)
        if self.minimum is not None and self.maximum is not None:
            return f"{low} to {high}"
        return f"at least {low}" if self.minimum is not None else f"at most {high}"


def load_rules(
    table: Mapping[str, Any], defaults: Mapping[str, OptionValue], where: str
) -> dict[str, OptionRule]:
    """Read ``[option_values]``: each key an option, each rule checked against its default."""
    rules = {}
    for name, spec in table.items():
        if name not in defaults:
            valid = ", ".join(sorted(defaults)) or "none"
            raise UsageError(f"{where}: {name} is not an option of [options] (valid: {valid})")
        rule = _rule(name, spec, defaults[name], where)
        problem = rule.problem(defaults[name])
        if problem is not None:
            raise UsageError(
                f"{where}: the default {name} = {_show(defaults[name])} breaks its own rule "
                f"({problem})"
            )
        rules[name] = rule
    return rules


def check_value(name: str, value: OptionValue, rules: Mapping[str, OptionRule]) -> None:
    """Raise a one-line UsageError when ``--set name=value`` is outside the family's rule."""
    rule = rules.get(name)
    problem = None if rule is None else rule.problem(value)
    if problem is not None:
        raise UsageError(f"--set {name}={_show(value)} is not allowed for this family ({problem})")


def _rule(name: str, spec: Any, default: OptionValue, where: str) -> OptionRule:
    if isinstance(spec, list):
        if not spec or not all(_same_type(item, default) for item in spec):
            raise UsageError(
                f"{where}: {name} = {spec!r} must be a non-empty list of values typed like "
                f"the default {_show(default)}"
            )
        return OptionRule(values=tuple(spec))
    if isinstance(spec, dict):
        unknown = sorted(set(spec) - set(_RANGE_KEYS))
        numeric = isinstance(default, int | float) and not isinstance(default, bool)
        bounds = [spec.get(key) for key in _RANGE_KEYS]
        if unknown or not spec or not numeric or not all(_is_bound(b) for b in bounds):
            raise UsageError(
                f"{where}: {name} = {spec!r} is not a valid range (valid: {{ min = N, max = N }} "
                "on a numeric option, either bound optional)"
            )
        low, high = bounds
        if low is not None and high is not None and low > high:
            raise UsageError(f"{where}: {name}: min {low} is above max {high}")
        return OptionRule(minimum=low, maximum=high)
    raise UsageError(
        f"{where}: {name} = {spec!r} must be a list of allowed values or a table "
        "{ min = N, max = N }"
    )


def _is_bound(bound: Any) -> bool:
    if bound is None:
        return True
    return isinstance(bound, int | float) and not isinstance(bound, bool) and math.isfinite(bound)


def _same_type(item: Any, default: OptionValue) -> bool:
    if isinstance(default, bool) or isinstance(item, bool):
        return isinstance(item, bool) and isinstance(default, bool)
    if isinstance(default, float):
        return isinstance(item, int | float)
    return type(item) is type(default)


def _same(value: OptionValue, allowed: OptionValue) -> bool:
    return isinstance(value, bool) == isinstance(allowed, bool) and value == allowed


def _show(value: OptionValue) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    return _number(value) if isinstance(value, int | float) else str(value)


def _number(value: float | None) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)
