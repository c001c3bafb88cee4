"""The JUnit writers: a run's JUnit file, and the merged JUnit of many runs.

The output validates against the junit-10 schema (no ``skipped`` on ``<testsuites>``, times
as plain decimals), except with ``with_location`` (xunit1's ``file`` and ``line`` on
testcases, which junit-10 does not allow). Illegal XML characters in text that came from the
family (test ids, failure messages) are written visibly, as pytest writes them (``#x07``):
one such character would make the file unreadable for every consumer.

A run's file (:func:`render_junit`) is written directly as text, byte for byte what
junitparser writes over lxml, whichever tree library is installed: faster than building a tree
for a large suite, and the start-up never imports junitparser (nor the lxml and
``importlib.metadata`` it loads). The merged document (:func:`render`) copies the runs'
testcase elements as they are, through junitparser.
"""

from __future__ import annotations

import copy
import io
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from qualify import cuts
from qualify.atomic import write_bytes_atomic
from qualify.evidence.junit import OWN_CLASSNAME, RESULT_TAGS, JUnitCase
from qualify.records import frozen_record
from qualify.untrusted import escape_char

if TYPE_CHECKING:
    from junitparser import JUnitXml, TestCase, TestSuite

# XML 1.0 allows tab, LF, CR, U+0020-U+D7FF, U+E000-U+FFFD and U+10000 up; the rest (the other
# C0 controls, lone surrogates, U+FFFE/F) make a JUnit file unreadable for every consumer. They
# are written visibly instead, as pytest's JUnit writer writes them (``#x07``; DEL too, as
# pytest does), but a lone surrogate, which stands for a byte of a name that is not UTF-8 and
# which pytest cannot write at all: ``\xNN`` (``escape_char``). Spelled as the characters
# refused: the complement of the allowed ranges compiles in a tenth of the time.
_ILLEGAL_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ud800-\udfff\ufffe\uffff]")


def _visible(char: str) -> str:
    code = ord(char)
    if 0xD800 <= code <= 0xDFFF:
        return escape_char(char)
    return f"#x{code:02X}" if code <= 0xFF else f"#x{code:04X}"


_TEXT_LIMIT = 64 * 1024 + 64
"""A text longer than this keeps its first and last halves (a test's text comes bounded by
the harness's plugin, its halves of 64 KiB and a line between, and is written whole)."""


