"""The report page: one self-contained page per run (inline CSS and SVG, no script, no network).

It reads only the run directory (the audit, the timeline, the events), so it can be written at
the end of a run or later with ``qualify report RUN_DIR``. Every value from the
run is escaped: test names, failure messages and token texts come from the family's code.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from html import escape
from pathlib import Path
from typing import Any

from harness import contract
from qualify.atomic import write_bytes_atomic
from qualify.report.html_sections import (
    commit_section,
    limits_section,
    parity_section,
    phases_section,
    tests_section,
    triage_section,
)
from qualify.report.svg import Band, Marker, Point, Timeline, read_series, render_timeline
from qualify.rundir import Audit, RunDir
from qualify.rundir.audit import MemoryRecord
from qualify.sizes import format_bytes
from qualify.untrusted import printable

# A Content-Security-Policy that forbids every fetch: if the page ever referenced anything
# outside itself, the browser would refuse it and log a console error (which the tests catch).
_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"

_CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:24px;color:#1b1f24}
h1{font-size:22px;margin:0 0 4px} h2{font-size:17px;margin:26px 0 8px}
.verdict{display:inline-block;padding:2px 10px;border-radius:4px;color:#fff;font-weight:600}
.v-PASSED{background:#1a7f37} .v-ERROR{background:#8250df} .v-other{background:#cf222e}
table{border-collapse:collapse;margin:4px 0} td,th{border:1px solid #d0d7de;padding:3px 8px;
text-align:left;vertical-align:top} th{background:#f6f8fa} td.num{text-align:right}
tr.bad td{background:#fff1f0} code,.tok{font-family:ui-monospace,monospace;font-size:12px}
.tok{background:#eef1f4;border-radius:3px;padding:0 3px;white-space:pre}
.tok.ref{background:#dafbe1} .tok.nat{background:#ffebe9} .muted{color:#57606a}
pre{background:#f6f8fa;padding:8px;overflow:auto;max-height:300px}
svg text{font-size:11px;fill:#57606a} .grid{stroke:#eaeef2} .band0{fill:#ddf4ff;opacity:.55}
.band1{fill:#fff8c5;opacity:.55} .band-error{fill:#ffebe9;opacity:.7}
.band-label{fill:#0969da} .memory{fill:none;stroke:#0969da;stroke-width:1.6}
.gpu{fill:none;stroke:#8250df;stroke-width:1.4;stroke-dasharray:4 2}
.cap{stroke:#cf222e;stroke-width:1.5;stroke-dasharray:6 3} .cap-label{fill:#cf222e}
.oom{stroke:#cf222e;stroke-width:2} .oom-label{fill:#cf222e;font-weight:600}
.cuda-oom{stroke:#8250df;stroke-width:2} .cuda-oom-label{fill:#8250df;font-weight:600}
.hover rect{fill:transparent} .hover rect:hover{fill:#0969da;opacity:.12}
.peak{fill:#bf3989;stroke:#fff} .peak-label{fill:#bf3989;font-weight:600}
.legend span{margin-right:14px} .sw{display:inline-block;width:18px;height:3px;
vertical-align:middle;margin-right:4px}
"""


def _epoch(iso: object) -> float | None:
    if not isinstance(iso, str):
        return None
    try:
        return datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def load_audit(run_dir: RunDir) -> Audit:
    """The run's audit; a missing or unreadable one is shown as an ERROR page saying so."""
    read = run_dir.read_audit()
    if read.audit is None:
        return Audit(reason=f"the audit is missing or unreadable: {'; '.join(read.problems)}")
    return read.audit


def build_timeline(run_dir: RunDir, audit: Audit) -> Timeline:
    """The chart's data: samples, phase bands, cap, peak, OOM kills and CUDA OOMs."""
    origin = _epoch(audit.timings.started)
    memory, gpu, kills, samples = read_series(run_dir.timeline, origin)
    origin = origin if origin is not None else (memory[0].t if memory else 0.0)
    section = audit.memory
    bands = tuple(
        Band(p.name, float(p.start), float(p.end if p.end is not None else p.start), p.error)
        for p in section.phases
        if p.start is not None
    )
    markers = [Marker("OOM kill", t, "oom") for t in kills]
    for event in run_dir.events(containing=contract.CUDA_OOM.encode()):
        if event.get("event") == contract.CUDA_OOM and isinstance(event.get("t"), int | float):
            markers.append(Marker("CUDA OOM", event["t"] - (origin or 0.0), "cuda-oom"))
    peak = None
    if section.peak_bytes is not None:
        peak = Point(_peak_time(section, memory, kills), section.peak_bytes)
    in_effect = audit.limits.in_effect
    cap = in_effect.memory_bytes if in_effect is not None and audit.sandbox.capped else None
    return Timeline(
        memory=tuple(memory),
        gpu=tuple(gpu),
        bands=bands,
        markers=tuple(markers),
        cap_bytes=cap,
        peak=peak,
        samples=samples,
    )


