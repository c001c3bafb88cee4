"""``qualify run``: a family's E2E under a real memory cap, judged and reported."""

from __future__ import annotations

import dataclasses
import os
import sys
import time
import traceback
from typing import TextIO

from qualify.commands.publish import publish_channels
from qualify.errors import UsageError
from qualify.evidence.junit import JUnitCase
from qualify.judge.judgement import display_path, judge
from qualify.judge.result import RunResult
from qualify.plan.request import RunRequest, build_spec
from qualify.plan.spec import RunSpec, harness_root
from qualify.report.audit import PROVISIONAL_REASON, build_audit, iso, provisional_audit
from qualify.report.junit import render_junit
from qualify.report.summary import print_summary
from qualify.run.execute import Interrupts, execute
from qualify.run.execution import Execution
from qualify.rundir import RunDir
from qualify.sandbox import select_sandbox
from qualify.sandbox.cgroup.layout import current_layout
from qualify.verdict import EXIT_USAGE


def _properties(result: RunResult) -> dict[str, str]:
    spec, sandbox = result.spec, result.execution.sandbox
    in_effect = sandbox.in_effect.memory_bytes if sandbox else None
    return {
        "qualify.verdict": result.verdict.value,
        "qualify.reason": result.reason,
        "qualify.family": spec.family.name,
        "qualify.profile": spec.profile,
        "qualify.commit.head": spec.commit.head,
        "qualify.commit.dirty": str(spec.commit.dirty).lower(),
        "qualify.backend": sandbox.backend if sandbox else spec.backend,
        "qualify.capped": str(bool(sandbox and sandbox.capped)).lower(),
        "qualify.limit.memory_bytes": str(in_effect),
        "qualify.run_id": spec.run_id,
    }


def write_reports(result: RunResult) -> None:
    """The JUnit file and the audit, each atomically."""
    spec = result.spec
    run_dir = RunDir(spec.run_dir)
    run_dir.write_junit(
        render_junit(
            spec.family.name,
            result.testcases,
            _properties(result),
            iso(result.execution.started_wall) or "",
            with_location=spec.junit_flavour == "xunit1",
        )
    )
    run_dir.write_audit(build_audit(result))


def _judge_or_error(spec: RunSpec, execution: Execution) -> RunResult:
    """The judged result; a bug in judging still yields reports (ERROR, traceback kept in the
    run's debug log)."""
    try:
        return judge(spec, execution, current_layout().version)
    except Exception as exc:
        RunDir(spec.run_dir).write_debug(traceback.format_exc())
        failed = dataclasses.replace(
            execution,
            setup_error=f"qualify failed while judging the run: {exc!r} (see the debug log)",
        )
        return judge(spec, failed, None)


def _write_provisional(spec: RunSpec, started_wall: float) -> None:
    """Valid reports before the E2E starts: what remains if qualify itself is SIGKILLed."""
    run_dir = RunDir(spec.run_dir)
    case = JUnitCase("qualify", "run", "error", 0.0, PROVISIONAL_REASON, PROVISIONAL_REASON)
    run_dir.write_junit(
        render_junit(spec.family.name, [dataclasses.replace(case, kind="ERROR")], {}, "")
    )
    run_dir.write_audit(provisional_audit(spec, started_wall))


def run(request: RunRequest, stdout: TextIO = sys.stdout, stderr: TextIO = sys.stderr) -> int:
    """Run one family once; returns the verdict's exit code (2 for bad input)."""
    try:
        spec = build_spec(request)
        sandbox = select_sandbox(
            spec.backend,
            spec.run_id,
            docker=spec.docker,
            family_dir=spec.family.directory,
            harness_root=harness_root(spec.run_dir),
        )
    except UsageError as exc:
        stderr.write(f"qualify run: error: {exc}\n")
        return EXIT_USAGE
    interrupts = Interrupts()
    with interrupts.installed():
        spec.run_dir.mkdir(parents=True, exist_ok=False)
        _write_provisional(spec, time.time())
        execution = execute(spec, sandbox, interrupts)
        if spec.backend == "auto" and execution.sandbox and spec.docker is None:
            why = f"--backend auto chose {execution.sandbox.backend}: no --image was given"
            info = dataclasses.replace(execution.sandbox, notes=(why, *execution.sandbox.notes))
            execution = dataclasses.replace(execution, sandbox=info)
        result = _judge_or_error(spec, execution)
        write_reports(result)
        publication = publish_channels(
            RunDir(spec.run_dir),
            level=request.publish,
            environ=os.environ,
            stdout=stdout,
            secrets_from={**os.environ, **spec.env},
        )
    print_summary(result, stdout)
    if not publication:
        stderr.write(f"qualify run: publication failed: {publication.reason}\n")
    stdout.write(f"{display_path(spec.run_dir)}\n")
    stdout.flush()
    # A failed publication exits 4 (fail closed); the verdict itself is unchanged.
    return max(result.verdict.exit_code, publication.exit_code)
