"""cgroup v2 backend: a child cgroup in a delegated subtree of the caller's own cgroup.

memory.max is the cap, memory.swap.max = 0 disables swap, memory.oom.group = 1 makes an OOM
kill the whole run (not one victim while the rest limps on), pids.max bounds fork bombs. The
limit in effect is the smallest memory.max on the path to the root.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Sequence
from pathlib import Path

from qualify import records
from qualify.errors import SandboxError
from qualify.plan.limits import Limits
from qualify.sandbox.base import SandboxInfo, StopReport
from qualify.sandbox.cgroup import common
from qualify.sandbox.cgroup.fs import (
    OpenFiles,
    parse_flat_keyed,
    parse_int,
    pick_keyed,
    read_bytes,
    read_limits,
)

_CONTROLLERS = ("memory", "pids")
SUPERVISOR_LEAF = "qualify-supervisor"


def can_self_delegate(procs: Sequence[int], own_pid: int, own_children: Sequence[int] = ()) -> bool:
    """True when every process of the cgroup is qualify or one of its own children (the
    watchdog it starts before any cgroup exists, a git prefetch), so that all of them may
    move into a leaf; never when a process of someone else's is there."""
    return own_pid in procs and set(procs) <= {own_pid, *own_children}


def _own_children() -> list[int]:
    try:
        import psutil

        return [child.pid for child in psutil.Process().children(recursive=True)]
    except Exception:  # psutil failing leaves qualify alone in its own count
        return []


class V2Probe:
    """Readings of one v2 cgroup; memory.peak is reset per open file (Linux 6.12+)."""

    def __init__(self, directory: Path):
        self.directory = directory
        self.files = OpenFiles(directory)
        self._peak_fd: int | None = None
        with contextlib.suppress(OSError):
            self._peak_fd = os.open(directory / "memory.peak", os.O_RDWR | os.O_CLOEXEC)

    def usage_bytes(self) -> int | None:
        """memory.current."""
        return parse_int(self.files.read("memory.current"))

    def watermark_bytes(self) -> int | None:
        """memory.peak through this probe's own descriptor (None before Linux 5.19)."""
        if self._peak_fd is None:
            return None
        return parse_int(os.pread(self._peak_fd, 64, 0))

    def reset_watermark(self) -> bool:
        """Any write to an open memory.peak resets it for that descriptor only (Linux 6.12)."""
        if self._peak_fd is None:
            return False
        try:
            os.write(self._peak_fd, b"reset\n")
        except OSError:
            return False
        return True

    def oom_kills(self) -> int | None:
        """``oom_kill`` of memory.events (hierarchical: counts the subtree)."""
        return parse_flat_keyed(self.files.read("memory.events")).get("oom_kill")

    def memory_breakdown(self) -> dict[str, int]:
        """anon and file of memory.stat."""
        stat = pick_keyed(self.files.read("memory.stat"), (b"anon", b"file"))
        return {"anon": stat.get("anon", 0), "file": stat.get("file", 0)}

    def pids(self) -> list[int]:
        """cgroup.procs, opened afresh (a re-read open file may return a stale pid list)."""
        return common.procs_of([self.directory])

    def limit_hits(self) -> int | None:
        """``max`` of memory.events: times usage was about to go over memory.max."""
        return parse_flat_keyed(self.files.read("memory.events")).get("max")

    def pids_refused(self) -> int | None:
        """``max`` of pids.events: forks the pids limit refused (hierarchical)."""
        return parse_flat_keyed(self.files.read("pids.events")).get("max")

    def close(self) -> None:
        """Release the descriptors held open."""
        self.files.close()
        if self._peak_fd is not None:
            os.close(self._peak_fd)
            self._peak_fd = None


