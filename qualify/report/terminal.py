"""The short human summary printed at the end of ``qualify run`` (rich; plain when piped)."""

from __future__ import annotations

import io
from typing import TYPE_CHECKING

from qualify.evidence.junit import counts_said, family_counts
from qualify.judge.judgement import WITHOUT_PLUGIN
from qualify.judge.result import RunResult
from qualify.run.last_gasp import allocation_point, allocation_words, phase_at
from qualify.rundir.audit import rerun_words
from qualify.sizes import format_bytes, format_duration
from qualify.verdict import Verdict

if TYPE_CHECKING:
    from rich.table import Table

_STYLE = {Verdict.PASSED: "bold green", Verdict.ERROR: "bold magenta"}


def _phase_table(result: RunResult) -> Table | None:
    from rich.table import Table
    from rich.text import Text

    monitor = result.execution.monitor
    if monitor is None or not monitor.phases:
        return None
    limit = result.execution.sandbox.in_effect.memory_bytes if result.execution.sandbox else None
    table = Table(title="phases", title_justify="left", show_edge=False)
    for column in ("phase", "duration", "peak", "of cap", "note"):
        table.add_column(column, justify="left" if column in ("phase", "note") else "right")
    for window in monitor.phases:
        duration = (
            "-" if window.end_mono is None else format_duration(window.end_mono - window.start_mono)
        )
        share = "-"
        if limit and window.peak_bytes is not None:
            share = f"{100 * window.peak_bytes / limit:.0f}%"
        # Text, never markup: a phase name or note is the family's text ("[/x]" is not a tag).
        table.add_row(
            Text(window.name),
            duration,
            format_bytes(window.peak_bytes),
            share,
            Text(window.error or ""),
        )
    return table


def _parity_line(result: RunResult) -> str | None:
    if result.parity_error:
        return f"parity: error: {result.parity_error}"
    report = result.parity
    if report is None:
        return None
    state = "met" if report.passed else "NOT met"
    line = (
        f"parity: {report.exact}/{report.cases} exact, {report.within_noise} noise, "
        f"{report.near_tie} near-tie, {report.wrong} wrong; gate {state}"
    )
    flips = [result for result in report.per_case if result.teacher_forced is not None]
    if flips:
        line += "\nparity: fed the reference's tokens after the divergence: " + ", ".join(
            f"{result.case_id} {result.teacher_forced.describe()}"
            for result in flips
            if result.teacher_forced is not None
        )
    odds = report.odds_line
    if odds is not None:
        line += f"\nparity: {odds}"
    return line


def render_summary(result: RunResult, *, color: bool = False, width: int = 100) -> str:
    """Verdict, limits and peak, tests, phases, parity, as text (ANSI colours when ``color``).

    Every piece of the family's text is printed as text, never parsed as rich markup; the
    caller sanitizes the result before it prints it (a CI log is public).
    """
    from rich.console import Console  # imported late: it is the slowest import of a run
    from rich.text import Text

    buffer = io.StringIO()
    console = Console(
        file=buffer,
        highlight=False,
        soft_wrap=True,
        force_terminal=color,
        no_color=not color,
        width=width,
        emoji=False,
        markup=False,
    )
    spec, execution = result.spec, result.execution
    sandbox = execution.sandbox
    style = _STYLE.get(result.verdict, "bold red")
    console.print(
        Text.assemble(
            (result.verdict.value, style), f" {spec.family.name} ({spec.profile}): {result.reason}"
        )
    )
    limit = sandbox.in_effect.memory_bytes if sandbox else None
    backend = sandbox.backend if sandbox else spec.backend
    cap = format_bytes(limit) if sandbox and sandbox.capped else "UNCAPPED"
    monitor = execution.monitor
    peak = format_bytes(monitor.peak_bytes) if monitor else "-"
    oom = monitor.oom_kills if monitor and monitor.oom_kills is not None else "-"
    dirty = " (dirty)" if spec.commit.dirty else ""
    console.print(Text(f"commit {spec.commit.head}{dirty}  backend {backend}"))
    console.print(Text(f"cap {cap}  peak {peak}  oom kills {oom}"))
    site = allocation_point(list(monitor.last_gasp)) if monitor else None
    if site is not None and monitor is not None:
        site["phase"] = phase_at(monitor.phases, site["at_s"])  # (at_s: monotonic here)
        console.print(Text(f"near the cap: {allocation_words(site)}"))
    progress = result.progress
    counts = family_counts(result.testcases)
    console.print(
        Text(
            f"tests: {counts_said(counts, progress.collected)}"
            + rerun_words(progress.rerun_count, progress.flaky, len(progress.flaky))
            + (f"; running at the end: {progress.running}" if progress.running else "")
        )
    )
    if result.pytest_unseen:
        console.print(Text(f"note: {WITHOUT_PLUGIN}", style="yellow"))
    table = _phase_table(result)
    if table is not None:
        console.print(table)
    parity = _parity_line(result)
    if parity:
        console.print(Text(parity))
    if result.base is not None:
        console.print(Text(result.base.summary))
    for problem in execution.teardown_problems:
        console.print(Text(f"teardown: {problem}", style="yellow"))
    return buffer.getvalue()
