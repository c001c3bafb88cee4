"""qualify triage of real qualify runs under a real cgroup: every class this machine can make."""

from __future__ import annotations

import json
import signal
import subprocess
import textwrap
import time
from pathlib import Path
from typing import Any

import psutil
import pytest

from tests.conftest import Completed, RunQualify, git, qualify_argv

pytestmark = [pytest.mark.privileged, pytest.mark.slow]

PARITY_TEST = """
import harness


def test_generate():
    with harness.phase("generate"):
        for i in range(3):
            reference = [1, 2, 3, 4, 5]
            native = list(reference) if i == 0 else [1, 2, 9, 4, 5]
            top = [[(t, -0.1), (9, -4.0)] for t in reference]
            for side, ids in (("reference", reference), ("native", native)):
                harness.record_case(f"case-{i}", side=side, token_ids=ids, text="t",
                                    top_logprobs=top, prompt="p", eos=True)
"""


def triage_json(run_qualify: RunQualify, run_dir: Path | None, *extra: str) -> dict[str, Any]:
    args = ["triage", *([str(run_dir)] if run_dir else []), *extra, "--format", "json"]
    result = run_qualify(*args)
    document: dict[str, Any] = json.loads(result.stdout)
    assert result.returncode == document["exit_code"], result.stderr
    return document


def hog(run_qualify: RunQualify, repo: Path, *args: str) -> Completed:
    return run_qualify("run", "--family", "hog", "--repo", str(repo), *args)


def test_cgroup_oom(repo: Path, run_qualify: RunQualify) -> None:
    run = hog(run_qualify, repo, "--mem", "256M", "--set", "second_mib=400")
    assert run.returncode == 3 and run.run_dir is not None
    found = triage_json(run_qualify, run.run_dir)
    assert found["class"] == "CGROUP_OOM" and found["exit_code"] == 3
    assert {k: found["decided_by"][0][k] for k in ("source", "line")} == {
        "source": "audit.json",
        "line": None,
    }
    assert found["decided_by"][0]["text"].startswith("oom.kills = ")
    attribution = found["attribution"]
    assert attribution["cap_bytes"] == 256 << 20
    assert attribution["phase_at_end"] == "second"
    assert [p["name"] for p in attribution["phase_peaks"]][:2] == ["first", "second"]
    # culprits come from the monitor's per-process samples: the hog's own pytest, by name and
    # command line (its RSS when sampled depends on the moment: bytearray pages fill lazily)
    culprits = attribution["culprits"]
    assert culprits and "pytest test_hog.py" in culprits[0]["cmdline"], culprits
    assert culprits[0]["name"].startswith("python") and culprits[0]["rss_bytes"] > 0
    assert culprits == sorted(culprits, key=lambda c: -c["rss_bytes"])
    assert any(
        r.startswith("this run needs more than 256 MiB in phase second") for r in found["remedies"]
    )
    text = run_qualify("triage", str(run.run_dir))
    assert text.returncode == 3 and "CGROUP_OOM" in text.stdout and "▁" in text.stdout
    markdown = run_qualify("triage", str(run.run_dir), "--format", "markdown")
    assert markdown.stdout.startswith("### qualify triage: `CGROUP_OOM`")


def _e2e_pytest(repo: Path, deadline: float) -> psutil.Process:
    family_dir = str(repo / "families" / "hog")
    while time.monotonic() < deadline:
        for process in psutil.process_iter(["cmdline"]):
            try:
                if (
                    "pytest" in " ".join(process.info["cmdline"] or [])
                    and process.cwd() == family_dir
                ):
                    return process
            except psutil.Error:
                continue
        time.sleep(0.1)
    raise AssertionError("the E2E's pytest process never appeared")


def test_external_kill(repo: Path, run_qualify: RunQualify, tmp_path: Path) -> None:
    command = qualify_argv(
        "run",
        "--family",
        "hog",
        "--repo",
        str(repo),
        "--mem",
        "512M",
        "--set",
        "sleep_s=60",
        "--set",
        "first_mib=8",
        "--set",
        "second_mib=8",
    )
    process = subprocess.Popen(
        command,
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        text=True,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
    )
    try:
        victim = _e2e_pytest(repo, time.monotonic() + 60)
        time.sleep(2.0)  # inside the sleep phase
        victim.send_signal(signal.SIGKILL)
        stdout, _ = process.communicate(timeout=60)
    finally:
        process.kill()
    run_dir = tmp_path / stdout.strip().splitlines()[-1]
    # The run's own verdict first: a SIGKILL with no OOM kill is KILLED (exit 3), not FAILED.
    assert process.returncode == 3, stdout
    audit = json.loads((run_dir / "audit.json").read_text())
    assert audit["verdict"] == "KILLED" and audit["oom"]["kills"] == 0
    assert audit["reason"] == "the E2E was killed by SIGKILL with no OOM kill recorded"
    found = triage_json(run_qualify, run_dir)
    assert found["class"] == "EXTERNAL_KILL" and found["exit_code"] == 3
    assert any("exit.signal = SIGKILL" in e["text"] for e in found["decided_by"])
    assert found["attribution"]["victims"] == [
        {"pid": victim.pid, "comm": "the E2E", "signal": "SIGKILL"}
    ]


