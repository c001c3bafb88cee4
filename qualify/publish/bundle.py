"""public/: the sanitized bundle of a run directory, published all at once or not at all.

First every text file of the run directory is read once so that the sanitizer learns the values
its rules find (a token printed whole in stdout.log is then caught where pytest cut it short in
an assertion). Then every file is written through the sanitizer into a staging directory beside
``public/``: JSON field by field (never broken by a replacement), other text whole. The final
scan (:mod:`qualify.publish.final_scan`) then reads the exact bytes of every staged file and
name for every known secret in every form; only when it finds nothing is the staging directory
renamed to ``public/``. Otherwise the publication fails closed: no ``public/``, the reason (rule
and place, never a value) in the run's publication record (internal), exit code 4 for the
caller; the verdict of the run is not touched.

Text that is not UTF-8 is published with the undecodable bytes replaced (U+FFFD), not dropped.

The run directory is the family's (``qualify.untrusted``): a file that is not a regular file, or
is reached through a link, or is larger than ``PUBLISH_LIMIT_BYTES``, is neither read nor
published; it is withheld, with the reason, in the publication record.
"""

from __future__ import annotations

import bisect
import contextlib
import functools
import itertools
import json
import operator
import os
import re
import shutil
import tempfile
from collections.abc import Collection, Iterable, Mapping, Sequence
from json.encoder import encode_basestring as _json_text
from pathlib import Path
from typing import Any
from xml.parsers import expat

from harness import contract
from qualify import records
from qualify.atomic import write_json_atomic
from qualify.errors import UsageError
from qualify.plan.request import PUBLISH_LEVELS
from qualify.publish.final_scan import TEXT, Leak, describe, file_channel, final_scan
from qualify.publish.sanitize import Identities, Sanitizer
from qualify.publish.sources import SecretSources, record_sources, recorded_sources
from qualify.records import frozen_record
from qualify.rundir.audit import PublicationRecord, parse_audit
from qualify.rundir.events import (
    JsonlContent,
    PhaseLines,
    file_identity,
    read_events,
    remembered,
    remembered_phases,
)
from qualify.untrusted import (
    UntrustedFile,
    describe_size,
    open_regular,
    printable,
    read_bounded,
    read_bounded_status,
)
from qualify.verdict import EXIT_ERROR, EXIT_PASSED

PUBLISH_LIMIT_BYTES = 64 << 20
"""The largest file published (and learnt from): a file is sanitized whole, in memory."""
LEVELS = PUBLISH_LEVELS
PUBLIC_FILES = (
    contract.JUNIT, contract.REPORT_HTML, contract.EVENTS, contract.TIMELINE, contract.AUDIT
)  # fmt: skip
"""What the ``public`` level publishes (no raw logs); the audit last, to carry the counts.
The events and the timeline are the evidence ``qualify triage`` reads (phases, the memory
curve, the processes at the peak): triage of a downloaded ``public/`` finds what triage of
the run directory finds."""


@frozen_record
class PublishResult:
    """How the publication of one run directory went."""

    ok: bool
    level: str
    public_dir: Path | None
    """``RUN_DIR/public`` when published, None when it failed."""
    reason: str | None
    """Why it failed (sanitized; rule names and file names, never a value)."""
    rule_counts: Mapping[str, int]
    """What each rule replaced while writing public/."""
    files: tuple[str, ...]
    """Files in public/ (sanitized names)."""
    skipped: tuple[str, ...]
    """Files left out: binary, or not readable as the level requires."""
    withheld: Mapping[str, str] = records.field(default_factory=dict)
    """Files not read at all, by name: why (not a regular file, over the size limit)."""

    def __bool__(self) -> bool:
        return self.ok

    @property
    def exit_code(self) -> int:
        """0 when published, 4 (ERROR) when the publication failed closed."""
        return EXIT_PASSED if self.ok else EXIT_ERROR

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (the run's publication record)."""
        return {
            "status": "published" if self.ok else "failed",
            "level": self.level,
            "public_dir": contract.PUBLIC_DIR if self.ok else None,
            "reason": self.reason,
            "rule_counts": dict(sorted(self.rule_counts.items())),
            "files": list(self.files),
            "skipped": list(self.skipped),
            "withheld": dict(sorted(self.withheld.items())),
        }


class PublicationLeak(Exception):
    """The second scan found something, or sanitizing broke a file's format."""


def _sources(run_dir: Path, level: str, include: Sequence[str]) -> list[Path]:
    """Relative paths to publish, the audit last."""
    if level == "public":
        names = [Path(name) for name in (*PUBLIC_FILES[:-1], *include, PUBLIC_FILES[-1])]
        return [name for name in dict.fromkeys(names) if (run_dir / name).is_file()]
    found = [
        path.relative_to(run_dir)
        for path in sorted(run_dir.rglob("*"))
        if path.is_file() and not path.is_symlink()
    ]
    found = [
        path
        for path in found
        if path.parts[0] not in contract.INTERNAL_FILES
        and not any(part.startswith(".") for part in path.parts)
    ]
    found += [Path(name) for name in include if (run_dir / name).is_file()]
    audit = [path for path in found if path == Path(contract.AUDIT)]
    return [path for path in dict.fromkeys(found) if path not in audit] + audit


def _as_text(data: bytes) -> str | None:
    """Text (undecodable bytes kept as surrogates, replaced when written); None for binary."""
    if b"\0" in data:
        return None
    return data.decode("utf-8", errors="surrogateescape")


def _encode(text: str) -> bytes:
    """UTF-8; bytes that were not (kept as surrogates) become U+FFFD."""
    try:
        original = text.encode("utf-8", errors="surrogateescape")
    except UnicodeEncodeError:  # a lone surrogate from elsewhere (a JSON escape)
        return text.encode("utf-8", errors="replace")
    return original.decode("utf-8", errors="replace").encode("utf-8")


def _strip_streams(text: str) -> str:
    """XML without captured output: every ``system-out`` and ``system-err`` element, at any
    depth (pytest writes them in each testcase with ``junit_logging``), holds raw logs. A file
    with none (no element can be named so without the name in its text) is kept as written,
    unparsed; one that does not parse (cut off) loses everything from a stream's start to its
    end, or to the end of the file."""
    if "system-out" not in text and "system-err" not in text:
        return text
    import xml.etree.ElementTree as ET  # (here: most runs' XML has no stream to strip)

    try:
        root = ET.fromstring(_encode(text))
    except ET.ParseError:
        return _stream().sub("", text)
    for parent in list(root.iter()):
        for child in list(parent):
            if isinstance(child.tag, str) and child.tag.rpartition("}")[2] in _STREAMS:
                parent.remove(child)
    return "<?xml version='1.0' encoding='UTF-8'?>\n" + ET.tostring(root, encoding="unicode")


_STREAMS = ("system-out", "system-err")


@functools.cache
def _stream() -> re.Pattern[str]:
    return re.compile(
        r"<(?:[\w.-]+:)?system-(?:out|err)\b.*?(?:</(?:[\w.-]+:)?system-(?:out|err)\s*>|\Z)", re.S
    )


def _well_formed(name: str, text: str) -> bool:
    """A JSON or XML file still parses (XML: well-formedness, any XML file of the run)."""
    try:
        if name.endswith(".json"):
            json.loads(text)
        elif name.endswith(".xml"):
            expat.ParserCreate().Parse(_encode(text), True)  # (no tree: a third of the time)
    except (ValueError, RecursionError, expat.ExpatError):
        return False
    return True


def _clean_xml(text: str, sanitizer: Sanitizer) -> str:
    """XML cleaned node by node (text, tail, attribute values): when cleaning the whole text
    would break it (a match across markup)."""
    import xml.etree.ElementTree as ET

    root = ET.fromstring(_encode(text))
    for element in root.iter():
        if element.text:
            element.text = sanitizer.clean(element.text)
        if element.tail:
            element.tail = sanitizer.clean(element.tail)
        for key, value in element.attrib.items():
            element.attrib[key] = sanitizer.clean(value)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, encoding="unicode")


