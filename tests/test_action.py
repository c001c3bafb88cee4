"""The GitHub Action and the example workflows as a public repository's required checks see
them: zizmor and GitHub's JSON schemas clean, third-party actions pinned to commit SHAs, no
expression spliced into a script; the action's step script with stand-ins for qualify and sudo;
and ``qualify doctor`` on this machine, for real."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from qualify.sandbox.docker.image import HOST_PYTHON_IMAGE
from tests.conftest import ROOT, qualify_argv

ACTION = ROOT / "action.yml"
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))
BIN = Path(sys.executable).parent
PINNED = re.compile(r"^[\w.-]+/[\w.-]+(/[\w./-]+)?@[0-9a-f]{40}$")
VERSION_COMMENT = re.compile(r"#\s*v\d+\.\d+\.\d+\s*$")


def _tool(name: str) -> str:
    path = BIN / name
    assert path.exists(), f"{name} is missing: pip install -e '.[dev]'"
    return str(path)


def _load(path: Path) -> dict[Any, Any]:
    loaded: dict[Any, Any] = yaml.safe_load(path.read_text(encoding="utf-8"))
    return loaded


def _steps(path: Path) -> list[dict[str, Any]]:
    document = _load(path)
    if "runs" in document:
        steps: list[dict[str, Any]] = document["runs"]["steps"]
        return steps
    return [step for job in document["jobs"].values() for step in job.get("steps", [])]


def test_workflows_and_action_exist() -> None:
    assert ACTION.is_file() and {p.name for p in WORKFLOWS} == {"qualify.yml", "qualify-gpu.yml"}


@pytest.mark.parametrize("persona", ["regular", "auditor"])
def test_zizmor_finds_nothing(persona: str) -> None:
    """Offline: the online audits (impostor commits, known-vulnerable versions) need GitHub's
    API; the pins below were resolved from the actions' own repositories instead."""
    process = subprocess.run(
        [_tool("zizmor"), "--offline", f"--persona={persona}", "--no-progress",
         "--strict-collection", "--format", "json", str(ACTION), *map(str, WORKFLOWS)],
        capture_output=True, text=True, timeout=120, check=False, cwd=ROOT,
    )  # fmt: skip
    assert process.returncode == 0, process.stdout + process.stderr
    assert json.loads(process.stdout) == []


