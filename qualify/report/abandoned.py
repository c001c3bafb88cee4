"""A run whose qualify died: its reports completed from what it left in its run directory.

The next ``qualify run`` on the machine takes the dead run over (``qualify.run.registry``),
then this completes what its qualify never finished, so that its JUnit file and its audit
agree:

- killed while committing its final reports (``RunDir.commit_reports``): the commit finished,
  the reports exactly those its qualify had decided on;
- killed after its final JUnit file but before its final audit (a directory the commit did
  not write): the audit completed from the JUnit file's verdict and testcases;
- killed before its final reports: the tests from the events (the one that was running named,
  with its phase; those never started listed as not run) in the JUnit file and the audit,
  the verdict ERROR: qualify itself failed, not the family.

Every audit completed here records who completed it (``Audit.completed_by``), and each run
taken over is named in one line (``take_over_one``): its run directory, why it is dead (the
pid its entry names; no process holds its lock), and what was done.
"""

from __future__ import annotations

import calendar
import os
import socket
import time
from collections.abc import Callable

from qualify import records
from qualify.console import display_path
from qualify.evidence.junit import JUnitCase, family_counts, junit_properties, parse_pytest_junit
from qualify.judge.progress import cases_from_events, progress_from_events
from qualify.plan.commit import CommitInfo
from qualify.report.audit_of_run import iso
from qualify.report.junit import render_junit
from qualify.run.registry import Abandoned
from qualify.rundir import RunDir
from qualify.rundir.audit import (
    FLAKY_LISTED,
    Audit,
    CompletedByRecord,
    FamilyRecord,
    TestsRecord,
    TimingsRecord,
)
from qualify.rundir.pause import TAKING_OVER, pause_at
from qualify.verdict import PROVISIONAL_REASON, Verdict

COMMITTED = "the commit of its final reports finished"
AUDIT_FROM_JUNIT = "its audit completed from its final JUnit file"
FROM_EVENTS = "its reports completed from its events (verdict ERROR)"


def _started_of(run_id: str) -> str | None:
    """When a run started, from its id (``20261204T062409Z-8b9799``, ``new_run_id``)."""
    try:
        started = calendar.timegm(time.strptime(run_id.partition("-")[0], "%Y%m%dT%H%M%SZ"))
    except ValueError:
        return None
    return iso(started)


def _audit_from_place(run_dir: RunDir) -> Audit:
    """The provisional audit of a run whose qualify died before it wrote that audit: what the
    directory's place tells, ``<out>/<head>/<family>/<profile>/<run-id>`` (its start to the
    second, from the id: a scheduler's record of the task that ran it is matched by it)."""
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
        timings=TimingsRecord(started=_started_of(run_id.name)),
        problems=["qualify died before it wrote the provisional audit; only the run "
                  "directory's place names the run"],
    )  # fmt: skip


def _counted(tests: TestsRecord, cases: list[JUnitCase]) -> TestsRecord:
    """``tests`` with the outcomes of ``cases`` counted (qualify's own case left out)."""
    counts = family_counts(cases)
    return records.replace(
        tests,
        passed=counts["passed"],
        failed=counts["failed"],
        errors=counts["errors"],
        skipped=counts["skipped"],
        not_run=counts["not_run"],
    )


def _from_events(
    run_dir: RunDir, audit: Audit, taken_over_by: str, problems: tuple[str, ...]
) -> tuple[bytes, Audit]:
    """The reports of a run killed before its final ones: ERROR, the tests from its events."""
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
    tests = TestsRecord(
        collected=progress.collected,
        running_at_end=progress.running,
        running_when=progress.running_when,
        not_run=len(progress.not_run),
        pytest_exitstatus=progress.session_exitstatus,
        reruns=progress.rerun_count,
        flaky=list(progress.flaky[:FLAKY_LISTED]),
        flaky_count=len(progress.flaky),
    )
    tests = _counted(tests, cases)
    properties = {"qualify.verdict": Verdict.ERROR.value, "qualify.reason": reason}
    junit = render_junit(audit.family.name, cases, properties, audit.timings.started or "")
    completed = records.replace(
        audit,
        verdict=Verdict.ERROR.value,
        reason=reason,
        tests=tests,
        timings=records.replace(audit.timings, ended=iso(time.time())),
        problems=[*audit.problems, *problems],
    )
    return junit, completed


