"""``qualify triage``: why a run died and what to change, from every signal it left."""

from qualify.evidence.evidence_line import Evidence
from qualify.triage.core import Sources, triage
from qualify.triage.model import Finding, Triage, TriageClass

__all__ = ["Evidence", "Finding", "Sources", "Triage", "TriageClass", "triage"]
