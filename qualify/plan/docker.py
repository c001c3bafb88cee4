"""The container a run asked for (``--image`` and its flags), validated before anything starts."""

from __future__ import annotations

import glob
from typing import Any

from qualify.errors import UsageError
from qualify.records import frozen_record

DEFAULT_SHM = 64 << 20


@frozen_record
class DockerOptions:
    """What ``qualify run --backend docker`` was asked for (validated by ``build_spec``)."""

    image: str
    shm_bytes: int = DEFAULT_SHM
    """Size of /dev/shm; tmpfs pages are charged to the memory cap."""
    network: str = "none"
    gpus: str | None = None
    """``all``, a count, or comma-separated device ids (as ``docker run --gpus``)."""
    mount_host_python: bool = False
    """Bind the host's /usr and the interpreter qualify runs under read-only (for images
    without their own Python, e.g. the test suite's empty image)."""
    mps_pipe_directory: str | None = None
    """The host's MPS pipe directory when the GPU budget is an MPS limit: mounted at the same
    path with the host's IPC namespace, as MPS clients in containers need."""


def host_gpu_count() -> int:
    """NVIDIA devices of this host (/dev/nvidia0, /dev/nvidia1, ...)."""
    return len(glob.glob("/dev/nvidia[0-9]*"))


def device_requests(gpus: str | None, available: int) -> list[dict[str, Any]]:
    """``docker run --gpus`` as DeviceRequests; UsageError when the host cannot satisfy it."""
    if gpus is None:
        return []
    if available == 0:
        raise UsageError(f"--gpus {gpus}: this host has no GPU (no /dev/nvidia*)")
    request: dict[str, Any] = {"driver": "nvidia", "capabilities": [["gpu"]]}
    if gpus == "all":
        return [{**request, "count": -1}]
    if gpus.isdigit() and "," not in gpus:
        count = int(gpus)
        if not 1 <= count <= available:
            raise UsageError(f"--gpus {gpus}: valid is all or 1..{available}")
        return [{**request, "count": count}]
    ids = [part.strip() for part in gpus.split(",")]
    if not all(ids):
        raise UsageError(f"--gpus {gpus!r} is not valid (valid: all, a count, or ids like 0,1)")
    return [{**request, "device_ids": ids}]
