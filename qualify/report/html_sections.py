"""The tables of the report page, each built from the audit alone and escaped cell by cell."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

from qualify import records
from qualify.parity.noise_text import forced_text, odds_text
from qualify.rundir.audit import Audit
from qualify.sizes import format_bytes

PARITY_ROWS = 200
"""At most this many parity cases are listed, divergent ones first."""


def _cell(value: object) -> str:
    if value is None:
        return '<span class="muted">-</span>'
    if isinstance(value, bool):
        return "yes" if value else "no"
    return escape(str(value))


def _seconds(value: float | None) -> str:
    return _cell(None if value is None else f"{value:.2f}")


LIMIT_NAMES = {"memory_bytes": "memory", "swap_bytes": "swap", "pids_max": "processes (pids)"}
"""The words the page uses for the audit's field names."""


def table(headers: Sequence[str], rows: Sequence[Sequence[str]], bad: Sequence[bool] = ()) -> str:
    """A table whose cells are already-escaped HTML; rows flagged in ``bad`` are highlighted."""
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    head = f"<tr>{head}</tr>" if any(headers) else ""
    lines = []
    for index, row in enumerate(rows):
        css = ' class="bad"' if index < len(bad) and bad[index] else ""
        lines.append(f"<tr{css}>" + "".join(f"<td>{cell}</td>" for cell in row) + "</tr>")
    return f"<table>{head}{''.join(lines)}</table>"


def _pairs(pairs: Sequence[tuple[str, object]]) -> str:
    """A two-column table of ``pairs``; a pair with nothing to show (None) is left out, never
    shown as an empty row or a dash."""
    return table(
        ["", ""], [[escape(key), _cell(value)] for key, value in pairs if value is not None]
    )


def commit_section(audit: Audit) -> str:
    """Head, tree tested, dirtiness, base; head/base/merge of a pull request."""
    commit = audit.commit
    pairs: list[tuple[str, object]] = [
        ("head", commit.head or None),
        ("tree tested", commit.tree or None),
        ("dirty", commit.dirty),
        ("base", commit.base),
        ("branch", commit.branch),
    ]
    github = commit.github or {}
    for key in ("event", "pr_number", "head", "base", "merge"):
        if github.get(key) is not None:
            pairs.append((f"github {key}", github[key]))
    return "<h2>Commit</h2>" + _pairs(pairs)


def limits_section(audit: Audit) -> str:
    """Limits asked and in effect, side by side."""
    requested, in_effect = audit.limits.requested, audit.limits.in_effect
    rows = []
    for key in ("memory_bytes", "swap_bytes", "pids_max"):
        asked = getattr(requested, key)
        real = getattr(in_effect, key) if in_effect is not None else None
        shown = (format_bytes(asked), format_bytes(real)) if key != "pids_max" else (asked, real)
        rows.append(
            [escape(LIMIT_NAMES[key]), _cell(shown[0]), _cell(shown[1] if in_effect else None)]
        )
    sandbox = audit.sandbox
    capped = {True: "capped", False: "not capped", None: "cap unknown"}[sandbox.capped]
    backend = f"backend {sandbox.backend or 'unknown'}, {capped}"
    return "<h2>Limits</h2>" + f"<p>{escape(backend)}</p>" + table(["", "asked", "in effect"], rows)


def phases_section(audit: Audit) -> str:
    """Per-phase windows and exact peaks."""
    phases = audit.memory.phases
    if not phases:
        return ""
    rows = [
        [
            _cell(p.name),
            _seconds(p.start),
            _seconds(p.end),
            _cell(format_bytes(p.peak_bytes)),
            _cell(p.error),
        ]
        for p in phases
    ]
    bad = [bool(p.error) for p in phases]
    return "<h2>Phases</h2>" + table(["phase", "start s", "end s", "peak", "note"], rows, bad)


def tests_section(audit: Audit) -> str:
    """Test counts and the test running at the end."""
    tests = audit.tests
    keys = ("collected", "passed", "failed", "errors", "skipped", "not_run", "running_at_end")
    pairs: list[tuple[str, object]] = [(key.replace("_", " "), getattr(tests, key)) for key in keys]
    if tests.reruns:
        pairs += [("reruns", tests.reruns), ("passed only on a rerun", ", ".join(tests.flaky))]
    return "<h2>Tests</h2>" + _pairs(pairs)


