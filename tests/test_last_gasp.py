"""The last gasp: the allocating line named from real runs killed under a real cap."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness import contract
from qualify.run import last_gasp
from qualify.run.last_gasp import (
    Frame,
    GaspProcess,
    LastGasp,
    LastGaspRecord,
    allocation_point,
    allocation_words,
    parse_dump,
)
from tests.conftest import RunQualify, family_repo

ENGINE = """
import time

MIB = 1 << 20


def grow_kv_cache(cache, step_mib):
    cache.append(bytearray(step_mib * MIB))  # GROW


def load_weights(size_mib):
    return bytearray(size_mib * MIB)  # SPIKE
"""

TESTS = """
import time

import harness
from engine_core import grow_kv_cache, load_weights


def test_decode():
    cache = []
    with harness.phase("build:decode"):
        for _ in range(harness.option("steps", 0)):
            grow_kv_cache(cache, 8)
            time.sleep(0.005)


def test_load():
    with harness.phase("checkpoint"):
        weights = load_weights(harness.option("spike_mib", 0))
        assert len(weights) > 0
"""

TOML = """
[e2e]
command = ["python", "-m", "pytest", "-q", "-p", "no:cacheprovider"]
timeout = "2m"
[options]
steps = 0
spike_mib = 0
"""


def _line_of(marker: str) -> int:
    return next(i for i, line in enumerate(ENGINE.splitlines(), 1) if marker in line)


@pytest.fixture
def engine_repo(tmp_path: Path) -> Path:
    return family_repo(
        tmp_path / "repo", "engine", TOML, {"engine_core.py": ENGINE, "test_engine.py": TESTS}
    )


def _run(run_qualify: RunQualify, repo: Path, *args: str) -> tuple[dict, str]:  # type: ignore[type-arg]
    result = run_qualify("run", "--family", "engine", "--repo", str(repo), *args)
    assert result.run_dir is not None, result.stdout + result.stderr
    triage = run_qualify("triage", str(result.run_dir))
    return result.audit(), result.stdout + "\n" + triage.stdout


@pytest.mark.privileged
@pytest.mark.slow
def test_a_slow_climb_names_the_function_and_line_that_was_allocating(
    engine_repo: Path, tmp_path: Path, run_qualify: RunQualify, monkeypatch: pytest.MonkeyPatch
) -> None:
    summary = tmp_path / "step-summary.md"
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    monkeypatch.setenv("GITHUB_OUTPUT", str(tmp_path / "github-output"))
    audit, said = _run(run_qualify, engine_repo, "--mem", "200M", "--set", "steps=100")
    assert audit["verdict"] == "OOM_KILLED", said
    captures = audit["memory"]["last_gasp"]
    assert 1 <= len(captures) <= 3 and captures[0]["trigger"] == "kernel threshold"
    assert all(c["elapsed_ms"] < 100 for c in captures), captures
    line = _line_of("# GROW")
    expected = (
        f"while `grow_kv_cache` (engine_core.py:{line}) was allocating, called from test_decode"
    )
    assert expected + ", in phase build:decode" in said
    assert f"near the cap: {expected}" in said  # the run's own terminal summary
    assert expected in summary.read_text()  # what a reviewer reads on the pull request
    assert "largest process at the peak (read at the cap): python" in said


@pytest.mark.privileged
@pytest.mark.slow
def test_a_spike_past_the_cap_is_caught_on_its_way_up(
    engine_repo: Path, run_qualify: RunQualify
) -> None:
    # One bytearray of twice the cap: usage goes from ~40 MiB to the kill in one allocation.
    audit, said = _run(run_qualify, engine_repo, "--mem", "200M", "--set", "spike_mib=400")
    assert audit["verdict"] == "OOM_KILLED", said
    line = _line_of("# SPIKE")
    assert (
        f"while `load_weights` (engine_core.py:{line}) was allocating, called from test_load"
        in said
    )
    assert "in phase checkpoint" in said


@pytest.mark.privileged
def test_a_run_that_stays_low_has_no_capture(engine_repo: Path, run_qualify: RunQualify) -> None:
    audit, said = _run(
        run_qualify, engine_repo, "--mem", "1G", "--set", "steps=4", "--set", "spike_mib=8"
    )
    assert audit["verdict"] == "PASSED", said
    assert audit["memory"]["last_gasp"] == []
    assert "near the cap" not in said


@pytest.mark.privileged
@pytest.mark.slow
def test_in_a_container_the_line_is_named_too(
    engine_repo: Path, run_qualify: RunQualify, docker_engine: tuple[str, str]
) -> None:
    _, image = docker_engine
    audit, said = _run(
        run_qualify, engine_repo, "--mem", "200M", "--set", "steps=100", "--backend", "docker",
        "--image", image, "--mount-host-python",
    )  # fmt: skip
    assert audit["verdict"] == "OOM_KILLED" and audit["sandbox"]["backend"] == "docker", said
    line = _line_of("# GROW")
    assert f"while `grow_kv_cache` (engine_core.py:{line}) was allocating" in said


# --- the capture itself, on real processes


def _child(tmp_path: Path, code: str) -> subprocess.Popen[bytes]:
    """A Python process with qualify's start-up hook (as in a run), that runs ``code``."""
    events = tmp_path / contract.EVENTS
    events.touch()
    site = Path(__file__).resolve().parents[1] / "harness" / "_site"
    env = dict(os.environ, PYTHONPATH=f"{site}{os.pathsep}{site.parents[1]}")
    env[contract.ENV_EVENTS] = str(events)
    child = subprocess.Popen([sys.executable, "-c", code], env=env)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:  # until its handler is in place
        status = Path(f"/proc/{child.pid}/status").read_text()
        mask = int(next(x for x in status.splitlines() if x.startswith("SigCgt")).split()[1], 16)
        if mask >> (contract.STACK_SIGNAL - 1) & 1:
            return child
        time.sleep(0.01)
    child.kill()
    raise AssertionError("the start-up hook did not register the stack signal")


