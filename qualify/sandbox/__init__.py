"""Sandbox backends behind one Protocol, and the choice between them."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from qualify.errors import SandboxError, UsageError
from qualify.plan.limits import Limits, limit_mismatches
from qualify.sandbox.base import Probe, Sandbox, SandboxInfo
from qualify.sandbox.cgroup.layout import current_layout, v2_mount_point

if TYPE_CHECKING:
    from qualify.plan.docker import DockerOptions

BACKENDS = ("auto", "cgroup", "docker", "none")

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
        from qualify.sandbox.cgroup.v1 import CgroupV1Sandbox

        pids = layout.pids_dir if layout.pids_dir and os.access(layout.pids_dir, os.W_OK) else None
        return CgroupV1Sandbox(layout.memory_dir, layout.memory_path, pids, run_id)
    from qualify.sandbox.cgroup.v2 import CgroupV2Sandbox

    mount = v2_mount_point(Path("/proc/self/mountinfo").read_bytes())
    return CgroupV2Sandbox(layout.memory_dir, layout.memory_path, run_id, mount)


def _docker_sandbox(
    run_id: str,
    docker: DockerOptions | None,
    family_dir: Path | None,
    harness_root: Path | None,
    reason: str | None,
) -> Sandbox:
    from qualify.sandbox.docker.backend import DockerSandbox, check_image, connect

    if docker is None or family_dir is None or harness_root is None:
        raise UsageError("--backend docker needs --image IMAGE")
    client = connect()
    check_image(client, docker.image)
    sandbox = DockerSandbox(client, docker, run_id, family_dir, harness_root)
    sandbox.reason = reason
    return sandbox


def select_sandbox(
    backend: str,
    run_id: str,
    docker: DockerOptions | None = None,
    family_dir: Path | None = None,
    harness_root: Path | None = None,
) -> Sandbox:
    """The sandbox for ``backend``; no silent uncapped fallback.

    ``auto`` picks docker when ``--image`` was given (the family asked for its image), else a
    cgroup when this process can create one; when it cannot, the one-line UsageError says
    what to do instead. The engine and the image are checked here, before any run directory.
    """
    if backend == "none":
        from qualify.sandbox.none.backend import NoSandbox

        return NoSandbox()
    if backend not in BACKENDS:
        raise UsageError(f"--backend {backend!r} is not valid (valid: {', '.join(BACKENDS)})")
    if backend == "docker":
        return _docker_sandbox(run_id, docker, family_dir, harness_root, None)
    if backend == "auto" and docker is not None:
        reason = f"--backend auto chose docker: --image {docker.image} was given"
        return _docker_sandbox(run_id, docker, family_dir, harness_root, reason)
    try:
        return _cgroup_sandbox(run_id)
    except SandboxError as exc:
        raise UsageError(
            f"cannot cap memory with a cgroup here ({exc}): run as root or in a delegated "
            "cgroup subtree, pass --image IMAGE for --backend docker, or pass --backend none "
            "to run uncapped"
        ) from None
