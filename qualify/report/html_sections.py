"""The tables of report.html, each built from audit.json alone and escaped cell by cell."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from html import escape
from pathlib import Path
from typing import Any

from qualify.sizes import format_bytes

PARITY_ROWS = 200
"""At most this many parity cases are listed, divergent ones first."""


def _cell(value: object) -> str:
    if value is None:
        return '<span class="muted">-</span>'
    return escape(str(value))


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
    return table(["", ""], [[escape(key), _cell(value)] for key, value in pairs])


def commit_section(audit: dict[str, Any]) -> str:
    """Head, tree tested, dirtiness, base; head/base/merge of a pull request."""
    commit = audit.get("commit") or {}
    pairs: list[tuple[str, object]] = [
        ("head", commit.get("head")),
        ("tree tested", commit.get("tree")),
        ("dirty", commit.get("dirty")),
        ("base", commit.get("base")),
        ("branch", commit.get("branch")),
    ]
    github = commit.get("github") or {}
    for key in ("event", "pr_number", "head", "base", "merge"):
        if github.get(key) is not None:
            pairs.append((f"github {key}", github[key]))
    return "<h2>Commit</h2>" + _pairs(pairs)


def limits_section(audit: dict[str, Any]) -> str:
    """Limits asked and in effect, side by side."""
    limits = audit.get("limits") or {}
    requested, in_effect = limits.get("requested") or {}, limits.get("in_effect") or {}
    sandbox = audit.get("sandbox") or {}
    rows = []
    for key in ("memory_bytes", "swap_bytes", "pids_max"):
        asked, real = requested.get(key), in_effect.get(key)
        shown = (format_bytes(asked), format_bytes(real)) if key != "pids_max" else (asked, real)
        rows.append([escape(key), _cell(shown[0]), _cell(shown[1] if in_effect else None)])
    backend = f"backend {sandbox.get('backend')}, capped {sandbox.get('capped')}"
    return "<h2>Limits</h2>" + f"<p>{escape(backend)}</p>" + table(["", "asked", "in effect"], rows)


def phases_section(audit: dict[str, Any]) -> str:
    """Per-phase windows and exact peaks."""
    phases = (audit.get("memory") or {}).get("phases") or []
    if not phases:
        return ""
    rows = [
        [
            _cell(p.get("name")),
            _cell(p.get("start")),
            _cell(p.get("end")),
            _cell(format_bytes(p.get("peak_bytes"))),
            _cell(p.get("error")),
        ]
        for p in phases
    ]
    bad = [bool(p.get("error")) for p in phases]
    return "<h2>Phases</h2>" + table(["phase", "start s", "end s", "peak", "note"], rows, bad)


def tests_section(audit: dict[str, Any]) -> str:
    """Test counts and the test running at the end."""
    tests = audit.get("tests") or {}
    if not tests:
        return ""
    keys = ("collected", "passed", "failed", "errors", "skipped", "not_run", "running_at_end")
    return "<h2>Tests</h2>" + _pairs([(key, tests.get(key)) for key in keys])


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
    ]


def parity_section(audit: dict[str, Any]) -> str:
    """The gate and every case (divergent first) with the tokens where they diverge."""
    parity = audit.get("parity")
    if audit.get("parity_error"):
        return f"<h2>Parity</h2><p>error: {escape(str(audit['parity_error']))}</p>"
    if not isinstance(parity, dict):
        return ""
    cases = [c for c in parity.get("per_case") or [] if isinstance(c, dict)]
    cases.sort(key=lambda c: bool(c.get("exact")))
    shown = cases[:PARITY_ROWS]
    headers = ["case", "kind", "at", "context", "reference", "engine", "rank", "gap nats"]
    summary = (
        f"<p>{escape(str(parity.get('reason')))}: gate "
        f"{'met' if parity.get('passed') else 'NOT met'}; exact {parity.get('exact')}, "
        f"near-tie {parity.get('near_tie')}, wrong {parity.get('wrong')}, "
        f"length/EOS {parity.get('length_or_eos')}, missing {parity.get('missing')}</p>"
    )
    more = (
        f"<p>{len(cases) - len(shown)} more cases in audit.json</p>" if cases[PARITY_ROWS:] else ""
    )
    rows = [_parity_row(c) for c in shown]
    bad = [not c.get("exact") for c in shown]
    return (
        '<h2>Parity</h2><div id="parity">' + summary + table(headers, rows, bad) + more + "</div>"
    )


def _value_html(value: Any, depth: int = 0) -> str:
    """Any triage result (dataclass, dict, list, text) as nested, escaped HTML."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        value = dataclasses.asdict(value)
    elif hasattr(value, "to_dict"):
        value = value.to_dict()
    if isinstance(value, dict) and depth < 4:
        items = "".join(
            f"<li><b>{escape(str(k))}</b>: {_value_html(v, depth + 1)}</li>"
            for k, v in value.items()
        )
        return f"<ul>{items}</ul>"
    if isinstance(value, list | tuple) and depth < 4:
        return "<ul>" + "".join(f"<li>{_value_html(v, depth + 1)}</li>" for v in value) + "</ul>"
    return escape(str(value))


def _triage(run_dir: Path) -> Any:
    """The triage of the run (class, findings, conflicts, remedies); a triage bug must not cost
    the report, so it is shown instead."""
    from qualify.triage import Sources, triage

    try:
        found = triage(Sources(run_dir=run_dir))
    except Exception as exc:
        return {"triage failed": repr(exc)}
    return {
        "class": found.triage_class.value,
        "summary": found.summary,
        "findings": [finding.title for finding in found.findings],
        "conflicts": [conflict.title for conflict in found.conflicts],
        "remedies": list(found.remedies),
        "warnings": list(found.warnings),
    }


def triage_section(run_dir: Path, audit: dict[str, Any]) -> str:
    """Why a failed run failed: triage findings when available, else the audit's own facts."""
    if audit.get("verdict") == "PASSED":
        return ""
    memory, tests = audit.get("memory") or {}, audit.get("tests") or {}
    cuda = ((audit.get("gpu") or {}).get("cuda_oom")) or {}
    facts = _pairs(
        [
            ("verdict", audit.get("verdict")),
            ("reason", audit.get("reason")),
            ("phase at end", memory.get("phase_at_end")),
            ("running test", tests.get("running_at_end")),
            ("running when", tests.get("running_when")),
            (
                "exit",
                (audit.get("exit") or {}).get("signal") or (audit.get("exit") or {}).get("code"),
            ),
            ("CUDA OOM", cuda.get("kind") if cuda.get("seen") else None),
        ]
    )
    findings = _triage(run_dir)
    extra = f'<div id="triage-findings">{_value_html(findings)}</div>' if findings else ""
    return '<h2>Triage</h2><div id="triage">' + facts + extra + "</div>"
