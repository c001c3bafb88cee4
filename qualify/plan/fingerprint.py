"""Environment fingerprint for the audit: versions, kernel, cgroup; no secrets, no hostname."""

from __future__ import annotations

import functools
import os
import re
import sys
from collections.abc import Sequence
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

    Read once per process, while the E2E runs. Each is the ``Version:`` of the first
    distribution of that name on the import path, as ``importlib.metadata.version`` gives it,
    read from its ``METADATA`` directly: the importlib machinery (it imports ``email``, ``csv``
    and ``zipfile``) cost more than the reading."""
    return installed_versions(PACKAGES, sys.path)


def _normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


def installed_versions(names: Sequence[str], path: Sequence[str]) -> dict[str, str | None]:
    """``{name: version or None}``: the first ``*.dist-info`` (or ``*.egg-info``) of each
    name found along ``path``, its metadata's ``Version:`` line."""
    wanted: dict[str, list[str]] = {}
    for name in names:
        wanted.setdefault(_normalized(name), []).append(name)
    versions: dict[str, str | None] = dict.fromkeys(names)
    for entry in path:
        try:
            found = os.listdir(entry or ".")
        except OSError:
            continue
        for directory in found:
            stem, dot, kind = directory.rpartition(".")
            if not dot or kind not in ("dist-info", "egg-info"):
                continue
            spelled = wanted.get(_normalized(stem.partition("-")[0]), [])
            if not spelled or versions[spelled[0]] is not None:
                continue
            metadata = "METADATA" if kind == "dist-info" else "PKG-INFO"
            version = _version_of(os.path.join(entry or ".", directory, metadata))
            if version is None and kind == "egg-info":  # a file itself, not a directory
                version = _version_of(os.path.join(entry or ".", directory))
            for name in spelled:
                versions[name] = version
        if all(version is not None for version in versions.values()):
            break
    return versions


def _version_of(metadata: str) -> str | None:
    try:
        with open(metadata, encoding="utf-8", errors="replace") as handle:
            for line in handle:
                if line.startswith("Version:"):
                    return line[len("Version:") :].strip()
                if not line.strip():  # the headers end at the first empty line
                    return None
    except OSError:
        return None
    return None


_IMPLEMENTATIONS = {"cpython": "CPython", "pypy": "PyPy", "ironpython": "IronPython"}
"""``platform.python_implementation()``'s names (importing ``platform`` for them costs more than
the rest of the fingerprint)."""


def fingerprint(cgroup_version: int | None, backend: str) -> dict[str, Any]:
    """The environment of the host that ran qualify (``os.uname()``: what ``platform.system``,
    ``release`` and ``machine`` read)."""
    uname = os.uname()
    return {
        "qualify": qualify.__version__,
        "python": sys.version.split()[0],  # platform.python_version(), without platform
        "python_implementation": _IMPLEMENTATIONS.get(
            sys.implementation.name, sys.implementation.name
        ),
        "kernel": uname.release,
        "os": uname.sysname,
        "machine": uname.machine,
        "cpus": os.cpu_count(),
        "memory_total_bytes": os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"),
        "cgroup_version": cgroup_version,
        "backend": backend,
        "packages": dict(package_versions()),
        "github_actions": os.environ.get("GITHUB_ACTIONS") == "true",
    }
