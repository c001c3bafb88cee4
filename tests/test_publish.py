"""Publishing that cannot leak: a real ``qualify run`` inside a simulated GitHub Actions step, of
a family that plants random secrets of every kind in every place a family can put text; then
every public channel is searched for every one of them in every form.

The forms and fragments are computed here, independently of the sanitizer's own list.
"""

from __future__ import annotations

import base64
import html
import json
import os
import random
import string
import subprocess
import sys
import textwrap
import time
import urllib.parse
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from qualify.evidence.junit import JUnitCase
from qualify.publish.bundle import (
    _encode,
    _strip_streams,
    _well_formed,
    publish_run,
    run_sanitizer,
)
from qualify.publish.sanitize import Identities
from qualify.report.junit import render_junit
from qualify.rundir.audit import Audit
from tests.conftest import git, qualify_argv

HOSTNAME = "qbox-planted"
"""Planted as this machine's name (whose real name may be too short to be one)."""
USER = "zelda-planted"
KEEP = ("keepme-alpha", "keepme-omega")
"""Ordinary text around every plant: it must survive."""


def _random(alphabet: str, length: int, rng: random.Random) -> str:
    while True:
        value = "".join(rng.choice(alphabet) for _ in range(length))
        if any(c.isupper() for c in value) and any(c.isdigit() for c in value):
            return value


def planted_values(seed: int) -> tuple[dict[str, str], dict[str, str]]:
    """(secret-named environment, other plants by name): random values of 14 kinds."""
    rng = random.Random(seed)
    b62 = string.ascii_letters + string.digits
    pem_body = "\n".join(
        base64.b64encode(rng.randbytes(48)).decode() for _ in range(4)
    )  # a PEM-shaped key, random
    env = {
        "GH_TOKEN": "ghp_" + _random(b62, 36, rng),
        "GH_FINE_PAT": "github_pat_11" + _random(b62, 20, rng) + "_" + _random(b62, 59, rng),
        "HF_TOKEN": "hf_" + _random(b62, 34, rng),
        "AWS_ACCESS_KEY_ID": "AKIA" + _random(string.ascii_uppercase + string.digits, 16, rng),
        "AWS_SECRET_ACCESS_KEY": _random(b62 + "/+", 40, rng),
        "SESSION_JWT": "eyJhbGciOiJIUzI1NiJ9.eyJ"
        + _random(b62, 30, rng)
        + "."
        + _random(b62 + "-_", 43, rng),
        "DEPLOY_PRIVATE_KEY": "-----BEGIN OPENSSH PRIVATE KEY-----\n"
        + pem_body
        + "\n-----END OPENSSH PRIVATE KEY-----\n",
        "DB_PASSWORD": "p@ss w'rd/" + _random(b62, 10, rng) + "+odd&<chars>?",
        "MYSQL_PWD": "my" + _random(b62, 14, rng),
        "SMTP_PASS": "sm" + _random(b62, 14, rng),
        "DATABASE_URL": f"postgres://app:{_random(b62, 16, rng)}@db.internal:5432/prod",
    }
    others = {
        # Only their shapes say they are secret (names that say nothing).
        "PLANT_SLACK": "xoxb-" + "".join(rng.choice(string.digits) for _ in range(12)) + "-"
        + _random(b62, 24, rng),
        "PLANT_OPENAI": "sk-proj-" + _random(b62, 40, rng),
        "PLANT_GITLAB": "glpat-" + _random(b62, 20, rng),
        "PLANT_URL_PASSWORD": _random(b62, 18, rng),
        # Only known from the secrets file / --secret-env.
        "PLANT_OPAQUE": _random(b62, 24, rng),
        "BUILD_NOTE": _random(b62, 22, rng),
    }  # fmt: skip
    return env, others


FAMILY_TEST = r"""
import base64, html, json, os, socket, subprocess, sys, urllib.parse
from pathlib import Path
import pytest
import harness

NAMES = {names!r}
KEEP = {keep!r}


def values():
    return [os.environ[name] for name in NAMES]


def forms(value):
    raw = value.encode()
    yield "raw " + value
    for pad in (b"", b"a", b"ab"):
        yield "b64 " + base64.b64encode(pad + raw).decode()
        yield "b64u " + base64.urlsafe_b64encode(pad + raw).decode()
    yield "url " + urllib.parse.quote(value, safe="")
    yield "url2 " + urllib.parse.quote(urllib.parse.quote(value, safe=""), safe="")
    yield "json " + json.dumps(value)
    yield "html " + html.escape(value)
    yield "hex " + raw.hex()
    yield "rev " + value[::-1]
    yield "ansi \x1b[31m" + value + "\x1b[0m"
    yield "glued token" + value + "x"


@pytest.fixture(autouse=True)
def phase_names():
    with harness.phase("load-" + os.environ["PLANT_SLACK"]):
        yield


def test_streams_and_files():
    for value in values():
        for line in forms(value):
            print(KEEP[0], line, KEEP[1])
            print(KEEP[0], line, KEEP[1], file=sys.stderr)
    wrapped = "token: " + os.environ["GH_TOKEN"] + " " + os.environ["HF_TOKEN"]
    print("\n".join(wrapped[i : i + 20] for i in range(0, len(wrapped), 20)))
    print("Authorization: Bearer " + os.environ["PLANT_OPAQUE"])
    print("https://bob:" + os.environ["PLANT_URL_PASSWORD"] + "@10.20.30.40:8443/x")
    print("https%3A%2F%2F%3A" + os.environ["PLANT_URL_PASSWORD"] + "%40host")
    for host in (socket.gethostname(), "{hostname}"):
        print("home", os.environ["HOME"], "host", host + ".corp.example", "ip fd00:aa::7")
        print("user {user}@" + host + ":~$ ls /home/{user}")
    run_dir = Path(os.environ["QUALIFY_RUN_DIR"])
    (run_dir / ("artifact-" + os.environ["PLANT_GITLAB"] + ".txt")).write_text(
        KEEP[0] + " " + os.environ["GH_TOKEN"] + " " + KEEP[1]
    )
    harness.metric("latency-" + os.environ["PLANT_OPENAI"], 1.0, "ms")
    harness.record_case(
        "case-" + os.environ["HF_TOKEN"],
        side="native",
        token_ids=[1, 2],
        text=KEEP[0] + " " + os.environ["SMTP_PASS"] + " " + KEEP[1],
        top_logprobs=[[[1, -0.1]], [[2, -0.2]]],
        prompt="prompt " + os.environ["MYSQL_PWD"],
    )
    argv = [sys.executable, "-c", "import time; time.sleep(1.5)", "x" * 150,
            "--token=" + os.environ["GH_TOKEN"], "--db=" + os.environ["DATABASE_URL"]]
    subprocess.run(argv, check=True)


@pytest.mark.parametrize("token", [os.environ["GH_TOKEN"]], ids=[os.environ["GH_TOKEN"]])
def test_id_holds_a_token(token):
    assert token == "x", KEEP[0] + " mismatch " + os.environ["DB_PASSWORD"] + " " + KEEP[1]


def test_assertion_with_a_pem_key():
    key = os.environ["DEPLOY_PRIVATE_KEY"]
    assert key == "y", KEEP[0] + " " + key + " " + KEEP[1]


def test_truncated_repr():
    long = KEEP[0] + " " + ("filler " * 20) + os.environ["AWS_SECRET_ACCESS_KEY"] + " " + KEEP[1]
    assert long == "other"


def test_traceback():
    def inner(secret):
        raise RuntimeError(KEEP[0] + " " + secret + " " + KEEP[1])

    inner(os.environ["SESSION_JWT"] + " " + os.environ["AWS_ACCESS_KEY_ID"])


def test_skip_reason():
    pytest.skip(KEEP[0] + " skipped " + os.environ["BUILD_NOTE"] + " " + KEEP[1])


def test_gh_fine_pat_and_slack():
    assert False, KEEP[0] + " " + os.environ["GH_FINE_PAT"] + " " + os.environ["PLANT_SLACK"]
"""


