"""The native runtime: runs the published bundle's bf16 plans (vision, prefill, decode; a
Phi-4-mini bundle has no vision plan)."""

from __future__ import annotations

from pathlib import Path

import torch
from tiny_engine.plant import Plant, apply_rows, decode_planted

from harness.kit.generation import Generation
from harness.kit.native import PlanRuntime
from phi4_engine import sizes
from phi4_engine.network import hd_layout
from phi4_engine.prompts import Prompt


class NativeRuntime(PlanRuntime):
    """Loads each plan of a bundle; an image prompt runs vision first, then prefill once and
    decode per token."""

    def __init__(self, bundle_dir: Path, checkpoint_dir: Path, plant: Plant | None = None) -> None:
        super().__init__(bundle_dir, checkpoint_dir)
        self.plant = plant
        self.vision = self.plans.get("vision")
        self.engine = str(self.manifest["engine"])
        self.hidden_size = int(self.manifest["hidden_size"])

    def image_features(self, prompt: Prompt, hidden_size: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Features ``[1, length, hidden]`` at the placeholders (zeros elsewhere) and the mask."""
        ids = torch.tensor([prompt.input_ids])
        mask = ids == sizes.IMAGE_TOKEN_ID
        features = torch.zeros((1, ids.shape[1], hidden_size), dtype=torch.bfloat16)
        image = prompt.image
        if image is None:
            return features, mask
        if self.vision is None:
            raise ValueError(f"{prompt.case_id}: the bundle has no vision plan (a text-only model)")
        if not bool(image.attention_mask.all()):
            raise ValueError(f"{prompt.case_id}: padded crops are not supported by the plans")
        crops, separators = self.vision(image.pixel_values[0])
        height, width = (int(side) for side in image.image_sizes[0])
        rows, columns = (
            height // image.pixel_values.shape[-2],
            width // image.pixel_values.shape[-1],
        )
        layout = hd_layout(crops, separators, rows, columns)
        if layout.shape[0] != int(mask.sum()):
            raise ValueError(
                f"{prompt.case_id}: {layout.shape[0]} image features for {int(mask.sum())} "
                "placeholder tokens"
            )
        features[mask] = layout.to(features.dtype)
        return features, mask

    @torch.inference_mode()
    def generate(self, prompt: Prompt, new_tokens: int) -> Generation:
        """Greedy continuation of ``prompt``: the cache grows by one position per token."""
        return decode_planted(self, self.plant, prompt, self._prefill(prompt), new_tokens)

    @torch.inference_mode()
    def forced_rows(self, prompt: Prompt, forced_ids: list[int]) -> torch.Tensor:
        """The engine's logits at each position of ``forced_ids`` (teacher forcing)."""
        rows = torch.stack(self.decode_forced(self._prefill(prompt), forced_ids))
        return apply_rows(self.plant, prompt.case_id, rows)

    def _prefill(self, prompt: Prompt) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """The prompt (its image through vision first) through the prefill plan."""
        features, mask = self.image_features(prompt, self.hidden_size)
        prefilled: tuple[torch.Tensor, torch.Tensor, torch.Tensor] = self.plans["prefill"](
            torch.tensor([prompt.input_ids]), features, mask
        )
        return prefilled
