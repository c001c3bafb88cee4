"""The native runtime: runs the published bundle's bf16 plans with a KV cache."""

from __future__ import annotations

import time

import torch

from harness.kit.generation import Generation
from harness.kit.native import PlanRuntime
from tiny_engine.prompts import Prompt


class NativeRuntime(PlanRuntime):
    """Loads each plan of a bundle and generates with prefill once, then decode per token."""

    @torch.inference_mode()
    def generate(self, prompt: Prompt, new_tokens: int) -> Generation:
        """Greedy continuation of ``prompt``: the cache grows by one position per token."""
        started = time.perf_counter()
        prefilled = self.plans["prefill"](torch.tensor([prompt.input_ids]))
        return self.decode_greedily(prompt, prefilled, new_tokens, started)
