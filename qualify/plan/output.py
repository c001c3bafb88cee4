"""Output directories (``qualify run --out``, ``qualify merge --out``), checked before anything
is written: a path that cannot hold the reports is bad input, not a run that dies writing them.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from qualify.errors import UsageError

MOUNTINFO = Path("/proc/self/mountinfo")
PSEUDO_FILESYSTEMS = frozenset(
    {
        "binfmt_misc",
        "bpf",
        "cgroup",
        "cgroup2",
        "configfs",
        "debugfs",
        "devpts",
        "efivarfs",
        "fusectl",
        "hugetlbfs",
        "mqueue",
        "proc",
        "pstore",
        "securityfs",
        "sysfs",
        "tracefs",
    }
)
"""Kernel interfaces mounted as filesystems: no report can be written in them (root included:
``/proc`` passes ``os.access`` for root and still refuses every ``mkdir``)."""
_VALID = "valid: a writable directory, or a path where one can be created"


def check_output_dir(out: Path, what: str = "--out", below: Path | None = None) -> None:
    """Raise UsageError unless ``out`` (or ``below``, a directory to be created inside it) can
    be created and written: its nearest existing ancestor must be a directory that this process
    may write, on a real filesystem. Nothing is created here."""
    shown = f"{what} {str(out)!r} is not valid"
    if "\0" in str(out) or (below is not None and "\0" in str(below)):
        raise UsageError(f"{shown}: it contains a NUL byte ({_VALID})")
    existing = _nearest_existing(below if below is not None else out)
    if existing.is_symlink() and not existing.exists():
        raise UsageError(f"{shown}: {str(existing)!r} is a broken symbolic link ({_VALID})")
    if not existing.is_dir():
        raise UsageError(f"{shown}: {str(existing)!r} is not a directory ({_VALID})")
    filesystem = filesystem_type(existing)
    if filesystem in PSEUDO_FILESYSTEMS:
        raise UsageError(
            f"{shown}: {str(existing)!r} is on a {filesystem} filesystem, where no reports "
            f"can be written ({_VALID})"
        )
    if not os.access(existing, os.W_OK | os.X_OK):
        raise UsageError(f"{shown}: {str(existing)!r} {_why_not_writable(existing)} ({_VALID})")


def _nearest_existing(path: Path) -> Path:
    """``path`` or its nearest ancestor that exists (or is a link), as spelled in ``path``."""
    probe = path
    while not (probe.exists() or probe.is_symlink()):
        if probe.parent == probe:
            break
        probe = probe.parent
    return probe


def _why_not_writable(directory: Path) -> str:
    try:
        read_only = bool(os.statvfs(directory).f_flag & os.ST_RDONLY)
    except OSError:
        read_only = False
    return "is on a read-only file system" if read_only else "is not writable (permission denied)"


def filesystem_type(path: Path) -> str | None:
    """The type of the filesystem ``path`` is on (``/proc/self/mountinfo``: the longest mount
    point holding it, the last one mounted there); None when unknown."""
    try:
        lines = MOUNTINFO.read_text(encoding="utf-8", errors="replace").splitlines()
        resolved = os.path.realpath(path)
    except (OSError, ValueError):
        return None
    best: tuple[int, str] | None = None
    for line in lines:
        fields = line.split(" ")
        if "-" not in fields[6:]:
            continue
        separator = fields.index("-", 6)
        if len(fields) <= separator + 1:
            continue
        mount_point = _unescape(fields[4])
        inside = mount_point in ("/", resolved) or resolved.startswith(mount_point + "/")
        if inside and (best is None or len(mount_point) >= best[0]):
            best = (len(mount_point), fields[separator + 1])
    return best[1] if best else None


def _unescape(field: str) -> str:
    """mountinfo writes space, tab, newline and backslash in paths as octal escapes."""
    return re.sub(r"\\([0-7]{3})", lambda match: chr(int(match.group(1), 8)), field)
