"""JUnit files read with junitparser, and ``JUnitCase``, the one testcase type qualify writes.

junitparser builds on lxml when it is installed and on the standard library's ElementTree
otherwise; ``_parse`` gives it a parser that resolves no entities either way. junitparser (and
the ``importlib.metadata`` it loads) is imported by the readers, not with ``JUnitCase``: a run
needs the type before its E2E starts and the readers only after it.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from junitparser import JUnitXml, TestCase

OUTCOMES = ("passed", "failed", "error", "skipped")


@dataclasses.dataclass(frozen=True)
class JUnitCase:
    """One JUnit testcase."""

    classname: str
    name: str
    outcome: str
    """One of passed, failed, error, skipped."""
    time_s: float = 0.0
    message: str | None = None
    text: str | None = None
    file: str | None = None
    line: int | None = None
    kind: str | None = None
    """Failure type (a verdict such as OOM_KILLED, or a parity divergence kind)."""


def split_nodeid(nodeid: str) -> tuple[str, str]:
    """(classname, name) as pytest's JUnit writes them.

    "a/test_x.py::C::t" becomes ("a.test_x.C", "t").
    """
    parts = nodeid.split("::")
    path = parts[0]
    if path.endswith(".py"):
        path = path[:-3]
    names = [path.replace("/", "."), *parts[1:]]
    if len(names) == 1:
        return "", names[0]
    return ".".join(names[:-1]), names[-1]


def _parse(path: Path | str) -> Any:
    """The element tree of ``path`` with the parser junitparser builds on, entities unresolved
    and no network (a JUnit file comes from the family's test run, or from anywhere at all in
    triage, and must not pull local files into what qualify publishes)."""
    from qualify.evidence.xmltree import etree as _etree

    if _etree.__name__.startswith("lxml"):
        parser = _etree.XMLParser(resolve_entities=False, no_network=True, huge_tree=True)
        return _etree.parse(str(path), parser=parser)
    return _etree.parse(str(path))  # the standard library never fetches external entities


def read_junit(path: Path) -> JUnitXml | None:
    """A whole JUnit file (``<testsuites>`` or a lone ``<testsuite>``); None when it is missing
    or not valid XML."""
    from junitparser import JUnitXml, JUnitXmlError

    try:
        return JUnitXml.fromfile(str(path), parse_func=_parse)
    except (OSError, ValueError, SyntaxError, JUnitXmlError):
        # ET.ParseError is a SyntaxError, lxml's XMLSyntaxError a ValueError.
        return None


def _outcome(case: TestCase) -> tuple[str, str | None, str | None]:
    results = case.result
    if not results:
        return "passed", None, None  # most cases: no import, no scan
    from junitparser import Error, Failure, Skipped

    for kind, outcome in ((Failure, "failed"), (Error, "error"), (Skipped, "skipped")):
        for result in results:
            if isinstance(result, kind):
                return outcome, result.message, result.text
    return "passed", None, None


def _time(case: TestCase) -> float:
    try:
        return float(case.time or 0.0)
    except ValueError:  # a time attribute that is not a number
        return 0.0


def parse_pytest_junit(path: Path) -> list[JUnitCase] | None:
    """Testcases of a complete pytest JUnit file; None when missing or not valid XML."""
    document = read_junit(path)
    if document is None:
        return None
    cases = []
    for suite in document:
        for case in suite:
            outcome, message, text = _outcome(case)
            line = case._elem.get("line")  # xunit1 only; junitparser has no attribute for it
            cases.append(
                JUnitCase(
                    classname=case.classname or "",
                    name=case.name or "",
                    outcome=outcome,
                    time_s=_time(case),
                    message=message,
                    text=text,
                    file=case._elem.get("file"),
                    line=int(line) if line and line.isdigit() else None,
                )
            )
    return cases
