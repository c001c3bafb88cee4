"""report.html: one self-contained page per run (inline CSS and SVG, no script, no network).

It reads only the run directory (audit.json, timeline.jsonl, events.jsonl), so it can be
written at the end of a run or later with ``qualify report RUN_DIR``. Every value from the
run is escaped: test names, failure messages and token texts come from the family's code.
"""

from __future__ import annotations

import json
from datetime import datetime
from html import escape
from pathlib import Path
from typing import Any

from qualify.events import read_events
from qualify.report.atomic import write_bytes_atomic
from qualify.report.html_sections import (
    commit_section,
    limits_section,
    parity_section,
    phases_section,
    tests_section,
    triage_section,
)
from qualify.report.svg import Band, Marker, Point, Timeline, read_series, render_timeline
from qualify.sizes import format_bytes

REPORT_NAME = "report.html"

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
.peak{fill:#bf3989;stroke:#fff} .peak-label{fill:#bf3989;font-weight:600}
.legend span{margin-right:14px} .sw{display:inline-block;width:18px;height:3px;
vertical-align:middle;margin-right:4px}
"""


def _load_audit(run_dir: Path) -> dict[str, Any]:
    try:
        document = json.loads((run_dir / "audit.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {"verdict": "ERROR", "reason": "audit.json is missing or unreadable"}
    return document if isinstance(document, dict) else {}


def _epoch(iso: object) -> float | None:
    if not isinstance(iso, str):
        return None
    try:
        return datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def build_timeline(run_dir: Path, audit: dict[str, Any]) -> Timeline:
    """The chart's data: samples, phase bands, cap, peak, OOM kills and CUDA OOMs."""
    origin = _epoch((audit.get("timings") or {}).get("started"))
    memory, gpu, kills, samples = read_series(run_dir / "timeline.jsonl", origin)
    origin = origin if origin is not None else (memory[0].t if memory else 0.0)
    section = audit.get("memory") or {}
    bands = tuple(
        Band(
            str(p.get("name")), float(p["start"]), float(p.get("end") or p["start"]), p.get("error")
        )
        for p in section.get("phases") or []
        if isinstance(p, dict) and isinstance(p.get("start"), int | float)
    )
    markers = [Marker("OOM kill", t, "oom") for t in kills]
    for event in read_events(run_dir / "events.jsonl"):
        if event.get("event") == "cuda_oom" and isinstance(event.get("t"), int | float):
            markers.append(Marker("CUDA OOM", event["t"] - (origin or 0.0), "cuda-oom"))
    peak = None
    peak_bytes, peak_at = section.get("peak_bytes"), section.get("sampled_peak_at")
    if isinstance(peak_bytes, int):
        if not isinstance(peak_at, int | float) and memory:
            peak_at = max(memory, key=lambda p: p.value).t
        peak = Point(float(peak_at or 0.0), peak_bytes)
    in_effect = (audit.get("limits") or {}).get("in_effect") or {}
    capped = (audit.get("sandbox") or {}).get("capped")
    cap = in_effect.get("memory_bytes") if capped else None
    return Timeline(
        memory=tuple(memory),
        gpu=tuple(gpu),
        bands=bands,
        markers=tuple(markers),
        cap_bytes=cap if isinstance(cap, int) else None,
        peak=peak,
        samples=samples,
    )


def _header(audit: dict[str, Any]) -> str:
    verdict = str(audit.get("verdict", "ERROR"))
    css = verdict if verdict in ("PASSED", "ERROR") else "other"
    family = (audit.get("family") or {}).get("name", "?")
    return (
        f'<h1>{escape(str(family))} <span class="muted">/ {escape(str(audit.get("profile")))}'
        f" / {escape(str(audit.get('run_id')))}</span></h1>"
        f'<p><span class="verdict v-{css}" id="verdict">{escape(verdict)}</span> '
        f"{escape(str(audit.get('reason', '')))}</p>"
    )


def _timeline_section(timeline: Timeline, audit: dict[str, Any]) -> str:
    memory = audit.get("memory") or {}
    oom = (audit.get("oom") or {}).get("kills")
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
        f"<p>peak {escape(format_bytes(memory.get('peak_bytes')))} "
        f"({escape(str(memory.get('peak_source')))}); OOM kills {escape(str(oom))}; "
        f"{timeline.samples} samples, {len(timeline.memory)} plotted</p>"
    )
    return "<h2>Memory timeline</h2>" + facts + render_timeline(timeline) + legend


def render_html(run_dir: Path) -> str:
    """The whole page for ``run_dir``."""
    audit = _load_audit(run_dir)
    timeline = build_timeline(run_dir, audit)
    title = f"qualify {audit.get('verdict')} {(audit.get('family') or {}).get('name', '')}"
    body = [
        _header(audit),
        triage_section(run_dir, audit),
        commit_section(audit),
        limits_section(audit),
        _timeline_section(timeline, audit),
        phases_section(audit),
        tests_section(audit),
        parity_section(audit),
    ]
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{escape(title)}</title><style>{_CSS}</style></head><body>\n"
        + "\n".join(part for part in body if part)
        + "\n</body></html>\n"
    )


def write_html_report(run_dir: Path) -> Path:
    """Write ``run_dir/report.html`` atomically and return its path."""
    path = run_dir / REPORT_NAME
    write_bytes_atomic(path, render_html(run_dir).encode("utf-8"))
    return path
