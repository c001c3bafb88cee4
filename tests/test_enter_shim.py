"""The launch shim (``sh -c``): joins every cgroup it is given, then becomes the E2E."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from qualify.sandbox.cgroup.common import enter_argv

# The E2E (a shell, which keeps the dispositions it inherits: a Python E2E would ignore SIGPIPE
# itself) reports its pid and the signals it started with ignored (SigIgn, a hex mask).
REPORT = 'echo $$ $(sed -n "s/^SigIgn:[[:space:]]*//p" /proc/$$/status)'
SIGPIPE_BIT = 1 << (13 - 1)


def test_the_shim_writes_the_pid_of_the_process_that_becomes_the_e2e(tmp_path: Path) -> None:
    procs = [tmp_path / "memory.procs", tmp_path / "pids.procs"]
    done = subprocess.run(
        enter_argv(procs, ["/bin/sh", "-c", REPORT]),
        capture_output=True,
        text=True,
        check=True,
    )
    pid, ignored = done.stdout.split()
    assert [path.read_text().strip() for path in procs] == [pid, pid]
    # A Python shim ignored SIGPIPE at its start-up and the E2E inherited that through exec.
    assert int(ignored, 16) & SIGPIPE_BIT == 0


def test_the_argv_after_the_separator_reaches_the_e2e_unchanged(tmp_path: Path) -> None:
    argv = [sys.executable, "-c", "import sys; print(sys.argv[1:])", "--", "a b", "$HOME", "*"]
    done = subprocess.run(
        enter_argv([tmp_path / "procs"], argv), capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "['--', 'a b', '$HOME', '*']"


def test_a_cgroup_that_cannot_be_joined_stops_the_start_with_126(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    done = subprocess.run(
        enter_argv([tmp_path / "no-such-dir" / "cgroup.procs"], ["touch", str(marker)]),
        check=False,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 126
    assert "cgroup.procs" in done.stderr and len(done.stderr.splitlines()) == 1
    assert not marker.exists()


def test_a_command_that_cannot_be_executed_exits_127_naming_it(tmp_path: Path) -> None:
    done = subprocess.run(
        enter_argv([tmp_path / "procs"], [str(tmp_path / "gone")]),
        check=False,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 127
    assert str(tmp_path / "gone") in done.stderr and len(done.stderr.splitlines()) == 1
