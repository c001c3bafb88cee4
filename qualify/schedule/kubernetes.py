"""Kubernetes: one ``batch/v1`` Job manifest per cell, and an index of them.

Each Job runs ``qualify run`` for its cell in one container whose memory request equals its
limit (the cap plus qualify's overhead: a pod that could be scheduled on a smaller share of a
node than it may use would make the cap a lie), with the GPUs as ``nvidia.com/gpu``, a
memory-backed ``/dev/shm`` of ``--shm`` (its pages are charged to the writer's cgroup: to the
E2E's cap), no retries (``backoffLimit: 0``: a second attempt would hide the first one's
death) and the time limit as ``activeDeadlineSeconds``. qualify creates its cap as a cgroup
inside the container's, which needs a writable cgroup filesystem: the container is privileged.
No cluster is reachable where qualify is tested: the manifests are validated against the
official Kubernetes client's models, not applied.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from qualify import __version__
from qualify.schedule.cells import Cell, size_arg

GROUP = "qualify.dev"
REPORTS_MOUNT = "/reports"
JOBS_DIR = "jobs"
_LABEL_VALUE = re.compile(r"^(?:[A-Za-z0-9](?:[-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$")


def quantity(size: int) -> str:
    """Bytes as a Kubernetes quantity: whole ``Mi`` when exact, else plain bytes."""
    return f"{size >> 20}Mi" if size % (1 << 20) == 0 else str(size)


def label_value(text: str) -> str:
    """``text`` as a label value (at most 63 characters, alphanumeric at both ends)."""
    if _LABEL_VALUE.match(text):
        return text
    cleaned = re.sub(r"[^-A-Za-z0-9_.]", "-", text)[:54].strip("-_.")
    return f"{cleaned}-{hashlib.sha256(text.encode()).hexdigest()[:8]}".strip("-")


def job_name(head: str, cell: Cell) -> str:
    """A DNS-1123 name: ``qualify-<head[:8]>-<family>-<profile>``, at most 63 characters."""
    base = f"qualify-{head[:8]}-{cell.family}-{cell.profile}".lower()
    name = re.sub(r"[^a-z0-9-]+", "-", base).strip("-")
    if len(name) <= 63 and name == base:
        return name
    digest = hashlib.sha256(base.encode()).hexdigest()[:8]
    return f"{name[:54].strip('-')}-{digest}"


def job_manifest(
    *,
    cell: Cell,
    head: str,
    image: str,
    overhead_bytes: int,
    shm_bytes: int,
    deadline_s: int,
    pvc: str | None,
) -> dict[str, Any]:
    """The Job of one cell."""
    memory = quantity(cell.request_bytes(overhead_bytes))
    limits: dict[str, str] = {"memory": memory}
    if cell.gpus:
        limits["nvidia.com/gpu"] = str(cell.gpus)
    labels = {
        "app.kubernetes.io/name": "qualify",
        "app.kubernetes.io/managed-by": f"qualify-{__version__}",
        f"{GROUP}/head": head,
        f"{GROUP}/family": label_value(cell.family),
        f"{GROUP}/profile": label_value(cell.profile),
    }
    annotations = {
        f"{GROUP}/cell": cell.name,
        f"{GROUP}/cap-bytes": str(cell.cap_bytes),
        f"{GROUP}/overhead-bytes": str(overhead_bytes),
    }
    command = ["qualify", "run", "--family", cell.family, "--profile", cell.profile]
    command += ["--mem", size_arg(cell.cap_bytes), "--out", REPORTS_MOUNT, "--backend", "cgroup"]
    if cell.shortened:
        command += ["--timeout", f"{int(cell.timeout_s)}s"]
    reports: dict[str, Any] = (
        {"name": "reports", "persistentVolumeClaim": {"claimName": pvc}}
        if pvc
        else {"name": "reports", "emptyDir": {}}
    )
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": job_name(head, cell), "labels": labels, "annotations": annotations},
        "spec": {
            "backoffLimit": 0,
            "activeDeadlineSeconds": int(deadline_s),
            "template": {
                "metadata": {"labels": labels, "annotations": annotations},
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [
                        {
                            "name": "qualify",
                            "image": image,
                            "command": command,
                            "resources": {"requests": {"memory": memory}, "limits": limits},
                            "securityContext": {"privileged": True},
                            "volumeMounts": [
                                {"name": "dshm", "mountPath": "/dev/shm"},
                                {"name": "reports", "mountPath": REPORTS_MOUNT},
                            ],
                        }
                    ],
                    "volumes": [
                        {
                            "name": "dshm",
                            "emptyDir": {"medium": "Memory", "sizeLimit": quantity(shm_bytes)},
                        },
                        reports,
                    ],
                },
            },
        },
    }


def manifests(
    *,
    cells: Sequence[Cell],
    head: str,
    image: str,
    overhead_bytes: int,
    shm_bytes: int,
    deadline_s: int,
    pvc: str | None,
) -> list[tuple[Path, dict[str, Any]]]:
    """(relative path, manifest) of every cell: ``jobs/<job name>.json``."""
    found = []
    for cell in cells:
        manifest = job_manifest(
            cell=cell,
            head=head,
            image=image,
            overhead_bytes=overhead_bytes,
            shm_bytes=shm_bytes,
            deadline_s=deadline_s,
            pvc=pvc,
        )
        found.append((Path(JOBS_DIR) / f"{manifest['metadata']['name']}.json", manifest))
    return found


def index(
    *,
    head: str,
    image: str,
    cells: Sequence[Cell],
    written: Sequence[tuple[Path, dict[str, Any]]],
    overhead_bytes: int,
    deadline_s: int,
    pvc: str | None,
) -> dict[str, Any]:
    """``index.json`` next to ``jobs/``: what was emitted, cell by cell."""
    return {
        "schema_version": 1,
        "engine": "kubernetes",
        "head": head,
        "image": image,
        "overhead_bytes": overhead_bytes,
        "active_deadline_seconds": deadline_s,
        "reports": f"persistentVolumeClaim {pvc}" if pvc else "emptyDir (lost with the pod)",
        "apply": f"kubectl apply -f {JOBS_DIR}/",
        "cells": [
            {
                "cell": cell.name,
                "family": cell.family,
                "profile": cell.profile,
                "cap_bytes": cell.cap_bytes,
                "memory": manifest["spec"]["template"]["spec"]["containers"][0]["resources"][
                    "limits"
                ]["memory"],
                "gpus": cell.gpus,
                "job": manifest["metadata"]["name"],
                "manifest": str(path),
            }
            for cell, (path, manifest) in zip(cells, written, strict=True)
        ],
    }
