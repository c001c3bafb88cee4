"""The Markdown step summary of a run, bounded so that GitHub never rejects it."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from html import escape
from typing import TYPE_CHECKING, Any

from qualify import cuts
from qualify.evidence.junit import OWN_CLASSNAME, counts_said
from qualify.parity.noise_text import odds_text
from qualify.report.base_run import changed_phases
from qualify.report.run_diff import phase_totals
from qualify.rundir import Audit
from qualify.rundir.audit import ParityRecord
from qualify.sizes import format_bytes, format_duration
from qualify.untrusted import printable

if TYPE_CHECKING:
    from qualify.report.github import Failure

SUMMARY_LIMIT = 1024 * 1024 - 16 * 1024
"""GitHub accepts 1 MiB per step; 16 KiB stay free for other tools writing to the same step."""
FAILURE_TEXT_LIMIT = 4096


Clean = Callable[[str], str]
"""The sanitizer, applied to every piece of text after it is clipped and before it is escaped."""


def _same(text: str) -> str:
    return text


def _cell(value: object, clean: Clean = _same) -> str:
    """A Markdown table cell: sanitized, HTML-escaped, pipes and line breaks neutralised."""
    text = "-" if value is None else clean(str(value))
    return escape(text).replace("|", "&#124;").replace("\r", "").replace("\n", "<br>")


def _clip(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return cuts.head(text, limit // 2) + "\n[... truncated ...]\n" + cuts.tail(text, limit // 2)


def _tests_said(audit: Audit) -> str:
    tests = audit.tests
    counts = {
        "passed": tests.passed, "failed": tests.failed, "errors": tests.errors,
        "skipped": tests.skipped, "not_run": tests.not_run,
    }  # fmt: skip
    return counts_said(counts, tests.collected) + tests.reruns_said()


def _header(audit: Audit, run_dir: str, clean: Clean) -> str:
    commit = audit.commit
    github = commit.github or {}
    in_effect = audit.limits.in_effect
    memory, parity = audit.memory, audit.parity
    cap = in_effect.memory_bytes if in_effect else None
    peak = memory.peak_bytes
    share = f" ({100 * peak / cap:.0f}% of the cap)" if peak and cap else ""
    base, merge = github.get("base") or commit.base, github.get("merge")
    rows = [
        ("head", github.get("head") or commit.head),
        ("base", base),
        ("merge", merge),
        ("cap in effect", format_bytes(cap) if cap else None),
        ("peak", f"{format_bytes(peak)}{share}" if peak else None),
        ("OOM kills", audit.oom.kills or None),
        ("phase at the end", memory.phase_at_end),
        ("tests", _tests_said(audit)),
        ("parity", parity.reason if parity else None),
        ("parity odds", _odds(parity)),
        ("run directory", run_dir),
    ]
    table = "\n".join(
        f"| {_cell(key)} | {_cell(value, clean)} |"
        for key, value in rows
        if value not in (None, "", "None")
    )
    return (
        f"## qualify {_cell(audit.verdict)}: {_cell(audit.family.name, clean)} "
        f"({_cell(audit.profile, clean)})\n\n{_cell(audit.reason, clean)}\n\n"
        f"| field | value |\n|---|---|\n{table}\n\n"
    )


def _odds(parity: ParityRecord | None) -> str | None:
    """The reference's noise floor and the gate's false-fail odds (None without them)."""
    if parity is None or parity.noise is None:
        return None
    gate = parity.gate
    return odds_text(parity.noise, gate.false_fail_probability, gate.suggested_min_exact)


def _why(triage: Mapping[str, Any] | None, clean: Clean) -> str:
    """Triage's answer: its class and summary, its findings, what to change."""
    if not triage or "class" not in triage:
        return ""
    lines = [f"### Why: {_cell(triage['class'])}", "", _cell(triage.get("summary") or "", clean)]
    findings = [str(f) for f in triage.get("findings") or []][:6]
    if findings:
        lines += ["", "**Findings**", "", *(f"- {_cell(f, clean)}" for f in findings)]
    remedies = [str(r) for r in triage.get("remedies") or []][:4]
    if remedies:
        lines += ["", "**What to change**", "", *(f"- {_cell(r, clean)}" for r in remedies)]
    return "\n".join(lines) + "\n\n"


_BASE_PHASES_SHOWN = 8


