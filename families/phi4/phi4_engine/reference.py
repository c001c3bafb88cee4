"""The FP32 eager reference: transformers' own Phi4MultimodalForCausalLM and its own KV cache.

The prompt (image included) runs once through the model, which returns transformers'
``DynamicCache``; every later token runs against that cache. Nothing of the engine is shared:
not its networks, its plans, its cache layout or its HD layout code.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from tiny_engine.plant import Plant, apply_rows

from harness.kit.checkpoint import load_tokenizer, stop_token_ids
from harness.kit.generation import Generation, greedy
from phi4_engine import checkpoint
from phi4_engine.prompts import Prompt


class ReferenceRuntime:
    """``Phi4MultimodalForCausalLM`` in fp32 with eager attention, loaded from the checkpoint."""

    def __init__(
        self,
        checkpoint_dir: Path,
        dtype: torch.dtype = torch.float32,
        *,
        trust_remote_code: bool = False,
        plant: Plant | None = None,
    ) -> None:
        self.plant = plant
        self.tokenizer = load_tokenizer(checkpoint_dir)
        self.model = checkpoint.load_model(
            checkpoint_dir, dtype, trust_remote_code=trust_remote_code
        )
        self.stop_ids = set(stop_token_ids(checkpoint_dir))

    @torch.inference_mode()
    def generate(self, prompt: Prompt, new_tokens: int) -> Generation:
        """Greedy continuation of ``prompt``: the prompt once, then one token per step."""
        output = self.model(
            input_ids=torch.tensor([prompt.input_ids]),
            use_cache=True,
            logits_to_keep=1,
            **_image(prompt),
        )
        cache = output.cache
        position = 0

        def planted(logits: torch.Tensor) -> torch.Tensor:
            if self.plant is None:
                return logits
            return self.plant.apply(prompt.case_id, position, logits)

        def after(token: int) -> torch.Tensor:
            nonlocal cache, position
            step = self.model(
                input_ids=torch.tensor([[token]]), cache=cache, use_cache=True, logits_to_keep=1
            )
            cache = step.cache
            position += 1
            return planted(step.logits[0, -1])

        return greedy(
            prompt.case_id,
            prompt.text,
            planted(output.logits[0, -1]),
            after,
            new_tokens=new_tokens,
            stop_ids=self.stop_ids,
            tokenizer=self.tokenizer,
        )

    @torch.inference_mode()
    def forced_rows(self, prompt: Prompt, forced_ids: list[int]) -> torch.Tensor:
        """The logits at each position of ``forced_ids`` after ``prompt``: one forward pass
        over both, keeping only those positions' logits (the vocabulary is 200k wide)."""
        sequence = list(prompt.input_ids) + forced_ids[:-1]
        output = self.model(
            input_ids=torch.tensor([sequence]),
            use_cache=False,
            logits_to_keep=len(forced_ids),
            **_image(prompt),
        )
        return apply_rows(self.plant, prompt.case_id, output.logits[0])


def _image(prompt: Prompt) -> dict[str, Any]:
    """The model's image inputs for ``prompt`` (none for a text prompt)."""
    if prompt.image is None:
        return {}
    return {
        "image_pixel_values": prompt.image.pixel_values,
        "image_sizes": prompt.image.image_sizes,
        "image_attention_mask": prompt.image.attention_mask,
    }
