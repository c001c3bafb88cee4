"""``qualify run --base-run DIR``: the change against the base run, where a reviewer looks.

Real runs of the hog family in real cgroups: a base directory holds runs of two commits of
main; a branch off the first grows its second phase past the cap. The branch's run is compared
with the run at its merge-base (not main's latest), in the audit, the terminal summary and the
step summary.
"""

from __future__ import annotations

import html
import json
from pathlib import Path

import pytest

from qualify.report.base_run import GIVEN, LATEST, MERGE_BASE
from qualify.report.github_summary import render_summary
from qualify.rundir import RunDir
from tests.conftest import RunQualify, git

pytestmark = pytest.mark.privileged


def _set_second(repo: Path, mib: int) -> None:
    toml = repo / "families" / "hog" / "family.toml"
    toml.write_text(toml.read_text().replace("second_mib = 160", f"second_mib = {mib}"))


def test_the_branch_is_compared_with_the_run_at_its_merge_base(
    repo: Path, run_qualify: RunQualify, tmp_path: Path
) -> None:
    base_out, head_out = tmp_path / "base-runs", tmp_path / "head-runs"
    first = git(repo, "rev-parse", "HEAD")
    at_first = run_qualify("run", "--family", "hog", "--mem", "300M", "--repo", str(repo),
                           "--out", str(base_out))  # fmt: skip
    assert at_first.returncode == 0, at_first.stdout + at_first.stderr
    (repo / "NOTES").write_text("later on main\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "later")
    later = run_qualify("run", "--family", "hog", "--mem", "300M", "--repo", str(repo),
                        "--out", str(base_out))  # fmt: skip
    assert later.returncode == 0, later.stdout + later.stderr
    git(repo, "checkout", "-q", "-b", "feature", first)
    _set_second(repo, 400)
    git(repo, "commit", "-q", "-am", "a larger second phase")

    head = run_qualify("run", "--family", "hog", "--mem", "300M", "--repo", str(repo),
                       "--out", str(head_out), "--base-ref", "main",
                       "--base-run", str(base_out))  # fmt: skip
    assert head.returncode == 3, head.stdout + head.stderr
    audit = head.audit()
    base = audit["base"]
    assert (base["head"], base["matched_by"]) == (first, MERGE_BASE)  # not main's latest
    assert base["verdict"] == ["PASSED", "OOM_KILLED"]
    phases = {phase["name"]: phase for phase in base["phases"]}
    assert phases["second"]["delta_bytes"] > 100 << 20
    assert abs(phases["first"]["delta_bytes"]) < 32 << 20
    assert "most in second (+" in base["summary"]
    assert "verdict PASSED -> OOM_KILLED" in base["summary"]
    assert base["summary"] in head.stdout  # the terminal summary
    assert (base_out / base["run_dir"] / "audit.json").is_file()
    # The step summary a reviewer reads: the line, and the phase whose peak changed most.
    assert head.run_dir is not None
    read = RunDir(head.run_dir).read_audit().audit
    assert read is not None and read.base is not None
    step = render_summary(read, [], "run", 1 << 20)
    section = step[step.index("### Against the base run") :]
    assert html.escape(base["summary"]) in section
    assert section.split("\n| ")[2].startswith("second |")  # the largest change first

    # The run directory itself, given: that run, whatever its commit.
    given = Path(later.stdout.strip().splitlines()[-1])
    again = run_qualify("run", "--family", "hog", "--mem", "300M", "--repo", str(repo),
                        "--out", str(head_out), "--base-run", str(given))  # fmt: skip
    assert again.audit()["base"]["matched_by"] == GIVEN
    assert again.audit()["base"]["run_dir"] == "."


def test_without_a_run_at_the_merge_base_the_latest_is_taken_and_said(
    repo: Path, run_qualify: RunQualify, tmp_path: Path
) -> None:
    base_out = tmp_path / "base-runs"
    done = run_qualify("run", "--family", "hog", "--mem", "300M", "--repo", str(repo),
                       "--out", str(base_out))  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    _set_second(repo, 200)
    git(repo, "commit", "-q", "-am", "on main, no branch")
    # Its merge-base with main is itself: no run of it in the base directory.
    head = run_qualify("run", "--family", "hog", "--mem", "300M", "--repo", str(repo),
                       "--base-ref", "main", "--base-run", str(base_out))  # fmt: skip
    assert head.returncode == 0, head.stdout + head.stderr
    base = head.audit()["base"]
    assert base["matched_by"] == LATEST and base["verdict"] == ["PASSED", "PASSED"]
    assert f"({LATEST})" in base["summary"]


def test_a_base_with_no_run_of_the_family_is_said_and_the_run_goes_on(
    repo: Path, run_qualify: RunQualify, tmp_path_factory: pytest.TempPathFactory
) -> None:
    empty = tmp_path_factory.mktemp("nothing-here")  # (its broken audit outside the checked)
    (empty / "x").mkdir(parents=True)
    (empty / "x" / "audit.json").write_text(json.dumps({"verdict": "PASSED"})[:10])  # broken
    completed = run_qualify("run", "--family", "hog", "--mem", "300M", "--repo", str(repo),
                            "--base-run", str(empty))  # fmt: skip
    assert completed.returncode == 0, completed.stdout + completed.stderr
    base = completed.audit()["base"]
    assert base["problem"] == "no run of hog/custom in it"
    assert "no base run: no run of hog/custom in it" in completed.stdout


def test_a_base_run_that_is_not_a_directory_is_bad_input(
    repo: Path, run_qualify: RunQualify, tmp_path: Path
) -> None:
    missing = tmp_path / "absent"
    completed = run_qualify("run", "--family", "hog", "--mem", "300M", "--repo", str(repo),
                            "--base-run", str(missing))  # fmt: skip
    assert completed.returncode == 2
    assert completed.stderr.strip() == (
        f"qualify run: error: --base-run {str(missing)!r} is not a directory (valid: a run "
        "directory, or a directory of runs)"
    )