@pytest.fixture(scope="module")
def seed() -> int:
    return random.SystemRandom().randrange(2**32)


@pytest.fixture(scope="module")
def leaky(tmp_path_factory: pytest.TempPathFactory, seed: int) -> dict:  # type: ignore[type-arg]
    """A finished real run (backend none) inside a simulated Actions step, and its channels."""
    secret_env, others = planted_values(seed)
    tmp = tmp_path_factory.mktemp("leaky")
    repo = tmp / "repo"
    family = repo / "families" / "leaky"
    family.mkdir(parents=True)
    (family / "family.toml").write_text(
        'name = "leaky"\n'
        # Ordinary content that must not abort publication.
        'description = "set password=... in your environment; the prompt_key option"\n'
        '[e2e]\ncommand = ["python", "-m", "pytest", "test_leaky.py", "-q", "-rA"]\n'
        '[options]\nprompt_key = "question"\ntokenizer = "gpt2-medium-tok"\n'
    )
    source = FAMILY_TEST.format(
        names=sorted([*secret_env, *others]), keep=KEEP, user=USER, hostname=HOSTNAME
    )
    (family / "test_leaky.py").write_text(textwrap.dedent(source))
    (family / "pytest.ini").write_text("[pytest]\n")
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "leaky family")
    home = tmp / USER
    home.mkdir()
    secrets_file = tmp / "masked.txt"
    secrets_file.write_text(others["PLANT_OPAQUE"] + "\n")
    summary, output = tmp / "step_summary.md", tmp / "github_output"
    env = {
        **os.environ,
        **secret_env,
        **others,
        "USER": USER,
        "LOGNAME": USER,
        "HOME": str(home),
        "GITHUB_ACTIONS": "true",
        "CI": "true",
        "GITHUB_EVENT_NAME": "push",
        "GITHUB_STEP_SUMMARY": str(summary),
        "GITHUB_OUTPUT": str(output),
        "GITHUB_WORKSPACE": str(repo),
    }
    secret_args = ["--secret-env", "BUILD_NOTE", "--secrets-file", str(secrets_file)]
    # The family is given every plant (secrets are kept from the E2E unless passed by name).
    passed = [f"--pass-env={name}" for name in sorted([*secret_env, *others])]
    process = subprocess.run(
        qualify_argv(
            "run", "--family", "leaky", "--repo", str(repo), "--backend", "none",
            "--publish", "internal", "--set", "prompt_key=question",
            "--set", "tokenizer=gpt2-medium-tok", *secret_args, *passed,
        ),
        cwd=tmp,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
        stdin=subprocess.DEVNULL,
        check=False,
    )  # fmt: skip
    run_dir = tmp / process.stdout.strip().splitlines()[-1]
    again = subprocess.run(
        qualify_argv("publish", str(run_dir), *secret_args),
        cwd=tmp,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    return {
        "tmp": tmp,
        "run_dir": run_dir,
        "env": env,
        "process": process,
        "again": again,
        "values": {**secret_env, **others},
        "summary": summary,
        "output": output,
    }


def forms(value: str) -> set[str]:
    """``value`` in every form the channels are searched for."""
    raw = value.encode()
    found = {
        value,
        value[::-1],
        raw.hex(),
        raw.hex().upper(),
        json.dumps(value)[1:-1],
        html.escape(value),
        urllib.parse.quote(value, safe=""),
        urllib.parse.quote(urllib.parse.quote(value, safe=""), safe=""),
    }
    for offset in range(3):
        for encode in (base64.b64encode, base64.urlsafe_b64encode):
            encoded = encode(b"\0" * offset + raw + b"\0\0").decode()
            found.add(encoded[4 : -4 - 4])  # the part fixed by the value alone, trimmed
    found |= {line.strip() for line in value.splitlines() if len(line.strip()) >= 12}
    return {form for form in found if len(form) >= 8}


def fragments(value: str) -> set[str]:
    flat = value.replace("\n", "")
    return {flat[i : i + 12] for i in range(len(flat) - 11)} if len(flat) >= 12 else {flat}


def undo(text: str) -> list[str]:
    """The channel text and its escapes undone (workflow command, HTML, JSON), each also with
    line breaks removed."""
    command = (
        text.replace("%0D", "\r").replace("%0A", "\n").replace("%3A", ":").replace("%2C", ",")
    ).replace("%25", "%")
    variants = {text, command, html.unescape(text), html.unescape(command)}
    variants |= {urllib.parse.unquote(v) for v in list(variants)}
    variants |= {v.replace("\\n", "\n").replace('\\"', '"').replace("\\/", "/") for v in variants}
    variants |= {v.replace("\n", "").replace("\r", "") for v in list(variants)}
    return sorted(variants)


def channels(leaky: dict) -> dict[str, str]:  # type: ignore[type-arg]
    """Every public channel's exact text: public/ files and names, step summary, outputs,
    annotations and qualify's own output (stdout and stderr of run and publish)."""
    found = {}
    public = leaky["run_dir"] / "public"
    for path in sorted(public.rglob("*")):
        name = str(path.relative_to(public))
        found[f"name {name}"] = name
        if path.is_file():
            found[f"public/{name}"] = path.read_bytes().decode("utf-8", errors="replace")
    found["step summary"] = leaky["summary"].read_text()
    found["outputs"] = leaky["output"].read_text()
    for which in ("process", "again"):
        found[f"{which} stdout"] = leaky[which].stdout
        found[f"{which} stderr"] = leaky[which].stderr
    return found


def leaks_of(text: str, values: dict[str, str]) -> list[str]:
    found = []
    for variant in undo(text):
        for name, value in values.items():
            for form in forms(value):
                if form in variant:
                    found.append(f"{name} whole form")
            for fragment in fragments(value):
                if fragment in variant:
                    found.append(f"{name} fragment {fragment[:3]}...")
                    break
    return sorted(set(found))


@pytest.mark.slow
def test_no_channel_holds_any_planted_secret(leaky: dict, seed: int) -> None:  # type: ignore[type-arg]
    process = leaky["process"]
    assert process.returncode == 1, process.stdout + process.stderr  # FAILED, published
    assert leaky["again"].returncode == 0, leaky["again"].stderr
    stdout_log = (leaky["run_dir"] / "stdout.log").read_text()
    assert leaky["values"]["GH_TOKEN"] in stdout_log  # the plant really happened
    assert (leaky["run_dir"] / "public" / "stdout.log").is_file()
    everything = channels(leaky)
    assert "step summary" in everything and "::error" in everything["process stdout"]
    problems = {
        channel: leaks
        for channel, text in everything.items()
        if (leaks := leaks_of(text, leaky["values"]))
    }
    assert not problems, f"seed {seed}: {problems}"


@pytest.mark.slow
def test_ordinary_text_around_the_plants_survives(leaky: dict) -> None:  # type: ignore[type-arg]
    public = leaky["run_dir"] / "public"
    stdout_log = (public / "stdout.log").read_text()
    for word in KEEP:
        assert stdout_log.count(word) >= 11 * 15, word  # every value, every form
    junit = (public / "junit.xml").read_text()
    assert "keepme-alpha mismatch [REDACTED:" in html.unescape(junit)
    summary = html.unescape(leaky["summary"].read_text())
    assert "keepme-alpha" in summary and "keepme-omega" in summary
    assert "gpt2-medium-tok" in (public / "audit.json").read_text()
    assert "question" in (public / "audit.json").read_text()
    assert "password=..." in (public / "audit.json").read_text()
    assert "artifact-REDACTED-gitlab-token.txt" in {p.name for p in public.iterdir()}
    outputs = leaky["output"].read_text()
    assert "verdict<<" in outputs and "FAILED" in outputs and "junit<<" in outputs


@pytest.mark.slow
def test_identities_are_pseudonymized(leaky: dict) -> None:  # type: ignore[type-arg]
    run_dir, env = leaky["run_dir"], leaky["env"]
    sources = json.loads((run_dir / "secret-sources.json").read_text())
    assert sources["secret_env"] == ["BUILD_NOTE"] and sources["secrets_files"]
    mapping = json.loads((run_dir / "sanitize-map.json").read_text())
    for value in leaky["values"].values():
        assert value not in json.dumps(mapping) + json.dumps(sources)
    current = Identities.current(env)
    planted = Identities(current.hostnames | {HOSTNAME}, current.users, current.homes)
    result = publish_run(run_dir, "internal", run_sanitizer(run_dir, env, identities=planted))
    assert result, result.reason
    text = (run_dir / "public" / "stdout.log").read_text()
    assert f"{HOSTNAME}.corp.example" not in text and f"@{HOSTNAME}" not in text
    assert f"{USER}@" not in text and f"/home/{USER}" not in text
    assert "10.20.30.40" not in text and "fd00:aa::7" not in text
    assert env["HOME"] not in text and "home-" in text
    pseudonyms = json.loads((run_dir / "sanitize-map.json").read_text())["pseudonyms"]
    assert pseudonyms[HOSTNAME].startswith("host-") and pseudonyms[USER].startswith("user-")
    assert f"user {pseudonyms[USER]}@{pseudonyms[HOSTNAME]}:~$" in text


@pytest.mark.slow
def test_public_level_has_no_raw_logs(leaky: dict) -> None:  # type: ignore[type-arg]
    run_dir, env = leaky["run_dir"], leaky["env"]
    sanitizer = run_sanitizer(run_dir, env)
    result = publish_run(run_dir, "public", sanitizer)
    assert result, result.reason
    files = {p.name for p in (run_dir / "public").iterdir()}
    # The evidence triage reads (phases, memory curve, test outcomes), not the captured output.
    assert files == {"junit.xml", "audit.json", "report.html", "events.jsonl", "timeline.jsonl"}
    junit = ET.parse(run_dir / "public" / "junit.xml").getroot()
    assert junit.find(".//system-out") is None and junit.find(".//failure") is not None
    assert not leaks_of((run_dir / "public" / "report.html").read_text(), leaky["values"])


@pytest.mark.slow
@pytest.mark.parametrize("rules", [["known-secret"], ["known-secret", "github-token"]])
def test_a_disabled_rule_fails_closed(rules: list[str], leaky: dict) -> None:  # type: ignore[type-arg]
    """Every value a shape rule finds is also learnt as a known secret: only with the known
    values off does anything get through, and the final scan (every value) withholds it."""
    run_dir, env = leaky["run_dir"], leaky["env"]
    sanitizer = run_sanitizer(run_dir, env, disabled_rules=rules)
    result = publish_run(run_dir, "internal", sanitizer)
    assert not result and result.exit_code == 4
    assert result.reason and "known-secret" in result.reason and "public/" in result.reason
    assert not (run_dir / "public").exists()
    assert not [p for p in run_dir.iterdir() if p.name.startswith(".public")]
    record = (run_dir / "publication.json").read_text()
    assert json.loads(record)["status"] == "failed"
    assert not leaks_of(record, leaky["values"])
    assert json.loads((run_dir / "audit.json").read_text())["verdict"] == "FAILED"
    # Published again with every rule: public/ is back.
    assert publish_run(run_dir, "internal", run_sanitizer(run_dir, env))


def test_a_latin1_byte_does_not_drop_a_log(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "audit.json").write_bytes(Audit(verdict="PASSED").to_bytes())
    (run_dir / "stdout.log").write_bytes(b"caf\xe9 ok\nline two ghp_" + b"Ab1Cd2Ef3Gh4Ij5Kl6" * 2)
    result = publish_run(run_dir, "internal", run_sanitizer(run_dir, {}))
    assert result, result.reason
    published = (run_dir / "public" / "stdout.log").read_text(encoding="utf-8")
    assert published == "caf\ufffd ok\nline two [REDACTED:github-token]"
    assert "stdout.log" in result.files and not result.skipped


def test_unknown_level_is_a_usage_error(tmp_path: Path) -> None:
    from qualify.errors import UsageError

    with pytest.raises(UsageError, match="internal, public"):
        publish_run(tmp_path, "everything", run_sanitizer(tmp_path, {}))


def test_streams_are_stripped_and_a_junit_without_them_is_kept_as_written(
    tmp_path: Path,
) -> None:
    """pytest's own JUnit with every stream logged (junit_logging=all) loses its system-out
    and system-err elements; qualify's own JUnit, which has none, comes through unparsed."""
    (tmp_path / "test_loud.py").write_text(
        "import sys\n"
        "def test_loud():\n"
        "    print('-'.join(['printed', 'out']))\n"
        "    print('-'.join(['printed', 'err']), file=sys.stderr)\n"
        "    assert False, 'the failure stays'\n"
    )
    subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o",
         "junit_logging=all", "--junitxml=pytest-junit.xml", "test_loud.py"],
        cwd=tmp_path, capture_output=True, check=False,
    )  # fmt: skip
    written = (tmp_path / "pytest-junit.xml").read_text()
    assert "<system-out>" in written and "<system-err>" in written
    stripped = _strip_streams(written)
    assert "printed-out" in written and "printed-err" in written
    assert (
        "printed-out" not in stripped
        and "printed-err" not in stripped
        and "the failure stays" in stripped
    )
    junit = ET.fromstring(stripped)
    assert junit.find(".//system-out") is None and junit.find(".//system-err") is None
    cut = written[: written.index("printed-err") + 9]  # killed while writing: it ends in a stream
    assert "printed-out" not in _strip_streams(cut) and "printed-e" not in _strip_streams(cut)
    assert "the failure stays" in _strip_streams(cut)
    ours = render_junit("fam", [JUnitCase("c", "t", "failed", 1.0, "m", "x < y")], {}, "")
    assert _strip_streams(ours.decode()) == ours.decode()