WAITING = """
import time

def wait_here():
    time.sleep(30)  # WAIT

wait_here()
"""


def _until_asleep(child: subprocess.Popen[bytes]) -> None:
    """Until ``child`` sleeps in ``time.sleep`` (its wait channel): past its start-up, whose
    frames (``site``'s ``_joinrealpath``) a capture made earlier finds instead."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if "nanosleep" in Path(f"/proc/{child.pid}/wchan").read_text():
            return
        time.sleep(0.01)
    raise AssertionError("the child never reached its sleep")


def _capture_once(tmp_path: Path, code: str, settle_s: float = 0.0) -> LastGaspRecord:
    """One capture of a real child running ``code`` with qualify's start-up hook."""
    child = _child(tmp_path, code)
    try:
        if code is WAITING:
            _until_asleep(child)
        time.sleep(settle_s)
        gasp = LastGasp(tmp_path, lambda: [child.pid], limit_bytes=100)
        gasp.observe(99)
        (capture,) = gasp.close()
    finally:
        child.kill()
        child.wait()
    return capture


def test_the_dump_is_the_processes_own_stack(tmp_path: Path) -> None:
    capture = _capture_once(tmp_path, WAITING)
    (process,) = capture.processes
    assert process.stack[0].function == "wait_here" and process.stack[0].line == 5
    assert capture.elapsed_ms < 100
    site = allocation_point([capture])
    assert site is not None and site["function"] == "wait_here"


def test_a_process_without_the_handler_is_never_signalled(tmp_path: Path) -> None:
    sleeper = subprocess.Popen(["sleep", "30"])
    try:
        time.sleep(0.05)
        gasp = LastGasp(tmp_path, lambda: [sleeper.pid], limit_bytes=100)
        gasp.observe(99)
        (capture,) = gasp.close()
        assert sleeper.poll() is None  # alive: the default action of the signal would kill it
    finally:
        sleeper.kill()
        sleeper.wait()
    (process,) = capture.processes
    assert process.name == "sleep" and process.stack == [] and process.wchan


