"""A line read by its structure when its words are not written as a sentence.

Programs often say what happened in an identifier rather than in words: an exception's class
(``InsufficientMemoryException``), an error's constant (``VK_ERROR_OUT_OF_DEVICE_MEMORY``,
``ERR_INSUFFICIENT_MEMORY``), a state or a reason in a structured log (``"reason":"OOMKilled"``,
``state=OOM_KILLED``, ``status: DeadlineExceeded``). The line parsers read words, so such a line
is read again here with each compound identifier spelled as its words (camelCase, PascalCase,
snake_case and SCREAMING_CASE split where the case or an underscore changes) and a quoted single
token unquoted. Then a field whose key asks why something ended (``reason``, ``status``,
``state``, ``cause``...) is read for its value: a deadline or a timeout is a time limit.

Only a line no parser recognises as written is read this way (``qualify.evidence.lines``): what
the words of a line decide is never changed by how its identifiers would read.
"""

from __future__ import annotations

import re

from qualify.evidence.evidence_line import LineSignal

_COMPOUND = re.compile(
    r"(?<![\w\-+/\\$@%])(?=[A-Za-z0-9_]*(?:[a-z0-9][A-Z]|[A-Z][A-Z][a-z]|[A-Za-z0-9]_+[A-Za-z0-9]))"
    r"[A-Za-z][A-Za-z0-9_]*[A-Za-z0-9](?![\w(]|\.[A-Za-z_])"
)
"""An identifier whose case or an underscore marks where its words meet. Not one that is part of
an option (``-XX:+HeapDumpOnOutOfMemoryError``, ``--max_memory``), a path, a variable
(``$LOW_MEMORY``) or a decorator, nor one that is called (``killed_by_oom(``) or qualifies
the name after it (``OutOfMemoryHandler.run``; a dotted name's last part is read,
``java.lang.OutOfMemoryError``): those name code, not what happened."""
_LOWER = re.compile(r"[a-z0-9_]+")
_VALUE_BEFORE = re.compile(r"[A-Za-z\"'][\"']?\s*[:=]\s*$")
"""An identifier in lower case (``timed_out``, ``low_memory``) is spelled only as a field's
value (after a key, not after a ``file.py:315:`` location): as a name it is a variable's, a
function's or a setting's."""
_TEST_NAME = re.compile(r"[Tt]est(?:[A-Z_]|s?$)(?!\w*(?:Exception|Error)$)")
"""A test's name (fail2ban's ``testExecuteTimeoutWithNastyChildren``, ``test_oom_kill``): what
the test checks, not what happened to the run. (An exception's class is no test's name: JUnit's
``TestTimedOutException`` is spelled.)"""
_JOINS = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])|_+")
_QUOTED_TOKEN = re.compile(r"([\"'])([\w.-]+)\1")
"""A single token in quotes (a JSON value or key, a quoted signal name)."""
_MEMORY_WORD = re.compile(r"memory|\boom\b|alloc|\bheap\b|\bram\b", re.IGNORECASE)
"""A word that names memory. A status spelled as words ("ResourceExhausted", gRPC's for a message
over its size) says nothing of memory unless one of these is on the line."""
MAX_SPELLED = 4096
"""Longer lines are not spelled (a long line is read in windows by the scanner anyway)."""


def spelled(line: str) -> str | None:
    """``line`` with its compound identifiers written as words ("OOMKilled" -> "OOM Killed",
    "hipErrorOutOfMemory" -> "hip Error Out Of Memory") and single quoted tokens unquoted; None
    when that changes nothing."""
    if len(line) > MAX_SPELLED:
        return None
    unquoted = _QUOTED_TOKEN.sub(r"\2", line) if ('"' in line or "'" in line) else line

    def words(match: re.Match[str]) -> str:
        token = match[0]
        if _LOWER.fullmatch(token) and not _VALUE_BEFORE.search(unquoted, 0, match.start()):
            return token
        if _TEST_NAME.match(token):
            return token  # a test's name names what it tests, not what happened
        return _JOINS.sub(" ", token)

    spelled_line = _COMPOUND.sub(words, unquoted)
    return spelled_line if spelled_line != line else None


def names_memory(text: str) -> bool:
    """Whether ``text`` has a word that names memory."""
    return _MEMORY_WORD.search(text) is not None


_FIELD = re.compile(
    r"(?:^|[\s{,;(\[])(?P<key>[A-Za-z][\w .-]{0,40}?)\s*[:=]\s*"
    r"(?P<value>[A-Za-z0-9][\w .+/-]{0,80}?)\s*(?=$|[,;})\]]|\s+[A-Za-z][\w.-]{0,40}\s*[:=])"
)
"""A key and its value, as logfmt, YAML, JSON (once unquoted) or a Go struct write them."""
_WHY_KEY = re.compile(
    r"\b(?:reason|cause|status|state|result|outcome|condition|termination|why|error|failure"
    r"|exit (?:type|reason)|phase)\b",
    re.IGNORECASE,
)
"""A key whose value says why or how something ended."""
_TIME_VALUE = re.compile(
    r"^(?:\w+ ){0,2}(?:deadline exceeded|timed out|time ?out|time limit(?: exceeded| reached)?)$",
    re.IGNORECASE,
)
"""A value that is a time limit reached (Kubernetes' ``DeadlineExceeded``, a task's
``TIMED_OUT`` state)."""


def read_fields(text: str) -> LineSignal | None:
    """The first field of ``text`` (a spelled line) whose key asks why something ended and
    whose value is a time limit reached (a Job's status ``reason: DeadlineExceeded``); None
    when none is."""
    for match in _FIELD.finditer(text):
        key, value = match["key"].strip(), match["value"].strip()
        if key.lower().endswith(("exception", "error")) and " " in key:
            continue  # an exception's class spelled as words ("Illegal State Exception"), no key
        if _WHY_KEY.search(key) and _TIME_VALUE.match(value):
            return LineSignal("timeout", {"field": key, "value": value})
    return None
