"""The run's watchdog: kills the E2E when qualify dies.

Run as ``python -I -S watchdog.py FD CGROUP_DIR...`` by qualify, outside the run's cgroup, with
the read end ``FD`` of a pipe whose write end only qualify holds. A read returns end-of-file
when qualify closes it (the run is over) or when the kernel closes it because qualify died,
SIGKILL included; then every process left in the run's cgroups is killed (``cgroup.kill``
where the kernel has it, a SIGKILL loop otherwise). Standard library only and tiny: it starts
in a few milliseconds and sits in one blocking read the whole run.

Then it removes the cgroups: qualify does that itself, but when it has written its reports
and exits while the kernel is still tearing down thousands of killed processes (a fork storm),
the watchdog finishes the job.
"""

import contextlib
import os
import signal
import sys
import time

TIMEOUT_S = 10.0


def _procs(directory: str) -> list[int]:
    try:
        with open(os.path.join(directory, "cgroup.procs"), encoding="ascii") as handle:
            return [int(line) for line in handle.read().split()]
    except OSError:
        return []


def kill_cgroups(directories: list[str]) -> None:
    """SIGKILL everything in ``directories`` until they are empty (or ``TIMEOUT_S``)."""
    deadline = time.monotonic() + TIMEOUT_S
    while time.monotonic() < deadline:
        pids = {pid for directory in directories for pid in _procs(directory)}
        if not pids:
            return
        for directory in directories:
            with (
                contextlib.suppress(OSError),
                open(os.path.join(directory, "cgroup.kill"), "w", encoding="ascii") as kill,
            ):
                kill.write("1")
        for pid in pids:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.01)


def remove_cgroups(directories: list[str]) -> None:
    """rmdir each cgroup, retrying while the kernel still sees exiting tasks (EBUSY)."""
    deadline = time.monotonic() + TIMEOUT_S
    left = list(directories)
    while left and time.monotonic() < deadline:
        for directory in list(left):
            try:
                os.rmdir(directory)
            except FileNotFoundError:
                pass
            except OSError:
                continue
            left.remove(directory)
        if left:
            time.sleep(0.02)


def main(arguments: list[str]) -> int:
    """Wait for end-of-file on the pipe, then empty the cgroups."""
    fd, directories = int(arguments[0]), arguments[1:]
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C to qualify's group is qualify's
    while True:
        try:
            if not os.read(fd, 1):
                break
        except InterruptedError:
            continue
        except OSError:
            break
    kill_cgroups(directories)
    remove_cgroups(directories)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
