"""The A/B tables, built once and written twice: Markdown (``ab.md``) and one self-contained
HTML page (``ab.html``). Hosts are always a column of their own, never pooled: the method asks
for a result reproduced on two hosts, not an average over them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape

from qualify import records
from qualify.experiment.stats import Spread, too_few_to_call
from qualify.experiment.summary import PEAK, ArmSummary, Comparison, LevelSummary
from qualify.records import frozen_record
from qualify.report.html_sections import table as html_table
from qualify.sizes import format_bytes


@frozen_record
class Table:
    """A titled table of text cells, with notes under it."""

    title: str
    headers: tuple[str, ...]
    rows: Sequence[tuple[str, ...]]
    notes: list[str] = records.field(default_factory=list)


def _number(value: float, unit: str) -> str:
    if unit == "bytes":
        return format_bytes(value)
    return f"{value:.4g}"


def show_spread(value: Spread | None, unit: str) -> str:
    """``min / median / max (sd X)``; ``-`` without values."""
    if value is None:
        return "-"
    parts = " / ".join(_number(v, unit) for v in (value.minimum, value.median, value.maximum))
    return f"{parts} (sd {_number(value.stdev, unit)}, n={value.count})"


def show_verdicts(arm: ArmSummary) -> str:
    """``0/3: OOM_KILLED, OOM_KILLED, OOM_KILLED``."""
    return f"{arm.availability}: {', '.join(arm.verdicts)}"


def _relative(comparison: Comparison) -> str:
    if comparison.relative is None:
        return "-"
    return f"{comparison.relative * 100:+.1f}%"


def _real(comparison: Comparison) -> str:
    if comparison.a is None or comparison.b is None:
        return "-"
    if comparison.real:
        return f"real: {comparison.better} better"
    return (
        "too few runs to call" if too_few_to_call(comparison.a, comparison.b) else "ranges overlap"
    )


def peak_findings(host: str, level: LevelSummary, caps: Mapping[str, int | None]) -> list[str]:
    """What a reader must not miss in the peaks: the same value every time, or the cap."""
    notes = []
    for name, arm in level.arms.items():
        peak, cap = arm.peak, caps.get(name)
        if peak is None:
            continue
        where = f"{host}, arm {name}" + (f", {level.label}" if level.label else "")
        if cap is not None and peak.maximum >= cap and arm.passed:
            notes.append(
                f"{where}: passing runs peaked at the cap ({format_bytes(cap)}): the cgroup "
                "charges reclaimable page cache to the cap, so this peak measures the cap, not "
                "the need (see RSS at peak; qualify headroom finds the need)"
            )
        elif cap is not None and peak.maximum >= cap:
            notes.append(f"{where}: killed at the cap ({format_bytes(cap)}): the peak is the cap")
        elif peak.constant:
            notes.append(f"{where}: the same peak in all {peak.count} runs (zero spread)")
    return notes


def level_tables(
    hosts: Mapping[str, LevelSummary],
    arm_labels: Mapping[str, str],
    caps: Mapping[str, Mapping[str, int | None]],
) -> list[Table]:
    """The tables of one sweep level, one row per host and arm (or per host and metric)."""
    first = next(iter(hosts.values()))
    suffix = f" at {first.label}" if first.label else ""
    rows, notes = [], []
    for host, level in hosts.items():
        for name, arm in level.arms.items():
            rows.append(
                (
                    host,
                    arm_labels[name],
                    show_verdicts(arm),
                    show_spread(arm.peak, "bytes"),
                    show_spread(arm.rss_at_peak, "bytes"),
                )
            )
        notes += peak_findings(host, level, caps.get(host, {}))
        notes += [
            f"{host}: peak b vs a {_relative(c)}, {_real(c)}"
            for c in level.comparisons
            if c.name == PEAK and c.a is not None and c.b is not None
        ]
    headers = ("host", "arm", "availability", "peak min / median / max", "RSS at peak")
    tables = [Table(f"Availability and peak memory{suffix}", headers, rows, notes)]
    phase_rows = [
        (host, phase, *(show_spread(arm.phases.get(phase), "bytes") for arm in level.arms.values()))
        for host, level in hosts.items()
        for phase in sorted({p for arm in level.arms.values() for p in arm.phases})
    ]
    labels = tuple(arm_labels[name] for name in first.arms)
    tables.append(Table(f"Peak memory per phase{suffix}", ("host", "phase", *labels), phase_rows))
    tables.append(_metric_table(hosts, labels, suffix))
    return tables


def reproduced(hosts: Mapping[str, LevelSummary]) -> list[str]:
    """Per compared quantity: reproduced (real, the same arm better, on every host) or not."""
    names = dict.fromkeys(c.name for level in hosts.values() for c in level.comparisons)
    lines = []
    for name in names:
        found = [
            next((c for c in level.comparisons if c.name == name), None) for level in hosts.values()
        ]
        winners = {c.better if c is not None and c.real else None for c in found}
        if len(winners) == 1 and None not in winners:
            lines.append(f"{name}: reproduced on all {len(found)} hosts ({winners.pop()} better)")
        else:
            lines.append(f"{name}: not reproduced on every host")
    return lines


def _metric_table(hosts: Mapping[str, LevelSummary], labels: Sequence[str], suffix: str) -> Table:
    rows, notes = [], []
    for host, level in hosts.items():
        coupled = {name: group for group, _ in level.groups for name in group}
        for comparison in level.comparisons:
            if comparison.name == PEAK:
                continue
            group = coupled.get(comparison.name)
            name = comparison.name + (f" (coupled: {' + '.join(group)})" if group else "")
            rows.append(
                (
                    host,
                    name,
                    comparison.unit,
                    show_spread(comparison.a, comparison.unit),
                    show_spread(comparison.b, comparison.unit),
                    _relative(comparison),
                    _real(comparison),
                )
            )
        notes += [f"{host}: {' + '.join(group)}: {judgement}" for group, judgement in level.groups]
    headers = ("host", "metric", "unit", *(f"{label} min / median / max" for label in labels))
    headers += ("b vs a (means)", "difference")
    if len(hosts) > 1:
        notes += reproduced(hosts)
    notes.append(
        "each run's value is the median of its samples; real only when the arms' ranges "
        "[min, max] over the runs do not overlap"
    )
    return Table(f"Metrics{suffix}", headers, rows, notes)


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def to_markdown(title: str, facts: Sequence[tuple[str, str]], tables: Sequence[Table]) -> str:
    """The Markdown document."""
    lines = [f"# {title}", ""]
    lines += [f"- {key}: {value}" for key, value in facts]
    for table in tables:
        lines += ["", f"## {table.title}", ""]
        if table.rows:
            lines.append("| " + " | ".join(table.headers) + " |")
            lines.append("|" + " --- |" * len(table.headers))
            lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in table.rows]
        else:
            lines.append("(none recorded)")
        lines += ["", *(f"- {note}" for note in table.notes)] if table.notes else []
    return "\n".join(lines).rstrip() + "\n"


def to_text(title: str, facts: Sequence[tuple[str, str]], tables: Sequence[Table]) -> str:
    """The same document for a terminal: plain lines and columns aligned with spaces (no
    Markdown markup)."""
    lines = [title, ""]
    width = max((len(key) for key, _ in facts), default=0)
    lines += [f"{key + ':':<{width + 1}} {value}" for key, value in facts]
    for table in tables:
        lines += ["", table.title]
        if table.rows:
            grid = [table.headers, *table.rows]
            widths = [max(len(row[column]) for row in grid) for column in range(len(grid[0]))]
            lines += [
                "  ".join(cell.ljust(size) for cell, size in zip(row, widths, strict=True)).rstrip()
                for row in grid
            ]
        else:
            lines.append("(none recorded)")
        lines += table.notes
    return "\n".join(lines).rstrip() + "\n"


_CSS = (
    "body{font:14px/1.45 system-ui,sans-serif;margin:24px;color:#1b1f24}"
    "table{border-collapse:collapse;margin:4px 0}td,th{border:1px solid #d0d7de;padding:3px 8px;"
    "text-align:left;vertical-align:top}th{background:#f6f8fa}h1{font-size:22px}"
    "h2{font-size:17px;margin:24px 0 8px}.muted{color:#57606a}"
)


def to_html(title: str, facts: Sequence[tuple[str, str]], tables: Sequence[Table]) -> str:
    """One self-contained page (inline CSS, no script, no network); every value escaped."""
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'>",
        "<meta http-equiv='Content-Security-Policy' content=\"default-src 'none'; "
        "style-src 'unsafe-inline'\">",
        f"<title>{escape(title)}</title><style>{_CSS}</style></head><body>",
        f"<h1>{escape(title)}</h1><ul>",
        *(f"<li>{escape(key)}: <code>{escape(value)}</code></li>" for key, value in facts),
        "</ul>",
    ]
    for table in tables:
        parts.append(f"<h2>{escape(table.title)}</h2>")
        rows = [[escape(cell) for cell in row] for row in table.rows]
        parts.append(html_table(table.headers, rows) if rows else "<p class='muted'>none</p>")
        parts += [f"<p class='muted'>{escape(note)}</p>" for note in table.notes]
    parts.append("</body></html>\n")
    return "".join(parts)
