"""Parity cases: document beginnings, text chats and image chats, each tokenized once.

An image chat's user turn starts with as many image placeholder tokens as the image yields
(``images.num_image_tokens``), as Phi-4-multimodal's processor lays them out.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from phi4_engine import corpus, images
from phi4_engine.images import ImageInputs

PLAIN_PREFIX_WORDS = 6
IMAGE_TOKEN = "<|endoftext10|>"
PLAIN_CASES = 4
CHAT_CASES = 3
# A text-only model (Phi-4-mini) takes as many cases from the texts alone.
TEXT_ONLY_CASES = (6, 4)


@dataclass(frozen=True)
class Prompt:
    """One case: id, the text the model sees (placeholders collapsed), ids and its image."""

    case_id: str
    text: str
    input_ids: tuple[int, ...]
    image: ImageInputs | None = None


def image_content(spec: images.ImageSpec, text: str) -> tuple[str, ImageInputs]:
    """The user turn for ``spec``: its placeholders, then ``text``; and the image inputs."""
    inputs = images.preprocess(images.draw(spec))
    return IMAGE_TOKEN * inputs.num_tokens + text, inputs


def parity_prompts(tokenizer: Any, count: int, *, images: bool = True) -> list[Prompt]:
    """``count`` cases: four plain, three chats, then the image chats, interleaved so that
    any count of at least three holds an image chat; for a text-only model (``images=False``)
    six plain and four chats instead."""
    plain_count, chat_count = (PLAIN_CASES, CHAT_CASES) if images else TEXT_ONLY_CASES
    cases = [_plain(tokenizer, i) for i in range(plain_count)]
    chats = [_chat(tokenizer, i) for i in range(chat_count)]
    pictures = [_image(tokenizer, chat) for chat in corpus.image_chats()] if images else []
    ordered = []
    for index in range(max(len(cases), len(chats), len(pictures))):
        for group in (pictures, cases, chats):
            if index < len(group):
                ordered.append(group[index])
    if not 1 <= count <= len(ordered):
        raise ValueError(f"prompts={count} must be between 1 and {len(ordered)}")
    return ordered[:count]


def max_prompts() -> int:
    """How many distinct cases there are."""
    return PLAIN_CASES + CHAT_CASES + len(corpus.image_chats())


def _plain(tokenizer: Any, index: int) -> Prompt:
    text = " ".join(corpus.DOCUMENTS[index].split(" ")[:PLAIN_PREFIX_WORDS])
    return Prompt(f"plain-{index}", text, _ids(tokenizer, text))


def _chat(tokenizer: Any, index: int) -> Prompt:
    messages = corpus.CHAT_SAMPLES[index][:-1]
    text = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    return Prompt(f"chat-{index}", text, _ids(tokenizer, text))


def _image(tokenizer: Any, chat: corpus.ImageChat) -> Prompt:
    content, inputs = image_content(chat.image, chat.messages[0]["content"])
    messages = [{"role": "user", "content": content}]
    text = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    shown = text.replace(IMAGE_TOKEN * inputs.num_tokens, f"<image {chat.image.name}>")
    return Prompt(f"image-{chat.image.name}", shown, _ids(tokenizer, text), inputs)


def _ids(tokenizer: Any, text: str) -> tuple[int, ...]:
    return tuple(tokenizer(text, add_special_tokens=False).input_ids)
