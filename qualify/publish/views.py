"""Decoded views of a text, with the way back from a view's positions to the original's.

A secret can reach a file wrapped (a terminal or JUnit broke the line), escaped (JSON ``\\/``,
``\\u0041``, HTML ``&#x27;``, URL ``%3A``, once or twice) or coloured (ANSI codes glued to it).
The rules run on views in which those are undone; a match in a view is mapped back to the span
of the original text it came from, so the whole escaped or wrapped span is what gets replaced.

Each view is one pass of substitutions; views stack (a view of a view), and positions map back
through every layer.
"""

from __future__ import annotations

import bisect
import functools
import html
import re
import urllib.parse
from collections.abc import Callable

# Line breaks (real, JSON-escaped, XML character references) and what follows a wrap: the
# indentation and pytest's ``E   `` prefix.
BREAK = re.compile(r"(?:\r?\n|\\r\\n|\\n|&#10;|&#13;&#10;|&#xA;|&#xa;)(?:[ \t]*E {2,})?[ \t]*")
_ESCAPES = re.compile(
    # Every escape starts with one of these: the lookahead lets the scan skip the text between
    # escapes instead of trying each alternative at every position (6x faster on JSON lines).
    r"(?=[%\\&\x1b])(?:"
    r"(?P<percent>(?:%[0-9A-Fa-f]{2})+)"
    r"|\\u(?P<unicode>[0-9A-Fa-f]{4})"
    r"|\\x(?P<hexbyte>[0-9A-Fa-f]{2})"
    r"|\\(?P<escaped>[/\"'\\])"
    r"|(?P<entity>&(?:#[0-9]{1,7}|#[xX][0-9A-Fa-f]{1,6}|[A-Za-z][A-Za-z0-9]{1,30});)"
    r"|(?P<ansi>\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\))"
    r")"
)


_TRIGGERS = ("%", "\\", "&", "\x1b")
ESCAPE_START = re.compile(f"[{re.escape(''.join(_TRIGGERS))}]")
"""Where an escape may start: a text without a match has no decoded view."""


def _decode_escape(match: re.Match[str]) -> str:
    kind = match.lastgroup
    value = match.group(kind or 0)
    if kind == "percent":
        return urllib.parse.unquote(value, errors="surrogateescape")
    if kind in ("unicode", "hexbyte"):
        return chr(int(value, 16))
    if kind == "escaped":
        return value
    if kind == "entity":
        return html.unescape(value)
    return ""  # ANSI colour and window-title sequences


class View:
    """``source`` with every match of ``pattern`` replaced by ``replace(match)``.

    ``text`` is the view; ``span(start, end)`` is the original span of a view span. A position
    inside a replaced piece maps to the whole piece (a match never splits an escape).
    """

    def __init__(
        self,
        source: str,
        pattern: re.Pattern[str],
        replace: Callable[[re.Match[str]], str] | str,
        parent: View | None = None,
    ):
        self.parent = parent
        self._source, self._pattern, self._replace = source, pattern, replace
        self.text = pattern.sub(replace, source)
        self.changed = self.text != source  # (an unknown entity, "&foo;", is kept as it is)

    @functools.cached_property
    def _pieces(self) -> list[tuple[int, int, int, int]]:
        """Replaced pieces, in order: view start, view end, original start, original end (the
        way back, built only when a span is asked for: a match in a view is rare)."""
        pieces = []
        shift = 0  # view position minus original position after the pieces so far
        replace = self._replace
        for match in self._pattern.finditer(self._source):
            replacement = replace if isinstance(replace, str) else replace(match)
            view_start = match.start() + shift
            pieces.append((view_start, view_start + len(replacement), match.start(), match.end()))
            shift += len(replacement) - len(match.group())
        return pieces

    @functools.cached_property
    def _view_starts(self) -> list[int]:
        return [piece[0] for piece in self._pieces]

    def _start(self, index: int) -> int:
        at = bisect.bisect_right(self._view_starts, index) - 1
        if at < 0:
            return index
        _, view_end, original_start, original_end = self._pieces[at]
        if index < view_end:
            return original_start
        return original_end + (index - view_end)

    def _end(self, index: int) -> int:
        """Original end (exclusive) of a non-empty view span ending (exclusive) at ``index``."""
        last = index - 1
        at = bisect.bisect_right(self._view_starts, last) - 1
        if at >= 0:
            _, view_end, _, original_end = self._pieces[at]
            if last < view_end:
                return original_end
        return self._start(last) + 1

    def span(self, start: int, end: int) -> tuple[int, int]:
        """The span of the original text (through every layer) that ``[start, end)`` shows."""
        spans = (self._start(start), self._end(end))
        return self.parent.span(*spans) if self.parent is not None else spans


def collapsed(text: str, parent: View | None = None) -> View:
    """``text`` without line breaks (and the indentation or ``E`` prefix after them)."""
    return View(text, BREAK, "", parent)


def decoded(text: str, parent: View | None = None) -> View:
    """``text`` with one layer of URL, JSON/backslash and HTML escapes undone, ANSI removed."""
    return View(text, _ESCAPES, _decode_escape, parent)


def views(text: str) -> list[tuple[str, View | None]]:
    """Every view worth scanning: the text itself, collapsed, decoded (twice: a value URL-encoded
    twice, or JSON inside HTML) and decoded then collapsed; only those that differ. (Breaks
    written as character references are collapsed in the decoded views, where they are real.)"""
    found: list[tuple[str, View | None]] = [(text, None)]
    if "\n" in text or "\\n" in text:
        view = collapsed(text)
        if view.changed:
            found.append((view.text, view))
    if not any(trigger in text for trigger in _TRIGGERS):
        return found  # no escape starts without one of them: one scan each, not a decoding
    layer = decoded(text)
    for _ in range(2):
        if not layer.changed:
            break
        found.append((layer.text, layer))
        flat = collapsed(layer.text, layer)
        if flat.changed:
            found.append((flat.text, flat))
        layer = decoded(layer.text, layer)
    return found
