"""The memory limits the family's processes are under, read from inside the sandbox.

The host reads the limits of the cgroup (or container) it made; this reads them again from
where the family runs: its own ``/proc/self/cgroup`` and ``/proc/self/mountinfo``, then that
cgroup's files as the sandbox mounts them (inside a container: the container's cgroup
namespace). The first Python process of a run that gets here writes one ``sandbox_limits``
event; the host compares it with what it asked for.

- v1: ``memory.limit_in_bytes`` and ``memory.memsw.limit_in_bytes`` (swap = memsw - limit),
  each bounded by the ``hierarchical_*`` values of ``memory.stat``.
- v2: the smallest ``memory.max`` and ``memory.swap.max`` from the cgroup up to its mount.

Unlimited is None ("max" in v2, the page-counter maximum in v1).
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Callable

from harness.contract import SANDBOX_LIMITS

# v1 reports "no limit" as PAGE_COUNTER_MAX pages, LONG_MAX rounded down to pages: anything at
# or above 2**62 is unlimited on every architecture.
V1_UNLIMITED = 1 << 62
_OCTAL = re.compile(r"\\([0-7]{3})")

Reader = Callable[[str], "str | None"]


def _unescape(field: str) -> str:
    return _OCTAL.sub(lambda m: chr(int(m.group(1), 8)), field)


def _mounts(mountinfo: str) -> list[tuple[str, str, str, set[str]]]:
    """(root, mount point, fstype, super options) of each cgroup mount."""
    mounts = []
    for line in mountinfo.splitlines():
        left, sep, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if not sep or len(fields) < 5 or len(tail) < 3 or not tail[0].startswith("cgroup"):
            continue
        mounts.append(
            (_unescape(fields[3]), _unescape(fields[4]), tail[0], set(tail[2].split(",")))
        )
    return mounts


def _join(root: str, mount_point: str, path: str) -> str | None:
    if "/.." in path:
        return None  # outside this namespace's root: no directory to read
    if root != "/" and path.startswith(root):
        path = path[len(root) :]
    return os.path.join(mount_point, path.lstrip("/")).rstrip("/") or "/"


def cgroup_dirs(proc_cgroup: str, mountinfo: str) -> tuple[int, str, str] | None:
    """(version, memory cgroup directory, cgroup path) of this process, or None."""
    mounts = _mounts(mountinfo)
    entries = [line.split(":", 2) for line in proc_cgroup.splitlines() if line.count(":") >= 2]
    for hierarchy, controllers, path in entries:
        if hierarchy != "0" and "memory" in controllers.split(","):
            for root, point, fstype, options in mounts:
                if fstype == "cgroup" and "memory" in options:
                    directory = _join(root, point, path)
                    return None if directory is None else (1, directory, path)
    for hierarchy, _, path in entries:
        if hierarchy == "0":
            for root, point, fstype, _ in mounts:
                if fstype == "cgroup2":
                    directory = _join(root, point, path)
                    return None if directory is None else (2, directory, path)
    return None


def _number(text: str | None) -> int | None:
    value = (text or "").strip()
    if not value or value == "max":
        return None
    number = int(value)
    return None if number >= V1_UNLIMITED else number


def _smallest(values: list[int | None]) -> int | None:
    known = [value for value in values if value is not None]
    return min(known) if known else None


def _stat(text: str | None, key: str) -> int | None:
    for line in (text or "").splitlines():
        name, _, value = line.partition(" ")
        if name == key:
            return _number(value)
    return None


def limits_from(version: int, directory: str, read: Reader, stop: str = "/") -> dict[str, object]:
    """The limits in effect for the cgroup at ``directory`` (``read`` returns None if absent)."""
    if version == 1:
        stat = read(os.path.join(directory, "memory.stat"))
        memory = _smallest(
            [
                _number(read(os.path.join(directory, "memory.limit_in_bytes"))),
                _stat(stat, "hierarchical_memory_limit"),
            ]
        )
        memsw_text = read(os.path.join(directory, "memory.memsw.limit_in_bytes"))
        memsw = _smallest([_number(memsw_text), _stat(stat, "hierarchical_memsw_limit")])
        swap = None if memory is None or memsw is None else memsw - memory
        return {
            "memory_bytes": memory,
            "swap_bytes": swap,
            "swap_accounted": memsw_text is not None,
        }
    memories, swaps, current = [], [], directory
    while True:
        memory_text = read(os.path.join(current, "memory.max"))
        if memory_text is not None:
            memories.append(_number(memory_text))
            swaps.append(_number(read(os.path.join(current, "memory.swap.max"))))
        if current in (stop, "/") or not current.startswith(stop):
            break
        current = os.path.dirname(current)
    return {"memory_bytes": _smallest(memories), "swap_bytes": _smallest(swaps)}


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="ascii") as handle:
            return handle.read()
    except OSError:
        return None


def read_own() -> dict[str, object]:
    """This process's memory limits, as an event body (``error`` when they cannot be read)."""
    proc_cgroup, mountinfo = _read("/proc/self/cgroup"), _read("/proc/self/mountinfo")
    found = cgroup_dirs(proc_cgroup or "", mountinfo or "")
    if found is None:
        return {"error": "no memory cgroup visible from inside the sandbox"}
    version, directory, path = found
    mount = next((point for _, point, fstype, _ in _mounts(mountinfo or "")
                  if fstype == "cgroup2"), "/")  # fmt: skip
    body: dict[str, object] = {"version": version, "cgroup": path}
    body.update(limits_from(version, directory, _read, stop=mount if version == 2 else "/"))
    return body


def record() -> None:
    """Emit ``sandbox_limits`` (the first process of the run that starts calls it:
    :mod:`harness._startup`)."""
    from harness._events import emit

    body: dict[str, object] = {"event": SANDBOX_LIMITS}
    try:
        body.update(read_own())
    except Exception as exc:
        body["error"] = f"{type(exc).__name__}: {exc}"
    with contextlib.suppress(Exception):
        emit(body, durable=True)
