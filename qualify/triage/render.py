"""The three views of a Triage: JSON (stable keys), Markdown (a PR comment), rich terminal.

JSON document (``schema_version`` 1; keys are stable, new keys may be added):

- ``schema_version`` (int), ``class`` (a TriageClass value), ``exit_code`` (int),
  ``summary`` (one line), ``confidence`` ("high", "medium" or "low")
- ``decided_by``: [{``source``, ``line`` (int or null), ``text``, ``kind``}], the evidence
  lines the class rests on
- ``findings``, ``conflicts``: [{``title``, ``evidence``: [evidence...]}]
- ``remedies``, ``warnings``, ``missing``: [str]
- ``attribution``: {``cap_bytes``, ``peak_bytes``, ``phase_at_peak``, ``phase_at_end``,
  ``phase_peaks``: [{name, peak_bytes, start, end, error}], ``retention``: [{phase,
  next_phase, added_bytes, retained_bytes}], ``culprits``: [{pid, name, rss_bytes...; the
  first also test and test_phase when it was running a test at the peak}], ``victims``:
  [{pid, comm, anon_rss_bytes... or signal}]} (keys absent when not knowable)
- ``sparkline``: {``line``, ``scale_bytes``, ``peak_bytes``, ``seconds``} or null
- ``inputs``: [{``kind``, ``path``, ``detected`` (true: the kind was read from the content)}]
"""

from __future__ import annotations

import json
from typing import Any

from rich.console import Console
from rich.text import Text

from qualify import cuts
from qualify.evidence.evidence_line import Evidence
from qualify.sizes import format_bytes
from qualify.triage.model import Triage

SCHEMA_VERSION = 1
MARKDOWN_LIMIT = 60_000
_STYLE = {0: "bold green", 1: "bold yellow", 3: "bold red", 4: "bold magenta"}


def to_dict(result: Triage) -> dict[str, Any]:
    """The JSON document (see the module docstring)."""
    return {
        "schema_version": SCHEMA_VERSION,
        "class": result.triage_class.value,
        "exit_code": result.exit_code,
        "summary": result.summary,
        "confidence": result.confidence,
        "decided_by": [e.to_dict() for e in result.decided_by],
        "findings": [f.to_dict() for f in result.findings],
        "conflicts": [f.to_dict() for f in result.conflicts],
        "remedies": list(result.remedies),
        "warnings": list(result.warnings),
        "missing": list(result.missing),
        "attribution": result.attribution,
        "sparkline": result.sparkline,
        "inputs": list(result.inputs),
    }


def render_json(result: Triage) -> str:
    """Indented, key-sorted JSON."""
    return json.dumps(to_dict(result), indent=2, sort_keys=True, default=str)


def _spark_caption(result: Triage) -> str | None:
    spark = result.sparkline
    if not spark:
        return None
    return (
        f"{spark['line']}  peak {format_bytes(spark['peak_bytes'])} / "
        f"scale {format_bytes(spark['scale_bytes'])} over {spark['seconds']} s"
    )


def _sections(result: Triage) -> list[tuple[str, list[str]]]:
    sections = [("Evidence", [e.cite() for e in result.decided_by])]
    for finding in result.conflicts:
        sections.append(("Conflict", [finding.title, *(e.cite() for e in finding.evidence)]))
    sections.append(("Findings", [f.title for f in result.findings]))
    if caption := _spark_caption(result):
        sections.append(("Memory vs cap", [caption]))
    sections.append(("Remedies", list(result.remedies)))
    sections.append(("Missing", list(result.missing)))
    sections.append(("Warnings", list(result.warnings)))
    return [(title, lines) for title, lines in sections if lines]


def render_markdown(result: Triage) -> str:
    """A PR comment (bounded to MARKDOWN_LIMIT characters)."""
    out = [f"### qualify triage: `{result.triage_class.value}`", "", _summary(result), ""]
    for title, lines in _sections(result):
        out.append(f"**{title}**")
        out.append("")
        for line in lines:
            fenced = title in ("Evidence", "Conflict") and ": " in line
            out.append(f"- `{_tick(line)}`" if fenced else f"- {line}")
        out.append("")
    text = "\n".join(out)
    if len(text) > MARKDOWN_LIMIT:
        text = cuts.head(text, MARKDOWN_LIMIT) + "\n\n(truncated)\n"
    return text


def _summary(result: Triage) -> str:
    """The summary, with the confidence when it is not high."""
    if result.confidence == "high":
        return result.summary
    return f"{result.summary} (confidence: {result.confidence})"


def _tick(text: str) -> str:
    return text.replace("`", "'")


def render_terminal(result: Triage, console: Console) -> None:
    """The rich view: class, evidence, conflicts, findings, sparkline, remedies, warnings."""
    style = _STYLE.get(result.exit_code, "bold")
    console.print(Text.assemble(("triage: ", "bold"), (result.triage_class.value, style)))
    console.print(Text(_summary(result)))  # text, never markup: it quotes the family's words
    for title, lines in _sections(result):
        console.print(Text(title, style="bold underline"))
        for line in lines:
            console.print(Text("  " + line))


def evidence_lines(evidence: list[Evidence]) -> list[str]:
    """Citations, for callers that print evidence themselves."""
    return [e.cite() for e in evidence]