def _against_base(audit: Audit, clean: Clean) -> str:
    """The change against the base run (``--base-run``): its line, and the phases whose peak
    changed most."""
    base = audit.base
    if base is None:
        return ""
    lines = ["### Against the base run", "", _cell(base.summary, clean)]
    moved = changed_phases(base)[:_BASE_PHASES_SHOWN]
    if moved:
        lines += ["", "| phase | base peak | peak | change |", "|---|---:|---:|---:|"]
        for phase in moved:
            delta = phase.delta_bytes or 0
            change = ("+" if delta >= 0 else "-") + format_bytes(abs(delta))
            lines.append(
                f"| {_cell(phase.name, clean)} | {_cell(format_bytes(phase.base_peak_bytes or 0))}"
                f" | {_cell(format_bytes(phase.peak_bytes or 0))} | {_cell(change)} |"
            )
    if base.changed_tests:
        lines.append("")  # (a list right under a table is not part of it)
    for test, before, after in base.changed_tests[:10]:
        lines.append(f"- {_cell(test, clean)}: {_cell(before)} -> {_cell(after)}")
    return "\n".join(lines) + "\n\n"


def _phases(audit: Audit, clean: Clean) -> str:
    """Each phase's peak against the cap, its duration (phases run more than once: the
    highest peak, the summed duration)."""
    in_effect = audit.limits.in_effect
    cap = in_effect.memory_bytes if in_effect else None
    peaks, durations, names = phase_totals(audit)
    if not names:
        return ""
    rows = []
    for name in names[:_PHASES_SHOWN]:
        peak = peaks.get(name)
        share = f"{100 * peak / cap:.0f}%" if peak and cap else ""
        took = format_duration(durations[name]) if name in durations else "unfinished"
        rows.append(
            f"| {_cell(name, clean)} | {_cell(took)} | "
            f"{_cell(format_bytes(peak) if peak else '')} | {_cell(share)} |"
        )
    more = (
        f"\n{len(names) - _PHASES_SHOWN} more phases in the report page\n"
        if len(names) > _PHASES_SHOWN
        else ""
    )
    return (
        "### Phases\n\n| phase | duration | peak | of the cap |\n|---|---:|---:|---:|\n"
        + "\n".join(rows)
        + "\n"
        + more
        + "\n"
    )


_PHASES_SHOWN = 20
_CHART_POINTS = 60


def memory_chart(audit: Audit, samples: Sequence[tuple[float, int]]) -> str:
    """The memory curve as a Mermaid ``xychart-beta`` block (GitHub renders it): the highest
    usage in each of up to 60 equal slices of the run, in MiB, and the cap as a second line."""
    if len(samples) < 2:
        return ""
    start, end = samples[0][0], samples[-1][0]
    span = max(end - start, 1e-6)
    slices = min(_CHART_POINTS, len(samples))
    highest = [0] * slices
    for at, usage in samples:
        index = min(slices - 1, int((at - start) / span * slices))
        highest[index] = max(highest[index], usage)
    for index in range(1, slices):  # a slice without a sample keeps the level before it
        highest[index] = highest[index] or highest[index - 1]
    mib = [round(value / 2**20) for value in highest]
    in_effect = audit.limits.in_effect
    cap = in_effect.memory_bytes if in_effect else None
    top = max([*mib, round(cap / 2**20) if cap else 0])
    lines = [
        "```mermaid",
        "xychart-beta",
        '    title "Memory of the run (MiB; the cap as the flat line)"',
        f'    x-axis "seconds" 0 --> {max(1, round(span))}',
        f'    y-axis "MiB" 0 --> {max(1, round(top * 1.05))}',
        f"    line [{', '.join(map(str, mib))}]",
    ]
    if cap:
        lines.append(f"    line [{', '.join([str(round(cap / 2**20))] * slices)}]")
    return "### Memory\n\n" + "\n".join(lines) + "\n```\n\n"


_ENTRY_SEPARATOR = re.compile(r"^_(?: _)+[ \t]*$", re.MULTILINE)
"""The line between two entries of pytest's long traceback."""
_LOCATION = re.compile(r"^(\S[^\n:]*):\d+: ", re.MULTILINE)
_NOT_THE_FAMILYS = re.compile(r"[/\\](?:site-packages|dist-packages|lib[/\\]python3\.\d+)[/\\]")