@pytest.mark.parametrize(
    "text",
    [
        '<?xml version="1.0"?><a x="1"><b>t &amp; u</b><!-- c --></a>',
        "<a><b></a>",
        "<a/><b/>",
        "<a>&foo;</a>",
        "<a",
        "",
        "<a x='1' x='2'/>",
        "<a>\x01</a>",
        "<a>\udcff</a>",  # an undecodable byte of the file, kept as a surrogate
        "\ufeff<a/>",
    ],
)
def test_xml_is_well_formed_where_elementtree_parses_it(text: str) -> None:
    """The check that cleaning left an XML file whole agrees with ElementTree's parser (on
    the bytes that would be published: an undecodable byte becomes U+FFFD)."""
    try:
        ET.fromstring(_encode(text))
        parses = True
    except ET.ParseError:
        parses = False
    assert _well_formed("junit.xml", text) is parses


def test_a_secret_across_markup_is_cleaned_node_by_node(tmp_path: Path) -> None:
    """A known secret that, unescaped, reads like markup ends where a real element starts:
    cleaning the whole text would break the JUnit file, so it is cleaned node by node. The
    published file parses, keeps its elements, and holds no part of the secret."""
    secret = "Zq9-Wx8-Yv7-Ut6<b>"
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "audit.json").write_bytes(Audit(verdict="FAILED").to_bytes())
    (run_dir / "junit.xml").write_text(
        '<?xml version="1.0"?>\n<testsuites><testsuite name="s"><testcase classname="c" '
        'name="t"><failure message="m">Zq9-Wx8-Yv7-Ut6<b>x</b></failure></testcase>'
        "</testsuite></testsuites>\n"
    )
    sanitizer = run_sanitizer(run_dir, {"MY_API_TOKEN": secret})
    assert not _well_formed("junit.xml", sanitizer.clean((run_dir / "junit.xml").read_text()))
    result = publish_run(run_dir, "public", sanitizer)
    assert result, result.reason
    published = (run_dir / "public" / "junit.xml").read_text()
    failure = ET.fromstring(published).find(".//failure")
    assert failure is not None and failure.find("b") is not None
    assert "Zq9-Wx8" not in published and result.rule_counts.get("known-secret", 0) >= 1


