"""The corpus the model is fitted to and the parity prompts are cut from.

Plain documents and chats are the embedded family's (``tiny_engine.corpus``); the image chats
are Phi-4-multimodal's own: the same question about each generated image, answered
differently, so the answer can only come from the image.
"""

from __future__ import annotations

from dataclasses import dataclass

from tiny_engine.corpus import CHAT_SAMPLES, DOCUMENTS

from phi4_engine.images import IMAGES, ImageSpec

IMAGE_QUESTION = "What does this picture show?"
IMAGE_ANSWERS = {
    "red-square": "A red square in the middle of a pale background, with a soft shadow of noise.",
    "blue-stripes": "Blue stripes run from top to bottom across a dark night sky, wide and even.",
    "green-disc": "A green disc sits in the centre of a tall cream page, like a leaf on paper.",
}


@dataclass(frozen=True)
class ImageChat:
    """One conversation about one generated image."""

    image: ImageSpec
    messages: list[dict[str, str]]


def image_chats() -> list[ImageChat]:
    """One chat per generated image; the user turn starts with the image placeholder(s)."""
    return [
        ImageChat(
            spec,
            [
                {"role": "user", "content": IMAGE_QUESTION},
                {"role": "assistant", "content": IMAGE_ANSWERS[spec.name]},
            ],
        )
        for spec in IMAGES
    ]


__all__ = ["CHAT_SAMPLES", "DOCUMENTS", "IMAGE_QUESTION", "ImageChat", "image_chats"]
