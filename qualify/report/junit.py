"""junit.xml: always present and valid, counts consistent, illegal XML characters escaped."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from pathlib import Path

from qualify.report.atomic import write_bytes_atomic
from qualify.testcases import JUnitCase

# XML 1.0 allows only these characters; the rest (most C0 controls, lone surrogates, U+FFFE/F)
# make a JUnit file unreadable for every consumer. They are written as \xNN instead.
_ILLEGAL_XML = re.compile("[^\u0009\u000a\u000d\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
_TEXT_LIMIT = 64 * 1024


def xml_safe(text: str | None, limit: int = _TEXT_LIMIT) -> str:
    """``text`` with illegal XML characters escaped as ``\\xNN`` and bounded in size."""
    if not text:
        return ""
    if len(text) > limit:
        text = text[: limit // 2] + "\n[... truncated ...]\n" + text[-limit // 2 :]
    return _ILLEGAL_XML.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def _counts(cases: Sequence[JUnitCase]) -> dict[str, str]:
    return {
        "tests": str(len(cases)),
        "failures": str(sum(c.outcome == "failed" for c in cases)),
        "errors": str(sum(c.outcome == "error" for c in cases)),
        "skipped": str(sum(c.outcome == "skipped" for c in cases)),
        "time": f"{sum(c.time_s for c in cases):.3f}",
    }


def _testcase(parent: ET.Element, case: JUnitCase, with_location: bool) -> None:
    attributes = {
        "classname": xml_safe(case.classname),
        "name": xml_safe(case.name),
        "time": f"{case.time_s:.3f}",
    }
    if with_location and case.file:
        attributes["file"] = xml_safe(case.file)
        if case.line is not None:
            attributes["line"] = str(case.line)
    element = ET.SubElement(parent, "testcase", attributes)
    tag = {"failed": "failure", "error": "error", "skipped": "skipped"}.get(case.outcome)
    if tag is None:
        return
    attributes = {"message": xml_safe(case.message or case.outcome, 2000)}
    if case.kind:
        attributes["type"] = xml_safe(case.kind)
    child = ET.SubElement(element, tag, attributes)
    if case.text:
        child.text = xml_safe(case.text)


def render_junit(
    suite_name: str,
    cases: Sequence[JUnitCase],
    properties: Mapping[str, str],
    timestamp: str,
    with_location: bool = False,
) -> bytes:
    """One <testsuites> with one <testsuite> holding ``cases`` and the run's properties."""
    counts = _counts(cases)
    # The junit-10 schema has no "skipped" on <testsuites>; it stays on <testsuite>.
    root_counts = {key: value for key, value in counts.items() if key != "skipped"}
    root = ET.Element("testsuites", {"name": "qualify", **root_counts})
    suite = ET.SubElement(
        root, "testsuite", {"name": xml_safe(suite_name), **counts, "timestamp": timestamp}
    )
    props = ET.SubElement(suite, "properties")
    for key, value in properties.items():
        ET.SubElement(props, "property", {"name": xml_safe(key), "value": xml_safe(value, 2000)})
    for case in cases:
        _testcase(suite, case, with_location)
    ET.indent(root)
    body: bytes = ET.tostring(root, encoding="utf-8")
    return b'<?xml version="1.0" encoding="utf-8"?>\n' + body


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