def test_json_nested_deeper_than_the_decoder_goes_is_cleaned_as_text(tmp_path: Path) -> None:
    """A family can write anything into its run directory: a line or a file nested a hundred
    thousand levels deep (json gives up near a thousand, with RecursionError) is published
    cleaned as text, like a garbled line, and its secrets are learnt and redacted."""
    token = "ghp_" + "Wq4Er8Ty2Ui6Op0As3Df7Gh1Jk5Lz9Xc4Vb8N"
    deep = "[" * 100_000 + "]" * 100_000
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "audit.json").write_bytes(Audit(verdict="PASSED").to_bytes())
    (run_dir / "events.jsonl").write_text(
        f'{{"event": "a", "nodeid": "t::x[{token}]"}}\n{deep}\n'
        + '{"x": '
        + "[" * 990
        + f'"{token}"'
        + "]" * 990
        + "}\n"
        + '{"event": "b"}\n'
    )
    bottom = "[" * 100_000 + f'"{token}"' + "]" * 100_000
    (run_dir / "deep.json").write_text('{"k": ' + bottom + "}")
    (run_dir / "sanitize-map.json").write_text('{"pseudonyms": ' + deep + "}")  # read as none
    result = publish_run(run_dir, "internal", run_sanitizer(run_dir, {}))
    assert result, result.reason
    assert isinstance(json.loads((run_dir / "sanitize-map.json").read_text())["pseudonyms"], dict)
    events = (run_dir / "public" / "events.jsonl").read_text()
    assert events.splitlines()[1] == deep
    assert events.splitlines()[3] == '{"event": "b"}'
    published = events + (run_dir / "public" / "deep.json").read_text()
    assert token not in published
    assert published.count("[REDACTED:github-token]") == 3


