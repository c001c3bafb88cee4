"""The FP32 eager reference: transformers' own Phi-3, no cache, the whole sequence every step."""

from __future__ import annotations

from pathlib import Path

import torch

from harness.kit.generation import Generation, greedy
from tiny_engine import checkpoint
from tiny_engine.prompts import Prompt


class ReferenceRuntime:
    """``Phi3ForCausalLM`` in fp32 with eager attention, loaded from the checkpoint."""

    def __init__(self, checkpoint_dir: Path) -> None:
        self.tokenizer = checkpoint.load_tokenizer(checkpoint_dir)
        self.model = checkpoint.load_model(checkpoint_dir, torch.float32)
        self.stop_ids = set(checkpoint.stop_token_ids(checkpoint_dir))

    @torch.inference_mode()
    def last_logits(self, sequence: list[int]) -> torch.Tensor:
        """Recompute the whole ``sequence`` without a cache; the last position's logits."""
        output = self.model(input_ids=torch.tensor([sequence]), use_cache=False)
        logits: torch.Tensor = output.logits[0, -1]
        return logits

    def generate(self, prompt: Prompt, new_tokens: int) -> Generation:
        """Greedy continuation of ``prompt``, recomputing from scratch for every token."""
        sequence = list(prompt.input_ids)

        def after(token: int) -> torch.Tensor:
            sequence.append(token)
            return self.last_logits(sequence)

        return greedy(
            prompt.case_id,
            prompt.text,
            self.last_logits(sequence),
            after,
            new_tokens=new_tokens,
            stop_ids=self.stop_ids,
            tokenizer=self.tokenizer,
        )
