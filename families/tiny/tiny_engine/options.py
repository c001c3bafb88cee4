"""The family's options (``[options]`` of family.toml), read through ``harness.option``."""

from __future__ import annotations

from dataclasses import dataclass

from harness.kit.options import E2EOptions
from tiny_engine import prompts, sizes
from tiny_engine.plant import Plant


@dataclass(frozen=True)
class FamilyOptions(E2EOptions):
    """``retain_plans``, ``prompts`` and ``new_tokens`` (the kit's), and the family's own."""

    size: str = "tiny"
    """Model size: ``tiny`` (plans of ~11 MB each), ``small`` (~204 MB) or ``medium`` (~397 MB)."""
    perturb_native: float = 0.0
    """Std of Gaussian noise added to the plan weights (0.01 reliably fails the parity gate)."""
    plant_tie: str = ""
    """``<case_id>:<position>``: a planted one-position tie-break (``tiny_engine.plant``)."""

    def max_prompts(self) -> int:
        """The prompts of the embedded corpus."""
        return prompts.max_prompts()

    def validate(self) -> None:
        """Reject values the family cannot run with, naming the option and the valid range."""
        sizes.size_spec(self.size)
        super().validate()
        if self.perturb_native < 0:
            raise ValueError(f"perturb_native={self.perturb_native} must not be negative")
        self.plant(engine=False)

    def plant(self, *, engine: bool) -> Plant | None:
        """The planted tie-break as the engine (``engine``) or the reference sees it."""
        return Plant.parse(self.plant_tie, engine=engine)
