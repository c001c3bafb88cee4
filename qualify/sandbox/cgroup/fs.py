"""Readers of cgroup and proc files: pure parsers of the bytes a kernel produced, and the one
read-back of the limits in effect (``read_limits``) built on them.

Tested on real captured files (tests/data/samples/) from cgroup v1 and v2 kernels.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from pathlib import Path

from qualify.plan.limits import Limits
from qualify.records import frozen_record

# cgroup v1 reports "no limit" as PAGE_COUNTER_MAX in bytes: LONG_MAX rounded down to the
# page size, 9223372036854771712 with 4 KiB pages (mm/page_counter.c).
V1_UNLIMITED_THRESHOLD = 2**62


@frozen_record
class ProcCgroup:
    """One line of /proc/<pid>/cgroup."""

    hierarchy_id: int
    controllers: tuple[str, ...]
    """Controllers of a v1 hierarchy (``name=systemd`` included); empty for the v2 line."""
    path: str


def parse_proc_cgroup(data: bytes) -> list[ProcCgroup]:
    """Parse /proc/<pid>/cgroup ("4:memory:/a/b", "0::/user.slice/x.scope")."""
    entries = []
    for line in data.decode().splitlines():
        if not line.strip():
            continue
        hierarchy, controllers, path = line.split(":", 2)
        entries.append(
            ProcCgroup(int(hierarchy), tuple(c for c in controllers.split(",") if c), path)
        )
    return entries


@frozen_record
class Mount:
    """A cgroup mount from /proc/self/mountinfo."""

    mount_point: str
    root: str
    """The cgroup path the mount shows as its root (non-"/" inside cgroup namespaces)."""
    fstype: str
    super_options: tuple[str, ...]
    options: tuple[str, ...] = ()
    """Per-mount options (``ro`` or ``rw`` first): a container's cgroup mount is often ``ro``."""

    @property
    def read_only(self) -> bool:
        """Mounted read-only, per mount or per superblock: nothing in it can be created."""
        return "ro" in self.options or "ro" in self.super_options


def parse_mountinfo(data: bytes) -> list[Mount]:
    """The cgroup and cgroup2 mounts of a /proc/<pid>/mountinfo."""
    mounts = []
    for line in data.decode().splitlines():
        left, _, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if len(fields) < 5 or len(tail) < 3 or tail[0] not in ("cgroup", "cgroup2"):
            continue
        mount_point = fields[4].replace("\\040", " ")
        mounts.append(
            Mount(
                mount_point,
                fields[3],
                tail[0],
                tuple(tail[2].split(",")),
                tuple(fields[5].split(",")) if len(fields) > 5 else (),
            )
        )
    return mounts


def parse_flat_keyed(data: bytes) -> dict[str, int]:
    """Parse "key value" lines (memory.events, memory.stat, memory.oom_control)."""
    result: dict[str, int] = {}
    for line in data.decode().splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1].lstrip("-").isdigit():
            result[parts[0]] = int(parts[1])
    return result


def pick_keyed(data: bytes, keys: tuple[bytes, ...]) -> dict[str, int]:
    """The values of ``keys`` in a "key value" file, found without splitting every line (the
    monitor reads memory.stat 20 times a second and needs two of its ~40 keys)."""
    found: dict[str, int] = {}
    padded = b"\n" + data
    for key in keys:
        start = padded.find(b"\n" + key + b" ")
        if start < 0:
            continue
        start += len(key) + 2
        end = padded.find(b"\n", start)
        found[key.decode()] = int(padded[start : end if end >= 0 else len(padded)])
    return found


def parse_limit(data: bytes) -> int | None:
    """A limit file: bytes, or None for "max" (v2) or PAGE_COUNTER_MAX (v1)."""
    text = data.decode().strip()
    return None if text == "max" else limit_value(int(text))


def limit_value(value: int | None) -> int | None:
    """A limit as a number of bytes, None when it is v1's "unlimited" (or absent)."""
    return None if value is None or value >= V1_UNLIMITED_THRESHOLD else value


