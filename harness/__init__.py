"""Sandbox-side runtime of qualify: standard library only.

A family's E2E imports this module to mark phases, read its options and record parity cases.
Every call is a no-op outside a qualify run (no ``QUALIFY_RUN_DIR`` in the environment), so the
same test also runs under plain pytest.
"""

from __future__ import annotations

from harness._events import emit, record_case, sync_point
from harness._gpu import cuda_oom_guard  # stdlib only: torch is never imported here
from harness._options import option
from harness._phase import phase
from harness.contract import METRIC

__all__ = ["cuda_oom_guard", "emit", "metric", "option", "phase", "record_case", "sync_point"]


def metric(name: str, value: float, unit: str) -> None:
    """Record one named measurement (for A/B comparisons of runtime policies)."""
    emit({"event": METRIC, "name": name, "value": float(value), "unit": unit})
