"""Byte-level shortcuts for the ``top_logprobs`` array of a parity file's line.

Why: ``top_logprobs`` is most of a line (k entries at every generated step) and the standard
library's json spends nearly all of a line's parse time on its floats
(``benchmarks/bench_compare.py``). Only the divergence
step's top-k is ever needed, so the array is found as a byte span, replaced by ``null`` for
the parse of the rest, and later parsed only up to the step that is needed.
"""

from __future__ import annotations

import json
import re

_KEY = b'"top_logprobs"'
# The array of arrays of arrays ends with "]]]"; what follows must be the next key or the
# end of the object. A "]]]" inside a token's text fails one of the checks (or the caller's
# parse of the rest) and sends the line to a full parse.
_ARRAY_END = b"]]]"
_AFTER_VALUE = re.compile(rb'\s*(?:,\s*"(?:[^"\\]|\\.)*"\s*:|\}\s*$)')
_EMPTY_ARRAY = re.compile(rb"\[\s*\]")
_WHITESPACE = b" \t\r\n"
_SPACE = re.compile(r"[ \t\r\n]*")
_DECODER = json.JSONDecoder()


def find_topk_span(line: bytes) -> tuple[int, int] | None:
    """Byte span ``[start, end)`` of the ``top_logprobs`` array, or None when unsure.

    A span is returned only when it starts with ``[``, ends with ``]``, its brackets balance
    and the next key or the closing brace follows; the caller still checks that the rest
    parses with the key at the top level. None sends the caller to a full parse, which is
    always right, only slower.
    """
    key_at = line.find(_KEY)
    if key_at < 0:
        return None
    colon = _skip_whitespace(line, key_at + len(_KEY))
    if line[colon : colon + 1] != b":":
        return None
    start = _skip_whitespace(line, colon + 1)
    empty = _EMPTY_ARRAY.match(line, start)
    if empty is not None:
        return (start, empty.end()) if _AFTER_VALUE.match(line, empty.end()) else None
    if line[start : start + 1] != b"[":
        return None
    position = start
    while (found := line.find(_ARRAY_END, position)) >= 0:
        end = found + len(_ARRAY_END)
        if _AFTER_VALUE.match(line, end) and _balanced(line, start, end):
            return start, end
        position = found + 1
    return None


def nth_element(array: bytes, index: int) -> object | None:
    """Element ``index`` of the JSON array ``array`` (None past its end).

    Parses only the elements before it: a divergence early in a long generation costs
    little. Raises ValueError (json.JSONDecodeError, UnicodeDecodeError) on bad JSON.
    """
    text = array.decode()
    if not text.startswith("["):
        raise json.JSONDecodeError("Expecting '['", text, 0)
    position = _after_space(text, 1)
    if text.startswith("]", position):
        return None
    current = 0
    while True:
        value: object
        value, position = _DECODER.raw_decode(text, position)
        if current == index:
            return value
        position = _after_space(text, position)
        if text.startswith("]", position):
            return None
        if not text.startswith(",", position):
            raise json.JSONDecodeError("Expecting ',' delimiter", text, position)
        position = _after_space(text, position + 1)
        current += 1


def _after_space(text: str, position: int) -> int:
    match = _SPACE.match(text, position)
    return position if match is None else match.end()


def _skip_whitespace(line: bytes, position: int) -> int:
    while position < len(line) and line[position] in _WHITESPACE:
        position += 1
    return position


def _balanced(line: bytes, start: int, end: int) -> bool:
    return line.count(b"[", start, end) == line.count(b"]", start, end)
