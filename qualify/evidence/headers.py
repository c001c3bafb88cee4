"""A log line's message without what its way to the reader added: colour codes and headers.

The same words reach triage in many shapes: coloured by a terminal (``\\x1b[31m``), stamped by a
CI runner (GitHub's ``2024-04-14T21:49:58.7397481Z``, GitLab's ``... 01O``, Buildkite's
``[2024-...Z]``), by ``docker logs -t`` or ``kubectl logs --timestamps``, by a logging library
(``2024-05-01 10:11:12,123``), by journald and syslog (``May 01 10:11:12 host``, before the
program's ``app[1234]:``), or by what gathered a container's lines (``kubectl logs --prefix``'s
``[pod/web-7c5b/app]``, ``docker compose logs``'s ``web-1  |``, ``mpirun --tag-output``'s
``[1,0]<stderr>:``).
None of that is part of what the program said: a host named ``host`` is no statement about the
host's memory, and a colour code before ``MemoryError`` does not move the start of its line. The
line parsers read the message; the evidence cites the line as it was written.

What is kept: a kernel line's header (``kernel:`` and dmesg's ``[  219.35]`` say who speaks:
the kernel parsers read them), the program that speaks (``earlyoom[812]:``), a level
(``WARNING`` and ``ERROR`` say whether anything happened) and a logger's name. A line that says
nothing with them is read once more without that lead (:func:`body`), unless its level is one
under an error's: a warning's words are no report of what happened.
"""

from __future__ import annotations

import json
import re

_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[()][0-9A-Za-z]")
"""ECMA-48 control sequences (colours, erasing, cursor moves) and character-set selections."""
_HEADER = re.compile(
    # An ISO-8601 date and time, bracketed or not (CI runners, docker and kubectl timestamps,
    # logging libraries), then GitLab's stream and flags (``01O``, ``00E+``) where it writes them
    r"(?:\[?\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d{1,9})?(?:Z|[+-]\d\d:?\d\d| ?UTC)?\]?"
    r"(?: \d\d[OE]\+?)?"
    # syslog and journald: a month, a day, a time and a host (the program after them stays:
    # ``earlyoom[812]:`` says who speaks)
    r"|[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d(?:\.\d{1,9})? [\w.-]+(?= [\w./@-]+(?:\[\d+\])?: )"
    # a time of day alone, bracketed (Jenkins' timestamper, many CLIs)
    r"|\[\d\d:\d\d:\d\d(?:[.,]\d{1,9})?\]"
    # the container a line came from: ``kubectl logs --prefix``, ``docker compose logs``
    r"|\[pod/[\w.-]+/[\w.-]+\]|[\w.-]+[-_]\d+ +\|)"
    r"(?: +|\t|$)"
)
"""One header at a line's start, with the spaces after it."""
_RANK_TAG = re.compile(r"\[\d+,\d+\]<std(?:out|err)>: ?")
"""The rank a line came from, as Open MPI's ``mpirun --tag-output`` writes it (``[1,0]<stderr>:``,
the message right after the colon): after whatever leads the line has (a quote's ``>``, a
program's lead), never part of what the rank said."""
_MAY_HOLD = re.compile(r"[\w\[]")
"""A header starts with a digit, a bracket or a letter."""


def plain(line: str) -> str:
    """``line`` without its colour codes and a Windows line end's carriage return (what a
    terminal showed: what evidence cites)."""
    line = line[:-1] if line.endswith("\r") else line
    return _ANSI.sub("", line) if "\x1b" in line else line


def message(line: str) -> str:
    """``line`` without colour codes and without the headers before its message (at most three:
    a CI timestamp before a program's own). A kernel line is returned as written, less its
    colour codes; a line that is only a header is an empty one."""
    line = plain(line)
    if ">:" in line[:160] and (tag := _RANK_TAG.search(line, 0, 160)) is not None:
        line = line[: tag.start()] + line[tag.end() :]
    if not line or not _MAY_HOLD.match(line) or "kernel:" in line[:120]:
        return line
    for _ in range(3):
        header = _HEADER.match(line)
        if header is None:
            break
        line = line[header.end() :]  # (a header alone: an empty line, a paragraph's end)
    return line


def messages(text: str, leads: bool = False) -> str:
    """Every line of ``text`` as :func:`message` reads it, and with ``leads`` as :func:`body`
    reads it where it has a lead (the lines around a line read without its lead: a logger's
    traceback has the lead on every line). Line breaks are kept, so that the lines keep their
    numbers."""
    said = [message(line) for line in text.split("\n")]
    said = [structured(line) or line if line.startswith("{") else line for line in said]
    if leads:
        said = [body(line) or line for line in said]
    return "\n".join(said)


