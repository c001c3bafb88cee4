"""JUnit XML and pytest report logs (pytest-reportlog), read defensively and streamed."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

from qualify import records
from qualify.evidence.evidence_line import Evidence
from qualify.untrusted import open_regular

MAX_LINE_BYTES = 1 << 20
MAX_FAILURES = 50


@records.record
class TestOutcomes:
    """Test results from JUnit or a report log."""

    source: str
    tests: int = 0
    failures: list[Evidence] = records.field(default_factory=list)
    resource_errors: list[Evidence] = records.field(default_factory=list)
    """qualify's own JUnit: errors typed OOM_KILLED, CUDA_OOM, KILLED, TIMEOUT, ERROR."""
    parity_failures: list[Evidence] = records.field(default_factory=list)
    """qualify's JUnit: failed cases of its ``<family>.parity`` suite (not test failures)."""
    exitstatus: int | None = None
    problem: str | None = None
    qualify: dict[str, str] = records.field(default_factory=dict)
    """qualify's own JUnit: its suites' ``qualify.*`` properties (verdict, reason, limits)."""


_QUALIFY_TYPES = ("OOM_KILLED", "CUDA_OOM", "KILLED", "TIMEOUT", "ERROR")
_PROPERTIES = 64


def read_junit_outcomes(path: Path, source: str | None = None) -> TestOutcomes:
    """Failures and errors of a JUnit file (a truncated file keeps what parsed before the cut).

    Streamed with ElementTree's iterparse rather than junitparser, which reads a whole
    document or nothing: the JUnit of a job killed mid-write, or a multi-GB one, is exactly
    what triage is given, and every testcase before the cut counts.
    """
    outcomes = TestOutcomes(source or str(path))
    try:
        with open_regular(path) as handle:
            for _, element in ET.iterparse(handle, events=("end",)):
                if element.tag == "property":
                    name = element.get("name") or ""
                    if name.startswith("qualify.") and len(outcomes.qualify) < _PROPERTIES:
                        outcomes.qualify.setdefault(name, element.get("value") or "")
                    continue
                if element.tag != "testcase":
                    continue
                outcomes.tests += 1
                for child in element:
                    if child.tag not in ("failure", "error"):
                        continue
                    name = f"{element.get('classname', '')}::{element.get('name', '')}"
                    kind = child.get("type") or child.tag
                    text = f"{name} {child.tag} ({kind}): {child.get('message', '')}"
                    evidence = Evidence.of(outcomes.source, None, text, f"junit_{child.tag}")
                    if kind in _QUALIFY_TYPES:
                        outcomes.resource_errors.append(evidence)
                    elif element.get("classname", "").endswith("parity"):
                        outcomes.parity_failures.append(evidence)
                    elif len(outcomes.failures) < MAX_FAILURES:
                        outcomes.failures.append(evidence)
                element.clear()
    except ET.ParseError as exc:
        outcomes.problem = f"{outcomes.source}: not valid XML ({exc}); read up to the error"
    except OSError as exc:
        outcomes.problem = f"cannot read {path}: {exc.strerror or exc}"
    return outcomes


def read_report_log(path: Path, source: str | None = None) -> TestOutcomes:
    """Failed TestReports and the session exit status of a pytest-reportlog JSON-lines file."""
    outcomes = TestOutcomes(source or str(path))
    bad = 0
    try:
        with open_regular(path) as handle:
            for number, raw in enumerate(iter(lambda: handle.readline(MAX_LINE_BYTES), b""), 1):
                try:
                    record = json.loads(raw)
                except (ValueError, RecursionError):  # (RecursionError: nested too deep)
                    bad += 1
                    continue
                if not isinstance(record, dict):
                    bad += 1
                    continue
                _report_record(record, number, outcomes)
    except OSError as exc:
        outcomes.problem = f"cannot read {path}: {exc.strerror or exc}"
    if bad and not outcomes.tests and outcomes.exitstatus is None:
        outcomes.problem = f"{outcomes.source}: no pytest report-log records ({bad} bad lines)"
    return outcomes


def _report_record(record: dict[str, object], number: int, outcomes: TestOutcomes) -> None:
    kind = record.get("$report_type")
    if kind == "SessionFinish":
        status = record.get("exitstatus")
        outcomes.exitstatus = status if isinstance(status, int) else None
    if kind != "TestReport":
        return
    if record.get("when") == "call":
        outcomes.tests += 1
    if record.get("outcome") == "failed" and len(outcomes.failures) < MAX_FAILURES:
        text = f"{record.get('nodeid')} {record.get('when')}: failed"
        outcomes.failures.append(Evidence.of(outcomes.source, number, text, "reportlog_failed"))
