"""Which tests ran and how each ended, replayed from the plugin's streamed events.

After a SIGKILL pytest never writes its JUnit; the events still say which tests ran, how each
ended, and which test and phase were running at the end. A phase that passed has no end line
of its own: the start of the test's next phase says it passed (``harness.contract``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from harness import contract
from qualify import cuts, records
from qualify.evidence.junit import NOT_RUN, JUnitCase, split_nodeid
from qualify.records import frozen_record
from qualify.verdict import Verdict

TYPE_CHECKING = False
if TYPE_CHECKING:
    from qualify.rundir.events import PhaseLines


@frozen_record
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
    junit_path: str | None = None
    """Where pytest's JUnit writer wrote, as the session's end says (``contract``)."""
    reruns: tuple[tuple[str, int], ...] = ()
    """(nodeid, times run again) of each test that a plugin ran again (its setup started
    again after its teardown ended: pytest-rerunfailures, flaky)."""
    flaky: tuple[str, ...] = ()
    """nodeids of the tests that passed on a rerun after an attempt that the events saw fail
    (pytest-rerunfailures reports those as ``rerun``; flaky does not report them)."""
    suite_properties: tuple[tuple[str, str], ...] = ()
    """(name, value) that the tests recorded for the whole suite (``record_testsuite_property``),
    in order; the first ``SUITE_PROPERTIES_KEPT``."""

    @property
    def rerun_count(self) -> int:
        """Attempts run again, over all tests."""
        return sum(count for _, count in self.reruns)


@records.record
class _TestState:
    nodeid: str
    file: str | None = None
    line: int | None = None
    outcome: str | None = None
    message: str | None = None
    text: str | None = None
    duration: float = 0.0
    open_when: str | None = None
    phases_ended: set[str] = records.field(default_factory=set)
    reruns: int = 0
    """Attempts discarded because a plugin ran the test again (pytest-rerunfailures, flaky)."""
    again: bool = False
    """The current attempt failed with ``rerun``: pytest-rerunfailures runs it again."""
    failed_before: bool = False
    """A discarded attempt was seen to fail (``rerun``)."""
    kind: str | None = None
    """A skip's type as pytest's JUnit writer gives it: ``pytest.skip``, ``pytest.xfail``."""
    properties: tuple[tuple[str, str], ...] = ()
    output: list[tuple[str, str]] = records.field(default_factory=list)


def _run_again(state: _TestState) -> bool:
    """Whether a setup that starts now begins a rerun of the test: its teardown ended, and its
    attempt failed with ``rerun`` or reported no failure (flaky reports none for what it runs
    again). An attempt that reported a failure was no rerun (a test given twice, with
    ``--keep-duplicates``): its failure stands."""
    if "teardown" not in state.phases_ended:
        return False
    return state.again or state.outcome not in ("failed", "error")


def _start(state: _TestState, when: str, event: dict[str, Any]) -> None:
    """A start line: the phase started (a setup's start may begin a rerun)."""
    if when == "setup" and _run_again(state):  # the attempt before is discarded
        state.reruns += 1
        state.outcome = state.message = state.text = state.kind = None
        state.duration, state.properties = 0.0, ()  # (the last attempt's, as pytest's)
        state.output.clear()
        state.phases_ended.clear()
        state.again = False
    state.open_when = when
    if "file" in event:  # the setup's start says where the test is
        state.file, state.line = event.get("file"), event.get("line")


def _end(state: _TestState, when: str, event: dict[str, Any]) -> None:
    """An end line: the phase ended, with its outcome and its account."""
    state.open_when = None
    state.phases_ended.add(when)
    if when == "collect" and state.file is None:  # (a collector's file; it has no line)
        file = event.get("file")
        state.file = file if isinstance(file, str) else None
    outcome, message = event.get("outcome"), event.get("message")
    if not isinstance(message, str):
        message = None  # (written by a harness older than the line's message)
    # A teardown that failed after the call failed: pytest's JUnit writer ends the test's
    # testcase with the call (its time and properties then) and writes the teardown's error,
    # with its time and the test's output, as a second testcase, which the events' case leaves
    # out.
    second = when == "teardown" and outcome == "failed" and state.outcome == "failed"
    if not second:
        state.duration += float(event.get("duration") or 0.0)
    if outcome == "rerun":  # pytest-rerunfailures: failed, until the next attempt starts
        state.again = state.failed_before = True
    if outcome in ("failed", "rerun") and state.outcome not in ("failed", "error"):
        state.outcome = "failed" if when == "call" else "error"
        if message is None:
            state.message = f"{when} failed"
        elif when in ("call", "collect") or message.startswith(_WORDED):
            state.message = message  # (the plugin words it as pytest's JUnit writer does)
        else:  # a line of a harness that left the wording to the host: every phase but
            phase = "teardown" if when == "teardown" else "setup"  # teardown is "setup"
            state.message = f'failed on {phase} with "{message}"'
        state.text = event.get("longrepr")
    elif outcome in ("skipped", "xfailed") and state.outcome is None:
        state.outcome = "skipped"
        if message is None:
            state.message = cuts.tail(str(event.get("longrepr") or "skipped"), 500)
        else:
            state.message = message
            state.text = event.get("longrepr") if outcome == "skipped" else None
        if when != "collect":
            state.kind = "pytest.xfail" if outcome == "xfailed" else "pytest.skip"
    elif outcome == "passed" and when == "call" and state.outcome is None:
        state.outcome = "passed"
    properties, output = event.get("properties"), event.get("output")
    if second:
        return
    if isinstance(properties, list):
        state.properties = _pairs(properties)
    if isinstance(output, list):
        state.output.extend(_pairs(output))


_WORDED = ('failed on setup with "', 'failed on teardown with "')


def _pairs(values: list[Any]) -> tuple[tuple[str, str], ...]:
    """The ``[name, value]`` pairs of a line's ``properties`` or ``output`` (others skipped)."""
    return tuple(
        (value[0], value[1])
        for value in values
        if isinstance(value, list)
        and len(value) == 2
        and isinstance(value[0], str)
        and isinstance(value[1], str)
    )


SUITE_PROPERTIES_KEPT = 1000
"""The suite's properties a JUnit file holds at most (each is bounded when written)."""


class ProgressReplay:
    """``progress_from_events`` fed in parts, as the events arrive (``qualify run`` replays
    them while the E2E runs): ``feed`` the records in file order, then take the ``result``."""

    def __init__(self) -> None:
        self._states: dict[str, _TestState] = {}
        self._collected: list[str] = []
        self._exitstatus: Any = None
        self._junit: str | None = None
        self._suite_properties: list[tuple[str, str]] = []
        self._result: RunProgress | None = None

    @property
    def session_finished(self) -> bool:
        """Whether pytest's session has ended (its JUnit written, if it writes one)."""
        return self._exitstatus is not None

    def feed(self, events: Iterable[Any]) -> None:
        """Apply the next events (values that are not objects are skipped)."""
        states = self._states
        phase, start = contract.TEST_PHASE, contract.TEST_START
        for event in events:
            # (the exact types json.loads makes tested first: a long run's many lines)
            if type(event) is not dict and not isinstance(event, dict):
                continue
            self._result = None
            kind = event.get("event")
            if kind == phase:
                nodeid = event.get("nodeid")
                if type(nodeid) is not str:
                    nodeid = str(nodeid)
                state = states.get(nodeid)
                if state is None:
                    state = states[nodeid] = _TestState(nodeid)
                when = event.get("when")
                if type(when) is not str:
                    when = str(when)
                if event.get("state") == start:
                    if when == "setup" and state.phases_ended:  # (it may begin a rerun)
                        _start(state, when, event)
                    else:  # (``_start``, inline: a long run's many lines)
                        state.open_when = when
                        if "file" in event:
                            state.file, state.line = event.get("file"), event.get("line")
                elif when != "collect" and event.get("outcome") == "passed":
                    # (``_end`` of a phase that passed, inline: a teardown's end line)
                    state.open_when = None
                    state.phases_ended.add(when)
                    state.duration += float(event.get("duration") or 0.0)
                    if when == "call" and state.outcome is None:
                        state.outcome = "passed"
                    properties, output = event.get("properties"), event.get("output")
                    if isinstance(properties, list):
                        state.properties = _pairs(properties)
                    if isinstance(output, list):
                        state.output.extend(_pairs(output))
                else:
                    _end(state, when, event)
            elif kind == contract.COLLECTION:
                self._collected = [str(n) for n in event.get("nodeids", [])]
                for nodeid in self._collected:
                    if nodeid not in states:
                        states[nodeid] = _TestState(nodeid)
            elif kind == contract.SUITE_PROPERTY:
                pair = _pairs([[event.get("name"), event.get("value")]])
                if len(self._suite_properties) < SUITE_PROPERTIES_KEPT:
                    self._suite_properties.extend(pair)
            elif kind == contract.SESSION_FINISH:
                self._exitstatus = event.get("exitstatus")
                junit = event.get("junitxml")
                self._junit = junit if isinstance(junit, str) else None

    def feed_phases(self, phases: PhaseLines) -> None:
        """``feed`` the values of an events file read as ``PhaseLines`` (``read_events``): its
        phase lines replayed from their fields as ``feed`` replays their records, the other
        values fed in their place."""
        states = self._states
        others = iter(phases.others)
        self._result = None
        for start, nodeid, file, line, end, ended, duration, _ in phases.rows:
            if start:
                state = states.get(nodeid)
                if state is None:
                    state = states[nodeid] = _TestState(nodeid)
                if start == "setup" and state.phases_ended:  # (it may begin a rerun)
                    where = int(line) if line and line != "null" else None
                    _start(state, start, {"file": file, "line": where} if line else {})
                else:
                    state.open_when = start
                    if line:  # (a file and a line given: the file may be "")
                        state.file, state.line = file, None if line == "null" else int(line)
            elif end:  # (a phase that passed, as ``feed`` replays it)
                state = states.get(ended)
                if state is None:
                    state = states[ended] = _TestState(ended)
                state.open_when = None
                state.phases_ended.add(end)
                state.duration += float(duration)
                if end == "call" and state.outcome is None:
                    state.outcome = "passed"
            else:
                self.feed((next(others),))

    def result(self) -> RunProgress:
        """What the events fed so far say: the same object until more events are fed."""
        if self._result is not None:
            return self._result
        states, collected = self._states, self._collected
        running = next((s for s in states.values() if s.open_when is not None), None)
        ended = [(state, _case(state)) for state in states.values() if state is not running]
        cases = [case for _, case in ended if case is not None]
        started = {s.nodeid for s in states.values() if s.phases_ended or s.open_when}
        rerun = [(state, case) for state, case in ended if state.failed_before]  # (not running)
        self._result = RunProgress(
            cases=tuple(cases),
            running=running.nodeid if running else None,
            running_when=running.open_when if running else None,
            collected=len(collected),
            not_run=tuple(nodeid for nodeid in collected if nodeid not in started),
            session_exitstatus=self._exitstatus,
            junit_path=self._junit,
            reruns=tuple((s.nodeid, s.reruns) for s in states.values() if s.reruns),
            flaky=tuple(s.nodeid for s, case in rerun if case and case.outcome == "passed"),
            suite_properties=tuple(self._suite_properties),
        )
        return self._result


def progress_from_events(events: Iterable[dict[str, Any]]) -> RunProgress:
    """Replay the plugin's events into per-test results (tests never run have outcome None)."""
    replay = ProgressReplay()
    replay.feed(events)
    return replay.result()


def _case(state: _TestState) -> JUnitCase | None:
    classname, name = split_nodeid(state.nodeid)
    outcome = state.outcome
    if outcome is None and "teardown" in state.phases_ended:
        outcome = "passed"
    if outcome is None:
        return None  # never ran: the caller reports it as not run
    return JUnitCase(
        classname,
        name,
        outcome,
        state.duration,
        state.message,
        state.text,
        state.file,
        state.line,
        state.kind,
        state.properties,
        tuple(state.output),
    )


def not_run_cases(nodeids: Iterable[str], reason: str) -> list[JUnitCase]:
    """Collected tests that never started, reported as skipped with ``reason``."""
    return [
        JUnitCase(*split_nodeid(nodeid), "skipped", message=f"{NOT_RUN}{reason}")
        for nodeid in nodeids
    ]


def cases_from_events(progress: RunProgress, verdict: Verdict, message: str) -> list[JUnitCase]:
    """Cases rebuilt from the plugin's events when pytest's own JUnit never got written."""
    cases = list(progress.cases)
    if progress.running:
        classname, name = split_nodeid(progress.running)
        text = f"{message} (during {progress.running_when})"
        cases.append(JUnitCase(classname, name, "error", 0.0, text, text, kind=verdict.value))
    reason = f"the run ended ({verdict.value}) before it started"
    return cases + not_run_cases(progress.not_run, reason)
