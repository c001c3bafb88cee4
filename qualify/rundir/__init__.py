"""Stage 4, rundir: the run directory, its files and the typed audit, read and written here.

File names and event kinds are those of ``harness.contract`` (shared with the sandbox); the
audit is ``qualify.rundir.audit.Audit``, with its JSON Schema in ``audit.schema.json``.
"""

from qualify.rundir.audit import Audit, AuditRead, parse_audit, read_audit
from qualify.rundir.directory import RunDir

__all__ = ["Audit", "AuditRead", "RunDir", "parse_audit", "read_audit"]