def _from_junit(run_dir: RunDir, audit: Audit, verdict: str, reason: str) -> Audit:
    """The audit of a run whose final JUnit file was written and its final audit not: the
    JUnit file's verdict, reason and testcases."""
    cases = parse_pytest_junit(run_dir.junit_path) or []
    tested = [case for case in cases if case.classname != "qualify"]
    tests = _counted(records.replace(audit.tests, collected=len(tested)), cases)
    note = (
        "qualify was killed after it wrote its final JUnit file and before its final audit: "
        "this audit was completed from that JUnit file (peaks, phases and the monitor's "
        "readings are not in it)"
    )
    known = verdict if verdict in {v.value for v in Verdict} else Verdict.ERROR.value
    return records.replace(
        audit, verdict=known, reason=reason, tests=tests, problems=[*audit.problems, note]
    )


def complete_abandoned(
    run_dir: RunDir,
    taken_over_by: str,
    problems: tuple[str, ...],
    completed_by: CompletedByRecord | None = None,
) -> str | None:
    """Complete the reports of a run whose qualify died, so that its JUnit file and audit
    agree; what was done (one of ``COMMITTED``, ``AUDIT_FROM_JUNIT``, ``FROM_EVENTS``), or
    None when there was nothing to do (its qualify had written its own final reports, or
    there is no run directory: it was killed before creating it)."""
    if not run_dir.path.is_dir():
        return None
    committed = run_dir.finish_commit()
    audit = run_dir.read_audit().audit
    audit_final = audit is not None and audit.reason != PROVISIONAL_REASON
    properties = junit_properties(run_dir.junit_path) or {}
    junit_verdict = properties.get("qualify.verdict")
    if audit is None:
        audit = _audit_from_place(run_dir)
    if audit_final and junit_verdict is not None:
        if not committed:
            return None
        done = COMMITTED
    elif junit_verdict is not None:
        audit = _from_junit(run_dir, audit, junit_verdict, properties.get("qualify.reason", ""))
        done = AUDIT_FROM_JUNIT
    else:
        junit, audit = _from_events(run_dir, audit, taken_over_by, problems)
        run_dir.write_junit(junit)
        done = FROM_EVENTS
    run_dir.write_audit(records.replace(audit, completed_by=completed_by))
    return done


def takeover_line(abandoned: Abandoned, done: str | None, page_written: bool) -> str:
    """Which dead run was taken over, why it is dead, and what was done (one line)."""
    entry = abandoned.entry
    why = f"no process holds its registry lock (its qualify, pid {entry.pid}, is gone)"
    if not entry.run_dir.is_dir():
        what = "it had created no run directory yet"
    elif done is None:
        what = "its reports were already final"
    else:
        what = done
    if page_written:
        what += "; report.html written"
    if entry.cgroups:
        what += "; what was left of its E2E killed, its cgroups removed"
    return f"took over the dead run {display_path(entry.run_dir)}: {why}; {what}"


def take_over_one(
    abandoned: Abandoned,
    by_run: str,
    program: str,
    write_page: Callable[[RunDir], object] | None = None,
) -> str:
    """Complete a dead run's reports (and, with ``write_page``, its report page, written
    again once they changed, or when missing); the line to print about it."""
    directory = RunDir(abandoned.entry.run_dir)
    completed_by = CompletedByRecord(
        host=socket.gethostname(),
        pid=os.getpid(),
        time=iso(time.time()) or "",
        by_run=by_run,
        dead_pid=abandoned.entry.pid,
    )
    pause_at(TAKING_OVER)
    try:
        done = complete_abandoned(directory, by_run, abandoned.problems, completed_by)
    except OSError as exc:
        abandoned.release()  # a directory that takes no files is not completed by retrying
        where = display_path(directory.path)
        return f"{program}: cannot complete the dead run {where}: {exc}\n"
    page = write_page is not None and (
        done is not None or (directory.path.is_dir() and not directory.report_path.exists())
    )
    written = page and write_page is not None and write_page(directory) is not None
    abandoned.release()
    return f"{program}: {takeover_line(abandoned, done, written)}\n"
