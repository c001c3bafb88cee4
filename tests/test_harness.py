"""The sandbox-side harness: no-op outside a run, exact event lines inside one."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

import harness
from harness import contract
from harness._options import parse_option
from qualify.judge.progress import ProgressReplay, progress_from_events

ROOT = Path(__file__).resolve().parent.parent


def lines(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.fixture
def run_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("QUALIFY_EVENTS", str(tmp_path / "events.jsonl"))
    monkeypatch.setenv("QUALIFY_PARITY", str(tmp_path / "parity.jsonl"))
    monkeypatch.delenv("QUALIFY_PHASE_ACK", raising=False)
    return tmp_path


def test_noop_outside_a_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("QUALIFY_EVENTS", "QUALIFY_PARITY", "QUALIFY_PHASE_ACK"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    with harness.phase("build:prefill"):
        harness.record_case("c1", side="native", token_ids=[1], text="a", top_logprobs=[[]])
        harness.metric("tokens_per_s", 1.0, "1/s")
    assert harness.option("retain_plans", False) is False
    assert list(tmp_path.iterdir()) == []


def test_phase_events_and_error(run_env: Path) -> None:
    with harness.phase("outer"), harness.phase("inner"):
        pass
    with pytest.raises(KeyError), harness.phase("broken"):
        raise KeyError("x")
    events = lines(run_env / "events.jsonl")
    assert [(e["event"], e["phase"]) for e in events] == [
        ("phase_start", "outer"),
        ("phase_start", "inner"),
        ("phase_end", "inner"),
        ("phase_end", "outer"),
        ("phase_start", "broken"),
        ("phase_end", "broken"),
    ]
    assert events[-1]["error"] == "KeyError"
    assert all({"t", "mono", "pid", "sync"} <= set(e) for e in events)
    assert len({e["sync"] for e in events}) == len(events)


def test_phase_waits_for_the_host_ack(run_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ack = run_env / ".phase-ack"
    monkeypatch.setenv("QUALIFY_PHASE_ACK", str(ack))
    events = run_env / "events.jsonl"

    def host() -> None:  # acknowledge each boundary 0.2 s after it appears
        seen = 0
        deadline = time.monotonic() + 10
        while seen < 2 and time.monotonic() < deadline:
            found = lines(events) if events.exists() else []
            if len(found) > seen:
                time.sleep(0.2)
                with ack.open("a") as handle:
                    handle.write(f"{found[seen]['sync']}\n")
                seen += 1
            time.sleep(0.01)

    thread = threading.Thread(target=host)
    thread.start()
    started = time.monotonic()
    with harness.phase("waited"):
        pass
    thread.join()
    assert time.monotonic() - started >= 0.4


def test_ack_timeout_is_recorded(run_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("QUALIFY_PHASE_ACK", str(run_env / ".phase-ack"))
    monkeypatch.setenv("QUALIFY_PHASE_ACK_TIMEOUT", "0.05")
    with harness.phase("alone"):
        pass
    assert [e["event"] for e in lines(run_env / "events.jsonl")].count("ack_timeout") == 2


def test_record_case_line(run_env: Path) -> None:
    harness.record_case(
        "p1",
        side="reference",
        token_ids=[5, 6],
        text="ab",
        top_logprobs=[[(5, -0.1, "a"), (7, -2.5, "c")], [(6, -0.2, "b")]],
        token_texts=["a", "b"],
        prompt="hi",
        eos=True,
    )
    case = lines(run_env / "parity.jsonl")[0]
    assert case["case_id"] == "p1" and case["side"] == "reference"
    assert case["token_ids"] == [5, 6] and case["eos"] is True
    assert case["top_logprobs"][0] == [[5, -0.1, "a"], [7, -2.5, "c"]]
    with pytest.raises(ValueError, match="side must be"):
        harness.record_case("p1", side="engine", token_ids=[], text="", top_logprobs=[])


@pytest.mark.parametrize(
    ("raw", "default", "expected"),
    [("true", False, True), ("0", True, False), ("12", 1, 12), ("0.5", 0.0, 0.5), ("x", "", "x")],
)
def test_option_typed_like_default(raw: str, default: object, expected: object) -> None:
    assert parse_option("name", raw, default) == expected  # type: ignore[type-var]


def test_bad_option_names_it() -> None:
    with pytest.raises(ValueError, match="option retain_plans='maybe' is not a valid bool"):
        parse_option("retain_plans", "maybe", False)


@pytest.mark.parametrize("location", [None, ("dir/t\u00e9st.py", 12), ("t.py", None)])
def test_test_start_lines_are_those_of_the_generic_encoder(
    location: tuple[str, int | None] | None,
) -> None:
    nodeid = 'dir/t\u00e9st.py::test_x["a\\b\n\u2603"]'
    stamp = (1796055357.7991667, 7039.666137299, 4242)
    record: dict[str, object] = {
        "event": "test_phase",
        "state": "start",
        "when": "call",
        "nodeid": nodeid,
    }
    if location is not None:
        record.update(file=location[0], line=location[1])
    record.update(t=stamp[0], mono=stamp[1], pid=stamp[2])
    line = contract.encode_test_start("call", nodeid, stamp, location)
    _same_but_times_to_the_microsecond(line, record)


@pytest.mark.parametrize("outcome", ["passed", "failed"])
def test_test_end_lines_are_those_of_the_generic_encoder(outcome: str) -> None:
    nodeid = 'dir/t\u00e9st.py::test_x["a\\b\n\u2603"]'
    stamp = (1796055357.7991667, 7039.666137299, 4242)
    record = {
        "event": "test_phase",
        "state": "end",
        "when": "teardown",
        "nodeid": nodeid,
        "outcome": outcome,
        "duration": 0.0001234567891,
        "t": stamp[0],
        "mono": stamp[1],
        "pid": stamp[2],
    }
    line = contract.encode_test_end("teardown", nodeid, outcome, 0.0001234567891, stamp)
    _same_but_times_to_the_microsecond(line, record)


def _same_but_times_to_the_microsecond(line: bytes, record: dict[str, Any]) -> None:
    """``line`` is ``encode_line(record)``, byte for byte, but for its times: written to the
    microsecond (``1796055357.799167``), a duration to the nanosecond, where the generic
    encoder writes a float's shortest round trip (``1796055357.7991667``)."""
    digits = {"t": 6, "mono": 6, "duration": 9}
    timed = digits.keys() & set(record)
    expected = contract.encode_line({k: f"@{k}@" if k in timed else v for k, v in record.items()})
    for key in timed:
        expected = expected.replace(f'"@{key}@"'.encode(), b"%.*f" % (digits[key], record[key]))
    assert line == expected
    decoded = json.loads(line)
    for key in timed:
        assert abs(decoded[key] - record[key]) <= 0.5 * 10 ** -digits[key], key