def test_an_events_line_cleaning_keeps_is_published_as_written(tmp_path: Path) -> None:
    """A JSON line with no escape whose strings cleaning keeps is published byte for byte; every
    other line is cleaned value by value. Either way each line decodes to what cleaning its
    value gives, and each rule counts what it did once per use, as when every line was
    cleaned value by value."""
    token = "ghp_" + "Wq4Er8Ty2Ui6Op0As3Df7Gh1Jk5Lz9Xc4Vb8N"
    plain = '{"event":"test_phase","state":"start","when":"call","nodeid":"t.py::a","t":1.5}'
    lines = [
        plain,
        f'{{"event":"test_phase","nodeid":"t.py::b[{token}]","t":2}}',  # a token in a value
        f'{{"event":"test_phase","nodeid":"t.py::b[{token}]","t":3}}',  # again: counted again
        '{"event":"x","api_key":"ab12"}',  # a key that names a secret (too short to learn)
        '{"event":"x","nodeid":"\\u0067hp_' + token[4:] + '"}',  # the token escaped
        '{"event":"x","path":"/home/zed-planted/x"}',  # an identity
        '{"event":"x","path":"/home/zed-planted/x"}',
        plain.replace("1.5", "1e999"),  # a number json reads as infinity, kept as written
        '{"event":"x","cut":"t.py::a',  # a cut last line: cleaned as text
    ]
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "audit.json").write_bytes(Audit(verdict="PASSED").to_bytes())
    (run_dir / "events.jsonl").write_text("\n".join(lines) + "\n")
    identities = Identities(homes=frozenset({"/home/zed-planted"}))
    sanitizer = run_sanitizer(run_dir, {}, identities=identities)
    reference = run_sanitizer(run_dir, {}, identities=identities)
    assert publish_run(run_dir, "internal", sanitizer)
    published = (run_dir / "public" / "events.jsonl").read_text().splitlines()
    assert published[0] == plain
    assert published[7] == lines[7]
    assert token not in "\n".join(published) and "zed-planted" not in "\n".join(published)
    assert "ab12" not in published[3]
    for line, out in zip(lines[:-1], published[:-1], strict=True):
        expected = reference.clean_json(json.loads(line))
        assert json.loads(out) == expected, line
    assert published[-1] == reference.clean(lines[-1])
    record = json.loads((run_dir / "publication.json").read_text())
    assert record["rule_counts"]["github-token"] == 3
    assert record["rule_counts"]["secret-assignment"] == 1
    counts = dict(reference.counts)
    assert {rule: record["rule_counts"].get(rule, 0) for rule in counts} == counts


@pytest.mark.parametrize("spread", [1, 40])
def test_simple_lines_are_published_as_written_unless_a_string_changes(
    tmp_path: Path, spread: int
) -> None:
    """Runs of simple lines (objects of scalars and lists, compact, escapes allowed) are read
    by their strings: a line none of whose strings cleaning changes is published byte for
    byte, escapes and all; a line holding one is cleaned value by value. ``spread``: how many
    distinct strings change (few are searched for in the text, many read line by line)."""
    token = "ghp_" + "Wq4Er8Ty2Ui6Op0As3Df7Gh1Jk5Lz9Xc4Vb8N"
    home = "/home/zed-planted"
    lines = [
        '{"event":"collection","nodeids":["t.py::a","t.py::b[1.5]"],"n":2,"ok":true}',
        '{"event":"test_phase","longrepr":"E   assert 1 == 2\\n\\tat \\u00e9 \\"q\\"","t":1}',
        f'{{"event":"test_phase","longrepr":"{home}/t.py:3: AssertionError","t":2}}',
        f'{{"a":"{token}","a":"kept"}}',  # a duplicate key: the value json drops is read too
        '{"event":"x","note":"\\u0067hp_' + token[4:] + '"}',  # the token escaped
        '{"event":"x","sep":"para\u2028graph"}',  # a character str.splitlines breaks at
        '{"event":"x","quote":":","next":"kept"}',  # quotes of neighbours read as a string
        '{"event":"x", "spaced":"kept"}',  # (a space after a comma)
        '{"event":"nested","value":{"inner":"' + home + '"}}',  # not simple: as before
        '{"event":"crlf","v":"kept"}\r',
        '{"event":"x","spread":"' + home + '/0"}',
    ]
    lines += [f'{{"event":"x","spread":"{home}/{n}"}}' for n in range(1, spread)]
    lines += ['{"event":"x","cut":"t.py::a']  # a cut last line: cleaned as text
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "audit.json").write_bytes(Audit(verdict="PASSED").to_bytes())
    (run_dir / "events.jsonl").write_text("\n".join(lines) + "\n")
    identities = Identities(homes=frozenset({home}))
    sanitizer = run_sanitizer(run_dir, {}, identities=identities)
    reference = run_sanitizer(run_dir, {}, identities=identities)
    assert publish_run(run_dir, "internal", sanitizer)
    published = (run_dir / "public" / "events.jsonl").read_bytes().decode().split("\n")[:-1]
    assert len(published) == len(lines)
    assert token not in "\n".join(published) and "zed-planted" not in "\n".join(published)
    for number in (0, 1, 5, 6, 7, 9):
        assert published[number] == lines[number], number
    assert "\\u00e9" in published[1]
    assert json.loads(published[3]) == {"a": "kept"}
    for line, out in zip(lines[:-1], published[:-1], strict=True):
        assert json.loads(out) == reference.clean_json(json.loads(line)), line
    assert published[-1] == reference.clean(lines[-1])
    record = json.loads((run_dir / "publication.json").read_text())
    counts = dict(reference.counts)
    assert {rule: record["rule_counts"].get(rule, 0) for rule in counts} == counts


