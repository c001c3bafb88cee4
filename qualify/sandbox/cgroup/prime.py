"""The kernel's cgroup migration, made ready while qualify starts.

Moving a process into a cgroup (the launch shim writing its pid to ``cgroup.procs``) takes the
kernel's threadgroup lock for writing. The first time after a pause, taking it waits for an
RCU grace period (``rcu_sync_enter``): 8 to 20 ms on the 2-core test machine, spent between
the E2E's spawn and its first instruction. Taken again less than a grace period after its last
release, it does not wait. So from the command line on, a thread of qualify moves qualify into
the cgroup it is already in (nothing changes: the write takes and releases the lock) every
2 ms until the run's cgroups are about to be made (``stop``): the first wait then falls beside
qualify's own start-up, and the shim's moves follow within the window.

Nothing here is needed: any failure (no cgroup, a read-only or foreign one, no permission)
ends the thread at once, and a run that never reaches its cgroups stops it after ``LIFETIME_S``.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

INTERVAL_S = 0.002
LIFETIME_S = 2.0

_stop = threading.Event()
_thread: list[threading.Thread] = []


def start_here() -> None:
    """``start`` with this process's own memory cgroup, when there is one it may write."""
    from qualify.sandbox.cgroup.layout import current_layout

    try:
        layout = current_layout()
    except OSError:
        return
    if layout.memory_dir is not None and not layout.read_only:
        start(layout.memory_dir)


def start(own_cgroup: Path) -> None:
    """Keep the migration path ready, moving this process into ``own_cgroup`` (the directory
    of the cgroup it is in) until ``stop``; a call while a thread still runs does nothing."""
    if any(thread.is_alive() for thread in _thread):
        return
    _thread.clear()
    _stop.clear()
    thread = threading.Thread(
        target=_work, args=(own_cgroup / "cgroup.procs",), name="qualify-prime", daemon=True
    )
    _thread.append(thread)
    thread.start()


def stop() -> None:
    """No more moves (before the run's cgroups are made: one of the backends moves qualify
    into a leaf of its own); waits for the thread's last write to end."""
    _stop.set()
    while _thread:
        _thread.pop().join()


def _work(procs: Path) -> None:
    pid = str(os.getpid()).encode()
    deadline = time.monotonic() + LIFETIME_S
    try:
        fd = os.open(procs, os.O_WRONLY)
    except OSError:
        return
    try:
        while not _stop.is_set() and time.monotonic() < deadline:
            os.write(fd, pid)
            _stop.wait(INTERVAL_S)
    except OSError:
        return
    finally:
        os.close(fd)