def xml_safe(text: str | None, limit: int = _TEXT_LIMIT) -> str:
    """``text`` with illegal XML characters escaped as ``\\xNN`` and bounded in size."""
    if not text:
        return ""
    if len(text) > limit:
        text = cuts.head(text, limit // 2) + "\n[... truncated ...]\n" + cuts.tail(text, limit // 2)
    return _ILLEGAL_XML.sub(lambda m: _visible(m.group()), text)


def testcase(case: JUnitCase, with_location: bool = False) -> TestCase:
    """One ``<testcase>`` with its result element."""
    import junitparser

    element = junitparser.TestCase(
        xml_safe(case.name), xml_safe(case.classname), round(case.time_s, 3)
    )
    if with_location and case.file:
        element._elem.set("file", xml_safe(case.file))  # xunit1: junitparser has no such attr
        if case.line is not None:
            element._elem.set("line", str(max(case.line - 1, 0)))
    children = []
    if with_location and case.properties:
        properties = junitparser.Properties()
        for key, value in case.properties:
            properties.add_property(junitparser.Property(xml_safe(key), xml_safe(value, 2000)))
        children.append(properties._elem)
    tag = RESULT_TAGS.get(case.outcome)
    if tag is not None:
        result = getattr(junitparser, tag.capitalize())()
        message = case.outcome if case.message is None else case.message
        result._elem.set("message", xml_safe(message, 2000))  # (junitparser drops an empty one)
        if case.kind:
            result._elem.set("type", xml_safe(case.kind))
        if case.text:
            result.text = xml_safe(case.text)
        children.append(result._elem)
    for tag_name, text in case.output:
        output = etree_element(tag_name)
        output.text = xml_safe(text) or None
        children.append(output)
    for child in children:
        element._elem.append(child)
    return element


def etree_element(tag: str) -> Any:
    """A new element of the tree library junitparser builds on."""
    import junitparser.junitparser as module

    return vars(module)["etree"].Element(tag)


def testsuite(
    name: str,
    cases: Iterable[TestCase],
    properties: Mapping[str, str],
    timestamp: str | None = None,
    *,
    owned: bool = False,
) -> TestSuite:
    """One ``<testsuite>``: properties first, then ``cases``: copied, never moved, unless the
    caller made them for this suite alone (``owned``)."""
    from junitparser import TestSuite

    suite = TestSuite(xml_safe(name))
    for key, value in properties.items():
        suite.add_property(xml_safe(key), xml_safe(value, 2000))
    # One statistics pass at the end: add_testcase would recount the suite for every case.
    suite.extend(cases if owned else (copy.deepcopy(case) for case in cases))
    suite.update_statistics()
    if timestamp is not None:
        suite.timestamp = timestamp
    return suite


def render(suites: Sequence[TestSuite], name: str = "qualify") -> bytes:
    """The document: one ``<testsuites>`` with totals, indented, UTF-8 with a declaration;
    ``suites`` as :func:`testsuite` makes them (their statistics counted)."""
    from junitparser import JUnitXml

    document = JUnitXml(name)
    for suite in suites:
        # append, not add_testsuite: that merges suites it finds equal (same name, stamp and
        # properties), and two runs of one family x profile stay two suites.
        document.append(suite)
    # The totals of JUnitXml.update_statistics, summed from the suites' own: it would count
    # every testcase of every suite again (a third of the time of a large suite's file).
    document.tests = sum(suite.tests for suite in suites)
    document.failures = sum(suite.failures for suite in suites)
    document.errors = sum(suite.errors for suite in suites)
    document.skipped = sum(suite.skipped for suite in suites)
    document.time = round(sum(suite.time for suite in suites), 3)
    # The junit-10 schema has no "skipped" on <testsuites>; it stays on each <testsuite>.
    del document._elem.attrib["skipped"]
    return serialize(document)


def serialize(document: JUnitXml) -> bytes:
    """A JUnit document as written to disk: indented, UTF-8 with a declaration."""
    from qualify.evidence.xmltree import etree

    etree.indent(document._elem)
    buffer = io.BytesIO()
    document.write(buffer)
    return buffer.getvalue()


def render_junit(
    suite_name: str,
    cases: Sequence[JUnitCase],
    properties: Mapping[str, str],
    timestamp: str,
    with_location: bool = False,
    suite_properties: Sequence[tuple[str, str]] = (),
) -> bytes:
    """A run's JUnit file: one suite holding the family's ``cases``, the run's properties, then
    those the tests recorded for the suite (``suite_properties``); qualify's own testcase (what
    ended the run) in a suite of its own, ``qualify``, so that the family's suite counts the
    family's tests alone, as every other report does."""
    own = [case for case in cases if case.classname == OWN_CLASSNAME]
    family = [case for case in cases if case.classname != OWN_CLASSNAME]
    pairs = [*properties.items(), *suite_properties]
    suites = [_suite(suite_name, family, pairs, timestamp, with_location)]
    if own:
        suites.append(_suite(OWN_CLASSNAME, own, [], timestamp, with_location))
    failures, errors = sum(s.failures for s in suites), sum(s.errors for s in suites)
    time = round(sum(s.time for s in suites), 3)
    head = (
        "<?xml version='1.0' encoding='UTF-8'?>\n"
        f'<testsuites name="qualify" tests="{sum(s.tests for s in suites)}" '
        f'failures="{failures}" errors="{errors}" time="{round(float(time), 3)}">\n'
    )
    return "".join([head, *(s.text for s in suites), "</testsuites>"]).encode()


@frozen_record
class _Suite:
    text: str
    tests: int
    failures: int
    errors: int
    time: float


def _suite(
    name: str,
    cases: Sequence[JUnitCase],
    pairs: Sequence[tuple[str, str]],
    timestamp: str,
    with_location: bool,
) -> _Suite:
    """One ``<testsuite>`` element (its lines, indented) and its counts."""
    counts = dict.fromkeys(RESULT_TAGS, 0)
    total: float = 0  # junitparser's sum: the rounded times as written, from an int 0
    body: list[str] = []
    for case in cases:
        time = round(case.time_s, 3)
        total += time
        test, classname = case.name, case.classname
        if (
            case.outcome not in RESULT_TAGS
            and not case.output
            and not (with_location and (case.file or case.properties))
            and _attribute_plain(test)
            and _attribute_plain(classname)
        ):  # a passed test's line, as the general way below writes it
            body.append(f'    <testcase name="{test}" classname="{classname}" time="{time}"/>\n')
            continue
        attributes = [("name", xml_safe(test)), ("classname", xml_safe(classname))]
        attributes.append(("time", str(time)))
        if with_location and case.file:
            attributes.append(("file", xml_safe(case.file)))
            if case.line is not None:  # 0-based, as pytest's xunit1 writes it
                attributes.append(("line", str(max(case.line - 1, 0))))
        inner = []
        if with_location and case.properties:  # (not valid junit-10, as pytest warns)
            inner.append(_properties(case.properties, "      "))
        if case.outcome in RESULT_TAGS:
            counts[case.outcome] += 1
            result = [
                ("message", xml_safe(case.outcome if case.message is None else case.message, 2000))
            ]
            if case.kind:
                result.append(("type", xml_safe(case.kind)))
            inner.append(_element(RESULT_TAGS[case.outcome], result, case.text))
        inner.extend(_element(tag, [], text) for tag, text in case.output)
        if not inner:
            body.append(f"    <testcase{_attributes(attributes)}/>\n")
            continue
        body.append(f"    <testcase{_attributes(attributes)}>\n")
        body.extend(f"      {element}\n" for element in inner)
        body.append("    </testcase>\n")
    failures, errors, skipped = counts["failed"], counts["error"], counts["skipped"]
    time = round(total, 3)
    suite = _attributes(
        [("name", xml_safe(name)), ("tests", str(len(cases))), ("errors", str(errors)),
         ("failures", str(failures)), ("skipped", str(skipped)), ("time", str(time)),
         ("timestamp", timestamp)]
    )  # fmt: skip
    if pairs:
        text = f"  <testsuite{suite}>\n    {_properties(pairs, '    ')}\n"
    elif body:
        text = f"  <testsuite{suite}>\n"
    else:
        return _Suite(f"  <testsuite{suite}/>\n", 0, failures, errors, time)
    return _Suite(text + "".join(body) + "  </testsuite>\n", len(cases), failures, errors, time)


def _element(tag: str, attributes: list[tuple[str, str]], text: str | None) -> str:
    """One result or output element, its text escaped as lxml escapes it."""
    if not text:
        return f"<{tag}{_attributes(attributes)}/>"
    return f"<{tag}{_attributes(attributes)}>{xml_safe(text).translate(_TEXT_ESCAPES)}</{tag}>"


def _properties(pairs: Iterable[tuple[str, str]], indent: str) -> str:
    """A ``<properties>`` element of ``pairs``, its properties one per line under ``indent``."""
    lines = ["<properties>"]
    for key, value in pairs:
        pair = _attributes([("name", xml_safe(key)), ("value", xml_safe(value, 2000))])
        lines.append(f"{indent}  <property{pair}/>")
    lines.append(f"{indent}</properties>")
    return "\n".join(lines)


def write_junit(
    path: Path,
    suite_name: str,
    cases: Sequence[JUnitCase],
    properties: Mapping[str, str],
    timestamp: str,
    with_location: bool = False,
) -> None:
    """Render and write atomically."""
    write_bytes_atomic(path, render_junit(suite_name, cases, properties, timestamp, with_location))


_ATTRIBUTE_ESCAPES = str.maketrans(
    {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "\t": "&#9;", "\n": "&#10;",
     "\r": "&#13;"}
)  # fmt: skip
_TEXT_ESCAPES = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;", "\r": "&#13;"})


def _attributes(pairs: Iterable[tuple[str, str]]) -> str:
    """`` name="value"`` for each pair, in order, escaped as lxml escapes attribute values."""
    return "".join(f' {name}="{_escaped(value)}"' for name, value in pairs)


_ATTRIBUTE_SPECIAL = re.compile('[&<>"\t\n\r]')
"""The characters ``_ATTRIBUTE_ESCAPES`` replaces: a value without one is written as it is (a
search costs a fifth of a translation that replaces nothing)."""


def _attribute_plain(value: str) -> bool:
    """Whether ``value`` stands in an attribute as it is: a text within ``xml_safe``'s bound, no
    character to write visibly (``_ILLEGAL_XML``) or to escape (``_ATTRIBUTE_SPECIAL``)."""
    return (
        value.__class__ is str
        and len(value) <= _TEXT_LIMIT
        and _ILLEGAL_XML.search(value) is None
        and _ATTRIBUTE_SPECIAL.search(value) is None
    )


def _escaped(value: str) -> str:
    """An attribute value escaped (``_ATTRIBUTE_ESCAPES``)."""
    if _ATTRIBUTE_SPECIAL.search(value) is None:
        return value
    return value.translate(_ATTRIBUTE_ESCAPES)


def provisional_junit(suite_name: str, message: str, kind: str = "ERROR") -> bytes:
    """The JUnit file a run holds before its E2E starts: one error case ``qualify.run``,
    ``message`` its message and text (no properties, no timestamp)."""
    case = JUnitCase("qualify", "run", "error", message=message, text=message, kind=kind)
    return render_junit(suite_name, [case], {}, "")
