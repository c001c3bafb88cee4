"""publish_run on a real ``qualify run`` whose family leaks planted secrets everywhere."""

from __future__ import annotations

import base64
import dataclasses
import json
import os
import subprocess
import textwrap
import urllib.parse
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from qualify.publish.bundle import publish_run
from qualify.publish.sanitize import Identities
from tests.conftest import git, qualify_argv

LITERAL = "ghp_" + "Zy9Xw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0FeDcBa99"
"""Only in the family's source (not in the environment): caught by its shape alone."""
BEARER = "c2VjcmV0LWJlYXJlci10b2tlbi12YWx1ZQ"
URL_PASSWORD = "hunter2-url-pw"
HOSTNAME = "qbox-planted"
USER = "zelda-planted"
PEM = (
    "-----BEGIN OPENSSH PRIVATE KEY-----\n"
    "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n"
    "QyNTUxOQAAACBhbGljZXNlY3JldGtleW1hdGVyaWFsMTIzNDU2Nzg5MDEyAAAAAAAAAA==\n"
    "-----END OPENSSH PRIVATE KEY-----\n"
)
PLANTED_ENV = {
    "GH_TOKEN": "ghp_" + "Ab1Cd2Ef3Gh4Ij5Kl6Mn7Op8Qr9St0Uv1Wx2Y3",
    "GH_FINE_PAT": "github_pat_11AAAAAAA0abcdefghijklm_NOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz012",
    "HF_TOKEN": "hf_" + "PlAnTeDhUgGiNgFaCeToKeN0123456789",
    "AWS_ACCESS_KEY_ID": "AKIAPLANTED0EXAMPLE1",
    "AWS_SECRET_ACCESS_KEY": "pLaNtEd/SeCrEtKeY+0123456789abcdefGHIJKL",
    "SESSION_JWT": "eyJhbGciOiJIUzI1NiJ9.eyJ1c2VyIjoiemVsZGEiLCJyb2xlIjoiYWRtaW4ifQ."
    "c2lnbmF0dXJlLXBsYW50ZWQtMTIzNDU2",
    "DEPLOY_PRIVATE_KEY": PEM,
    "DB_PASSWORD": "p@ss word/with+odd&chars?",
}
FAMILY_TEST = """
import base64, os, sys, urllib.parse
from pathlib import Path
import pytest

LITERAL = {literal!r}
NAMES = {names!r}


def test_prints_everything():
    values = [os.environ[name] for name in NAMES]
    for value in values:
        for stream in (sys.stdout, sys.stderr):
            stream.write("raw " + value + "\\n")
            stream.write("b64 " + base64.b64encode(value.encode()).decode() + "\\n")
            stream.write("b64u x" + base64.urlsafe_b64encode(b"ab" + value.encode()).decode())
            stream.write("\\nurl " + urllib.parse.quote(value, safe="") + "\\n")
    wrapped = "token: " + LITERAL + " " + os.environ["HF_TOKEN"]
    print("\\n".join(wrapped[i : i + 20] for i in range(0, len(wrapped), 20)))
    print("Authorization: Bearer {bearer}")
    print("https://bob:{url_password}@10.20.30.40:8443/x from {hostname} as {user}")
    print("home", os.environ["HOME"], "host", "{hostname}.corp.example", "ip fd00:aa::7")
    run_dir = Path(os.environ["QUALIFY_RUN_DIR"])
    (run_dir / ("artifact-" + LITERAL + ".txt")).write_text("inside " + LITERAL)


@pytest.mark.parametrize("token", [LITERAL], ids=[LITERAL])
def test_fails_with_secret(token):
    assert token == os.environ["GH_TOKEN"], "mismatch " + token + " " + os.environ["DB_PASSWORD"]
"""


