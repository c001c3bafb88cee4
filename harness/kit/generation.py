"""What both runtimes share: greedy steps, top-k log-probabilities and the recorded case."""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import harness

if TYPE_CHECKING:
    import torch

TOP_K = 5


@dataclass
class Generation:
    """One prompt's greedy continuation as either side produced it."""

    case_id: str
    prompt: str
    token_ids: list[int] = field(default_factory=list)
    top_logprobs: list[list[tuple[int, float, str]]] = field(default_factory=list)
    eos: bool = False
    started: float = 0.0
    """``time.perf_counter()`` when the request arrived, before its prefill."""
    token_times: list[float] = field(default_factory=list)
    """``time.perf_counter()`` when each token was picked (the serving latencies)."""

    def time_to_first_token_ms(self) -> float | None:
        """From the request to the first token (prefill included), in milliseconds."""
        return (self.token_times[0] - self.started) * 1e3 if self.token_times else None

    def inter_token_ms(self) -> list[float]:
        """The time between consecutive tokens (one decode step each), in milliseconds."""
        times = self.token_times
        return [(later - earlier) * 1e3 for earlier, later in itertools.pairwise(times)]


def greedy(
    case_id: str,
    prompt: str,
    first_logits: torch.Tensor,
    next_logits: Callable[[int], torch.Tensor],
    *,
    new_tokens: int,
    stop_ids: set[int],
    tokenizer: Any,
    started: float | None = None,
) -> Generation:
    """Pick the argmax ``new_tokens`` times (or until a stop token), keeping the top-k.

    ``first_logits`` are the prompt's last-position logits; ``next_logits(token)`` appends
    ``token`` and returns the logits after it (the runtime decides how: cache or recompute).
    ``started`` is when the request arrived (before ``first_logits`` were computed).
    """
    result = Generation(case_id=case_id, prompt=prompt)
    result.started = time.perf_counter() if started is None else started
    logits = first_logits
    for step in range(new_tokens):
        token = record_step(result, logits, tokenizer)
        result.token_times.append(time.perf_counter())
        if token in stop_ids:
            result.eos = True
            break
        if step + 1 < new_tokens:
            logits = next_logits(token)
    return result


def record_step(result: Generation, logits: torch.Tensor, tokenizer: Any) -> int:
    """Append the greedy token of ``logits`` (``[vocab]``) and its top-k; return the token."""
    top = [(token, logprob, tokenizer.decode([token])) for token, logprob in top_k(logits)]
    token = top[0][0]
    result.token_ids.append(token)
    result.top_logprobs.append(top)
    return token


def top_k(logits: torch.Tensor) -> list[tuple[int, float]]:
    """The ``TOP_K`` best ``(token_id, logprob)`` of ``logits`` (``[vocab]``), best first."""
    import torch

    logprobs = torch.log_softmax(logits.float().reshape(-1), dim=-1)
    values, indices = torch.topk(logprobs, TOP_K)
    return [
        (int(index), float(value))
        for value, index in zip(values.tolist(), indices.tolist(), strict=True)
    ]


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
