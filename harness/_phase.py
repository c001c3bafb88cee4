"""``harness.phase``: named phases whose boundaries the host measures exactly."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from harness._events import sync_point
from harness.contract import PHASE_END, PHASE_START


@contextlib.contextmanager
def phase(name: str) -> Iterator[None]:
    """Mark a phase of the E2E (``build:prefill``, ``native``...); phases may nest.

    Start and end are durable boundary events: the host attributes the memory peak between two
    boundaries to the phases open in that window. An exception leaving the phase is recorded.
    """
    if not name or any(char.isspace() for char in name):
        raise ValueError(f"phase name must be non-empty without whitespace, not {name!r}")
    sync_point({"event": PHASE_START, "phase": name})
    error: str | None = None
    try:
        yield
    except BaseException as exc:
        error = type(exc).__name__
        raise
    finally:
        sync_point({"event": PHASE_END, "phase": name, "error": error})