def test_a_forked_child_stamps_its_own_pid(tmp_path: Path) -> None:
    """The process id is kept rather than asked for on every line; a fork renews it."""
    events = tmp_path / "events.jsonl"
    script = (
        "import os, sys\n"
        "from harness import _events\n"
        "_events.emit({'event': 'metric', 'who': 'parent'})\n"
        "child = os.fork()\n"
        "if child == 0:\n"
        "    _events.emit_test_start(sys.argv[1], 'call', 't.py::test_child')\n"
        "    _events.emit_test_end(sys.argv[1], 'teardown', 't.py::test_child', 'passed', 0.1)\n"
        "    _events.emit({'event': 'metric', 'who': 'child', 'real': os.getpid()})\n"
        "    os._exit(0)\n"
        "os.waitpid(child, 0)\n"
        "print(child)\n"
    )
    env = dict(os.environ, QUALIFY_EVENTS=str(events), PYTHONPATH=str(ROOT))
    done = subprocess.run(
        [sys.executable, "-c", script, str(events)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    child = int(done.stdout)
    written = lines(events)
    assert [record["pid"] for record in written[1:]] == [child, child, child]
    assert written[0]["pid"] != child and written[-1]["real"] == child


def _run_plugin(tmp_path: Path, source: str, *args: str) -> list[dict[str, object]]:
    """Run pytest (``args`` added) with the plugin on ``source`` (test_sample.py); the events
    it wrote."""
    (tmp_path / "test_sample.py").write_text(source)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    env = dict(
        os.environ,
        QUALIFY_EVENTS=str(tmp_path / "events.jsonl"),
        PYTEST_PLUGINS="harness.pytest_plugin",
        PYTHONPATH=str(ROOT),
    )
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly"]
    subprocess.run(
        [*argv, *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        check=False,
        timeout=120,
    )
    return lines(tmp_path / "events.jsonl")


def test_pytest_plugin_streams_every_phase(tmp_path: Path) -> None:
    events = _run_plugin(
        tmp_path,
        "import pytest, time\n"
        "@pytest.fixture\ndef slow():\n    time.sleep(0.05)\n    yield\n    time.sleep(0.05)\n"
        "def test_ok(slow):\n    time.sleep(0.05)\n"
        "def test_bad():\n    assert 1 == 2\n"
        "@pytest.mark.skip(reason='later')\ndef test_skip():\n    pass\n",
    )
    assert events[0]["event"] == "collection"
    assert events[0]["nodeids"] == [
        "test_sample.py::test_ok",
        "test_sample.py::test_bad",
        "test_sample.py::test_skip",
    ]
    phases = [
        (str(e["nodeid"]).split("::")[1], e["when"], e["state"], e.get("outcome"))
        for e in events
        if e["event"] == "test_phase"
    ]
    # A start per phase; a passed phase has no end line of its own (the next start says it
    # passed), a phase that did not pass has one at once, and every test ends with one.
    assert phases == [
        ("test_ok", "setup", "start", None),
        ("test_ok", "call", "start", None),
        ("test_ok", "teardown", "start", None),
        ("test_ok", "teardown", "end", "passed"),
        ("test_bad", "setup", "start", None),
        ("test_bad", "call", "start", None),
        ("test_bad", "call", "end", "failed"),
        ("test_bad", "teardown", "start", None),
        ("test_bad", "teardown", "end", "passed"),
        ("test_skip", "setup", "start", None),
        ("test_skip", "setup", "end", "skipped"),
        ("test_skip", "teardown", "start", None),
        ("test_skip", "teardown", "end", "passed"),
    ]
    by_test = [e for e in events if e["event"] == "test_phase"]
    assert (by_test[0]["file"], by_test[0]["line"]) == ("test_sample.py", 7)
    assert all("file" not in e for e in by_test if e["when"] != "setup")
    assert all({"t", "mono", "pid"} <= set(e) for e in events)
    # The end line of test_ok covers its three phases (0.15 s of sleeping).
    assert by_test[3]["duration"] >= 0.15  # type: ignore[operator]
    bad_call = by_test[6]
    assert "assert 1 == 2" in str(bad_call["longrepr"])
    assert events[-1]["event"] == "session_finish" and events[-1]["exitstatus"] == 1
    progress = progress_from_events(events)
    assert [(c.name, c.outcome) for c in progress.cases] == [
        ("test_ok", "passed"),
        ("test_bad", "failed"),
        ("test_skip", "skipped"),
    ]
    assert progress.cases[0].time_s >= 0.15
    assert (progress.running, progress.not_run) == (None, ())


@pytest.mark.parametrize(
    ("where", "when"),
    [("setup", "setup"), ("call", "call"), ("teardown", "teardown")],
)
def test_a_kill_in_any_phase_names_the_test_and_the_phase(
    tmp_path: Path, where: str, when: str
) -> None:
    """SIGKILL inside a phase (no fsync, no end line): the events still name test and phase."""
    kill = "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"
    events = _run_plugin(
        tmp_path,
        "import os, signal, pytest\n"
        "def test_first():\n    pass\n"
        "@pytest.fixture\ndef fixture():\n"
        f"    {kill if where == 'setup' else 'pass'}\n"
        "    yield\n"
        f"    {kill if where == 'teardown' else 'pass'}\n"
        "def test_dies(fixture):\n"
        f"    {kill if where == 'call' else 'pass'}\n"
        "def test_never():\n    pass\n",
    )
    progress = progress_from_events(events)
    assert (progress.running, progress.running_when) == ("test_sample.py::test_dies", when)
    assert [(c.name, c.outcome) for c in progress.cases] == [("test_first", "passed")]
    assert progress.not_run == ("test_sample.py::test_never",)
    assert progress.session_exitstatus is None


def test_events_replayed_in_parts_say_what_the_whole_says(tmp_path: Path) -> None:
    """``qualify run`` replays the events while the E2E runs, in whatever parts its polls
    found: each split of a real plugin stream (every outcome, then a kill inside a test) gives
    what one replay of the whole gives, which is decided here first."""
    kill = "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"
    events = _run_plugin(
        tmp_path,
        "import pytest\n"
        "@pytest.fixture\ndef broken():\n    raise RuntimeError('setup')\n"
        "def test_ok():\n    pass\n"
        "def test_bad():\n    assert 1 == 2\n"
        "def test_setup(broken):\n    pass\n"
        "@pytest.mark.skip(reason='later')\ndef test_skip():\n    pass\n"
        "@pytest.mark.xfail\ndef test_xfail():\n    assert 0\n"
        f"def test_dies():\n    {kill}\n"
        "def test_never():\n    pass\n",
    )
    whole = progress_from_events(events)
    assert [(c.name, c.outcome) for c in whole.cases] == [
        ("test_ok", "passed"),
        ("test_bad", "failed"),
        ("test_setup", "error"),
        ("test_skip", "skipped"),
        ("test_xfail", "skipped"),
    ]
    assert (whole.running, whole.running_when) == ("test_sample.py::test_dies", "call")
    assert (whole.not_run, whole.collected) == (("test_sample.py::test_never",), 7)
    for cut in range(len(events) + 1):
        replay = ProgressReplay()
        replay.feed(events[:cut])
        replay.feed(["a value that is not a record", 3, None])
        replay.feed(events[cut:])
        assert replay.result() == whole


def test_the_session_end_is_streamed_once_pytest_wrote_its_junit(tmp_path: Path) -> None:
    """The host reads pytest's JUnit as soon as the session's last line is there: at the
    moment that line is written (checked by a conftest that wraps the plugin's writes), the
    file holds every test. The plugin's end of session runs last (``trylast``), whatever
    order the plugins were registered in."""
    (tmp_path / "test_sample.py").write_text(
        "import pytest\n@pytest.mark.parametrize('n', range(25))\ndef test_n(n):\n    pass\n"
    )
    (tmp_path / "conftest.py").write_text(
        "import os, xml.etree.ElementTree as ET\n"
        "import pytest\n"
        "from harness import _events\n"
        "def pytest_configure(config):\n"
        "    write = _events._write\n"
        "    def checked(path, pid, line, durable):\n"
        "        if b'session_finish' in line:\n"
        "            root = ET.parse(os.environ['JUNIT']).getroot()\n"
        "            with open(os.environ['SEEN'], 'w') as seen:\n"
        "                seen.write(str(len(root.findall('.//testcase'))))\n"
        "        write(path, pid, line, durable)\n"
        "    _events._write = checked\n"
    )
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    junit, seen = tmp_path / "junit.xml", tmp_path / "seen"
    env = dict(
        os.environ,
        QUALIFY_EVENTS=str(tmp_path / "events.jsonl"),
        PYTEST_PLUGINS="harness.pytest_plugin",
        PYTHONPATH=str(ROOT),
        JUNIT=str(junit),
        SEEN=str(seen),
    )
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
            f"--junitxml={junit}"]  # fmt: skip
    subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, check=True, timeout=120)
    assert seen.read_text() == "25"
    assert lines(tmp_path / "events.jsonl")[-1]["event"] == "session_finish"


def test_the_session_end_names_the_file_pytest_wrote_its_junit_to(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The E2E's own ``--junitxml`` (qualify asks for none): the session's end says which file
    pytest wrote (absolute, as pytest makes it), or null for none."""
    source = "def test_ok():\n    pass\n"
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    second.mkdir()
    end = _run_plugin(first, source, "--junitxml=sub/../own.xml")[-1]
    assert end["event"] == "session_finish" and end["junitxml"] == str(first / "own.xml")
    assert (first / "own.xml").is_file()
    assert _run_plugin(second, source)[-1]["junitxml"] is None


def test_pytest_junit_is_read_from_the_run_or_work_directories_only(tmp_path: Path) -> None:
    """Where judging reads pytest's JUnit: the E2E's own file when it lies under the working
    directory, the family's or the run directory and was written after the E2E started;
    otherwise nowhere (the events' cases)."""
    from qualify.judge.judgement import pytest_junit_path

    repo, run_dir, outside = tmp_path / "repo", tmp_path / "run", tmp_path / "outside"
    family = repo / "families" / "own"
    for directory in (family / "reports", run_dir, outside):
        directory.mkdir(parents=True)
    (family / "escape").symlink_to(outside)
    spec: Any = SimpleNamespace(
        run_dir=run_dir, workdir=repo, family=SimpleNamespace(directory=family)
    )
    started = time.time()
    for path in (family / "reports" / "own.xml", repo / "top.xml", outside / "own.xml"):
        path.write_text("<testsuites/>")
    (run_dir / "own.xml").write_text("<testsuites/>")

    def where(named: object, not_before: float = started) -> Path | None:
        progress = progress_from_events(
            [{"event": "session_finish", "exitstatus": 0, "junitxml": named}]
        )
        return pytest_junit_path(spec, progress, not_before)

    assert where(None) is None  # it wrote none: the events make the JUnit
    assert where(str(run_dir / "sub" / ".." / "own.xml")) == run_dir / "own.xml"
    assert where(str(family / "reports" / "own.xml")) == family / "reports" / "own.xml"
    assert where(str(repo / "top.xml")) == repo / "top.xml"  # the working directory's
    assert where(str(repo / "top.xml"), not_before=started + 10) is None  # older than the E2E
    assert where(str(family / "reports" / "absent.xml")) is None
    assert where(str(outside / "own.xml")) is None
    assert where(str(family / "escape" / "own.xml")) is None  # a link out of the family's
    assert where("reports/own.xml") is None  # not what pytest writes: always absolute
    assert where(17) is None  # not a path: the line is read as naming none


ATTEMPTS = """
import os, pathlib

def _attempt(name):
    marker = pathlib.Path(os.environ["RERUN_MARKS"]) / name
    tries = int(marker.read_text()) + 1 if marker.exists() else 1
    marker.write_text(str(tries))
    return tries
"""
"""``_attempt(name)``: which attempt at ``name`` this is (1, 2...), counted in files under
``$RERUN_MARKS`` (also ``tests/test_faults.py``'s)."""

RERUN_MODULE = (
    ATTEMPTS
    + """
def test_flaky():
    assert _attempt("flaky") == 2, "not yet"

def test_always_fails():
    _attempt("always")
    assert 1 == 2

def test_passes():
    pass
"""
)
"""Under ``--reruns 2``: a test that passes on its second attempt, one that fails all three,
one that passes at once."""
NOT_YET = "AssertionError: not yet\nassert 1 == 2\n +  where 1 = _attempt('flaky')"
"""The flaky test's first failure, as pytest words it."""


def _reruns_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[dict[str, object]]:
    marks = tmp_path / "marks"
    marks.mkdir()
    monkeypatch.setenv("RERUN_MARKS", str(marks))
    args = ("-p", "rerunfailures", "--reruns", "2", "--junitxml=junit.xml")
    return _run_plugin(tmp_path, RERUN_MODULE, *args)


def test_reruns_count_each_test_once_by_its_last_attempt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """pytest-rerunfailures runs a failed test again and reports the attempt it discards as
    ``rerun``; pytest's JUnit writer then writes a passing testcase for each such attempt (six
    testcases for three tests). The events count each test once, by its last attempt, with
    its reruns, and pytest's JUnit read against them loses its discarded attempts."""
    from qualify.evidence.junit import parse_pytest_junit
    from qualify.judge.judgement import read_pytest_junit

    events = _reruns_run(tmp_path, monkeypatch)
    ends = [(e["nodeid"], e["when"], e["outcome"]) for e in events if e.get("state") == "end"]
    assert ends.count(("test_sample.py::test_flaky", "call", "rerun")) == 1
    assert ends.count(("test_sample.py::test_always_fails", "call", "rerun")) == 2
    rerun = next(e for e in events if e.get("outcome") == "rerun")
    assert rerun["message"] == NOT_YET
    progress = progress_from_events(events)
    outcomes = [(c.name, c.outcome, c.message) for c in progress.cases]
    assert outcomes == [
        ("test_flaky", "passed", None),
        ("test_always_fails", "failed", "assert 1 == 2"),
        ("test_passes", "passed", None),
    ]
    assert progress.reruns == (
        ("test_sample.py::test_flaky", 1),
        ("test_sample.py::test_always_fails", 2),
    )
    assert progress.flaky == ("test_sample.py::test_flaky",)
    theirs = parse_pytest_junit(tmp_path / "junit.xml") or []
    assert len(theirs) == 6  # what pytest writes
    read = read_pytest_junit(tmp_path / "junit.xml", progress)
    assert read.disagreements == ()
    assert [(c.name, c.outcome, c.message) for c in read.cases or []] == outcomes


def test_a_test_given_twice_keeps_the_failure_of_its_first_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--keep-duplicates`` with the module given twice runs each test twice, without a
    rerun plugin: a run that reported its failure is no discarded attempt, and the failure
    stands even when the second run passes; a test that passed both times is one testcase."""
    marks = tmp_path / "marks"
    marks.mkdir()
    monkeypatch.setenv("RERUN_MARKS", str(marks))
    twice = ("-p", "no:rerunfailures", "--keep-duplicates", "test_sample.py", "test_sample.py")
    progress = progress_from_events(_run_plugin(tmp_path, RERUN_MODULE, *twice))
    assert [(c.name, c.outcome, c.message) for c in progress.cases] == [
        ("test_flaky", "failed", NOT_YET),
        ("test_always_fails", "failed", "assert 1 == 2"),
        ("test_passes", "passed", None),
    ]
    assert (progress.reruns, progress.flaky) == ((("test_sample.py::test_passes", 1),), ())


def test_a_kill_between_a_rerun_and_the_next_attempt_leaves_the_failure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The events of a real run cut where a SIGKILL could cut them: after an attempt ended
    in ``rerun`` and before the next began, the test failed (with the discarded failure's
    message), not yet run again; once the next attempt has started, it is the one running."""
    events = _reruns_run(tmp_path, monkeypatch)
    flaky = "test_sample.py::test_flaky"
    ended = max(
        i
        for i, e in enumerate(events)
        if e.get("nodeid") == flaky
        and e.get("state") == "end"
        and e.get("when") == "teardown"
        and i < len(events) - 1
        and events[i + 1].get("when") == "setup"
        and events[i + 1].get("nodeid") == flaky
    )
    cut = progress_from_events(events[: ended + 1])
    assert [(c.name, c.outcome, c.message) for c in cut.cases] == [
        ("test_flaky", "failed", NOT_YET)
    ]
    assert (cut.running, cut.reruns, cut.flaky) == (None, (), ())
    started = progress_from_events(events[: ended + 2])
    assert (started.running, started.running_when, started.cases) == (flaky, "setup", ())
    assert started.reruns == ((flaky, 1),)


FORKED_CRASH = (
    '{"event":"test_phase","state":"end","when":"???","nodeid":"test_fk.py::test_hog",'
    '"outcome":"failed","duration":4.866199742536992e-05,"message":"/src/families/rr/test_fk.py:3:'
    ' running the test CRASHED with signal 9 (SIGKILL)","longrepr":"/src/families/rr/test_fk.py:3:'
    ' running the test CRASHED with signal 9 (SIGKILL)","t":1796179854.011456,'
    '"mono":60561.514275824,"pid":23036}'
)
"""The plugin's line for a test that pytest-forked's child died in (OOM-killed in a 256 MiB
cgroup; pytest 8.0.2, pytest-forked 1.7.5, the path shortened): pytest-forked reports the
crash in a phase it calls "???"."""


def test_a_crash_in_a_phase_pytest_does_not_name_is_worded_as_pytest_words_it() -> None:
    """pytest's JUnit writer words a failure in any phase but the call and the teardown as
    "failed on setup" (its error for that same run's test_hog); so do the events."""
    start = {
        "event": "test_phase",
        "state": "start",
        "when": "call",
        "nodeid": "test_fk.py::test_hog",
    }
    progress = progress_from_events([start, json.loads(FORKED_CRASH)])
    (case,) = progress.cases
    assert (case.outcome, case.message) == (
        "error",
        'failed on setup with "/src/families/rr/test_fk.py:3: running the test CRASHED with '
        'signal 9 (SIGKILL)"',
    )


def test_the_plugin_pytest_loads_names_every_hook_and_fixture_of_its_module() -> None:
    """pytest rewrites the module it loads as a plugin from source at every run (a run's
    harness is a fresh copy, without pytest's cache): ``harness.pytest_plugin`` only names
    the hooks and the fixture of ``harness._plugin``, which is imported from its bytecode;
    a hook added there and not named here would silently not run."""
    import ast

    from harness import _plugin, pytest_plugin

    defined = sorted(
        name
        for name, value in vars(_plugin).items()
        if callable(value)
        and not name.startswith("_")
        and (name.startswith("pytest_") or type(value).__name__.startswith("Fixture"))
    )
    assert "record_testsuite_property" in defined and len(defined) > 5
    assert sorted(pytest_plugin.__all__) == defined
    assert all(getattr(pytest_plugin, name) is getattr(_plugin, name) for name in defined)
    tree = ast.parse(Path(pytest_plugin.__file__).read_text())
    assert [type(node).__name__ for node in tree.body] == [
        "Expr", "ImportFrom", "ImportFrom", "Assign",
    ]  # fmt: skip


def test_plugin_ignores_reports_that_xdist_replays_in_its_controller(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only the process that ran a test writes its lines: pytest-xdist's controller replays
    every worker's reports (marked with ``node``), which would end phases a second time."""
    from harness import _plugin as pytest_plugin

    events = tmp_path / "events.jsonl"
    monkeypatch.setattr(pytest_plugin._stream, "path", str(events))
    report = pytest.TestReport(
        nodeid="t.py::a",
        location=("t.py", 0, "a"),
        keywords={},
        outcome="failed",
        longrepr="boom",
        when="call",
    )
    report.node = object()  # type: ignore[attr-defined]
    pytest_plugin.pytest_runtest_logreport(report)
    assert not events.exists()
    del report.node
    pytest_plugin.pytest_runtest_logreport(report)
    (line,) = lines(events)
    assert (line["nodeid"], line["when"], line["outcome"]) == ("t.py::a", "call", "failed")


def test_under_xdist_the_workers_write_the_tests_and_the_controller_ends_the_session(
    tmp_path: Path,
) -> None:
    """A real pytest-xdist run (``-n 2``): each test's lines come once, from the worker that
    ran it; the session's end comes once, from the controller, after the workers' (a worker's
    own end of session would say the session finished before pytest's JUnit is written)."""
    from qualify.judge.judgement import read_pytest_junit

    source = (
        "import pytest\n"
        "@pytest.mark.parametrize('n', range(6))\ndef test_many(n):\n    assert n != 4\n"
        "def test_skip():\n    pytest.skip('not here')\n"
    )
    events = _run_plugin(tmp_path, source, "-p", "xdist", "-n", "2", "--junitxml=junit.xml")
    workers = {e["pid"] for e in events if e.get("state") == "start"}
    finishes = [e for e in events if e["event"] == "session_finish"]
    assert len(workers) == 2
    assert [(e["pid"] in workers, e["exitstatus"]) for e in finishes] == [(False, 1)]
    ends = [e["nodeid"] for e in events if e.get("state") == "end" and e["when"] == "teardown"]
    assert sorted(ends) == sorted(set(ends)) and len(ends) == 7
    progress = progress_from_events(events)
    read = read_pytest_junit(tmp_path / "junit.xml", progress)
    assert read.disagreements == ()
    ours = sorted((c.name, c.outcome) for c in progress.cases)
    assert ours == sorted((c.name, c.outcome) for c in read.cases or [])
    assert ("test_many[4]", "failed") in ours and ("test_skip", "skipped") in ours


def test_the_staged_harness_keeps_bytecode_the_import_system_accepts(tmp_path: Path) -> None:
    # As pip installs the package: compiled. The copy in the run directory must import without
    # compiling again (every Python process of a run imports the harness's sitecustomize).
    import compileall
    import importlib.util

    from qualify.run.execute import stage_harness

    source = Path(harness.__file__).parent
    assert compileall.compile_dir(str(source), quiet=1)
    staged = stage_harness(tmp_path)
    for module in sorted(staged.rglob("*.py")):
        cached = Path(importlib.util.cache_from_source(str(module)))
        header = cached.read_bytes()[:16]
        stat = module.stat()
        # PEP 552 timestamp header: flags 0, then the source's mtime and size it was built from.
        assert int.from_bytes(header[4:8], "little") == 0, module
        assert int.from_bytes(header[8:12], "little") == int(stat.st_mtime) & 0xFFFFFFFF, module
        assert int.from_bytes(header[12:16], "little") == stat.st_size & 0xFFFFFFFF, module


def test_a_process_that_records_nothing_loads_only_the_startup(tmp_path: Path) -> None:
    """Every Python process of the E2E starts through qualify's sitecustomize; one that is not
    the first (the limits are taken) and never imports torch loads the harness's start-up and
    the contract, and faulthandler (built into the interpreter: the last-gasp stack dump is
    registered with it), nothing else that the same interpreter without the harness would not."""
    from qualify.plan.spec import HARNESS_ROOT, HARNESS_SITE

    (tmp_path / contract.LIMITS_MARKER).touch()  # another process recorded the limits
    code = "import sys; print(' '.join(sorted(sys.modules)))"
    base = {k: v for k, v in os.environ.items() if not k.startswith(("QUALIFY_", "PYTHONPATH"))}
    inside = dict(
        base,
        PYTHONPATH=os.pathsep.join([str(HARNESS_ROOT), str(HARNESS_SITE)]),
        QUALIFY_EVENTS=str(tmp_path / "events.jsonl"),
        QUALIFY_RUN_DIR=str(tmp_path),
    )
    loaded = {}
    for name, env in (("bare", base), ("inside", inside)):
        done = subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
        )
        loaded[name] = set(done.stdout.split())
    added = loaded["inside"] - loaded["bare"] - {"sitecustomize"}
    # (_json, the C encoder the contract uses, may be loaded already: a coverage run's hook)
    assert {"harness", "harness._startup", "harness.contract", "faulthandler"} <= added
    assert added <= {"harness", "harness._startup", "harness.contract", "faulthandler", "_json"}
    assert "faulthandler" in sys.builtin_module_names  # no file read, no Python code run
    assert not (tmp_path / "events.jsonl").exists()
