"""qualify SIGKILLed at its worst moments, and the next run taking the dead one over.

Each kill is triggered by what qualify itself does, never by a delay: the run's cgroup
appearing, the provisional JUnit file appearing (both seen through inotify the moment the
kernel creates them), and the final JUnit file renamed into place while the final audit is
still staged (a window of microseconds: reached with the test-only pause
``QUALIFY_TEST_PAUSE_AT``, ``qualify.rundir.pause``). After each kill a second ``qualify run``
of another family takes the dead run over at once (no 60 s wait): nothing of the dead run is
left (no process, no cgroup, no registry entry), its JUnit file and its audit are final and
agree, its report page is written, the takeover line names it and says why it is dead, and
its audit records who completed it.
"""

from __future__ import annotations

import calendar
import ctypes
import json
import os
import select
import signal
import socket
import struct
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from lxml import etree

from qualify.evidence.junit import junit_properties
from qualify.run.registry import ENV_REGISTRY
from qualify.rundir.pause import ENV_PAUSE_AT, JUNIT_FINAL, TAKING_OVER
from tests.conftest import git, qualify_argv
from tests.test_faults import SCHEMA, assert_nothing_left, family_repo

pytestmark = [pytest.mark.privileged, pytest.mark.slow]

IN_CREATE = 0x100
IN_MOVED_TO = 0x80
_EVENT = struct.Struct("iIII")  # struct inotify_event: wd, mask, cookie, len; then the name

SLEEPER = """
[e2e]
command = ["python", "-m", "pytest", "test_sleeper.py", "-q", "-p", "no:randomly"]
"""
SLEEPER_TEST = "import time\n\ndef test_sleeps():\n    time.sleep(30)\n"
QUICK = '[e2e]\ncommand = ["python", "-m", "pytest", "test_quick.py", "-q"]\n'
QUICK_TEST = "def test_ok():\n    pass\n"


class Inotify:
    """inotify(7) through libc: the names created in watched directories, as they appear."""

    def __init__(self) -> None:
        self._libc = ctypes.CDLL(None, use_errno=True)
        self.fd = self._libc.inotify_init1(os.O_CLOEXEC)
        assert self.fd >= 0, os.strerror(ctypes.get_errno())
        self.watched: dict[int, Path] = {}
        self._pending: list[tuple[Path, str]] = []

    def add(self, directory: Path, mask: int = IN_CREATE | IN_MOVED_TO) -> None:
        wd = self._libc.inotify_add_watch(self.fd, os.fsencode(directory), mask)
        assert wd >= 0, f"{directory}: {os.strerror(ctypes.get_errno())}"
        self.watched[wd] = directory

    def _read(self, timeout_s: float) -> None:
        ready, _, _ = select.select([self.fd], [], [], timeout_s)
        assert ready, f"nothing appeared within {timeout_s}s"
        data = os.read(self.fd, 1 << 16)
        offset = 0
        while offset < len(data):
            wd, _mask, _cookie, length = _EVENT.unpack_from(data, offset)
            name = data[offset + _EVENT.size : offset + _EVENT.size + length].rstrip(b"\0")
            offset += _EVENT.size + length
            if wd in self.watched:
                self._pending.append((self.watched[wd], name.decode()))

    def wait(self, wanted: Callable[[Path, str], bool], timeout_s: float = 120) -> Path:
        """The first path created in a watched directory that ``wanted`` accepts."""
        while True:
            while self._pending:
                directory, name = self._pending.pop(0)
                if wanted(directory, name):
                    return directory / name
            self._read(timeout_s)

    def close(self) -> None:
        os.close(self.fd)


@pytest.fixture(autouse=True)
def _own_registry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A registry of these tests' own: a concurrent qualify on the machine (another suite's)
    must not take the killed run over before the test's next run does."""
    monkeypatch.setenv(ENV_REGISTRY, str(tmp_path / "registry"))


@pytest.fixture
def inotify() -> Iterator[Inotify]:
    watch = Inotify()
    try:
        yield watch
    finally:
        watch.close()


def _memory_parent() -> Path:
    """The memory cgroup qualify makes the run's under: its caller's own (this process's)."""
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        hierarchy, controllers, path = line.split(":", 2)
        if "memory" in controllers.split(","):
            return Path("/sys/fs/cgroup/memory") / path.lstrip("/")
        if hierarchy == "0" and Path("/sys/fs/cgroup/cgroup.controllers").exists():
            return Path("/sys/fs/cgroup") / path.lstrip("/")
    raise AssertionError("no memory cgroup")


