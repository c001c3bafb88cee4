"""GitHub Actions channels of a run: annotations, step summary and outputs, written once.

Each channel is built in full first: every piece of text through the run's sanitizer after it
is clipped and before the channel escapes it. Then the final scan reads the channel's exact
bytes with its escaping undone; a channel with a finding is withheld (a one-line notice in its
place says which rule and where), the others are written. The verdict is never changed.

The outputs are paths and a verdict that later steps use (``upload-artifact`` opens the run
directory): secrets are redacted from them, identities are not pseudonymized (a pseudonymized
path would not exist).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TextIO

from qualify import records
from qualify.publish.final_scan import (
    ANNOTATIONS,
    OUTPUTS,
    STEP_SUMMARY,
    Channel,
    describe,
    final_scan,
)
from qualify.publish.sanitize import Sanitizer
from qualify.records import frozen_record
from qualify.report.github import Failure, annotation, annotation_lines, output_lines, read_failures
from qualify.report.github_summary import SUMMARY_LIMIT, render_summary
from qualify.rundir import Audit, RunDir
from qualify.untrusted import printable


@frozen_record
class GithubResult:
    """What was written; the channels withheld and why (rule and place, never a value)."""

    written: bool
    """False when the run directory was published to GitHub before (written once)."""
    withheld: Mapping[str, str] = records.field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.withheld


def _append(path: str | None, text: str) -> None:
    if path:
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(printable(text))  # (a test id's lone surrogate: \xNN)


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


def _cleaned(failure: Failure, clean: Callable[[str], str]) -> Failure:
    """A failure with its texts sanitized whole, before any channel clips them."""
    return records.replace(
        failure,
        classname=clean(failure.classname),
        name=clean(failure.name),
        message=clean(failure.message),
        text=clean(failure.text),
        kind=clean(failure.kind) if failure.kind else failure.kind,
    )


def _samples(run_dir: RunDir) -> list[tuple[float, int]]:
    """(seconds from the first sample, usage) of the run's timeline, for the summary's chart."""
    found: list[tuple[float, int]] = []
    for sample in run_dir.timeline():
        if sample.usage is not None:
            found.append((sample.t, sample.usage))
    return [(at - found[0][0], usage) for at, usage in found] if found else []


def publish_github(
    run_dir: RunDir,
    environ: Mapping[str, str],
    stdout: TextIO,
    sanitizer: Sanitizer,
    triage: Mapping[str, Any] | None = None,
) -> GithubResult:
    """Annotations (on ``stdout``), step summary and outputs of ``run_dir``, each sanitized and
    scanned; not again when a marker says the run directory was published before (the run
    publishes, and the action's later ``qualify publish`` must not annotate twice)."""
    marker = run_dir.github_marker_path
    if marker.exists():
        return GithubResult(written=False)
    clean = sanitizer.clean
    read = run_dir.read_audit()
    audit = read.audit or Audit(reason="the audit is missing or unreadable")
    failures = [_cleaned(f, clean) for f in read_failures(run_dir, _source_prefix(audit, environ))]
    annotations = "".join(f"{line}\n" for line in annotation_lines(audit, failures, clean))
    summary_path = environ.get("GITHUB_STEP_SUMMARY")
    summary = ""
    if summary_path:
        used = Path(summary_path).stat().st_size if Path(summary_path).exists() else 0
        summary = render_summary(
            audit,
            failures,
            str(run_dir.path),
            SUMMARY_LIMIT - used,
            clean,
            triage=triage,
            samples=_samples(run_dir),
        )
    public_junit = run_dir.public_path / run_dir.junit_path.name
    outputs = output_lines(
        {
            "verdict": audit.verdict,
            "run-dir": sanitizer.redact(str(run_dir.path)),
            # The sanitized copy only: the run's own JUnit is internal (not sanitized).
            "junit": sanitizer.redact(str(public_junit)) if public_junit.is_file() else "",
        }
    )
    withheld: dict[str, str] = {}

    def checked(channel: Channel, text: str) -> bool:
        leaks = final_scan(text.encode("utf-8", errors="replace"), sanitizer.index, channel, "")
        if leaks:
            withheld[channel.name] = clean(f"{channel.name} withheld: " + describe(leaks))
        return not leaks

    if checked(ANNOTATIONS, annotations):
        stdout.write(annotations)
    else:
        stdout.write(annotation(f"qualify {audit.verdict}", withheld[ANNOTATIONS.name]) + "\n")
    stdout.flush()
    if summary and checked(STEP_SUMMARY, summary):
        _append(summary_path, summary)
    elif summary:
        notice = withheld[STEP_SUMMARY.name]
        _append(summary_path, f"## qualify {audit.verdict}\n\n{notice}\n")
    if checked(OUTPUTS, outputs):
        _append(environ.get("GITHUB_OUTPUT"), outputs)
    marker.write_text("published\n", encoding="utf-8")
    return GithubResult(written=True, withheld=withheld)