def test_a_fifo_in_place_of_the_stacks_file_costs_no_wait(tmp_path: Path) -> None:
    child = _child(tmp_path, WAITING)
    try:
        (tmp_path / contract.STACKS).unlink()
        os.mkfifo(tmp_path / contract.STACKS)
        gasp = LastGasp(tmp_path, lambda: [child.pid], limit_bytes=100)
        started = time.monotonic()
        gasp.observe(99)
        (capture,) = gasp.close()
        assert time.monotonic() - started < 1.0
        assert child.poll() is None
    finally:
        child.kill()
        child.wait()
    assert capture.processes[0].stack == []


THREADED = """
import threading

def fill_cache():
    sum(range(10**12))  # busy, as an allocating worker is

worker = threading.Thread(target=fill_cache)
worker.start()
worker.join()
"""


def test_a_main_thread_that_only_waits_is_said_to_wait(tmp_path: Path) -> None:
    # Only the main thread is asked (a worker may be ending as it answers): the words say the
    # main thread waited and another thread allocated, never the wait as the allocating line.
    capture = _capture_once(tmp_path, THREADED, settle_s=0.2)
    site = allocation_point([capture])
    assert site is not None and site["waiting"].startswith(("wait", "join", "_wait_for"))
    words = allocation_words(site)
    assert "waited in `" in words and "another of its threads was allocating" in words


CHURN = """
import threading

def short():
    sum(range(1000))

while True:  # threads start and end all the time, as a model loader's pool does
    workers = [threading.Thread(target=short) for _ in range(8)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
"""


