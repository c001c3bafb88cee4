"""The final scan: the exact bytes of one public channel, its escaping undone, searched for every
known secret value in every form and as any fragment of 12+ characters of one.

Each channel escapes text its own way before it leaves: HTML and XML entities in files, JSON
string escapes, GitHub's workflow-command percent escapes in annotations, ANSI colour codes on a
terminal. The scan undoes the channel's escaping, then looks at every view of the result
(line breaks removed; URL, JSON and HTML escapes undone twice), so a value that any layer of
encoding still carries is found. A channel with a finding is withheld, never repaired.
"""

from __future__ import annotations

import functools
import html
import re
from collections.abc import Callable

from qualify.publish import views
from qualify.publish.secrets import SecretIndex
from qualify.records import frozen_record


@functools.cache
def _ansi() -> re.Pattern[str]:
    return re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)")


@functools.cache
def _command() -> re.Pattern[str]:
    return re.compile(r"%(0D|0A|3A|2C|25)", re.IGNORECASE)


_COMMAND_CHARS = {"0D": "\r", "0A": "\n", "3A": ":", "2C": ",", "25": "%"}


def unescape_command(text: str) -> str:
    """A GitHub workflow command's escaping undone (actions/toolkit ``escapeData`` and
    ``escapeProperty``: ``%25``, ``%0D``, ``%0A``, ``%3A``, ``%2C``)."""
    return _command().sub(lambda match: _COMMAND_CHARS[match.group(1).upper()], text)


def strip_ansi(text: str) -> str:
    """A terminal's text without colour and title sequences."""
    return _ansi().sub("", text)


@frozen_record
class Channel:
    """A way out: its name (for reasons) and how to undo its escaping."""

    name: str
    unescape: Callable[[str], str]


TEXT = Channel("text", lambda text: text)
HTML = Channel("html", html.unescape)
ANNOTATIONS = Channel("annotations", unescape_command)
STEP_SUMMARY = Channel("step summary", html.unescape)
OUTPUTS = Channel("outputs", lambda text: text)
TERMINAL = Channel("terminal", strip_ansi)


def file_channel(name: str) -> Channel:
    """How a file of public/ is read back: HTML and XML unescaped, the rest as text (JSON's
    escapes are undone by the views)."""
    if name.endswith((".html", ".htm", ".xml", ".svg")):
        return HTML
    return TEXT


@frozen_record
class Leak:
    """A known secret found in a channel's bytes (its origin and place; never its value)."""

    where: str
    origin: str
    whole: bool
    line: int

    def __str__(self) -> str:
        what = "known-secret" if self.whole else "a fragment of 12+ characters of a known-secret"
        place = f"{self.where} line {self.line}" if self.where else f"line {self.line}"
        return f"{place}: {what} ({self.origin})"


def final_scan(data: bytes, index: SecretIndex, channel: Channel, where: str) -> list[Leak]:
    """Every known secret in ``data`` as ``channel`` shows it (one leak per origin and line)."""
    if not index:
        return []
    text = data.decode(errors="replace")
    variants = [text]
    unescaped = channel.unescape(text)
    if unescaped != text:
        variants.append(unescaped)
    leaks: dict[tuple[str, int], Leak] = {}
    for variant in variants:
        for view_text, view in views.views(variant):
            for hit in index.find(view_text):
                start = view.span(hit.start, hit.end)[0] if view is not None else hit.start
                line = variant.count("\n", 0, start) + 1
                key = (hit.secret.origin, line)
                if key not in leaks or hit.whole:
                    leaks[key] = Leak(where, hit.secret.origin, hit.whole, line)
    return sorted(leaks.values(), key=lambda leak: (leak.line, leak.origin))


def describe(leaks: list[Leak], limit: int = 10) -> str:
    """The reason a channel is withheld: which secrets, where (at most ``limit`` named)."""
    shown = "; ".join(str(leak) for leak in leaks[:limit])
    more = f"; and {len(leaks) - limit} more" if len(leaks) > limit else ""
    return shown + more
