"""What both runtimes share: greedy steps, top-k log-probabilities and the recorded case."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

import harness

TOP_K = 5


@dataclass
class Generation:
    """One prompt's greedy continuation as either side produced it."""

    case_id: str
    prompt: str
    token_ids: list[int] = field(default_factory=list)
    top_logprobs: list[list[tuple[int, float, str]]] = field(default_factory=list)
    eos: bool = False


def greedy(
    case_id: str,
    prompt: str,
    first_logits: torch.Tensor,
    next_logits: Callable[[int], torch.Tensor],
    *,
    new_tokens: int,
    stop_ids: set[int],
    tokenizer: Any,
) -> Generation:
    """Pick the argmax ``new_tokens`` times (or until a stop token), keeping the top-k.

    ``first_logits`` are the prompt's last-position logits; ``next_logits(token)`` appends
    ``token`` and returns the logits after it (the runtime decides how: cache or recompute).
    """
    result = Generation(case_id=case_id, prompt=prompt)
    logits = first_logits
    for step in range(new_tokens):
        token = record_step(result, logits, tokenizer)
        if token in stop_ids:
            result.eos = True
            break
        if step + 1 < new_tokens:
            logits = next_logits(token)
    return result


def record_step(result: Generation, logits: torch.Tensor, tokenizer: Any) -> int:
    """Append the greedy token of ``logits`` (``[vocab]``) and its top-k; return the token."""
    logprobs = torch.log_softmax(logits.float().reshape(-1), dim=-1)
    values, indices = torch.topk(logprobs, TOP_K)
    top = [
        (int(index), float(value), tokenizer.decode([int(index)]))
        for value, index in zip(values.tolist(), indices.tolist(), strict=True)
    ]
    token = top[0][0]
    result.token_ids.append(token)
    result.top_logprobs.append(top)
    return token


def record(result: Generation, side: str, tokenizer: Any) -> None:
    """Hand one generation to the host's parity check (a no-op outside qualify)."""
    harness.record_case(
        result.case_id,
        side=side,
        token_ids=result.token_ids,
        text=tokenizer.decode(result.token_ids),
        top_logprobs=result.top_logprobs,
        token_texts=[tokenizer.decode([token]) for token in result.token_ids],
        prompt=result.prompt,
        eos=result.eos,
    )
