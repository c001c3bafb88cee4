"""Resource limits in exact units, and how the limits in effect are compared with those asked."""

from __future__ import annotations

from qualify import records
from qualify.records import frozen_record

# Kernels keep memory limits in pages: a limit written in bytes reads back rounded down.
PAGE_SIZE = 4096
DEFAULT_PIDS = 4096
"""The pids limit of a run (and of a profile) that names none."""


@frozen_record
class Limits:
    """Resource limits in exact units; None means unlimited (or not applicable)."""

    memory_bytes: int | None = None
    swap_bytes: int | None = None
    pids_max: int | None = None

    def as_dict(self) -> dict[str, int | None]:
        """Audit form."""
        return {
            "memory_bytes": self.memory_bytes,
            "swap_bytes": self.swap_bytes,
            "pids_max": self.pids_max,
        }


def expected_in_effect(requested: Limits) -> Limits:
    """What the kernel should report for ``requested``: memory rounded down to pages."""
    memory = requested.memory_bytes
    return records.replace(
        requested, memory_bytes=None if memory is None else memory // PAGE_SIZE * PAGE_SIZE
    )


def limit_mismatches(requested: Limits, in_effect: Limits) -> list[str]:
    """One line per limit that differs from what was asked (empty: the cap is real)."""
    expected = expected_in_effect(requested)
    problems = []
    for field in ("memory_bytes", "swap_bytes", "pids_max"):
        want, got = getattr(expected, field), getattr(in_effect, field)
        if want != got:
            problems.append(f"{field}: asked {want}, in effect {got}")
    return problems
