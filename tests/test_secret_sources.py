"""Secret sources only grow: every source given for a run is recorded and reused by every later
``qualify publish``, ``report`` and ``triage`` of it, whatever their flags."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import pytest

from qualify.publish.secrets import KnownSecret, SecretIndex
from qualify.publish.sources import SecretSources, record_sources, recorded_sources
from tests.conftest import family_repo, qualify_argv

DEPLOY = "dw-" + "Q7x2kP9mZ4"
FILED = "filed-" + "R3t8vN1bY6"
PRINTER = """\
import os

def test_deploy():
    print("deploy word is", os.environ.get("DEPLOY_WORD"))
    print("filed value is", os.environ.get("FILED_NOTE"))
    words = (os.environ["DEPLOY_WORD"], os.environ["FILED_NOTE"])
    assert os.environ.get("QUALIFY_OPT_FAIL") != "true", "could not deploy %s %s" % words
"""


def _qualify(cwd: Path, *args: str, ci: bool = False) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "DEPLOY_WORD": DEPLOY, "FILED_NOTE": FILED}
    for name in ("CI", "GITHUB_ACTIONS"):
        env.pop(name, None)
    if ci:
        env["CI"] = "true"
    return subprocess.run(
        qualify_argv(*args),
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
        check=False,
    )


def _leaks(directory: Path) -> set[str]:
    index = SecretIndex([KnownSecret(DEPLOY, "deploy"), KnownSecret(FILED, "filed")])
    found = set()
    for path in directory.rglob("*"):
        found |= {hit.secret.origin for hit in index.find(str(path.relative_to(directory)))}
        if path.is_file():
            found |= {hit.secret.origin for hit in index.find(path.read_text(errors="replace"))}
    return found


def _printed_run(tmp_path: Path, *extra: str) -> tuple[Path, Path]:
    """A run whose E2E was given both secrets (``--pass-env``) and printed them; the run
    directory and the secrets file."""
    toml = (
        '[e2e]\ncommand = ["python", "-m", "pytest", "-s", "-q", "test_printer.py"]\n'
        "[options]\nfail = false\n"
    )
    repo = family_repo(tmp_path / "repo", "printer", toml, {"test_printer.py": PRINTER})
    secrets_file = tmp_path / "masked.txt"
    secrets_file.write_text(FILED + "\n")
    result = _qualify(
        tmp_path,
        *("run", "--family", "printer", "--repo", str(repo), "--backend", "none"),
        *("--secret-env", "DEPLOY_WORD", "--secrets-file", str(secrets_file)),
        *("--pass-env", "DEPLOY_WORD", "--pass-env", "FILED_NOTE", "--publish", "internal"),
        *extra,
    )
    assert result.returncode == (1 if extra else 0), result.stdout + result.stderr
    run_dir = tmp_path / result.stdout.strip().splitlines()[-1]
    assert DEPLOY in (run_dir / "stdout.log").read_text()  # the E2E really printed both
    assert FILED in (run_dir / "stdout.log").read_text()
    return run_dir, secrets_file


@pytest.fixture
def printed_run(tmp_path: Path) -> tuple[Path, Path]:
    return _printed_run(tmp_path)


@pytest.mark.slow
def test_every_later_publish_without_flags_redacts_what_the_run_was_given(
    printed_run: tuple[Path, Path],
) -> None:
    run_dir, secrets_file = printed_run
    assert _leaks(run_dir / "public") == set()
    for _ in range(3):
        result = _qualify(run_dir.parent, "publish", str(run_dir))
        assert result.returncode == 0, result.stdout + result.stderr
        assert (run_dir / "public" / "stdout.log").is_file()
        assert _leaks(run_dir / "public") == set()
        assert recorded_sources(run_dir) == SecretSources(
            ("DEPLOY_WORD",), (secrets_file.absolute(),)
        )
        mode = stat.S_IMODE((run_dir / "secret-sources.json").stat().st_mode)
        assert mode == 0o600


@pytest.mark.slow
def test_a_recorded_secrets_file_that_is_gone_is_one_line(printed_run: tuple[Path, Path]) -> None:
    run_dir, secrets_file = printed_run
    secrets_file.unlink()
    before = sorted(p.name for p in (run_dir / "public").iterdir())
    result = _qualify(run_dir.parent, "publish", str(run_dir))
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1, result.stderr
    assert "recorded --secrets-file" in result.stderr and "is gone" in result.stderr
    assert "Traceback" not in result.stderr
    assert sorted(p.name for p in (run_dir / "public").iterdir()) == before  # kept intact


@pytest.mark.slow
def test_triage_in_ci_redacts_the_runs_recorded_sources(tmp_path: Path) -> None:
    run_dir, _ = _printed_run(tmp_path, "--set", "fail=true")
    for ci in (False, True):
        result = _qualify(run_dir.parent, "triage", str(run_dir), "--format", "json", ci=ci)
        assert result.returncode != 2, result.stderr
        found = DEPLOY in result.stdout or FILED in result.stdout
        assert found is not ci, result.stdout  # shown on a terminal, redacted in CI


def test_sources_only_grow(tmp_path: Path) -> None:
    first = SecretSources(("A",), (tmp_path / "one",))
    record_sources(tmp_path, first)
    second = recorded_sources(tmp_path).union(SecretSources(("B",), ()))
    record_sources(tmp_path, second)
    third = recorded_sources(tmp_path).union(SecretSources())  # a publish with no flags
    record_sources(tmp_path, third)
    assert recorded_sources(tmp_path) == SecretSources(("A", "B"), (tmp_path / "one",))


def test_sources_an_older_qualify_kept_in_the_sanitize_map_are_read(tmp_path: Path) -> None:
    (tmp_path / "sanitize-map.json").write_text(
        '{"pseudonyms": {}, "secret_env": ["OLD"], "secrets_file": "/x/masked"}'
    )
    assert recorded_sources(tmp_path) == SecretSources(("OLD",), (Path("/x/masked"),))
