"""Live progress on stderr while the E2E runs: without a terminal, a line as the E2E starts,
at every phase change and at least every 10 s; none with --quiet."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from qualify.commands._progress import phase_changes, status_line
from tests.conftest import family_repo, qualify_argv

PHASED = """
import time
import harness


def test_phases():
    with harness.phase("load"):
        time.sleep(2.5)
    with harness.phase("decode"):
        block = bytearray(48 << 20)
        block[::4096] = b"x" * len(block[::4096])
        time.sleep(2.5)
        with harness.phase("blink"):  # shorter than a poll: still a line of its own
            time.sleep(0.3)
"""


def _repo(tmp_path: Path) -> Path:
    toml = '[e2e]\ncommand = ["python", "-m", "pytest", "test_phased.py", "-q"]\n'
    return family_repo(tmp_path / "repo", "phased", toml, {"test_phased.py": PHASED})


@pytest.mark.slow
def test_without_a_terminal_a_line_at_start_and_at_each_phase(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    started = time.monotonic()
    lines: list[tuple[float, str]] = []
    with subprocess.Popen(
        qualify_argv("run", "--family", "phased", "--repo", str(repo), "--mem", "512M"),
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        stdin=subprocess.DEVNULL, env={**os.environ, "CI": "true"},
    ) as process:  # fmt: skip
        assert process.stderr is not None and process.stdout is not None
        for line in process.stderr:
            lines.append((time.monotonic() - started, line.rstrip("\n")))
        process.stdout.read()
        assert process.wait(timeout=120) == 0, lines
    said = [text for _, text in lines]
    assert said[0] == "qualify: phased: the E2E is running", said
    assert lines[0][0] < 12
    load = [text for text in said if text.startswith("qualify: load  ")]
    decode = [text for text in said if text.startswith("qualify: decode  ")]
    assert load and decode, said
    assert " of 512 MiB (" in decode[0] and "test_phased.py::test_phases" in decode[0]
    assert [text for text in said if text.startswith("qualify: decode > blink  ")], said


@pytest.mark.slow
def test_quiet_prints_nothing_on_stderr(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    completed = subprocess.run(
        qualify_argv("run", "--family", "phased", "--repo", str(repo), "--mem", "512M", "--quiet"),
        cwd=tmp_path, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=120,
        check=False,
    )  # fmt: skip
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert completed.stderr == ""


def test_the_status_line_on_a_terminal_has_a_bar() -> None:
    sample = {"phases": ["build", "build:decode"], "usage": 612 << 20, "test": "t.py::t"}
    line = status_line(sample, 900 << 20, 42.0, bar=True)
    assert line.startswith("build > build:decode  612 MiB of 900 MiB (68%) [")
    assert "#" * 14 + "." * 6 + "]" in line and line.endswith("t.py::t  42.0s")


def test_every_phase_change_between_two_polls_is_said() -> None:
    """The samples read since the last poll: a phase that began and ended between two polls
    is a change; the moment between two phases with no phase is not, unless it lasts."""
    phases = [["a"], ["a"], [], ["b"], ["b", "b:x"], ["b"], [], ["c"]]
    samples = [{"t": float(t), "phases": p} for t, p in enumerate(phases)]
    changed, last = phase_changes(samples, ("a",))
    assert [s["phases"] for s in changed] == [["b"], ["b", "b:x"], ["b"], ["c"]]
    assert last == ("c",)
    ended = [{"t": 9.0, "phases": ["c"]}, {"t": 10.0, "phases": []}]
    assert phase_changes(ended, last) == ([ended[1]], ())
    assert phase_changes([], last) == ([], ("c",))