def test_the_pseudonym_map_is_written_again_only_when_it_changed(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "audit.json").write_bytes(Audit(verdict="PASSED").to_bytes())
    (run_dir / "stdout.log").write_text("nothing to hide\n")
    sanitizer = run_sanitizer(run_dir, {})
    written = (run_dir / "sanitize-map.json").stat()
    assert publish_run(run_dir, "internal", sanitizer)
    kept = (run_dir / "sanitize-map.json").stat()
    assert (kept.st_ino, kept.st_mtime_ns) == (written.st_ino, written.st_mtime_ns)
    # A pseudonym learnt while publishing is recorded.
    (run_dir / "stdout.log").write_text("owner: /home/zed-planted/x\n")
    identities = Identities(homes=frozenset({"/home/zed-planted"}))
    sanitizer = run_sanitizer(run_dir, {}, identities=identities)
    assert publish_run(run_dir, "internal", sanitizer)
    pseudonyms = json.loads((run_dir / "sanitize-map.json").read_text())["pseudonyms"]
    assert "/home/zed-planted" in pseudonyms
    assert "zed-planted" not in (run_dir / "public" / "stdout.log").read_text()


def test_a_report_page_that_cannot_be_written_is_a_problem_in_the_audit(tmp_path: Path) -> None:
    """report.html taken by a directory: the page fails for real; the failure costs nothing
    else (public/ is made), its traceback is in the debug log, and the audit (the run's and
    the published copy) records it among its problems."""
    import io

    from qualify.commands.publish import publish_channels
    from qualify.rundir import RunDir

    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "audit.json").write_bytes(Audit(verdict="PASSED", problems=["earlier"]).to_bytes())
    (run_dir / "report.html").mkdir()
    publication = publish_channels(
        RunDir(run_dir), level="public", environ={}, stdout=io.StringIO()
    )
    assert publication.exit_code == 0
    for audit in (run_dir / "audit.json", run_dir / "public" / "audit.json"):
        problems = json.loads(audit.read_text())["problems"]
        assert problems[0] == "earlier" and len(problems) == 2, problems
        assert problems[1].startswith("qualify could not write report.html: IsADirectoryError")
    assert "IsADirectoryError" in (run_dir / "debug.log").read_text()


def _runs_by_one_expression(text: str) -> tuple[list[tuple[int, int, bool]], set[str]]:
    """``_simple_runs`` as one expression over the whole text finds them (how it was done)."""
    import re

    from qualify.publish.bundle import _JSON_TOKEN, _JSON_TOKEN_TEXT

    # (plain quantifiers and groups: the possessive and atomic forms it was written with match
    # wrongly on Python 3.11.2, whose fix came in a later 3.11 release; each alternative here
    # excludes the others by its first character, so the matches are the same)
    token = _JSON_TOKEN_TEXT.replace("*+", "*")
    scalar = (
        rf"(?:{token}|-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?"
        r"|true|false|null)"
    )
    value = rf"(?:{scalar}|\[(?:{scalar}(?:, ?{scalar})*)?\])"
    member = rf"{token}: ?{value}"
    lines = re.compile(rf"(?:\{{(?:{member}(?:, ?{member})*)?\}}\n)*")
    pieces: list[tuple[int, int, bool]] = []
    position, length = 0, len(text)
    while position < length:
        run = lines.match(text, position)
        end = run.end() if run else position
        if end > position:
            pieces.append((position, end, True))
        if end < length:
            stop = text.find("\n", end)
            stop = length if stop < 0 else stop + 1
            pieces.append((end, stop, False))
            end = stop
        position = end
    tokens: set[str] = set()
    for start, end, simple in pieces:
        if simple:
            tokens.update(_JSON_TOKEN.findall(text, start, end))
    return pieces, tokens


def test_skeletons_are_matched_alike_with_every_digit_written_one() -> None:
    """Simple lines' skeletons (digits 0 and 1) are ``_skeleton``'s lines exactly when
    ``_skeletons`` finds them so (every digit written 1 where no number starts with a 0 and a
    digit): numbers of every form, leading zeros among them, in members and lists."""
    from qualify.publish.bundle import _skeleton, _skeletons

    numbers = ["0", "01", "-0", "-01", "10", "0.1", "00.1", "1e-01", "1E+1", "0e0", "-0.0e-01"]
    numbers += ["1.", ".1", "1e", "-", "011", "0x1", "1.0.1"]
    rng = random.Random(20261208)

    def scalar() -> str:
        pick = rng.random()
        if pick < 0.5:
            return rng.choice(numbers)
        if pick < 0.7:
            return rng.choice(["\x00", "true", "null"])
        items = [scalar() for _ in range(rng.randint(0, 3))]
        return "[" + rng.choice([",", ", "]).join(items) + "]"

    for _ in range(3000):
        lines = []
        for _ in range(rng.randint(1, 4)):
            members = [f"\x00{rng.choice([':', ': '])}{scalar()}" for _ in range(rng.randint(0, 3))]
            lines.append("{" + rng.choice([",", ", "]).join(members) + "}\n")
        shapes = "".join(lines).translate(str.maketrans("23456789", "11111111"))
        assert _skeletons(shapes) == (_skeleton().fullmatch(shapes) is not None), shapes


def test_simple_runs_are_those_one_expression_finds() -> None:
    """The pieces and strings of a JSON-lines text, read line by line or (every line simple,
    no backslash) from its quotes, are those one expression over the text finds, the strings
    in the same order; texts made of lines of every kind, then with characters changed."""
    from qualify.publish.bundle import _simple_runs

    lines = [
        '{"event":"test_phase","state":"start","when":"setup","nodeid":"t.py::a[1-2]","line":3,'
        '"t":1796562007.246274,"mono":23537.24671,"pid":10240}\n',
        '{"event":"collection","nodeids":["t.py::a","t.py::b"],"n":-0.5e+3,"ok":true,"x":null}\n',
        '{"event":"x", "spaced": "kept", "l": [1, "a"], "e": []}\n',
        '{"a":"x\\ny \\u00e9 \\"q\\" \\/"}\n',
        '{"a":"\\q"}\n',
        '{"o":{"x":1}}\n',
        '{"procs":[[1,"python",2]],"test":null}\n',
        "{}\n",
        '{"n":01}\n',
        '{"a":"b"}\r\n',
        '{"a":"tab\there"}\n',
        '{"a":"para\u2028graph","z":"\x00"}\n',
        '{"a":"b"',
    ]
    alphabet = [*'"{}[],: \n\\\x00\x01\t0123456789-.eEtrufalsn', "\\n", '\\"', "\\u00e9"]
    randomly = random.Random(4)
    for attempt in range(3000):
        text = "".join(randomly.choice(lines) for _ in range(randomly.randint(0, 6)))
        for _ in range(attempt % 3):
            if text:
                at = randomly.randrange(len(text))
                text = text[:at] + randomly.choice(alphabet) + text[at + randomly.randint(0, 1) :]
        pieces, tokens = _simple_runs(text)
        expected_pieces, expected_tokens = _runs_by_one_expression(text)
        assert pieces == expected_pieces, text
        assert list(tokens) == list(expected_tokens), text


