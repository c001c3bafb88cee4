"""report.html: pure rendering checks, then real runs opened in a real headless Chromium."""

from __future__ import annotations

import itertools
import json
import re
import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest

from qualify.report.html import render_html, write_html_report
from qualify.report.svg import DEFAULT_BUCKETS, Timeline, read_series, render_timeline
from qualify.rundir import RunDir
from qualify.rundir.events import read_timeline
from tests.conftest import Completed, RunQualify, git

CHROMIUM = shutil.which("chromium")

PARITY_TEST = """
import harness


def test_generate():
    with harness.phase("generate"):
        for i in range(3):
            reference = [1, 2, 3, 4, 5]
            native = list(reference) if i == 0 else [1, 2, 9, 4, 5]
            top = [[(t, -0.1, f"<t{t}>"), (9, -0.3 if i == 1 else -4.0, "<b>&")] for t in reference]
            for side, ids in (("reference", reference), ("native", native)):
                harness.record_case(
                    f"case-{i}", side=side, token_ids=ids, text="</td><script>x</script>",
                    top_logprobs=top, token_texts=[f"<t{t}>" for t in ids], prompt="p", eos=True,
                )
"""


def _write_timeline(path: Path, samples: int) -> None:
    with path.open("w") as handle:
        for index in range(samples):
            usage = 1000 + index % 97 + (10**6 if index == samples // 3 else 0)
            handle.write(json.dumps({"t": 100.0 + index * 0.05, "usage": usage, "oom_kill": 0}))
            handle.write("\n")
        handle.write('{"t": 1e9, "usa')  # truncated last line, as after a SIGKILL


def test_long_timeline_is_downsampled_and_keeps_its_peak(tmp_path: Path) -> None:
    path = tmp_path / "timeline.jsonl"
    _write_timeline(path, 50_000)
    memory, gpu, kills, samples = read_series(lambda: read_timeline(path), origin_wall=100.0)
    assert samples == 50_000
    assert len(memory) <= 2 * DEFAULT_BUCKETS
    assert max(p.value for p in memory) == 1000 + (50_000 // 3) % 97 + 10**6
    assert (gpu, kills) == ([], [])
    svg = render_timeline(Timeline(memory=tuple(memory)))
    assert len(svg) < 40_000


def test_oom_kill_increments_become_markers(tmp_path: Path) -> None:
    path = tmp_path / "timeline.jsonl"
    counters = [0, 0, 1, 1, 3]
    path.write_text(
        "".join(
            json.dumps({"t": float(i), "usage": 10, "oom_kill": c}) + "\n"
            for i, c in enumerate(counters)
        )
    )
    _, _, kills, _ = read_series(lambda: read_timeline(path), origin_wall=0.0)
    assert kills == [2.0, 4.0]


@pytest.mark.foreign_audit
def test_everything_from_the_run_is_escaped(tmp_path: Path) -> None:
    hostile = '<script>alert("x")</script>'
    audit = {
        "verdict": "FAILED",
        "reason": hostile,
        "family": {"name": hostile},
        "profile": hostile,
        "memory": {"phases": [{"name": hostile, "start": 0.0, "end": 1.0, "peak_bytes": 5}]},
        "tests": {"running_at_end": hostile},
        "parity": {"per_case": [{"case_id": hostile, "context": [{"id": 1, "text": hostile}]}]},
    }
    (tmp_path / "audit.json").write_text(json.dumps(audit))
    (tmp_path / "timeline.jsonl").write_text('{"t": 0, "usage": 1}\n{"t": 1, "usage": 2}\n')
    page = render_html(RunDir(tmp_path))
    assert "<script" not in page
    assert page.count("&lt;script&gt;") >= 6
    assert re.search(r'<polyline class="memory" points="[^"]+,', page)


@pytest.mark.foreign_audit
def test_gpu_series_and_cuda_oom_marker(tmp_path: Path) -> None:
    (tmp_path / "audit.json").write_text(json.dumps({"verdict": "CUDA_OOM"}))
    (tmp_path / "timeline.jsonl").write_text(
        "".join(
            json.dumps({"t": t, "usage": 100, "gpu": {"devices": [[0, t * 1000, 10**6, 0]]}}) + "\n"
            for t in range(5)
        )
    )
    (tmp_path / "events.jsonl").write_text(json.dumps({"event": "cuda_oom", "t": 3.0}) + "\n")
    page = render_html(RunDir(tmp_path))
    assert '<polyline class="gpu"' in page
    assert 'class="cuda-oom"' in page


@pytest.mark.foreign_audit
def test_a_spike_between_samples_is_drawn_in_its_phase(tmp_path: Path) -> None:
    """The kernel's peak (256 MiB, the cap) came in phase "second" between two samples and was
    killed there; the highest sample (94 MiB at 0.70 s) is in phase "first". The peak is drawn
    at the kill, and hovering it says the peak and its phase, not the sample's."""
    mib = 1 << 20
    started = 1_796_342_400.0  # 2026-12-04T00:00:00Z
    audit = {
        "verdict": "OOM_KILLED",
        "timings": {"started": "2026-12-04T00:00:00+00:00"},
        "limits": {"in_effect": {"memory_bytes": 256 * mib}},
        "sandbox": {"capped": True},
        "memory": {
            "peak_bytes": 256 * mib,
            "peak_source": "kernel",
            "sampled_peak_bytes": 94 * mib,
            "sampled_peak_at": 0.7,
            "phases": [
                {"name": "first", "start": 0.1, "end": 1.0, "peak_bytes": 94 * mib},
                {
                    "name": "second",
                    "start": 1.0,
                    "end": 1.3,
                    "peak_bytes": 256 * mib,
                    "error": "unfinished",
                },
            ],
        },
    }
    (tmp_path / "audit.json").write_text(json.dumps(audit))
    samples = [(0.3, 40, 0), (0.7, 94, 0), (0.9, 90, 0), (1.25, 1, 1), (1.5, 1, 1)]
    (tmp_path / "timeline.jsonl").write_text(
        "".join(
            json.dumps({"t": started + t, "usage": m * mib, "oom_kill": k}) + "\n"
            for t, m, k in samples
        )
    )
    page = render_html(RunDir(tmp_path))
    assert re.search(r'<circle class="peak"[^>]*><title>peak 256 MiB at 1\.25s</title>', page)
    assert "<title>1.25 s: 256 MiB, 100% of the cap; phase second</title>" in page


# --- real runs in a real browser


def _chromium(*args: str, user_data: Path) -> subprocess.CompletedProcess[str]:
    assert CHROMIUM is not None
    return subprocess.run(
        [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-extensions",
            f"--user-data-dir={user_data}",
            "--enable-logging=stderr",
            "--v=0",
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        stdin=subprocess.DEVNULL,
    )


def _console_messages(stderr: str) -> list[str]:
    # Chromium logs every console message (errors, CSP refusals, uncaught exceptions) to stderr
    # as "...:CONSOLE(line)] ..." or "...:INFO:CONSOLE:1] ..." (chromium 150, Debian 12).
    return [line for line in stderr.splitlines() if ":CONSOLE" in line or "Uncaught" in line]


def _open(page: Path, browser: Path, screenshot: Path) -> str:
    """The DOM after load; asserts no console message and that a screenshot was rendered."""
    dumped = _chromium("--dump-dom", page.as_uri(), user_data=browser)
    assert dumped.returncode == 0, dumped.stderr
    assert _console_messages(dumped.stderr) == []
    shot = _chromium(
        f"--screenshot={screenshot}", "--window-size=1280,2000", page.as_uri(), user_data=browser
    )
    assert shot.returncode == 0, shot.stderr
    assert screenshot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert screenshot.stat().st_size > 10_000
    return dumped.stdout


def _timeline_points(dom: str) -> int:
    svg = re.search(r'<svg id="timeline".*?</svg>', dom, re.S)
    assert svg is not None, "no <svg id=timeline> in the DOM"
    polyline = re.search(r'<polyline class="memory" points="([^"]*)"', svg.group())
    assert polyline is not None, "the timeline has no memory series"
    return len(polyline.group(1).split())


@pytest.mark.slow
def test_console_check_catches_a_script_error(tmp_path: Path, browser: Path) -> None:
    page = tmp_path / "broken.html"
    page.write_text('<!DOCTYPE html><p>x</p><script>throw new Error("planted-7f3a")</script>')
    dumped = _chromium("--dump-dom", page.as_uri(), user_data=browser)
    assert any("planted-7f3a" in line for line in _console_messages(dumped.stderr))


def _parity_repo(root: Path) -> Path:
    family = root / "families" / "par"
    family.mkdir(parents=True)
    (family / "family.toml").write_text(
        textwrap.dedent("""
        name = "par"
        description = "records divergent parity cases"
        [e2e]
        command = ["python", "-m", "pytest", "test_par.py", "-q"]
        timeout = "2m"
        [parity]
        min_exact = 2
        """)
    )
    (family / "test_par.py").write_text(PARITY_TEST)
    (family / "pytest.ini").write_text("[pytest]\n")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "par family")
    return root


def _report(completed: Completed, verdict: str, browser: Path, out: Path) -> str:
    assert completed.run_dir is not None, completed.stdout + completed.stderr
    assert completed.audit()["verdict"] == verdict
    page = write_html_report(RunDir(completed.run_dir))
    return _open(page, browser, out / f"{verdict}.png")


@pytest.mark.privileged
@pytest.mark.slow
def test_report_of_a_passed_run(repo: Path, run_qualify: RunQualify, browser: Path) -> None:
    completed = run_qualify("run", "--family", "hog", "--mem", "512M", "--repo", str(repo))
    # The run's last lines name its page, then its directory.
    *_, said, run_dir = completed.stdout.splitlines()
    assert said == f"report page: {run_dir}/report.html", completed.stdout
    dom = _report(completed, "PASSED", browser, repo.parent)
    assert _timeline_points(dom) > 2
    assert 'class="cap"' in dom and 'class="peak"' in dom
    assert dom.count('class="band') >= 3  # first, second, sleep


MEASURE = """<script>
const boxes = [...document.querySelectorAll("svg text")]
  .map(e => [e.textContent, e.getBoundingClientRect()]);
const clash = [];
const apart = (r, q) => r.right - 1 <= q.left || q.right - 1 <= r.left
  || r.bottom - 1 <= q.top || q.bottom - 1 <= r.top;
for (let i = 0; i < boxes.length; i++) for (let j = i + 1; j < boxes.length; j++) {
  const [a, r] = boxes[i], [b, q] = boxes[j];
  if (r.width && q.width && !apart(r, q)) clash.push(a + " / " + b);
}
const svg = document.querySelector("svg").getBoundingClientRect();
const out = boxes
  .filter(([, r]) => r.width && (r.left < svg.left - 1 || r.right > svg.right + 1))
  .map(([t]) => t);
// What a reader sees hovering the peak: the title of the element on top there.
const peak = document.querySelector("circle.peak");
let hover = null;
if (peak) {
  const p = peak.getBoundingClientRect();
  const top = document.elementFromPoint(p.left + p.width / 2, p.top + p.height / 2);
  const title = top && top.querySelector("title");
  hover = title ? title.textContent : (top ? top.tagName : null);
}
// The chart on the first screen: its bottom within the window's height.
const screen = svg.bottom <= window.innerHeight;
document.body.setAttribute("data-clash", JSON.stringify({clash, out, hover, screen}));
</script>"""


def _label_clashes(page: Path, browser: Path, window: str = "1400,1000") -> dict[str, list[str]]:
    """The text boxes of the page's chart that overlap one another (``clash``) or leave the
    chart (``out``), as Chromium lays them out (a copy of the page with a measuring script; its
    CSP left out), and the tooltip hovering the peak shows (``hover``)."""
    html = re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", page.read_text())
    measured = page.with_name("measured.html")
    measured.write_text(html.replace("</body>", MEASURE + "</body>"))
    dumped = _chromium(
        "--dump-dom", f"--window-size={window}", measured.as_uri(), user_data=browser
    )
    found = re.search(r'data-clash="([^"]*)"', dumped.stdout)
    assert found is not None, dumped.stderr
    return json.loads(found.group(1).replace("&quot;", '"'))


@pytest.mark.slow
def test_label_measurement_sees_a_planted_clash(tmp_path: Path, browser: Path) -> None:
    page = tmp_path / "planted.html"
    page.write_text(
        '<!DOCTYPE html><html><body><svg width="300" height="100">'
        '<text x="10" y="20">checkpoint</text><text x="30" y="22">build:prefill</text>'
        '<text x="280" y="60">past the edge</text></svg></body></html>'
    )
    found = _label_clashes(page, browser)
    assert found["clash"] == ["checkpoint / build:prefill"]
    assert found["out"] == ["past the edge"]


def _visible_text(dom: str) -> str:
    body = re.sub(r"<(script|style)\b.*?</\1>", " ", dom, flags=re.S)
    return re.sub(r"<[^>]+>", " ", body)


@pytest.mark.privileged
@pytest.mark.slow
def test_report_of_an_oom_killed_run(repo: Path, run_qualify: RunQualify, browser: Path) -> None:
    completed = run_qualify(
        "run", "--family", "hog", "--mem", "256M", "--set", "second_mib=400", "--repo", str(repo)
    )
    dom = _report(completed, "OOM_KILLED", browser, repo.parent)
    assert _timeline_points(dom) > 2
    assert 'class="oom"' in dom
    assert 'id="triage"' in dom and "test_hog.py::test_alloc" in dom
    # A reader's page: no Python value or field name, no label on another, none cut off.
    text = _visible_text(dom)
    assert re.findall(r"\b(?:True|False|None)\b|\w+_bytes\b|pids_max", text) == []
    assert completed.run_dir is not None
    clashes = _label_clashes(completed.run_dir / "report.html", browser)
    assert (clashes["clash"], clashes["out"], clashes["screen"]) == ([], [], True)
    # Nothing empty: a fact the run does not have (no CUDA OOM, no merge-base) is left out.
    assert not re.search(r"\b(?:CUDA OOM|base|running when)\s*-", text), text
    # Hovering the peak: its time, usage against the cap, and the phase (the hog's "second").
    assert re.fullmatch(
        r"\d+\.\d\d s: [\d.]+ MiB, \d+% of the cap; phase second", clashes["hover"]
    ), clashes


@pytest.mark.privileged
@pytest.mark.slow
def test_report_of_a_parity_failure(tmp_path: Path, run_qualify: RunQualify, browser: Path) -> None:
    root = _parity_repo(tmp_path / "par-repo")
    completed = run_qualify("run", "--family", "par", "--mem", "512M", "--repo", str(root))
    dom = _report(completed, "PARITY_FAILED", browser, tmp_path)
    assert _timeline_points(dom) >= 2
    parity = re.search(r'<div id="parity">.*?</div>', dom, re.S)
    assert parity is not None
    assert "near_tie" in parity.group() and "wrong" in parity.group()
    assert "&lt;t3&gt;" in parity.group() and "&lt;t9&gt;" in parity.group()
    assert "<script>x" not in dom


# --- the chart's words and numbers


def test_axis_ticks_are_round_numbers() -> None:
    from qualify.report.svg import _memory_unit, _ticks

    mib, gib = 1 << 20, 1 << 30
    for maximum, expected in (
        (1.73 * gib, [0, 512, 1024, 1536]),  # was 442 MiB / 885 MiB / 1.73 GiB
        (900 * mib, [0, 200, 400, 600, 800]),
        (48 * gib, [0, 10240, 20480, 30720, 40960]),
    ):
        assert [round(t / mib) for t in _ticks(maximum, unit=_memory_unit(maximum))] == expected
    assert [f"{t:g}" for t in _ticks(0.402)] == ["0", "0.1", "0.2", "0.3", "0.4"]


def test_phase_labels_never_share_a_place() -> None:
    from qualify.report.svg import CHAR_PX, RIGHT, WIDTH, _lay_out_labels

    starts = [81.0, 83.0, 200.0, 230.0, 232.0, 233.0, 900.0]
    names = ["checkpoint", "build", "build:prefill", "build:decode", "a", "b", "reference:noise"]
    placed = _lay_out_labels(starts, names)
    spans: dict[int, list[tuple[float, float]]] = {}
    for x, (lane, text) in zip(starts, placed, strict=True):
        if not text:
            continue  # no room anywhere: the band's tooltip names it
        spans.setdefault(lane, []).append((x, x + len(text) * CHAR_PX))
        assert x + len(text) * CHAR_PX <= WIDTH - RIGHT + CHAR_PX
    for lane_spans in spans.values():
        for (a0, a1), (b0, _) in itertools.pairwise(lane_spans):
            assert a1 <= b0, (a0, a1, b0)
    assert placed[0] == (0, "checkpoint") and placed[1][0] == 1  # "build" a lane down
    assert placed[5][1] == ""  # "b" a pixel after "a": no room in any lane
    assert placed[-1][1].endswith("…")  # cut at the right edge, not drawn past it


def test_page_words_are_plain() -> None:
    from qualify.report.html_sections import _cell, _pairs, _seconds, _value_html

    assert _seconds(2.98461) == "2.98"  # start and end times: two decimals, not four

    assert (_cell(True), _cell(False)) == ("yes", "no")
    shown = _value_html({"conflicts": [], "warnings": None, "phase_at_end": "build", "ok": True})
    assert "conflicts" not in shown and "warnings" not in shown
    assert "phase at end" in shown and "yes" in shown
    pairs = _pairs([("base", None), ("running test", None), ("head", "abc")])
    assert "base" not in pairs and "running test" not in pairs and "-" not in pairs
    assert pairs.count("<tr>") == 1 and "abc" in pairs
