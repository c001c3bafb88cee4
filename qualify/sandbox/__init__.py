"""Sandbox backends behind one Protocol, and the choice between them."""

from __future__ import annotations

import os

from qualify.errors import SandboxError, UsageError
from qualify.sandbox.base import Limits, Probe, Sandbox, SandboxInfo, limit_mismatches
from qualify.sandbox.layout import current_layout, v2_mount_point

BACKENDS = ("auto", "cgroup", "none")

__all__ = [
    "BACKENDS",
    "Limits",
    "Probe",
    "Sandbox",
    "SandboxInfo",
    "limit_mismatches",
    "select_sandbox",
]


def _cgroup_sandbox(run_id: str) -> Sandbox:
    layout = current_layout()
    if layout.version is None or layout.memory_dir is None or layout.memory_path is None:
        raise SandboxError("no cgroup memory controller found")
    if not os.access(layout.memory_dir, os.W_OK):
        raise SandboxError(f"the cgroup {layout.memory_path} is not writable")
    if layout.version == 1:
        from qualify.sandbox.cgroup_v1 import CgroupV1Sandbox

        pids = layout.pids_dir if layout.pids_dir and os.access(layout.pids_dir, os.W_OK) else None
        return CgroupV1Sandbox(layout.memory_dir, layout.memory_path, pids, run_id)
    from pathlib import Path

    from qualify.sandbox.cgroup_v2 import CgroupV2Sandbox

    mount = v2_mount_point(Path("/proc/self/mountinfo").read_bytes())
    return CgroupV2Sandbox(layout.memory_dir, layout.memory_path, run_id, mount)


def select_sandbox(backend: str, run_id: str) -> Sandbox:
    """The sandbox for ``backend``; no silent uncapped fallback.

    ``auto`` picks a cgroup when this process can create one; when it cannot, the one-line
    UsageError says what to do instead.
    """
    if backend == "none":
        from qualify.sandbox.none import NoSandbox

        return NoSandbox()
    if backend not in ("auto", "cgroup"):
        raise UsageError(f"--backend {backend!r} is not valid (valid: {', '.join(BACKENDS)})")
    try:
        return _cgroup_sandbox(run_id)
    except SandboxError as exc:
        raise UsageError(
            f"cannot cap memory with a cgroup here ({exc}): run as root or in a delegated "
            "cgroup subtree, or pass --backend none to run uncapped"
        ) from None
