"""What happened while the E2E ran, before any judgement."""

from __future__ import annotations

import dataclasses

from qualify.run.logs import LogStats
from qualify.run.monitor import MonitorResult
from qualify.sandbox.base import SandboxInfo


@dataclasses.dataclass(frozen=True)
class Execution:
    """What happened while the E2E ran (before any judgement)."""

    sandbox: SandboxInfo | None
    returncode: int | None
    pid: int | None
    """Host pid of the E2E's root process (None when it never started or has none on the host)."""
    timed_out: bool
    interrupted: str | None
    setup_error: str | None
    monitor: MonitorResult | None
    logs: dict[str, LogStats]
    started_wall: float
    started_mono: float
    ended_wall: float
    teardown_problems: tuple[str, ...]
