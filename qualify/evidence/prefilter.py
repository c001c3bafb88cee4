"""A regular expression's literals, found from its own parse, as a test a line must pass first.

The readers of a line (:mod:`qualify.evidence.oom_parts`, :mod:`qualify.evidence.end_parts`,
:mod:`qualify.evidence.lines`) are alternations of many branches, most starting with ``\\b`` or
a class: ``re`` cannot skip to where a match may start and tries every branch at every position
(memory's words, ``_SAID``, about 0.35 ms on a 230-character line that holds none of them). A
log of distinct lines the scanner passes (a crawler's per-URL "Read timed out" warnings) was
read at about 1.8 ms a line.

:func:`guarded` compiles, beside a pattern, the literals one of which every match of it contains
(each branch's longest run of literal characters, or a set of them where a branch's best part
is an alternation of its own), derived from ``re``'s own parse of the pattern rather than listed
by hand: a line that holds none of them cannot match and is not searched. The test is one search
of an alternation of literals, which ``re`` runs at C speed by the set of their first characters
(on the lowered line where the pattern ignores case). Where only some of a pattern's branches
have literals, the others alone are searched when none of those stands. A pattern with no such
literals (a branch of classes only), or one the parser's form is not known for, is searched as
it is; so is every pattern until its 32nd search (the parse is paid by long texts only).
``tests/test_triage_prefilter.py`` checks every guarded pattern against its own matches on the
corpora's lines.
"""

from __future__ import annotations

import importlib
import re
import sys
from collections.abc import Iterator
from functools import cache
from typing import Any

_parser: Any
_ops: Any
try:  # the parser ``re`` compiles with (private; its form is checked by the tests of every guard)
    _parser = importlib.import_module("re._parser")
    _ops = importlib.import_module("re._constants")
except ImportError:  # pragma: no cover - a Python without it: every pattern searched as it is
    _parser = _ops = None

_MAX = sys.maxsize
_PREPARED_AT = 32
"""The search at which a pattern's literals are found: the parse costs about as much as 10 to 30
searches of the pattern it saves (1 to 8 ms for the readers' largest), so a text of a few lines
(an issue, a short log) is searched as it is and a long log pays the parse once."""
_FEWEST = 3
"""A literal with fewer uncommon word characters than this filters too little to be worth its
search."""
_COMMON = frozenset(
    (  # noqa: SIM905 - a list of words, written as words
        "a all an and any are as at be been by can cannot could err error errors fail failed"
        " failure for from had has have if in into is it its more my no not of on one or our out"
        " some than that the then this to up was when will with would your code data debug"
        " exception exit false file full http https info line limit none null process reached"
        " read request response size status thread true type value warning write"
    ).split()
)
"""Words common in any log line: a literal made of nothing else filters little."""
_COMMON_PARTS = frozenset(
    word[start:stop]
    for word in _COMMON
    for start in range(len(word))
    for stop in range(start + 2, len(word) + 1)
)
"""And their parts: a common word's end is what ``re`` leaves of it after taking its first
letter out of an alternation ("error|exception" parses as "e" then "rror|xception")."""
_TOKENS = re.compile(r"[^\W_]+")

Literal = tuple[str, bool]
"""A literal's text and whether it is matched ignoring case (its text then lowered)."""


@cache
def _weight(literal: Literal) -> int:
    """How much a literal filters: its characters less its common words and its spaces
    (``" to "`` 0, ``"memory"`` 6, ``"error(12)"`` 4); a character outside ASCII counts
    twice (``"系统"``, "system", 4)."""
    text = literal[0]
    common = sum(len(token) for token in _TOKENS.findall(text) if token.lower() in _COMMON_PARTS)
    wide = sum(not char.isascii() for char in text)  # a CJK word is two characters or fewer
    return len(text) - common - text.count(" ") + wide


def _best(candidates: list[frozenset[Literal]]) -> frozenset[Literal] | None:
    """The candidate set that filters best: its least filtering literal good enough (up to
    :data:`_FEWEST`), then the fewest literals (``"mem"`` rather than ``"error"`` or
    ``"exception"`` where both must stand), then the longest."""
    if not candidates:
        return None
    return max(
        candidates,
        key=lambda found: (
            min(*map(_weight, found), _FEWEST),
            -len(found),
            min(map(_weight, found)),
        ),
    )


