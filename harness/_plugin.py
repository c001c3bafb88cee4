"""The hooks and the fixture of ``harness.pytest_plugin``, which is what pytest loads (see it).

pytest rewrites the asserts of each module it loads as a plugin: it parses the module's source,
rewrites it and compiles it, and caches the result beside it, which a run's harness (a fresh
copy in the run directory) never has. That module is a few lines; this one is imported as any
module is, from its bytecode.
"""

from __future__ import annotations

import os
import time
from typing import Any

import pytest

from harness import contract, cuts
from harness._events import emit_test_end, emit_test_start, emit_to
from harness.contract import ENV_EVENTS

TEXT_LIMIT = 64 * 1024
"""A failure's text is kept whole up to this many characters; past it, its first and last
halves with a line between (``qualify.report.junit`` bounds a testcase's text alike)."""
TRUNCATED = "\n[... truncated ...]\n"
_MESSAGE_LIMIT = 1000


class _Stream:
    path: str | None = None
    """The events file, looked up once (None: not in a qualify run)."""
    pending = 0.0
    """Seconds of the running test's passed phases that no end line has reported yet."""
    junit: str | None = None
    """The file pytest's JUnit writer writes: the E2E's own ``--junitxml``, if it asks for
    one (qualify asks for none: the events make its JUnit)."""
    logging = "no"
    """``junit_logging``: which captured output pytest's JUnit writer would write, that the
    end lines carry (none by default: then they carry no output at all)."""
    log_passing = True
    """``junit_log_passing_tests``."""
    shorten: Any = None
    """pytest's own shortening of a ``message`` attribute, where its version has one."""


_stream = _Stream()


def pytest_configure(config: pytest.Config) -> None:
    """Look the run up once: every hook below is a no-op outside a qualify run."""
    _stream.path = os.environ.get(ENV_EVENTS) or None
    xmlpath = config.getoption("xmlpath", None) if _stream.path else None
    _stream.junit = None
    if xmlpath:  # the absolute path, as pytest's JUnit writer makes it
        logfile = os.path.expanduser(os.path.expandvars(xmlpath))
        _stream.junit = os.path.normpath(os.path.abspath(logfile))
    if _stream.path:
        try:
            _stream.logging = str(config.getini("junit_logging"))
            _stream.log_passing = bool(config.getini("junit_log_passing_tests"))
        except ValueError:  # pytest's JUnit writer disabled (-p no:junitxml): its options too
            _stream.logging, _stream.log_passing = "no", True
        _stream.shorten = getattr(_junitxml(), "shorten_message", None)  # (pytest 9 on)


def _junitxml() -> Any:
    import _pytest.junitxml

    return _pytest.junitxml


def pytest_collection_finish(session: pytest.Session) -> None:
    """Record the collected test ids: tests never started are reported as not run."""
    if _stream.path:
        record = {"event": contract.COLLECTION, "nodeids": [item.nodeid for item in session.items]}
        emit_to(_stream.path, record, durable=True)


@pytest.fixture(scope="session")
def record_testsuite_property(request: pytest.FixtureRequest) -> Any:
    """pytest's fixture, recorded in the events too: the property is one of the suite of the
    run's JUnit, which the events make (pytest's writer records it only when it writes a file
    of its own, and not under pytest-xdist)."""
    __tracebackhide__ = True
    key = getattr(_junitxml(), "xml_key", None)
    xml = request.config.stash.get(key, None) if key is not None else None
    own = getattr(xml, "add_global_property", None)

    def record(name: str, value: object) -> None:
        __tracebackhide__ = True
        if not isinstance(name, str):  # (pytest's own check and words)
            raise TypeError(f"name parameter needs to be a string, but {type(name).__name__} given")
        if _stream.path:
            emit_to(_stream.path, {"event": contract.SUITE_PROPERTY, "name": name,
                                   "value": str(value)})  # fmt: skip
        if own is not None:
            own(name, value)

    return record


