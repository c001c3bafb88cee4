"""After a cell's job step: what a qualify killed with its step left behind, cleaned up.

Slurm ends a step by killing every process in it when its task dies (an OOM kill, a cancel,
the time limit): a qualify killed that way leaves its run's cgroups inside the step's, and
Slurm, which cannot remove a cgroup that still has children, then leaves the step's cgroups
on the node for good (``job_<id>/step_0/task_0``). The cell's batch script runs this after
``srun``: every dead run on the node is taken over as the next ``qualify run`` would (what is
left of it killed, its cgroups removed, its reports completed as ERROR), then this job's
finished steps' empty cgroups are removed, deepest first. A cgroup that still holds a process
is never touched (the kernel refuses to remove it).

    python -m qualify.schedule.aftercare     # inside a Slurm job (SLURM_JOB_ID)
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
from collections.abc import Sequence
from pathlib import Path

from qualify.sandbox.cgroup.fs import Mount, parse_mountinfo, parse_proc_cgroup

_SLURM_DIR = re.compile(r"^(?:step_[A-Za-z0-9_]+|task_\d+|task_special|qualify-[A-Za-z0-9_.-]+)$")


def _mount_of(controllers: Sequence[str], mounts: Sequence[Mount], v2: bool) -> Mount | None:
    for mount in mounts:
        if v2 and mount.fstype == "cgroup2":
            return mount
        if not v2 and mount.fstype == "cgroup" and set(controllers) <= set(mount.super_options):
            return mount
    return None


def job_dirs(job_id: str, proc_cgroup: bytes, mountinfo: bytes) -> list[tuple[Path, Path]]:
    """(the job's cgroup directory, this process's own) in every hierarchy where this
    process sits below ``job_<job_id>``."""
    marker = f"/job_{job_id}/"
    found = []
    mounts = parse_mountinfo(mountinfo)
    for entry in parse_proc_cgroup(proc_cgroup):
        path = entry.path.rstrip("/") + "/"
        where = path.find(marker)
        mount = _mount_of(entry.controllers, mounts, entry.hierarchy_id == 0)
        if where < 0 or mount is None or "/.." in path:
            continue
        relative = path if mount.root == "/" else path.removeprefix(mount.root)
        base = Path(mount.mount_point)
        job = base / relative[: relative.find(marker) + len(marker) - 1].lstrip("/")
        found.append((job, base / relative.lstrip("/")))
    return list(dict.fromkeys(found))


def remove_finished(job: Path, own: Path) -> list[Path]:
    """Empty cgroups below ``job`` (steps, tasks, qualify runs), deepest first; never one on
    the way to this process's own. Returns those removed."""
    removed = []
    for directory, _subdirs, _files in os.walk(job, topdown=False):
        path = Path(directory)
        if path == job or own.is_relative_to(path):
            continue
        if not _SLURM_DIR.match(path.name):
            continue
        with contextlib.suppress(OSError):
            path.rmdir()
            removed.append(path)
    return removed


def main(argv: Sequence[str] | None = None) -> int:
    """Take over dead runs, then remove this job's finished steps' empty cgroups."""
    del argv
    from qualify.report.abandoned import take_over_one
    from qualify.run.registry import take_over_dead_runs

    job_id = os.environ.get("SLURM_JOB_ID", "")
    for abandoned in take_over_dead_runs():
        sys.stdout.write(take_over_one(abandoned, f"{job_id}.batch", "qualify-submit"))
    if not job_id.isdigit():
        return 0
    try:
        proc_cgroup = Path("/proc/self/cgroup").read_bytes()
        mountinfo = Path("/proc/self/mountinfo").read_bytes()
    except OSError:
        return 0
    for job, own in job_dirs(job_id, proc_cgroup, mountinfo):
        for path in remove_finished(job, own):
            print(f"qualify-submit: removed the finished step's empty cgroup {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
