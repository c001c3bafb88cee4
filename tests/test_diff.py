"""``qualify diff`` of a passing run and an OOM-killed one: the phase whose peak grew is named,
the verdict change and the test whose outcome changed are listed; text and JSON."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import RunQualify, family_repo

GROWER = """
import time
import harness


def test_grow():
    with harness.phase("load"):
        base = bytearray(16 << 20)
        base[::4096] = b"x" * len(base[::4096])
    with harness.phase("decode"):
        block = bytearray(harness.option("mib", 32) << 20)
        block[::4096] = b"x" * len(block[::4096])
        time.sleep(0.3)
"""


@pytest.mark.slow
def test_diff_names_the_phase_whose_peak_grew(tmp_path: Path, run_qualify: RunQualify) -> None:
    toml = (
        '[e2e]\ncommand = ["python", "-m", "pytest", "test_grow.py", "-q"]\n[options]\nmib = 32\n'
    )
    repo = family_repo(tmp_path / "repo", "grower", toml, {"test_grow.py": GROWER})
    common = ("run", "--family", "grower", "--repo", str(repo), "--mem", "256M")
    passing = run_qualify(*common)
    killed = run_qualify(*common, "--set", "mib=400")
    assert passing.run_dir and killed.run_dir, passing.stdout + killed.stdout
    assert killed.audit()["verdict"] == "OOM_KILLED"
    text = run_qualify("diff", str(passing.run_dir), str(killed.run_dir))
    assert text.returncode == 0, text.stdout + text.stderr
    assert "verdict: PASSED -> OOM_KILLED" in text.stdout
    assert "largest growth: decode +" in text.stdout
    assert "test_grow::test_grow: passed -> error" in text.stdout
    found = json.loads(
        run_qualify(
            "diff", str(passing.run_dir), str(killed.run_dir / "public"), "--format", "json"
        ).stdout
    )
    assert found["largest_growth"] == "decode"
    assert found["verdict"] == {"a": "PASSED", "b": "OOM_KILLED"}
    assert found["outcomes"] == [{"test": "test_grow::test_grow", "a": "passed", "b": "error"}]
    # The bundle travels: downloaded elsewhere (the run directory gone), report, triage and
    # diff work on it where it lands.
    landed = tmp_path / "downloaded" / "public"
    shutil.copytree(killed.run_dir / "public", landed)
    shutil.rmtree(killed.run_dir)
    report = run_qualify("report", str(landed), "--no-github")
    assert report.returncode == 0 and (landed / "report.html").is_file(), report.stderr
    triage = run_qualify("triage", str(landed))
    assert "CGROUP_OOM" in triage.stdout, triage.stdout + triage.stderr
    again = run_qualify("diff", str(passing.run_dir), str(landed))
    assert "largest growth: decode +" in again.stdout, again.stdout + again.stderr


def test_diff_of_what_is_not_a_run_is_one_line(tmp_path: Path, run_qualify: RunQualify) -> None:
    result = run_qualify("diff", str(tmp_path), str(tmp_path / "missing"))
    assert result.returncode == 2 and result.stderr.count("\n") == 1, result.stderr
    assert "is not a run directory" in result.stderr


def test_a_test_the_run_never_reached_is_not_run_as_the_counts_say() -> None:
    from qualify.evidence.junit import NOT_RUN, JUnitCase, family_counts
    from qualify.report.run_diff import _outcomes

    cases = [
        JUnitCase("t", "reached", "skipped", 0.0, "needs a GPU", None),
        JUnitCase("t", "never", "skipped", 0.0, NOT_RUN + "the run ended before it", None),
        JUnitCase("qualify", "run", "error", 0.0, "OOM_KILLED", "OOM_KILLED"),
    ]
    assert _outcomes(cases) == {"t::reached": "skipped", "t::never": "not run"}
    counts = family_counts(cases)
    assert (counts["skipped"], counts["not_run"]) == (1, 1)
