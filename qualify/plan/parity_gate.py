"""The corpus gate: how many recorded cases must match for parity to pass.

Its fields are the keys a family.toml ``[parity]`` table may hold; the CLI flags of
``qualify compare`` set the same fields.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from qualify import records
from qualify.errors import UsageError
from qualify.records import frozen_record


class ParityConfigError(UsageError, ValueError):
    """A bad ``[parity]`` table or gate setting: one line naming the key and what is valid."""


@frozen_record
class ParityGate:
    """The corpus gate over the reference's recorded cases."""

    min_exact: int | None = None
    """Acceptable cases needed to pass; None requires every reference case."""
    near_tie_nats: float = 0.5
    """A divergence whose reference gap is below this many nats is NEAR_TIE, not WRONG."""
    count_near_ties: bool = False
    """When true, TIE and NEAR_TIE cases count as acceptable toward ``min_exact``."""
    tie_nats: float = 1e-4
    """A gap at or below this many nats is float rounding: TIE."""

    def __post_init__(self) -> None:
        if self.min_exact is not None and self.min_exact < 0:
            raise ParityConfigError(f"min_exact = {self.min_exact} must not be negative")
        for key in ("near_tie_nats", "tie_nats"):
            value = getattr(self, key)
            if not math.isfinite(value) or value < 0:
                raise ParityConfigError(f"{key} = {value!r} must be a finite number >= 0")
        if self.tie_nats > self.near_tie_nats:
            raise ParityConfigError(
                f"tie_nats = {self.tie_nats!r} must not exceed near_tie_nats = "
                f"{self.near_tie_nats!r}"
            )

    @classmethod
    def from_table(cls, table: Mapping[str, object]) -> ParityGate:
        """Build the gate from a ``[parity]`` table; unknown keys and bad types are errors."""
        valid = [field.name for field in records.fields(cls)]
        for key in table:
            if key not in valid:
                raise ParityConfigError(f"unknown key {key!r} (valid keys: {', '.join(valid)})")
        defaults = cls()
        return cls(
            min_exact=_optional_int(table, "min_exact"),
            near_tie_nats=_number(table, "near_tie_nats", defaults.near_tie_nats),
            count_near_ties=_flag(table, "count_near_ties", defaults.count_near_ties),
            tie_nats=_number(table, "tie_nats", defaults.tie_nats),
        )

    def to_dict(self) -> dict[str, object]:
        """The gate as the audit stores it: exactly the ``[parity]`` keys."""
        return records.asdict(self)


def _optional_int(table: Mapping[str, object], key: str) -> int | None:
    value = table.get(key)
    # bool is an int subclass in Python; "min_exact = true" is a typo, not 1.
    if value is None or (isinstance(value, int) and not isinstance(value, bool)):
        return value
    raise ParityConfigError(f"{key} = {value!r} must be an integer")


def _number(table: Mapping[str, object], key: str, default: float) -> float:
    value = table.get(key, default)
    # TOML writes "near_tie_nats = 1" as an integer; accept it as a number of nats.
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    raise ParityConfigError(f"{key} = {value!r} must be a number (nats)")


def _flag(table: Mapping[str, object], key: str, default: bool) -> bool:
    value = table.get(key, default)
    if isinstance(value, bool):
        return value
    raise ParityConfigError(f"{key} = {value!r} must be true or false")