class _Writer:
    """Writes sanitized files into the staging directory."""

    def __init__(self, run_dir: Path, staging: Path, sanitizer: Sanitizer, level: str):
        self.run_dir, self.staging, self.sanitizer, self.level = run_dir, staging, sanitizer, level
        self.files: list[str] = []
        self.skipped: list[str] = []
        self.withheld: dict[str, str] = {}

    def _target(self, relative: Path) -> Path:
        parts = [self.sanitizer.clean_name(part) or "_" for part in relative.parts]
        target = self.staging.joinpath(*parts)
        stem, number = target, 2
        while target.exists():
            target = stem.with_name(f"{stem.stem}-{number}{stem.suffix}")
            number += 1
        return target

    def _text(self, relative: Path) -> str | None:
        text = _as_text(_read(self.run_dir, relative))
        if text is not None and self.level == "public" and relative.suffix == ".xml":
            text = _strip_streams(text)
        return text

    def _jsonl_text(self, relative: Path) -> tuple[str | None, JsonlContent | PhaseLines | None]:
        """A JSON-lines file's text (refused as ``_text`` refuses it) and, when ``read_all``
        (or ``read_events``) still keeps the file as it was read (its identity unchanged before
        and after the text was read, and all of it read), what it decoded from the same bytes
        (``_decoded_tokens``, ``_phase_tokens``)."""
        data, status = read_bounded_status(
            self.run_dir / relative, PUBLISH_LIMIT_BYTES, root=self.run_dir
        )
        content: JsonlContent | PhaseLines | None = None
        if status is not None:
            identity = file_identity(status)
            content = remembered_phases(identity) or remembered(identity)
        return _as_text(data), content

    def write(self, relative: Path) -> None:
        content: JsonlContent | PhaseLines | None = None
        try:
            if relative.suffix == ".jsonl":
                text, content = self._jsonl_text(relative)
            else:
                text = self._text(relative)
        except UntrustedFile as refused:
            self.withheld[self.sanitizer.clean(printable(str(relative)))] = refused.detail
            return
        target = self._target(relative)
        name = str(target.relative_to(self.staging))
        if text is None:
            self.skipped.append(name)
            return
        audit = relative == Path(contract.AUDIT)
        cleaned = self._audit(text) if audit else self._clean(name, text, content)
        target.parent.mkdir(parents=True, exist_ok=True)
        # Written straight into the staging directory: the bundle is published whole (a rename
        # of that directory), a failure removes it, and it can be made again from the run.
        descriptor = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        with open(descriptor, "wb") as handle:
            handle.write(_encode(cleaned))
        self.files.append(name)

    def _clean(self, name: str, text: str, content: JsonlContent | PhaseLines | None = None) -> str:
        if name.endswith(".json"):
            with contextlib.suppress(ValueError, RecursionError):  # else cleaned as text
                return json.dumps(self.sanitizer.clean_json(json.loads(text)), indent=2) + "\n"
        if name.endswith(".jsonl"):
            return self._json_lines(text, content)
        xml = name.endswith(".xml")
        cleaned = self.sanitizer.clean_quoted(text) if xml else self.sanitizer.clean(text)
        if cleaned == text:
            return cleaned  # nothing replaced: nothing broken
        if xml and _well_formed(name, text) and not _well_formed(name, cleaned):
            cleaned = _clean_xml(text, self.sanitizer)
        return cleaned

    def _json_lines(self, text: str, content: JsonlContent | PhaseLines | None = None) -> str:
        """A JSON-lines file: its runs of simple lines (``_simple_runs``: what the harness
        writes) are read by their strings, each distinct string asked of the sanitizer once
        (``Sanitizer.kept_among``); a simple line holding no string that cleaning changes is
        published as written, the others are cleaned as ``_json_line`` cleans any other line.
        With ``content`` (the values ``read_all`` decoded from the same bytes), a text whose
        values show every line simple is not split again (``_decoded_tokens``; read as
        ``PhaseLines``, ``_phase_tokens``)."""
        if isinstance(content, PhaseLines):
            whole = _phase_tokens(text, content)
        else:
            whole = _decoded_tokens(text, content) if content is not None else None
        if whole is not None:
            pieces, tokens = [(0, len(text), True)], whole
        else:
            pieces, tokens = _simple_runs(text)
        simple = [(start, end) for start, end, is_simple in pieces if is_simple]
        strings = {token: json.loads(token) if "\\" in token else token[1:-1] for token in tokens}
        kept = self.sanitizer.kept_among(list(dict.fromkeys(strings.values())))
        changed = [token for token, string in strings.items() if string not in kept]
        marked = iter(_lines_holding(text, simple, changed))
        held = next(marked, None)  # the next line to clean, (start, end)
        # A marked line without a backslash whose strings (between its quotes) include one that
        # cleaning changes is cleaned as a whole record straight away: ``_json_line``'s look at
        # its strings would find that one not kept (``kept_among`` asked ``keeps`` of it).
        touched = {string for token, string in strings.items() if string not in kept}
        out = []
        for start, end, is_simple in pieces:
            if not is_simple:
                out += [self._json_line(line) for line in text[start:end].splitlines(True)]
                continue
            position = start
            while held is not None and held[0] < end:
                line = text[held[0] : held[1]]
                if "\\" not in line and not touched.isdisjoint(line.split('"')[1::2]):
                    cleaned = self._json_record(line)
                else:
                    cleaned = self._json_line(line)
                out += [text[position : held[0]], cleaned]
                position = held[1]
                held = next(marked, None)
            out.append(text[position:end])
        return "".join(out)

    def _json_line(self, line: str) -> str:
        ending = line[len(line.rstrip("\r\n")) :]
        # A flat object with no escape (what the harness writes) holds its strings as they
        # decode, each between two quotes: when cleaning keeps every one of them, the line is
        # published as it was written (most lines of an events file; nothing decoded).
        if _FLAT_OBJECT.fullmatch(line, 0, len(line) - len(ending)) and self.sanitizer.keeps(
            _json_string().findall(line)
        ):
            return line
        return self._json_record(line, ending)

    def _json_record(self, line: str, ending: str | None = None) -> str:
        """A line cleaned as the record it holds (``_json_line`` after its strings)."""
        if ending is None:
            ending = line[len(line.rstrip("\r\n")) :]
        try:
            cleaned = self.sanitizer.clean_json(json.loads(line))
            return json.dumps(cleaned, ensure_ascii=False) + ending
        except (ValueError, RecursionError):
            # A truncated last line, or one nested deeper than the decoder (or the cleaning)
            # goes: cleaned as text.
            return self.sanitizer.clean(line)

    def _audit(self, text: str) -> str:
        """The public audit carries what each rule did (counts, never values)."""
        try:
            cleaned = self.sanitizer.clean_json(json.loads(text))
        except (ValueError, RecursionError):
            return self.sanitizer.clean(text)  # not JSON: published as sanitized text
        read = parse_audit(json.dumps(cleaned))
        if read.audit is None:
            return json.dumps(cleaned, indent=2) + "\n"  # not an audit of ours
        publication = PublicationRecord(
            level=self.level,
            rule_counts=dict(sorted(self.sanitizer.counts.items())),
            files=sorted([*self.files, contract.AUDIT]),
            skipped=sorted(self.skipped),
            withheld=dict(sorted(self.withheld.items())),
        )
        return records.replace(read.audit, publication=publication).to_bytes().decode()


