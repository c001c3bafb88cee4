"""Where this process's cgroups are, and which cgroup version can cap memory here."""

from __future__ import annotations

from pathlib import Path

from qualify.records import frozen_record
from qualify.sandbox.cgroup.fs import Mount, ProcCgroup, parse_mountinfo, parse_proc_cgroup


@frozen_record
class CgroupLayout:
    """The cgroup directories a run is nested under (host paths, never written to reports)."""

    version: int | None
    """1 or 2: the hierarchy holding the memory controller; None when there is none."""
    memory_dir: Path | None
    """This process's own memory cgroup directory."""
    memory_path: str | None
    """The same as a path inside the hierarchy ("/process_api/abc")."""
    pids_dir: Path | None
    """This process's pids cgroup directory (v1: its own hierarchy; v2: same as memory)."""
    read_only: bool = False
    """The hierarchy holding memory is mounted read-only here (an unprivileged container)."""


def _join(mount: Mount, path: str) -> Path:
    # Inside a cgroup namespace the mount's root is the namespace root and /proc/self/cgroup
    # paths are relative to it; outside, mount.root is "/". A path with ".." (a process
    # outside this namespace's root) has no directory we can reach.
    if "/.." in path:
        raise LookupError(path)
    relative = path
    if mount.root != "/" and path.startswith(mount.root):
        relative = path[len(mount.root) :]
    return Path(mount.mount_point) / relative.lstrip("/")


def _v1_mount(entries: list[ProcCgroup], mounts: list[Mount], controller: str) -> tuple[Mount, str]:
    for entry in entries:
        if controller in entry.controllers:
            for mount in mounts:
                if mount.fstype == "cgroup" and controller in mount.super_options:
                    return mount, entry.path
    raise LookupError(controller)


def _v1_dir(entries: list[ProcCgroup], mounts: list[Mount], controller: str) -> tuple[Path, str]:
    mount, path = _v1_mount(entries, mounts, controller)
    return _join(mount, path), path


def _v1_optional(entries: list[ProcCgroup], mounts: list[Mount], controller: str) -> Path | None:
    try:
        return _v1_dir(entries, mounts, controller)[0]
    except LookupError:
        return None


def own_v2_dir(proc_cgroup: bytes, mountinfo: bytes) -> Path | None:
    """This process's directory in the cgroup2 hierarchy (None: no cgroup2 mount, no ``0::``
    line, or a cgroup outside this namespace's root)."""
    entries = [e for e in parse_proc_cgroup(proc_cgroup) if e.hierarchy_id == 0]
    v2_mounts = [m for m in parse_mountinfo(mountinfo) if m.fstype == "cgroup2"]
    if not entries or not v2_mounts:
        return None
    try:
        return _join(v2_mounts[0], entries[0].path)
    except LookupError:
        return None


def detect_layout(
    proc_cgroup: bytes, mountinfo: bytes, v2_controllers: bytes | None
) -> CgroupLayout:
    """Decide from /proc/self/cgroup, /proc/self/mountinfo and the v2 cgroup.controllers.

    A v1 memory hierarchy wins (hybrid hosts bind memory to v1 and mount an empty v2);
    otherwise v2 when its cgroup.controllers lists ``memory``.
    """
    entries, mounts = parse_proc_cgroup(proc_cgroup), parse_mountinfo(mountinfo)
    try:
        mount, memory_path = _v1_mount(entries, mounts, "memory")
        memory_dir = _join(mount, memory_path)
    except LookupError:
        pass
    else:
        pids = _v1_optional(entries, mounts, "pids")
        return CgroupLayout(1, memory_dir, memory_path, pids, mount.read_only)
    unified = [entry for entry in entries if entry.hierarchy_id == 0]
    v2_mounts = [mount for mount in mounts if mount.fstype == "cgroup2"]
    usable = v2_controllers is not None and "memory" in v2_controllers.decode().split()
    if unified and v2_mounts and usable:
        try:
            directory = _join(v2_mounts[0], unified[0].path)
        except LookupError:
            return CgroupLayout(None, None, None, None)
        return CgroupLayout(2, directory, unified[0].path, directory, v2_mounts[0].read_only)
    return CgroupLayout(None, None, None, None)


def v2_mount_point(mountinfo: bytes) -> Path | None:
    """The first cgroup2 mount point, if any."""
    for mount in parse_mountinfo(mountinfo):
        if mount.fstype == "cgroup2":
            return Path(mount.mount_point)
    return None


def current_layout() -> CgroupLayout:
    """Detect the layout of the running process."""
    proc_cgroup = Path("/proc/self/cgroup").read_bytes()
    mountinfo = Path("/proc/self/mountinfo").read_bytes()
    return detect_layout(proc_cgroup, mountinfo, own_v2_controllers(proc_cgroup, mountinfo))


def own_v2_controllers(proc_cgroup: bytes, mountinfo: bytes) -> bytes | None:
    """cgroup.controllers of this process's v2 cgroup (else of the mount's root; None: none)."""
    mount_point = v2_mount_point(mountinfo)
    if mount_point is None:
        return None
    own = own_v2_dir(proc_cgroup, mountinfo)
    for candidate in (own, mount_point):
        if candidate is None:
            continue
        try:
            return (candidate / "cgroup.controllers").read_bytes()
        except OSError:
            continue
    return None
