"""Fit the output head of the seeded model to the corpus (ridge regression, closed form).

Every weight but ``lm_head`` keeps its seeded random value; the head is the least-squares
readout from the final hidden states to the next token of the corpus. That gives the model
what a trained one has and a random one lacks: next-token distributions with a clear winner,
far wider than bf16 rounding, so bf16-vs-fp32 parity measures the engine rather than noise.
It costs one forward pass over the corpus and one ``hidden x hidden`` solve, at any size.

The readout separates the corpus positions well when the hidden size is not far below their
number (about 720), which is why even ``tiny`` is 512 wide. The parity prompts are beginnings
of corpus sequences, so greedy continuations stay on the corpus, where the winner is clear.
Measured top-1/top-2 gaps along the reference continuations: at least 1.6 nats at ``tiny``,
at least 7.7 nats at ``small``. bf16 native vs fp32 reference: 10 of 10 default cases (and all
14) exact at ``tiny`` and ``small``, 10 of 10 at ``medium``. With ``perturb_native`` = 0.01,
0 of 10 at ``tiny`` and ``small`` (at ``tiny``: 0.001 keeps 13 of 14, 0.002 keeps 7 of 14).
"""

from __future__ import annotations

from typing import Any

import torch

# Target logit of the right next token (others: 0). The fitted winner lands near this value.
TARGET_LOGIT = 16.0
# Ridge strength relative to the mean feature energy: keeps the head's norm, and with it the
# amplification of bf16 error in the hidden state, bounded.
RIDGE = 1e-3


@torch.no_grad()
def fit_output_head(model: Any, sequences: list[list[int]]) -> None:
    """Replace ``model.lm_head.weight`` by the ridge readout predicting each next token."""
    features, targets = _features(model, sequences)
    gram = features.T @ features
    gram += torch.eye(gram.shape[0], dtype=gram.dtype) * (RIDGE * gram.diagonal().mean())
    onehot = torch.zeros((features.shape[0], model.config.vocab_size), dtype=features.dtype)
    onehot[torch.arange(features.shape[0]), targets] = TARGET_LOGIT
    head = torch.linalg.solve(gram, features.T @ onehot).T
    model.lm_head.weight.copy_(head.to(model.lm_head.weight.dtype))


def _features(model: Any, sequences: list[list[int]]) -> tuple[torch.Tensor, torch.Tensor]:
    """Final hidden states (float64) of every position that has a next token."""
    chunks, targets = [], []
    for sequence in sequences:
        hidden = model.model(input_ids=torch.tensor([sequence[:-1]])).last_hidden_state[0]
        chunks.append(hidden.double())
        targets.extend(sequence[1:])
    return torch.cat(chunks), torch.tensor(targets)
