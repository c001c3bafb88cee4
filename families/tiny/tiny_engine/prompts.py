"""The parity cases: beginnings of the corpus documents and chat turns awaiting an answer.

Plain cases give the first words of a document; chat cases render a conversation without
its last (assistant) turn through the tokenizer's chat template, as a serving stack would.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

from tiny_engine import corpus

PLAIN_PREFIX_WORDS = 6


@dataclass(frozen=True)
class Prompt:
    """One case: its id, the text the model sees and that text's token ids."""

    case_id: str
    text: str
    input_ids: tuple[int, ...]


def parity_prompts(tokenizer: Any, count: int) -> list[Prompt]:
    """The first ``count`` cases, alternating plain and chat so that any count mixes both."""
    plain = [
        (f"plain-{index}", " ".join(document.split(" ")[:PLAIN_PREFIX_WORDS]))
        for index, document in enumerate(corpus.DOCUMENTS)
    ]
    chat = [
        (
            f"chat-{index}",
            tokenizer.apply_chat_template(sample[:-1], add_generation_prompt=True, tokenize=False),
        )
        for index, sample in enumerate(corpus.CHAT_SAMPLES)
    ]
    pairs = itertools.zip_longest(plain, chat)
    ordered = [case for pair in pairs for case in pair if case is not None]
    if not 1 <= count <= len(ordered):
        raise ValueError(f"prompts={count} must be between 1 and {len(ordered)}")
    return [
        Prompt(case_id, text, tuple(tokenizer(text, add_special_tokens=False).input_ids))
        for case_id, text in ordered[:count]
    ]


def max_prompts() -> int:
    """How many distinct cases there are."""
    return len(corpus.DOCUMENTS) + len(corpus.CHAT_SAMPLES)
