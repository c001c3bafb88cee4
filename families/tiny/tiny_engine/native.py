"""The native runtime: runs the published bundle's bf16 plans with a KV cache."""

from __future__ import annotations

import time
from pathlib import Path

import torch

from tiny_engine import checkpoint
from tiny_engine.bundle import read_manifest
from tiny_engine.generation import Generation, greedy
from tiny_engine.prompts import Prompt


class NativeRuntime:
    """Loads each plan of a bundle and generates with prefill once, then decode per token.

    The tokenizer comes from the checkpoint directory, as an engine runtime takes it from the
    Hugging Face model directory next to the engine.
    """

    def __init__(self, bundle_dir: Path, checkpoint_dir: Path) -> None:
        manifest = read_manifest(bundle_dir)
        plans = {plan["network"]: bundle_dir / plan["file"] for plan in manifest["plans"]}
        self.prefill = torch.export.load(plans["prefill"]).module()
        self.decode = torch.export.load(plans["decode"]).module()
        self.stop_ids = set(manifest["stop_token_ids"])
        self.tokenizer = checkpoint.load_tokenizer(checkpoint_dir)

    @torch.inference_mode()
    def generate(self, prompt: Prompt, new_tokens: int) -> Generation:
        """Greedy continuation of ``prompt``: the cache grows by one position per token."""
        started = time.perf_counter()
        logits, keys, values = self.prefill(torch.tensor([prompt.input_ids]))

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
            started=started,
        )