def pytest_collectreport(report: pytest.CollectReport) -> None:
    """A module or class that failed to collect, or was skipped whole, is a testcase of its
    own in pytest's JUnit: an end line for it (``when``: collect)."""
    if not _stream.path or report.passed or getattr(report, "node", None) is not None:
        return
    failed = report.failed
    record = {
        "event": contract.TEST_PHASE,
        "state": contract.TEST_END,
        "when": "collect",
        "nodeid": report.nodeid,
        "outcome": "failed" if failed else "skipped",
        "duration": 0.0,
        "message": "collection failure" if failed else "collection skipped",
        "longrepr": _bounded(str(report.longrepr)),
        "file": str(report.fspath),
    }
    emit_to(_stream.path, record)


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
    a message and text as pytest's JUnit writer gives them (``_account``), the duration no
    earlier line reported, the test's recorded properties (at its end) and the captured output
    pytest's writer would add for this phase (where ``junit_logging`` asks for any)."""
    path = _stream.path
    if not path or getattr(report, "node", None) is not None:
        return  # outside a run, or pytest-xdist's controller replaying a worker's report
    duration = _stream.pending + report.duration
    if report.passed and report.when != "teardown":
        _stream.pending = duration  # the next start line says that this phase passed
        return
    _stream.pending = 0.0
    extra = _extra(report)
    if report.passed and not extra:  # a test that passed: the line built directly
        emit_test_end(path, report.when, report.nodeid, report.outcome, duration)
        return
    record: dict[str, Any] = {
        "event": contract.TEST_PHASE,
        "state": contract.TEST_END,
        "when": report.when,
        "nodeid": report.nodeid,
        "outcome": report.outcome,
        "duration": duration,
    }
    if not report.passed:
        # failed, skipped, or another plugin's outcome, with its account: pytest-rerunfailures'
        # "rerun" (a failed attempt, run again) carries the failure it discards
        xfailed = hasattr(report, "wasxfail") and report.skipped
        message, text = _account(report, xfailed)
        if xfailed:
            record["outcome"] = "xfailed"
        record["message"] = cuts.head(message, _MESSAGE_LIMIT)
        record["longrepr"] = _bounded(text)
    record.update(extra)
    emit_to(path, record)


def _extra(report: pytest.TestReport) -> dict[str, Any]:
    """What an end line adds for pytest's JUnit beyond the outcome: ``properties`` (the
    test's ``record_property`` pairs, at its teardown or failed call) and ``output`` (the
    ``system-out`` and ``system-err`` elements pytest's writer appends for this report, in
    its order)."""
    extra: dict[str, Any] = {}
    ends = report.when == "teardown" or (report.when == "call" and report.failed)
    if ends and report.user_properties:  # (a failed call's, should its teardown fail too)
        extra["properties"] = [[str(name), str(value)] for name, value in report.user_properties]
    if _stream.logging != "no":
        output = _captured(report)
        if output:
            extra["output"] = output
    return extra


def _captured(report: pytest.TestReport) -> list[list[str]]:
    """The captured-output elements pytest's JUnit writer appends for ``report``: at a skip
    (not an expected failure's), at a failed call when passing tests are not logged, and at
    every teardown (``_NodeReporter.write_captured_output``)."""
    skip = report.skipped and not hasattr(report, "wasxfail")
    failed_call = report.failed and report.when == "call" and not _stream.log_passing
    if not (skip or failed_call or report.when == "teardown"):
        return []
    if not _stream.log_passing and report.passed:
        return []
    logging = _stream.logging
    elements: list[list[str]] = []
    content = ""
    if logging in ("log", "all"):
        content = _section(report.caplog, " Captured Log ")
    if logging in ("system-out", "out-err", "all"):
        elements.append(["system-out", content + _section(report.capstdout, " Captured Out ")])
        content = ""
    if logging in ("system-err", "out-err", "all"):
        elements.append(["system-err", content + _section(report.capstderr, " Captured Err ")])
        content = ""
    if content:
        elements.append(["system-out", content])
    return [[tag, _bounded(text)] for tag, text in elements]


def _section(content: str, header: str) -> str:
    return "\n".join([header.center(80, "-"), content, ""])


def _bounded(text: str) -> str:
    """``text`` whole up to ``TEXT_LIMIT`` characters; past it, its first and last halves."""
    if len(text) <= TEXT_LIMIT:
        return text
    return cuts.head(text, TEXT_LIMIT // 2) + TRUNCATED + cuts.tail(text, TEXT_LIMIT // 2)


def _account(report: pytest.TestReport, xfailed: bool) -> tuple[str, str]:
    """The message and text of a phase that did not pass, as pytest's JUnit writer gives them:
    a failure's crash message (``AssertionError: ...``, shortened as the running pytest
    shortens it) and report; a skip's reason and where it was skipped; an expected failure's
    reason (and its report)."""
    longrepr = report.longrepr
    if xfailed:
        return _unprefixed(str(getattr(report, "wasxfail", "")), "reason: "), report.longreprtext
    if report.skipped and isinstance(longrepr, tuple) and len(longrepr) == 3:
        filename, line, reason = longrepr
        reason = _unprefixed(str(reason), "Skipped: ")
        return reason, f"{filename}:{line}: {reason}"
    crash = getattr(longrepr, "reprcrash", None)
    text = str(longrepr)
    message = str(crash.message) if crash is not None else text
    if report.when != "call":  # pytest words the phase around it (every other one "setup")
        phase = "teardown" if report.when == "teardown" else "setup"
        message = f'failed on {phase} with "{message}"'
    shorten = _stream.shorten
    return (shorten(message) if shorten is not None else message), text


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
