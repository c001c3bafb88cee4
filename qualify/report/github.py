"""GitHub Actions: step summary, error annotations and step outputs of one run directory.

The formats are GitHub's, with their limits:
- workflow commands ``::error file=F,line=L,title=T::message``: data escapes ``%``, CR, LF;
  properties also ``:`` and ``,`` (actions/toolkit, packages/core/src/command.ts);
- at most 10 error annotations per step are shown, the rest silently dropped: qualify emits
  9 and folds the rest into a 10th
  (https://docs.github.com/en/actions/reference/workflow-commands-for-github-actions);
- ``$GITHUB_STEP_SUMMARY`` is capped at 1 MiB per step; beyond that the summary is rejected
  (https://github.blog/2022-05-09-supercharging-github-actions-with-job-summaries/);
- ``$GITHUB_OUTPUT`` multi-line values use ``name<<DELIMITER`` ... ``DELIMITER``.
"""

from __future__ import annotations

import dataclasses
import json
import uuid
import xml.etree.ElementTree as ET
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TextIO

from qualify.events import read_events
from qualify.report.github_summary import SUMMARY_LIMIT, render_summary
from qualify.testcases import split_nodeid

MAX_ANNOTATIONS = 10
PUBLISHED_MARKER = ".github-published"
"""Written in the run directory once published, so a second call (the run itself, then the
action's ``qualify report``) does not annotate twice."""


@dataclasses.dataclass(frozen=True)
class Failure:
    """A failed or errored testcase of junit.xml, located in the source when known."""

    classname: str
    name: str
    outcome: str
    message: str
    text: str
    kind: str | None = None
    file: str | None = None
    line: int | None = None

    @property
    def title(self) -> str:
        """``classname::name``."""
        return f"{self.classname}::{self.name}"


def escape_data(text: str) -> str:
    """A workflow command's message, escaped as actions/toolkit does."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """A workflow command's property value (``file=``, ``title=``), escaped."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def _locations(run_dir: Path) -> dict[tuple[str, str], tuple[str, int | None]]:
    """(classname, name) -> (file, line) from the plugin's streamed test_phase events."""
    found: dict[tuple[str, str], tuple[str, int | None]] = {}
    for event in read_events(run_dir / "events.jsonl"):
        nodeid, file = event.get("nodeid"), event.get("file")
        if event.get("event") == "test_phase" and isinstance(nodeid, str) and isinstance(file, str):
            line = event.get("line")  # already 1-based (harness.pytest_plugin._location)
            found[split_nodeid(nodeid)] = (file, line if isinstance(line, int) else None)
    return found


def read_failures(run_dir: Path, source_prefix: str = "") -> list[Failure]:
    """Failed and errored testcases of ``run_dir/junit.xml``, in file order."""
    try:
        root = ET.parse(run_dir / "junit.xml").getroot()
    except (OSError, ET.ParseError):
        return []
    locations = _locations(run_dir)
    failures = []
    for case in root.iter("testcase"):
        for child in case:
            if child.tag not in ("failure", "error"):
                continue
            key = (case.get("classname", ""), case.get("name", ""))
            file, line = locations.get(key, (None, None))
            failures.append(
                Failure(
                    classname=key[0],
                    name=key[1],
                    outcome="failed" if child.tag == "failure" else "error",
                    message=child.get("message", ""),
                    text=child.text or "",
                    kind=child.get("type"),
                    file=source_prefix + file if file else None,
                    line=line,
                )
            )
    return failures


def annotation(title: str, message: str, file: str | None = None, line: int | None = None) -> str:
    """One ``::error`` workflow command."""
    properties = []
    if file:
        properties.append(f"file={escape_property(file)}")
        if line is not None:
            properties.append(f"line={line}")
    properties.append(f"title={escape_property(title)}")
    return f"::error {','.join(properties)}::{escape_data(message)}"


