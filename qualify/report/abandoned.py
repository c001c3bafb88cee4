"""A run whose qualify died: its provisional reports completed from what the harness streamed.

The next ``qualify run`` on the machine takes the dead run over (``qualify.run.registry``),
then this fills in what its qualify never wrote: the tests from the events (the one that was
running named, with its phase; those never started listed as not run) in the JUnit file and
the audit. The verdict stays ERROR: qualify itself failed, not the family.
"""

from __future__ import annotations

import dataclasses
import time

from qualify.evidence.junit import JUnitCase
from qualify.judge.progress import cases_from_events, progress_from_events
from qualify.plan.commit import CommitInfo
from qualify.report.audit_of_run import iso
from qualify.report.junit import render_junit
from qualify.rundir import RunDir
from qualify.rundir.audit import FLAKY_LISTED, Audit, FamilyRecord, TestsRecord
from qualify.verdict import PROVISIONAL_REASON, Verdict


def _audit_from_place(run_dir: RunDir) -> Audit:
    """The provisional audit of a run whose qualify died after the E2E started but before it
    wrote that audit (its JUnit file is written first): what the directory's place tells,
    ``<out>/<head>/<family>/<profile>/<run-id>``."""
    run_id = run_dir.path
    profile = run_id.parent
    family = profile.parent
    return Audit(
        run_id=run_id.name,
        verdict=Verdict.ERROR.value,
        reason=PROVISIONAL_REASON,
        family=FamilyRecord(name=family.name),
        profile=profile.name,
        commit=CommitInfo(head=family.parent.name),
        problems=["qualify died before it wrote the provisional audit; only the run "
                  "directory's place names the run"],
    )  # fmt: skip


def complete_abandoned(run_dir: RunDir, taken_over_by: str, problems: tuple[str, ...]) -> bool:
    """Complete the reports of a run whose qualify died; False when there is nothing to do
    (its qualify had written its own final reports, or the directory is gone)."""
    read = run_dir.read_audit()
    audit = read.audit
    if audit is None and not run_dir.audit_path.exists() and run_dir.junit_path.is_file():
        audit = _audit_from_place(run_dir)  # killed between the E2E's start and its audit
    if audit is None or audit.reason != PROVISIONAL_REASON:
        return False
    progress = progress_from_events(run_dir.events())
    running = (
        f" during test {progress.running} ({progress.running_when})" if progress.running else ""
    )
    reason = (
        f"qualify was killed{running}; run {taken_over_by} found it dead, killed what was left "
        "of the E2E and removed its cgroups"
    )
    cases = cases_from_events(progress, Verdict.ERROR, reason)
    cases.append(JUnitCase("qualify", "run", "error", 0.0, reason, reason, kind="ERROR"))
    outcomes = [case.outcome for case in cases if case.classname != "qualify"]
    tests = TestsRecord(
        collected=progress.collected,
        passed=outcomes.count("passed"),
        failed=outcomes.count("failed"),
        errors=outcomes.count("error"),
        skipped=outcomes.count("skipped"),
        running_at_end=progress.running,
        running_when=progress.running_when,
        not_run=len(progress.not_run),
        pytest_exitstatus=progress.session_exitstatus,
        reruns=progress.rerun_count,
        flaky=list(progress.flaky[:FLAKY_LISTED]),
        flaky_count=len(progress.flaky),
    )
    properties = {"qualify.verdict": Verdict.ERROR.value, "qualify.reason": reason}
    run_dir.write_junit(
        render_junit(audit.family.name, cases, properties, audit.timings.started or "")
    )
    run_dir.write_audit(
        dataclasses.replace(
            audit,
            reason=reason,
            tests=tests,
            timings=dataclasses.replace(audit.timings, ended=iso(time.time())),
            problems=[*audit.problems, *problems],
        )
    )
    return True
