"""pytest plugin: one JSON line per test phase, so a SIGKILL still leaves a record.

Loaded in the sandbox through ``PYTEST_PLUGINS=harness.pytest_plugin`` (qualify need not be
installed there) or through the ``pytest11`` entry point where it is. Inert outside a qualify
run. Events are written before and after every setup/call/teardown; the host reads the last
start without an end as "what was running when the process died".
"""

from __future__ import annotations

import os
import time
from collections.abc import Generator
from typing import Any

import pytest

from harness import contract
from harness._events import emit
from harness.contract import ENV_EVENTS

_LONGREPR_LIMIT = 4000


def _active() -> bool:
    return bool(os.environ.get(ENV_EVENTS))


def pytest_collection_finish(session: pytest.Session) -> None:
    """Record the collected test ids: tests never started are reported as not run."""
    if _active():
        emit(
            {"event": contract.COLLECTION, "nodeids": [item.nodeid for item in session.items]},
            durable=True,
        )


def _location(item: pytest.Item) -> dict[str, Any]:
    path, line, _ = item.location
    return {"file": path, "line": (line + 1) if line is not None else None}


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Generator[None, None, None]:
    """Mark the start of setup (the report hook marks its end)."""
    _start(item, "setup")
    yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    """Mark the start of the call phase."""
    _start(item, "call")
    yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item: pytest.Item) -> Generator[None, None, None]:
    """Mark the start of teardown."""
    _start(item, "teardown")
    yield


def _start(item: pytest.Item, when: str) -> None:
    if _active():
        record = {
            "event": contract.TEST_PHASE,
            "state": "start",
            "nodeid": item.nodeid,
            "when": when,
        }
        record.update(_location(item))
        emit(record, durable=True)


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Record the end of a test phase with its outcome and a bounded failure text."""
    if not _active():
        return
    record: dict[str, Any] = {
        "event": contract.TEST_PHASE,
        "state": "end",
        "nodeid": report.nodeid,
        "when": report.when,
        "outcome": "xfailed" if hasattr(report, "wasxfail") and report.skipped else report.outcome,
        "duration": report.duration,
    }
    if report.failed or report.skipped:
        text = report.longreprtext
        record["longrepr"] = text[-_LONGREPR_LIMIT:]
    emit(record, durable=report.failed)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Record how the session ended (absent after a SIGKILL)."""
    if _active():
        emit(
            {"event": contract.SESSION_FINISH, "exitstatus": int(exitstatus), "t_end": time.time()},
            durable=True,
        )