@functools.cache
def _json_string() -> re.Pattern[str]:
    """The strings of a JSON text that holds no backslash (no escapes: a quote always delimits)."""
    return re.compile(r'"([^"]*)"')


_FLAT_SCALAR = (
    r'(?:"[^"\\\x00-\x1f]*"|-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?|true|false|null)'
)
_FLAT_MEMBER = rf'"[^"\\\x00-\x1f]*": ?{_FLAT_SCALAR}'
_FLAT_OBJECT = re.compile(rf"\{{(?:{_FLAT_MEMBER}(?:, ?{_FLAT_MEMBER})*)?\}}")
"""A JSON object of strings, numbers, booleans and nulls, with no escape and no space but one
after a colon or a comma (a subset of JSON: what it matches, ``json.loads`` reads)."""


_JSON_TOKEN_TEXT = r'"[^"\\\x00-\x1f]*+(?:\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4})[^"\\\x00-\x1f]*+)*+"'
_JSON_TOKEN = re.compile(_JSON_TOKEN_TEXT)
"""A JSON string as written (escapes and all)."""
_STRING = "\x00"
"""What stands for each string in ``_skeleton``'s text: a character no simple line holds."""
_SKELETON_SCALAR = (
    rf"(?>{_STRING}|-?(?:0|[1-9][0-9]*+)(?:\.[0-9]++)?(?:[eE][+-]?[0-9]++)?|true|false|null)"
)
_SKELETON_VALUE = rf"(?>{_SKELETON_SCALAR}|\[(?:{_SKELETON_SCALAR}(?:, ?{_SKELETON_SCALAR})*+)?\])"
_SKELETON_MEMBER = rf"{_STRING}: ?{_SKELETON_VALUE}"