def parse_int(data: bytes) -> int:
    """A single integer file (memory.current, memory.usage_in_bytes, memory.peak)."""
    return int(data.decode().split()[0])


def parse_procs(data: bytes) -> list[int]:
    """cgroup.procs / tasks: one pid per line."""
    return [int(line) for line in data.decode().split()]


def read_bytes(path: Path) -> bytes:
    """Read a whole cgroup file (they are small and regenerated on every read)."""
    with path.open("rb", buffering=0) as handle:
        return handle.read()


class OpenFiles:
    """Cgroup files kept open and re-read with pread: the monitor reads several of them 20
    times a second, and an open/close per read costs more than the read itself."""

    def __init__(self, directory: Path):
        self.directory = directory
        self._fds: dict[str, int] = {}

    def read(self, name: str) -> bytes:
        """Current contents of ``name`` (kernfs regenerates a file read from offset 0)."""
        fd = self._fds.get(name)
        if fd is None:
            fd = os.open(self.directory / name, os.O_RDONLY | os.O_CLOEXEC)
            self._fds[name] = fd
        return os.pread(fd, 65536, 0)

    def close(self) -> None:
        """Close every descriptor."""
        for fd in self._fds.values():
            os.close(fd)
        self._fds.clear()


def host_swap_total(meminfo: bytes) -> int:
    """SwapTotal of /proc/meminfo in bytes."""
    for line in meminfo.decode().splitlines():
        if line.startswith("SwapTotal:"):
            return int(line.split()[1]) * 1024
    return 0


def v1_limits_in_effect(
    limit: bytes, memsw_limit: bytes | None, stat: bytes, pids_max: bytes | None, swap_total: int
) -> Limits:
    """Limits in effect from the files a v1 kernel shows (pure; tested on captured files)."""
    counters = parse_flat_keyed(stat)
    own = parse_limit(limit)
    hierarchical = limit_value(counters.get("hierarchical_memory_limit"))
    memory = min((v for v in (own, hierarchical) if v is not None), default=None)
    swap: int | None
    if memsw_limit is None:
        # Without memsw accounting (swapaccount=0) swap cannot be capped; it is 0 only when
        # the host has no swap at all.
        swap = 0 if swap_total == 0 else None
    else:
        memsw = parse_limit(memsw_limit)
        hier_memsw = limit_value(counters.get("hierarchical_memsw_limit"))
        memsw_effective = min((v for v in (memsw, hier_memsw) if v is not None), default=None)
        swap = None if memsw_effective is None or memory is None else memsw_effective - memory
        if swap is not None and swap_total == 0:
            swap = 0
    pids = parse_limit(pids_max) if pids_max is not None else None
    return Limits(memory_bytes=memory, swap_bytes=swap, pids_max=pids)


def v2_limits_in_effect(
    memory_max_chain: Sequence[bytes], swap_max_chain: Sequence[bytes], pids_max: bytes | None
) -> Limits:
    """Limits in effect from memory.max / memory.swap.max of the cgroup and its ancestors."""
    memories = [v for v in (parse_limit(data) for data in memory_max_chain) if v is not None]
    swaps = [v for v in (parse_limit(data) for data in swap_max_chain) if v is not None]
    return Limits(
        memory_bytes=min(memories, default=None),
        swap_bytes=min(swaps, default=None),
        pids_max=parse_limit(pids_max) if pids_max is not None else None,
    )


def v2_chain(directory: Path, mount: Path | None) -> list[Path]:
    """``directory`` and its ancestors below the cgroup2 ``mount`` (each may hold a limit)."""
    chain, stop = [], mount or Path("/")
    while directory not in (stop, directory.parent):
        chain.append(directory)
        directory = directory.parent
    return chain


