"""The sandbox's processes, read off the monitor's path.

Reading ``/proc/<pid>`` can block: a process in memory reclaim holds its mm lock, and
``cmdline`` waits for it (a fork storm under a cap makes thousands of such processes). So the
monitor never reads ``/proc/<pid>`` itself: this thread does, each round bounded in time, and
publishes a snapshot the monitor takes without waiting. A read that blocks stalls only this
thread, which nobody joins.

It also watches the run's membership: every process ever seen in the sandbox, and every
descendant of the E2E (qualify is the child subreaper of the run, so orphans of the E2E,
double-forked daemons included, become qualify's children and stay visible), is checked
against the sandbox each round. One found alive outside it has escaped the cap.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable

from qualify import cuts
from qualify.records import frozen_record

PAGE = os.sysconf("SC_PAGE_SIZE")
TOP_PROCESSES = 5
CMDLINE_BYTES = 200


@frozen_record
class ProcessSample:
    """One process of the sandbox at a sample."""

    pid: int = 0
    name: str = ""
    rss_bytes: int = 0
    cmdline: str = ""


@frozen_record
class Escape:
    """A process of the run found alive outside the run's confinement."""

    pid: int
    name: str
    cgroup: str
    """Where it went: its /proc/<pid>/cgroup, one line per hierarchy joined by ' '."""


def _read(path: str, limit: int = 4096) -> bytes | None:
    try:
        with open(path, "rb") as handle:
            return handle.read(limit)
    except OSError:
        return None


PF_EXITING = 0x4
"""include/linux/sched.h: set at the start of do_exit. A dying task has already been moved out
of its cgroups (cgroup_exit), so it reads as outside them before it turns zombie."""


def start_time(pid: int) -> int | None:
    """Field 22 of /proc/<pid>/stat (clock ticks since boot), the process's identity with its
    pid; None when it is gone, exiting, or a zombie (dead, waiting to be reaped)."""
    data = _read(f"/proc/{pid}/stat")
    if data is None:
        return None
    fields = data[data.rfind(b")") + 2 :].split()
    if len(fields) < 20 or fields[0] in (b"Z", b"X") or int(fields[6]) & PF_EXITING:
        return None
    return int(fields[19])


def rss_bytes(pid: int) -> int | None:
    """Resident set size from /proc/<pid>/statm (counters only: never waits on the mm lock)."""
    data = _read(f"/proc/{pid}/statm", 256)
    parts = data.split() if data else []
    return int(parts[1]) * PAGE if len(parts) > 1 else None


def name_of(pid: int) -> str:
    """/proc/<pid>/comm."""
    data = _read(f"/proc/{pid}/comm", 64)
    return data.decode(errors="replace").strip() if data else "?"


def cmdline_of(pid: int) -> str:
    """/proc/<pid>/cmdline, bounded (may block while the process is in reclaim)."""
    data = _read(f"/proc/{pid}/cmdline", CMDLINE_BYTES + 64)
    text = (data or b"").replace(b"\0", b" ").decode(errors="replace")
    return cuts.head(text.strip(), CMDLINE_BYTES)


def memory_cgroup(proc_cgroup: str) -> str | None:
    """The cgroup that bounds a process's memory, from its /proc/<pid>/cgroup: the v1 line
    of the memory controller, else the v2 line."""
    unified = None
    for line in proc_cgroup.splitlines():
        hierarchy, _, rest = line.partition(":")
        controllers, _, path = rest.partition(":")
        if "memory" in controllers.split(","):
            return path
        if hierarchy == "0":
            unified = path
    return unified


def children_of(pid: int) -> list[int]:
    """Direct children, from /proc/<pid>/task/*/children (Linux 4.2+)."""
    children: list[int] = []
    with contextlib.suppress(OSError):
        for task in os.listdir(f"/proc/{pid}/task"):
            data = _read(f"/proc/{pid}/task/{task}/children", 1 << 16)
            children += [int(child) for child in (data or b"").split()]
    return children


CPU_SHARE = 0.0025
"""The share of one core the reader may use on average: with the sampler's, the monitor stays
under 1% of a core whatever the E2E does (``qualify.run.monitor.CPU_SHARE``)."""


