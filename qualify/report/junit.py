"""The one JUnit writer: a run's JUnit file and the merged JUnit of many runs.

Built with junitparser; the output validates against the junit-10 schema (no ``skipped`` on
``<testsuites>``, times as plain decimals), except with ``with_location`` (xunit1's ``file``
and ``line`` on testcases, which junit-10 does not allow). Illegal XML characters in text that
came from the family (test ids, failure messages) are written as ``\\xNN``: one such character
would make the file unreadable for every consumer.
"""

from __future__ import annotations

import copy
import io
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from junitparser import Error, Failure, JUnitXml, Skipped, TestCase, TestSuite

from qualify.atomic import write_bytes_atomic
from qualify.evidence.junit import JUnitCase
from qualify.evidence.xmltree import etree

# XML 1.0 allows only these characters; the rest (most C0 controls, lone surrogates, U+FFFE/F)
# make a JUnit file unreadable for every consumer. They are written as \xNN instead.
_ILLEGAL_XML = re.compile("[^\u0009\u000a\u000d\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
_TEXT_LIMIT = 64 * 1024
_RESULTS = {"failed": Failure, "error": Error, "skipped": Skipped}


def xml_safe(text: str | None, limit: int = _TEXT_LIMIT) -> str:
    """``text`` with illegal XML characters escaped as ``\\xNN`` and bounded in size."""
    if not text:
        return ""
    if len(text) > limit:
        text = text[: limit // 2] + "\n[... truncated ...]\n" + text[-limit // 2 :]
    return _ILLEGAL_XML.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def testcase(case: JUnitCase, with_location: bool = False) -> TestCase:
    """One ``<testcase>`` with its result element."""
    element = TestCase(xml_safe(case.name), xml_safe(case.classname), round(case.time_s, 3))
    if with_location and case.file:
        element._elem.set("file", xml_safe(case.file))  # xunit1: junitparser has no such attr
        if case.line is not None:
            element._elem.set("line", str(case.line))
    kind = _RESULTS.get(case.outcome)
    if kind is not None:
        result = kind(xml_safe(case.message or case.outcome, 2000), xml_safe(case.kind) or None)
        if case.text:
            result.text = xml_safe(case.text)
        element.result = [result]
    return element


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
    """The document: one ``<testsuites>`` with totals, indented, UTF-8 with a declaration."""
    document = JUnitXml(name)
    for suite in suites:
        # append, not add_testsuite: that merges suites it finds equal (same name, stamp and
        # properties), and two runs of one family x profile stay two suites.
        document.append(suite)
    document.update_statistics()
    # The junit-10 schema has no "skipped" on <testsuites>; it stays on each <testsuite>.
    del document._elem.attrib["skipped"]
    return serialize(document)


def serialize(document: JUnitXml) -> bytes:
    """A JUnit document as written to disk: indented, UTF-8 with a declaration."""
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
) -> bytes:
    """A run's JUnit file: one suite holding ``cases`` and the run's properties."""
    elements = [testcase(case, with_location) for case in cases]
    return render([testsuite(suite_name, elements, properties, timestamp, owned=True)])


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
