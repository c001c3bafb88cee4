"""qualify as its users get it: a wheel built from this tree, installed into a fresh venv, run
from a directory that has nothing to do with the checkout; and the GitHub Action's own steps,
run as written in action.yml with a simulated Actions environment."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import venv
from collections.abc import Mapping
from pathlib import Path

import pytest
import yaml

from tests.conftest import git

ROOT = Path(__file__).resolve().parent.parent
PROFILES = {"standard", "large", "l4-budget", "small"}


def _run(
    argv: list[str], cwd: Path, env: Mapping[str, str] | None = None, timeout: float = 900
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv,
        cwd=cwd,
        env=dict(env) if env is not None else None,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
        check=False,
    )


def _clean_env(venv_dir: Path) -> dict[str, str]:
    """The environment of a user's shell with the venv activated: nothing of this test run's
    interpreter or checkout leaks in (no PYTHONPATH, no VIRTUAL_ENV of the dev venv)."""
    keep = ("HOME", "LANG", "LC_ALL", "TMPDIR", "USER", "PIP_CONFIG_FILE", "PIP_INDEX_URL")
    env = {key: os.environ[key] for key in keep if key in os.environ}
    env["PATH"] = f"{venv_dir / 'bin'}:/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"
    env["VIRTUAL_ENV"] = str(venv_dir)
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return env


def _fresh_venv(path: Path) -> Path:
    venv.EnvBuilder(with_pip=True, clear=True).create(path)
    return path


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel of this tree, built the way pip builds it for ``pip install .``."""
    out = tmp_path_factory.mktemp("dist")
    built = _run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(out), str(ROOT)],
        cwd=out,
    )
    assert built.returncode == 0, built.stderr
    (path,) = out.glob("qualify-*.whl")
    return path


@pytest.fixture(scope="module")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv holding the wheel and its dependencies, without the ``family`` extra."""
    venv_dir = _fresh_venv(tmp_path_factory.mktemp("venv") / "v")
    env = _clean_env(venv_dir)
    result = _run([str(venv_dir / "bin" / "pip"), "install", "--quiet", str(wheel)], Path("/"), env)
    assert result.returncode == 0, result.stderr
    return venv_dir


@pytest.mark.slow
def test_the_wheel_carries_profiles_families_schema_and_harness(wheel: Path) -> None:
    import zipfile

    names = set(zipfile.ZipFile(wheel).namelist())
    assert {f"qualify/_data/cgroup_profiles/{name}.toml" for name in PROFILES} <= names
    assert "qualify/_data/families/tiny/family.toml" in names
    assert "qualify/_data/families/tiny/tiny_engine/build.py" in names
    # phi4 imports tiny_engine from its sibling directory: both ship.
    assert "qualify/_data/families/phi4/family.toml" in names
    assert "qualify/_data/families/phi4/phi4_engine/build.py" in names
    assert "qualify/rundir/audit.schema.json" in names
    assert "harness/_site/sitecustomize.py" in names
    assert not [name for name in names if "__pycache__" in name or name.endswith(".pyc")]
    tracked = git(ROOT, "ls-files", "qualify", "harness").splitlines()
    shipped = {name for name in names if name.endswith(".py") and "/_data/" not in name}
    assert shipped == {name for name in tracked if name.endswith(".py")}


@pytest.mark.slow
def test_installed_lists_profiles_and_families_from_anywhere(installed: Path) -> None:
    env = _clean_env(installed)
    qualify = str(installed / "bin" / "qualify")
    profiles = _run([qualify, "profiles"], Path("/"), env)
    assert profiles.returncode == 0, profiles.stderr
    assert {line.split()[0] for line in profiles.stdout.splitlines()} == PROFILES
    families = _run([qualify, "families", "--format", "json"], Path("/"), env)
    assert families.returncode == 0, families.stderr
    listed = {family["name"]: family for family in json.loads(families.stdout)["families"]}
    assert sorted(listed) == ["phi4", "tiny"]
    for family in listed.values():
        assert (family["origin"], family["error"]) == ("bundled", None), family
        assert Path(family["directory"]).is_relative_to(installed)


@pytest.mark.slow
def test_installed_without_the_family_extra_says_what_to_install(
    installed: Path, tmp_path: Path
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    git(project, "init", "-q", "-b", "main")
    git(project, "commit", "-q", "--allow-empty", "-m", "empty")
    env = _clean_env(installed)
    result = _run([str(installed / "bin" / "qualify"), "run", "--family", "tiny"], project, env)
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1, result.stderr
    assert "pip install 'qualify[family]'" in result.stderr
    assert "torch" in result.stderr
    assert not (project / "reports").exists()


def _action_steps() -> list[dict[str, object]]:
    action = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))
    steps: list[dict[str, object]] = action["runs"]["steps"]
    return steps


def _step_env(step: Mapping[str, object], inputs: Mapping[str, str]) -> dict[str, str]:
    """A step's ``env:`` with ``${{ inputs.x }}`` filled in as the runner does."""
    env = {}
    for key, value in dict(step.get("env") or {}).items():  # type: ignore[call-overload]
        text = str(value)
        for name, given in inputs.items():
            text = text.replace("${{ inputs." + name + " }}", given)
        env[key] = text
    return env


