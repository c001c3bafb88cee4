"""Pure readers of cgroup and proc files: each takes the bytes a kernel produced.

Tested on real captured files (tests/data/samples/) from cgroup v1 and v2 kernels.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

# cgroup v1 reports "no limit" as PAGE_COUNTER_MAX in bytes: LONG_MAX rounded down to the
# page size, 9223372036854771712 with 4 KiB pages (mm/page_counter.c).
V1_UNLIMITED_THRESHOLD = 2**62


@dataclasses.dataclass(frozen=True)
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


@dataclasses.dataclass(frozen=True)
class Mount:
    """A cgroup mount from /proc/self/mountinfo."""

    mount_point: str
    root: str
    """The cgroup path the mount shows as its root (non-"/" inside cgroup namespaces)."""
    fstype: str
    super_options: tuple[str, ...]


def parse_mountinfo(data: bytes) -> list[Mount]:
    """The cgroup and cgroup2 mounts of a /proc/<pid>/mountinfo."""
    mounts = []
    for line in data.decode().splitlines():
        left, _, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if len(fields) < 5 or len(tail) < 3 or tail[0] not in ("cgroup", "cgroup2"):
            continue
        mount_point = fields[4].replace("\\040", " ")
        mounts.append(Mount(mount_point, fields[3], tail[0], tuple(tail[2].split(","))))
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