@pytest.fixture(scope="module")
def leaky_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """A finished real run (backend none) of a family that prints planted secrets."""
    tmp = tmp_path_factory.mktemp("leaky")
    repo = tmp / "repo"
    family = repo / "families" / "leaky"
    family.mkdir(parents=True)
    command = '["python", "-m", "pytest", "test_leaky.py", "-q", "-rA"]'
    (family / "family.toml").write_text(f'name = "leaky"\n[e2e]\ncommand = {command}\n')
    source = FAMILY_TEST.format(
        literal=LITERAL,
        names=sorted(PLANTED_ENV),
        bearer=BEARER,
        url_password=URL_PASSWORD,
        hostname=HOSTNAME,
        user=USER,
    )
    (family / "test_leaky.py").write_text(textwrap.dedent(source))
    (family / "pytest.ini").write_text("[pytest]\n")
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "leaky family")
    home = tmp / USER
    home.mkdir()
    env = {**os.environ, **PLANTED_ENV, "USER": USER, "LOGNAME": USER, "HOME": str(home)}
    process = subprocess.run(
        qualify_argv("run", "--family", "leaky", "--repo", str(repo), "--backend", "none"),
        cwd=tmp,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    assert process.returncode == 1, process.stdout + process.stderr
    run_dir = tmp / process.stdout.strip().splitlines()[-1]
    assert LITERAL in (run_dir / "stdout.log").read_text()  # the plant really happened
    return run_dir, env


def identities(env: dict[str, str]) -> Identities:
    current = Identities.current(env)
    return dataclasses.replace(current, hostnames=current.hostnames | {HOSTNAME})


def forms(value: str) -> set[str]:
    """The value and how it may be encoded, independently of the sanitizer's own list."""
    raw = value.encode()
    found = {value, urllib.parse.quote(value, safe=""), urllib.parse.quote_plus(value)}
    for offset in range(3):
        for encode in (base64.b64encode, base64.urlsafe_b64encode):
            found.add(encode(b"x" * offset + raw).decode()[4:-4])
    found |= {line for line in value.splitlines() if len(line) > 8}
    return {form for form in found if len(form) >= 8}


PLANTED = [*PLANTED_ENV.values(), LITERAL, BEARER, URL_PASSWORD, HOSTNAME, USER]


def assert_clean(public: Path, home: str) -> list[Path]:
    files = [path for path in public.rglob("*") if path.is_file()]
    assert files
    everything = [*PLANTED, home, "10.20.30.40", "fd00:aa::7"]
    for path in public.rglob("*"):
        name = str(path.relative_to(public))
        text = path.read_text() if path.is_file() else ""
        flat = text.replace("\\n", "").replace("&#10;", "").replace("\n", "")
        for value in everything:
            for form in forms(value) | {value}:
                assert form not in name, (name, value)
                assert form not in text and form not in flat, (name, value, form)
    return files


@pytest.mark.slow
def test_internal_level_keeps_logs_without_secrets(leaky_run: tuple[Path, dict[str, str]]) -> None:
    run_dir, env = leaky_run
    result = publish_run(run_dir, "internal", env, identities=identities(env))
    assert result.ok and result.exit_code == 0, result.reason
    assert result.public_dir == run_dir / "public"
    files = {p.name for p in assert_clean(run_dir / "public", env["HOME"])}
    assert {"stdout.log", "stderr.log", "junit.xml", "audit.json", "events.jsonl"} <= files
    assert "artifact-REDACTED-github-token.txt" in files
    audit = json.loads((run_dir / "public" / "audit.json").read_text())
    assert audit["verdict"] == "FAILED"
    counts = audit["publication"]["rule_counts"]
    # Overlapping matches are merged and counted once, under the first rule (so
    # url-credentials, here inside a wrapped block, may be counted as another rule).
    for rule in ("env-secret", "github-token", "aws-secret-key", "host-name", "user-name"):
        assert counts.get(rule, 0) > 0, counts
    assert counts.get("internal-ip", 0) > 0 and counts.get("home-dir", 0) > 0
    mapping = json.loads((run_dir / "sanitize-map.json").read_text())["pseudonyms"]
    assert mapping[HOSTNAME] == "host-1" and mapping["fd00:aa::7"].startswith("ip-")
    assert json.loads((run_dir / "publication.json").read_text())["status"] == "published"
    assert not [p for p in run_dir.iterdir() if p.name.startswith(".public")]


@pytest.mark.slow
def test_public_level_has_no_raw_logs(leaky_run: tuple[Path, dict[str, str]]) -> None:
    run_dir, env = leaky_run
    result = publish_run(run_dir, "public", env, identities=identities(env))
    assert result, result.reason
    files = {p.name for p in assert_clean(run_dir / "public", env["HOME"])}
    assert files == {"junit.xml", "audit.json", "report.html"}
    junit = ET.parse(run_dir / "public" / "junit.xml").getroot()
    assert junit.find(".//system-out") is None and junit.find(".//failure") is not None
    first = json.loads((run_dir / "sanitize-map.json").read_text())["pseudonyms"]
    again = publish_run(run_dir, "public", env, identities=identities(env))
    assert again and json.loads((run_dir / "sanitize-map.json").read_text())["pseudonyms"] == first


@pytest.mark.slow
@pytest.mark.parametrize("rule", ["github-token", "env-secret", "host-name"])
def test_a_disabled_rule_fails_closed(rule: str, leaky_run: tuple[Path, dict[str, str]]) -> None:
    run_dir, env = leaky_run
    assert publish_run(run_dir, "internal", env, identities=identities(env))
    result = publish_run(
        run_dir, "internal", env, identities=identities(env), disabled_rules={rule}
    )
    assert not result and result.exit_code == 4
    assert result.reason and rule in result.reason
    assert not (run_dir / "public").exists()
    assert not [p for p in run_dir.iterdir() if p.name.startswith(".public")]
    record = (run_dir / "publication.json").read_text()
    assert json.loads(record)["status"] == "failed"
    for value in PLANTED:
        assert value not in record
    assert json.loads((run_dir / "audit.json").read_text())["verdict"] == "FAILED"


def test_unknown_level_is_a_usage_error(tmp_path: Path) -> None:
    from qualify.errors import UsageError

    with pytest.raises(UsageError, match="internal, public"):
        publish_run(tmp_path, "everything", {})
