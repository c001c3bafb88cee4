"""Test cases of a run: from pytest's own JUnit when it is complete, else from the events.

After a SIGKILL pytest never writes its JUnit; the plugin's streamed events still say which
tests ran, how each phase ended, and which test and phase were running at the end.
"""

from __future__ import annotations

import dataclasses
import xml.etree.ElementTree as ET
from collections.abc import Iterable
from pathlib import Path
from typing import Any

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


@dataclasses.dataclass(frozen=True)
class RunProgress:
    """What the events say about the tests."""

    cases: tuple[JUnitCase, ...]
    running: str | None
    """nodeid of the test whose phase started and never ended."""
    running_when: str | None
    """setup, call or teardown."""
    collected: int
    not_run: tuple[str, ...]
    """nodeids collected but never started."""
    session_exitstatus: int | None


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


def parse_pytest_junit(path: Path) -> list[JUnitCase] | None:
    """Testcases of a complete pytest JUnit file; None when missing or not valid XML."""
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError):
        return None
    cases = []
    for element in root.iter("testcase"):
        outcome, message, text = "passed", None, None
        for tag in ("failure", "error", "skipped"):
            child = element.find(tag)
            if child is not None:
                outcome = "failed" if tag == "failure" else tag
                message, text = child.get("message"), child.text
                break
        line = element.get("line")
        cases.append(
            JUnitCase(
                classname=element.get("classname", ""),
                name=element.get("name", ""),
                outcome=outcome,
                time_s=float(element.get("time", "0") or 0),
                message=message,
                text=text,
                file=element.get("file"),
                line=int(line) if line and line.isdigit() else None,
            )
        )
    return cases


@dataclasses.dataclass
class _TestState:
    nodeid: str
    file: str | None = None
    line: int | None = None
    outcome: str | None = None
    message: str | None = None
    text: str | None = None
    duration: float = 0.0
    open_when: str | None = None
    phases_ended: set[str] = dataclasses.field(default_factory=set)


def _apply(state: _TestState, event: dict[str, Any]) -> None:
    when = str(event.get("when"))
    if event.get("state") == "start":
        state.open_when = when
        state.file, state.line = event.get("file"), event.get("line")
        return
    state.open_when = None
    state.phases_ended.add(when)
    state.duration += float(event.get("duration") or 0.0)
    outcome = event.get("outcome")
    if outcome == "failed" and state.outcome not in ("failed", "error"):
        state.outcome = "failed" if when == "call" else "error"
        state.message = f"{when} failed"
        state.text = event.get("longrepr")
    elif outcome in ("skipped", "xfailed") and state.outcome is None:
        state.outcome = "skipped"
        state.message = str(event.get("longrepr") or "skipped")[-500:]
    elif outcome == "passed" and when == "call" and state.outcome is None:
        state.outcome = "passed"


def progress_from_events(events: Iterable[dict[str, Any]]) -> RunProgress:
    """Replay the plugin's events into per-test results (tests never run have outcome None)."""
    states: dict[str, _TestState] = {}
    collected: list[str] = []
    exitstatus = None
    for event in events:
        kind = event.get("event")
        if kind == "collection":
            collected = [str(n) for n in event.get("nodeids", [])]
            for nodeid in collected:
                states.setdefault(nodeid, _TestState(nodeid))
        elif kind == "test_phase":
            nodeid = str(event.get("nodeid"))
            _apply(states.setdefault(nodeid, _TestState(nodeid)), event)
        elif kind == "session_finish":
            exitstatus = event.get("exitstatus")
    running = next((s for s in states.values() if s.open_when is not None), None)
    cases = [_case(state) for state in states.values() if state is not running]
    started = {s.nodeid for s in states.values() if s.phases_ended or s.open_when}
    return RunProgress(
        cases=tuple(case for case in cases if case is not None),
        running=running.nodeid if running else None,
        running_when=running.open_when if running else None,
        collected=len(collected),
        not_run=tuple(nodeid for nodeid in collected if nodeid not in started),
        session_exitstatus=exitstatus,
    )


def _case(state: _TestState) -> JUnitCase | None:
    classname, name = split_nodeid(state.nodeid)
    outcome = state.outcome
    if outcome is None and "teardown" in state.phases_ended:
        outcome = "passed"
    if outcome is None:
        return None  # never ran: the caller reports it as not run
    return JUnitCase(
        classname, name, outcome, state.duration, state.message, state.text, state.file, state.line
    )


def not_run_cases(nodeids: Iterable[str], reason: str) -> list[JUnitCase]:
    """Collected tests that never started, reported as skipped with ``reason``."""
    return [
        JUnitCase(*split_nodeid(nodeid), "skipped", message=f"not run: {reason}")
        for nodeid in nodeids
    ]