def family_frames(text: str) -> str:
    """A pytest traceback with the entries whose location is in the standard library or an
    installed package left out (one line says how many): the family's own frames, and always
    the last entry (where the error was raised)."""
    entries = _ENTRY_SEPARATOR.split(text)
    if len(entries) < 2:
        return text
    kept: list[str] = []
    dropped = 0
    for number, entry in enumerate(entries):
        locations = _LOCATION.findall(entry)
        foreign = bool(locations) and bool(_NOT_THE_FAMILYS.search(locations[-1]))
        if foreign and number < len(entries) - 1:
            dropped += 1
            continue
        shown = entry
        if foreign:  # where it was raised: the error and its place, not the library's source
            said = [line for line in entry.splitlines() if line.startswith("E ")]
            shown = "\n".join(["", *said, entry.rstrip().splitlines()[-1]])
            dropped += 1
        if dropped:
            kept.append(f"[{dropped} frame(s) in the standard library or installed packages]\n")
            dropped = 0
        kept.append(shown)
    if dropped:
        kept.append(f"[{dropped} frame(s) in the standard library or installed packages]\n")
    return "_ _ _\n".join(kept)


def _failure(failure: Failure, clean: Clean) -> str:
    where = f" ({failure.file}:{failure.line})" if failure.file else ""
    text = family_frames(failure.text)
    return (
        f"<details><summary><b>{escape(clean(failure.title))}</b>{escape(clean(where))}: "
        f"{escape(clean(_clip(failure.message, 500)))}</summary>\n\n"
        f"<pre>{escape(clean(_clip(text, FAILURE_TEXT_LIMIT)))}</pre>\n</details>\n\n"
    )


def _priority(failure: Failure) -> int:
    """Errors (what killed the run) first, then test failures, then parity cases."""
    if failure.outcome == "error":
        return 0
    return 2 if failure.classname.endswith("parity") else 1


def _fit(text: str, budget: int) -> str:
    text = printable(text)  # (a test id's lone surrogate: \xNN)
    data = text.encode("utf-8")
    return text if len(data) <= budget else data[: max(budget, 0)].decode("utf-8", "ignore")


def render_summary(
    audit: Audit,
    failures: Sequence[Failure],
    run_dir: str,
    budget: int,
    clean: Clean = _same,
    *,
    triage: Mapping[str, Any] | None = None,
    samples: Sequence[tuple[float, int]] = (),
) -> str:
    """The verdict and its reason with the run's facts, triage's answer (``triage``: its class,
    summary, findings and remedies), the change against the base run, the phases against the
    cap, the memory curve (``samples``: seconds and bytes), then failures (most important
    first) while they fit in ``budget`` bytes, and where the report page is; every piece of
    text through ``clean`` after it is clipped, before it is escaped."""
    if budget <= 0:
        return ""
    pointer_reserve = 600
    text = _header(audit, run_dir, clean) + _why(triage, clean) + _against_base(audit, clean)
    text += _phases(audit, clean)
    text += memory_chart(audit, samples)
    # Test ids are the family's: a lone surrogate (in a test named by triage, a phase or a
    # failure) is written visibly before anything is measured in bytes.
    text = printable(text)
    ordered = sorted(failures, key=_priority)
    # Each in one place, as the tests line counts them: qualify's own testcase (what ended the
    # run) is not one of the family's tests, nor is a parity case.
    groups = {
        "ended": [f for f in ordered if f.classname == OWN_CLASSNAME],
        "tests": [f for f in ordered if f.classname != OWN_CLASSNAME and _priority(f) < 2],
        "parity": [f for f in ordered if f.classname != OWN_CLASSNAME and _priority(f) == 2],
    }
    headings = {
        "ended": "### What ended the run\n\n",
        "tests": f"### Failures ({len(groups['tests'])})\n\n",
        "parity": f"### Parity cases that failed ({len(groups['parity'])})\n\n",
    }
    ordered = [failure for group in groups.values() for failure in group]
    used = len(text.encode("utf-8"))
    shown = 0
    heading_of = {id(group[0]): headings[name] for name, group in groups.items() if group}
    for failure in ordered:
        entry = heading_of.get(id(failure), "") + printable(_failure(failure, clean))
        size = len(entry.encode("utf-8"))
        if used + size + pointer_reserve > budget:
            break
        text += entry
        used += size
        shown += 1
    if shown < len(ordered):
        text += (
            f"**{len(ordered) - shown} more failures not shown** (the step summary is limited to "
            f"1 MiB): see the JUnit file in the uploaded artifact of {_cell(run_dir, clean)}.\n"
        )
    text += (
        f"\nThe report page: `{_cell(run_dir, clean)}/report.html`; the sanitized bundle to "
        f"upload: `{_cell(run_dir, clean)}/public/`.\n"
    )
    return _fit(text, budget)
