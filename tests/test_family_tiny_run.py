"""The embedded family `tiny` under `qualify run`: the README's main job, the retain_plans bug
under a real cap, and a real parity failure.

The cap for the retain_plans pair is measured (families/tiny/tiny_engine/build.py): at size
small, anon memory peaks at about 718 MiB with one plan resident and 911 MiB with both, so
850M lets the staged build pass and kills the retaining one in build:decode.
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.conftest import ROOT, RunQualify
from tests.test_html_report import _label_clashes

pytestmark = [pytest.mark.family, pytest.mark.privileged, pytest.mark.slow]

CAP = "850M"
SHORT = ("--set", "new_tokens=8")  # the build is under test here, not 30 tokens of decoding
# Reports go to the test's own directory; the family comes from this repository.
REPO = str(ROOT)


def test_main_job_passes_with_parity_and_phase_peaks(run_qualify: RunQualify) -> None:
    result = run_qualify("run", "--family", "tiny", "--repo", REPO, "--mem", "2G", timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    audit = result.audit()
    assert audit["verdict"] == "PASSED"
    parity = audit["parity"]
    assert parity["cases"] == 10 and parity["exact"] >= 9 and parity["passed"] is True
    # Each case points into the run's own records by a name relative to the run directory: the
    # audit of a downloaded bundle names no path of the machine that ran it.
    files = {
        case[side]["record"]["file"]
        for case in parity["per_case"]
        for side in ("native", "reference")
    }
    assert files == {"parity.jsonl"}
    phases = {p["name"]: p for p in audit["memory"]["phases"]}
    for name in ("checkpoint", "build:prefill", "build:decode", "native", "reference"):
        assert phases[name]["peak_bytes"] > 0, name
    assert "parity: " in result.stdout and "build:decode" in result.stdout
    assert result.run_dir is not None
    cases = list(ET.parse(result.run_dir / "junit.xml").getroot().iter("testcase"))
    parity_cases = [c for c in cases if c.get("classname") == "tiny.parity"]
    assert len(parity_cases) >= 10
    cases_recorded = (result.run_dir / "parity.jsonl").read_text().splitlines()
    sides = [json.loads(line)["side"] for line in cases_recorded]
    assert sides.count("native") == 10 and sides.count("reference") == 10


@pytest.mark.timeout(900)
@pytest.mark.usefixtures("small_checkpoint")
def test_retained_plans_oom_where_staged_plans_pass(run_qualify: RunQualify, browser: Path) -> None:
    common = ("run", "--family", "tiny", "--repo", REPO, "--mem", CAP, "--set", "size=small")
    common += SHORT
    retained = run_qualify(*common, "--set", "retain_plans=true", timeout=600)
    assert retained.returncode == 3, retained.stdout + retained.stderr
    audit = retained.audit()
    assert audit["verdict"] == "OOM_KILLED"
    assert audit["memory"]["phase_at_end"] == "build:decode"
    assert audit["tests"]["running_at_end"] == "test_e2e.py::test_build_engine"
    # The README's claim: the line allocating as the run neared its cap, in the decode build.
    said = re.search(r"near the cap: while `(\w+)` \((\w+\.py):\d+\)", retained.stdout)
    assert said is not None and said.groups() == ("build_plan", "build.py"), retained.stdout
    assert "called from test_build_engine, in phase build:decode" in retained.stdout
    # Its report page: phase labels that started close together (checkpoint, build,
    # build:prefill) never drawn over one another, nothing past the chart's edge.
    assert retained.run_dir is not None
    measured = _label_clashes(retained.run_dir / "report.html", browser)
    assert (measured["clash"], measured["out"]) == ([], [])
    assert "phase build:decode" in measured["hover"], measured  # hovering the peak
    staged = run_qualify(*common, timeout=600)
    assert staged.returncode == 0, staged.stdout + staged.stderr
    phases = {p["name"]: p["peak_bytes"] for p in staged.audit()["memory"]["phases"]}
    # Staged: decode's build peak stays near prefill's (one plan at a time), under the cap.
    assert abs(phases["build:decode"] - phases["build:prefill"]) < 96 * 2**20
    assert max(phases.values()) <= 850 * 2**20


def test_perturbed_engine_fails_parity(run_qualify: RunQualify) -> None:
    result = run_qualify(
        "run", "--family", "tiny", "--repo", REPO, "--mem", "2G", "--set", "perturb_native=0.01",
        timeout=600,
    )  # fmt: skip
    assert result.returncode == 1, result.stdout + result.stderr
    audit = result.audit()
    assert audit["verdict"] == "PARITY_FAILED"
    assert audit["tests"]["failed"] == 0  # pytest passed; the gate decided
    assert audit["parity"]["passed"] is False and audit["parity"]["exact"] < 9
    assert result.run_dir is not None
    failures = [
        c.find("failure")
        for c in ET.parse(result.run_dir / "junit.xml").getroot().iter("testcase")
        if c.get("classname") == "tiny.parity" and c.find("failure") is not None
    ]
    assert failures
    text = failures[0].text or ""
    assert "first divergence at token" in text and "reference top-5" in text
    assert "reproduce: qualify compare reports/" in text