def _sleeper_run(tmp_path: Path) -> tuple[list[str], Path]:
    """argv of a run of the sleeper family, and the directory its run directory appears in
    (created here, so that the test can watch it before qualify starts)."""
    repo = family_repo(tmp_path / "repo", "sleeper", SLEEPER, {"test_sleeper.py": SLEEPER_TEST})
    profile_dir = tmp_path / "reports" / git(repo, "rev-parse", "HEAD") / "sleeper" / "custom"
    profile_dir.mkdir(parents=True)
    argv = qualify_argv("run", "--family", "sleeper", "--repo", str(repo), "--mem", "256M")
    return argv, profile_dir


def _spawn(argv: list[str], cwd: Path, **environ: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        argv,
        cwd=cwd,
        env={**os.environ, **environ},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        text=True,
    )


def _next_run(tmp_path: Path) -> tuple[subprocess.CompletedProcess[str], int, Path]:
    """A run of another, quick family on the machine: (its result, its pid, its run dir)."""
    repo = family_repo(tmp_path / "other", "quick", QUICK, {"test_quick.py": QUICK_TEST})
    argv = qualify_argv("run", "--family", "quick", "--repo", str(repo), "--mem", "256M")
    process = subprocess.Popen(
        argv, cwd=tmp_path, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    stdout, stderr = process.communicate(timeout=300)
    completed = subprocess.CompletedProcess(argv, process.returncode, stdout, stderr)
    assert completed.returncode == 0, stdout + stderr
    return completed, process.pid, tmp_path / stdout.strip().splitlines()[-1]


def _taken_over(tmp_path: Path, run_dir: Path, dead_pid: int, done: str) -> dict[str, Any]:
    """The next run takes ``run_dir`` over; what every takeover leaves checked; returns the
    dead run's audit."""
    completed, next_pid, next_run_dir = _next_run(tmp_path)
    line = (
        f"qualify run: took over the dead run {run_dir.relative_to(tmp_path)}: no process holds "
        f"its registry lock (its qualify, pid {dead_pid}, is gone); {done}; report.html written"
    )
    assert line in completed.stderr, completed.stderr
    assert_nothing_left(run_dir.name)
    audit = json.loads((run_dir / "audit.json").read_text())
    junit = etree.parse(str(run_dir / "junit.xml"))
    SCHEMA.assertValid(junit)
    properties = junit_properties(run_dir / "junit.xml") or {}
    assert (properties.get("qualify.verdict"), properties.get("qualify.reason")) == (
        audit["verdict"],
        audit["reason"],
    )
    assert audit["run_id"] == run_dir.name
    # When it started, even where its qualify died before its provisional audit (from the
    # run id): a scheduler's record of the task that ran it is matched by this time.
    named = calendar.timegm(time.strptime(run_dir.name.partition("-")[0], "%Y%m%dT%H%M%SZ"))
    started = calendar.timegm(time.strptime(audit["timings"]["started"][:19], "%Y-%m-%dT%H:%M:%S"))
    assert 0 <= started - named <= 2, (audit["timings"], run_dir.name)
    completed_by = audit["completed_by"]
    assert (completed_by["host"], completed_by["pid"], completed_by["by_run"]) == (
        socket.gethostname(),
        next_pid,
        next_run_dir.name,
    )
    assert completed_by["dead_pid"] == dead_pid and completed_by["time"].endswith("Z")
    assert (run_dir / "report.html").is_file()
    assert sorted(path.name for path in run_dir.glob(".*.staged")) == []
    # The next run's own reports are its own: nobody completed them.
    assert json.loads((next_run_dir / "audit.json").read_text())["completed_by"] is None
    return audit


FROM_EVENTS = "its reports completed from its events (verdict ERROR)"


def test_killed_as_its_cgroup_appears(tmp_path: Path, inotify: Inotify) -> None:
    argv, profile_dir = _sleeper_run(tmp_path)
    parent = _memory_parent()
    inotify.add(profile_dir, IN_CREATE)
    inotify.add(parent, IN_CREATE)
    qualify = _spawn(argv, tmp_path)
    try:
        run_dir = inotify.wait(lambda directory, _: directory == profile_dir)
        name = f"qualify-{run_dir.name}"
        inotify.wait(lambda directory, created: directory == parent and created == name)
        os.kill(qualify.pid, signal.SIGKILL)
    finally:
        qualify.kill()
        qualify.wait()
    audit = _taken_over(tmp_path, run_dir, qualify.pid, FROM_EVENTS)
    assert audit["verdict"] == "ERROR"
    assert audit["reason"].startswith("qualify was killed")


def _killed_at_provisional_junit(tmp_path: Path, inotify: Inotify) -> tuple[Path, int]:
    """A sleeper run SIGKILLed as its provisional JUnit file appears: (its run dir, its pid)."""
    argv, profile_dir = _sleeper_run(tmp_path)
    inotify.add(profile_dir, IN_CREATE)
    qualify = _spawn(argv, tmp_path)
    try:
        run_dir = inotify.wait(lambda directory, _: directory == profile_dir)
        inotify.add(run_dir, IN_MOVED_TO)
        if not (run_dir / "junit.xml").exists():  # written before the watch was added
            inotify.wait(lambda directory, created: created == "junit.xml")
        os.kill(qualify.pid, signal.SIGKILL)
    finally:
        qualify.kill()
        qualify.wait()
    return run_dir, qualify.pid


def test_killed_as_its_provisional_junit_appears(tmp_path: Path, inotify: Inotify) -> None:
    run_dir, pid = _killed_at_provisional_junit(tmp_path, inotify)
    audit = _taken_over(tmp_path, run_dir, pid, FROM_EVENTS)
    assert audit["verdict"] == "ERROR"
    assert audit["reason"].startswith("qualify was killed")


def test_a_taker_killed_while_completing_leaves_the_run_to_the_next(
    tmp_path: Path, inotify: Inotify
) -> None:
    run_dir, pid = _killed_at_provisional_junit(tmp_path, inotify)
    argv, _ = _sleeper_run(tmp_path / "taker")
    taker = _spawn(argv, tmp_path / "taker", **{ENV_PAUSE_AT: TAKING_OVER})
    try:
        _, status = os.waitpid(taker.pid, os.WUNTRACED)
        assert os.WIFSTOPPED(status), f"the taker ended ({status}) before the pause"
        assert (
            not (run_dir / "audit.json").exists()
            or "did not finish" in (run_dir / "audit.json").read_text()
        )
        os.kill(taker.pid, signal.SIGKILL)
    finally:
        taker.kill()
        taker.wait()
    assert list((tmp_path / "taker").glob("reports/*/*/*/*/")) == []  # it had not begun its own
    audit = _taken_over(tmp_path, run_dir, pid, FROM_EVENTS)
    assert audit["verdict"] == "ERROR"


@pytest.mark.parametrize("staged_audit", ["kept", "lost"])
def test_killed_between_its_final_junit_and_its_final_audit(
    tmp_path: Path, staged_audit: str
) -> None:
    """``lost``: the directory as a qualify that wrote no staged audit leaves it (the final
    JUnit file beside the provisional audit): the audit is completed from the JUnit file."""
    repo = family_repo(tmp_path / "repo", "passes", QUICK, {"test_quick.py": QUICK_TEST})
    argv = qualify_argv("run", "--family", "passes", "--repo", str(repo), "--mem", "256M")
    qualify = _spawn(argv, tmp_path, **{ENV_PAUSE_AT: JUNIT_FINAL})
    try:
        _, status = os.waitpid(qualify.pid, os.WUNTRACED)
        assert os.WIFSTOPPED(status), f"qualify ended ({status}) before the pause"
        (run_dir,) = tmp_path.glob("reports/*/passes/*/*/")
        # Stopped exactly in the window: the final JUnit in place, the audit provisional.
        assert (junit_properties(run_dir / "junit.xml") or {})["qualify.verdict"] == "PASSED"
        assert json.loads((run_dir / "audit.json").read_text())["reason"].startswith(
            "qualify did not finish"
        )
        if staged_audit == "lost":
            (run_dir / ".audit.json.staged").unlink()
        os.kill(qualify.pid, signal.SIGKILL)
    finally:
        qualify.kill()
        qualify.wait()
    done = {
        "kept": "the commit of its final reports finished",
        "lost": "its audit completed from its final JUnit file",
    }[staged_audit]
    audit = _taken_over(tmp_path, run_dir, qualify.pid, done)
    assert audit["verdict"] == "PASSED"
    assert audit["tests"]["passed"] == 1 and audit["tests"]["collected"] == 1
    if staged_audit == "kept":  # exactly what the dead qualify had decided on
        assert audit["memory"]["peak_bytes"] > 0 and audit["problems"] == []
    else:
        assert "completed from that JUnit file" in audit["problems"][-1]