def _token(token: object, css: str) -> str:
    if not isinstance(token, dict):
        return _cell(None)
    return f'<span class="tok {css}">{escape(str(token.get("text")))}</span> ' + escape(
        f"#{token.get('id')}"
    )


def _parity_row(case: dict[str, Any]) -> list[str]:
    context = "".join(
        f'<span class="tok">{escape(str(t.get("text")))}</span>'
        for t in case.get("context") or []
        if isinstance(t, dict)
    )
    gap = case.get("native_gap")
    return [
        _cell(case.get("case_id")),
        _cell(case.get("kind")),
        _cell(case.get("first_divergence")),
        context or _cell(None),
        _token(case.get("reference_token"), "ref"),
        _token(case.get("native_token"), "nat"),
        _cell(case.get("native_rank")),
        _cell(None if gap is None else f"{gap:.4f}"),
        _cell(forced_text(case.get("teacher_forced"))),
    ]


def parity_section(audit: Audit) -> str:
    """The gate and every case (divergent first) with the tokens where they diverge."""
    parity = audit.parity
    if audit.parity_error:
        return f"<h2>Parity</h2><p>error: {escape(audit.parity_error)}</p>"
    if parity is None:
        return ""
    cases = [c for c in parity.per_case if isinstance(c, dict)]
    cases.sort(key=lambda c: bool(c.get("exact")))
    shown = cases[:PARITY_ROWS]
    headers = ["case", "kind", "at", "context", "reference", "engine", "rank", "gap nats"]
    headers.append("fed the reference's tokens")
    summary = (
        f"<p>{escape(parity.reason)}: gate {'met' if parity.passed else 'NOT met'}; exact "
        f"{parity.exact}, noise {parity.within_noise}, near-tie {parity.near_tie}, wrong "
        f"{parity.wrong}, length/EOS {parity.length_or_eos}, missing {parity.missing}; "
        f"drift {parity.drift}</p>"
    )
    if parity.noise is not None:
        odds = odds_text(
            parity.noise, parity.gate.false_fail_probability, parity.gate.suggested_min_exact
        )
        summary += f"<p>{escape(odds)}</p>"
    more = (
        f"<p>{len(cases) - len(shown)} more cases in the audit</p>" if cases[PARITY_ROWS:] else ""
    )
    rows = [_parity_row(c) for c in shown]
    bad = [not c.get("exact") for c in shown]
    return (
        '<h2>Parity</h2><div id="parity">' + summary + table(headers, rows, bad) + more + "</div>"
    )


def _value_html(value: Any, depth: int = 0) -> str:
    """Any triage result (dataclass, dict, list, text) as nested, escaped HTML."""
    if records.is_record(value) and not isinstance(value, type):
        value = records.asdict(value)
    elif hasattr(value, "to_dict"):
        value = value.to_dict()
    if isinstance(value, dict) and depth < 4:
        items = "".join(
            f"<li><b>{escape(str(k).replace('_', ' '))}</b>: {_value_html(v, depth + 1)}</li>"
            for k, v in value.items()
            if not _empty(v)
        )
        return f"<ul>{items}</ul>"
    if isinstance(value, list | tuple) and depth < 4:
        items = "".join(f"<li>{_value_html(v, depth + 1)}</li>" for v in value if not _empty(v))
        return f"<ul>{items}</ul>"
    if isinstance(value, bool):
        return "yes" if value else "no"
    return escape(str(value))


def _empty(value: Any) -> bool:
    """Nothing to show: None, an empty text, list or mapping (an empty "conflicts" bullet)."""
    return value is None or (isinstance(value, str | list | tuple | dict) and not value)


def triage_section(audit: Audit, findings: Mapping[str, Any] | None) -> str:
    """Why a failed run failed: the audit's own facts, then triage's findings when given."""
    if audit.verdict == "PASSED":
        return ""
    cuda = audit.gpu.cuda_oom
    facts = _pairs(
        [
            ("verdict", audit.verdict),
            ("reason", audit.reason),
            ("phase at end", audit.memory.phase_at_end),
            ("running test", audit.tests.running_at_end),
            ("running when", audit.tests.running_when),
            ("exit", audit.exit.signal or audit.exit.code),
            ("CUDA OOM", cuda.kind if cuda.seen else None),
        ]
    )
    extra = f'<div id="triage-findings">{_value_html(findings)}</div>' if findings else ""
    return '<h2>Triage</h2><div id="triage">' + facts + extra + "</div>"
