"""The family's options (``[options]`` of family.toml), read through ``harness.option``."""

from __future__ import annotations

from dataclasses import dataclass

from tiny_engine.plant import Plant

from harness.kit.options import E2EOptions, one_of
from phi4_engine import prompts, sizes

ENGINES = ("auto", "torch", "tensorrt")


@dataclass(frozen=True)
class FamilyOptions(E2EOptions):
    """``retain_plans``, ``prompts`` and ``new_tokens`` (the kit's; a retained build keeps the
    prefill plan during decode, both during vision), and the family's own."""

    size: str = "ci"
    """``ci`` (the published vocabulary, tokenizer, grouping and rotary; 2 layers, 768 wide) or
    ``full`` (the published dimensions)."""
    engine: str = "auto"
    """``torch`` (bf16 ``torch.export`` plans), ``tensorrt`` or ``auto`` (see ``engine.py``)."""
    checkpoint: str = ""
    """A local Phi-4-multimodal checkpoint directory instead of the synthesized one."""
    trust_remote_code: bool = False
    """Allow a checkpoint that ships its own modeling code (``auto_map``)."""
    perturb_native: float = 0.0
    """Std of Gaussian noise added to the plan weights (a broken engine, for parity)."""
    plant_tie: str = ""
    """``<case_id>:<position>``: a planted one-position tie-break (``tiny_engine.plant``)."""

    def max_prompts(self) -> int:
        """The parity prompts of the family's corpus."""
        return prompts.max_prompts()

    def validate(self) -> None:
        """Reject values the family cannot run with, naming the option and the valid range."""
        sizes.size_spec(self.size)
        one_of("engine", self.engine, ENGINES)
        super().validate()
        if self.perturb_native < 0:
            raise ValueError(f"perturb_native={self.perturb_native} must not be negative")
        self.plant(engine=False)

    def plant(self, *, engine: bool) -> Plant | None:
        """The planted tie-break as the engine (``engine``) or the reference sees it."""
        return Plant.parse(self.plant_tie, engine=engine)
