"""The texts and chats both sides tokenize: each one aims at a way an export silently drifts.

A pre-tokenizer regex rebuilt by another library splits digits, spaces and apostrophes
differently; a lost ``add_prefix_space`` or BOS shifts every count by one; special tokens inside
text must stay single tokens (or stay text, as the source decides); byte fallback shows on
scripts and emoji the vocabulary lacks.
"""

from __future__ import annotations

from typing import Any

_LONG = " ".join(
    f"Paragraph {n}: the quick brown fox jumps over {n * 7} lazy dogs; it's 3.14159 past noon."
    for n in range(1, 121)
)

PROBES: dict[str, str] = {
    "plain text": "The quick brown fox jumps over the lazy dog.",
    "leading spaces": "   three leading spaces and  two  inside",
    "newlines": "line one\nline two\n\n\nafter three newlines\r\nwindows line\n",
    "tabs and trailing space": "\tindented\twith tabs \t \n",
    "digits": "0 7 42 123 1234 12345 3.14159 -273.15 1e-9 2,718,281 0x1F",
    "contractions": "I'M sure it's fine, you're right, they'LL see, WE'D go, don't",
    "non-Latin scripts": " ".join(
        [
            "Все люди рождаются свободными.",  # noqa: RUF001
            "人人生而自由。",
            "すべての人間は、",
            "모든 인간은",
            "يولد جميع الناس أحرارًا",
            "हिन्दी ไทย עברית",
        ]
    ),
    "emoji": "👋🌍 ✅ 🧑🏽‍💻 👨‍👩‍👧‍👦 🏳️‍🌈 🇫🇷🇯🇵 ❤️‍🔥 1️⃣",
    "combining marks": "Cafe\u0301 Cafe\u0301 A\u030angstro\u0308m n\u0303",
    "code": "def f(x):\n    return {'a': [1, 2], \"b\": x ** 2}  # comment\n",
    "special tokens inside text": "",  # filled per tokenizer: see texts()
    "long text": _LONG,
}

CHATS: tuple[tuple[str, list[dict[str, Any]]], ...] = (
    (
        "system, user",
        [
            {"role": "system", "content": "You are a careful assistant."},
            {"role": "user", "content": "How many tokens is this? Count  spaces too."},
        ],
    ),
    (
        "multi-turn",
        [
            {"role": "user", "content": "Translate 'chat' into French."},
            {"role": "assistant", "content": "« chat » se dit « chat »."},
            {"role": "user", "content": "And the emoji 🐈 ?\nThanks!"},
        ],
    ),
    (
        "one user turn",
        [{"role": "user", "content": "   leading spaces and digits 12345"}],
    ),
)


def texts(special_tokens: list[str]) -> list[str]:
    """The probe texts in ``PROBES`` order; special tokens go inside plain text."""
    embedded = " mid-sentence ".join(special_tokens[:6]) or "<|no special tokens|>"
    inside = f"before {embedded} after"
    return [
        inside if name == "special tokens inside text" else text for name, text in PROBES.items()
    ]


def names() -> list[str]:
    """Probe names, in the order of :func:`texts`."""
    return list(PROBES)
