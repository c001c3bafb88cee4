"""The phi4 family under `qualify run`: the design's headline command at the standard 48 GiB
cap and profile, and the retain_plans bug under a real cap.

The cap for the retain_plans pair is measured (families/phi4/README.md): at size ci the E2E's
anonymous memory peaks at about 1.63 GiB in build:prefill with staged plans (baseline plus one
317 MiB plan and the export's transients) and near 1.95 GiB in build:decode with the prefill plan
retained. Under cgroup v1 the staged E2E passed at 1750M, 1850M (and 48G); the retaining one was
OOM_KILLED in build:decode at 1850M and 1950M. 1850M sits in the middle.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from tests.conftest import ROOT, RunQualify

pytestmark = [pytest.mark.family, pytest.mark.privileged, pytest.mark.slow]

FAMILY_DIR = ROOT / "families" / "phi4"
PHASES = ("checkpoint", "build:vision", "build:prefill", "build:decode", "native", "reference")
CAP = "1850M"
SHORT = ("--set", "new_tokens=8")  # the build is under test in the pair, not 30 tokens of decoding
REPO = str(ROOT)


@pytest.fixture(scope="module")
def ci_checkpoint() -> None:
    """The ci checkpoint, created uncapped before the capped runs (creation fits the model:
    minutes, not what the runs measure); later runs load it from the cache."""
    subprocess.run(
        [sys.executable, "-m", "phi4_engine.checkpoint", "ci"],
        cwd=FAMILY_DIR, check=True, capture_output=True, timeout=1800, env=_family_env(),
    )  # fmt: skip


def _family_env() -> dict[str, str]:
    env = dict(os.environ)
    paths = [str(FAMILY_DIR), str(FAMILY_DIR.parent / "tiny"), env.get("PYTHONPATH")]
    env["PYTHONPATH"] = os.pathsep.join(filter(None, paths))
    return env


def _check_passed(result: object, audit: dict[str, object]) -> None:
    assert audit["verdict"] == "PASSED"
    parity = audit["parity"]
    assert isinstance(parity, dict)
    assert parity["cases"] == 10 and parity["exact"] >= 9 and parity["passed"] is True
    memory = audit["memory"]
    assert isinstance(memory, dict)
    phases = {p["name"]: p for p in memory["phases"]}
    for name in PHASES:
        assert phases[name]["peak_bytes"] > 0, name
    # The engine that ran names its own phase inside `native`; on a CPU host, torch.
    assert "native:torch" in phases


@pytest.mark.timeout(1800)
@pytest.mark.usefixtures("ci_checkpoint")
def test_headline_passes_at_48g_with_parity_phases_and_engine(run_qualify: RunQualify) -> None:
    result = run_qualify("run", "--family", "phi4", "--repo", REPO, "--mem", "48G", timeout=900)
    assert result.returncode == 0, result.stdout + result.stderr
    audit = result.audit()
    _check_passed(result, audit)
    assert audit["limits"]["requested"]["memory_bytes"] == 48 * 2**30
    assert "parity: 10/10" in result.stdout or "parity: 9/10" in result.stdout
    assert result.run_dir is not None
    recorded = [
        json.loads(line) for line in (result.run_dir / "parity.jsonl").read_text().splitlines()
    ]
    sides = [case.get("side") for case in recorded]
    assert sides.count("native") == 10 and sides.count("reference") == 10
    # The noise floor over the text and the image cases (the bf16 reference fed the FP32
    # tokens), and the gate's odds from it.
    noise_views = {case["case_id"] for case in recorded if case.get("role") == "noise"}
    assert len(noise_views) == 10 and any(case.startswith("image-") for case in noise_views)
    noise = audit["parity"]["noise"]
    assert noise["cases"] == 10 and noise["positions"] > 100 and noise["gap_sigma_nats"] > 0
    assert audit["parity"]["gate"]["false_fail_probability"] < 0.01
    images = {case["case_id"] for case in recorded if case["case_id"].startswith("image-")}
    assert len(images) >= 3
    cases = list(ET.parse(result.run_dir / "junit.xml").getroot().iter("testcase"))
    assert len([c for c in cases if c.get("classname") == "phi4.parity"]) >= 10


@pytest.mark.timeout(1800)
def test_phi4_mini_checkpoint_passes_text_only(
    run_qualify: RunQualify, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """A Phi-4-mini checkpoint (``phi3``, no vision encoder) through ``--set checkpoint=DIR``:
    checked, loaded with from_pretrained, built without a vision plan and judged on ten text
    cases."""
    directory = tmp_path_factory.mktemp("phi4-mini") / "checkpoint"
    subprocess.run(
        [sys.executable, "-m", "phi4_engine.checkpoint", "ci", str(directory), "--model=mini"],
        cwd=FAMILY_DIR, check=True, capture_output=True, timeout=1200, env=_family_env(),
    )  # fmt: skip
    assert json.loads((directory / "config.json").read_text())["model_type"] == "phi3"
    result = run_qualify(
        "run", "--family", "phi4", "--repo", REPO, "--mem", "48G",
        "--set", f"checkpoint={directory}", timeout=900,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    audit = result.audit()
    assert audit["verdict"] == "PASSED"
    parity = audit["parity"]
    assert parity["cases"] == 10 and parity["exact"] >= 9 and parity["passed"] is True
    phases = {p["name"] for p in audit["memory"]["phases"]}
    assert {"checkpoint", "build:prefill", "build:decode", "native:torch", "reference"} <= phases
    assert "build:vision" not in phases
    assert result.run_dir is not None
    recorded = (result.run_dir / "parity.jsonl").read_text().splitlines()
    assert not any(json.loads(line)["case_id"].startswith("image-") for line in recorded)


@pytest.mark.timeout(1800)
@pytest.mark.usefixtures("ci_checkpoint")
def test_standard_profile_passes(run_qualify: RunQualify) -> None:
    result = run_qualify(
        "run", "--family", "phi4", "--repo", REPO, "--profile", "standard", *SHORT, timeout=900
    )
    assert result.returncode == 0, result.stdout + result.stderr
    audit = result.audit()
    _check_passed(result, audit)
    assert audit["profile"] == "standard"


@pytest.mark.timeout(1800)
@pytest.mark.usefixtures("ci_checkpoint")
def test_retained_plans_oom_in_build_where_staged_plans_pass(run_qualify: RunQualify) -> None:
    common = ("run", "--family", "phi4", "--repo", REPO, "--mem", CAP, *SHORT)
    retained = run_qualify(*common, "--set", "retain_plans=true", timeout=900)
    assert retained.returncode == 3, retained.stdout + retained.stderr
    audit = retained.audit()
    assert audit["verdict"] == "OOM_KILLED"
    assert audit["memory"]["phase_at_end"].startswith("build:")
    assert audit["tests"]["running_at_end"] == "test_e2e.py::test_build_engine"
    staged = run_qualify(*common, timeout=900)
    assert staged.returncode == 0, staged.stdout + staged.stderr
    staged_audit = staged.audit()
    assert staged_audit["verdict"] == "PASSED"
    phases = {p["name"]: p["peak_bytes"] for p in staged_audit["memory"]["phases"]}
    # Staged: decode's build peak stays near prefill's (one plan at a time), under the cap.
    assert abs(phases["build:decode"] - phases["build:prefill"]) < 96 * 2**20
    assert max(phases.values()) <= 1850 * 2**20


@pytest.mark.timeout(1800)
@pytest.mark.usefixtures("ci_checkpoint")
def test_broken_engine_drifts_on_text_and_image_cases(run_qualify: RunQualify) -> None:
    """perturb_native=0.5 (vision weights included): fed the reference's tokens, the engine
    still disagrees after the divergence on text and image cases alike, and the gate fails."""
    result = run_qualify(
        "run", "--family", "phi4", "--repo", REPO, "--mem", "48G",
        "--set", "perturb_native=0.5", timeout=900,
    )  # fmt: skip
    assert result.returncode == 1, result.stdout + result.stderr
    audit = result.audit()
    assert audit["verdict"] == "PARITY_FAILED" and audit["tests"]["failed"] == 0
    parity = audit["parity"]
    assert parity["exact"] == 0 and parity["drift"] >= 8
    drifting = {
        case["case_id"] for case in parity["per_case"] if case["teacher_forced"]["kind"] == "drift"
    }
    assert any(case.startswith("image-") for case in drifting)
    assert any(not case.startswith("image-") for case in drifting)
    assert parity["noise"]["cases"] == 10


@pytest.mark.timeout(1800)
@pytest.mark.usefixtures("ci_checkpoint")
def test_planted_tie_break_on_an_image_case_is_noise_and_a_single_flip(
    run_qualify: RunQualify,
) -> None:
    """plant_tie on an image chat: the reference's top-2 gap at token 5 is 0.001 nats, far
    inside bf16 noise, and the engine takes the runner-up: NOISE, a single flip (every token
    after it agrees when fed the reference's), and the gate passes 9 of 10."""
    result = run_qualify(
        "run", "--family", "phi4", "--repo", REPO, "--mem", "48G",
        "--set", "plant_tie=image-green-disc:5", timeout=900,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    parity = result.audit()["parity"]
    by_id = {case["case_id"]: case for case in parity["per_case"]}
    planted = by_id.pop("image-green-disc")
    assert (planted["kind"], planted["first_divergence"]) == ("noise", 5)
    forced = planted["teacher_forced"]
    assert forced["kind"] == "single_flip"
    assert forced["agree_after"] == forced["of"] == planted["reference"]["length"] - 6
    assert all(case["exact"] for case in by_id.values())
    assert parity["passed"] is True and parity["noise"]["self_flip_count"] == 0
