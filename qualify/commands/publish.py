"""``qualify publish RUN_DIR``: the end of ``qualify run`` again, for an existing run directory.

One path for both: the report page (with triage's findings for a failed run), then the sanitized
``public/`` bundle, then inside GitHub Actions the step summary, annotations and outputs, each
through the run's sanitizer. A failed publication fails closed (exit 4); the verdict recorded
in the audit is never changed by it.
"""

from __future__ import annotations

import contextlib
import os
import sys
import traceback
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TextIO

from harness import contract
from qualify.errors import UsageError
from qualify.plan.request import PUBLISH_LEVELS
from qualify.publish.bundle import PublishResult, publish_run, run_sanitizer
from qualify.publish.github import publish_github
from qualify.report.html import write_html_report
from qualify.rundir import RunDir
from qualify.triage import Sources, triage
from qualify.verdict import EXIT_USAGE


def triage_findings(run_dir: RunDir) -> dict[str, Any]:
    """Triage's answer for the report page; a triage bug must not cost the report, so it is
    shown instead."""
    try:
        found = triage(Sources(run_dir=run_dir.path))
    except Exception as exc:
        return {"triage failed": repr(exc)}
    return {
        "class": found.triage_class.value,
        "summary": found.summary,
        "findings": [finding.title for finding in found.findings],
        "conflicts": [conflict.title for conflict in found.conflicts],
        "remedies": list(found.remedies),
        "warnings": list(found.warnings),
    }


def write_report(run_dir: RunDir) -> Path | None:
    """The report page; its failure is kept in the debug log and costs nothing else (None)."""
    try:
        read = run_dir.read_audit()
        failed = read.audit is None or read.audit.verdict != "PASSED"
        return write_html_report(run_dir, triage_findings(run_dir) if failed else None)
    except Exception:
        with contextlib.suppress(OSError):
            run_dir.write_debug(traceback.format_exc())
        return None


def publish_channels(
    run_dir: RunDir,
    *,
    level: str,
    environ: Mapping[str, str],
    stdout: TextIO,
    github: bool | None = None,
    secrets_from: Mapping[str, str] | None = None,
) -> PublishResult:
    """The report page, public/ at ``level``, and the GitHub channels when ``github`` (None: when
    ``GITHUB_ACTIONS=true`` in ``environ``).

    ``environ`` locates the GitHub channels; ``secrets_from`` (default ``environ``) is the
    environment whose secret-looking values are redacted: at the end of a run, the E2E's.
    """
    write_report(run_dir)
    secrets = environ if secrets_from is None else secrets_from
    publication = publish_run(run_dir.path, level, secrets)
    if github or (github is None and environ.get("GITHUB_ACTIONS") == "true"):
        clean = run_sanitizer(run_dir.path, secrets).clean
        publish_github(run_dir, environ, stdout, clean=clean)
    return publication


def recorded_level(run_dir: RunDir) -> str:
    """The level the run was published at before (public when it never was)."""
    document = run_dir.read_json(contract.PUBLICATION)
    level = document.get("level") if isinstance(document, dict) else None
    return level if level in PUBLISH_LEVELS else "public"


def publish(
    *,
    run_dir: Path,
    level: str | None = None,
    github: bool | None = None,
    environ: Mapping[str, str] | None = None,
    stdout: TextIO = sys.stdout,
    stderr: TextIO = sys.stderr,
) -> int:
    """Re-publish ``run_dir``; 0 when published, 4 when the publication failed closed."""
    environ = os.environ if environ is None else environ
    directory = RunDir(run_dir)
    try:
        if not directory.exists():
            raise UsageError(f"{str(run_dir)!r} is not a run directory (it holds no audit)")
        if level is not None and level not in PUBLISH_LEVELS:
            raise UsageError(f"--level {level!r} is not valid (valid: {', '.join(PUBLISH_LEVELS)})")
    except UsageError as exc:
        stderr.write(f"qualify publish: error: {exc}\n")
        return EXIT_USAGE
    chosen = level or recorded_level(directory)
    result = publish_channels(
        directory, level=chosen, environ=environ, stdout=stdout, github=github
    )
    if not result:
        stderr.write(f"qualify publish: publication failed: {result.reason}\n")
    else:
        stdout.write(f"{run_dir / contract.PUBLIC_DIR}\n")
    return result.exit_code
