"""The family's options (``[options]`` of family.toml), read through ``harness.option``."""

from __future__ import annotations

from dataclasses import dataclass, fields

import harness
from phi4_engine import prompts, sizes

ENGINES = ("auto", "torch", "tensorrt")


@dataclass(frozen=True)
class FamilyOptions:
    """Every option with its default; ``qualify run --set name=value`` overrides one."""

    size: str = "ci"
    """``ci`` (the published vocabulary, tokenizer, grouping and rotary; 2 layers, 768 wide) or
    ``full`` (the published dimensions)."""
    retain_plans: bool = False
    """Keep built plans in memory until the build ends (prefill during decode, both during
    vision): the retention bug the staged build avoids."""
    engine: str = "auto"
    """``torch`` (bf16 ``torch.export`` plans), ``tensorrt`` or ``auto`` (see ``engine.py``)."""
    checkpoint: str = ""
    """A local Phi-4-multimodal checkpoint directory instead of the synthesized one."""
    trust_remote_code: bool = False
    """Allow a checkpoint that ships its own modeling code (``auto_map``)."""
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
        if self.engine not in ENGINES:
            raise ValueError(f"engine={self.engine!r} is not one of {', '.join(ENGINES)}")
        if not 1 <= self.prompts <= prompts.max_prompts():
            raise ValueError(
                f"prompts={self.prompts} must be between 1 and {prompts.max_prompts()}"
            )
        if self.new_tokens < 1:
            raise ValueError(f"new_tokens={self.new_tokens} must be at least 1")