_LEVELS = r"error|err|fatal|critical|crit|severe|panic|emerg|alert"
_LEAD = re.compile(
    # a program and its pid, as syslog writes them ("python3[4512]: ")
    r"[\w./@-]+\[\d+\]: +"
    # or a level of an error, bracketed or not, then a logger's bracketed name or a thread's
    # ("ERROR [worker-1] ", "[FATAL] ", "error: "; Android's "E/AndroidRuntime(4512): ", whose
    # letter alone is no level: pytest's "E   " lines are its own)
    rf"|(?:\[(?:{_LEVELS})\]|(?:{_LEVELS}|[efc](?=/))\b(?:/[\w.$-]+(?:\(\s*\d+\))?)?:?)"
    r"(?: +\[[^\]]{1,60}\])?(?: +[-|:])? +"
    # or a logger's name between dashes, then an error's level (Python's logging: "root -
    # ERROR - ", "app.worker | CRITICAL | ")
    rf"|(?:[-|] +)?[\w.$-]{{1,60}} +[-|] +(?:{_LEVELS}) +[-|:] +"
    # or a thread, an error's level and a logger, as log4j and logback write them ("[main] ERROR
    # c.e.Server:93 - ")
    rf"|\[[^\]]{{1,60}}\] +(?:{_LEVELS}) +(?:[\w.$:-]{{1,80}} +)?[-|:] +",
    re.IGNORECASE,
)
"""The lead of a line: the program, or a level of an error with its logger or thread."""


def body(line: str) -> str | None:
    """``line`` (a :func:`message`) without its lead, the program that speaks or an error's
    level with its logger (``python3[4512]: ``, ``ERROR [worker-1] ``, ``root - ERROR - ``);
    None when it has none, or nothing after it."""
    lead = _LEAD.match(line)
    if lead is None or lead.end() == len(line):
        return None
    return line[lead.end() :]


_WHOLE_SPAN = re.compile(r"`([^`]+)`\s*$")
"""A line that is one inline code span, alone (not a fence: one backtick on each side)."""
_QUOTE = re.compile(r"(?:> ?(?=[^ >]|$)|> (?=>))+")
"""A quote's marks before a line (Markdown's and mail's ``> ``, nested ``> > ``); not Python's
``>>>`` prompt, and not pytest's ``>       `` before the source line that failed."""


def unquoted(line: str) -> str:
    """``line`` without the marks of a quote before it: a log pasted as a quote in a report says
    what it says (whether the quote is an example is read from the lines around it). A line that
    is one code span and nothing else (GROBID's user: "`[TIMEOUT] PDF to XML conversion timed
    out`") is a paste of one line, read as a fenced block's line is; a line that is one strong span
    (``**Killed**``) is read as its words."""
    if line.startswith(">") and not line.startswith(">>>"):
        quote = _QUOTE.match(line)
        line = line if quote is None else line[quote.end() :]
    if line[:1] == "`" and (span := _WHOLE_SPAN.match(line)) is not None:
        return span[1]
    if line[:2] in ("**", "__") and (strong := _WHOLE_STRONG.match(line)) is not None:
        return unquoted(strong[2])
    return line


_WHOLE_STRONG = re.compile(r"^(\*\*|__)(?=\S)((?:(?!\1).)+?)(?<=\S)\1\s*$")
"""A line that is one strong span and nothing else (``**assert failed: block_locate_free
heap_tlsf.c:447 (block_size(block) >= size)**``): Markdown's emphasis, not the line's words."""


_MESSAGE_KEYS = ("log", "msg", "message", "MESSAGE", "textPayload", "error", "err")
"""Where a structured log line holds what was said: docker's json-file (``log``), zap, logrus
and slog (``msg``), Bunyan, structlog, Cloud Logging and CloudWatch (``message``,
``textPayload``), journald's JSON export (``MESSAGE``), an error field."""
_LEVEL_KEYS = ("level", "severity", "lvl", "levelname", "PRIORITY")
_WARNING_LEVELS = frozenset({"warn", "warning", "4"})
"""A warning's level (journald's priority 4): said again before the message, as a plain log
line says it."""
MAX_STRUCTURED = 16 << 10
"""Longer lines are not decoded as structured logs (a JSON document on one line)."""


_INSPECTED = re.compile(r"^\s*\{\s*(?:message|msg|error|err): '((?:[^'\\]|\\.)+)")
"""An object as Node.js prints it (``util.inspect``: unquoted keys, single-quoted strings, a new
line in a string written ``\\n``), its message first (Nightwatch's ``{ message: 'Timed out
waiting 45 seconds for Firefox to start.\\nBuild info: ...``): the message's first line is what
was said."""


def _inspected(line: str) -> str | None:
    """The first line of the message of an object as Node.js prints it; None for another line."""
    inspected = _INSPECTED.match(line)
    return None if inspected is None else inspected[1].split("\\n")[0]


def structured(line: str) -> str | None:
    """The message of a structured log line (a JSON object on the line, its message in one of
    ``_MESSAGE_KEYS``), a warning's level said before it; None for any other line. Whatever
    else the object holds (a ``reason`` field) is left to a reading of the line as written."""
    if not line.startswith("{") or len(line) > MAX_STRUCTURED:
        return _inspected(line) if line[:1] == " " and len(line) <= MAX_STRUCTURED else None
    try:
        record = json.loads(line)
    except (ValueError, RecursionError):
        return _inspected(line)
    if not isinstance(record, dict):
        return None
    said = next((record[key] for key in _MESSAGE_KEYS if isinstance(record.get(key), str)), None)
    if said is None or not said.strip():
        return None
    lines = [text for text in said.splitlines() if text.strip()]
    # (one line of output a record, as docker writes them; a traceback in one record ends with
    # the exception's own line, any other message starts with what it says)
    said = message(lines[-1] if "Traceback (most recent call last)" in said else lines[0])
    level = next((record[key] for key in _LEVEL_KEYS if key in record), None)
    if str(level).lower() in _WARNING_LEVELS:
        return f"WARNING: {said}"
    return said
