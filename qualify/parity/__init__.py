"""Token parity: compare an engine's recorded generations with its FP32 eager reference.

``compare_files`` reads the parity file (one JSON object per recorded case and side), pairs
native with reference by case id, finds each case's first divergence, classifies it from the
reference's own top-k log-probabilities, and applies the corpus gate (``ParityGate``, the
family.toml ``[parity]`` table).
"""

from __future__ import annotations

from qualify.parity.case import CONTEXT_TOKENS, classify, compare_case, first_difference
from qualify.parity.corpus import compare_files
from qualify.parity.junit import GATE_CASE, junit_cases
from qualify.parity.kinds import DivergenceKind, Side
from qualify.parity.records import ParityInputError
from qualify.parity.results import (
    CaseResult,
    ParityReport,
    RecordLocation,
    SideSummary,
    TokenRef,
    TopKEntry,
)
from qualify.plan.parity_gate import ParityConfigError, ParityGate

__all__ = [
    "CONTEXT_TOKENS",
    "GATE_CASE",
    "CaseResult",
    "DivergenceKind",
    "ParityConfigError",
    "ParityGate",
    "ParityInputError",
    "ParityReport",
    "RecordLocation",
    "Side",
    "SideSummary",
    "TokenRef",
    "TopKEntry",
    "classify",
    "compare_case",
    "compare_files",
    "first_difference",
    "junit_cases",
]