def test_timeout(repo: Path, run_qualify: RunQualify) -> None:
    run = hog(run_qualify, repo, "--mem", "512M", "--timeout", "3s", "--set", "sleep_s=60")
    assert run.run_dir is not None
    found = triage_json(run_qualify, run.run_dir)
    assert found["class"] == "TIMEOUT" and found["exit_code"] == 3
    assert found["decided_by"][0]["text"] == "exit.timed_out = True"
    assert "phase sleep" in found["remedies"][0]


def test_test_failure_on_a_dirty_tree(repo: Path, run_qualify: RunQualify) -> None:
    (repo / "families" / "hog" / "pytest.ini").write_text("[pytest]\n# uncommitted\n")
    run = hog(run_qualify, repo, "--mem", "512M", "--set", "first_mib=-1")
    assert run.run_dir is not None
    found = triage_json(run_qualify, run.run_dir)
    assert found["class"] == "TEST_FAILURE" and found["exit_code"] == 1
    assert any("test_setup_ok" in e["text"] for e in found["decided_by"])
    assert any(
        w.startswith("dirty tree: the run tested uncommitted changes") for w in found["warnings"]
    )
    text = run_qualify("triage", str(run.run_dir))
    assert "dirty tree" in text.stdout


def _commit_family(family: Path, test_file: str, source: str) -> None:
    """The family in ``family`` (its family.toml written) with its test module and a
    pytest.ini, committed in the repository two levels up."""
    (family / test_file).write_text(source)
    (family / "pytest.ini").write_text("[pytest]\n")
    repo = family.parent.parent
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", f"{family.name} family")


def test_parity_failure(repo: Path, run_qualify: RunQualify) -> None:
    family = repo / "families" / "par"
    family.mkdir()
    (family / "family.toml").write_text(
        textwrap.dedent("""
        name = "par"
        [e2e]
        command = ["python", "-m", "pytest", "test_par.py", "-q"]
        [resources]
        memory = "512M"
        [parity]
        min_exact = 3
        """)
    )
    _commit_family(family, "test_par.py", PARITY_TEST)
    run = run_qualify("run", "--family", "par", "--repo", str(repo), "--mem", "512M")
    assert run.returncode == 1 and run.run_dir is not None, run.stdout + run.stderr
    found = triage_json(run_qualify, run.run_dir)
    assert found["class"] == "PARITY_FAILURE" and found["exit_code"] == 1
    assert found["warnings"] == []


XDIST_HOG = """
import time

import pytest


@pytest.mark.parametrize("n", range(8))
def test_quick(n):
    time.sleep(0.05)


def test_hog():
    blocks = []
    while True:
        blocks.append(bytearray(16 << 20))
        time.sleep(0.01)
"""


def test_the_largest_process_at_the_peak_is_named_with_the_test_it_ran(
    repo: Path, run_qualify: RunQualify
) -> None:
    """A pytest-xdist worker OOM-killed in a test: triage names the test that the largest
    process at the peak was running, from the plugin's lines of that process."""
    family = repo / "families" / "xd"
    family.mkdir()
    command = '["python", "-m", "pytest", "test_xd.py", "-q", "-p", "xdist", "-n", "2"]'
    (family / "family.toml").write_text(f'name = "xd"\n[e2e]\ncommand = {command}\n')
    _commit_family(family, "test_xd.py", XDIST_HOG)
    run = run_qualify("run", "--family", "xd", "--repo", str(repo), "--mem", "384M")
    assert run.returncode == 3 and run.run_dir is not None, run.stdout + run.stderr
    events = [json.loads(line) for line in (run.run_dir / "events.jsonl").read_text().splitlines()]
    (hog_pid,) = {e["pid"] for e in events if e.get("nodeid") == "test_xd.py::test_hog"}
    found = triage_json(run_qualify, run.run_dir)
    assert found["class"] == "CGROUP_OOM"
    top = found["attribution"]["culprits"][0]
    assert (top["pid"], top["test"], top["test_phase"]) == (hog_pid, "test_xd.py::test_hog", "call")
    text = run_qualify("triage", str(run.run_dir))
    assert f"(pid {hog_pid}, rss " in text.stdout
    assert "running test_xd.py::test_hog (call)" in text.stdout
