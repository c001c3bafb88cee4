"""Per-run engine directories next to the checkpoint cache, swept when their run died.

Bundles go to disk next to the cache rather than to the temporary directory: a tmpfs /tmp
would keep the staged plans in memory, charged to the run's cgroup. A run killed mid-build
(the OOM this family exists to reproduce) cannot clean up after itself, so each run holds an
flock on its directory and the next run removes directories whose lock nobody holds.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

LOCK = ".lock"


@contextlib.contextmanager
def engine_workspace(parent: Path) -> Iterator[Path]:
    """A fresh directory under ``parent`` for this run's bundles, removed afterwards."""
    parent.mkdir(parents=True, exist_ok=True)
    sweep_abandoned(parent)
    directory = Path(tempfile.mkdtemp(prefix="run-", dir=parent))
    fd = os.open(directory / LOCK, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield directory
    finally:
        shutil.rmtree(directory, ignore_errors=True)
        os.close(fd)


def sweep_abandoned(parent: Path) -> list[Path]:
    """Remove run directories whose owner is gone (their lock is free); return them."""
    removed = []
    for directory in sorted(parent.glob("run-*")):
        try:
            fd = os.open(directory / LOCK, os.O_RDWR | os.O_CLOEXEC)
        except FileNotFoundError:
            # Between mkdtemp and the lock of a starting run: leave it to that run.
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        shutil.rmtree(directory, ignore_errors=True)
        os.close(fd)
        removed.append(directory)
    return removed