class ProcessReader(threading.Thread):
    """Reads the sandbox's processes every ``interval_s``; each round stops reading RSS after
    ``budget_s`` and carries on where it left off the next round.

    Each stage of a round (membership, the process tree, escapes, RSS) stops after
    ``budget_s``, so that a round over a storm of thousands of processes costs a few
    milliseconds; the wait after a round is stretched so that the thread stays within
    ``cpu_share`` of one core (the membership and escape watch then go slower during the storm;
    nothing is skipped)."""

    def __init__(
        self,
        pids: Callable[[], list[int]],
        interval_s: float = 0.2,
        budget_s: float = 0.002,
        cgroup: str | None = None,
        cpu_share: float = CPU_SHARE,
    ):
        super().__init__(name="qualify-processes", daemon=True)
        self._pids = pids
        self.interval_s, self.budget_s, self.cpu_share = interval_s, budget_s, cpu_share
        self.cpu_s = 0.0
        """CPU time this thread used so far."""
        self.cgroup = cgroup.rstrip("/") if cgroup else None
        """The run's memory cgroup as /proc/<pid>/cgroup names it; None: no escape watch."""
        self.root: int | None = None
        """The E2E's root process (set once it started)."""
        self.snapshot: tuple[ProcessSample, ...] = ()
        """The largest processes of the last complete round, cmdline included."""
        self.escapes: tuple[Escape, ...] = ()
        self.exempt: set[int] = set()
        """qualify's own helper processes, outside the sandbox by design (the watchdog)."""
        self.adopted: set[int] = set()
        """Orphans of the E2E that qualify adopted as subreaper (to be reaped at the end)."""
        self._stop = threading.Event()
        self._members: dict[int, int] = {}  # pid -> start time, every process seen inside
        self._rss: dict[int, int] = {}
        self._cursor = 0
        self._reported: set[tuple[int, int]] = set()

    def run(self) -> None:
        """Round after round until stopped; a failing round is skipped, never fatal."""
        started = time.thread_time()
        while not self._stop.is_set():
            before = time.thread_time()
            with contextlib.suppress(Exception):
                self.round()
            now = time.thread_time()
            self.cpu_s = now - started
            self._stop.wait(max(self.interval_s, (now - before) / self.cpu_share))

    def stop(self) -> None:
        """Ask the thread to end; it is not joined (it may be blocked in a /proc read)."""
        self._stop.set()

    def round(self) -> None:
        """One pass: membership, escapes, RSS (time-bounded), the top processes."""
        inside = self._pids()
        current = set(inside)
        deadline = time.monotonic() + self.budget_s
        for pid in inside:
            if time.monotonic() > deadline:
                break  # a storm of new processes: the next round takes the rest
            if pid not in self._members:
                started = start_time(pid)
                if started is not None:
                    self._members[pid] = started
        if self.cgroup is not None:
            self._look_for_escapes(current)
        self._read_rss(inside, current)
        top = sorted(
            (pid for pid in self._rss if pid in current), key=self._rss.__getitem__, reverse=True
        )[:TOP_PROCESSES]
        self.snapshot = tuple(
            ProcessSample(pid, name_of(pid), self._rss[pid], cmdline_of(pid)) for pid in top
        )

    def _read_rss(self, inside: list[int], current: set[int]) -> None:
        deadline = time.monotonic() + self.budget_s
        self._rss = {pid: rss for pid, rss in self._rss.items() if pid in current}
        count, read = len(inside), 0
        while read < count and time.monotonic() <= deadline:
            pid = inside[(self._cursor + read) % count]
            rss = rss_bytes(pid)
            if rss is not None:
                self._rss[pid] = rss
            read += 1
        self._cursor = (self._cursor + read) % count if count else 0

    def _descendants(self) -> set[int]:
        """The E2E's process tree and the orphans qualify adopted as subreaper: its children
        other than the E2E and its helpers that started after the E2E."""
        if self.root is None:
            return set()
        roots = [self.root]
        root_start = start_time(self.root) or self._members.get(self.root, 0)
        deadline = time.monotonic() + self.budget_s
        for pid in children_of(os.getpid()):
            if pid == self.root or pid in self.exempt:
                continue
            if pid not in self.adopted:
                if time.monotonic() > deadline:
                    continue  # a storm's thousands of orphans: the next rounds take the rest
                started = start_time(pid)
                if started is None or started < root_start:
                    continue
                self.adopted.add(pid)
            roots.append(pid)
        found: set[int] = set()
        deadline = time.monotonic() + self.budget_s
        while roots and time.monotonic() <= deadline:  # a storm's tree: the rest next round
            pid = roots.pop()
            if pid in found:
                continue
            found.add(pid)
            roots += children_of(pid)
        return found

    def _outside(self, pid: int) -> str | None:
        """Where ``pid`` is when its memory cgroup is not the run's (or below it), else None."""
        text = (_read(f"/proc/{pid}/cgroup") or b"").decode(errors="replace")
        path = memory_cgroup(text)
        if path is None or self.cgroup is None:
            return None
        if path == self.cgroup or path.startswith(self.cgroup + "/"):
            return None
        return path

    def _look_for_escapes(self, current: set[int]) -> None:
        candidates = (set(self._members) | self._descendants()) - current
        escapes = list(self.escapes)
        deadline = time.monotonic() + self.budget_s
        for pid in candidates:
            if time.monotonic() > deadline:
                break  # a storm's dead members: the next round checks the rest
            started = start_time(pid)
            if started is None:
                self._members.pop(pid, None)  # gone, dying or a zombie: not an escape
                continue
            if pid in self._members and self._members[pid] != started:
                continue  # the pid was reused by an unrelated process
            key = (pid, started)
            if key in self._reported:
                continue
            where = self._outside(pid)
            if where is None or start_time(pid) is None:
                continue  # inside after all (it joined after the cgroup.procs read), or dying
            self._reported.add(key)
            escapes.append(Escape(pid, name_of(pid), where))
        self.escapes = tuple(escapes)
