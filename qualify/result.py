"""RunResult: the one object every writer (JUnit, audit, summary) reads."""

from __future__ import annotations

import dataclasses
from typing import Any

from qualify.logs import LogStats
from qualify.monitor import MonitorResult
from qualify.sandbox.base import SandboxInfo
from qualify.spec import RunSpec
from qualify.testcases import JUnitCase, RunProgress
from qualify.verdict import Verdict


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


@dataclasses.dataclass(frozen=True)
class RunResult:
    """A finished run, judged."""

    spec: RunSpec
    execution: Execution
    verdict: Verdict
    reason: str
    progress: RunProgress
    testcases: tuple[JUnitCase, ...]
    parity: Any
    """qualify.parity.ParityReport, or None when nothing was recorded and no gate applies."""
    parity_error: str | None
    environment: dict[str, Any]
    phase_at_death: str | None
    """The innermost harness phase still open when the E2E ended (None if it ended cleanly)."""
