"""A Kubernetes pod's memory limit, from ``kubectl describe pod`` output or the pod as YAML or
JSON: the limit an OOMKilled container was held to, for the remedy's numbers."""

from __future__ import annotations

import re

from qualify.evidence.evidence_line import Evidence

_QUANTITY = re.compile(r"^(\d+(?:\.\d+)?)(Ki|Mi|Gi|Ti|k|K|M|G|T|e\d+)?$")
_UNITS = {
    None: 1, "Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30, "Ti": 1 << 40,
    "k": 1000, "K": 1000, "M": 1000**2, "G": 1000**3, "T": 1000**4,
}  # fmt: skip
_LIMITS = re.compile(r'^(\s*)"?[Ll]imits"?\s*:\s*(\{.*)?$')
_MEMORY = re.compile(r'^\s*"?memory"?\s*:\s*"?([\w.]+)"?,?\s*$')
_INLINE = re.compile(r'"memory"\s*:\s*"([\w.]+)"')


def quantity_bytes(text: str) -> int | None:
    """A Kubernetes quantity (``4Gi``, ``512Mi``, ``4G``, ``4294967296``) in bytes."""
    match = _QUANTITY.match(text.strip())
    if match is None:
        return None
    unit = match.group(2)
    if unit and unit.startswith("e"):
        return int(float(match.group(1)) * 10 ** int(unit[1:]))
    return int(float(match.group(1)) * _UNITS[unit])


def pod_memory_limit(text: str, source: str) -> tuple[Evidence, int] | None:
    """The first container memory limit in ``text``: a ``memory:`` line indented under a
    ``Limits:``/``limits:`` line (describe, YAML, JSON spread over lines), or
    ``"limits": {"memory": "4Gi"}`` on one line."""
    lines = text.splitlines()
    for number, line in enumerate(lines, start=1):
        header = _LIMITS.match(line)
        if header is None:
            continue
        if header.group(2) and (inline := _INLINE.search(header.group(2))):
            size = quantity_bytes(inline.group(1))
            if size:
                return Evidence.of(source, number, line, "pod_memory_limit"), size
        indent = len(header.group(1))
        for offset, below in enumerate(lines[number : number + 8], start=number + 1):
            if below.strip() and len(below) - len(below.lstrip()) <= indent:
                break  # the next key at the same level: the limits are over
            match = _MEMORY.match(below)
            if match and (size := quantity_bytes(match.group(1))):
                return Evidence.of(source, offset, below, "pod_memory_limit"), size
    return None


_PLATFORM = re.compile(
    r"\b(?:oomkilled|containers?|pods?|kubernetes|k8s|kubelet|kubectl|docker\w*|podman|cgroups?"
    r"|memcg|cloud ?foundry|app instance|dynos?|slurm\w*|sbatch|srun|sacct|yarn|ecs|fargate"
    r"|aws lambda|cloud run|nomad|mesos|openshift|helm)\b",
    re.IGNORECASE,
)
"""A platform that runs work under a memory limit of its own: a container, a pod, a job of a
batch scheduler, a PaaS's instance or dyno, a cgroup."""


def platform_named(text: str, source: str) -> Evidence | None:
    """The first line of ``text`` (a file's head) that names a platform running work under a
    limit of its own, as evidence; None when none does."""
    match = _PLATFORM.search(text)
    if match is None:
        return None
    start = text.rfind("\n", 0, match.start()) + 1
    stop = text.find("\n", match.end())
    line = text.count("\n", 0, start) + 1
    return Evidence.of(source, line, text[start : stop if stop >= 0 else len(text)], "platform")
