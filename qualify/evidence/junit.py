"""JUnit files read, and ``JUnitCase``, the one testcase type qualify writes.

junitparser builds on lxml when it is installed and on the standard library's ElementTree
otherwise; ``_parse`` uses the same library, with a parser that resolves no entities either
way. ``read_junit`` gives junitparser's document; ``parse_pytest_junit`` reads the element tree
itself. junitparser (and the ``importlib.metadata`` it loads) is imported by the readers, not
with ``JUnitCase``: a run needs the type before its E2E starts and the readers only after it.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from qualify.records import frozen_record

if TYPE_CHECKING:
    from junitparser import JUnitXml

OUTCOMES = ("passed", "failed", "error", "skipped")


@frozen_record
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
    """1-based (xunit1's ``line`` attribute is 0-based, as pytest writes it)."""
    kind: str | None = None
    """The result's type: a verdict such as OOM_KILLED, a parity divergence kind, or a skip's
    as pytest gives it (``pytest.skip``, ``pytest.xfail``)."""
    properties: tuple[tuple[str, str], ...] = ()
    """The test's ``record_property`` pairs (written in xunit1 only: not valid junit-10)."""
    output: tuple[tuple[str, str], ...] = ()
    """(``system-out`` or ``system-err``, text): the captured output pytest's JUnit writer
    would write for the test (``junit_logging``)."""


NOT_RUN = "not run: "
"""The message prefix of a collected test that never started (a skipped testcase)."""
OWN_CLASSNAME = "qualify"
"""The classname of qualify's own testcase (what ended the run, when not a test)."""


def family_counts(cases: Iterable[JUnitCase]) -> dict[str, int]:
    """The family's tests by outcome, each in exactly one bucket: passed, failed, errors,
    skipped, not_run (skipped because the run ended before them). qualify's own testcase and
    the parity suite's cases are not the family's tests. The one count every report prints."""
    counts = dict.fromkeys(("passed", "failed", "errors", "skipped", "not_run"), 0)
    for case in cases:
        if case.classname == OWN_CLASSNAME or case.classname.endswith("parity"):
            continue
        if case.outcome == "skipped" and (case.message or "").startswith(NOT_RUN):
            counts["not_run"] += 1
        elif case.outcome == "error":
            counts["errors"] += 1
        elif case.outcome in counts:
            counts[case.outcome] += 1
    return counts


def counts_said(counts: dict[str, int], collected: int | None = None) -> str:
    """``3 passed, 1 failed, 0 errors, 2 skipped, 4 not run (of 10 collected)``: not run only
    when there are such tests, the collected count when known."""
    said = (
        f"{counts['passed']} passed, {counts['failed']} failed, {counts['errors']} errors, "
        f"{counts['skipped']} skipped"
    )
    if counts.get("not_run"):
        said += f", {counts['not_run']} not run"
    if collected:
        said += f" (of {collected} collected)"
    return said


def split_nodeid(nodeid: str) -> tuple[str, str]:
    """(classname, name) as pytest's JUnit writes them.

    "a/test_x.py::C::t" becomes ("a.test_x.C", "t"); as pytest's ``mangle_test_address``, only
    the part before the first ``[`` is split on ``::`` (the parameters stay whole:
    "t.py::t[a::b/c.py]" is ("t", "t[a::b/c.py]")).
    """
    address, bracket, params = nodeid.partition("[")
    parts = address.split("::")
    parts[-1] += bracket + params
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
    from qualify.untrusted import READ_LIMIT_BYTES, UntrustedFile, open_regular

    # Opened as a regular file only (a pipe put in its place would block the open), and no
    # larger than a reader keeps.
    with open_regular(Path(path)) as handle:
        status = os.fstat(handle.fileno())
        if status.st_size > READ_LIMIT_BYTES:
            raise UntrustedFile(Path(path), "too_large", f"{status.st_size} bytes")
        if _etree.__name__.startswith("lxml"):
            parser = _etree.XMLParser(resolve_entities=False, no_network=True, huge_tree=True)
            return _etree.parse(handle, parser=parser)
        return _etree.parse(handle)  # the standard library never fetches external entities


def read_junit(path: Path) -> JUnitXml | None:
    """A whole JUnit file (``<testsuites>`` or a lone ``<testsuite>``); None when it is missing
    or not valid XML."""
    from junitparser import JUnitXml, JUnitXmlError

    try:
        return JUnitXml.fromfile(str(path), parse_func=_parse)
    except (OSError, ValueError, SyntaxError, JUnitXmlError):
        # ET.ParseError is a SyntaxError, lxml's XMLSyntaxError a ValueError.
        return None


RESULT_TAGS = {"failed": "failure", "error": "error", "skipped": "skipped"}
"""Outcome -> the testcase's result element, in the order they decide a testcase read back."""
_OUTCOME_OF = {tag: outcome for outcome, tag in RESULT_TAGS.items()}


def _outcome(case: Any) -> tuple[str, str | None, str | None]:
    """A testcase element's outcome, message and text: its first failure, else its first
    error, else its first skip, at any depth (as junitparser reads them); passed without."""
    found: dict[str, Any] = {}
    for element in case.iter():
        outcome = _OUTCOME_OF.get(element.tag) if isinstance(element.tag, str) else None
        if outcome is not None and outcome not in found:
            found[outcome] = element
    for outcome in RESULT_TAGS:
        result = found.get(outcome)
        if result is not None:
            return outcome, result.get("message"), result.text
    return "passed", None, None


def _time(value: str | None) -> float:
    try:
        return float(value.replace(",", "")) if value else 0.0
    except ValueError:  # a time attribute that is not a number
        return 0.0


def _testcases(suite: Any) -> Iterator[Any]:
    """A suite's testcase elements, then those of its nested suites (junitparser's order)."""
    yield from suite.iterfind("testcase")
    for nested in suite.iterfind("testsuite"):
        yield from _testcases(nested)


def parse_pytest_junit(path: Path) -> list[JUnitCase] | None:
    """Testcases of a complete pytest JUnit file; None when missing or not valid XML.

    Read from the element tree itself, as junitparser would read it (``tests/test_junit.py``
    compares them): wrapping each of a large suite's testcases in junitparser's objects cost
    most of the reading."""
    try:
        root = _parse(path).getroot()
    except (OSError, ValueError, SyntaxError):  # ET.ParseError is a SyntaxError
        return None
    if root.tag == "testsuite":
        suites = [root]
    elif root.tag == "testsuites":
        suites = list(root.iterfind("testsuite"))
    else:
        return None
    cases = []
    for suite in suites:
        for case in _testcases(suite):
            outcome, message, text = _outcome(case)
            line = case.get("line")  # xunit1 only
            cases.append(
                JUnitCase(
                    classname=case.get("classname") or "",
                    name=case.get("name") or "",
                    outcome=outcome,
                    time_s=_time(case.get("time")),
                    message=message,
                    text=text,
                    file=case.get("file"),
                    line=int(line) + 1 if line and line.isdigit() else None,
                )
            )
    return cases


def junit_properties(path: Path) -> dict[str, str] | None:
    """The ``<property>`` name/value pairs of a JUnit file's suites (qualify writes the run's
    verdict there: ``qualify.verdict``, ``qualify.reason``); None when missing or not XML."""
    try:
        root = _parse(path).getroot()
    except (OSError, ValueError, SyntaxError):  # ET.ParseError is a SyntaxError
        return None
    found: dict[str, str] = {}
    for element in root.iter("property"):
        name, value = element.get("name"), element.get("value")
        if name is not None and value is not None:
            found.setdefault(name, value)
    return found
