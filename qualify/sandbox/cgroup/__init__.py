"""The cgroup backend: a fresh memory (and pids) cgroup nested under qualify's own, v1 or v2."""

from __future__ import annotations

import os
from pathlib import Path

from qualify.errors import SandboxError
from qualify.sandbox.base import Sandbox, SandboxRequest
from qualify.sandbox.cgroup.layout import current_layout, v2_mount_point


def create(request: SandboxRequest) -> Sandbox:
    """A cgroup under this process's own, in the hierarchy that holds the memory controller;
    SandboxError when there is none this process may write."""
    layout = current_layout()
    if layout.version is None or layout.memory_dir is None or layout.memory_path is None:
        raise SandboxError("no cgroup memory controller found")
    if layout.read_only:
        raise SandboxError(f"the cgroup filesystem holding {layout.memory_path} is read-only")
    if not os.access(layout.memory_dir, os.W_OK):
        raise SandboxError(f"the cgroup {layout.memory_path} is not writable")
    if layout.version == 1:
        from qualify.sandbox.cgroup.v1 import CgroupV1Sandbox

        pids = layout.pids_dir if layout.pids_dir and os.access(layout.pids_dir, os.W_OK) else None
        v1 = CgroupV1Sandbox(layout.memory_dir, layout.memory_path, pids, request.run_id)
        v1.reason = request.reason
        return v1
    from qualify.sandbox.cgroup.v2 import CgroupV2Sandbox

    mount = v2_mount_point(Path("/proc/self/mountinfo").read_bytes())
    return CgroupV2Sandbox(
        layout.memory_dir, layout.memory_path, request.run_id, mount, reason=request.reason
    )
