"""qualify run under a real cgroup: OOM kill, exact phase peaks, timeout, SIGTERM, mismatch."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import psutil
import pytest

from qualify.sandbox.cgroup.layout import current_layout
from tests.conftest import Completed, RunQualify, git, qualify_argv

pytestmark = [pytest.mark.privileged, pytest.mark.slow]
MIB = 2**20


def leftover_cgroups() -> list[str]:
    """qualify-* cgroups under our own memory cgroup (must be none after any run)."""
    layout = current_layout()
    assert layout.memory_dir is not None
    return [p.name for p in layout.memory_dir.iterdir() if p.name.startswith("qualify-")]


def junit_cases(run_dir: Path) -> dict[str, ET.Element]:
    root = ET.parse(run_dir / "junit.xml").getroot()
    return {f"{c.get('classname')}::{c.get('name')}": c for c in root.iter("testcase")}


def test_oom_killed_with_evidence(repo: Path, run_qualify: RunQualify) -> None:
    started = time.monotonic()
    result = run_qualify(
        "run",
        "--family",
        "hog",
        "--repo",
        str(repo),
        "--mem",
        "256M",
        "--set",
        "second_mib=400",
        "--out",
        "reports",
    )
    elapsed = time.monotonic() - started
    assert result.returncode == 3, result.stdout + result.stderr
    assert elapsed < 30
    audit = result.audit()
    assert audit["verdict"] == "OOM_KILLED"
    assert audit["oom"]["kills"] >= 1
    assert audit["exit"]["signal"] == "SIGKILL"
    assert audit["limits"]["in_effect"]["memory_bytes"] == 256 * MIB
    assert audit["limits"]["in_effect"]["swap_bytes"] == 0
    # Read again by the family's own first Python process, from inside the cgroup.
    inside = audit["sandbox"]["inside"]
    assert (inside["memory_bytes"], inside["swap_bytes"]) == (256 * MIB, 0), inside
    assert inside["cgroup"] == audit["sandbox"]["cgroup"] and inside["pid"] == audit["exit"]["pid"]
    peak = audit["memory"]["peak_bytes"]
    assert 0.97 * 256 * MIB <= peak <= 256 * MIB
    assert audit["memory"]["phase_at_end"] == "second"
    assert audit["tests"]["running_at_end"] == "test_hog.py::test_alloc"
    cases = junit_cases(result.run_dir)
    error = cases["test_hog::test_alloc"].find("error")
    assert error is not None and error.get("type") == "OOM_KILLED"
    assert "phase second" in error.get("message", "")
    assert cases["test_hog::test_setup_ok"].find("error") is None
    skipped = cases["test_hog::test_after"].find("skipped")
    assert skipped is not None and "not run" in skipped.get("message", "")
    assert leftover_cgroups() == []


def test_passes_with_exact_phase_peaks(repo: Path, run_qualify: RunQualify) -> None:
    result = run_qualify("run", "--family", "hog", "--repo", str(repo), "--mem", "768M")
    assert result.returncode == 0, result.stdout + result.stderr
    audit = result.audit()
    assert audit["verdict"] == "PASSED"
    phases = {p["name"]: p for p in audit["memory"]["phases"]}
    baseline = phases["sleep"]["peak_bytes"]
    # The sleep phase allocates nothing: its peak is the interpreter's baseline.
    first = phases["first"]["peak_bytes"] - baseline
    second = phases["second"]["peak_bytes"] - baseline
    assert abs(first - 64 * MIB) < 8 * MIB, first / MIB
    assert abs(second - 160 * MIB) < 8 * MIB, second / MIB
    assert audit["memory"]["peak_bytes"] >= phases["second"]["peak_bytes"]
    assert audit["oom"]["kills"] == 0
    timeline = [
        json.loads(line) for line in (result.run_dir / "timeline.jsonl").read_text().splitlines()
    ]
    assert len(timeline) >= 10
    assert any("second" in sample["phases"] for sample in timeline)
    assert leftover_cgroups() == []


SPAWN_SPY = """
import sys
import threading
import qualify.run.execute as execute
loaded, threads = [], []
spawn = execute._spawn
def spawn_spy(*args, **kwargs):
    loaded.append(set(sys.modules))
    threads.append(sorted(thread.name for thread in threading.enumerate()))
    return spawn(*args, **kwargs)