@pytest.mark.parametrize(
    ("schema", "paths"),
    [("vendor.github-actions", [ACTION]), ("vendor.github-workflows", WORKFLOWS)],
)
def test_github_schemas_accept_them(schema: str, paths: list[Path]) -> None:
    process = subprocess.run(
        [_tool("check-jsonschema"), "--builtin-schema", schema, *map(str, paths)],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert process.returncode == 0, process.stdout + process.stderr


@pytest.mark.parametrize("path", [ACTION, *WORKFLOWS], ids=lambda p: p.name)
def test_no_expression_is_spliced_into_a_script(path: Path) -> None:
    for step in _steps(path):
        assert "${{" not in step.get("run", ""), step.get("name")


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_third_party_actions_are_pinned_and_checkout_keeps_no_credentials(path: Path) -> None:
    lines = path.read_text(encoding="utf-8").splitlines()
    uses = [line for line in lines if re.match(r"^\s*(- )?uses:", line)]
    assert uses
    for line in uses:
        target = line.split("uses:", 1)[1].split("#", 1)[0].strip()
        if target == "$/":  # this repository, at the commit that is running
            continue
        assert PINNED.match(target), line
        assert VERSION_COMMENT.search(line), f"no release comment: {line}"
    for step in _steps(path):
        if str(step.get("uses", "")).startswith("actions/checkout@"):
            assert step["with"]["persist-credentials"] is False


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_permissions_are_minimal(path: Path) -> None:
    document = _load(path)
    assert document["permissions"] == {}
    for job in document["jobs"].values():
        assert job["permissions"] == {"contents": "read"}
    triggers = document[True]  # YAML 1.1 reads the key `on` as True
    if any("self-hosted" in job["runs-on"] for job in document["jobs"].values()):
        assert set(triggers) == {"workflow_dispatch"}  # never code of a fork's pull request


# --- the action's step script, with stand-ins for qualify and sudo


STUB_QUALIFY = """#!/bin/bash
echo "qualify $*" >> "$STUB_LOG"
case "$1" in
  doctor)
    if [ "$STUB_PLAN_CODE" != 0 ]; then
      echo "qualify doctor: error: $STUB_REFUSAL" >&2
      exit "$STUB_PLAN_CODE"
    fi
    cat "$STUB_PLAN" ;;
  publish) exit 0 ;;
esac
"""
STUB_SUDO = """#!/bin/bash
echo "sudo $*" >> "$STUB_LOG"
[ "$2" = chown ] && exit 0
while [ "$1" != -- ]; do shift; done
shift
exec "$@"
"""
STUB_RUN = """#!/bin/bash
echo "run $*" >> "$STUB_LOG"
mkdir -p "$1/sha/fam/custom/r1"
echo "summary"
echo "$1/sha/fam/custom/r1"
exit 3
"""


def _step(
    tmp_path: Path, plan: list[str] | None, refusal: str = ""
) -> tuple[subprocess.CompletedProcess[str], list[str], Path]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, text in (("qualify", STUB_QUALIFY), ("sudo", STUB_SUDO), ("fake-run", STUB_RUN)):
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    workspace, out = tmp_path / "workspace", tmp_path / "workspace" / "reports"
    workspace.mkdir()
    plan_file = tmp_path / "plan"
    items = [item.replace("BIN", str(bin_dir)).replace("OUT", str(out)) for item in plan or []]
    plan_file.write_bytes(b"".join(item.encode() + b"\0" for item in items))
    (run_step,) = [step for step in _steps(ACTION) if step.get("id") == "run"]
    inputs = {name: str(spec.get("default", "")) for name, spec in _load(ACTION)["inputs"].items()}
    inputs |= {"family": "fam", "out": str(out), "backend": "auto"}
    env = {
        key: re.sub(r"\$\{\{ inputs\.([\w-]+) \}\}", lambda m: inputs[m.group(1)], str(value))
        for key, value in run_step["env"].items()
    }
    script = tmp_path / "step.sh"
    script.write_text(run_step["run"])
    log = tmp_path / "log"
    process = subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
        cwd=workspace,
        env={
            **env,
            "PATH": f"{bin_dir}:/usr/bin:/bin",
            "GITHUB_WORKSPACE": str(workspace),
            "GITHUB_OUTPUT": str(tmp_path / "output"),
            "STUB_LOG": str(log),
            "STUB_PLAN": str(plan_file),
            "STUB_PLAN_CODE": "0" if plan is not None else "2",
            "STUB_REFUSAL": refusal,
        },
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    return process, log.read_text().splitlines() if log.exists() else [], out


def test_a_run_through_sudo_gives_its_files_back_before_publishing(tmp_path: Path) -> None:
    plan = ["BIN/sudo", "-n", "--preserve-env", "--set-home", "--", "BIN/fake-run", "OUT"]
    process, log, out = _step(tmp_path, plan)
    assert process.returncode == 3, process.stdout + process.stderr  # the run's own code
    assert log[0].startswith(f"qualify doctor --plan --backend auto -- --family fam --out {out}")
    assert log[1].startswith("sudo -n --preserve-env --set-home -- ")
    assert log[2] == f"run {out}"
    owner = f"{os.getuid()}:{os.getgid()}"
    chown = f"sudo -n chown -R --no-dereference {owner} -- {out} {tmp_path / 'workspace'}"
    assert log[3] == chown
    assert log[4] == f"qualify publish {out}/sha/fam/custom/r1"  # after the files are back


def test_a_direct_run_needs_no_ownership_fix(tmp_path: Path) -> None:
    process, log, out = _step(tmp_path, ["BIN/fake-run", "OUT"])
    assert process.returncode == 3
    assert [line.split()[0] for line in log] == ["qualify", "run", "qualify"]
    assert log[2] == f"qualify publish {out}/sha/fam/custom/r1"


def test_no_backend_here_is_an_error_with_the_reasons(tmp_path: Path) -> None:
    process, log, _ = _step(tmp_path, None, refusal="--backend auto cannot cap memory here (...)")
    assert process.returncode == 2
    assert "qualify doctor: error: --backend auto cannot cap memory here" in process.stderr
    assert (
        "::error title=qualify::qualify run wrote no run directory (exit code 2)" in process.stdout
    )
    assert (tmp_path / "output").read_text() == "verdict=ERROR\n"
    assert len(log) == 1  # nothing ran


# --- qualify doctor on this machine, for real


@pytest.mark.privileged
def test_doctor_on_this_machine_names_what_works_and_why_not(
    docker_engine: tuple[str, str],
) -> None:
    host, _ = docker_engine
    env = dict(os.environ, DOCKER_HOST=host)
    process = subprocess.run(
        qualify_argv("doctor", "--format", "json"),
        capture_output=True, text=True, timeout=120, check=False, env=env,
    )  # fmt: skip
    assert process.returncode == 0, process.stderr
    report = json.loads(process.stdout)
    routes = {(r["backend"], r["via"]): r for r in report["backends"]}
    assert report["schema_version"] == 1 and report["cgroup_version"] == 1
    assert routes["cgroup", "direct"]["works"], routes["cgroup", "direct"]
    assert routes["docker", "engine"]["works"], routes["docker", "engine"]
    assert routes["cgroup", "systemd-scope"]["reason"] == (
        "only for cgroup v2 (memory is on cgroup v1 here)"
    )
    assert routes["cgroup", "sudo"]["reason"] == "not needed: the cgroup route works directly"
    facts = report["facts"]
    assert set(facts) == {"user", "cgroup", "delegation", "systemd", "docker", "gpu", "mps"}
    assert facts["cgroup"].startswith("v1, memory cgroup /")
    assert facts["gpu"].startswith("no device: ")  # no NVIDIA driver here, and why
    assert facts["mps"].startswith("no MPS control daemon: ")
    assert report["choice"]["backend"] == "cgroup" and report["choice"]["via"] == "direct"
    text = subprocess.run(
        qualify_argv("doctor"), capture_output=True, text=True, timeout=120, check=False, env=env
    )
    assert text.returncode == 0
    assert re.search(r"^  cgroup +works  cgroup v1: ", text.stdout, re.M), text.stdout
    assert re.search(r"^  docker +works  engine ", text.stdout, re.M), text.stdout
    assert text.stdout.splitlines()[-1].startswith("qualify run --backend auto chose cgroup: ")


@pytest.mark.privileged
@pytest.mark.slow
def test_the_docker_plan_imports_its_image_and_the_audit_says_why(
    docker_engine: tuple[str, str], repo: Path
) -> None:
    """The argv `--plan --backend docker` prints, run as the action runs it: the host-Python
    image imported, the hog family OOM-killed in it, the decision the audit's first note."""
    host, _ = docker_engine
    env = dict(os.environ, DOCKER_HOST=host)
    plan = subprocess.run(
        qualify_argv("doctor", "--plan", "--backend", "docker", "--", "--family", "hog",
                     "--mem", "128M", "--out", "reports"),
        cwd=repo, capture_output=True, timeout=300, check=False, env=env,
    )  # fmt: skip
    assert plan.returncode == 0, plan.stderr.decode()
    argv = plan.stdout.decode().split("\0")
    assert argv.pop() == "" and argv[0] == "/usr/bin/env"
    assert argv[-5:] == [
        "--backend", "docker", "--image", HOST_PYTHON_IMAGE, "--mount-host-python"
    ]  # fmt: skip
    why = plan.stderr.decode().strip().removeprefix("qualify doctor: ")
    assert why.startswith("--backend docker runs docker: engine ")
    run = subprocess.run(argv, cwd=repo, capture_output=True, text=True, timeout=300, check=False)
    assert run.returncode == 3, run.stdout + run.stderr
    audit = json.loads((repo / run.stdout.strip().splitlines()[-1] / "audit.json").read_text())
    assert audit["verdict"] == "OOM_KILLED" and audit["sandbox"]["backend"] == "docker"
    assert audit["sandbox"]["notes"][0] == why


def test_doctor_plan_refuses_backend_flags_among_the_run_arguments() -> None:
    process = subprocess.run(
        qualify_argv("doctor", "--plan", "--", "--family", "x", "--backend", "none"),
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert process.returncode == 2
    assert process.stderr == (
        "qualify doctor: error: --backend belongs to qualify doctor --plan, not to the run's "
        "arguments\n"
    )
