"""Bad input: one line on stderr naming the bad value, exit 2, no traceback, nothing written."""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

import pytest

from qualify.rundir.audit import Audit
from tests.conftest import qualify_argv


def tree_digest(root: Path) -> str:
    """Hash of every file under ``root`` (names and contents)."""
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        digest.update(str(path.relative_to(root)).encode())
        if path.is_file():
            digest.update(path.read_bytes())
    return digest.hexdigest()


def run_cli(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        qualify_argv(*args),
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
        check=False,
    )


@pytest.fixture
def earlier_report(tmp_path: Path) -> Path:
    """An earlier run's reports that bad input must leave untouched."""
    run_dir = tmp_path / "reports" / ("a" * 40) / "hog" / "custom" / "20260101T000000Z-abcdef"
    run_dir.mkdir(parents=True)
    (run_dir / "audit.json").write_bytes(Audit(verdict="PASSED").to_bytes())
    (run_dir / "junit.xml").write_text("<testsuites/>\n")
    return tmp_path / "reports"


def _malformed(repo: Path) -> None:
    (repo / "families" / "hog" / "family.toml").write_text('name = "hog"\n[e2e\ncommand = 1\n')


def _unknown_key(repo: Path) -> None:
    path = repo / "families" / "hog" / "family.toml"
    path.write_text(path.read_text() + "\n[resources.extra]\nflavour = 1\n")


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--family", "nope", "--mem", "1G"], "unknown family 'nope' (available: hog"),
        (["--family", "hog", "--mem", "0"], "--mem '0' is not valid"),
        (["--family", "hog", "--mem", "-1"], "--mem '-1' is not valid"),
        (["--family", "hog", "--mem", "12XB"], "--mem '12XB' is not valid"),
        (["--family", "hog", "--mem", "100"], "too small: at least 1MiB"),
        (["--family", "../hog", "--mem", "1G"], "family name '../hog' is not valid"),
        (["--family", "a/b", "--mem", "1G"], "family name 'a/b' is not valid"),
        (["--family", "..", "--mem", "1G"], "family name '..' is not valid"),
        (["--family", "hog", "--profile", "huge"], "unknown profile 'huge' (available: "),
        (["--family", "hog", "--timeout", "soon"], "--timeout 'soon' is not valid"),
        (["--family", "hog", "--set", "nope=1"], "--set nope: family hog has no such option"),
        (
            ["--family", "hog", "--set", "first_mib=lots"],
            "option first_mib='lots' is not a valid int",
        ),
        (["--family", "hog", "--backend", "magic"], "argument --backend: invalid choice"),
        (["--family", "hog", "--gpu-mem", "100"], "--gpu-mem 100 (100 bytes) is too small"),
        (["--family", "hog", "--gpu-budget-mode", "mps"], "mps needs a GPU budget: --gpu-mem"),
        (
            ["--family", "hog", "--gpu-budget-mode", "mps", "--gpu-mem", "1G"],
            "--gpu-budget-mode mps: no MPS control daemon: ",
        ),
        (["--family", "hog", "--gpu-budget-mode", "fraction"], "invalid choice: 'fraction'"),
    ],
)
def test_bad_input_one_line_exit_2(
    repo: Path, earlier_report: Path, args: list[str], expected: str
) -> None:
    before = tree_digest(earlier_report)
    result = run_cli(earlier_report.parent, "run", "--repo", str(repo), *args)
    assert result.returncode == 2, result.stdout + result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert expected in lines[0]
    assert "Traceback" not in result.stderr
    assert tree_digest(earlier_report) == before


@pytest.mark.parametrize(
    ("break_family", "expected"),
    [(_malformed, "not valid TOML"), (_unknown_key, "unknown key 'extra'")],
)
def test_broken_family_toml(repo: Path, earlier_report: Path, break_family, expected: str) -> None:
    break_family(repo)
    before = tree_digest(earlier_report)
    result = run_cli(earlier_report.parent, "run", "--repo", str(repo), "--family", "hog")
    assert result.returncode == 2
    assert len(result.stderr.strip().splitlines()) == 1 and expected in result.stderr
    assert tree_digest(earlier_report) == before


def test_repo_that_is_not_git(tmp_path: Path, earlier_report: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    result = run_cli(tmp_path, "run", "--repo", str(plain), "--family", "tiny")
    assert result.returncode == 2
    assert "is not a git repository" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_unknown_subcommand_is_usage_error(tmp_path: Path) -> None:
    result = run_cli(tmp_path, "frobnicate")
    assert result.returncode == 2
    assert len(result.stderr.strip().splitlines()) == 1
