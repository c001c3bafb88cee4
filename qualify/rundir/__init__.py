"""Stage 4, rundir: the run directory, its files and the typed audit, read and written here.

File names and event kinds are those of ``harness.contract`` (shared with the sandbox); the
audit is ``qualify.rundir.audit.Audit``, with its JSON Schema in ``audit.schema.json``.

The names below are imported on first use: ``qualify run`` starts its E2E before it needs the
audit's twenty dataclasses (a tenth of its start-up went to creating them).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from qualify.rundir.audit import Audit, AuditRead, parse_audit, read_audit
    from qualify.rundir.directory import RunDir

__all__ = ["Audit", "AuditRead", "RunDir", "parse_audit", "read_audit"]
_WHERE = {
    "Audit": "qualify.rundir.audit",
    "AuditRead": "qualify.rundir.audit",
    "parse_audit": "qualify.rundir.audit",
    "read_audit": "qualify.rundir.audit",
    "RunDir": "qualify.rundir.directory",
}


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_WHERE[name]), name)
    globals()[name] = value
    return value
