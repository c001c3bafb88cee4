"""The native runtime: runs the published bundle's bf16 plans with a KV cache."""

from __future__ import annotations

import time
from pathlib import Path

import torch

from harness.kit.generation import Generation
from harness.kit.native import PlanRuntime
from tiny_engine.plant import Plant, apply_rows, decode_planted
from tiny_engine.prompts import Prompt


class NativeRuntime(PlanRuntime):
    """Loads each plan of a bundle and generates with prefill once, then decode per token."""

    def __init__(self, bundle_dir: Path, checkpoint_dir: Path, plant: Plant | None = None) -> None:
        super().__init__(bundle_dir, checkpoint_dir)
        self.plant = plant

    @torch.inference_mode()
    def generate(self, prompt: Prompt, new_tokens: int) -> Generation:
        """Greedy continuation of ``prompt``: the cache grows by one position per token."""
        started = time.perf_counter()
        prefilled = self.plans["prefill"](torch.tensor([prompt.input_ids]))
        return decode_planted(self, self.plant, prompt, prefilled, new_tokens, started)

    @torch.inference_mode()
    def forced_rows(self, prompt: Prompt, forced_ids: list[int]) -> torch.Tensor:
        """The engine's logits at each position of ``forced_ids`` (teacher forcing)."""
        prefilled = self.plans["prefill"](torch.tensor([prompt.input_ids]))
        rows = torch.stack(self.decode_forced(prefilled, forced_ids))
        return apply_rows(self.plant, prompt.case_id, rows)
