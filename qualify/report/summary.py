"""The short human summary printed at the end of ``qualify run`` (rich; plain when piped)."""

from __future__ import annotations

from typing import TYPE_CHECKING, TextIO

from qualify.judge.result import RunResult
from qualify.sizes import format_bytes, format_duration
from qualify.verdict import Verdict

if TYPE_CHECKING:
    from rich.table import Table

_STYLE = {Verdict.PASSED: "bold green", Verdict.ERROR: "bold magenta"}


def _phase_table(result: RunResult) -> Table | None:
    from rich.table import Table

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
        table.add_row(
            window.name, duration, format_bytes(window.peak_bytes), share, window.error or ""
        )
    return table


def _parity_line(result: RunResult) -> str | None:
    if result.parity_error:
        return f"parity: error: {result.parity_error}"
    report = result.parity
    if report is None:
        return None
    data = report.to_dict()
    state = "met" if data["passed"] else "NOT met"
    return (
        f"parity: {data['exact']}/{data['cases']} exact, {data['near_tie']} near-tie, "
        f"{data['wrong']} wrong; gate {state}"
    )


def print_summary(result: RunResult, stream: TextIO) -> None:
    """Verdict, limits and peak, tests, phases, parity; the run directory is printed after."""
    from rich.console import Console  # imported late: it is the slowest import of a run

    console = Console(file=stream, highlight=False, soft_wrap=True)
    spec, execution = result.spec, result.execution
    sandbox = execution.sandbox
    style = _STYLE.get(result.verdict, "bold red")
    console.print(
        f"[{style}]{result.verdict.value}[/] {spec.family.name} ({spec.profile}): {result.reason}"
    )
    limit = sandbox.in_effect.memory_bytes if sandbox else None
    backend = sandbox.backend if sandbox else spec.backend
    cap = format_bytes(limit) if sandbox and sandbox.capped else "UNCAPPED"
    monitor = execution.monitor
    peak = format_bytes(monitor.peak_bytes) if monitor else "-"
    oom = monitor.oom_kills if monitor and monitor.oom_kills is not None else "-"
    dirty = " (dirty)" if spec.commit.dirty else ""
    console.print(f"commit {spec.commit.head}{dirty}  backend {backend}")
    console.print(f"cap {cap}  peak {peak}  oom kills {oom}")
    tests = [c for c in result.testcases if not c.classname.endswith("parity")]
    counts = {
        o: sum(c.outcome == o for c in tests) for o in ("passed", "failed", "error", "skipped")
    }
    console.print(
        f"tests: {counts['passed']} passed, {counts['failed']} failed, "
        f"{counts['error']} errors, {counts['skipped']} skipped"
        + (f"; running at the end: {result.progress.running}" if result.progress.running else "")
    )
    table = _phase_table(result)
    if table is not None:
        console.print(table)
    parity = _parity_line(result)
    if parity:
        console.print(parity)
    for problem in execution.teardown_problems:
        console.print(f"[yellow]teardown: {problem}[/]")