def test_decoded_tokens_are_the_simple_tokens(tmp_path: Path) -> None:
    """The strings that the values ``read_all`` decoded show (``_decoded_tokens``) are those the
    text's quotes delimit (``_simple_tokens``), or none where the values cannot show it: a
    string or a value across two lines, a key given twice, whitespace, escapes, NaN, nesting,
    bytes that are not UTF-8; texts made of lines of every kind, then with characters
    changed, each read from a file as a run's events are. The same again once learning has read
    the values (``_jsonl_fields``: the strings and their count taken from its pairs)."""
    from qualify.publish.bundle import _as_text, _decoded_tokens, _jsonl_fields, _simple_tokens
    from qualify.rundir.events import read_all

    lines = [
        '{"event":"test_phase","state":"start","when":"setup","nodeid":"::a[1-2]","line":3,'
        '"t":1796562007.246274,"mono":23537.24671,"pid":10240}\n',
        '{"event":"collection","nodeids":["t.py::a","t.py::b"],"n":-0.5e+3,"ok":true,"x":null}\n',
        '{"event":"x","t":["a",1.5],"l":[],"e":{}}\n',
        '{"a":"x},{y","b":"::c"}\n',
        '{"a":"x}\n',
        '{y"}\n',
        "{},{}\n",
        '{"k":"v"}{"k":"w"}\n',
        '{"a":"b","a":"c"}\n',
        '{"a":1,"a":2}\n',
        '{"a":[1\n',
        "2]}\n",
        '{"a":[{}\n',
        "{}]}\n",
        '{"a": 1}\n',
        '{"a":NaN,"b":-Infinity}\n',
        '{"a":"\\n"}\n',
        '{"o":{"x":1}}\n',
        '{"procs":[[1,"python",2]]}\n',
        '{"a":"\u00e9\u2028"}\n',
        "{}\n",
        "[]\n",
        "1\n",
        "\n",
        '{"n":01}\n',
        '{"a":"b"}\r\n',
        '{"a":"b"',
    ]
    simple = [lines[0], lines[1], '{"event":"x","t":["a",1.5],"l":[]}\n', lines[19], lines[20]]
    alphabet = [*'"{}[],: \n\\\x01\t0123456789-.eEtrufalsnNI', "},{", '"a":1,', '":']
    randomly = random.Random(7)
    decoded = 0
    for attempt in range(3000):
        among = simple * 12 if attempt % 2 else lines
        text = "".join(randomly.choice(among) for _ in range(randomly.randint(1, 6)))
        for _ in range(attempt % 3):
            at = randomly.randrange(len(text))
            text = text[:at] + randomly.choice(alphabet) + text[at + randomly.randint(0, 1) :]
        data = text.encode("utf-8", errors="surrogatepass")
        if attempt % 50 == 0:
            data += b'{"a":"\xff"}\n' if attempt % 100 else b'{"a":"\xed\xa0\x80"}\n'
        path = tmp_path / f"{attempt}.jsonl"  # (a new file each time: read_all keeps four)
        path.write_bytes(data)
        content = read_all(path)
        found = _decoded_tokens(_as_text(data) or "", content) if b"\0" not in data else None
        if found is not None:
            decoded += 1
            assert found == _simple_tokens(_as_text(data) or ""), text
        _jsonl_fields(content)
        if b"\0" not in data:
            assert _decoded_tokens(_as_text(data) or "", content) == found, text
    assert decoded > 500


def _phase_pool() -> list[str]:
    """Lines of an events file: the plugin's phase lines (its own encoders: hostile test ids,
    a file and none, a line number and none) and every other kind (a failure, the collection, a
    GPU event, a key given twice, a phase line that differs from the plugin's by one field, a
    line across two writes, blank and whitespace lines, CRLF, NaN, nesting)."""
    from harness import contract

    stamp = (1796562007.246274, 23537.24671, 10240)
    ids = [
        "t.py::test_a",
        "::TestX::test_b[1-2]",
        "t.py::test_ghp_" + "a1B2c3D4e5" * 3 + "zYxWvU",  # (a token's shape)
        "t.py::test_at[10.1.2.3]",
        "t.py::test_home[/home/zelda-planted/x]",
        'a"quote',
        "back\\slash",
        "ctl\x01",
        "\u00e9\u2028\U0001f600",
        "x},{y",
        '","when":"call',
        "",
    ]
    lines = []
    for index, nodeid in enumerate(ids):
        when = ("setup", "call", "teardown")[index % 3]
        where = ("/home/zelda-planted/src/test_a.py", index) if index % 2 else ("", None)
        lines.append(contract.encode_test_start("setup", nodeid, stamp, where).decode())
        lines.append(contract.encode_test_start(when, nodeid, stamp).decode())
        lines.append(contract.encode_test_end(when, nodeid, "passed", 0.001234567, stamp).decode())
    failed = {"event": "test_phase", "state": "end", "when": "call", "nodeid": "t.py::test_a"}
    lines += [
        contract.encode_line({**failed, "outcome": "failed", "longrepr": "E  ghp_x\n", "t": 1.5}),
        contract.encode_line({**failed, "outcome": "rerun", "duration": 0.5}),
        contract.encode_line({"event": "collection", "nodeids": ["t.py::test_a", "::b"]}),
        contract.encode_line({"event": "session_finish", "exitstatus": 0, "junitxml": None}),
        contract.encode_line({"event": "sandbox_limits", "memory_bytes": 2048, "swap_bytes": 0}),
        contract.encode_line({"event": "cuda_oom", "message": "CUDA out of memory"}),
    ]
    lines = [line if isinstance(line, str) else line.decode() for line in lines]
    start = lines[0]
    lines += [
        start.replace('"event":"test_phase"', '"event":"test_phase","event":"x"'),
        start.replace('"line":', '"line":0'),
        start.replace('"pid":10240', '"pid":-1'),
        start.replace('"pid":10240', '"pid":' + "1" * 5000),
        lines[3].replace('"line":1,', '"line":1' + "2" * 4400 + ","),
        start.replace(',"t":', ', "t":'),
        start.replace('"start"', '"begin"'),
        start[:40] + "\n" + start[40:],
        "\n",
        " \n",
        start[:-1] + "\r\n",
        '{"event":"x","a":NaN,"o":{"k":[1,{"n":null}]}}\n',
        "[]\n",
        "1\n",
    ]
    return lines


