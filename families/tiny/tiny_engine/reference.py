"""The FP32 eager reference: transformers' own Phi-3, no cache, the whole sequence every step."""

from __future__ import annotations

from pathlib import Path

import torch

from harness.kit.forced import sequence_rows
from harness.kit.generation import Generation, greedy
from tiny_engine import checkpoint
from tiny_engine.plant import Plant, apply_rows
from tiny_engine.prompts import Prompt


class ReferenceRuntime:
    """``Phi3ForCausalLM`` with eager attention, loaded from the checkpoint: fp32 for the
    reference, the engine's dtype for its noise floor (the same operators)."""

    def __init__(
        self, checkpoint_dir: Path, dtype: torch.dtype = torch.float32, plant: Plant | None = None
    ) -> None:
        self.tokenizer = checkpoint.load_tokenizer(checkpoint_dir)
        self.model = checkpoint.load_model(checkpoint_dir, dtype)
        self.stop_ids = set(checkpoint.stop_token_ids(checkpoint_dir))
        self.plant = plant

    @torch.inference_mode()
    def all_logits(self, sequence: list[int]) -> torch.Tensor:
        """Recompute the whole ``sequence`` without a cache; every position's logits."""
        output = self.model(input_ids=torch.tensor([sequence]), use_cache=False)
        logits: torch.Tensor = output.logits[0]
        return logits

    def generate(self, prompt: Prompt, new_tokens: int) -> Generation:
        """Greedy continuation of ``prompt``, recomputing from scratch for every token."""
        sequence = list(prompt.input_ids)

        def last_logits() -> torch.Tensor:
            logits = self.all_logits(sequence)[-1]
            if self.plant is None:
                return logits
            return self.plant.apply(prompt.case_id, len(sequence) - len(prompt.input_ids), logits)

        def after(token: int) -> torch.Tensor:
            sequence.append(token)
            return last_logits()

        return greedy(
            prompt.case_id,
            prompt.text,
            last_logits(),
            after,
            new_tokens=new_tokens,
            stop_ids=self.stop_ids,
            tokenizer=self.tokenizer,
        )

    def forced_rows(self, prompt: Prompt, forced_ids: list[int]) -> torch.Tensor:
        """The logits at each position of ``forced_ids`` after ``prompt``: one forward pass."""
        prompt_ids = list(prompt.input_ids)
        logits = self.all_logits(prompt_ids + forced_ids[:-1])
        rows = sequence_rows(logits, len(prompt_ids), len(forced_ids))
        return apply_rows(self.plant, prompt.case_id, rows)
