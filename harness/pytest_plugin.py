"""pytest plugin: streams each test's progress, so a SIGKILL still leaves a record.

Loaded in the sandbox through ``PYTEST_PLUGINS=harness.pytest_plugin`` (qualify need not be
installed there) or through the ``pytest11`` entry point where it is. Inert outside a qualify
run. A line as each phase of a test (setup, call, teardown) starts, one when the test ends, and
one at once for a phase that did not pass (``harness.contract`` describes them); the host reads
the last start without an end as "what was running when the process died".

The cost per test is that of four small ``write()`` calls: the lines are not fsynced (a write
survives the SIGKILL of its writer; only the session's first and last lines are durable), and a
passing phase has no end line of its own (the next start says it passed).
"""

from __future__ import annotations

import os
import time
from typing import Any

import pytest

from harness import contract
from harness._events import emit_test_end, emit_test_start, emit_to
from harness.contract import ENV_EVENTS

_LONGREPR_LIMIT = 4000
_MESSAGE_LIMIT = 1000


class _Stream:
    path: str | None = None
    """The events file, looked up once (None: not in a qualify run)."""
    pending = 0.0
    """Seconds of the running test's passed phases that no end line has reported yet."""
    junit: str | None = None
    """The file pytest's JUnit writer writes: the run directory's that qualify asks for in
    ``PYTEST_ADDOPTS``, or the E2E's own ``--junitxml``, which its command line makes win."""


_stream = _Stream()


def pytest_addoption(parser: pytest.Parser, pluginmanager: pytest.PytestPluginManager) -> None:
    """An E2E that disables pytest's JUnit writer (``-p no:junitxml``) still runs in a qualify
    run: the ``--junitxml`` that qualify puts in ``PYTEST_ADDOPTS`` is taken and ignored (the
    events make the test cases), where pytest would stop at an unknown option."""
    if os.environ.get(ENV_EVENTS) and pluginmanager.is_blocked("junitxml"):
        parser.getgroup("qualify").addoption(
            "--junitxml",
            "--junit-xml",
            dest="qualify_ignored_junitxml",
            help="ignored: pytest's JUnit writer is disabled (-p no:junitxml)",
        )


def pytest_configure(config: pytest.Config) -> None:
    """Look the run up once: every hook below is a no-op outside a qualify run."""
    _stream.path = os.environ.get(ENV_EVENTS) or None
    xmlpath = config.getoption("xmlpath", None) if _stream.path else None
    _stream.junit = None
    if xmlpath:  # the absolute path, as pytest's JUnit writer makes it
        logfile = os.path.expanduser(os.path.expandvars(xmlpath))
        _stream.junit = os.path.normpath(os.path.abspath(logfile))


def pytest_collection_finish(session: pytest.Session) -> None:
    """Record the collected test ids: tests never started are reported as not run."""
    if _stream.path:
        record = {"event": contract.COLLECTION, "nodeids": [item.nodeid for item in session.items]}
        emit_to(_stream.path, record, durable=True)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """The test starts: its setup, with where the test is (1-based line)."""
    if _stream.path:
        _stream.pending = 0.0
        path, line, _ = item.location
        location = (path, (line + 1) if line is not None else None)
        emit_test_start(_stream.path, "setup", item.nodeid, location)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_call(item: pytest.Item) -> None:
    """The call phase starts (the setup passed)."""
    if _stream.path:
        emit_test_start(_stream.path, "call", item.nodeid)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_teardown(item: pytest.Item) -> None:
    """The teardown starts."""
    if _stream.path:
        emit_test_start(_stream.path, "teardown", item.nodeid)


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """The end of a test (its teardown), or of a phase that did not pass, with its outcome,
    a bounded message and text (``_account``), and the duration no earlier line reported."""
    path = _stream.path
    if not path or getattr(report, "node", None) is not None:
        return  # outside a run, or pytest-xdist's controller replaying a worker's report
    duration = _stream.pending + report.duration
    if report.passed and report.when != "teardown":
        _stream.pending = duration  # the next start line says that this phase passed
        return
    _stream.pending = 0.0
    if report.passed:  # a test that passed: the line built directly
        emit_test_end(path, report.when, report.nodeid, report.outcome, duration)
        return
    # failed, skipped, or another plugin's outcome, with its account: pytest-rerunfailures'
    # "rerun" (a failed attempt, run again) carries the failure it discards
    xfailed = hasattr(report, "wasxfail") and report.skipped
    message, text = _account(report, xfailed)
    record: dict[str, Any] = {
        "event": contract.TEST_PHASE,
        "state": contract.TEST_END,
        "when": report.when,
        "nodeid": report.nodeid,
        "outcome": "xfailed" if xfailed else report.outcome,
        "duration": duration,
        "message": message[:_MESSAGE_LIMIT],
        "longrepr": text[-_LONGREPR_LIMIT:],
    }
    emit_to(path, record)


def _account(report: pytest.TestReport, xfailed: bool) -> tuple[str, str]:
    """The message and text of a phase that did not pass, as pytest's JUnit writer gives them:
    a failure's crash message (``AssertionError: ...``) and report; a skip's reason and where it
    was skipped; an expected failure's reason (and its report)."""
    longrepr = report.longrepr
    if xfailed:
        return _unprefixed(str(getattr(report, "wasxfail", "")), "reason: "), report.longreprtext
    if report.skipped and isinstance(longrepr, tuple) and len(longrepr) == 3:
        filename, line, reason = longrepr
        reason = _unprefixed(str(reason), "Skipped: ")
        return reason, f"{filename}:{line}: {reason}"
    crash = getattr(longrepr, "reprcrash", None)
    text = report.longreprtext
    return (str(crash.message) if crash is not None else text), text


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> Any:
    """Record how the session ended (absent after a SIGKILL): after every other plugin's end of
    the session, pytest's JUnit writer's included, so that the file (``junitxml``) is whole
    once the line is there (the host reads it then, while the interpreter shuts down). Not
    from a pytest-xdist worker: the session is the controller's, which ends after them.

    pytest's JUnit writer fails on a test id that is not UTF-8 (a test file's name in other
    bytes, a parametrize id with a lone surrogate: it writes ``str`` to a UTF-8 file). That
    file is the one qualify asked for, not the family's verdict: the failure is reported, not
    raised, and the session still ends (its JUnit is then the events')."""
    outcome = yield
    junit = _stream.junit
    error = outcome.excinfo[1] if outcome.excinfo else None
    if isinstance(error, UnicodeEncodeError) and _raised_in_junitxml(outcome.excinfo[2]):
        outcome.force_result(None)
        junit = None
        print(f"qualify: pytest's JUnit writer failed ({error}); the events are the record")
    elif error is not None:
        return
    if _stream.path and not hasattr(session.config, "workerinput"):
        record = {
            "event": contract.SESSION_FINISH,
            "exitstatus": int(exitstatus),
            "junitxml": junit,
        }
        emit_to(_stream.path, {**record, "t_end": time.time()}, durable=True)


def _raised_in_junitxml(trace: Any) -> bool:
    while trace is not None:
        if trace.tb_frame.f_code.co_filename.endswith(os.path.join("_pytest", "junitxml.py")):
            return True
        trace = trace.tb_next
    return False


def _unprefixed(text: str, prefix: str) -> str:
    return text[len(prefix) :] if text.startswith(prefix) else text
