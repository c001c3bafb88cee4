"""The tiny family's retain_plans bug, triaged: CGROUP_OOM in a build phase, retention named.

The cap is between the engine's need with one plan resident and with both. Measured on the
2-core development machine (cgroup v1, size=small, checkpoint cached), per phase, max cgroup
usage / max anon from timeline.jsonl with retain_plans=true under a 1000M cap:
checkpoint 179/177 MiB, build:prefill 910/710 MiB, build:decode 998/909 MiB; each small plan is
~200 MB in bf16 (tiny_engine/sizes.py). 850M fits build:prefill (anon 710 MiB, page cache is
reclaimed) and not build:decode with the prefill plan still resident.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import ROOT, RunQualify

pytestmark = [pytest.mark.family, pytest.mark.privileged, pytest.mark.slow]

CAP = "850M"


@pytest.mark.timeout(900)
@pytest.mark.usefixtures("small_checkpoint")
def test_retained_plan_is_named(run_qualify: RunQualify, tmp_path: Path) -> None:
    if not (ROOT / "families" / "tiny" / "family.toml").exists():
        pytest.fail("families/tiny is missing")
    run = run_qualify(
        "run", "--family", "tiny", "--repo", str(ROOT), "--mem", CAP,
        "--set", "retain_plans=true", "--set", "size=small", timeout=850,
    )  # fmt: skip
    assert run.run_dir is not None, run.stdout + run.stderr
    audit = run.audit()
    assert audit["verdict"] == "OOM_KILLED", audit["reason"]
    assert str(audit["memory"]["phase_at_end"]).startswith("build")
    result = run_qualify("triage", str(run.run_dir), "--format", "json")
    found = json.loads(result.stdout)
    assert result.returncode == 3
    assert found["class"] == "CGROUP_OOM"
    retention = {(r["phase"], r["next_phase"]) for r in found["attribution"]["retention"]}
    assert ("build:prefill", "build:decode") in retention
    titles = [f["title"] for f in found["findings"]]
    assert any(
        t.startswith("build:prefill left ") and "while build:decode ran" in t for t in titles
    )
    assert found["remedies"][0].startswith("stage plans to disk: build:prefill left ")
    text = run_qualify("triage", str(run.run_dir)).stdout
    assert "stage plans to disk" in text

    # qualify's own outputs are inputs of their own: its JUnit, its audit, the public/ bundle in
    # the run directory, and that bundle downloaded elsewhere (what a CI job uploads).
    elsewhere = tmp_path / "downloaded" / "public"
    shutil.copytree(run.run_dir / "public", elsewhere)
    for given in (
        run.run_dir / "junit.xml",
        run.run_dir / "audit.json",
        run.run_dir / "public",
        elsewhere,
    ):
        again = json.loads(run_qualify("triage", str(given), "--format", "json").stdout)
        assert again["class"] == "CGROUP_OOM", given
        again_retention = {(r["phase"], r["next_phase"]) for r in again["attribution"]["retention"]}
        assert ("build:prefill", "build:decode") in again_retention, given
    # Alone, without its run directory, qualify's JUnit still says what the run died of.
    alone = tmp_path / "junit-alone.xml"
    shutil.copy(run.run_dir / "junit.xml", alone)
    only = json.loads(run_qualify("triage", str(alone), "--format", "json").stdout)
    assert only["class"] == "CGROUP_OOM"
