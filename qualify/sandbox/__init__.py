"""Sandbox backends behind one Protocol (``base.Sandbox``), and the one table that picks them.

A backend is a sub-package with a ``create(request) -> Sandbox`` function; adding one is one
sub-package and one entry in ``BACKENDS``. Sub-packages are imported only when chosen (the
docker SDK alone costs a tenth of a second).
"""

from __future__ import annotations

import importlib
import os
from pathlib import Path
from typing import TYPE_CHECKING

from qualify import records
from qualify.errors import SandboxError, UsageError
from qualify.plan.limits import Limits, limit_mismatches
from qualify.sandbox.base import Probe, Sandbox, SandboxInfo, SandboxRequest

if TYPE_CHECKING:
    from qualify.plan.docker import DockerOptions

BACKENDS: dict[str, str] = {
    "cgroup": "qualify.sandbox.cgroup",
    "docker": "qualify.sandbox.docker",
    "none": "qualify.sandbox.none",
}
"""Backend name -> the sub-package whose ``create(request)`` builds it."""
CHOICES = ("auto", *BACKENDS)
"""What ``--backend`` accepts: a backend, or ``auto`` (docker with ``--image``, else cgroup)."""
REASON_ENV = "QUALIFY_SANDBOX_REASON"
"""Why the caller chose this backend (``qualify doctor --plan`` sets it in the argv it prints,
for the GitHub Action): recorded as the first note of ``audit.sandbox``."""

__all__ = [
    "BACKENDS",
    "CHOICES",
    "REASON_ENV",
    "Limits",
    "Probe",
    "Sandbox",
    "SandboxInfo",
    "limit_mismatches",
    "select_sandbox",
]


def _create(backend: str, request: SandboxRequest) -> Sandbox:
    sandbox: Sandbox = importlib.import_module(BACKENDS[backend]).create(request)
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
    if backend not in CHOICES:
        raise UsageError(f"--backend {backend!r} is not valid (valid: {', '.join(CHOICES)})")
    chosen_by_caller = os.environ.get(REASON_ENV) or None
    request = SandboxRequest(run_id, docker, family_dir, harness_root, reason=chosen_by_caller)
    if backend == "auto" and docker is not None:
        given = f"--backend auto chose docker: --image {docker.image} was given"
        reason = chosen_by_caller or given
        return _create("docker", records.replace(request, reason=reason))
    if backend == "auto":
        backend = "cgroup"
    try:
        return _create(backend, request)
    except SandboxError as exc:
        raise UsageError(
            f"cannot cap memory with a cgroup here ({exc}): run as root or in a delegated "
            "cgroup subtree, pass --image IMAGE for --backend docker, or pass --backend none "
            "to run uncapped (`qualify doctor` says what works on this machine)"
        ) from None