execute._spawn = spawn_spy
from qualify.cli import main
code = main(sys.argv[1:])
print("THREADS " + " ".join(threads[0]))
print("AT SPAWN " + " ".join(sorted(loaded[0])))
sys.exit(code)
"""
NOT_BEFORE_THE_E2E = (
    "qualify.run.monitor", "qualify.run.execution", "qualify.run.processes",
    "qualify.run.timeline", "qualify.nvml", "qualify.plan.docker", "qualify.plan.mps",
    "qualify.judge", "qualify.publish.sanitize", "qualify.publish.bundle",
    "qualify.publish.secrets", "qualify.publish.github", "qualify.report.audit_of_run",
    "qualify.report.html",
    "qualify.triage", "qualify.plan.profiles", "rich", "junitparser", "lxml", "hashlib",
    "psutil", "docker",
)  # fmt: skip
"""What a run of the cgroup backend without a profile, a GPU budget or a container does not
need before its E2E starts: the watchers start after it, the end of the run is imported while
it runs."""


def test_the_e2e_starts_before_what_only_the_watchers_and_the_end_of_the_run_need(
    repo: Path, tmp_path: Path
) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("COVERAGE_")}
    argv = ["run", "--family", "hog", "--repo", str(repo), "--mem", "768M", "--out", "out"]
    done = subprocess.run(
        [sys.executable, "-c", SPAWN_SPY, *argv],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    loaded = done.stdout.split("AT SPAWN ", 1)[1].split()
    early = [
        name for name in loaded
        if any(name == prefix or name.startswith(prefix + ".") for prefix in NOT_BEFORE_THE_E2E)
    ]  # fmt: skip
    assert early == []
    assert "qualify.sandbox.cgroup.v1" in loaded or "qualify.sandbox.cgroup.v2" in loaded
    threads = done.stdout.split("THREADS ", 1)[1].split("\n", 1)[0].split()
    assert "qualify-commit" not in threads, threads  # the commit was read before the E2E


def test_timeout(repo: Path, run_qualify: RunQualify) -> None:
    result = run_qualify(
        "run",
        "--family",
        "hog",
        "--repo",
        str(repo),
        "--mem",
        "512M",
        "--set",
        "sleep_s=60",
        "--timeout",
        "3s",
    )
    assert result.returncode == 3, result.stdout + result.stderr
    audit = result.audit()
    assert audit["verdict"] == "TIMEOUT"
    assert audit["memory"]["phase_at_end"] == "sleep"
    assert junit_cases(result.run_dir)["test_hog::test_alloc"].find("error") is not None
    assert leftover_cgroups() == []


def _wait_for_phase(tmp_path: Path, name: str, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for events in tmp_path.glob("reports/*/hog/*/*/events.jsonl"):
            if f'"phase":"{name}"' in events.read_text():
                return
        time.sleep(0.1)
    raise AssertionError(f"phase {name} never started")


@pytest.mark.parametrize("signal_number", [signal.SIGTERM, signal.SIGINT])
def test_signal_to_qualify_cleans_up(
    repo: Path, tmp_path: Path, signal_number: signal.Signals
) -> None:
    process = subprocess.Popen(
        qualify_argv(
            "run", "--family", "hog", "--repo", str(repo), "--mem", "512M", "--set", "sleep_s=60"
        ),
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    _wait_for_phase(tmp_path, "sleep")
    process.send_signal(signal_number)
    stdout, stderr = process.communicate(timeout=30)
    result = Completed(
        subprocess.CompletedProcess([], process.returncode, stdout, stderr), tmp_path
    )
    assert result.returncode == 3, stdout + stderr
    audit = result.audit()
    assert audit["verdict"] == "KILLED"
    assert audit["interrupted"] == signal_number.name
    assert "interrupted" in audit["reason"]
    triaged = subprocess.run(
        qualify_argv("triage", str(result.run_dir), "--format", "json"),
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
    )
    found = json.loads(triaged.stdout)
    assert (found["class"], triaged.returncode) == ("EXTERNAL_KILL", 3), triaged.stderr
    assert found["summary"].startswith("qualify itself was interrupted")
    assert found["decided_by"][0]["text"] == f"interrupted = {signal_number.name}"
    ET.parse(result.run_dir / "junit.xml")
    family_dir = str(repo / "families" / "hog")
    children = []
    for process in psutil.process_iter(["cwd"]):
        if process.info["cwd"] == family_dir:
            children.append(process.pid)
    assert children == []
    assert leftover_cgroups() == []


def test_limit_mismatch_is_error_and_e2e_not_run(repo: Path, tmp_path: Path) -> None:
    """qualify inside a 300 MiB cgroup asks for 1 GiB: the kernel enforces the smaller cap."""
    layout = current_layout()
    assert layout.memory_dir is not None
    outer = layout.memory_dir / f"qualify-test-outer-{os.getpid()}"
    outer.mkdir()
    try:
        (outer / "memory.limit_in_bytes").write_text(str(300 * MIB))
        argv = qualify_argv("run", "--family", "hog", "--repo", str(repo), "--mem", "1G")
        script = f'echo $$ > {outer}/cgroup.procs && exec "$@"'
        completed = subprocess.run(
            ["sh", "-c", script, "sh", *argv],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        result = Completed(completed, tmp_path)
        assert result.returncode == 4, result.stdout + result.stderr
        audit = result.audit()
        assert audit["verdict"] == "ERROR"
        assert "limits in effect differ" in audit["reason"]
        assert audit["limits"]["in_effect"]["memory_bytes"] == 300 * MIB
        assert not (result.run_dir / "events.jsonl").exists()
    finally:
        outer.rmdir()


def test_commit_and_dirty(repo: Path, run_qualify: RunQualify) -> None:
    head = git(repo, "rev-parse", "HEAD")
    clean = run_qualify(
        "run", "--family", "hog", "--repo", str(repo), "--mem", "512M", "--set", "second_mib=1"
    )
    commit = clean.audit()["commit"]
    assert commit["head"] == head and len(head) == 40
    assert commit["dirty"] is False and commit["tree"] == commit["head_tree"]
    assert clean.run_dir is not None and clean.run_dir.parts[-4] == head
    (repo / "families" / "hog" / "notes.txt").write_text("local change\n")
    dirty = run_qualify(
        "run", "--family", "hog", "--repo", str(repo), "--mem", "512M", "--set", "second_mib=1"
    )
    commit = dirty.audit()["commit"]
    assert commit["head"] == head
    assert commit["dirty"] is True
    assert commit["tree"] != commit["head_tree"]
    assert len(commit["diff_sha256"]) == 64
