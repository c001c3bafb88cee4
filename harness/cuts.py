"""Cuts of a log's text that never fall inside a value.

A cut inside a value (a token, a password) leaves a piece of it on either side, each maybe too
short for the sanitizer to recognize as part of a known value (it redacts fragments of 12+
characters). So every cut qualify makes of what the E2E wrote (the head and tail of a long log,
the end of stderr it quotes, a message or text it shortens, here in the harness's plugin or in
qualify) is moved to a line's end, or a word's, within :data:`SEAM`; where there is none,
:data:`SEAM` more is left out: never a word in two pieces. (Standard library only: the harness
runs in the E2E's interpreter.)
"""

from __future__ import annotations

from typing import AnyStr

SEAM = 256
"""How far from a cut to look for a line or word boundary to cut at instead."""
_LINE = ("\n",)
_WORD = (" ", "\t", "\r", "\n")


def seam(piece: AnyStr, last: bool) -> int:
    """Where to cut ``piece`` (the text before a cut when ``last``, after it otherwise): just
    past its last (first) line end, else its last (first) white space, else all of it left out
    (``len(piece)`` when ``last``, 0 otherwise: the cut moves by the whole piece)."""
    for separators in (_LINE, _WORD):
        positions = []
        for separator in separators:
            needle = separator.encode() if isinstance(piece, bytes) else separator
            positions.append(piece.rfind(needle) if last else piece.find(needle))
        found = [position for position in positions if position >= 0]
        if found:
            return (max(found) + 1) if last else (min(found) + 1)
    return 0 if last else len(piece)


def tail(text: AnyStr, limit: int) -> AnyStr:
    """At most the last ``limit`` characters (bytes) of ``text``, starting at a boundary."""
    if len(text) <= limit:
        return text
    return after_cut(text[len(text) - limit :])


def after_cut(piece: AnyStr) -> AnyStr:
    """``piece``, whose start is a cut (the text before it left out), from its first boundary
    within :data:`SEAM` on."""
    return piece[seam(piece[:SEAM], last=False) :]


def head(text: AnyStr, limit: int) -> AnyStr:
    """At most the first ``limit`` characters (bytes) of ``text``, ending at a boundary."""
    if len(text) <= limit:
        return text
    piece = text[:limit]
    end = piece[-SEAM:]
    return piece[: len(piece) - len(end) + seam(end, last=True)]
