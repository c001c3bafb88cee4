"""Names are bytes: test ids and file names that are not UTF-8 (or hold ``::`` and ``[``) go
end to end into JUnit, audit and HTML; ids are split as pytest splits them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.conftest import RunQualify, git

ESCAPING_OFF = (
    "[pytest]\ndisable_test_id_escaping_and_forfeit_all_rights_to_community_support = true\n"
)
COLONS_TEST = """
import pytest


@pytest.mark.parametrize("v", [1, 2, 3], ids=["colons-a::b/c.py", "x[y]::z", "plain"])
def test_w(v):
    assert v
"""
BYTES_ID_TEST = """
import pytest


@pytest.mark.parametrize("v", [1], ids=["bytes\\udcffname"])
def test_b(v):
    assert v
"""
LONE_SURROGATE_TEST = """
import pytest


@pytest.mark.parametrize("v", [1], ids=["lone\\ud800surrogate"])
def test_s(v):
    assert v
"""
BYTES_FILE = b"test_\xff\xfename.py"


def _family(directory: Path, tests: dict[bytes, str]) -> Path:
    directory.mkdir(parents=True)
    (directory / "family.toml").write_text(
        textwrap.dedent(f"""
        name = "{directory.name}"
        [e2e]
        command = ["python", "-m", "pytest", "-q", "-p", "no:cacheprovider"]
        timeout = "2m"
        """)
    )
    (directory / "pytest.ini").write_text(ESCAPING_OFF)
    for name, text in tests.items():
        with open(os.path.join(os.fsencode(directory), name), "w") as handle:
            handle.write(text)
    return directory


def _cases(junit: Path) -> set[tuple[str, str]]:
    root = ET.parse(junit).getroot()
    return {(case.get("classname", ""), case.get("name", "")) for case in root.iter("testcase")}


@pytest.mark.parametrize("where", ["inside", "outside"])
def test_non_utf8_names_pass_through_every_report(
    where: str, tmp_path: Path, run_qualify: RunQualify
) -> None:
    repo = tmp_path / "repo"
    families = repo / "families" if where == "inside" else tmp_path / "elsewhere"
    tests = {
        b"test_colons.py": COLONS_TEST,
        b"test_bytes_id.py": BYTES_ID_TEST,
        BYTES_FILE: "def test_in_a_file_named_in_bytes():\n    assert True\n",
    }
    _family(families / "names", tests)
    if where == "outside":
        (repo / "README").parent.mkdir(parents=True)
        (repo / "README").write_text("a repository\n")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "names")
    args = ["run", "--family", "names", "--repo", str(repo), "--backend", "none"]
    if where == "outside":
        args += ["--families-dir", str(families)]
    result = run_qualify(*args)
    assert result.run_dir is not None, result.stdout + result.stderr
    assert result.returncode == 0, result.stdout + result.stderr
    audit = result.audit()
    assert audit["verdict"] == "PASSED"
    assert audit["tests"]["passed"] == 5
    assert audit["family"]["outside_repo"] is (where == "outside")
    cases = _cases(result.run_dir / "junit.xml")
    assert ("test_\\xff\\xfename", "test_in_a_file_named_in_bytes") in cases
    assert ("test_bytes_id", "test_b[bytes\\xffname]") in cases
    assert ("test_colons", "test_w[colons-a::b/c.py]") in cases
    assert (result.run_dir / "report.html").read_bytes().decode("utf-8")


def test_ids_with_colons_are_split_as_pytest_splits_them(
    tmp_path: Path, run_qualify: RunQualify
) -> None:
    repo = tmp_path / "repo"
    family = _family(repo / "families" / "colons", {b"test_colons.py": COLONS_TEST})
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "colons")
    result = run_qualify("run", "--family", "colons", "--repo", str(repo), "--backend", "none")
    assert result.run_dir is not None and result.returncode == 0, result.stdout + result.stderr
    pytest_junit = tmp_path / "pytest-own.xml"
    subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
         f"--junitxml={pytest_junit}"],
        cwd=family, check=True, capture_output=True,
        env={**os.environ, "PYTEST_ADDOPTS": "", "PYTEST_PLUGINS": ""},
    )  # fmt: skip
    expected = _cases(pytest_junit)
    assert ("test_colons", "test_w[colons-a::b/c.py]") in expected  # pytest's own, whole
    assert _cases(result.run_dir / "junit.xml") == expected


def test_a_lone_surrogate_in_an_id_gives_reports_that_agree(
    tmp_path: Path, run_qualify: RunQualify, monkeypatch: pytest.MonkeyPatch
) -> None:
    summary = tmp_path / "step-summary.md"
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    monkeypatch.setenv("GITHUB_OUTPUT", str(tmp_path / "github-output"))
    repo = tmp_path / "repo"
    _family(repo / "families" / "lone", {b"test_lone.py": LONE_SURROGATE_TEST})
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "lone")
    result = run_qualify("run", "--family", "lone", "--repo", str(repo), "--backend", "none")
    assert result.run_dir is not None, result.stdout + result.stderr
    # pytest itself errors on this id (it puts it in os.environ): the test errors, as it does
    # under plain pytest; qualify reports that, the same in every report.
    audit = result.audit()
    assert audit["verdict"] == "FAILED", audit["reason"]
    assert audit["tests"]["errors"] == 1
    root = ET.parse(result.run_dir / "junit.xml").getroot()
    assert root.find(".//property[@name='qualify.verdict']").get("value") == "FAILED"
    (case,) = [case for case in root.iter("testcase") if case.get("classname") == "test_lone"]
    assert case.get("name") == "test_s[lone\\ud800surrogate]"
    assert case.find("error") is not None
    assert json.loads((result.run_dir / "audit.json").read_bytes())["verdict"] == "FAILED"
    assert (result.run_dir / "report.html").read_bytes().decode("utf-8")
    assert "test_s[lone\\ud800surrogate]" in summary.read_bytes().decode("utf-8")
    assert "lone\\ud800surrogate" in result.stdout  # the annotations, on the terminal