def _inputs(**given: str) -> dict[str, str]:
    action = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))
    defaults = {name: str(spec.get("default", "")) for name, spec in action["inputs"].items()}
    return {**defaults, **given}


def _outputs(path: Path) -> dict[str, str]:
    """``$GITHUB_OUTPUT`` in its heredoc form, parsed."""
    values, lines = {}, path.read_text(encoding="utf-8").splitlines()
    index = 0
    while index < len(lines):
        name, _, delimiter = lines[index].partition("<<")
        end = lines.index(delimiter, index + 1)
        values[name] = "\n".join(lines[index + 1 : end])
        index = end + 1
    return values


@pytest.mark.slow
@pytest.mark.privileged
def test_the_action_installs_and_runs_the_default_family(tmp_path: Path) -> None:
    """action.yml's two steps, in order, in a fresh venv and a fresh workspace, the way a
    runner executes a composite action's bash steps."""
    venv_dir = _fresh_venv(tmp_path / "venv")
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    git(workspace, "init", "-q", "-b", "main")
    git(workspace, "commit", "-q", "--allow-empty", "-m", "a project that uses the action")
    runner = tmp_path / "runner"
    runner.mkdir()
    github = {
        "GITHUB_ACTIONS": "true",
        "GITHUB_ACTION_PATH": str(ROOT),
        "GITHUB_WORKSPACE": str(workspace),
        "GITHUB_EVENT_NAME": "push",
        "GITHUB_SHA": git(workspace, "rev-parse", "HEAD"),
        "GITHUB_OUTPUT": str(runner / "output"),
        "GITHUB_STEP_SUMMARY": str(runner / "summary.md"),
    }
    inputs = _inputs(family="tiny", mem="2G", extras="family")
    for step in _action_steps():
        env = {**_clean_env(venv_dir), **github, **_step_env(step, inputs)}
        script = runner / "step.sh"
        script.write_text(str(step["run"]), encoding="utf-8")
        # GitHub runs `shell: bash` as `bash --noprofile --norc -eo pipefail {0}`.
        result = _run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)], workspace, env
        )
        assert result.returncode == 0, f"{step['name']}: {result.stdout}\n{result.stderr}"
    outputs = _outputs(runner / "output")
    assert outputs["verdict"] == "PASSED"
    run_dir = Path(outputs["run-dir"])
    if not run_dir.is_absolute():
        run_dir = workspace / run_dir
    assert (run_dir / "audit.json").is_file()
    assert Path(outputs["junit"]) == run_dir / "public" / "junit.xml"
    assert Path(outputs["junit"]).is_file()
    summary = (runner / "summary.md").read_text(encoding="utf-8")
    assert summary.count("## qualify PASSED: tiny") == 1  # written once, by the run
    assert run_dir.is_relative_to(workspace / "reports" / github["GITHUB_SHA"])