def _peak_time(section: MemoryRecord, memory: list[Point], kills: list[float]) -> float:
    """When the run's peak was, as near as the run knows: the highest sample's time when it
    lies in the phase whose kernel watermark is the peak; otherwise (a spike between two
    samples, often the one the kernel killed) an OOM kill inside that phase, else that phase's
    highest sample, else its end."""
    sampled = section.sampled_peak_at
    if sampled is None and memory:
        sampled = max(memory, key=lambda p: p.value).t
    holders = [
        p for p in section.phases if p.peak_bytes == section.peak_bytes and p.start is not None
    ]
    if not holders:
        return float(sampled or 0.0)
    # The innermost phase holding the peak: the latest started.
    phase = max(holders, key=lambda p: p.start or 0.0)
    start = float(phase.start or 0.0)
    end = (
        float(phase.end) if phase.end is not None else max([start, *kills, *(p.t for p in memory)])
    )
    if sampled is not None and start <= sampled <= end:
        return float(sampled)
    inside = [t for t in kills if start <= t <= end]
    if inside:
        return inside[0]
    in_phase = [p for p in memory if start <= p.t <= end]
    if in_phase:
        return max(in_phase, key=lambda p: p.value).t
    return end


def _header(audit: Audit) -> str:
    verdict = audit.verdict
    css = verdict if verdict in ("PASSED", "ERROR") else "other"
    return (
        f'<h1>{escape(audit.family.name or "?")} <span class="muted">/ {escape(audit.profile)}'
        f" / {escape(audit.run_id)}</span></h1>"
        f'<p><span class="verdict v-{css}" id="verdict">{escape(verdict)}</span> '
        f"{escape(audit.reason)}</p>"
    )


def _timeline_section(timeline: Timeline, audit: Audit) -> str:
    memory = audit.memory
    legend = (
        '<p class="legend"><span><i class="sw" style="background:#0969da"></i>cgroup usage</span>'
        + (
            '<span><i class="sw" style="background:#8250df"></i>GPU used (NVML)</span>'
            if timeline.gpu
            else ""
        )
        + '<span><i class="sw" style="background:#cf222e"></i>cap / OOM kill</span>'
        + '<span><i class="sw" style="background:#bf3989"></i>peak</span></p>'
    )
    facts = (
        f"<p>peak {escape(format_bytes(memory.peak_bytes))} "
        f"({escape(str(memory.peak_source))}); OOM kills {escape(str(audit.oom.kills))}; "
        f"{timeline.samples} samples, {len(timeline.memory)} plotted</p>"
    )
    return "<h2>Memory timeline</h2>" + facts + render_timeline(timeline) + legend


def render_html(
    run_dir: RunDir, triage: Mapping[str, Any] | None = None, audit: Audit | None = None
) -> str:
    """The whole page of ``run_dir``; ``triage`` holds triage's findings for a failed run
    (class, summary, findings, conflicts, remedies, warnings), computed by the caller;
    ``audit``, the run's audit when the caller has read it already."""
    audit = audit if audit is not None else load_audit(run_dir)
    timeline = build_timeline(run_dir, audit)
    title = f"qualify {audit.verdict} {audit.family.name}"
    # The memory chart first (on the first screen, whatever the triage says), then why the
    # run ended, then the figures behind both.
    body = [
        _header(audit),
        _timeline_section(timeline, audit),
        triage_section(audit, triage),
        phases_section(audit),
        limits_section(audit),
        tests_section(audit),
        parity_section(audit),
        commit_section(audit),
    ]
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{escape(title)}</title><style>{_CSS}</style></head><body>\n"
        + "\n".join(part for part in body if part)
        + "\n</body></html>\n"
    )


def write_html_report(
    run_dir: RunDir, triage: Mapping[str, Any] | None = None, audit: Audit | None = None
) -> Path:
    """Write the run's report page atomically and return its path (``render_html``)."""
    path = run_dir.report_path
    # Derived from the run directory (``qualify report`` writes it again): no fsync.
    page = render_html(run_dir, triage, audit)
    # Test ids and messages are the family's: a lone surrogate is written visibly (\xNN).
    write_bytes_atomic(path, printable(page).encode("utf-8"), durable=False)
    return path