def test_capturing_a_process_whose_threads_come_and_go_never_crashes_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Dumping every thread from one (faulthandler's all_threads) read the frames of threads
    # being torn down and crashed a real run with SIGSEGV; each thread now dumps its own.
    monkeypatch.setattr(last_gasp, "MIN_INTERVAL_S", 0.0)
    child = _child(tmp_path, CHURN)
    try:
        gasp = LastGasp(tmp_path, lambda: [child.pid], limit_bytes=100)
        for _ in range(40):
            gasp.observe(99)
            gasp.observe(10)  # falls back: armed again
        captures = gasp.close()
        assert child.poll() is None, "the capture killed the process"
    finally:
        child.kill()
        child.wait()
    assert gasp.taken == 40 and len(captures) == last_gasp.KEEP
    assert any(p.stack for c in captures for p in c.processes)


def test_captures_are_bounded_and_only_on_the_way_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gasp = LastGasp(tmp_path, lambda: [], limit_bytes=1000)
    for usage in (100, 900, 960, 970, 500, 960):
        gasp.observe(usage)
    # Once per threshold per climb; the second climb comes within MIN_INTERVAL_S of the first.
    assert [c.usage_bytes for c in gasp.close()] == [900, 960]
    monkeypatch.setattr(last_gasp, "MIN_INTERVAL_S", 0.0)
    gasp = LastGasp(tmp_path, lambda: [], limit_bytes=1000)
    for usage in (900, 960, 890, 990, 920, 700, 860, 951, 820, 960):
        gasp.observe(usage)
    # A threshold is armed again 3% of the cap under it (95% under 92%, 85% under 82%): the
    # later climbs are captured, the last KEEP kept.
    assert [c.usage_bytes for c in gasp.close()] == [990, 860, 951, 960]
    assert gasp.taken == 6


def test_parse_dump_reads_a_real_faulthandler_dump(tmp_path: Path) -> None:
    out = tmp_path / "dump.txt"
    code = (
        "import faulthandler, signal, threading, time, sys\n"
        f"f = open({str(out)!r}, 'w')\n"
        "faulthandler.register(signal.SIGUSR1, file=f, all_threads=True)\n"
        "threading.Thread(target=time.sleep, args=(5,), daemon=True).start()\n"
        "def inner():\n"
        "    signal.raise_signal(signal.SIGUSR1)\n"
        "inner()\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=30)
    frames, allocator = parse_dump(out.read_text())
    assert [f.function for f in frames[:2]] == ["inner", "<module>"] and frames[0].line == 6
    assert allocator == {}


def test_a_gpu_holders_allocator_line_is_waited_for_after_its_stack(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """faulthandler's stack comes at once; the allocator line comes from a Python handler when
    the allocation in progress returns (seen on an H200: too late for the stack's wait). For a
    process holding a GPU device file open the line is waited for, bounded."""
    import threading

    with open("/dev/zero", "rb") as device:
        monkeypatch.setattr(last_gasp, "GPU_DEVICE_FILES", ("/dev/zero",))
        assert last_gasp.holds_gpu(os.getpid())
        assert not last_gasp.holds_gpu(2**22 + 7)  # no such process
        device.close()
        assert not last_gasp.holds_gpu(os.getpid())

    stacks = tmp_path / contract.STACKS
    stacks.write_bytes(b"earlier capture\n")
    start = stacks.stat().st_size
    line = contract.TORCH_STATE + json.dumps(
        {"pid": 4242, "cuda": {"allocated_bytes.all.current": 536870912}}
    )

    def late_handler() -> None:
        time.sleep(0.01)
        with stacks.open("a") as out:
            out.write(f'{contract.TORCH_STATE}{{"pid": 17, "cuda": {{}}}}\n{line}\n')

    gasp = last_gasp.LastGasp(tmp_path, lambda: [], 1 << 30)
    writer = threading.Thread(target=late_handler)
    writer.start()
    found = gasp._allocator_line(stacks, start, 4242)
    writer.join()
    assert found == {"allocated_bytes.all.current": 536870912}
    began = time.monotonic()
    assert gasp._allocator_line(stacks, start, 99) == {}
    assert time.monotonic() - began < last_gasp.ALLOCATOR_WAIT_S + 0.5  # bounded


def test_a_capture_that_found_the_process_asleep_by_choice_does_not_name_the_line() -> None:
    """Seen in a container: the 99% capture came when the test had gone on to its
    ``time.sleep`` after the allocation that crossed (state S, wchan hrtimer_nanosleep), and the
    line named was the sleep's caller. The last capture that found the process running, or
    waiting for memory, shows the allocating line."""
    grow = [
        Frame("/r/engine_core.py", 8, "grow_kv_cache"),
        Frame("/r/test_engine.py", 12, "test_decode"),
    ]
    slept = [Frame("/r/test_engine.py", 13, "test_decode")]

    def capture(at: float, state: str, wchan: str, stack: list[Frame]) -> LastGaspRecord:
        process = GaspProcess(pid=7, name="python", state=state, rss_bytes=200 << 20,
                              wchan=wchan, stack=stack)  # fmt: skip
        return LastGaspRecord(at_s=at, usage_bytes=190 << 20, limit_bytes=200 << 20,
                              processes=[process])  # fmt: skip

    running = capture(0.95, "R (running)", "hrtimer_nanosleep", grow)
    asleep = capture(0.99, "S (sleeping)", "hrtimer_nanosleep", slept)
    site = allocation_point([running, asleep])
    assert site is not None and (site["function"], site["at_s"]) == ("grow_kv_cache", 0.95)
    charged = capture(0.99, "S (sleeping)", "mem_cgroup_oom_synchronize", grow)
    assert allocation_point([asleep, charged])["at_s"] == 0.99  # type: ignore[index]
    only_asleep = allocation_point([asleep])  # nothing better: the last one still answers
    assert only_asleep is not None and only_asleep["function"] == "test_decode"
