"""Token parity: compare an engine's recorded generations with its FP32 eager reference.

``compare_files`` reads the parity file (one JSON object per recorded case and side), pairs
native with reference by case id, finds each case's first divergence, classifies it from the
reference's own top-k log-probabilities, and applies the corpus gate (``ParityGate``, the
family.toml ``[parity]`` table).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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

_WHERE = {
    "CONTEXT_TOKENS": "qualify.parity.case",
    "classify": "qualify.parity.case",
    "compare_case": "qualify.parity.case",
    "first_difference": "qualify.parity.case",
    "compare_files": "qualify.parity.corpus",
    "GATE_CASE": "qualify.parity.junit",
    "junit_cases": "qualify.parity.junit",
    "DivergenceKind": "qualify.parity.kinds",
    "Side": "qualify.parity.kinds",
    "ParityInputError": "qualify.parity.records",
    "CaseResult": "qualify.parity.results",
    "ParityReport": "qualify.parity.results",
    "RecordLocation": "qualify.parity.results",
    "SideSummary": "qualify.parity.results",
    "TokenRef": "qualify.parity.results",
    "TopKEntry": "qualify.parity.results",
    "ParityConfigError": "qualify.plan.parity_gate",
    "ParityGate": "qualify.plan.parity_gate",
}
"""Where each name of the package is defined: imported at its first use (PEP 562), so that a
module that needs one small part (``qualify.parity.noise_text`` for a report's wording, the gate
of a family without parity) does not import the comparison, its statistics and its XML."""


def __getattr__(name: str) -> Any:
    where = _WHERE.get(name)
    if where is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(where), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_WHERE})


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
