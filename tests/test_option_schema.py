"""``[option_values]`` of family.toml: rules read and checked at load, ``--set`` checked before
a run writes anything (exit 2, one line naming the value and what is valid)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from qualify.errors import UsageError
from qualify.plan.families import load_family
from qualify.plan.option_schema import OptionRule, check_value, load_rules
from qualify.plan.spec import merge_options
from tests.conftest import ROOT, RunQualify, git

WHERE = "family.toml [option_values]"
DEFAULTS = {"size": "ci", "prompts": 10, "scale": 0.5, "retain": False}


@pytest.mark.parametrize(
    ("table", "name", "value", "problem"),
    [
        ({"size": ["ci", "full"]}, "size", "ci", None),
        ({"size": ["ci", "full"]}, "size", "full", None),
        ({"size": ["ci", "full"]}, "size", "huge", "valid: ci, full"),
        ({"size": ["ci", "full"]}, "size", "CI", "valid: ci, full"),
        ({"prompts": {"min": 1, "max": 10}}, "prompts", 1, None),
        ({"prompts": {"min": 1, "max": 10}}, "prompts", 10, None),
        ({"prompts": {"min": 1, "max": 10}}, "prompts", 0, "valid: 1 to 10"),
        ({"prompts": {"min": 1, "max": 10}}, "prompts", 11, "valid: 1 to 10"),
        ({"prompts": {"min": 1}}, "prompts", 5000, None),
        ({"prompts": {"min": 1}}, "prompts", -3, "valid: at least 1"),
        ({"prompts": {"max": 12}}, "prompts", 13, "valid: at most 12"),
        ({"scale": {"min": 0.0, "max": 1.0}}, "scale", 1.5, "valid: 0 to 1"),
        ({"scale": {"min": 0.0, "max": 1.0}}, "scale", 0.25, None),
        ({"scale": [0.5, 1]}, "scale", 1.0, None),
        ({"prompts": [1, 10]}, "prompts", 2, "valid: 1, 10"),
        ({"retain": [False]}, "retain", True, "valid: false"),
        ({"retain": [False]}, "retain", False, None),
    ],
)
def test_rule_decides_each_value(
    table: dict[str, object], name: str, value: bool | int | float | str, problem: str | None
) -> None:
    rules = load_rules(table, DEFAULTS, WHERE)
    assert rules[name].problem(value) == problem


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ({"sise": ["ci"]}, "sise is not an option of [options] (valid: prompts, retain, scale"),
        ({"size": ["full"]}, "the default size = ci breaks its own rule (valid: full)"),
        (
            {"prompts": {"min": 11}},
            "the default prompts = 10 breaks its own rule (valid: at least 11)",
        ),
        ({"size": []}, "must be a non-empty list of values typed like the default ci"),
        ({"size": ["ci", 2]}, "must be a non-empty list of values typed like the default ci"),
        ({"prompts": ["1", "10"]}, "must be a non-empty list of values typed like the default 10"),
        ({"retain": [0, 1]}, "must be a non-empty list of values typed like the default false"),
        ({"size": {"min": 1}}, "is not a valid range"),
        ({"retain": {"min": 0}}, "is not a valid range"),
        ({"prompts": {"lowest": 1}}, "is not a valid range"),
        ({"prompts": {"min": True}}, "is not a valid range"),
        ({"prompts": {}}, "is not a valid range"),
        ({"prompts": {"min": 10, "max": 1}}, "prompts: min 10 is above max 1"),
        ({"prompts": 3}, "must be a list of allowed values or a table"),
    ],
)
def test_bad_rules_are_one_line_errors(table: dict[str, object], message: str) -> None:
    with pytest.raises(UsageError) as caught:
        load_rules(table, DEFAULTS, WHERE)
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)
    assert str(caught.value).startswith(WHERE)


def test_check_value_names_the_value_and_what_is_valid() -> None:
    rules = {"size": OptionRule(values=("ci", "full"))}
    check_value("size", "full", rules)
    check_value("other", "anything", rules)
    with pytest.raises(UsageError, match=r"^--set size=huge is not allowed for this family "):
        check_value("size", "huge", rules)


def _family(tmp_path: Path, rules: str) -> Path:
    directory = tmp_path / "families" / "demo"
    directory.mkdir(parents=True)
    (directory / "family.toml").write_text(
        textwrap.dedent("""
        name = "demo"
        [e2e]
        command = ["python", "-c", "print('ran')"]
        [options]
        size = "ci"
        prompts = 10
        """)
        + rules
    )
    return directory


def test_family_toml_rules_apply_to_set(tmp_path: Path) -> None:
    family = load_family(
        _family(tmp_path, '[option_values]\nsize = ["ci", "full"]\nprompts = { min = 1 }\n')
    )
    assert merge_options(family, {"size": "full", "prompts": "3"}) == {"size": "full", "prompts": 3}
    with pytest.raises(UsageError, match=r"--set size=tiny is not allowed .*\(valid: ci, full\)"):
        merge_options(family, {"size": "tiny"})
    with pytest.raises(UsageError, match=r"--set prompts=0 is not allowed .*\(valid: at least 1\)"):
        merge_options(family, {"prompts": "0"})


def test_family_without_rules_takes_any_value(tmp_path: Path) -> None:
    family = load_family(_family(tmp_path, ""))
    assert family.option_values == {}
    assert merge_options(family, {"size": "anything"})["size"] == "anything"


def test_bad_rule_in_family_toml_names_the_file(tmp_path: Path) -> None:
    directory = _family(tmp_path, '[option_values]\nsize = ["full"]\n')
    with pytest.raises(UsageError) as caught:
        load_family(directory)
    assert str(caught.value).startswith(f"{directory / 'family.toml'} [option_values]: ")


@pytest.mark.parametrize(
    ("family", "option", "valid"),
    [("tiny", "size", ["tiny", "small", "medium"]), ("phi4", "size", ["ci", "full"])],
)
def test_shipped_families_declare_their_sizes(family: str, option: str, valid: list[str]) -> None:
    loaded = load_family(ROOT / "families" / family)
    rule = loaded.option_values[option]
    assert rule.values == tuple(valid)
    assert loaded.options[option] == valid[0]


def test_run_refuses_before_writing_anything(tmp_path: Path, run_qualify: RunQualify) -> None:
    repo = tmp_path / "repo"
    _family(repo.parent / "repo-src", '[option_values]\nsize = ["ci", "full"]\n')
    (repo / "families").mkdir(parents=True)
    (repo.parent / "repo-src" / "families" / "demo").rename(repo / "families" / "demo")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "demo family")
    out = tmp_path / "reports"
    result = run_qualify(
        "run", "--family", "demo", "--repo", str(repo), "--out", str(out), "--backend", "none",
        "--set", "size=huge",
    )  # fmt: skip
    assert result.returncode == 2, result.stdout + result.stderr
    lines = result.stderr.strip().splitlines()
    assert lines == [
        "qualify run: error: --set size=huge is not allowed for this family (valid: ci, full)"
    ]
    assert not out.exists()
    passed = run_qualify(
        "run", "--family", "demo", "--repo", str(repo), "--out", str(out), "--backend", "none",
        "--set", "size=full",
    )  # fmt: skip
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert passed.audit()["family"]["options"]["size"] == "full"
