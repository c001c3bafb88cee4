"""A planted tie-break (option ``plant_tie``): one position of one case where the reference's
own top-2 gap is made a near-tie, which the engine resolves the other way.

``plant_tie = "<case_id>:<position>"``: at that generated position the reference (in either
precision) sees its runner-up ``PLANT_NATS`` below its top-1 and the engine sees it
``PLANT_NATS`` above, so the engine flips exactly one token by a margin far inside bf16 noise;
every other position is untouched. Parity must call that noise and a single flip, not a defect.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from harness.kit.generation import Generation
from harness.kit.native import Case, PlanRuntime

PLANT_NATS = 1e-3
"""The planted margin: well above float32 rounding, well inside bf16 logit noise."""


@dataclass(frozen=True)
class Plant:
    """Where the tie is planted and on which side of it this runtime falls."""

    case_id: str
    position: int
    engine: bool
    """True for the engine (the runner-up wins), False for the reference."""

    @classmethod
    def parse(cls, value: str, *, engine: bool) -> Plant | None:
        """``"<case_id>:<position>"`` as a Plant; None for ``""`` (no plant)."""
        if not value:
            return None
        case_id, _, position = value.rpartition(":")
        if not case_id or not position.isdigit():
            raise ValueError(f"plant_tie={value!r} must be '<case_id>:<position>'")
        return cls(case_id, int(position), engine)

    def apply(self, case_id: str, position: int, logits: torch.Tensor) -> torch.Tensor:
        """``logits`` (one position's) with the tie planted when this is the planted spot."""
        if case_id != self.case_id or position != self.position:
            return logits
        # In float32: a bf16 logit near 16 moves in steps of 0.06, which would round the
        # planted margin away and leave an exact tie.
        planted = logits.float().clone()
        row = planted.reshape(-1)
        best, runner_up = torch.topk(row, 2).indices.tolist()
        margin = PLANT_NATS if self.engine else -PLANT_NATS
        row[runner_up] = row[best] + margin
        return planted


def apply_rows(plant: Plant | None, case_id: str, rows: torch.Tensor) -> torch.Tensor:
    """``rows`` (``[position, vocab]``) with the tie planted in its row, if any."""
    if plant is None or case_id != plant.case_id or plant.position >= rows.shape[0]:
        return rows
    rows = rows.float().clone()
    rows[plant.position] = plant.apply(case_id, plant.position, rows[plant.position])
    return rows


def decode_planted(
    runtime: PlanRuntime,
    plant: Plant | None,
    case: Case,
    prefilled: tuple[Any, ...],
    new_tokens: int,
    started: float | None = None,
) -> Generation:
    """``runtime.decode_greedily`` with the plant applied to the logits at each position
    (the prefill's and each decode step's); the plain decode when nothing is planted here."""
    if plant is None or plant.case_id != case.case_id:
        return runtime.decode_greedily(case, prefilled, new_tokens, started)
    decode = runtime.plans["decode"]
    logits, *cache = prefilled
    position = 0

    def planted_decode(*args: torch.Tensor) -> tuple[torch.Tensor, ...]:
        nonlocal position
        position += 1
        step_logits, *step_cache = decode(*args)
        return (plant.apply(case.case_id, position, step_logits), *step_cache)

    runtime.plans["decode"] = planted_decode
    try:
        first = plant.apply(case.case_id, 0, logits)
        return runtime.decode_greedily(case, (first, *cache), new_tokens, started)
    finally:
        runtime.plans["decode"] = decode