def annotation_lines(audit: Mapping[str, Any], failures: Sequence[Failure]) -> list[str]:
    """At most MAX_ANNOTATIONS commands: one per failure, the overflow folded into the last."""
    verdict = str(audit.get("verdict"))
    if not failures:
        if verdict == "PASSED":
            return []
        return [annotation(f"qualify {verdict}", str(audit.get("reason", "")))]
    if len(failures) <= MAX_ANNOTATIONS:
        shown, rest = list(failures), []
    else:
        shown, rest = list(failures[: MAX_ANNOTATIONS - 1]), list(failures[MAX_ANNOTATIONS - 1 :])
    lines = [
        annotation(f"{verdict}: {f.title}", f.message or f.outcome, f.file, f.line) for f in shown
    ]
    if rest:
        names = ", ".join(f.title for f in rest[:20]) + (", ..." if len(rest) > 20 else "")
        lines.append(
            annotation(
                f"{verdict}: {len(rest)} more failures",
                f"{len(rest)} more failed or errored testcases (see the step summary and "
                f"junit.xml in the uploaded artifact): {names}",
            )
        )
    return lines


def output_lines(values: Mapping[str, str]) -> str:
    """``$GITHUB_OUTPUT`` text: every value in the heredoc form, with a fresh delimiter."""
    text = []
    for name, value in values.items():
        delimiter = f"ghadelimiter_{uuid.uuid4()}"
        while delimiter in value:  # pragma: no cover - a collision with a random uuid
            delimiter = f"ghadelimiter_{uuid.uuid4()}"
        text.append(f"{name}<<{delimiter}\n{value}\n{delimiter}\n")
    return "".join(text)


def _append(path: str | None, text: str) -> None:
    if path:
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(text)


def _source_prefix(audit: Mapping[str, Any], environ: Mapping[str, str]) -> str:
    """Where the family's test files are, relative to the workspace, for annotations."""
    family = audit.get("family") or {}
    directory = family.get("directory")
    workspace = Path(environ.get("GITHUB_WORKSPACE") or ".")
    candidates = [directory] if isinstance(directory, str) else []
    candidates.append(f"families/{family.get('name')}")
    for candidate in candidates:
        path = Path(candidate)
        if path.is_absolute():
            try:
                path = path.relative_to(workspace.resolve())
            except ValueError:
                continue
        if (workspace / path).is_dir():
            return f"{path.as_posix()}/"
    return ""


def publish_github(
    run_dir: Path,
    environ: Mapping[str, str],
    stdout: TextIO,
    clean: Callable[[str], str] | None = None,
) -> bool:
    """Summary, annotations and outputs of ``run_dir``; False when already published.

    ``clean`` (the run's sanitizer) is applied to every annotation and to the summary: both
    are visible to anyone who can see the pull request.
    """
    scrub = clean or (lambda text: text)
    marker = run_dir / PUBLISHED_MARKER
    if marker.exists():
        return False
    try:
        audit = json.loads((run_dir / "audit.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        audit = {"verdict": "ERROR", "reason": "audit.json is missing or unreadable"}
    failures = read_failures(run_dir, _source_prefix(audit, environ))
    for line in annotation_lines(audit, failures):
        stdout.write(scrub(line) + "\n")
    stdout.flush()
    summary_path = environ.get("GITHUB_STEP_SUMMARY")
    if summary_path:
        used = Path(summary_path).stat().st_size if Path(summary_path).exists() else 0
        summary = render_summary(audit, failures, run_dir, SUMMARY_LIMIT - used)
        _append(summary_path, scrub(summary))
    _append(
        environ.get("GITHUB_OUTPUT"),
        output_lines(
            {
                "verdict": str(audit.get("verdict")),
                "run-dir": str(run_dir),
                "junit": str(run_dir / "junit.xml"),
            }
        ),
    )
    marker.write_text("published\n", encoding="utf-8")
    return True
