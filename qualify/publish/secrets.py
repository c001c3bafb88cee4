"""Known secret values: where they come from, every form they may take, and finding them.

Sources (:mod:`qualify.plan.secret_sources`): secret-named environment variables,
``--secret-env`` and ``--secrets-file``; and the values the token, key-value and URL-credential
rules found in the run's own files while the bundle was written (a token printed whole in one
log is then caught cut short in another).

A value is looked for in every form it may take in a file (:func:`forms`) and as any fragment
of 12 or more characters of one of them (what a truncation leaves). :class:`SecretIndex` finds
both in one pass: every form is cut into aligned 6-character chunks; any 12-character window of
a form contains one whole chunk, so a hit on a chunk extended both ways decides.
"""

from __future__ import annotations

import base64
import html
import json
import re
import urllib.parse
from collections.abc import Iterable

from qualify.plan.secret_sources import (
    MIN_SECRET_LENGTH,
    KnownSecret,
    from_environment,
    is_secret_name,
    read_secrets_file,
)
from qualify.records import frozen_record

__all__ = [
    "FRAGMENT",
    "MIN_SECRET_LENGTH",
    "Hit",
    "KnownSecret",
    "SecretIndex",
    "forms",
    "from_environment",
    "is_secret_name",
    "read_secrets_file",
]

FRAGMENT = 12
"""A run of this many characters of a known form is a leak (what a truncation leaves)."""
_CHUNK = FRAGMENT // 2
MIN_HARVESTED_LENGTH = 8
"""Values found by a rule are remembered as known secrets from this length on."""


def _base64_forms(value: bytes) -> set[str]:
    """The part of base64(prefix + value + suffix) fixed by ``value`` alone, for the three
    alignments, standard and URL-safe alphabets."""
    found = set()
    for offset in range(3):
        encoded = base64.b64encode(b"\0" * offset + value).decode()
        start = (0, 2, 3)[offset]
        end = (8 * (offset + len(value))) // 6  # the last character whose bits are all value's
        fixed = encoded[start:end]
        found |= {fixed, fixed.translate(str.maketrans("+/", "-_"))}
    return found


def forms(value: str) -> set[str]:
    """``value`` as it may appear in a file: raw, base64 (three alignments, both alphabets), URL
    (single and double, ``+`` for spaces), JSON, HTML and XML escaped, hex, reversed; a
    multi-line value (a PEM key) also line by line."""
    raw = value.encode(errors="surrogateescape")
    found = {value, value.strip(), value[::-1]}
    found |= {json.dumps(value)[1:-1], json.dumps(value, ensure_ascii=False)[1:-1]}
    # As HTML and as XML text escape it (xml.sax.saxutils.escape is html.escape without quotes;
    # it imports urllib.request, and with it ssl and http.client).
    found |= {html.escape(value), html.escape(value, quote=False)}
    # A value read from a file that is not UTF-8 keeps its bytes (surrogateescape) in every form.
    single = urllib.parse.quote(value, safe="", errors="surrogateescape")
    plus = urllib.parse.quote_plus(value, errors="surrogateescape")
    found |= {single, plus, urllib.parse.quote(single)}  # single holds no "/" left to keep
    found |= {raw.hex(), raw.hex().upper()}
    found |= _base64_forms(raw)
    found |= {line.strip() for line in value.splitlines()}
    return {form for form in found if len(form) >= MIN_SECRET_LENGTH}


_Trie = dict[str, "_Trie"]


def _trie_pattern(words: Iterable[str]) -> str:
    """One regular expression matching any of ``words``, as a trie (fast on thousands). The
    words are of one length (the chunks): none is a prefix of another, every word ends at a
    leaf."""
    root: _Trie = {}
    for word in words:
        node = root
        for char in word:
            node = node.setdefault(char, {})
    return _trie_node(root)


def _trie_node(node: _Trie) -> str:
    out = []
    while len(node) == 1:
        ((char, node),) = node.items()
        out.append(re.escape(char))
    if node:
        branches = "|".join(re.escape(char) + _trie_node(node[char]) for char in sorted(node))
        out.append(f"(?:{branches})")
    return "".join(out)


@frozen_record
class Hit:
    """A known form (or a fragment of one) found in a text."""

    start: int
    end: int
    secret: KnownSecret
    whole: bool
    """The whole form, not only a fragment."""


class SecretIndex:
    """Finds every known secret, in any of its forms, whole or as a fragment of 12+ characters."""

    def __init__(self, secrets: Iterable[KnownSecret]):
        self.secrets: list[KnownSecret] = []
        self._chunks: dict[str, list[tuple[str, int, KnownSecret]]] = {}
        seen: set[str] = set()
        for secret in secrets:
            if secret.value in seen or len(secret.value.strip()) < MIN_SECRET_LENGTH:
                continue
            seen.add(secret.value)
            self.secrets.append(secret)
            for form in forms(secret.value):
                for offset in range(0, len(form) - _CHUNK + 1, _CHUNK):
                    chunk = form[offset : offset + _CHUNK]
                    self._chunks.setdefault(chunk, []).append((form, offset, secret))
        self.pattern = re.compile(f"(?=({_trie_pattern(self._chunks)}))") if self._chunks else None
        """Where a chunk of a known form starts (the chunk is group 1); None when none is
        known."""

    def __bool__(self) -> bool:
        return bool(self.secrets)

    def find(self, text: str) -> list[Hit]:
        """Every maximal run of ``text`` equal to a known form or to 12+ characters of one."""
        if self.pattern is None:
            return []
        hits: dict[tuple[int, int], Hit] = {}  # (start, length) -> the hit, whole if one is
        for match in self.pattern.finditer(text):
            position = match.start()
            for form, offset, secret in self._chunks[match.group(1)]:
                left = 0
                while (
                    left < offset
                    and left < position
                    and text[position - left - 1] == form[offset - left - 1]
                ):
                    left += 1
                right = _CHUNK
                while (
                    offset + right < len(form)
                    and position + right < len(text)
                    and text[position + right] == form[offset + right]
                ):
                    right += 1
                length = left + right
                if length >= min(FRAGMENT, len(form)):
                    start = position - left
                    key = (start, length)
                    if key not in hits or length == len(form):
                        hits[key] = Hit(start, start + length, secret, length == len(form))
        return sorted(hits.values(), key=lambda hit: (hit.start, -hit.end))