@functools.cache
def _skeleton() -> re.Pattern[str]:
    """Simple lines with each string written as ``_STRING`` (their skeleton): lines that are
    each a JSON object of scalars and lists of scalars, with no space but one after a colon or
    a comma, each ending in a line feed (a subset of JSON lines: every ``"`` in them opens or
    closes a string, so ``_JSON_TOKEN`` finds their strings exactly). Possessive and atomic
    throughout: the alternatives exclude each other by their first character, and nothing is
    given back. Compiled at first use."""
    return re.compile(rf"(?:\{{(?:{_SKELETON_MEMBER}(?:, ?{_SKELETON_MEMBER})*+)?\}}\n)*+")


_CONTROL = re.compile(r"[\x00-\x1f]")
_DIGITS = str.maketrans("23456789", "11111111")


def _simple_tokens(text: str) -> set[str] | None:
    """The strings of ``text`` as written (what ``_JSON_TOKEN`` finds), when it is whole
    simple lines (``_simple_runs``) and holds no backslash; else None.

    Without a backslash, a string of a simple line is a quote, characters other than a quote
    or a control character, and a quote: the text split at its quotes alternates between what
    stands outside the strings and the strings' insides. It is simple lines exactly when no
    inside holds a control character and the outsides, each string written as ``_STRING``
    (which the text does not hold; a control character outside a string, a line's end aside,
    is no skeleton's), are ``_skeleton``'s lines: a search of a third of the text, with no
    regular expression over each string (the set is made in the order ``_JSON_TOKEN`` finds
    them)."""
    if "\\" in text or _STRING in text:
        return None
    parts = text.split('"')
    if not len(parts) % 2:
        return None  # (a quote left open)
    insides = dict.fromkeys(parts[1::2])  # (a string is checked once, however often it stands)
    if _CONTROL.search("".join(insides)):
        return None
    # Each distinct line's skeleton is matched once, its digits but 0 written 1 (what the
    # skeleton tells of a digit: whether it is 0): lines that differ by their times alone are
    # one line.
    lines = _STRING.join(parts[0::2]).translate(_DIGITS).split("\n")
    if lines.pop():
        return None  # (the last line has no line feed)
    shapes = dict.fromkeys(lines)
    if shapes and not _skeletons("\n".join(shapes) + "\n"):
        return None
    return {f'"{inside}"' for inside in insides}


_LEADING_ZEROS = tuple(
    f"{before}{sign}0{digit}" for before in ":, [" for sign in ("", "-") for digit in "01"
)
"""A number's first digit 0 followed by a digit, in a skeleton whose digits are 0 and 1: where
a number starts in a line of ``_skeleton`` (after a colon, a comma, a space or a bracket)."""


def _skeletons(shapes: str) -> bool:
    """Whether ``shapes`` (lines, each ended, whose digits are 0 and 1) are ``_skeleton``'s
    lines. Where no number starts with a 0 followed by a digit (``_LEADING_ZEROS``, string
    searches), a 0 tells nothing more than another digit: the lines are matched with every digit
    written 1, as fewer distinct lines (the times' zeros made most of them distinct)."""
    if not any(zero in shapes for zero in _LEADING_ZEROS):
        lines = shapes.replace("0", "1").split("\n")
        lines.pop()  # ("" after the last line feed)
        shapes = "\n".join(dict.fromkeys(lines)) + "\n"
    return _skeleton().fullmatch(shapes) is not None


def _simple_runs(text: str) -> tuple[list[tuple[int, int, bool]], set[str]]:
    """The text's pieces, in order, each (start, end, simple): a run of simple lines, or one
    line that is not (the last one cut, or anything but a flat record); and the strings of the
    simple lines as written, in the order ``_JSON_TOKEN`` finds them. A line is simple when its
    strings, each written as ``_STRING``, leave a line of ``_skeleton``: without a backslash,
    its strings are what its quotes delimit (``_simple_tokens``); with one, what
    ``_JSON_TOKEN`` finds from each quote outside a string (a quote that opens no string, or a
    backslash outside one, stays in the skeleton, where no line holds it)."""
    whole = _simple_tokens(text)  # (the usual events file: every line simple)
    if whole is not None:
        return ([(0, len(text), True)] if text else []), whole
    pieces: list[tuple[int, int, bool]] = []
    tokens: set[str] = set()
    lines = text.split("\n")
    cut = lines.pop()  # ("" after a last line feed)
    skeleton = _skeleton()
    position = run = 0  # run: where the current run of simple lines started
    for line in lines:
        end = position + len(line) + 1
        if _STRING in line:
            found = None
        elif "\\" in line:
            found = _JSON_TOKEN.findall(line)
            shape = _JSON_TOKEN.sub(_STRING, line)
        else:
            parts = line.split('"')
            found = parts[1::2]
            shape = _STRING.join(parts[0::2])
            if not len(parts) % 2 or _CONTROL.search("".join(found)):
                found = None
            else:
                found = [f'"{inside}"' for inside in found]
        if found is not None and skeleton.fullmatch(shape + "\n"):
            tokens.update(found)
        else:
            if run < position:
                pieces.append((run, position, True))
            pieces.append((position, end, False))
            run = end
        position = end
    if run < position:
        pieces.append((run, position, True))
    if cut:
        pieces.append((position, len(text), False))
    return pieces, tokens


