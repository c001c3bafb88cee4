"""Sandbox-side runtime of qualify: standard library only.

A family's E2E imports this module to mark phases, read its options and record parity cases.
Every call is a no-op outside a qualify run (no ``QUALIFY_RUN_DIR`` in the environment), so the
same test also runs under plain pytest.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from harness._events import emit, record_case, record_forced, sync_point
    from harness._gpu import cuda_oom_guard
    from harness._options import option
    from harness._phase import phase

__all__ = [
    "cuda_oom_guard",
    "emit",
    "metric",
    "option",
    "phase",
    "record_case",
    "record_forced",
    "sync_point",
]

_EXPORTS = {
    "emit": "harness._events",
    "record_case": "harness._events",
    "record_forced": "harness._events",
    "sync_point": "harness._events",
    "cuda_oom_guard": "harness._gpu",  # stdlib only: torch is never imported here
    "option": "harness._options",
    "phase": "harness._phase",
}
"""Loaded when first used: every Python process of the E2E imports this package at start-up
(``harness._startup``), most never use what it exports."""


def __getattr__(name: str) -> object:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'harness' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def metric(name: str, value: float, unit: str) -> None:
    """Record one named measurement (for A/B comparisons of runtime policies)."""
    from harness._events import emit
    from harness.contract import METRIC

    emit({"event": METRIC, "name": name, "value": float(value), "unit": unit})
