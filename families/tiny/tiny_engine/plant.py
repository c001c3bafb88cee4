"""A planted tie-break (option ``plant_tie``): one position of one case where the reference's
own top-2 gap is made a near-tie, which the engine resolves the other way.

``plant_tie = "<case_id>:<position>"``: at that generated position the reference (in either
precision) sees its runner-up ``PLANT_NATS`` below its top-1 and the engine sees it
``PLANT_NATS`` above, so the engine flips exactly one token by a margin far inside bf16 noise;
every other position is untouched. Parity must call that noise and a single flip, not a defect.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

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
        planted = logits.clone()
        row = planted.reshape(-1)
        best, runner_up = torch.topk(row.float(), 2).indices.tolist()
        margin = PLANT_NATS if self.engine else -PLANT_NATS
        row[runner_up] = row[best].float() + margin
        return planted


def apply_rows(plant: Plant | None, case_id: str, rows: torch.Tensor) -> torch.Tensor:
    """``rows`` (``[position, vocab]``) with the tie planted in its row, if any."""
    if plant is None or case_id != plant.case_id or plant.position >= rows.shape[0]:
        return rows
    rows = rows.clone()
    rows[plant.position] = plant.apply(case_id, plant.position, rows[plant.position])
    return rows
