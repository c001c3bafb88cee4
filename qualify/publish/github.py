"""GitHub Actions channels of a run: step summary, annotations and outputs, written once."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TextIO

from qualify.report.github import annotation_lines, output_lines, read_failures
from qualify.report.github_summary import SUMMARY_LIMIT, render_summary
from qualify.rundir import Audit, RunDir


def _append(path: str | None, text: str) -> None:
    if path:
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(text)


def _source_prefix(audit: Audit, environ: Mapping[str, str]) -> str:
    """Where the family's test files are, relative to the workspace, for annotations."""
    workspace = Path(environ.get("GITHUB_WORKSPACE") or ".")
    recorded = audit.family.directory
    if recorded and not audit.family.outside_repo and not Path(recorded).is_absolute():
        candidate = Path(recorded)
    else:
        candidate = Path("families") / audit.family.name
    if audit.family.name and (workspace / candidate).is_dir():
        return f"{candidate.as_posix()}/"
    return ""


def publish_github(
    run_dir: RunDir,
    environ: Mapping[str, str],
    stdout: TextIO,
    clean: Callable[[str], str] | None = None,
) -> bool:
    """Summary, annotations and outputs of ``run_dir``; False when already published (a
    marker in the run directory: the run publishes, and the action's later ``qualify publish``
    must not annotate twice).

    ``clean`` (the run's sanitizer) is applied to every annotation and to the summary: both
    are visible to anyone who can see the pull request.
    """
    scrub = clean or (lambda text: text)
    marker = run_dir.github_marker_path
    if marker.exists():
        return False
    read = run_dir.read_audit()
    audit = read.audit or Audit(reason="the audit is missing or unreadable")
    failures = read_failures(run_dir, _source_prefix(audit, environ))
    for line in annotation_lines(audit, failures):
        stdout.write(scrub(line) + "\n")
    stdout.flush()
    summary_path = environ.get("GITHUB_STEP_SUMMARY")
    if summary_path:
        used = Path(summary_path).stat().st_size if Path(summary_path).exists() else 0
        summary = render_summary(audit, failures, str(run_dir.path), SUMMARY_LIMIT - used)
        _append(summary_path, scrub(summary))
    public_junit = run_dir.public_path / run_dir.junit_path.name
    _append(
        environ.get("GITHUB_OUTPUT"),
        output_lines(
            {
                "verdict": audit.verdict,
                "run-dir": str(run_dir.path),
                # The sanitized copy only: the run's own JUnit is internal (not sanitized).
                "junit": str(public_junit) if public_junit.is_file() else "",
            }
        ),
    )
    marker.write_text("published\n", encoding="utf-8")
    return True
