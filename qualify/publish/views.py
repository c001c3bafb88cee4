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
import itertools
import re
import urllib.parse
from collections.abc import Callable

INVISIBLE = (
    # A character that shows nothing between two visible ones: a control character (line
    # feed, carriage return, tab, backspace, form feed, NUL, DEL, ...) but ESC, where an ANSI
    # code starts (the decoded views remove those whole) ...
    r"[\x00-\x1a\x1c-\x1f\x7f]"
    # ... JSON- or backslash-escaped ...
    r"|\\[nrtbfv]"
    # ... an XML character reference (those XML can hold; the decoded views undo every one) ...
    r"|&#(?:9|1[03]);|&#[xX](?:9|[aAdD]);"
    # ... or pytest's JUnit spelling of one XML cannot hold (``#x08``; not ``#x1B``: ESC).
    r"|#x(?:0[0-9A-Fa-f]|1[0-9ACDEFacdef]|7[Ff])"
)
"""What may stand between the two halves of a value split by the writer, not by the value: a
line break (a wrap, two writes), a carriage return (a progress line redrawn), a tab (a
column), a backspace (a spinner), in any spelling a channel gives it. A value is never made
of these, so a view without them (:func:`collapsed`) shows the halves side by side."""
# Runs of invisible characters (with the spaces around them) and what follows a wrap: the
# indentation, pytest's ``E   `` prefix and a diff's ``+``/``-``/``?`` marker.
# Every match starts with a space or an invisible character's first: the lookahead lets the
# scan pass over the other positions at one test each (twice as fast on a JUnit file).
BREAK = re.compile(
    r"(?=[ \x00-\x1a\x1c-\x1f\x7f\\&#])"
    rf"(?:[ ]*(?:{INVISIBLE}))+(?:[ \t]*E {{2,}})?[ \t]*(?:[-+?] [ \t]*)?"
)
BREAK_HINT = re.compile(r"[\x00-\x1a\x1c-\x1f\x7f]|\\[nrtbfv]|&#|#x[017]")
"""Where a break may be: a text without one has no collapsed view."""
BREAK_CONTROL = re.compile(r"[\x00-\x1a\x1c-\x1f\x7f]")
"""``BREAK_HINT``'s control characters: all it matches in a text without a backslash, ``&#``
or ``#x`` (found by a scan of one class, not an alternation tried at every character)."""


@functools.cache
def _escaped_line_break() -> re.Pattern[str]:
    return re.compile(r"\\r\\n|\\n")


_ESCAPES = re.compile(
    # Every escape starts with one of these: the lookahead lets the scan skip the text between
    # escapes instead of trying each alternative at every position (6x faster on JSON lines).
    r"(?=[%\\&\x1b]|#x1)(?:"
    r"(?P<percent>(?:%[0-9A-Fa-f]{2})+)"
    r"|\\u(?P<unicode>[0-9A-Fa-f]{4})"
    r"|\\x(?P<hexbyte>[0-9A-Fa-f]{2})"
    r"|\\(?P<escaped>[/\"'\\])"
    r"|(?P<entity>&(?:#[0-9]{1,7}|#[xX][0-9A-Fa-f]{1,6}|[A-Za-z][A-Za-z0-9]{1,30});)"
    # ANSI colour and window title; pytest's JUnit writes ESC as the text "#x1B".
    r"|(?P<ansi>(?:\x1b|#x1[bB])\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\))"
    r")"
)


_TRIGGERS = ("%", "\\", "&", "\x1b", "#x1")
ESCAPE_STARTS = _TRIGGERS
"""What an escape starts with (``ESCAPE_START``'s alternatives)."""
ESCAPE_START = re.compile("|".join(re.escape(trigger) for trigger in _TRIGGERS))
"""Where an escape may start: a text without a match has no decoded view."""
LINE_END = re.compile(r"\r|\n|\\[rn]|&#1[03];|&#x[aAdD];")
"""A line's end, written or escaped: a value never continues past one (a wrapped value is
found in a joined view, where it is redacted as it stands)."""


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
        joins_lines: bool = False,
    ):
        self.parent = parent
        self.joins_lines: bool = joins_lines or (parent is not None and parent.joins_lines)
        """Text from different lines stands side by side in this view."""
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


_FRAMES = "│┃║|"
_FRAME = re.compile(f"[{_FRAMES}]")
TABLE_FRAMES = tuple(_FRAMES)
"""The characters a table's frame is drawn with: a text without one has no table view."""


