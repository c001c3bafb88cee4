"""What the v1 and v2 cgroup backends share: file writes, the kill loop, removal."""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import time
from collections.abc import Callable
from pathlib import Path

from qualify.errors import SandboxError
from qualify.sandbox.cgroup.fs import parse_procs, read_bytes

ENTER_SHIM = Path(__file__).with_name("enter.py")


def write_file(path: Path, value: str) -> None:
    """Write a cgroup control file; the kernel's errno becomes a SandboxError naming the file."""
    try:
        with path.open("w", encoding="ascii") as handle:
            handle.write(value)
    except OSError as exc:
        raise SandboxError(f"cannot write {value!r} to {path.name}: {exc.strerror}") from exc


def procs_of(directories: list[Path]) -> list[int]:
    """Every pid in the given cgroups (missing directories count as empty)."""
    pids: set[int] = set()
    for directory in directories:
        with contextlib.suppress(FileNotFoundError):
            pids.update(parse_procs(read_bytes(directory / "cgroup.procs")))
    return sorted(pids)


def signal_all(directories: list[Path], signal_number: int) -> int:
    """Send ``signal_number`` to every process of the cgroups; returns how many got it."""
    sent = 0
    for pid in procs_of(directories):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal_number)
            sent += 1
    return sent


def kill_until_empty(
    directories: list[Path], kill_file: Path | None = None, timeout_s: float = 10.0
) -> list[str]:
    """SIGKILL everything in the cgroups until they are empty (a forking process races us)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if not procs_of(directories):
            return []
        if kill_file is not None and kill_file.exists():
            # cgroup.kill (Linux 5.14) kills the whole subtree atomically, forks included.
            with contextlib.suppress(OSError):
                write_file(kill_file, "1")
        signal_all(directories, signal.SIGKILL)
        time.sleep(0.02)
    left = procs_of(directories)
    return [f"processes still in the run's cgroup after {timeout_s:.0f}s: {left}"] if left else []


def remove_dir(directory: Path, reap: Callable[[], None] | None = None) -> list[str]:
    """rmdir a cgroup, retrying while the kernel still sees exiting tasks (EBUSY)."""
    for _ in range(100):
        try:
            directory.rmdir()
            return []
        except FileNotFoundError:
            return []
        except OSError as exc:
            if exc.errno != errno.EBUSY:
                return [f"cannot remove cgroup {directory.name}: {exc.strerror}"]
        if reap is not None:
            reap()
        time.sleep(0.05)
    return [f"cannot remove cgroup {directory.name}: still busy"]


def reclaim_orphans(parent: Path, prefix: str = "qualify-", min_age_s: float = 60.0) -> list[str]:
    """Remove empty cgroups that a killed earlier qualify left behind; returns their names.

    Only cgroups older than ``min_age_s`` are touched, so a concurrent run that has created its
    cgroup but not yet started its child keeps it.
    """
    removed = []
    now = time.time()
    with contextlib.suppress(FileNotFoundError):
        for child in parent.iterdir():
            if not (child.is_dir() and child.name.startswith(prefix)):
                continue
            if child.name == "qualify-supervisor":
                continue
            with contextlib.suppress(FileNotFoundError):
                if now - child.stat().st_mtime < min_age_s or procs_of([child]):
                    continue
                if not remove_dir(child):
                    removed.append(child.name)
    return removed
