"""``qualify publish RUN_DIR``: the end of ``qualify run`` again, for an existing run directory.

One path for both: the report page (with triage's findings for a failed run), then the sanitized
``public/`` bundle, then inside GitHub Actions the step summary, annotations and outputs, all
through the run's one sanitizer (which first learns every secret its rules find in the run's
files), each channel scanned in its final bytes. A channel that fails the scan is withheld
(exit 4); the verdict recorded in the audit is never changed by it.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from harness import contract
from qualify import records
from qualify.commands._args import (
    Commands,
    format_option,
    github_option,
    secret_options,
    sources,
)
from qualify.errors import UsageError
from qualify.plan.request import PUBLISH_LEVELS
from qualify.publish.bundle import PublishResult, publish_run, run_sanitizer
from qualify.publish.errorline import error_line
from qualify.publish.final_scan import TERMINAL, describe, final_scan
from qualify.publish.sanitize import Sanitizer
from qualify.publish.sources import SecretSources
from qualify.records import frozen_record
from qualify.report.html import write_html_report
from qualify.rundir import RunDir
from qualify.verdict import EXIT_ERROR, EXIT_PASSED, EXIT_USAGE

if TYPE_CHECKING:
    from qualify.publish.github import GithubResult
    from qualify.rundir import AuditRead


def triage_findings(run_dir: RunDir) -> dict[str, Any]:
    """Triage's answer for the report page; a triage bug must not cost the report, so it is
    shown instead and recorded in the audit's problems. (Imported here: a passed run's page
    has no triage.)"""
    try:
        from qualify.triage import Sources, triage

        found = triage(Sources(run_dir=run_dir.path))
    except Exception as exc:
        record_problem(run_dir, f"triage failed on the report page: {exc!r}")
        return {"triage failed": repr(exc)}
    return {
        "class": found.triage_class.value,
        "summary": found.summary,
        "findings": [finding.title for finding in found.findings],
        "conflicts": [conflict.title for conflict in found.conflicts],
        "remedies": list(found.remedies),
        "warnings": list(found.warnings),
    }


def failed_run_triage(run_dir: RunDir) -> dict[str, Any] | None:
    """Triage's findings for a run that did not pass (None for a passed run)."""
    return _failed_run_triage(run_dir, run_dir.read_audit())


def _failed_run_triage(run_dir: RunDir, read: AuditRead) -> dict[str, Any] | None:
    """``failed_run_triage`` with the audit as just read (``read``)."""
    failed = read.audit is None or read.audit.verdict != "PASSED"
    return triage_findings(run_dir) if failed else None


def write_report(
    run_dir: RunDir, findings: dict[str, Any] | None = None, read: AuditRead | None = None
) -> Path | None:
    """The report page (``findings``: triage's, computed here when not given); its failure
    costs nothing else (None): its traceback is kept in the debug log and the audit's problems
    say so (before public/ copies the audit). ``read``: the audit as read just before, with
    ``findings`` already final (a passed run's None included), so that it is not read again."""
    try:
        if read is None:
            read = run_dir.read_audit()
            if findings is None:
                findings = _failed_run_triage(run_dir, read)
        return write_html_report(run_dir, findings, read.audit)
    except Exception as exc:
        import traceback  # (only here: with linecache and tokenize it is costly to import)

        with contextlib.suppress(OSError):
            run_dir.write_debug(traceback.format_exc())
        record_problem(
            run_dir, f"qualify could not write {contract.REPORT_HTML}: {exc!r} (see the debug log)"
        )
        return None


def record_problem(run_dir: RunDir, problem: str) -> None:
    """``problem`` added to the audit's problems (once), where a failure of qualify's own that
    costs nothing else is recorded; an audit that cannot be read or written is left as it is."""
    with contextlib.suppress(OSError):
        audit = run_dir.read_audit().audit
        if audit is not None and problem not in audit.problems:
            run_dir.write_audit(records.replace(audit, problems=[*audit.problems, problem]))


@frozen_record
class Publication:
    """How every public channel of a run went: public/, and the GitHub channels when written."""

    bundle: PublishResult
    github: GithubResult | None
    sanitizer: Sanitizer
    """The run's sanitizer (what it learnt included), for qualify's own terminal output."""
    report: Path | None = None
    """The report page, None when it could not be written."""

    def __bool__(self) -> bool:
        return bool(self.bundle) and (self.github is None or self.github.ok)

    @property
    def reasons(self) -> list[str]:
        """Why each failed channel failed (rules and places, never a value)."""
        found = [] if self.bundle else [f"public/ withheld: {self.bundle.reason}"]
        if self.github is not None:
            found += list(self.github.withheld.values())
        return found

    @property
    def exit_code(self) -> int:
        """0 when every channel was published, 4 (ERROR) when one failed closed."""
        return EXIT_PASSED if self else EXIT_ERROR


def in_ci(environ: Mapping[str, str]) -> bool:
    """Whether qualify's terminal output is a public log (GitHub Actions, or any CI that sets
    ``CI``)."""
    return environ.get("GITHUB_ACTIONS") == "true" or environ.get("CI", "").lower() in (
        "true",
        "1",
        "yes",
    )


def wants_github(github: bool | None, environ: Mapping[str, str]) -> bool:
    """Whether to write the GitHub channels: when asked (``--github``), or, unless refused
    (``--no-github``), inside GitHub Actions (``GITHUB_ACTIONS=true``)."""
    return github if github is not None else environ.get("GITHUB_ACTIONS") == "true"