class TableView:
    """The columns of the tables drawn in ``source`` (box drawing or ``|`` rules), each read
    down its rows: a value too wide for its cell is wrapped onto the next row of the same
    column (rich, tabulate), with the other columns' cells and the frame in between. A table is
    two or more consecutive lines with the same number of frame characters; each column is its
    cells' stripped contents joined, one column a line.

    ``span`` maps back like :class:`View`: a match down a column maps to the original from its
    first character's row to its last's (the cells between are replaced with it)."""

    def __init__(self, source: str, parent: View | None = None):
        self.parent = parent
        self._pieces: list[tuple[int, int]] = []  # (view start, original start), in view order
        parts: list[str] = []
        length = 0
        for block in _table_blocks(source):
            for column in zip(*block, strict=True):
                for start, end in column:
                    if end > start:
                        self._pieces.append((length, start))
                        parts.append(source[start:end])
                        length += end - start
                parts.append("\n")
                length += 1
        self.text = "".join(parts)
        self.changed = bool(self._pieces)
        self.joins_lines: bool = True
        self._starts = [piece[0] for piece in self._pieces]

    def _original(self, index: int) -> int:
        at = max(0, bisect.bisect_right(self._starts, index) - 1)
        view_start, original_start = self._pieces[at]
        return original_start + (index - view_start)

    def span(self, start: int, end: int) -> tuple[int, int]:
        """The span of the original text (through every layer) that ``[start, end)`` shows."""
        spans = (self._original(start), self._original(end - 1) + 1)
        return self.parent.span(*spans) if self.parent is not None else spans


def _table_blocks(text: str) -> list[list[list[tuple[int, int]]]]:
    """Tables in ``text``: blocks of rows, each row its cells' (start, end) in ``text``, the
    contents stripped of spaces (and of pytest's ``E`` prefix before the frame)."""
    blocks: list[list[list[tuple[int, int]]]] = []
    block: list[list[tuple[int, int]]] = []
    position = 0
    for line in text.split("\n"):
        frames = [match.start() for match in _FRAME.finditer(line)]
        row = None
        if frames:
            edges = [-1, *frames, len(line)]
            row = []
            for left, right in itertools.pairwise(edges):
                cell = line[left + 1 : right]
                stripped = cell.strip()
                start = position + left + 1 + (cell.find(stripped) if stripped else 0)
                row.append((start, start + len(stripped)))
        if row is not None and block and len(block[0]) == len(row):
            block.append(row)
        else:
            if len(block) > 1:
                blocks.append(block)
            block = [row] if row is not None else []
        position += len(line) + 1
    if len(block) > 1:
        blocks.append(block)
    return blocks


AnyView = View | TableView


def collapsed(text: str, parent: View | None = None) -> View:
    """``text`` without line breaks, carriage returns, tabs, backspaces and every other
    :data:`INVISIBLE` character (written or escaped, with the spaces around them, and the
    indentation or ``E`` prefix after them)."""
    return View(text, BREAK, "", parent, joins_lines=True)


def decoded(text: str, parent: View | None = None) -> View:
    """``text`` with one layer of URL, JSON/backslash and HTML escapes undone, ANSI removed."""
    return View(text, _ESCAPES, _decode_escape, parent)


def views(text: str) -> list[tuple[str, AnyView | None]]:
    """Every view worth scanning: the text itself, collapsed, decoded (twice: a value URL-encoded
    twice, or JSON inside HTML), decoded then collapsed, and the tables' columns of the most
    decoded one (its escaped line breaks made real: a table printed in a repr); only those that
    differ. (Breaks written as character references are collapsed in the decoded views, where
    they are real.)"""
    found: list[tuple[str, AnyView | None]] = [(text, None)]
    if BREAK_HINT.search(text):
        view = collapsed(text)
        if view.changed:
            found.append((view.text, view))
    last: tuple[str, View | None] = (text, None)
    if any(trigger in text for trigger in _TRIGGERS):
        layer = decoded(text)
        for _ in range(2):
            if not layer.changed:
                break
            found.append((layer.text, layer))
            last = (layer.text, layer)
            flat = collapsed(layer.text, layer)
            if flat.changed:
                found.append((flat.text, flat))
            layer = decoded(layer.text, layer)
    if "\\n" in last[0] and _FRAME.search(last[0]):  # a table in a repr or a JSON string
        rows = View(last[0], _escaped_line_break(), "\n", last[1])
        last = (rows.text, rows)
    if "\n" in last[0] and _FRAME.search(last[0]):
        table = TableView(*last)
        if table.changed:
            found.append((table.text, table))
    return found
