"""qualify's own children during a run: the watchdog, and the orphans of the E2E it adopts.

As child subreaper (``prctl(PR_SET_CHILD_SUBREAPER)``, Linux 3.4) qualify inherits every
process the E2E orphans, double-forked daemons included, instead of init: they stay in view
(``qualify.run.processes``) and are reaped here, by pid, at the end of the run. Only pids
known to be adopted are reaped: a ``waitpid(-1)`` would also take the E2E's own exit status
away from its ``Popen``.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import subprocess
from collections.abc import Iterable, Sequence
from pathlib import Path

PR_SET_CHILD_SUBREAPER = 36
WATCHDOG = Path(__file__).with_name("watchdog.sh")


def set_subreaper(enabled: bool) -> bool:
    """Make this process the subreaper of its descendants (or stop being one); False when
    the kernel refuses."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(PR_SET_CHILD_SUBREAPER, int(enabled), 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def reap(pids: Iterable[int]) -> None:
    """Collect the exit status of adopted children that ended (never blocks)."""
    for pid in pids:
        with contextlib.suppress(ChildProcessError, OSError):
            os.waitpid(pid, os.WNOHANG)


class Watchdog:
    """A process outside the run's cgroups that empties them if qualify dies."""

    def __init__(self, directories: Sequence[Path]):
        read_end, self._write_end = os.pipe()
        try:
            self.process = subprocess.Popen(
                ["/bin/sh", str(WATCHDOG), *map(str, directories)],
                stdin=read_end,  # end-of-file when qualify is gone
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,  # a signal to qualify's process group is not its own
            )
        finally:
            os.close(read_end)

    @property
    def pid(self) -> int:
        """The watchdog's pid."""
        return self.process.pid

    def release(self) -> None:
        """The run is over: let the watchdog go (it finds the cgroups empty) and reap it."""
        if self._write_end >= 0:
            os.close(self._write_end)
            self._write_end = -1
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=2)