def publish_channels(
    run_dir: RunDir,
    *,
    level: str,
    environ: Mapping[str, str],
    stdout: TextIO,
    github: bool | None = None,
    secrets_from: Mapping[str, str] | None = None,
    sources: SecretSources | None = None,
) -> Publication:
    """The report page, public/ at ``level``, and the GitHub channels when ``github`` (None: when
    ``GITHUB_ACTIONS=true`` in ``environ``), all through one sanitizer.

    ``environ`` locates the GitHub channels; ``secrets_from`` (default ``environ``) is the
    environment whose secret-looking values are redacted: at the end of a run, the E2E's;
    ``sources``: ``--secret-env`` names and the ``--secrets-file`` (recorded for the run).
    """
    read = run_dir.read_audit()
    findings = _failed_run_triage(run_dir, read)
    # Triage records its own failure in the audit: the page reads it again after a triage.
    report = write_report(run_dir, findings, read if findings is None else None)
    secrets = environ if secrets_from is None else secrets_from
    sanitizer = run_sanitizer(run_dir.path, secrets, sources)
    bundle = publish_run(run_dir.path, level, sanitizer)
    github_result = None
    if wants_github(github, environ):
        from qualify.publish.github import publish_github  # only inside Actions

        github_result = publish_github(run_dir, environ, stdout, sanitizer, findings)
    return Publication(bundle, github_result, sanitizer, report)


def terminal_text(text: str, sanitizer: Sanitizer, environ: Mapping[str, str]) -> str:
    """qualify's own output about a run, as it may be printed: secrets always redacted; in CI
    (a public log) identities pseudonymized too, and the final scan run on it; withheld (one
    line saying why) when the scan finds a known secret."""
    cleaned = sanitizer.clean(text) if in_ci(environ) else sanitizer.redact(text)
    leaks = final_scan(cleaned.encode("utf-8", errors="replace"), sanitizer.index, TERMINAL, "")
    if leaks:
        return sanitizer.clean("qualify: output withheld: " + describe(leaks)) + "\n"
    return cleaned


def terminal_json(document: Any, sanitizer: Sanitizer, environ: Mapping[str, str]) -> str:
    """``document`` as one JSON document that may be printed, as ``terminal_text`` treats
    text: every string's secrets redacted; in CI identities pseudonymized too; the final scan
    run on it (withheld, saying why, when it finds a known secret)."""
    cleaned = sanitizer.clean_json(document) if in_ci(environ) else _redacted(document, sanitizer)
    text = json.dumps(cleaned, indent=2) + "\n"
    leaks = final_scan(text.encode("utf-8", errors="replace"), sanitizer.index, TERMINAL, "")
    if leaks:
        return json.dumps({"withheld": sanitizer.clean(describe(leaks))}) + "\n"
    return text


def _redacted(document: Any, sanitizer: Sanitizer) -> Any:
    if isinstance(document, str):
        return sanitizer.redact(document)
    if isinstance(document, dict):
        return {key: _redacted(value, sanitizer) for key, value in document.items()}
    if isinstance(document, list):
        return [_redacted(value, sanitizer) for value in document]
    return document


def github_json(result: GithubResult | None) -> dict[str, Any] | None:
    """What the GitHub channels did, for ``--format json`` (None: not written this time)."""
    if result is None:
        return None
    return {"written": result.written, "withheld": dict(sorted(result.withheld.items()))}


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
    sources: SecretSources | None = None,
    output_format: str = "text",
) -> int:
    """Re-publish ``run_dir``; 0 when published, 4 when the publication failed closed. With
    ``output_format`` json, stdout is one JSON document: the paths written and the publication
    record (``publication.json``)."""
    environ = os.environ if environ is None else environ
    directory = RunDir(run_dir)
    try:
        if not directory.exists():
            raise UsageError(f"{str(run_dir)!r} is not a run directory (it holds no audit)")
        if level is not None and level not in PUBLISH_LEVELS:
            raise UsageError(f"--level {level!r} is not valid (valid: {', '.join(PUBLISH_LEVELS)})")
    except UsageError as exc:
        stderr.write(error_line("qualify publish", exc))
        return EXIT_USAGE
    chosen = level or recorded_level(directory)
    try:
        result = publish_channels(
            directory,
            level=chosen,
            environ=environ,
            stdout=stderr if output_format == "json" else stdout,  # annotations: off the JSON
            github=github,
            sources=sources,
        )
    except UsageError as exc:  # a recorded secrets file that is gone, or a bad one given
        stderr.write(error_line("qualify publish", exc))
        return EXIT_USAGE
    for reason in result.reasons:
        stderr.write(f"qualify publish: publication failed: {reason}\n")
    if output_format == "json":
        document = {
            "run_dir": str(run_dir),
            "report": None if result.report is None else str(result.report),
            "public": str(run_dir / contract.PUBLIC_DIR) if result.bundle else None,
            "publication": directory.read_json(contract.PUBLICATION),
            "github": github_json(result.github),
        }
        stdout.write(terminal_json(document, result.sanitizer, environ))
    elif result.bundle:
        text = f"{run_dir / contract.PUBLIC_DIR}\n"
        stdout.write(terminal_text(text, result.sanitizer, environ))
    return result.exit_code


def add_parser(commands: Commands) -> None:
    parser = commands.add_parser(
        "publish",
        help="publish a run directory again (report page, public/, the GitHub channels)",
    )
    parser.add_argument("run_dir", type=Path, help="reports/<sha>/<family>/<profile>/<run-id>")
    parser.add_argument(
        "--level",
        choices=("public", "internal"),
        help="what public/ may hold (default: the level the run was published at, else public)",
    )
    github_option(parser)
    secret_options(parser)
    format_option(parser, "the paths written and the publication record (publication.json)")


def main(args: argparse.Namespace) -> int:
    return publish(
        run_dir=args.run_dir,
        level=args.level,
        github=args.github,
        sources=sources(args),
        output_format=args.output_format,
    )
