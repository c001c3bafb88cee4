"""Teacher forcing: what a runtime predicts at each position of the reference's own tokens.

Two passes use it, once the reference has generated every case:

- the noise floor (phase ``reference:noise``): the reference again in the engine's precision
  (same operators), fed the FP32 reference's tokens, next to the FP32 reference fed the same
  tokens; per position its top-k and the spread of its log-probabilities minus the FP32 ones
  over the vocabulary are recorded (``role="noise"``);
- the teacher-forced continuation (phase ``teacher``): the engine fed the reference's tokens,
  its top-k recorded at every position (``role="teacher"``), for the cases where it diverged
  (``diverging``).

The host compares both with the reference's records (``qualify.parity.noise``). A runtime
gives the logits at each forced position, ``[len(forced_ids), vocab]``: a reference computes
them in one forward pass over the prompt and the forced tokens (``sequence_rows``), a KV-cache
engine by a decode that feeds the forced tokens instead of its own (``decode_forced``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import harness
from harness.kit.generation import Generation, top_k

if TYPE_CHECKING:
    import torch

Rows = Callable[[Any, list[int]], "torch.Tensor | Sequence[torch.Tensor]"]
"""``(case, forced_ids) -> logits`` at each forced position: row ``t`` is the prediction of
``forced_ids[t]``, made after the prompt and ``forced_ids[:t]``."""


def decode_forced(
    first_logits: torch.Tensor,
    next_logits: Callable[[int], torch.Tensor],
    forced_ids: Sequence[int],
) -> list[torch.Tensor]:
    """A cached decode fed ``forced_ids``: the prompt's logits, then the logits after each
    forced token but the last (``next_logits`` as in ``generation.greedy``)."""
    rows = [first_logits.reshape(-1)]
    for token in forced_ids[:-1]:
        rows.append(next_logits(int(token)).reshape(-1))
    return rows


def sequence_rows(logits: torch.Tensor, prompt_length: int, forced: int) -> torch.Tensor:
    """The forced positions' rows of one forward pass's ``[sequence, vocab]`` logits over the
    prompt followed by the forced tokens (the last one need not be in the sequence)."""
    return logits[prompt_length - 1 : prompt_length - 1 + forced]


def rows_of(
    cases: Sequence[Any], references: Sequence[Generation], rows: Rows
) -> list[torch.Tensor]:
    """Every case's forced rows (float32), computed now: a family whose cap holds one model at
    a time takes the FP32 ones, frees the FP32 model, then loads the low-precision one."""
    import torch

    with torch.inference_mode():
        return [
            _stack(rows(case, list(reference.token_ids))).float()
            if reference.token_ids
            else torch.empty(0)
            for case, reference in zip(cases, references, strict=True)
        ]


def noise_pass(
    cases: Sequence[Any],
    references: Sequence[Generation],
    reference_rows: Rows | Sequence[torch.Tensor],
    lowp_rows: Rows,
) -> None:
    """Record, per case, the reference in low precision fed the FP32 reference's tokens:
    its top-k at each position and how far its log-probabilities are from the FP32 ones.
    ``reference_rows`` computes the FP32 rows, or holds them (``rows_of``)."""
    import torch

    with torch.inference_mode():
        for index, (case, reference) in enumerate(zip(cases, references, strict=True)):
            forced_ids = list(reference.token_ids)
            if not forced_ids:
                continue
            if callable(reference_rows):
                exact = _stack(reference_rows(case, forced_ids)).float()
            else:
                exact = reference_rows[index]
            lowp = _stack(lowp_rows(case, forced_ids)).float()
            difference = torch.log_softmax(lowp, dim=-1) - torch.log_softmax(exact, dim=-1)
            # A token masked on both sides (-inf - -inf) is no noise: leave it out.
            difference = torch.where(difference.isfinite(), difference, 0.0)
            harness.record_forced(
                reference.case_id,
                role="noise",
                forced_ids=forced_ids,
                top_logprobs=[top_k(row) for row in lowp],
                logit_noise=difference.std(dim=-1).tolist(),
            )


def diverging(
    cases: Sequence[Any], references: Sequence[Generation], natives: Sequence[Generation]
) -> tuple[list[Any], list[Generation]]:
    """The cases (and their reference generations) where the engine's generation is not the
    reference's: the only ones a teacher-forced continuation explains. Empty when every case
    is exact, so that a clean run pays nothing for it."""
    native_of = {native.case_id: native for native in natives}
    kept: tuple[list[Any], list[Generation]] = ([], [])
    for case, reference in zip(cases, references, strict=True):
        native = native_of.get(reference.case_id)
        if native is None or (native.token_ids, native.eos) != (reference.token_ids, reference.eos):
            kept[0].append(case)
            kept[1].append(reference)
    return kept


def teacher_pass(cases: Sequence[Any], references: Sequence[Generation], rows: Rows) -> None:
    """Record, per case, the engine's top-k at each position of the reference's tokens."""
    import torch

    with torch.inference_mode():
        for case, reference in zip(cases, references, strict=True):
            forced_ids = list(reference.token_ids)
            if not forced_ids:
                continue
            harness.record_forced(
                reference.case_id,
                role="teacher",
                forced_ids=forced_ids,
                top_logprobs=[top_k(row) for row in _stack(rows(case, forced_ids))],
            )


def _stack(rows: torch.Tensor | Sequence[torch.Tensor]) -> torch.Tensor:
    import torch

    if isinstance(rows, torch.Tensor):
        return rows.reshape(rows.shape[0], -1)
    return torch.stack([row.reshape(-1) for row in rows])
