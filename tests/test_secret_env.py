"""Secrets never enter the sandbox unless asked for: a hostile family that writes its whole
environment out in encodings no sanitizer undoes finds none of them, on every backend."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from qualify.plan.secret_sources import withhold_secrets
from qualify.publish.secrets import KnownSecret, SecretIndex
from tests.conftest import family_repo, qualify_argv

HOSTILE = """\
import base64, os, sys
for name, value in sorted(os.environ.items()):
    raw = value.encode()
    print(name, base64.b64encode(raw).decode(), value[::-1], raw.hex(), sep=" ")
sys.stdout.flush()
"""
WITHHELD = {
    "GITHUB_TOKEN": "ghp_" + "Zq8" + "vW3xK9mR2tY7nL4pB6cD1fG5hJ0",
    "AWS_SECRET_ACCESS_KEY": "wJalrXUt" + "nFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "MY_PASSWORD": "c0rrect-h0rse-" + "battery",
    "DEPLOY_WORD": "dw-" + "8f3a1c9e77b2",  # named with --secret-env
    "INNOCENT_NOTE": "note-holds-" + "file-value-42",  # holds a --secrets-file value
}
PASSED = {
    "HF_TOKEN": "hf_" + "PassedByCaller" + "7x9Q2w",  # --pass-env HF_TOKEN
    "FAMILY_API_KEY": "fam-" + "passed-by-toml-3k5",  # [e2e] pass_env
}


def _hostile_repo(root: Path) -> Path:
    toml = '[e2e]\ncommand = ["python", "hostile.py"]\npass_env = ["FAMILY_API_KEY"]\n'
    return family_repo(root / "repo", "hostile", toml, {"hostile.py": HOSTILE})


def _run_hostile(tmp_path: Path, *backend: str) -> Path:
    repo = _hostile_repo(tmp_path)
    secrets_file = tmp_path / "masked.txt"
    secrets_file.write_text("file-value-42\n")
    env = {**os.environ, **WITHHELD, **PASSED}
    process = subprocess.run(
        qualify_argv(
            *("run", "--family", "hostile", "--repo", str(repo), "--mem", "256M", *backend),
            *("--secret-env", "DEPLOY_WORD", "--secrets-file", str(secrets_file)),
            *("--pass-env", "HF_TOKEN", "--publish", "internal"),
        ),
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    assert process.returncode == 0, process.stdout + process.stderr
    run_dir = tmp_path / process.stdout.strip().splitlines()[-1]
    assert run_dir.is_dir()
    return run_dir


def _found_in_run_dir(run_dir: Path, values: dict[str, str]) -> set[str]:
    """The names of ``values`` found in any file of the run directory, in any form (raw,
    base64, reversed, hex, ...), but qualify's private record of the run's secret sources."""
    index = SecretIndex([KnownSecret(value, name) for name, value in values.items()])
    found = set()
    for path in run_dir.rglob("*"):
        if path.is_file() and path.name != "secret-sources.json":
            text = path.read_bytes().decode(errors="replace")
            found |= {hit.secret.origin for hit in index.find(text)}
    return found


def _check(run_dir: Path) -> None:
    stdout = (run_dir / "stdout.log").read_text()
    assert "PATH " in stdout  # the family did list its environment
    assert _found_in_run_dir(run_dir, WITHHELD) == set()
    assert _found_in_run_dir(run_dir, PASSED) == set(PASSED)  # it would have found them
    sandbox = __import__("json").loads((run_dir / "audit.json").read_text())["sandbox"]
    assert set(WITHHELD) <= set(sandbox["env_withheld"])
    assert sandbox["env_passed"] == sorted(PASSED)


@pytest.mark.slow
def test_a_hostile_family_finds_no_secret_without_a_sandbox(tmp_path: Path) -> None:
    _check(_run_hostile(tmp_path, "--backend", "none"))


@pytest.mark.slow
@pytest.mark.privileged
def test_a_hostile_family_finds_no_secret_in_a_cgroup(tmp_path: Path) -> None:
    _check(_run_hostile(tmp_path, "--backend", "cgroup"))


@pytest.mark.slow
@pytest.mark.privileged
def test_a_hostile_family_finds_no_secret_in_a_container(
    tmp_path: Path, docker_engine: tuple[str, str]
) -> None:
    _host, image = docker_engine
    _check(_run_hostile(tmp_path, "--backend", "docker", "--mount-host-python", "--image", image))


@pytest.mark.parametrize(
    ("name", "secret"),
    [
        ("API_KEY", True),
        ("ACCESS_KEY", True),
        ("KEYBOARD_LAYOUT", False),
        ("MONKEY", False),
        ("SSH_AUTH_SOCK", True),
        ("AUTHOR", False),
        ("DB_CREDENTIALS", True),
        ("SENTRY_DSN", True),
        ("SESSION_COOKIE", True),
        ("PRIVATE_REGISTRY", True),
        ("TOKENIZERS_PARALLELISM", False),
        ("PATH", False),
    ],
)
def test_names_withheld_by_default(name: str, secret: bool) -> None:
    screened = withhold_secrets({name: "some-value-123"})
    assert (name in screened.withheld) is secret
    assert (name in screened.env) is not secret


def test_a_secret_passed_by_name_is_given_and_listed() -> None:
    screened = withhold_secrets(
        {"HF_TOKEN": "hf-value-1234", "GH_TOKEN": "gh-value-1234", "NOTE": "x-file-val-9"},
        secret_values={"file-val"},
        pass_env={"HF_TOKEN", "UNSET_ONE"},
    )
    assert screened.env == {"HF_TOKEN": "hf-value-1234"}
    assert screened.withheld == ("GH_TOKEN", "NOTE")
    assert screened.passed == ("HF_TOKEN",)


SHORT_FAMILY = """\
import os
print("given", os.environ.get("MY_TOKEN", "nothing"))
"""


@pytest.mark.slow
@pytest.mark.parametrize(
    ("value", "why"),
    [("zq9x7", "too short"), ("abcdefgh", "ordinary word")],
)
@pytest.mark.parametrize("passed_by", ["--pass-env", "family pass_env", "not passed"])
def test_a_passed_secret_named_variable_that_cannot_be_redacted_is_refused(
    tmp_path: Path, value: str, why: str, passed_by: str
) -> None:
    """``MY_TOKEN`` is secret by name; a value qualify cannot redact (under 6 characters, or
    letters only under 12) given to the E2E would be published in clear: the run is refused
    with one line naming the variable and why, exit 2, nothing run. Not passed, it is withheld
    from the E2E and the run goes on."""
    toml = '[e2e]\ncommand = ["python", "show.py"]\n'
    if passed_by == "family pass_env":
        toml += 'pass_env = ["MY_TOKEN"]\n'
    repo = family_repo(tmp_path / "repo", "short", toml, {"show.py": SHORT_FAMILY})
    extra = ("--pass-env", "MY_TOKEN") if passed_by == "--pass-env" else ()
    process = subprocess.run(
        qualify_argv(
            *("run", "--family", "short", "--repo", str(repo), "--mem", "256M", *extra),
            *("--backend", "none", "--publish", "internal"),
        ),
        cwd=tmp_path,
        env={**os.environ, "MY_TOKEN": value},
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    if passed_by == "not passed":
        assert process.returncode == 0, process.stdout + process.stderr
        run_dir = tmp_path / process.stdout.strip().splitlines()[-1]
        assert "given nothing" in (run_dir / "stdout.log").read_text()
        return
    said = process.stderr.strip().splitlines()
    assert process.returncode == 2, process.stdout + process.stderr
    assert len(said) == 1 and "MY_TOKEN" in said[0] and value not in said[0], said
    assert ("short" in said[0]) if why == "too short" else ("ordinary" in said[0])
    assert value not in process.stdout
    assert not list(tmp_path.glob("**/stdout.log"))  # nothing ran
