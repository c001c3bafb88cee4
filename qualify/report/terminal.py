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


_Lines = list[tuple[str, str | None]]
"""Lines of the summary: (text, rich style)."""
_CONTROL = dict.fromkeys((7, 8, 11, 12, 13))
"""What rich's ``Text`` strips from a text (bell, backspace, vertical tab, form feed, carriage
return: ``rich.control.strip_control_codes``)."""


def _lines(result: RunResult) -> tuple[_Lines, _Lines]:
    """The summary's lines (text, rich style) before the phase table and after it."""
    spec, execution = result.spec, result.execution
    sandbox = execution.sandbox
    style = _STYLE.get(result.verdict, "bold red")
    limit = sandbox.in_effect.memory_bytes if sandbox else None
    backend = sandbox.backend if sandbox else spec.backend
    cap = format_bytes(limit) if sandbox and sandbox.capped else "UNCAPPED"
    monitor = execution.monitor
    peak = format_bytes(monitor.peak_bytes) if monitor else "-"
    oom = monitor.oom_kills if monitor and monitor.oom_kills is not None else "-"
    dirty = " (dirty)" if spec.commit.dirty else ""
    before: _Lines = [
        (result.verdict.value, style),  # the verdict alone in its style, then the line
        (f" {spec.family.name} ({spec.profile}): {result.reason}", None),
        (f"commit {spec.commit.head}{dirty}  backend {backend}", None),
        (f"cap {cap}  peak {peak}  oom kills {oom}", None),
    ]
    site = allocation_point(list(monitor.last_gasp)) if monitor else None
    if site is not None and monitor is not None:
        site["phase"] = phase_at(monitor.phases, site["at_s"])  # (at_s: monotonic here)
        before.append((f"near the cap: {allocation_words(site)}", None))
    progress = result.progress
    counts = family_counts(result.testcases)
    before.append(
        (
            f"tests: {counts_said(counts, progress.collected)}"
            + rerun_words(progress.rerun_count, progress.flaky, len(progress.flaky))
            + (f"; running at the end: {progress.running}" if progress.running else ""),
            None,
        )
    )
    if result.pytest_unseen:
        before.append((f"note: {WITHOUT_PLUGIN}", "yellow"))
    after: _Lines = []
    parity = _parity_line(result)
    if parity:
        after.append((parity, None))
    if result.base is not None:
        after.append((result.base.summary, None))
    for problem in execution.teardown_problems:
        after.append((f"teardown: {problem}", "yellow"))
    return before, after


def render_summary(result: RunResult, *, color: bool = False, width: int = 100) -> str:
    """Verdict, limits and peak, tests, phases, parity, as text (ANSI colours when ``color``).

    Every piece of the family's text is printed as text, never parsed as rich markup; the
    caller sanitizes the result before it prints it (a CI log is public). Without colours and
    without phases (a plain pytest family's run, piped into a CI log) the lines are written
    directly, as rich writes them, and rich is not imported (a tenth of a run's own CPU).
    """
    before, after = _lines(result)
    monitor = result.execution.monitor
    # (a tab after a wide character: rich counts cells to its tab stop, ``expandtabs`` does not)
    tabbed = any("\t" in text and not text.isascii() for text, _ in [*before, *after])
    if not color and (monitor is None or not monitor.phases) and not tabbed:
        return _plain(before, after)
    return _rich(result, before, after, color=color, width=width)


def _plain(before: _Lines, after: _Lines) -> str:
    """The lines as rich writes them without colours: its control codes stripped, tabs
    expanded to its tab stops, never wrapped."""
    lines = [before[0][0] + before[1][0], *(text for text, _ in [*before[2:], *after])]
    return "".join(line.translate(_CONTROL).expandtabs(8) + "\n" for line in lines)


def _rich(result: RunResult, before: _Lines, after: _Lines, *, color: bool, width: int) -> str:
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
    console.print(Text.assemble((before[0][0], before[0][1] or ""), before[1][0]))
    for text, style in before[2:]:
        console.print(Text(text, style=style or ""))
    table = _phase_table(result)
    if table is not None:
        console.print(table)
    for text, style in after:
        console.print(Text(text, style=style or ""))
    return buffer.getvalue()
