"""RunResult: the one object every writer (JUnit, audit, summary) reads."""

from __future__ import annotations

from typing import Any

from qualify import records
from qualify.evidence.junit import JUnitCase
from qualify.judge.gpu import GpuEvidence
from qualify.judge.progress import RunProgress
from qualify.plan.spec import RunSpec
from qualify.records import frozen_record
from qualify.run.execution import Execution
from qualify.verdict import Verdict


@frozen_record
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
    gpu: GpuEvidence = records.field(default_factory=GpuEvidence)
    """The harness's GPU events (budgets, allocator, CUDA OOMs) and a CUDA OOM in stderr."""
    inside: dict[str, Any] | None = None
    """The limits the family's first Python process read from inside the sandbox."""
    nvml: dict[str, Any] | None = None
    """The NVML sampler's peaks (None when no sampler ran)."""
    junit_disagreements: tuple[str, ...] = ()
    """Where pytest's JUnit and the streamed events disagreed (the events' cases were used)."""
    host_memory_bytes: int | None = None
    """The host's RAM."""
    pytest_unseen: bool = False
    """pytest ran out of the plugin's reach (``judgement.pytest_ran_unseen``)."""
    base: Any = None
    """``qualify.rundir.audit.BaseRunRecord``: this run against its base (``--base-run``)."""
