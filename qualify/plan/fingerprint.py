"""Environment fingerprint for the audit: versions, kernel, cgroup; no secrets, no hostname."""

from __future__ import annotations

import functools
import importlib.metadata
import os
import platform
from typing import Any

import qualify

PACKAGES = (
    "torch",
    "transformers",
    "tokenizers",
    "safetensors",
    "pytest",
    "psutil",
    "rich",
    "docker",
    "nvidia-ml-py",
)


@functools.cache
def package_versions() -> dict[str, str | None]:
    """Installed versions of the packages that shape a run (None when absent).

    Read once per process (each name a scan of the import path, a seventieth of a second for
    the nine): ``qualify run`` reads them while the E2E runs, not after it."""
    versions: dict[str, str | None] = {}
    for name in PACKAGES:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def fingerprint(cgroup_version: int | None, backend: str) -> dict[str, Any]:
    """The environment of the host that ran qualify."""
    return {
        "qualify": qualify.__version__,
        "python": platform.python_version(),
        "python_implementation": platform.python_implementation(),
        "kernel": platform.release(),
        "os": platform.system(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "memory_total_bytes": os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"),
        "cgroup_version": cgroup_version,
        "backend": backend,
        "packages": dict(package_versions()),
        "github_actions": os.environ.get("GITHUB_ACTIONS") == "true",
    }