_NOT_SIMPLE = (
    ("\\", "\\"),
    (" ", " "),
    ("\t", "\t"),
    ("\r", "\r"),
    ("N", "NaN"),
    ("I", "Infinity"),
)
"""What a text whose lines ``_decoded_tokens`` finds simple never holds, each after its first
character (a search at memory speed): a backslash (an escape), JSON's whitespace but the line
feeds that end lines, and the non-numbers that ``json.loads`` reads (none of them is a simple
line's)."""
_FLAT = frozenset({str, int, float, bool, type(None)})
_FLAT_OR_LIST = _FLAT | {list}


def _decoded_tokens(text: str, content: JsonlContent) -> set[str] | None:
    """What ``_simple_tokens`` finds in ``text`` (every line simple: its strings as written),
    found from ``content``, the values ``read_all`` decoded from the same bytes (each line's,
    the lines joined by commas into one JSON array); None where they do not show it (the text
    is then split at its quotes as before).

    Every line starts with ``{`` and ends with ``}`` (the line feeds counted), decoded values
    are as many as lines, each an object whose values are scalars or lists of scalars, and no
    decoded string holds ``},{`` (the comma that joined two lines): then no value or string
    runs across two lines (a line's ``{`` inside a value would be a nested object), so each
    line is one flat object. With no backslash, no whitespace and no ``NaN`` or ``Infinity``
    in the text, and every code point as UTF-8 decoded it both ways (no surrogate), each is
    a line of ``_skeleton`` (JSON's numbers are its numbers, its strings without escapes
    hold no control character), whose strings between their quotes are the decoded keys and
    strings; when no key is given twice in a line (the strings written, two quotes each, are
    as many as the keys and strings decoded), none is lost to another.

    Where learning read the same values just before (``_jsonl_fields``) and found each a record
    of scalars and lists of scalars, its pairs' distinct strings and its count of the strings
    stand for the values' walk here: the pairs hold every string value (a list's items paired
    with its key), and their keys with the records' are every key."""
    values = content.values
    lines = content.line_feeds
    if (
        content.garbled
        or len(values) != lines
        or text[:1] != "{"
        or not text.endswith("}\n")
        or text.count("}\n{") != lines - 1  # (every line feed but the last)
        or any(first in text and sign in text for first, sign in _NOT_SIMPLE)
    ):
        return None
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:  # (a byte that was not UTF-8, kept as a surrogate)
            return None
    fed = _fed_strings(values)
    if fed is not None:  # (learning read the same values: ``JsonlFields._feed``)
        strings = set(fed[0])
        found = sum(map(len, values)) + fed[1]
        strings.update(itertools.chain.from_iterable(values))  # (the keys)
        if text.count('"') != 2 * found or any("},{" in string for string in strings):
            return None
        return {f'"{string}"' for string in strings}
    if set(map(type, values)) != {dict}:
        return None
    everything = list(itertools.chain.from_iterable(map(dict.values, values)))
    kinds = list(map(type, everything))
    if not _FLAT_OR_LIST.issuperset(kinds):
        return None
    strings = set(itertools.compress(everything, map(operator.is_, kinds, itertools.repeat(str))))
    found = sum(map(len, values)) + kinds.count(str)  # (strings decoded, each time it stands)
    position = -1
    while True:  # (the few lists, each found by a search of the types: a collection's ids)
        try:
            position = kinds.index(list, position + 1)
        except ValueError:
            break
        items = everything[position]
        if not _FLAT.issuperset(map(type, items)):
            return None
        texts = [item for item in items if item.__class__ is str]
        strings.update(texts)
        found += len(texts)
    strings.update(itertools.chain.from_iterable(values))  # (the keys)
    if text.count('"') != 2 * found or any("},{" in string for string in strings):
        return None
    return {f'"{string}"' for string in strings}


_PHASE_KEYS = (
    *("event", "state", "when", "nodeid", "file", "line"),
    *("outcome", "duration", "t", "mono", "pid"),
)
"""Every key a phase line (``qualify.rundir.events.PhaseLines``) may hold."""


def _phase_tokens(text: str, phases: PhaseLines) -> set[str] | None:
    """``_decoded_tokens`` of an events file read as ``PhaseLines`` (``read_events``): what
    ``_simple_tokens`` finds in ``text``, from what learning found of the same lines
    (``_phase_fields``); None where learning did not read them or found a value that is not a
    record of scalars and lists of scalars (the text is then split at its quotes as before).

    Each line is a value by itself (a phase line, or a line that decodes alone), so that, as in
    ``_decoded_tokens``, every line is a line of ``_skeleton`` when each starts with ``{`` and
    ends with ``}``, every value is a flat record, the text holds no backslash, no whitespace
    but the line feeds and no ``NaN`` or ``Infinity``, and its quotes are two for each key and
    string decoded. Without a backslash every quote opens or closes a string, and a string
    followed by a colon is a key: a phase line's keys are those of ``_PHASE_KEYS`` the text
    writes so."""
    fed = _fed_phases.get(id(phases))
    if fed is None or fed[0] is not phases or fed[1] is None or text != phases.text:
        return None
    strings, found = fed[1]
    lines = len(phases.rows)
    if (
        text[:1] != "{"
        or not text.endswith("}\n")
        or text.count("}\n{") != lines - 1  # (every line feed but the last)
        or any(first in text and sign in text for first, sign in _NOT_SIMPLE)
        or text.count('"') != 2 * found
    ):
        return None
    keys = {key for key in _PHASE_KEYS if f'"{key}":' in text}
    keys.update(itertools.chain.from_iterable(phases.others))  # (records: learning's walk)
    every = {*strings, *keys}
    if any("},{" in string for string in every):
        return None
    return {f'"{string}"' for string in every}


_FOUND_BY_SEARCH = 32
"""Strings to clean, at most, that are looked for in a JSON-lines file by a search of its text
each (a scan at memory speed); with more, every line's strings are read (a hundred times the
cost of one search)."""


