"""The triage result: one class Enum, evidence lines, findings and remedies."""

from __future__ import annotations

import enum
from typing import Any

from qualify import records
from qualify.evidence.evidence_line import Evidence
from qualify.records import frozen_record
from qualify.verdict import EXIT_ERROR, EXIT_FAILED, EXIT_PASSED, EXIT_RESOURCE


class TriageClass(enum.Enum):
    """Why a run ended, as triage decides it from every signal it was given."""

    PASSED = "PASSED"
    CGROUP_OOM = "CGROUP_OOM"
    GLOBAL_OOM = "GLOBAL_OOM"
    CUDA_OOM_CAPACITY = "CUDA_OOM_CAPACITY"
    CUDA_OOM_FRAGMENTATION = "CUDA_OOM_FRAGMENTATION"
    CUDA_OOM_BUDGET = "CUDA_OOM_BUDGET"
    HOST_ALLOC_FAILED = "HOST_ALLOC_FAILED"
    """A host-memory allocation refused and reported by the program, nothing killed."""
    EXTERNAL_KILL = "EXTERNAL_KILL"
    TIMEOUT = "TIMEOUT"
    TEST_FAILURE = "TEST_FAILURE"
    PARITY_FAILURE = "PARITY_FAILURE"
    INFRA_ERROR = "INFRA_ERROR"
    UNKNOWN = "UNKNOWN"

    @property
    def exit_code(self) -> int:
        """0 passed, 1 test/parity, 3 resource (memory, time, a kill), 4 infra or unknown."""
        if self is TriageClass.PASSED:
            return EXIT_PASSED
        if self in (TriageClass.TEST_FAILURE, TriageClass.PARITY_FAILURE):
            return EXIT_FAILED
        if self in (TriageClass.INFRA_ERROR, TriageClass.UNKNOWN):
            return EXIT_ERROR
        return EXIT_RESOURCE


@frozen_record
class Finding:
    """One statement of the triage with the evidence that supports it."""

    title: str
    evidence: tuple[Evidence, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """JSON form."""
        return {"title": self.title, "evidence": [e.to_dict() for e in self.evidence]}


@frozen_record
class Triage:
    """The whole answer: class, why, evidence, attribution, remedies, what was missing."""

    triage_class: TriageClass
    summary: str
    decided_by: tuple[Evidence, ...]
    confidence: str = "high"
    """"high" (the evidence states the cause), "medium" (inferred from a message that lacks
    figures, or failure lines without a summary), "low" (a report cut short, a crash)."""
    findings: tuple[Finding, ...] = ()
    conflicts: tuple[Finding, ...] = ()
    warnings: tuple[str, ...] = ()
    remedies: tuple[str, ...] = ()
    missing: tuple[str, ...] = ()
    inputs: tuple[dict[str, Any], ...] = ()
    attribution: dict[str, Any] = records.field(default_factory=dict)
    sparkline: dict[str, Any] | None = None

    @property
    def exit_code(self) -> int:
        """The exit code of ``qualify triage`` for this class."""
        return self.triage_class.exit_code
