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

import uuid
from collections.abc import Callable, Mapping, Sequence

from junitparser import Error as JUnitError
from junitparser import Failure as JUnitFailure

from harness import contract
from qualify.evidence.junit import read_junit, split_nodeid
from qualify.records import frozen_record
from qualify.rundir import Audit, RunDir

MAX_ANNOTATIONS = 10


@frozen_record
class Failure:
    """A failed or errored testcase of the run's JUnit, located in the source when known."""

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


def _locations(run_dir: RunDir) -> dict[tuple[str, str], tuple[str, int | None]]:
    """(classname, name) -> (file, line) from the plugin's streamed test_phase events."""
    found: dict[tuple[str, str], tuple[str, int | None]] = {}
    for event in run_dir.events():
        nodeid, file = event.get("nodeid"), event.get("file")
        if event.get("event") != contract.TEST_PHASE:
            continue
        if isinstance(nodeid, str) and isinstance(file, str):
            line = event.get("line")  # already 1-based (harness._plugin.pytest_runtest_setup)
            found[split_nodeid(nodeid)] = (file, line if isinstance(line, int) else None)
    return found


def read_failures(run_dir: RunDir, source_prefix: str = "") -> list[Failure]:
    """Failed and errored testcases of the run's JUnit, in file order."""
    document = read_junit(run_dir.junit_path)
    if document is None:
        return []
    locations: dict[tuple[str, str], tuple[str, int | None]] | None = None
    failures = []
    for suite in document:
        for case in suite:
            for result in case.result:
                if not isinstance(result, JUnitFailure | JUnitError):
                    continue
                if locations is None:  # (the events read for a run with a failure only)
                    locations = _locations(run_dir)
                key = (case.classname or "", case.name or "")
                file, line = locations.get(key, (None, None))
                failures.append(
                    Failure(
                        classname=key[0],
                        name=key[1],
                        outcome="failed" if isinstance(result, JUnitFailure) else "error",
                        message=result.message or "",
                        text=result.text or "",
                        kind=result.type,
                        file=source_prefix + file if file else None,
                        line=line,
                    )
                )
    return failures


def _same(text: str) -> str:
    return text


def annotation(
    title: str,
    message: str,
    file: str | None = None,
    line: int | None = None,
    clean: Callable[[str], str] = _same,
) -> str:
    """One ``::error`` workflow command; ``clean`` (the sanitizer) sees every part unescaped,
    after any truncation, and the escaping comes last."""
    properties = []
    if file:
        properties.append(f"file={escape_property(clean(file))}")
        if line is not None:
            properties.append(f"line={line}")
    properties.append(f"title={escape_property(clean(title))}")
    return f"::error {','.join(properties)}::{escape_data(clean(message))}"


def annotation_lines(
    audit: Audit, failures: Sequence[Failure], clean: Callable[[str], str] = _same
) -> list[str]:
    """At most MAX_ANNOTATIONS commands: one per failure, the overflow folded into the last."""
    verdict = audit.verdict
    if not failures:
        if verdict == "PASSED":
            return []
        return [annotation(f"qualify {verdict}", audit.reason, clean=clean)]
    if len(failures) <= MAX_ANNOTATIONS:
        shown, rest = list(failures), []
    else:
        shown, rest = list(failures[: MAX_ANNOTATIONS - 1]), list(failures[MAX_ANNOTATIONS - 1 :])
    lines = [
        annotation(f"{verdict}: {f.title}", f.message or f.outcome, f.file, f.line, clean)
        for f in shown
    ]
    if rest:
        names = ", ".join(f.title for f in rest[:20]) + (", ..." if len(rest) > 20 else "")
        lines.append(
            annotation(
                f"{verdict}: {len(rest)} more failures",
                f"{len(rest)} more failed or errored testcases (see the step summary and "
                f"the JUnit file in the uploaded artifact): {names}",
                clean=clean,
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
