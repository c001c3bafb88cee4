"""The sandbox-side harness: no-op outside a run, exact event lines inside one."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import harness
from harness._options import parse_option

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


def test_pytest_plugin_streams_every_phase(tmp_path: Path) -> None:
    (tmp_path / "test_sample.py").write_text(
        "import pytest\n"
        "def test_ok():\n    pass\n"
        "def test_bad():\n    assert 1 == 2\n"
        "@pytest.mark.skip(reason='later')\ndef test_skip():\n    pass\n"
    )
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    env = dict(
        os.environ,
        QUALIFY_EVENTS=str(tmp_path / "events.jsonl"),
        PYTEST_PLUGINS="harness.pytest_plugin",
        PYTHONPATH=str(ROOT),
    )
    subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        check=False,
        timeout=120,
    )
    events = lines(tmp_path / "events.jsonl")
    assert events[0]["event"] == "collection"
    assert events[0]["nodeids"] == [
        "test_sample.py::test_ok",
        "test_sample.py::test_bad",
        "test_sample.py::test_skip",
    ]
    phases = [
        (e["nodeid"].split("::")[1], e["when"], e["state"], e.get("outcome"))
        for e in events
        if e["event"] == "test_phase"
    ]
    assert phases[:6] == [
        ("test_ok", "setup", "start", None),
        ("test_ok", "setup", "end", "passed"),
        ("test_ok", "call", "start", None),
        ("test_ok", "call", "end", "passed"),
        ("test_ok", "teardown", "start", None),
        ("test_ok", "teardown", "end", "passed"),
    ]
    bad_call = next(
        e
        for e in events
        if e.get("nodeid", "").endswith("test_bad")
        and e.get("when") == "call"
        and e["state"] == "end"
    )
    assert bad_call["outcome"] == "failed" and "assert 1 == 2" in bad_call["longrepr"]
    assert events[-1]["event"] == "session_finish" and events[-1]["exitstatus"] == 1
