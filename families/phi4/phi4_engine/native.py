"""The native runtime: runs the published bundle's bf16 plans (vision, prefill, decode; a
Phi-4-mini bundle has no vision plan)."""

from __future__ import annotations

from pathlib import Path

import torch
from tiny_engine.bundle import read_manifest
from tiny_engine.checkpoint import load_tokenizer
from tiny_engine.generation import Generation, greedy

from phi4_engine import sizes
from phi4_engine.network import hd_layout
from phi4_engine.prompts import Prompt


class NativeRuntime:
    """Loads each plan of a bundle; an image prompt runs vision first, then prefill once and
    decode per token. The tokenizer comes from the checkpoint directory, as an engine runtime
    takes it from the Hugging Face model directory next to the engine."""

    def __init__(self, bundle_dir: Path, checkpoint_dir: Path) -> None:
        manifest = read_manifest(bundle_dir)
        plans = {plan["network"]: bundle_dir / plan["file"] for plan in manifest["plans"]}
        self.vision = torch.export.load(plans["vision"]).module() if "vision" in plans else None
        self.prefill = torch.export.load(plans["prefill"]).module()
        self.decode = torch.export.load(plans["decode"]).module()
        self.engine = str(manifest["engine"])
        self.hidden_size = int(manifest["hidden_size"])
        self.stop_ids = set(manifest["stop_token_ids"])
        self.tokenizer = load_tokenizer(checkpoint_dir)

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
        features, mask = self.image_features(prompt, self.hidden_size)
        logits, keys, values = self.prefill(torch.tensor([prompt.input_ids]), features, mask)

        def after(token: int) -> torch.Tensor:
            nonlocal keys, values
            step_logits, keys, values = self.decode(torch.tensor([[token]]), keys, values)
            logits: torch.Tensor = step_logits[0]
            return logits

        return greedy(
            prompt.case_id,
            prompt.text,
            logits[0],
            after,
            new_tokens=new_tokens,
            stop_ids=self.stop_ids,
            tokenizer=self.tokenizer,
        )
