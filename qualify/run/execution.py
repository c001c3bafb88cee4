"""What happened while the E2E ran, before any judgement."""

from __future__ import annotations

from typing import Any

from qualify import records
from qualify.records import frozen_record
from qualify.run.logs import LogStats
from qualify.run.monitor import MonitorResult
from qualify.sandbox.base import SandboxInfo


@frozen_record
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
    signal: str | None = None
    """The signal that ended the E2E's root process (None: it exited, with ``returncode``)."""
    killed_at_end: tuple[tuple[int, str], ...] = ()
    """(pid, name) of processes still running when the run ended, the first few: qualify
    killed them (daemons, double forks, what outlived the E2E's root)."""
    killed_at_end_count: int = 0
    teardown: Any = records.field(default=None, compare=False, repr=False)
    """``qualify.run.execute.Teardown`` still under way when the execution is returned (its
    ``wait()`` gives its problems): the reports need not wait for the kernel to tear down
    thousands of killed processes."""
