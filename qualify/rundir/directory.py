"""``RunDir``: one run directory, its files by role, and the one way to read and write them.

File names come from ``harness.contract``; every reader of a run directory (the judge, the
reports, merge, triage, publication) goes through this class rather than opening files itself.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness import contract
from qualify import cuts
from qualify.atomic import fsync_directory, write_bytes_atomic
from qualify.records import frozen_record
from qualify.rundir.pause import JUNIT_FINAL, pause_at
from qualify.untrusted import read_bounded, read_tail

if TYPE_CHECKING:
    from qualify.run.timeline import TimelineSample
    from qualify.rundir.audit import Audit, AuditRead

LOG_TAIL_BYTES = 64 * 1024


@frozen_record
class RunDir:
    """A run directory (``reports/<head-sha>/<family>/<profile>/<run-id>``)."""

    path: Path

    # --- paths by role
    @property
    def audit_path(self) -> Path:
        """The audit (typed: ``qualify.rundir.audit.Audit``)."""
        return self.path / contract.AUDIT

    @property
    def junit_path(self) -> Path:
        """qualify's JUnit, always present and valid."""
        return self.path / contract.JUNIT

    @property
    def staged_junit_path(self) -> Path:
        """The final JUnit, whole, before it is renamed into place (``commit_reports``)."""
        return self.path / contract.JUNIT_STAGED

    @property
    def staged_audit_path(self) -> Path:
        """The final audit, whole, before it is renamed into place (``commit_reports``)."""
        return self.path / contract.AUDIT_STAGED

    @property
    def events_path(self) -> Path:
        """The harness's events."""
        return self.path / contract.EVENTS

    @property
    def timeline_path(self) -> Path:
        """The monitor's samples."""
        return self.path / contract.TIMELINE

    @property
    def parity_path(self) -> Path:
        """The recorded generations of both sides."""
        return self.path / contract.PARITY

    @property
    def report_path(self) -> Path:
        """The HTML page of the run."""
        return self.path / contract.REPORT_HTML

    @property
    def public_path(self) -> Path:
        """The sanitized bundle."""
        return self.path / contract.PUBLIC_DIR

    @property
    def publication_path(self) -> Path:
        """How the publication went (internal)."""
        return self.path / contract.PUBLICATION

    @property
    def sanitize_map_path(self) -> Path:
        """Pseudonyms of this run (internal)."""
        return self.path / contract.SANITIZE_MAP

    @property
    def github_marker_path(self) -> Path:
        """Present once the GitHub channels were written for this run."""
        return self.path / contract.GITHUB_MARKER

    def log_path(self, stream: str) -> Path:
        """``stdout`` or ``stderr`` of the E2E."""
        return self.path / {"stdout": contract.STDOUT, "stderr": contract.STDERR}[stream]

    # --- reading
    def exists(self) -> bool:
        """True when this is a run directory (it holds an audit)."""
        return self.audit_path.is_file()

    def read_audit(self) -> AuditRead:
        """The audit, or the problem that prevents reading it."""
        from qualify.rundir.audit import read_audit

        return read_audit(self.audit_path)

    def events(self, containing: bytes | None = None) -> Iterator[dict[str, Any]]:
        """The harness's events in file order (a truncated last line skipped); with
        ``containing``, only those whose line holds those bytes (e.g. an event's name)."""
        from qualify.rundir.events import read_jsonl

        return read_jsonl(self.events_path, containing)

    def timeline(self) -> Iterator[TimelineSample]:
        """The monitor's samples in time order."""
        from qualify.rundir.events import read_timeline

        return read_timeline(self.timeline_path)

    def log_tail(self, stream: str, limit: int = LOG_TAIL_BYTES) -> str:
        """At most the last ``limit`` bytes of a log as text ("" when there is none); when the
        log is longer, starting at a line or word boundary (:mod:`qualify.cuts`): never a
        piece of a value."""
        try:
            data = read_tail(self.log_path(stream), limit + 1)
        except OSError:  # missing, or not a regular file
            return ""
        if len(data) > limit:  # the log goes on before it: the read's start is a cut
            data = cuts.after_cut(data[1:])
        return data.decode("utf-8", errors="replace")

    def gpu_summary(self) -> dict[str, Any] | None:
        """The NVML sampler's peaks, or None when no sampler ran."""
        try:
            document = json.loads(read_bounded(self.path / contract.GPU_SUMMARY))
        except (OSError, ValueError, RecursionError):
            return None
        return document if isinstance(document, dict) else None

    def read_json(self, name: str) -> Any:
        """Another JSON file of the run directory (None when missing or not JSON)."""
        try:
            return json.loads(read_bounded(self.path / name))
        except (OSError, ValueError, RecursionError):  # (RecursionError: nested too deep)
            return None

    # --- writing
    def write_audit(self, audit: Audit) -> None:
        """Write the audit atomically."""
        from qualify.rundir.audit import write_audit

        write_audit(self.audit_path, audit)

    def write_junit(self, data: bytes) -> None:
        """Write qualify's JUnit atomically."""
        write_bytes_atomic(self.junit_path, data)

    def write_debug(self, text: str) -> None:
        """Keep a traceback of qualify's own failure (internal, never published)."""
        (self.path / contract.DEBUG_LOG).write_text(text, encoding="utf-8")

    def commit_reports(self, junit: bytes, audit: Audit) -> None:
        """The final JUnit file and audit as one unit, so that a reader never finds them
        disagreeing for good. Each is first staged whole (written, fsynced, renamed to its
        staged name), the JUnit first: the staged audit's arrival is the commit point. Then
        both are renamed into place and the directory is fsynced. A qualify killed in between
        leaves what ``finish_commit`` completes."""
        try:
            write_bytes_atomic(self.staged_junit_path, junit)
            write_bytes_atomic(self.staged_audit_path, audit.to_bytes())
        except BaseException:
            with contextlib.suppress(OSError):
                self.staged_junit_path.unlink(missing_ok=True)
            raise
        os.replace(self.staged_junit_path, self.junit_path)
        pause_at(JUNIT_FINAL)
        os.replace(self.staged_audit_path, self.audit_path)
        fsync_directory(self.path)

    def finish_commit(self) -> bool:
        """Complete the commit of a qualify killed inside ``commit_reports``; True when it did.
        A staged audit means both staged files are whole: they are renamed into place. A staged
        JUnit alone was never committed: it is dropped (the reports in place stay)."""
        if not self.staged_audit_path.is_file():
            with contextlib.suppress(FileNotFoundError):
                self.staged_junit_path.unlink()
            return False
        if self.staged_junit_path.is_file():
            os.replace(self.staged_junit_path, self.junit_path)
        os.replace(self.staged_audit_path, self.audit_path)
        fsync_directory(self.path)
        return True
