"""What the v1 and v2 cgroup backends share: file writes, the kill loop, removal."""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from qualify.errors import SandboxError
from qualify.sandbox.base import StopReport
from qualify.sandbox.cgroup.fs import parse_flat_keyed, parse_procs, read_bytes
from qualify.subproc import run_capture

ENTER_SCRIPT = 'for f do shift; [ "$f" = -- ] && break; echo $$ > "$f" || exit 126; done; exec "$@"'
"""The launch shim, run as ``sh -c ENTER_SCRIPT qualify-enter PROCS_FILE... -- ARGV...``: the
shell writes its own pid into every given ``cgroup.procs`` (moving itself into each cgroup),
then becomes the E2E through ``exec``, so the family's very first byte is charged to the cap.
A POSIX shell starts in about a millisecond (a Python shim took ten, and left the E2E with
SIGPIPE ignored, as Python sets it); exit 126 when a cgroup cannot be joined, 127 when the
command cannot be executed, each with the shell's one-line message on stderr."""


def enter_argv(procs_files: list[Path], argv: Sequence[str]) -> list[str]:
    """``argv`` started through the launch shim, which joins ``procs_files`` first."""
    return ["/bin/sh", "-c", ENTER_SCRIPT, "qualify-enter", *map(str, procs_files), "--", *argv]


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


KILLED_LISTED = 50
"""Processes named individually in a stop report; the rest are counted."""


def comm_of(pid: int) -> str:
    """A process's name from /proc/<pid>/comm (the task's own field: no lock on its memory,
    so it never blocks on a process stuck in reclaim, unlike cmdline)."""
    try:
        with open(f"/proc/{pid}/comm", "rb") as handle:
            return handle.read().decode(errors="replace").strip()
    except OSError:
        return "?"


