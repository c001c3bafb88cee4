"""Known secret values: where they come from, every form they may take, and finding them.

Sources, in the order they are trusted:
- environment variables whose names look secret (:func:`is_secret_name`), plus the names given
  with ``--secret-env`` whatever they look like;
- a file of extra values (``--secrets-file``, one value per line) for CI systems that mask
  their own secrets and can write them out;
- values the token, key-value and URL-credential rules found in the run's own files while the
  bundle was written (a token printed whole in one log is then caught cut short in another).

A value is looked for in every form it may take in a file (:func:`forms`) and as any fragment
of 12 or more characters of one of them (what a truncation leaves). :class:`SecretIndex` finds
both in one pass: every form is cut into aligned 6-character chunks; any 12-character window of
a form contains one whole chunk, so a hit on a chunk extended both ways decides.
"""

from __future__ import annotations

import base64
import dataclasses
import html
import json
import re
import urllib.parse
from collections.abc import Iterable, Mapping
from pathlib import Path

from qualify.errors import UsageError

MIN_SECRET_LENGTH = 6
"""Shorter values (``SESSION=1``) would redact ordinary text everywhere."""
FRAGMENT = 12
"""A run of this many characters of a known form is a leak (what a truncation leaves)."""
_CHUNK = FRAGMENT // 2
MIN_HARVESTED_LENGTH = 8
"""Values found by a rule are remembered as known secrets from this length on."""

SECRET_WORDS = frozenset(
    {
        "TOKEN", "TOKENS", "SECRET", "SECRETS", "KEY", "KEYS", "APIKEY", "PASSWORD",
        "PASSWORDS", "PASSWD", "PASSPHRASE", "PASS", "PWD", "PSW", "CREDENTIAL", "CREDENTIALS",
        "CREDS", "AUTH", "COOKIE", "COOKIES", "SESSION", "PRIVATE", "SIGNATURE", "PAT", "DSN",
        "SALT", "WEBHOOK",
    }
)  # fmt: skip
"""A variable is secret when one of its ``_``-separated words is one of these (``SMTP_PASS``,
``MYSQL_PWD``, ``GH_PAT``; not ``TOKENIZER``, ``AUTHOR``, ``PATH`` or ``PASSTHROUGH``)..."""
SECRET_SUFFIXES = ("TOKEN", "SECRET", "PASSWORD", "PASSWD", "PASSPHRASE", "APIKEY")
"""... or when a word ends with one of these (``GHTOKEN``, ``DBPASSWORD``)..."""
SECRET_URL_NAMES = frozenset({"DATABASE_URL", "DATABASE_URI", "CONNECTION_STRING"})
"""... or when it names a database connection (whole value secret)..."""
_URL_SUFFIX = ("_URL", "_URI", "_DSN", "_CONNECTION_STRING", "_CONN_STR")
_URL_CREDENTIALS = re.compile(r"://[^\s/@]*:[^\s/@]+@")
"""... or when it is any ``*_URL``/``*_URI`` whose value carries ``user:password@``."""
NOT_SECRET_NAMES = frozenset({"PWD", "OLDPWD"})
OWN_PREFIX = "QUALIFY_"
"""qualify's own variables (run paths, family options given on its command line, recorded in
the audit) are not secret by name; ``--secret-env`` still makes one secret."""


def is_secret_name(name: str, value: str) -> bool:
    """Whether an environment variable's name says its value is secret."""
    upper = name.upper()
    if upper in NOT_SECRET_NAMES or upper.startswith(OWN_PREFIX):
        return False
    words = [word for word in re.split(r"[^A-Z0-9]+", upper) if word]
    if any(word in SECRET_WORDS or word.endswith(SECRET_SUFFIXES) for word in words):
        return True
    if upper in SECRET_URL_NAMES or upper.endswith("DATABASE_URL"):  # *_DSN: a secret word
        return True
    return upper.endswith(_URL_SUFFIX) and bool(_URL_CREDENTIALS.search(value))


@dataclasses.dataclass(frozen=True)
class KnownSecret:
    """A value to redact wherever it appears, and where it came from (no value in ``origin``)."""

    value: str
    origin: str
    """``env GH_TOKEN``, ``secrets file line 3``, ``github-token found in stdout.log``."""


def from_environment(
    environ: Mapping[str, str], extra_names: Iterable[str] = ()
) -> list[KnownSecret]:
    """The values of secret-looking variables of ``environ`` and of ``extra_names``."""
    chosen = set(extra_names)
    found = []
    for name, value in sorted(environ.items()):
        if len(value.strip()) < MIN_SECRET_LENGTH:
            continue
        if name in chosen or is_secret_name(name, value):
            found.append(KnownSecret(value, f"env {name}"))
    return found


def read_secrets_file(path: Path) -> list[KnownSecret]:
    """One value per line (the line break removed; blank lines skipped)."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise UsageError(
            f"--secrets-file {str(path)!r} cannot be read ({exc.strerror or exc})"
        ) from None
    text = data.decode(errors="surrogateescape")
    return [
        KnownSecret(line, f"secrets file line {number}")
        for number, line in enumerate(text.splitlines(), 1)
        if len(line.strip()) >= MIN_SECRET_LENGTH
    ]


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


@dataclasses.dataclass(frozen=True)
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
        self._pattern = re.compile(f"(?=({_trie_pattern(self._chunks)}))") if self._chunks else None

    def __bool__(self) -> bool:
        return bool(self.secrets)

    def find(self, text: str) -> list[Hit]:
        """Every maximal run of ``text`` equal to a known form or to 12+ characters of one."""
        if self._pattern is None:
            return []
        hits: dict[tuple[int, int], Hit] = {}  # (start, length) -> the hit, whole if one is
        for match in self._pattern.finditer(text):
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