def test_phase_lines_are_read_as_their_records(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An events file read as ``PhaseLines`` (``read_events``: the plugin's phase lines taken
    from their fields, not decoded) replays into the same progress, gives the judge the same
    other events, learning the same fields and publication the same strings as the values
    ``read_all`` decodes; any other file is read as ``read_all`` reads it. Texts made of lines
    of every kind, then with characters changed, with bytes that are not UTF-8 and a cut last
    line, each read from a file as a run's events are."""
    from qualify.judge.gpu import gpu_evidence
    from qualify.judge.judgement import inside_limits
    from qualify.judge.progress import ProgressReplay, progress_from_events
    from qualify.publish.bundle import (
        _as_text,
        _decoded_tokens,
        _jsonl_fields,
        _phase_fields,
        _phase_tokens,
        _simple_tokens,
    )
    from qualify.rundir import events
    from qualify.rundir.events import PhaseLines, read_all, read_events

    monkeypatch.setattr(events, "PHASES_FROM", 0)  # (short texts)
    pool = _phase_pool()
    plugin = [line for line in pool[:36] if "\\" not in line]  # (its lines without escapes)
    alphabet = [*'"{}[],: \n\\\x01\t0123456789-.eE', "},{", '"a":1,', '":', "null", "\u00e9"]
    randomly = random.Random(11)
    read_so = tokens = 0
    for attempt in range(2000):
        among = plugin * 4 + pool[36:] if attempt % 2 else pool
        text = "".join(randomly.choice(among) for _ in range(randomly.randint(1, 12)))
        for _ in range(attempt % 3):
            at = randomly.randrange(len(text))
            text = text[:at] + randomly.choice(alphabet) + text[at + randomly.randint(0, 1) :]
        data = text.encode("utf-8", errors="surrogatepass")
        if attempt % 40 == 0:
            data += b'{"a":"\xff"}\n' if attempt % 80 else b'{"event":"test_phase"\n'
        if attempt % 40 == 20:
            data = data[: randomly.randrange(len(data) + 1)]  # (killed mid-write)
        path = tmp_path / f"{attempt}.jsonl"  # (a new file each time: both keep four)
        path.write_bytes(data)
        phases = read_events(path)
        content = read_all(path)
        if not isinstance(phases, PhaseLines):
            assert repr(phases) == repr(content), text
            continue
        read_so += 1
        replay = ProgressReplay()
        replay.feed_phases(phases)
        events = list(content.records())
        assert replay.result() == progress_from_events(events), text
        others = [value for value in phases.others if isinstance(value, dict)]
        assert gpu_evidence(others) == gpu_evidence(events), text
        assert inside_limits(others) == inside_limits(events), text
        assert _phase_fields(phases) == _jsonl_fields(content), text
        whole = _as_text(data) or ""
        found = _phase_tokens(whole, phases)
        assert found == _decoded_tokens(whole, content), text
        if found is not None:
            tokens += 1
            assert found == _simple_tokens(whole), text
    assert read_so > 500 and tokens > 100, (read_so, tokens)


def test_a_run_directory_is_published_the_same_either_way(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run directory whose events are the plugin's lines (a token, an internal address and
    a home in test ids, a failure, a line given a key twice, a cut last line or not) is learnt
    from and published byte for byte the same, its map and publication record too, read as
    ``PhaseLines`` or as ``read_all`` reads it."""
    from qualify.publish import bundle
    from qualify.rundir import events

    token = "ghp_" + "a1B2c3D4e5" * 3 + "zYxWvU"
    pool = _phase_pool()
    assert len("".join(pool[:36]) * 4) < events.PHASES_FROM < len("".join(pool[:36]) * 16)
    for cut in (False, True):
        run_dir = tmp_path / f"run-{cut}"
        run_dir.mkdir()
        lines = [*pool[:36] * 15, *pool[36:42], pool[42], *pool[:36]]
        data = "".join(lines).encode()
        (run_dir / "events.jsonl").write_bytes(data[:-7] if cut else data)
        (run_dir / "timeline.jsonl").write_text('{"t":1.5,"rss":10}\n{"t":2.0,"rss":12}\n')
        published = []
        for fast in (True, False):
            for kept in (events._last_read, events._last_phases, bundle._fed, bundle._fed_phases):
                kept.clear()
            if not fast:
                monkeypatch.setattr(events, "_phases", lambda data: None)
            assert isinstance(events.read_events(run_dir / "events.jsonl"), events.PhaseLines) == (
                fast and not cut
            )
            env = {"GH_TOKEN": token}
            result = publish_run(run_dir, "internal", run_sanitizer(run_dir, env))
            assert result, result.reason
            files = sorted(p for p in run_dir.rglob("*") if p.is_file())
            published.append({str(p.relative_to(run_dir)): p.read_bytes() for p in files})
            monkeypatch.undo()
        assert published[0] == published[1]
        public = published[0]["public/events.jsonl"]
        assert token.encode() not in public and b"10.1.2.3" not in public


def test_a_file_rewritten_in_place_is_not_taken_from_what_was_read(tmp_path: Path) -> None:
    """What ``read_all`` decoded stands for a file only while the file is as it was read: one
    rewritten in place to the same size, its modification time set back, is read again (its
    change time moved), so the publication never cleans strings it did not see."""
    from qualify.rundir.events import file_identity, read_all, remembered

    path = tmp_path / "events.jsonl"
    path.write_text('{"event":"a","text":"hello"}\n')
    before = os.stat(path)
    read_all(path)
    assert remembered(file_identity(os.stat(path))) is not None
    time.sleep(0.05)  # (past the kernel's clock tick for file times)
    with open(path, "r+") as handle:  # the same size, another string
        handle.write('{"event":"a","text":"token"}\n')
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = os.stat(path)
    assert (after.st_size, after.st_mtime_ns) == (before.st_size, before.st_mtime_ns)
    assert remembered(file_identity(after)) is None