def _lines_holding(
    text: str, regions: Sequence[tuple[int, int]], tokens: Sequence[str]
) -> list[tuple[int, int]]:
    """The (start, end) of every line of ``regions`` (runs of whole simple lines, in order)
    that holds one of ``tokens`` (JSON strings as written), in order. Searched in the text when
    they are few: every place a token stands is found (and a place where its quotes are two
    neighbours' is a line cleaned for nothing); else each line's strings are read."""
    if not tokens:
        return []
    found: set[tuple[int, int]] = set()
    if len(tokens) <= _FOUND_BY_SEARCH:
        starts = [start for start, _ in regions]
        for token in tokens:
            position = text.find(token)
            while position >= 0:
                region = bisect.bisect_right(starts, position) - 1
                if region >= 0 and position < regions[region][1]:
                    first = text.rfind("\n", 0, position) + 1
                    found.add((first, text.index("\n", position) + 1))
                position = text.find(token, position + 1)
        return sorted(found)
    wanted = set(tokens)
    for start, end in regions:
        line_start = start
        for line in text[start:end].split("\n")[:-1]:
            if not wanted.isdisjoint(_JSON_TOKEN.findall(line)):
                found.add((line_start, line_start + len(line) + 1))
            line_start += len(line) + 1
    return sorted(found)


_RENDERED = frozenset({contract.JUNIT, contract.REPORT_HTML})
"""qualify's own renderings of the other files (pytest's JUnit, the events, the audit): every
string they hold is learnt where it comes from, and reading them again would double the
harvest of a large suite."""


def _learnt_files(run_dir: Path) -> list[Path]:
    """Every file of the run directory but public/, qualify's renderings and its copy of the
    harness (what the sanitizer learns from), relative to it."""
    found = []
    for path in sorted(run_dir.rglob("*")):
        relative = path.relative_to(run_dir)
        top = relative.parts[0]
        # The harness copy is qualify's own source, never published: learning from it was a
        # third of a small run's harvest.
        if top in (contract.PUBLIC_DIR, contract.HARNESS_DIR) or top.startswith(".public"):
            continue
        if str(relative) in _RENDERED:
            continue
        if path.is_file() and not path.is_symlink():
            found.append(relative)
    return found


_UNLEARNED_NUMBERS = frozenset({"t", "mono", "duration", "pid", "line"})
"""Record fields that are times, durations, process ids and line numbers: a number there is
never a secret, and every line has a new one (the harvest of a JSON-lines file is keyed by
distinct fields)."""


class JsonlFields:
    """The distinct ``{"key": value}`` pairs of a JSON-lines file's records (nested values
    walked, list items paired with their key), and the file's text for the harvest.

    The harvest reads this instead of the file: every string the file holds is seen, decoded
    and next to its key (what the key-value rules read), once. An events file repeats each test
    id on several lines whose times differ; its distinct fields are a tenth of its bytes."""

    def __init__(self) -> None:
        self._pairs: dict[tuple[str, object], None] = {}

    def feed(self, values: Iterable[Any]) -> None:
        """Gather the pairs of the next values, in file order."""
        self._feed(values)

    def _feed(self, values: Iterable[Any]) -> tuple[bool, int]:
        """``feed``, and what the values show on the way: whether every one is a ``dict``
        whose values are scalars or lists of scalars (exact types, a list never under a key of
        ``_UNLEARNED_NUMBERS``), and how many strings they hold (a list's too), each time it
        stands (``_decoded_tokens``)."""
        pairs = self._pairs
        flat = True
        strings = 0

        def walk(key: str, value: object) -> None:
            # Depth first, in order, with a stack of its own: however deep the value, never
            # a RecursionError (nor a call per level).
            stack: list[tuple[str, object]] = [(key, value)]
            while stack:
                key, value = stack.pop()
                if isinstance(value, dict):
                    stack += reversed(value.items())
                elif isinstance(value, list):
                    stack += ((key, item) for item in reversed(value))
                elif isinstance(value, str) or (
                    key not in _UNLEARNED_NUMBERS
                    and value is not None
                    and not isinstance(value, bool)
                ):
                    pairs[key, value] = None

        for record in values:  # the usual flat record without a call per field
            if type(record) is not dict:
                flat = False
                if not isinstance(record, dict):
                    walk("", record)
                    continue
            for item in record.items():  # (the item is the pair: no tuple made again)
                kind = type(item[1])
                if kind is str:
                    pairs[item] = None
                    strings += 1
                elif item[0] not in _UNLEARNED_NUMBERS:
                    if kind is list and flat:
                        kinds = list(map(type, item[1]))
                        flat = _FLAT.issuperset(kinds)
                        strings += kinds.count(str)
                    elif kind not in _FLAT:
                        flat = False
                    walk(*item)
                elif kind is not float and kind is not int and kind not in _FLAT:
                    flat = False  # (the usual times and ids asked first)
        return flat, strings

    def strings(self) -> list[str]:
        """The distinct keys and string values of the pairs."""
        keys = dict.fromkeys([key for key, _ in self._pairs])
        return list(dict.fromkeys([*keys, *(v for _, v in self._pairs if v.__class__ is str)]))

    def text(self, garbled: Iterable[bytes] = (), quiet: Collection[str] = ()) -> str:
        """The pairs, one per line, then the undecodable lines whole; with ``quiet`` (texts no
        necessary condition of the rules touches: ``Sanitizer.quiet_among``), without the
        pairs of a quiet key and a quiet string value that hold no quote (written as they
        are, such a line holds no trigger and no escape: ``Sanitizer.harvest_records`` would
        skip it)."""
        pairs: Iterable[tuple[str, object]] = self._pairs
        if quiet:
            pairs = [
                (key, value)
                for key, value in pairs
                if not (
                    value.__class__ is str
                    and key in quiet
                    and value in quiet
                    and '"' not in key
                    and '"' not in value
                )
            ]
        fields = [
            # json.dumps({key: value}, ensure_ascii=False), built directly for the usual string
            "{" + _json_text(key) + ": " + _json_text(value) + "}"
            if value.__class__ is str
            else json.dumps({key: value}, ensure_ascii=False)
            for key, value in pairs
        ]
        lines = [line.decode("utf-8", errors="surrogateescape") for line in garbled]
        return "\n".join([*fields, *lines])


