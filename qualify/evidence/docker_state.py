"""``docker inspect`` state (OOMKilled, ExitCode, Error) and ``docker events`` oom/die lines.

Real captures are rarely a whole JSON document: a ``State`` fragment pasted in an issue, the
head of an inspect output cut by the poster, the command line printed above it. So every input,
whole JSON or not, is read key by key with regexes, line by line: the evidence keeps exact
line numbers.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from qualify.evidence.evidence_line import Evidence
from qualify.records import frozen_record
from qualify.untrusted import open_regular

MAX_INSPECT_BYTES = 4 << 20

_OOM = re.compile(r'"OOMKilled"\s*:\s*(true|false)')
_EXIT = re.compile(r'"ExitCode"\s*:\s*(-?\d+)')
_ERROR = re.compile(r'"Error"\s*:\s*"((?:[^"\\]|\\.)*)"')
_EVENT_OOM = re.compile(r"\bcontainer oom ([0-9a-f]{12,64})")
_EVENT_DIE = re.compile(r"\bcontainer die ([0-9a-f]{12,64}) \(exitCode=(-?\d+)")
_MEMORY = re.compile(r'"Memory"\s*:\s*(\d+)')
"""``HostConfig.Memory``: the container's memory limit in bytes (0: none)."""


@frozen_record
class DockerState:
    """What docker recorded about a container's end."""

    oom_killed: bool | None = None
    exit_code: int | None = None
    error: str | None = None
    oom_event: bool = False
    """A ``container oom`` event (docker events) was seen."""
    memory_bytes: int | None = None
    """The container's memory limit (``HostConfig.Memory``) when one was set."""
    evidence: tuple[Evidence, ...] = ()

    @property
    def empty(self) -> bool:
        """True when nothing docker-like was found."""
        return self.oom_killed is None and self.exit_code is None and not self.oom_event


def parse_docker_state(text: str, source: str = "inspect") -> DockerState:
    """The state of the first container in ``text`` (JSON, a fragment, or docker events)."""
    fields: dict[str, Any] = {}
    evidence: list[Evidence] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if "oom_killed" not in fields and (match := _OOM.search(line)):
            fields["oom_killed"] = match.group(1) == "true"
            evidence.append(Evidence.of(source, number, line, "docker_oomkilled"))
        if "exit_code" not in fields and (match := _EXIT.search(line)):
            fields["exit_code"] = int(match.group(1))
            evidence.append(Evidence.of(source, number, line, "docker_exitcode"))
        if "error" not in fields and (match := _ERROR.search(line)):
            fields["error"] = match.group(1) or None
            if match.group(1):
                evidence.append(Evidence.of(source, number, line, "docker_error"))
        memory = _MEMORY.search(line) if "memory_bytes" not in fields else None
        if memory is not None and int(memory.group(1)) > 0:
            fields["memory_bytes"] = int(memory.group(1))
            evidence.append(Evidence.of(source, number, line, "docker_memory"))
        if _EVENT_OOM.search(line):
            fields["oom_event"] = True
            evidence.append(Evidence.of(source, number, line, "docker_event_oom"))
        if "exit_code" not in fields and (match := _EVENT_DIE.search(line)):
            fields["exit_code"] = int(match.group(2))
            evidence.append(Evidence.of(source, number, line, "docker_event_die"))
    return DockerState(**fields, evidence=tuple(evidence))


def read_docker_state(path: Path, source: str | None = None) -> tuple[DockerState, str | None]:
    """The state in ``path`` and a problem with the file (None when it read fine)."""
    try:
        with open_regular(path) as handle:
            data = handle.read(MAX_INSPECT_BYTES + 1)
    except OSError as exc:
        return DockerState(), f"cannot read {path}: {exc.strerror or exc}"
    if b"\x00" in data[:8192]:
        return DockerState(), f"{path} is binary, not docker inspect output"
    text = data[:MAX_INSPECT_BYTES].decode("utf-8", errors="replace")
    state = parse_docker_state(text, source or str(path))
    if state.empty:
        return state, f"{path}: no docker State (OOMKilled, ExitCode) or oom/die event found"
    return state, None
