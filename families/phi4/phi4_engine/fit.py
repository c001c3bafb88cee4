"""Fit the seeded model to the corpus, so that parity has clear winners to compare.

A random model's next-token distributions are nearly flat: bf16 and fp32 would disagree on
near-ties, and parity would measure noise. The embedded family fits its output head in closed
form; Phi-4's head is tied to the input embedding, so here every weight is trained instead
(Adam, full batch) on the corpus: documents, chats and the image chats, images included, so
the answer to the shared image question depends on the vision encoder's features. The loss is
cross-entropy over the tokens the corpus uses (a few hundred of the 200,064), which keeps a
step cheap; tokens outside it keep their small seeded logits, far below the fitted winners.

An image chat's image placeholders (545 to 847 positions, most of the corpus) come before
every position the loss is taken at. Their keys and values are computed each step with the
current weights but without gradients, and the rest of the chat attends to them through
transformers' own cache; only the text after the image is back-propagated. That about halves
a step and still fits the corpus well enough for every parity case to be exact.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch.nn import functional

from phi4_engine import corpus, prompts, sizes
from phi4_engine.images import ImageInputs

LEARNING_RATE = 3e-3
# Full-batch steps, the learning rate decaying to zero along a cosine: measured at ``ci`` on
# two cores, the mean corpus loss falls from 5.7 to 0.036 (fit.json in the checkpoint records
# it) and bf16 plans match the fp32 reference on 10 of 10 cases; a constant rate plateaued
# near 0.05 and oscillated.
STEPS = 60


@dataclass(frozen=True)
class Sequence:
    """One training sequence: its ids and, for an image chat, the image inputs."""

    input_ids: torch.Tensor
    image: ImageInputs | None = None


def sequences(tokenizer: Any, *, images: bool = True) -> list[Sequence]:
    """Every corpus sequence as the model sees it, each from its first token; without the
    image chats for a text-only model (``images=False``)."""
    eos = tokenizer.eos_token
    result = [Sequence(_ids(tokenizer, doc + eos)) for doc in corpus.DOCUMENTS]
    for chat in corpus.CHAT_SAMPLES:
        result.append(
            Sequence(_ids(tokenizer, tokenizer.apply_chat_template(chat, tokenize=False)))
        )
    for image_chat in corpus.image_chats() if images else []:
        question, answer = image_chat.messages
        content, inputs = prompts.image_content(image_chat.image, question["content"])
        messages = [{"role": "user", "content": content}, answer]
        text = tokenizer.apply_chat_template(messages, tokenize=False)
        result.append(Sequence(_ids(tokenizer, text), inputs))
    return result


def fit(model: Any, training: list[Sequence]) -> list[float]:
    """Train ``model`` in place for ``STEPS`` full-batch steps; the loss of each step.

    The vision path stays as seeded (its features are computed once per image) and so do the
    embedding rows of tokens the corpus never uses; the decoder layers, the final norm and the
    used embedding rows (input and, tied, output) are trained. ``model`` is
    ``Phi4MultimodalForCausalLM`` or, for a text-only corpus, ``Phi3ForCausalLM`` (the same
    decoder under ``model.model``).
    """
    vocabulary = _vocabulary(training)
    remap = torch.full((model.config.vocab_size,), -1, dtype=torch.long)
    remap[vocabulary] = torch.arange(len(vocabulary))
    embedding = model.model.embed_tokens.weight
    rows = torch.nn.Parameter(embedding.detach()[vocabulary].clone())
    features = [_image_features(model, s) for s in training]
    trained = [p for n, p in model.model.named_parameters() if n.startswith(("layers.", "norm."))]
    optimizer = torch.optim.Adam([rows, *trained], lr=LEARNING_RATE)
    schedule = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=STEPS)
    model.train()
    losses: list[float] = []
    for _ in range(STEPS):
        optimizer.zero_grad()
        total = torch.zeros(())
        for sequence, image in zip(training, features, strict=True):
            total = total + _loss(model, sequence, image, rows, remap)
        loss = total / len(training)
        loss.backward()
        optimizer.step()
        schedule.step()
        losses.append(loss.item())
    model.eval()
    with torch.no_grad():
        embedding[vocabulary] = rows.detach()
    return losses


@torch.no_grad()
def _image_features(model: Any, sequence: Sequence) -> torch.Tensor | None:
    """The merged image features of an image sequence (None for text), as the model makes them."""
    image = sequence.image
    if image is None:
        return None
    ids = sequence.input_ids[None, :-1]
    placeholder = torch.zeros((*ids.shape, model.config.hidden_size))
    merged = model.model.embed_tokens_extend(
        ids,
        placeholder,
        image_pixel_values=image.pixel_values,
        image_sizes=image.image_sizes,
        image_attention_mask=image.attention_mask,
    )
    features: torch.Tensor = merged[0][ids[0] == sizes.IMAGE_TOKEN_ID]
    return features


def _loss(
    model: Any,
    sequence: Sequence,
    image: torch.Tensor | None,
    rows: torch.Tensor,
    remap: torch.Tensor,
) -> torch.Tensor:
    ids = sequence.input_ids[:-1]
    is_image = ids == sizes.IMAGE_TOKEN_ID
    embeds = rows[remap[ids.clamp(max=len(remap) - 1)].clamp(min=0)]
    if image is not None:
        embeds = embeds.masked_scatter(is_image[:, None], image)
    targets = sequence.input_ids[1:]
    keep = targets != sizes.IMAGE_TOKEN_ID
    if image is None:
        hidden = model.model(inputs_embeds=embeds[None], use_cache=False).last_hidden_state[0]
    else:
        # Every loss position follows the last placeholder: the image prefix runs without
        # gradients (see the module's docstring) and the text after it attends to its cache.
        start = int(is_image.nonzero().max()) + 1
        with torch.no_grad():
            cache = model.model(inputs_embeds=embeds[None, :start], use_cache=True).past_key_values
        hidden = model.model(
            inputs_embeds=embeds[None, start:], cache=cache, use_cache=True
        ).last_hidden_state[0]
        keep = keep[start:]
        targets = targets[start:]
    logits = hidden[keep] @ rows.T
    return functional.cross_entropy(logits, remap[targets[keep]])


def _vocabulary(training: list[Sequence]) -> torch.Tensor:
    ids = {int(token) for s in training for token in s.input_ids.tolist()}
    ids |= {sizes.ENDOFTEXT_ID, sizes.END_ID}
    ids.discard(sizes.IMAGE_TOKEN_ID)
    return torch.tensor(sorted(ids))


def _ids(tokenizer: Any, text: str) -> torch.Tensor:
    return torch.tensor(tokenizer(text, add_special_tokens=False).input_ids)