def _jsonl_fields(content: JsonlContent, sanitizer: Sanitizer | None = None) -> str:
    """A JSON-lines file as the distinct pairs of its records and its undecodable lines
    (``JsonlFields``); the file is read as the judge read it just before (``read_all`` keeps
    it). With ``sanitizer``, without the pairs whose key and value no rule's condition touches
    (``JsonlFields.text``): found quiet once, the strings are not searched again when the file
    is published (``Sanitizer.kept_among``)."""
    fields = JsonlFields()
    flat, count = fields._feed(content.values)
    strings = fields.strings()
    _remember_fed(content.values, (strings, count) if flat else None)
    quiet = sanitizer.quiet_among(strings) if sanitizer is not None else ()
    return fields.text(content.garbled, quiet)


_EVENT = ("event", contract.TEST_PHASE)
_STARTED = ("state", contract.TEST_START)
_ENDED = ("state", contract.TEST_END)
_PASSED = ("outcome", "passed")


def _phase_fields(phases: PhaseLines, sanitizer: Sanitizer | None = None) -> str:
    """``_jsonl_fields`` of an events file read as ``PhaseLines`` (``read_events``): the
    phase lines' pairs gathered from their fields, in the order of their records' items (the
    times, durations, process ids and line numbers are never learnt: ``_UNLEARNED_NUMBERS``),
    the other values walked in their place; what the look at the values finds is kept for
    their publication (``_phase_tokens``), with the keys written, each time it stands."""
    fields = JsonlFields()
    pairs = fields._pairs
    others = iter(phases.others)
    flat = True
    found = 0  # (the keys and strings decoded, each time it stands)
    for start, nodeid, file, line, end, ended, _, _ in phases.rows:
        if start:
            pairs[_EVENT] = None
            pairs[_STARTED] = None
            pairs["when", start] = None
            pairs["nodeid", nodeid] = None
            if line:  # (a file and a line given: the file may be "")
                pairs["file", file] = None
                found += 14  # (9 keys, 5 strings)
            else:
                found += 11
        elif end:
            pairs[_EVENT] = None
            pairs[_ENDED] = None
            pairs["when", end] = None
            pairs["nodeid", ended] = None
            pairs[_PASSED] = None
            found += 14
        else:
            value = next(others)
            alone, strings = fields._feed((value,))
            if alone and flat:
                found += len(value) + strings
            else:
                flat = False
    strings_found = fields.strings()
    _remember_phases(phases, (strings_found, found) if flat else None)
    quiet = sanitizer.quiet_among(strings_found) if sanitizer is not None else ()
    return fields.text((), quiet)


_fed_phases: dict[int, tuple[PhaseLines, tuple[list[str], int] | None]] = {}
"""What ``_phase_fields`` found of the last ``PhaseLines`` it read (by identity, each kept
with them): the distinct strings of their pairs, and how many keys and strings the lines hold,
each time it stands; None where a value was not a record of scalars and lists of scalars."""


def _remember_phases(phases: PhaseLines, found: tuple[list[str], int] | None) -> None:
    while len(_fed_phases) >= _KEPT_FED:
        del _fed_phases[next(iter(_fed_phases))]  # the oldest
    _fed_phases[id(phases)] = (phases, found)


_fed: dict[int, tuple[tuple[Any, ...], tuple[list[str], int] | None]] = {}
"""What ``_jsonl_fields`` found of the last values it read (``read_all``'s, by identity; each
kept with them, so that its identity is not another's while it is kept), for their
publication (``_decoded_tokens``): when each is a record of scalars and lists of scalars, the
distinct strings of their pairs (the keys of those, and every string value) and how many
strings the values hold, each time it stands; else None."""
_KEPT_FED = 4


def _remember_fed(values: tuple[Any, ...], found: tuple[list[str], int] | None) -> None:
    if type(values) is not tuple:  # (a list may change under the same identity)
        return
    while len(_fed) >= _KEPT_FED:
        del _fed[next(iter(_fed))]  # the oldest
    _fed[id(values)] = (values, found)


def _fed_strings(values: tuple[Any, ...]) -> tuple[list[str], int] | None:
    """What ``_remember_fed`` kept for these very values; None when it kept nothing or found
    them not all records of scalars and lists of scalars."""
    kept = _fed.get(id(values))
    return kept[1] if kept is not None and kept[0] is values else None


def _read_status(run_dir: Path, relative: Path) -> os.stat_result:
    """The status of a file that may be published; ``UntrustedFile`` when it may not be read
    (not a regular file, reached through a link, over ``PUBLISH_LIMIT_BYTES``)."""
    path = run_dir / relative
    with open_regular(path, root=run_dir) as handle:
        status = os.fstat(handle.fileno())
    if status.st_size > PUBLISH_LIMIT_BYTES:
        detail = f"{describe_size(status)}, over the {PUBLISH_LIMIT_BYTES}-byte publication limit"
        raise UntrustedFile(path, "too_large", detail)
    return status


def _read(run_dir: Path, relative: Path) -> bytes:
    """A file to publish or learn from, whole; ``UntrustedFile`` as ``_read_status``."""
    return read_bounded(run_dir / relative, PUBLISH_LIMIT_BYTES, root=run_dir)