def _required(items: Any, icase: bool) -> frozenset[Literal] | None:
    """Literals one of which every match of the sequence ``items`` contains, or None."""
    candidates: list[frozenset[Literal]] = []
    run: list[str] = []

    def close() -> None:
        if run:
            candidates.append(frozenset({("".join(run), icase)}))
            run.clear()

    for op, av in items:
        if op is _ops.LITERAL:
            run.append(chr(av).lower() if icase else chr(av))
            continue
        close()
        found: frozenset[Literal] | None = None
        if op is _ops.SUBPATTERN:
            _group, add_flags, del_flags, inner = av
            inner_icase = (icase or bool(add_flags & re.IGNORECASE)) and not (
                del_flags & re.IGNORECASE
            )
            found = _required(inner, inner_icase)
        elif op is _ops.ATOMIC_GROUP:
            found = _required(av, icase)
        elif op is _ops.BRANCH:
            branches = [_required(branch, icase) for branch in av[1]]
            if all(branch is not None for branch in branches):
                found = frozenset().union(*branches)  # type: ignore[arg-type]
        elif op in (_ops.MAX_REPEAT, _ops.MIN_REPEAT, _ops.POSSESSIVE_REPEAT):
            low, _high, inner = av
            if low >= 1:
                found = _required(inner, icase)
        if found:
            candidates.append(found)
    close()
    return _best(candidates)


def _parse(pattern: re.Pattern[str]) -> tuple[Any, bool] | None:
    """``re``'s parse of ``pattern`` and whether it ignores case, or None."""
    if _parser is None or not isinstance(pattern.pattern, str):
        return None
    try:
        parsed = _parser.parse(pattern.pattern, pattern.flags)
    except Exception:  # a form this reader does not know: no prefilter
        return None
    return parsed.data, bool(parsed.state.flags & re.IGNORECASE)


def _filtering(items: Any, icase: bool) -> frozenset[Literal] | None:
    """:func:`_required` of ``items`` where it filters (each literal holds :data:`_FEWEST`)."""
    try:
        found = _required(items, icase)
    except (TypeError, ValueError, AttributeError, IndexError):
        return None
    if not found or min(map(_weight, found)) < _FEWEST:
        return None
    return found


def literals(pattern: re.Pattern[str]) -> frozenset[Literal] | None:
    """Literals one of which every match of ``pattern`` contains, or None where the pattern's
    parse gives none that filters (each must hold a word that is not a common one)."""
    parsed = _parse(pattern)
    return None if parsed is None else _filtering(*parsed)


def _fewest(found: frozenset[Literal]) -> tuple[tuple[str, ...], bool]:
    """The literals to search for (one that holds another is found when the other is, and is
    dropped) and whether to search the lowered string (when any is matched ignoring case: the
    others are then lowered too, which finds them wherever they are)."""
    lowered = any(icase for _, icase in found)
    texts = {text.lower() if lowered else text for text, _ in found}
    kept = [text for text in texts if not any(other != text and other in text for other in texts)]
    return tuple(sorted(kept)), lowered


_GLOBAL_FLAGS = re.compile(r"\(\?[aiLmsux]+\)")


def _top_branches(text: str) -> list[str]:
    """``text`` split at its top-level ``|`` (outside groups, classes and escapes)."""
    branches, depth, start, at, in_class = [], 0, 0, 0, False
    while at < len(text):
        char = text[at]
        if char == "\\":
            at += 2
            continue
        if in_class:
            in_class = char != "]"
        elif char == "[":
            in_class = True
            if text.startswith("^", at + 1):
                at += 1
            if text.startswith("]", at + 1):
                at += 1  # a "]" first in a class is one of its characters
        elif char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        elif char == "|" and depth == 0:
            branches.append(text[start:at])
            start = at + 1
        at += 1
    branches.append(text[start:])
    return branches


