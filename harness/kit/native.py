"""A native runtime over a published bundle: prefill once, then decode per token with a KV cache."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from harness.kit import forced
from harness.kit.bundle import read_manifest
from harness.kit.checkpoint import load_tokenizer
from harness.kit.generation import Generation, greedy

if TYPE_CHECKING:
    import torch


class Case(Protocol):
    """What generation needs of a prompt."""

    @property
    def case_id(self) -> str: ...
    @property
    def text(self) -> str: ...


class PlanRuntime:
    """Loads every plan of a bundle (``self.plans[network]``); ``decode_greedily`` continues a
    prefill through the ``decode`` plan, ``(input_ids, keys, values) -> (logits, keys,
    values)``. The tokenizer comes from the checkpoint directory, as an engine runtime takes it
    from the Hugging Face model directory next to the engine."""

    def __init__(self, bundle_dir: Path, checkpoint_dir: Path) -> None:
        import torch

        self.manifest = read_manifest(bundle_dir)
        self.plans: dict[str, Any] = {
            plan["network"]: torch.export.load(bundle_dir / plan["file"]).module()
            for plan in self.manifest["plans"]
        }
        self.stop_ids = set(self.manifest["stop_token_ids"])
        self.tokenizer = load_tokenizer(checkpoint_dir)

    def decode_greedily(
        self,
        case: Case,
        prefilled: tuple[torch.Tensor, torch.Tensor, torch.Tensor],
        new_tokens: int,
        started: float | None = None,
    ) -> Generation:
        """Greedy continuation after ``prefilled`` (the prefill's logits ``[1, vocab]``, keys
        and values): the cache grows by one position per token."""
        logits, keys, values = prefilled
        return greedy(
            case.case_id,
            case.text,
            logits[0],
            self._decoder(keys, values),
            new_tokens=new_tokens,
            stop_ids=self.stop_ids,
            tokenizer=self.tokenizer,
            started=started,
        )

    def decode_forced(
        self, prefilled: tuple[torch.Tensor, torch.Tensor, torch.Tensor], forced_ids: list[int]
    ) -> list[torch.Tensor]:
        """The logits at each position of ``forced_ids`` after ``prefilled``, feeding the
        decode plan those tokens instead of its own picks (teacher forcing)."""
        logits, keys, values = prefilled
        return forced.decode_forced(logits[0], self._decoder(keys, values), forced_ids)

    def _decoder(self, keys: torch.Tensor, values: torch.Tensor) -> Callable[[int], torch.Tensor]:
        """``token -> logits`` through the decode plan, the cache growing by one each call."""
        import torch

        decode = self.plans["decode"]

        def after(token: int) -> torch.Tensor:
            nonlocal keys, values
            step_logits, keys, values = decode(torch.tensor([[token]]), keys, values)
            return step_logits[0]  # type: ignore[no-any-return]

        return after