def learn_from_run(run_dir: Path, sanitizer: Sanitizer) -> None:
    """Let ``sanitizer`` learn every value its rules find in the run's files and file names."""
    for relative in _learnt_files(run_dir):
        sanitizer.harvest(str(relative), "a file name")
        with contextlib.suppress(OSError):
            if relative.suffix == ".jsonl":
                _read_status(run_dir, relative)  # (refused as it would be read)
                content = read_events(run_dir / relative, PUBLISH_LIMIT_BYTES)
                if isinstance(content, PhaseLines):
                    fields = _phase_fields(content, sanitizer)
                else:
                    fields = _jsonl_fields(content, sanitizer)
                sanitizer.harvest_records(fields, str(relative))
                continue
            text = _as_text(_read(run_dir, relative))
            if text is not None:
                sanitizer.harvest(text, str(relative))


def final_scan_directory(directory: Path, sanitizer: Sanitizer) -> list[Leak]:
    """Every known secret in ``directory``'s file names and exact file bytes."""
    index = sanitizer.index
    leaks = []
    for path in sorted(directory.rglob("*")):
        relative = str(path.relative_to(directory))
        where = f"{contract.PUBLIC_DIR}/{relative}"
        leaks += final_scan(relative.encode(), index, TEXT, f"the name {where}")
        if path.is_file():
            leaks += final_scan(path.read_bytes(), index, file_channel(relative), where)
    return leaks


def _read_map(run_dir: Path) -> dict[str, Any]:
    try:
        document = json.loads((run_dir / contract.SANITIZE_MAP).read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):  # (RecursionError: nested too deep)
        return {}
    return document if isinstance(document, dict) else {}


def _load_map(run_dir: Path) -> dict[str, str]:
    pseudonyms = _read_map(run_dir).get("pseudonyms")
    return dict(pseudonyms) if isinstance(pseudonyms, dict) else {}


def save_map(run_dir: Path, sanitizer: Sanitizer) -> None:
    """The run's pseudonyms (internal: never published); written only when they changed
    (publishing learns no new pseudonym from most runs)."""
    write_json_atomic(
        run_dir / contract.SANITIZE_MAP, {"pseudonyms": sanitizer.pseudonyms}, if_changed=True
    )


def run_sanitizer(
    run_dir: Path,
    environ: Mapping[str, str],
    sources: SecretSources | None = None,
    *,
    identities: Identities | None = None,
    disabled_rules: Sequence[str] = (),
) -> Sanitizer:
    """The sanitizer of one run: the secrets of ``environ`` and of every source ever given for
    the run (:mod:`qualify.publish.sources`: ``sources`` added to those recorded, the union
    recorded), the run's pseudonym map, and every value its rules find in the run's files."""
    sources = recorded_sources(run_dir).union(sources or SecretSources())
    known = sources.known()  # a file that cannot be read is refused before it is recorded
    record_sources(run_dir, sources)
    sanitizer = Sanitizer(
        environ,
        identities if identities is not None else Identities.current(environ),
        known=known,
        secret_env=sources.secret_env,
        disabled_rules=disabled_rules,
        pseudonyms=_load_map(run_dir),
    )
    learn_from_run(run_dir, sanitizer)
    save_map(run_dir, sanitizer)
    return sanitizer


def _swap_in(staging: Path, public: Path) -> None:
    """Replace public/ by the staging directory (rename; the old one removed first)."""
    if public.exists():
        old = Path(tempfile.mkdtemp(prefix=".public.old-", dir=public.parent))
        public.rename(old / contract.PUBLIC_DIR)
        shutil.rmtree(old)
    staging.chmod(0o755)
    staging.rename(public)
    directory = os.open(public.parent, os.O_RDONLY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)


def publish_run(
    run_dir: Path,
    level: str,
    sanitizer: Sanitizer,
    *,
    include: Sequence[str] = (),
) -> PublishResult:
    """Write ``run_dir/public`` at ``level`` (internal: every text file; public: no raw logs)
    through ``sanitizer`` (see :func:`run_sanitizer`).

    ``include``: more files (relative to ``run_dir``) to publish at the public level.
    """
    if level not in LEVELS:
        raise UsageError(f"publish level {level!r} is not valid (valid: {', '.join(LEVELS)})")
    public = run_dir / contract.PUBLIC_DIR
    staging = Path(tempfile.mkdtemp(prefix=".public.tmp-", dir=run_dir))
    writer = _Writer(run_dir, staging, sanitizer, level)
    counts_before = dict(sanitizer.counts)
    reason = None
    try:
        for relative in _sources(run_dir, level, include):
            writer.write(relative)
        save_map(run_dir, sanitizer)
        leaks = final_scan_directory(staging, sanitizer)
        if leaks:
            raise PublicationLeak("the final scan of public/ found " + describe(leaks))
        _swap_in(staging, public)
    except Exception as exc:
        text = str(exc) if isinstance(exc, PublicationLeak) else repr(exc)
        reason = sanitizer.clean(text)
        shutil.rmtree(staging, ignore_errors=True)
        shutil.rmtree(public, ignore_errors=True)
    counts = {
        rule: count - counts_before.get(rule, 0)
        for rule, count in sanitizer.counts.items()
        if count > counts_before.get(rule, 0)
    }
    result = PublishResult(
        ok=reason is None,
        level=level,
        public_dir=public if reason is None else None,
        reason=reason,
        rule_counts=counts,
        files=tuple(writer.files) if reason is None else (),
        skipped=tuple(writer.skipped),
        withheld=dict(writer.withheld),
    )
    write_json_atomic(run_dir / contract.PUBLICATION, result.to_dict())
    return result