def _split(pattern: re.Pattern[str]) -> tuple[frozenset[Literal] | None, re.Pattern[str] | None]:
    """The literals of the branches of ``pattern`` that have some, and the rest of its branches
    as a pattern of their own (None where there are none): where none of those literals stands,
    only the rest can match, and they match as they would in the whole (the same order, the
    same leftmost match). Only for a pattern without groups (the rest's would be numbered
    otherwise) and not verbose, whose parse keeps its branches as written."""
    parsed = _parse(pattern)
    if parsed is None:
        return None, None
    items, icase = parsed
    whole = _filtering(items, icase)
    if whole is not None:
        return whole, None
    if pattern.groups or pattern.flags & re.VERBOSE:
        return None, None
    if len(items) != 1 or items[0][0] is not _ops.BRANCH:
        return None, None
    flags = _GLOBAL_FLAGS.match(pattern.pattern)  # (in ``pattern.flags`` too)
    text = pattern.pattern[flags.end() :] if flags is not None else pattern.pattern
    texts = _top_branches(text)
    alternatives = items[0][1][1]
    if len(texts) != len(alternatives):
        return None, None
    good: set[Literal] = set()
    rest: list[str] = []
    for branch, alternative in zip(texts, alternatives, strict=True):
        found = _filtering(alternative, icase)
        if found is None:
            rest.append(branch)
        else:
            good |= found
    if not good or not rest:
        return None, None
    return frozenset(good), re.compile("|".join(rest), pattern.flags)


class Guarded:
    """A compiled pattern searched only where one of its literals (:func:`literals`) stands
    within the bounds searched, or, where only some of its branches have literals, only its
    other branches searched where none of those stands (:func:`_split`). ``search``,
    ``match``, ``fullmatch``, ``finditer`` and ``findall`` are guarded and return what the
    pattern's own would; anything else is the pattern's."""

    __slots__ = ("_anchored", "_lowered", "_rest", "_test", "pattern", "ready", "uses")

    def __init__(self, pattern: re.Pattern[str]) -> None:
        self.pattern = pattern
        self.ready = False  # the literals are found at the :data:`_PREPARED_AT`-th search
        self.uses = 0
        self._test: re.Pattern[str] | None = None
        self._rest: re.Pattern[str] | None = None
        self._lowered = self._anchored = False

    def _prepare(self) -> None:
        found, self._rest = _split(self.pattern)
        if found is not None:
            texts, self._lowered = _fewest(found)
            self._test = re.compile("|".join(map(re.escape, texts)))
        # the rest's every branch anchored at the string's start: it can match there only
        self._anchored = (
            self._rest is not None
            and not self._rest.flags & re.MULTILINE
            and all(branch.startswith("^") for branch in _top_branches(self._rest.pattern))
        )
        self.ready = True

    @property
    def test(self) -> re.Pattern[str] | None:
        """The search for the literals (None: the pattern is searched as it is)."""
        if not self.ready:
            self._prepare()
        return self._test

    @property
    def rest(self) -> re.Pattern[str] | None:
        """The branches without literals, searched where none of the others' stands."""
        if not self.ready:
            self._prepare()
        return self._rest

    @property
    def lowered(self) -> bool:
        """Whether the literals are searched for in the lowered string."""
        if not self.ready:
            self._prepare()
        return self._lowered

    @property
    def anchored(self) -> bool:
        """Whether the rest can match at the string's start only."""
        if not self.ready:
            self._prepare()
        return self._anchored

    def _which(self, string: str, pos: int, endpos: int) -> re.Pattern[str] | None:
        """The pattern to search ``string`` with, or None where nothing can match."""
        if not self.ready:
            self.uses += 1
            if self.uses < _PREPARED_AT:
                return self.pattern
            self._prepare()
        test = self._test
        if test is None:
            return self.pattern
        if self._lowered:  # (lowering keeps every index of an ASCII string, not of every string)
            if not string.isascii():
                return self.pattern
            if test.search(string.lower(), pos, endpos) is not None:
                return self.pattern
        elif test.search(string, pos, endpos) is not None:
            return self.pattern
        return self._rest

    def search(self, string: str, pos: int = 0, endpos: int = _MAX) -> re.Match[str] | None:
        which = self._which(string, pos, endpos)
        if which is None:
            return None
        if which is self._rest and self._anchored:  # ("^" matches at 0 only, whatever ``pos``)
            return which.match(string, pos, endpos) if pos == 0 else None
        return which.search(string, pos, endpos)

    def match(self, string: str, pos: int = 0, endpos: int = _MAX) -> re.Match[str] | None:
        which = self._which(string, pos, endpos)
        return None if which is None else which.match(string, pos, endpos)

    def finditer(self, string: str, pos: int = 0, endpos: int = _MAX) -> Iterator[re.Match[str]]:
        which = self._which(string, pos, endpos)
        return iter(()) if which is None else which.finditer(string, pos, endpos)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.pattern, name)


def guarded(pattern: str, flags: int = 0) -> Guarded:
    """``re.compile(pattern, flags)``, searched only where one of its literals stands (see the
    module's docstring)."""
    return Guarded(re.compile(pattern, flags))
