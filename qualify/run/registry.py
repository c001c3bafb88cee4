"""Runs in progress on this machine, so that the next run can clean up after a dead one.

Each run writes ``<run-id>.json`` (its run directory and its cgroups) into the registry
directory and holds an exclusive ``flock`` on it for as long as qualify lives. The kernel drops
the lock when the process dies, however it dies: an entry whose lock can be taken belongs to a
qualify that is gone. The next ``qualify run`` takes such entries over: it kills what is left
in their cgroups (the watchdog normally did), removes the cgroups, and hands the run directory
back to be completed.

A run registers, and starts its watchdog (``guard_run``), before it creates anything (its run
directory, its cgroups), and releases the entry only once its final reports are durable: there
is no moment at which a killed qualify leaves something no entry names.

The directory is ``$QUALIFY_REGISTRY`` when set (runs that share one take each other over:
a test suite keeps its own), else ``/run/qualify`` (root: a tmpfs, emptied at boot), else
``$XDG_RUNTIME_DIR/qualify``, else ``<tmp>/qualify-<uid>``.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from qualify import records
from qualify.records import frozen_record
from qualify.run.children import Watchdog
from qualify.sandbox.cgroup.common import kill_until_empty, remove_dir

ENV_REGISTRY = "QUALIFY_REGISTRY"


def registry_dir() -> Path:
    """Where this user's runs are registered (created on first use)."""
    if os.environ.get(ENV_REGISTRY):
        base = Path(os.environ[ENV_REGISTRY])
    elif os.geteuid() == 0:
        base = Path("/run/qualify")
    elif os.environ.get("XDG_RUNTIME_DIR"):
        base = Path(os.environ["XDG_RUNTIME_DIR"]) / "qualify"
    else:
        base = Path(tempfile.gettempdir()) / f"qualify-{os.geteuid()}"
    base.mkdir(mode=0o700, parents=True, exist_ok=True)
    return base


@frozen_record
class Entry:
    """A registered run."""

    run_id: str
    run_dir: Path
    cgroups: tuple[Path, ...]
    pid: int


class Registration:
    """This process's entry, locked until ``release``."""

    def __init__(self, directory: Path, entry: Entry):
        self.path = directory / f"{entry.run_id}.json"
        # Locked and written under a name takers do not look at, then renamed into place: a
        # taker never sees an entry that is not locked yet.
        staging = directory / f".{entry.run_id}.json.tmp"
        self._fd = os.open(staging, os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
        fcntl.flock(self._fd, fcntl.LOCK_EX)
        document = {
            "run_id": entry.run_id,
            "run_dir": str(entry.run_dir),
            "cgroups": [str(path) for path in entry.cgroups],
            "pid": entry.pid,
        }
        os.write(self._fd, json.dumps(document).encode())
        os.rename(staging, self.path)

    def release(self) -> None:
        """The run ended normally: remove the entry, then drop the lock."""
        if self._fd < 0:
            return
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()
        os.close(self._fd)
        self._fd = -1


def register(run_id: str, run_dir: Path, cgroups: Sequence[Path]) -> Registration | None:
    """Register this run; None when there is nowhere to (the run goes on unregistered)."""
    try:
        return Registration(registry_dir(), Entry(run_id, run_dir, tuple(cgroups), os.getpid()))
    except OSError:
        return None


@records.record
class RunGuard:
    """What makes a run recoverable if its qualify dies: the registry entry (None when there
    is nowhere to register) and the watchdog of its cgroups (None when it has none)."""

    registration: Registration | None
    watchdog: Watchdog | None

    def release(self) -> None:
        """The run's reports are final and durable: let both go (each only once)."""
        if self.watchdog is not None:
            self.watchdog.release()
        if self.registration is not None:
            self.registration.release()


def guard_run(run_id: str, run_dir: Path, cgroups: Sequence[Path]) -> RunGuard:
    """Register the run and start its watchdog, before the run directory and the cgroups
    exist: a qualify killed at any later moment leaves an entry that names both."""
    registration = register(run_id, run_dir, cgroups)
    return RunGuard(registration, Watchdog(cgroups) if cgroups else None)


def _entry(document: Any) -> Entry | None:
    try:
        return Entry(
            run_id=str(document["run_id"]),
            run_dir=Path(document["run_dir"]),
            cgroups=tuple(Path(path) for path in document["cgroups"]),
            pid=int(document["pid"]),
        )
    except (KeyError, TypeError, ValueError):
        return None


@records.record
class Abandoned:
    """A run whose qualify died, taken over and cleaned up. Its entry stays locked by the taker
    until ``release``: a taker killed while completing the run's reports leaves the entry to
    the next one."""

    entry: Entry
    problems: tuple[str, ...]
    path: Path | None = None
    lock_fd: int = -1

    def release(self) -> None:
        """The run's reports are completed: remove its entry, then drop the lock."""
        if self.lock_fd < 0:
            return
        if self.path is not None:
            with contextlib.suppress(FileNotFoundError):
                self.path.unlink()
        os.close(self.lock_fd)
        self.lock_fd = -1


def _lock_dead(path: Path) -> int | None:
    """A descriptor holding the lock of the entry at ``path``; None when its qualify is alive,
    or the entry was released (renamed away, removed) meanwhile."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        if os.stat(path).st_ino == os.fstat(fd).st_ino:
            return fd
    except FileNotFoundError:
        pass
    except OSError as exc:
        if exc.errno not in (errno.EAGAIN, errno.EACCES):  # EAGAIN: its qualify is alive
            os.close(fd)
            raise
    os.close(fd)
    return None


def _take_over(path: Path) -> Abandoned | None:
    fd = _lock_dead(path)
    if fd is None:
        return None
    try:
        entry = _entry(json.loads(os.pread(fd, 1 << 20, 0) or b"{}"))
    except (ValueError, RecursionError):
        entry = None
    if entry is None:  # not an entry qualify wrote: nothing to take over
        path.unlink()
        os.close(fd)
        return None
    problems = kill_until_empty(list(entry.cgroups))
    for directory in entry.cgroups:
        problems += remove_dir(directory)
    return Abandoned(entry, tuple(problems), path, fd)


def _remove_dead_staging(directory: Path) -> None:
    """Entries a qualify was killed while writing (before they were renamed into place, so
    they name nothing it had created yet): removed once nobody holds their lock. An empty one
    is left alone: its qualify may have created it and not locked it yet."""
    for path in directory.glob(".*.json.tmp"):
        with contextlib.suppress(OSError):
            fd = os.open(path, os.O_RDWR | os.O_CLOEXEC)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                if os.fstat(fd).st_size > 0:
                    path.unlink()
            finally:
                os.close(fd)


def take_over_dead_runs() -> list[Abandoned]:
    """Every registered run whose qualify is gone, its processes killed and cgroups removed;
    each entry stays locked until its ``release``."""
    try:
        directory = registry_dir()
    except OSError:
        return []
    _remove_dead_staging(directory)
    found = []
    for path in sorted(directory.glob("*.json")):
        with contextlib.suppress(OSError):
            abandoned = _take_over(path)
            if abandoned is not None:
                found.append(abandoned)
    return found
