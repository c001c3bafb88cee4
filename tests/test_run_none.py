"""--backend none: runs, and every report says it was uncapped."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from tests.conftest import RunQualify


def test_uncapped_run_is_labelled(repo: Path, run_qualify: RunQualify) -> None:
    result = run_qualify(
        "run",
        "--family",
        "hog",
        "--repo",
        str(repo),
        "--backend",
        "none",
        "--set",
        "first_mib=8",
        "--set",
        "second_mib=16",
    )
    assert result.returncode == 0, result.stdout + result.stderr
    audit = result.audit()
    assert audit["sandbox"]["backend"] == "none" and audit["sandbox"]["capped"] is False
    assert any("UNCAPPED" in note for note in audit["sandbox"]["notes"])
    assert audit["limits"]["in_effect"]["memory_bytes"] is None
    assert audit["memory"]["peak_source"] == "samples"
    assert "UNCAPPED" in result.stdout
    assert result.run_dir is not None
    properties = {
        p.get("name"): p.get("value")
        for p in ET.parse(result.run_dir / "junit.xml").getroot().iter("property")
    }
    assert properties["qualify.capped"] == "false"


def test_non_pytest_command_gets_one_testcase(tmp_path: Path, run_qualify: RunQualify) -> None:
    from tests.conftest import git

    repo = tmp_path / "plain"
    family = repo / "families" / "script"
    family.mkdir(parents=True)
    (family / "family.toml").write_text(
        'name = "script"\n[e2e]\ncommand = ["python", "-c", "import sys; sys.exit(3)"]\n'
    )
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "script family")
    result = run_qualify("run", "--family", "script", "--repo", str(repo), "--backend", "none")
    assert result.returncode == 1
    assert result.audit()["verdict"] == "FAILED"
    assert result.run_dir is not None
    cases = list(ET.parse(result.run_dir / "junit.xml").getroot().iter("testcase"))
    assert [(c.get("classname"), c.get("name")) for c in cases] == [("script", "e2e")]
    assert cases[0].find("failure") is not None


MARKUP_TEST = """
import pytest
import harness


@pytest.mark.parametrize("text", ["[/bold]", "[red]x[/]"], ids=["[/bold]", "[red]x[/]"])
def test_markup_in_ids(text):
    with harness.phase("load[/x]" + text):
        assert text
"""


def test_rich_markup_in_family_text_is_printed_as_text(
    tmp_path: Path, run_qualify: RunQualify
) -> None:
    from tests.conftest import git

    repo = tmp_path / "markup"
    family = repo / "families" / "markup"
    family.mkdir(parents=True)
    (family / "family.toml").write_text(
        'name = "markup"\n[e2e]\ncommand = ["python", "-m", "pytest", "test_markup.py", "-q"]\n'
    )
    (family / "test_markup.py").write_text(MARKUP_TEST)
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "markup family")
    result = run_qualify("run", "--family", "markup", "--repo", str(repo), "--backend", "none")
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.run_dir is not None and result.stdout.strip().splitlines()[-1].endswith(
        result.run_dir.name
    )
    assert "load[/x][/bold]" in result.stdout and "load[/x][red]x[/]" in result.stdout
    assert "Traceback" not in result.stderr
