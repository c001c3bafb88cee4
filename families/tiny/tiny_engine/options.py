"""The family's options (``[options]`` of family.toml), read through ``harness.option``."""

from __future__ import annotations

from dataclasses import dataclass, fields

import harness
from tiny_engine import prompts, sizes


@dataclass(frozen=True)
class FamilyOptions:
    """Every option with its default; ``qualify run --set name=value`` overrides one."""

    size: str = "tiny"
    """Model size: ``tiny`` (plans of ~11 MB each), ``small`` (~204 MB) or ``medium`` (~397 MB)."""
    retain_plans: bool = False
    """Keep every plan buffer alive until the build ends (reproduces the retention bug)."""
    perturb_native: float = 0.0
    """Std of Gaussian noise added to the plan weights (0.01 reliably fails the parity gate)."""
    prompts: int = 10
    """Number of parity cases."""
    new_tokens: int = 30
    """Greedy tokens generated per case (fewer when the model ends its turn)."""

    @classmethod
    def from_harness(cls) -> FamilyOptions:
        """Each option from the run's environment, typed like its default, then validated."""
        defaults = cls()
        values = {f.name: harness.option(f.name, getattr(defaults, f.name)) for f in fields(cls)}
        options = cls(**values)
        options.validate()
        return options

    def validate(self) -> None:
        """Reject values the family cannot run with, naming the option and the valid range."""
        sizes.size_spec(self.size)
        if not 1 <= self.prompts <= prompts.max_prompts():
            raise ValueError(
                f"prompts={self.prompts} must be between 1 and {prompts.max_prompts()}"
            )
        if self.new_tokens < 1:
            raise ValueError(f"new_tokens={self.new_tokens} must be at least 1")
        if self.perturb_native < 0:
            raise ValueError(f"perturb_native={self.perturb_native} must not be negative")