@records.record
class CgroupV2Sandbox:
    """A run's cgroup under a delegated v2 subtree."""

    parent: Path
    """The caller's own cgroup directory (its subtree must be delegated to us)."""
    parent_path: str
    run_id: str
    mount_point: Path | None = None
    """The cgroup2 mount: ancestors up to it are read for the limit in effect."""
    reason: str | None = None
    """Why this backend was chosen (the action's decision), the first note of the audit."""
    moved_to_leaf: bool = False
    """qualify moved itself into SUPERVISOR_LEAF to hand memory and pids to its children."""
    shm: common.PrivateShm = records.field(default_factory=common.PrivateShm)
    """The run's /dev/shm."""
    name = "cgroup-v2"

    @property
    def directory(self) -> Path:
        """The run's cgroup directory."""
        return self.parent / f"qualify-{self.run_id}"

    def _enable_controllers(self) -> None:
        control = self.parent / "cgroup.subtree_control"
        enabled = read_bytes(control).decode().split()
        missing = [c for c in _CONTROLLERS if c not in enabled]
        if not missing:
            return
        request = " ".join(f"+{c}" for c in missing)
        try:
            common.write_file(control, request)
            return
        except SandboxError as exc:
            first_error = exc
        # "No internal processes" (cgroup-v2.rst): a cgroup that holds processes cannot hand
        # memory to children (EBUSY). When the only process here is qualify itself, it moves
        # into a leaf of its own first, as container runtimes do in a delegated subtree.
        own = os.getpid()
        if can_self_delegate(common.procs_of([self.parent]), own, _own_children()):
            leaf = self.parent / SUPERVISOR_LEAF
            leaf.mkdir(exist_ok=True)
            common.write_file(leaf / "cgroup.procs", str(own))  # its children forked from now on
            for _ in range(3):  # are born in the leaf; those forked before follow it there
                left = common.procs_of([self.parent])
                if not left or not can_self_delegate([own, *left], own, _own_children()):
                    break
                for pid in left:
                    with contextlib.suppress(SandboxError):  # a child that ended meanwhile
                        common.write_file(leaf / "cgroup.procs", str(pid))
            try:
                common.write_file(control, request)
                self.moved_to_leaf = True
                return
            except SandboxError as exc:
                first_error = exc
        available: list[str] = []
        with contextlib.suppress(OSError):
            available = read_bytes(self.parent / "cgroup.controllers").decode().split()
        absent = [c for c in missing if c not in available]
        # the kernel's ENOENT: the parent's own parent hands these down to no one
        if absent and (self.parent / "cgroup.controllers").exists():
            first_error = SandboxError(
                f"{' and '.join(absent)} not delegated to {self.parent_path} (its "
                f"cgroup.controllers: {' '.join(available) or 'none'})"
            )
        raise SandboxError(
            f"cannot enable {'+'.join(missing)} for children of {self.parent_path}: "
            f"{first_error} (run qualify in a delegated cgroup of its own, e.g. "
            "`systemd-run --scope -p Delegate=yes qualify run ...`, or use --backend docker)"
        ) from first_error

    def prepare(self, requested: Limits) -> SandboxInfo:
        """Create the cgroup, write the limits, read them back."""
        reclaimed = common.reclaim_orphans(self.parent)
        self._enable_controllers()
        try:
            self.directory.mkdir()
        except OSError as exc:
            raise SandboxError(
                f"cannot create cgroup under {self.parent_path}: {exc.strerror} "
                "(run as root or in a delegated subtree, or use --backend docker)"
            ) from exc
        if requested.memory_bytes is not None:
            common.write_file(self.directory / "memory.max", str(requested.memory_bytes))
        common.write_file(self.directory / "memory.swap.max", str(requested.swap_bytes or 0))
        common.write_file(self.directory / "memory.oom.group", "1")
        if requested.pids_max is not None:
            common.write_file(self.directory / "pids.max", str(requested.pids_max))
        notes = [self.reason] if self.reason else []
        if self.moved_to_leaf:
            notes.append(
                f"qualify moved itself and its own child processes into "
                f"{self.parent_path.rstrip('/')}/{SUPERVISOR_LEAF} "
                f"so that {self.parent_path} could enable memory and pids for the run's cgroup"
            )
        notes += [f"reclaimed orphaned cgroup {name}" for name in reclaimed]
        if not (self.directory / "memory.peak").exists():
            notes.append("memory.peak is missing (Linux < 5.19): peaks come from samples")
        notes += self.shm.prepare(requested.memory_bytes)
        return SandboxInfo(
            backend=self.name,
            capped=True,
            cgroup=f"{self.parent_path.rstrip('/')}/qualify-{self.run_id}",
            in_effect=self._read_back(),
            notes=tuple(notes),
            limits_locked=self.shm.locked,
        )

    def _read_back(self) -> Limits:
        oom_group = read_bytes(self.directory / "memory.oom.group").decode().strip()
        if oom_group != "1":
            raise SandboxError(f"memory.oom.group reads {oom_group!r} after writing 1")
        return read_limits(2, self.directory, self.directory, self.mount_point)

    def wrap(self, argv: Sequence[str]) -> list[str]:
        """The launch shim joins the cgroup before exec."""
        return common.enter_argv([self.directory / "cgroup.procs"], [*self.shm.prefix, *argv])

    def attach(self, pid: int) -> None:
        """Nothing to do: the shim joined the cgroup itself."""

    def probe(self) -> V2Probe:
        """Probe of the run's cgroup."""
        return V2Probe(self.directory)

    def kill_all(self, signal_number: int) -> int:
        """Signal every process of the run."""
        return common.signal_all([self.directory], signal_number)

    def cgroup_dirs(self) -> list[Path]:
        """The run's cgroup."""
        return [self.directory]

    def stop(self, group: int | None = None) -> StopReport:
        """cgroup.kill (Linux 5.14: atomic, forks in flight included), then wait until empty;
        where it is missing, freeze (cgroup.freeze, Linux 5.2) so nothing forks during the
        SIGKILL loop."""
        kill = self.directory / "cgroup.kill"
        freeze = None if kill.exists() else (self.directory / "cgroup.freeze", "1", "0")
        return common.stop_cgroups([self.directory], freeze=freeze, kill_file=kill, group=group)

    def teardown(self) -> list[str]:
        """cgroup.kill (or a SIGKILL loop), then rmdir."""
        problems = common.kill_until_empty([self.directory], self.directory / "cgroup.kill")
        return problems + common.remove_dir(self.directory) + self.shm.leftovers()