def _wait_frozen(events: Path, timeout_s: float = 1.0) -> bool:
    """Wait until a v2 cgroup's cgroup.events says ``frozen 1``."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError):
            if parse_flat_keyed(read_bytes(events)).get("frozen") == 1:
                return True
        time.sleep(0.005)
    return False


def stop_cgroups(
    directories: list[Path],
    *,
    freeze: tuple[Path, str, str] | None,
    kill_file: Path | None = None,
    group: int | None = None,
) -> StopReport:
    """Send every process in the cgroups SIGKILL, without waiting for the kernel to tear them
    down (``kill_until_empty`` does, at teardown).

    ``group``: a process group killed first, in one call (the E2E's own session). ``freeze``
    is (state file, frozen value, thawed value): v2's ``cgroup.freeze`` with 1/0, for kernels
    without ``cgroup.kill``, so that nothing forks while the kill goes round. Processes found
    at the start are named in the report (they were still running when the run ended).
    """
    found = procs_of(directories)
    listed = tuple((pid, comm_of(pid)) for pid in found[:KILLED_LISTED])
    problems: list[str] = []
    if freeze is not None and found:
        with contextlib.suppress(SandboxError):
            write_file(freeze[0], freeze[1])
            if not _wait_frozen(freeze[0].with_name("cgroup.events")):
                problems.append(f"the run's cgroup did not freeze within 1s ({freeze[0].name})")
    if group is not None and found:
        with contextlib.suppress(OSError):
            os.killpg(group, signal.SIGKILL)
    if kill_file is not None and kill_file.exists():
        with contextlib.suppress(OSError, SandboxError):
            write_file(kill_file, "1")
    if group is None:
        # With a group, a process outside it (a daemon that left the session) is killed by
        # the teardown's loop a moment later: a kill() per process is slow while the kernel
        # tears thousands down, and the reports should not wait for that.
        for pid in found:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    if freeze is not None and found:
        with contextlib.suppress(SandboxError):
            write_file(freeze[0], freeze[2])
    return StopReport(killed=listed, killed_count=len(found), problems=tuple(problems))


def kill_until_empty(
    directories: list[Path], kill_file: Path | None = None, timeout_s: float = 10.0
) -> list[str]:
    """SIGKILL everything in the cgroups until they are empty (a forking process races us).

    Each process is signalled once: one that got SIGKILL is dying, and the kernel may take a
    while to tear thousands down (a fork storm); sending it again on every pass only costs
    syscalls (``benchmarks/bench_kill_to_report.py`` measures a storm's teardown).
    """
    deadline = time.monotonic() + timeout_s
    signalled: set[int] = set()
    passes = 0
    while time.monotonic() < deadline:
        pids = procs_of(directories)
        if not pids:
            return []
        passes += 1
        if passes % 20 == 0:
            signalled.clear()  # a pid the storm recycled is a new process: signal it too
        if kill_file is not None and kill_file.exists():
            # cgroup.kill (Linux 5.14) kills the whole subtree atomically, forks included.
            with contextlib.suppress(OSError):
                write_file(kill_file, "1")
        for pid in pids:
            if pid not in signalled:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
                signalled.add(pid)
        time.sleep(0.005)
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


SHM = Path("/dev/shm")
SHM_SCRIPT = (
    'mount -t tmpfs -o "size=$1,nosuid,nodev,mode=1777" qualify-shm /dev/shm || exit 126; '
    'shift; exec "$@"'
)
"""Run inside a mount namespace of its own (``unshare --mount --propagation private``): a
tmpfs of its own on /dev/shm, then the E2E through ``exec``. The namespace, and the tmpfs with
it, ends with the run's last process; its pages are charged to the cap of whoever writes them,
the E2E inside the run's cgroup (docker does the same for a container)."""
LOCK_SCRIPT = (
    'mount -t tmpfs -o "size=$1,nosuid,nodev,mode=1777" qualify-shm /dev/shm || exit 126; '
    'shift; set -f; l() { echo "none $5 none remount,bind,ro 0 0"; }; '
    'while read -r m; do case "$m" in *" - cgroup "*|*" - cgroup2 "*) l $m;; esac; done '
    "< /proc/self/mountinfo > /dev/shm/.qualify-lock && mount -a -T /dev/shm/.qualify-lock "
    "&& rm /dev/shm/.qualify-lock || exit 126; "
    'exec setpriv --bounding-set -sys_admin,-sys_ptrace --inh-caps -sys_admin,-sys_ptrace -- "$@"'
)
""":data:`SHM_SCRIPT`, and the limits locked as a container locks them: every cgroup file
system remounted read-only in the namespace (a write to ``memory.limit_in_bytes`` fails with
EROFS, root or not), and CAP_SYS_ADMIN dropped from the E2E's bounding set, so that nothing in
it can remount them writable, unmount them or make a namespace of its own to escape the lock.

The remounts are one ``mount -a`` over a table of them (mount points as ``mountinfo`` escapes
them, which is how a table escapes them), written into the new tmpfs and removed before the
E2E starts: one process where a ``mount`` each took 10 on a cgroup v1 host (about 9 ms
against 21 ms for the whole script, ``unshare`` included)."""
LIMITS_LOCKED = (
    "the E2E cannot change its limits: the cgroup file systems are read-only in its mount "
    "namespace and CAP_SYS_ADMIN is dropped from its bounding set"
)
_SHM_LISTED = 20
_SHM_SCANNED = 10_000


_TRIAL_SIZE = "1M"
"""The tmpfs size a trial mounts: whether the mount can be made does not depend on it."""


class ShmTrial:
    """Whether each of :data:`LOCK_SCRIPT` and :data:`SHM_SCRIPT` can run here, tried once in
    a throwaway namespace (an ``unshare`` and a shell: about 30 ms). ``start`` tries them in a
    thread beside qualify's start-up (``qualify.commands._overlap`` lists it; the variable
    ``QUALIFY_NO_SHM_TRIAL`` switches it off); :class:`PrivateShm` takes what it found, or
    tries in order where nothing was started."""

    _started: ShmTrial | None = None

    def __init__(self) -> None:
        self._done = threading.Event()
        self.results: list[tuple[str, list[str], subprocess.CompletedProcess[bytes] | str]] = []
        """(script, prefix without its size, what running ``true`` through it gave or the
        error that kept it from running), in the order tried; empty when ``unshare`` is
        missing."""

    @classmethod
    def start(cls, environ: Mapping[str, str]) -> None:
        """Begin the trial in a daemon thread (nothing when switched off or already begun)."""
        if environ.get("QUALIFY_NO_SHM_TRIAL") or cls._started is not None:
            return
        trial = cls._started = cls()
        threading.Thread(target=trial.run, name="qualify-shm-trial", daemon=True).start()

    @classmethod
    def take(cls) -> ShmTrial:
        """The trial begun by ``start`` (waited for), else one made now."""
        trial, cls._started = cls._started, None
        if trial is None:
            trial = cls()
            trial.run()
        trial._done.wait()
        return trial

    def run(self) -> None:
        try:
            unshare = shutil.which("unshare")
            if unshare is None:
                return
            base = [unshare, "--mount", "--propagation", "private", "--", "/bin/sh", "-c"]
            scripts = [LOCK_SCRIPT, SHM_SCRIPT] if shutil.which("setpriv") else [SHM_SCRIPT]
            for script in scripts:
                prefix = [*base, script, "qualify-shm"]
                try:
                    tried = run_capture([*prefix, _TRIAL_SIZE, "true"], timeout_s=10)
                except (OSError, subprocess.TimeoutExpired) as exc:
                    self.results.append((script, prefix, str(exc)))
                    continue
                self.results.append((script, prefix, tried))
                if tried.returncode == 0:
                    return
        finally:
            self._done.set()


class PrivateShm:
    """The run's /dev/shm on a cgroup backend: a private tmpfs where a mount namespace can be
    made (root), else the host's, with what the run left there listed after it; in the same
    namespace, the limits locked (:data:`LOCK_SCRIPT`) where ``setpriv`` can drop the
    capability."""

    def __init__(self) -> None:
        self.prefix: list[str] = []
        """What the launch shim runs the E2E through (empty: the host's /dev/shm)."""
        self.locked = False
        """The E2E cannot write its cgroup files (:data:`LOCK_SCRIPT` is in the prefix)."""
        self._before: set[str] | None = None

    def prepare(self, cap_bytes: int | None) -> list[str]:
        """Decide, by what trying it once in a throwaway namespace gave (:class:`ShmTrial`);
        the notes for the audit."""
        size = str(cap_bytes) if cap_bytes else "50%"
        trial = ShmTrial.take()
        why = "util-linux's unshare is not installed"
        for script, prefix, tried in trial.results:
            if isinstance(tried, str):
                why = tried
                continue
            if tried.returncode == 0:
                self.prefix, self.locked = [*prefix, size], script is LOCK_SCRIPT
                shown = f"{cap_bytes} bytes" if cap_bytes else "half the host's memory"
                notes = [f"the E2E has a private /dev/shm (tmpfs of {shown}, charged to the cap)"]
                return [*notes, LIMITS_LOCKED] if self.locked else notes
            said = tried.stderr.decode(errors="replace").strip().splitlines()
            why = said[-1] if said else f"exit {tried.returncode}"
        self._before = _shm_names()
        return [f"the E2E shares the host's /dev/shm ({why}): what is left there is listed"]

    def leftovers(self) -> list[str]:
        """The problem naming what appeared in the host's /dev/shm during the run (empty with a
        private one, or when nothing did)."""
        if self._before is None:
            return []
        new = sorted(_shm_names() - self._before)
        if not new:
            return []
        shown = []
        for name in new[:_SHM_LISTED]:
            try:
                size = os.lstat(SHM / name).st_size
            except OSError:
                continue
            shown.append(f"{name!r} ({size} bytes)")
        more = f" and {len(new) - len(shown)} more" if len(new) > len(shown) else ""
        return [
            f"left in /dev/shm after the run (by the E2E, or another process meanwhile): "
            f"{', '.join(shown)}{more}"
        ]


def _shm_names() -> set[str]:
    """The names in the host's /dev/shm, at most ``_SHM_SCANNED`` of them."""
    names: set[str] = set()
    try:
        with os.scandir(SHM) as entries:
            for entry in entries:
                names.add(entry.name)
                if len(names) >= _SHM_SCANNED:
                    break
    except OSError:
        pass
    return names