LIMIT_FILES = (
    "memory.limit_in_bytes",
    "memory.memsw.limit_in_bytes",
    "memory.max",
    "memory.swap.max",
    "pids.max",
)
"""The files that set a cgroup's memory, swap and pids limits (v1 and v2)."""


def limit_files(directories: Sequence[Path]) -> list[Path]:
    """Every limit file (``LIMIT_FILES``) of the cgroups at ``directories`` and of their
    ancestors, up to the first directory that holds none (above the hierarchy's root, or the
    v2 root cgroup, which has no limits): the files whose change moves a limit in effect."""
    found: list[Path] = []
    for directory in directories:
        current = directory
        while True:
            present = [current / name for name in LIMIT_FILES if (current / name).is_file()]
            if not present:
                break
            found += [path for path in present if path not in found]
            if current.parent == current:
                break
            current = current.parent
    return found


@frozen_record
class LimitChange:
    """A limit file whose value changed while the run was watched."""

    path: Path
    before: str
    after: str
    at_s: float
    """Seconds since the watch began (the E2E's start, near enough)."""

    def describe(self) -> str:
        """One line: the file, its old and new values, and when."""
        return f"{self.path} changed from {self.before} to {self.after} at +{self.at_s:.1f}s"


class LimitWatch:
    """The limit files of a run's cgroups and their ancestors, read when the watch begins
    (before the E2E starts) and again at every ``check``: a value that differs is a change,
    recorded once per new value. A file that can no longer be read (its cgroup removed) is
    not watched further. Each read is a ``pread`` of a descriptor kept open."""

    def __init__(self, files: Sequence[Path]) -> None:
        self._origin = time.monotonic()
        self._fds: dict[Path, int] = {}
        self._values: dict[Path, str] = {}
        self.changes: list[LimitChange] = []
        for path in files:
            try:
                fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
            except OSError:
                continue
            self._fds[path] = fd
            value = self._read(path, fd)
            if value is not None:
                self._values[path] = value

    def _read(self, path: Path, fd: int) -> str | None:
        try:
            return os.pread(fd, 64, 0).decode("ascii", "replace").strip()
        except OSError:
            os.close(self._fds.pop(path))
            self._values.pop(path, None)
            return None

    @property
    def files(self) -> list[Path]:
        """The files watched now."""
        return list(self._values)

    def check(self) -> list[LimitChange]:
        """Read every file again; the changes found by this check."""
        found = []
        for path, fd in list(self._fds.items()):
            before = self._values.get(path)
            value = self._read(path, fd)
            if value is not None and before is not None and value != before:
                found.append(LimitChange(path, before, value, time.monotonic() - self._origin))
                self._values[path] = value
        self.changes += found
        return found

    def close(self) -> None:
        """Close every descriptor."""
        for fd in self._fds.values():
            os.close(fd)
        self._fds.clear()


def read_limits(
    version: int, memory_dir: Path, pids_dir: Path | None, mount: Path | None
) -> Limits:
    """The limits in effect for a cgroup, read from its files (and its ancestors'): the one
    read-back of the host side, for the cgroup backend and a container's own cgroup alike."""
    if version == 1:
        memsw = memory_dir / "memory.memsw.limit_in_bytes"
        return v1_limits_in_effect(
            limit=read_bytes(memory_dir / "memory.limit_in_bytes"),
            memsw_limit=read_bytes(memsw) if memsw.exists() else None,
            stat=read_bytes(memory_dir / "memory.stat"),
            pids_max=read_bytes(pids_dir / "pids.max") if pids_dir else None,
            swap_total=host_swap_total(Path("/proc/meminfo").read_bytes()),
        )
    chain = v2_chain(memory_dir, mount)
    pids = (pids_dir or memory_dir) / "pids.max"
    return v2_limits_in_effect(
        [read_bytes(d / "memory.max") for d in chain if (d / "memory.max").exists()],
        [read_bytes(d / "memory.swap.max") for d in chain if (d / "memory.swap.max").exists()],
        read_bytes(pids) if pids.exists() else None,
    )
