"""A red team of the accidental forms: secrets a family was given, printed the way real output
prints them (split over lines and writes, coloured, drawn in a table, wrapped in a connection
string, escaped), through every channel pytest and qualify have, must not be recoverable from
anything qualify publishes: ``public/``, its file names, qualify's own output, the step summary,
the annotations and the action's outputs.

The corpus has two halves decided together, before either was run: the **build** half (forms
and connection strings the sanitizer was fixed against) and the **held-out** half (other
spellings of the same accidental kinds, never looked at while fixing). Both are tests; the
held-out half's result is what says whether the mechanisms generalize.

The recovery scanner here is written apart from the sanitizer, from the red team's side: every
text is undone of every layer it may carry (HTML and XML entities, JSON strings, URL escapes,
ANSI colour in both spellings, pytest's ``#x1B``, line breaks with what follows them, box
drawing, quotes) and searched for each secret whole or as any 12 characters of it.
"""

from __future__ import annotations

import base64
import dataclasses
import html
import json
import os
import random
import re
import string
import subprocess
import urllib.parse
from pathlib import Path

import pytest

from tests.conftest import family_repo, qualify_argv

FRAGMENT = 12
"""A run of this many characters of a secret counts as recovered (the sanitizer's own bar)."""


@dataclasses.dataclass(frozen=True)
class Planting:
    id: str
    channel: str
    text: str
    secret: str
    """What must not be recovered (a known value, or the secret part of a connection string)."""


def _value(rng: random.Random, length: int = 26) -> str:
    alphabet = string.ascii_letters + string.digits
    while True:
        value = "".join(rng.choice(alphabet) for _ in range(length))
        if sum(any(t(c) for c in value) for t in (str.isupper, str.islower, str.isdigit)) == 3:
            return value


def _b64(rng: random.Random, raw_bytes: int) -> str:
    return base64.b64encode(bytes(rng.randrange(256) for _ in range(raw_bytes))).decode()


# --- the forms: how a known value V reaches a line of output (text around it included)


def _raw(v: str) -> str:
    return f"the value is {v} here"


def _ansi(v: str) -> str:  # a colour change inside the token (a highlighter's split)
    return f"value \x1b[31m{v[:9]}\x1b[0m{v[9:]} end"


def _split_lines(v: str) -> str:  # two writes, a line each
    return f"first half {v[:13]}\n{v[13:]} second half"


def _box(v: str) -> str:  # a table cell too narrow for it (rich, tabulate)
    return f"│ token   │ {v[:10]:<10} │\n│         │ {v[10:20]:<10} │\n│         │ {v[20:]:<10} │"


def _indent_wrap(v: str) -> str:  # hard wrap at a fixed width, continuation indented
    return "config: " + "\n        ".join(v[i : i + 8] for i in range(0, len(v), 8))


def _ansi_bold_pieces(v: str) -> str:  # every few characters a different style
    return "".join(f"\x1b[{1 + i % 3};3{i % 7}m{v[i : i + 5]}" for i in range(0, len(v), 5))


def _dict_repr(v: str) -> str:  # a repr in a log line
    return repr({"endpoint": "https://api.example.org", "auth": ("svc", v)})


def _json_line(v: str) -> str:  # a JSON log record holding it in a message
    return json.dumps({"level": "debug", "msg": f"using credential {v}"})


def _split_writes_no_break(v: str) -> str:  # a progress line redrawn with a carriage return
    return f"loading {v[:11]}\r{v[11:]} done"


# A 22-character value split 11/11 by a character that shows nothing: each half is under the
# 12-character bar, only the two together say what it is.
def _cr_11(v: str) -> str:  # a progress line redrawn
    return f"loading {v[:11]}\r{v[11:]} done"


def _tab_11(v: str) -> str:  # two columns of a tab-separated row
    return f"row {v[:11]}\t{v[11:]} end"


def _backspace_11(v: str) -> str:  # a spinner's backspace between two writes
    return f"wait {v[:11]}\b{v[11:]} ok"


def _cr_padded_11(v: str) -> str:  # a redraw that clears with spaces first
    return f"step {v[:11]}  \r {v[11:]} next"


def _tabs_11(v: str) -> str:  # columns padded with several tabs
    return f"key\t{v[:11]}\t\t{v[11:]}\tend"


def _erase_11(v: str) -> str:  # a spinner's erase idiom: backspace, space, backspace
    return f"spin {v[:11]}\b \b{v[11:]} done"


BUILD_FORMS = {
    "raw": _raw,
    "ansi": _ansi,
    "split": _split_lines,
    "box": _box,
    "cr11": _cr_11,
    "tab11": _tab_11,
    "bs11": _backspace_11,
}
HELD_OUT_FORMS = {
    "wrap": _indent_wrap,
    "styles": _ansi_bold_pieces,
    "repr": _dict_repr,
    "jsonlog": _json_line,
    "cr": _split_writes_no_break,
    "cr11pad": _cr_padded_11,
    "tabs11": _tabs_11,
    "erase11": _erase_11,
}
SPLIT_11 = frozenset({"cr11", "tab11", "bs11", "cr11pad", "tabs11", "erase11"})
"""Forms whose value is 22 characters (two halves of 11)."""
CHANNELS = ("out", "err", "msg", "exc", "log", "warn", "cmp", "session")


# --- connection strings: the rules must know them by their shape (their values are not known)


def _azure_storage(rng: random.Random) -> tuple[str, str]:
    key = _b64(rng, 64)
    text = (
        "DefaultEndpointsProtocol=https;AccountName=qualifyci;"
        f"AccountKey={key};EndpointSuffix=core.windows.net"
    )
    return text, key


def _service_bus(rng: random.Random) -> tuple[str, str]:
    key = _b64(rng, 32)
    text = (
        "Endpoint=sb://qualify-ns.servicebus.windows.net/;"
        f"SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey={key}"
    )
    return text, key


def _ado_net(rng: random.Random) -> tuple[str, str]:
    password = _value(rng, 18)
    text = (
        "Server=tcp:qualify.database.windows.net,1433;Initial Catalog=ci;User ID=ci;"
        f"Password={password};Encrypt=True;"
    )
    return text, password


def _postgres(rng: random.Random) -> tuple[str, str]:
    password = _value(rng, 20)
    return f"postgresql://ci:{password}@db.example.org:5432/ci", password


def _sas_url(rng: random.Random) -> tuple[str, str]:
    sig = urllib.parse.quote(_b64(rng, 32), safe="")
    text = (
        "https://qualifyci.blob.core.windows.net/logs/run.txt?sv=2022-11-02&ss=b&srt=o"
        f"&sp=r&se=2027-01-01T00:00:00Z&spr=https&sig={sig}"
    )
    return text, sig


def _cosmos(rng: random.Random) -> tuple[str, str]:
    key = _b64(rng, 64)
    return f"AccountEndpoint=https://qualify.documents.azure.com:443/;AccountKey={key};", key


def _iot_hub(rng: random.Random) -> tuple[str, str]:
    key = _b64(rng, 32)
    text = (
        f"HostName=qualify.azure-devices.net;SharedAccessKeyName=iothubowner;SharedAccessKey={key}"
    )
    return text, key


def _mongodb_srv(rng: random.Random) -> tuple[str, str]:
    password = _value(rng, 16)
    return f"mongodb+srv://ci:{password}@cluster0.ab1cd.mongodb.net/?retryWrites=true", password


def _jdbc(rng: random.Random) -> tuple[str, str]:
    password = _value(rng, 16)
    return f"jdbc:mysql://db.example.org:3306/ci?user=ci&password={password}", password


def _redis(rng: random.Random) -> tuple[str, str]:
    password = _value(rng, 24)
    return f"rediss://default:{password}@cache.example.org:6380/0", password


BUILD_CONNECTIONS = {
    "azure-storage": _azure_storage,
    "service-bus": _service_bus,
    "ado-net": _ado_net,
    "postgres": _postgres,
}
HELD_OUT_CONNECTIONS = {
    "sas-url": _sas_url,
    "cosmos": _cosmos,
    "iot-hub": _iot_hub,
    "mongodb-srv": _mongodb_srv,
    "jdbc": _jdbc,
    "redis": _redis,
}
CONNECTION_CHANNELS = ("out", "msg", "session")
CONNECTION_ENCODINGS = {
    "plain": lambda text: text,
    "json": lambda text: json.dumps({"conn": text}),
    "url": lambda text: urllib.parse.quote(text, safe=""),
}


def corpus(half: str) -> tuple[list[Planting], list[str]]:
    """(plantings, the known values given with --secrets-file)."""
    rng = random.Random(f"accidental-forms-{half}")
    forms = BUILD_FORMS if half == "build" else HELD_OUT_FORMS
    connections = BUILD_CONNECTIONS if half == "build" else HELD_OUT_CONNECTIONS
    plantings, known = [], []
    for form_name, form in forms.items():
        for channel in CHANNELS:
            value = _value(rng, 22 if form_name in SPLIT_11 else 26)
            known.append(value)
            plantings.append(Planting(f"{form_name}-{channel}", channel, form(value), value))
    for kind, make in connections.items():
        for channel in CONNECTION_CHANNELS:
            for encoding, encode in CONNECTION_ENCODINGS.items():
                text, secret = make(rng)
                plantings.append(
                    Planting(f"{kind}-{encoding}-{channel}", channel, encode(text), secret)
                )
    # A name: a test id, a test file and a directory (letters, digits and "_").
    for channel in ("id", "file", "dir"):
        value = _value(rng)
        known.append(value)
        plantings.append(Planting(f"name-{channel}", channel, value, value))
    # A family option given on qualify's command line (the audit records the options).
    value = _value(rng)
    known.append(value)
    text = value if half == "build" else f"https://ci:{value}@mirror.example.org/simple"
    plantings.append(Planting("option-set", "set", text, value))
    return plantings, known


CONFTEST = """\
import json, pathlib, sys
PLANT = json.loads((pathlib.Path(__file__).parent / "plant.json").read_text())

def pytest_unconfigure(config):
    for p in PLANT:
        if p["channel"] == "session":
            sys.stdout.write(p["text"] + "\\n")
    sys.stdout.flush()
"""
TESTS = """\
import json, logging, pathlib, sys, warnings
import pytest
PLANT = json.loads((pathlib.Path(__file__).parent / "plant.json").read_text())

def by(channel):
    return [pytest.param(p["text"], id=p["id"]) for p in PLANT if p["channel"] == channel]

@pytest.mark.parametrize("text", by("out"))
def test_out(text):
    print(text)
    assert False

@pytest.mark.parametrize("text", by("err"))
def test_err(text):
    sys.stderr.write(text + "\\n")
    assert False

@pytest.mark.parametrize("text", by("msg"))
def test_msg(text):
    raise AssertionError(text)

@pytest.mark.parametrize("text", by("exc"))
def test_exc(text):
    try:
        raise KeyError("inner")
    except KeyError as exc:
        raise RuntimeError(text) from exc

@pytest.mark.parametrize("text", by("log"))
def test_log(text):
    logging.getLogger("family").error(text)
    assert False

@pytest.mark.parametrize("text", by("warn"))
def test_warn(text):
    warnings.warn(text)

@pytest.mark.parametrize("text", by("cmp"))
def test_cmp(text):
    assert text == "what was expected"

@pytest.mark.parametrize("n", [pytest.param(0, id=p["text"]) for p in PLANT if p["channel"] == "id"
])
def test_named(n):
    assert n == 1
"""
FILE_TEST = "def test_in_a_named_file():\n    assert 0\n"


def _family(root: Path, plantings: list[Planting]) -> Path:
    toml = (
        '[e2e]\ncommand = ["python", "-m", "pytest", "-q", "-p", "no:cacheprovider"]\n'
        '[options]\nnote = "none"\n'
    )
    files = {
        "conftest.py": CONFTEST,
        "test_plant.py": TESTS,
        "plant.json": json.dumps([dataclasses.asdict(p) for p in plantings]),
    }
    files |= {f"test_{p.text}.py": FILE_TEST for p in plantings if p.channel == "file"}
    for planting in plantings:
        if planting.channel == "dir":
            files[f"sub_{planting.text}/test_in_a_named_dir.py"] = FILE_TEST
    return family_repo(root / "repo", "redteam", toml, files)


# --- the red team's scanner


_ANSI = re.compile(r"(?:\x1b|#x1B|\\x1b|\\u001b|\\033)\[[0-9;?]*[ -/]*[@-~]", re.IGNORECASE)
# What may stand between the pieces of a value: white space and control characters, written
# or escaped (JSON, XML references, pytest's ``#x08`` for a character XML cannot hold), box
# drawing, quotes and wrap markers. The escapes come first: ``\\r`` is one piece of glue.
_GLUE = re.compile(
    r"(?:\\[nrtbfv]|\\u00[01][0-9a-fA-F]|\\x[01][0-9a-fA-F]|&#x?[0-9a-fA-F]{1,2};"
    r"|#x[01][0-9a-fA-F]|[\s\x00-\x1f\x7f│┃|'\"E+\-\\])+"
)


def _texts(data: str) -> list[str]:
    """``data`` undone of every layer a channel may add."""
    found = [data, html.unescape(data)]
    documents: list[object] = []
    try:
        documents.append(json.loads(data))
    except ValueError:  # JSON lines: each line a document
        for line in data.splitlines():
            try:
                documents.append(json.loads(line))
            except ValueError:
                continue
    if documents:
        strings: list[str] = []

        def walk(node: object) -> None:
            if isinstance(node, str):
                strings.append(node)
            elif isinstance(node, list):
                for item in node:
                    walk(item)
            elif isinstance(node, dict):
                for key, item in node.items():
                    strings.append(str(key))
                    walk(item)

        for document in documents:
            walk(document)
        found.append("\n".join(strings))
    more = []
    for text in found:
        for layer in (
            text,
            urllib.parse.unquote(text),
            urllib.parse.unquote(urllib.parse.unquote(text)),
        ):
            plain = _ANSI.sub("", html.unescape(layer))
            more += [plain, _GLUE.sub("", plain)]
    return found + more


def _recovered(text: str, secret: str) -> bool:
    glued = _GLUE.sub("", secret)
    for needle in {secret, glued}:
        if len(needle) <= FRAGMENT:
            if needle in text:
                return True
            continue
        if any(needle[i : i + FRAGMENT] in text for i in range(len(needle) - FRAGMENT + 1)):
            return True
    return False


def _published(
    tmp_path: Path, run_dir: Path, process: subprocess.CompletedProcess[str]
) -> dict[str, list[str]]:
    where: dict[str, list[str]] = {
        "qualify stdout": _texts(process.stdout),
        "qualify stderr": _texts(process.stderr),
    }
    for name in ("summary.md", "output.txt"):
        path = tmp_path / name
        if path.exists():
            where[name] = _texts(path.read_text(errors="replace"))
    public = run_dir / "public"
    assert public.is_dir(), process.stdout + process.stderr
    for path in sorted(public.rglob("*")):
        relative = str(path.relative_to(run_dir))
        where[f"name {relative}"] = _texts(relative)
        if path.is_file():
            where[relative] = _texts(path.read_bytes().decode(errors="replace"))
    return where


@pytest.mark.slow
@pytest.mark.parametrize("level", ["public", "internal"])
@pytest.mark.parametrize("half", ["build", "held-out"])
def test_no_accidental_form_is_recovered_from_what_is_published(
    tmp_path: Path, half: str, level: str
) -> None:
    plantings, known = corpus(half)
    repo = _family(tmp_path, plantings)
    secrets_file = tmp_path / "masked.txt"
    secrets_file.write_text("".join(f"{value}\n" for value in known))
    env = {
        **os.environ,
        "GITHUB_ACTIONS": "true",
        "GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md"),
        "GITHUB_OUTPUT": str(tmp_path / "output.txt"),
    }
    process = subprocess.run(
        qualify_argv(
            *("run", "--family", "redteam", "--repo", str(repo), "--mem", "512M"),
            *("--secrets-file", str(secrets_file), "--publish", level),
            *(f"--set=note={p.text}" for p in plantings if p.channel == "set"),
        ),
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    run_dir = tmp_path / process.stdout.strip().splitlines()[-1]
    assert run_dir.is_dir(), process.stdout + process.stderr
    # Every planting reached the run's own (internal, unsanitized) files: the scanner finds it.
    internal = [
        _texts(path.read_bytes().decode(errors="replace"))
        for path in run_dir.iterdir()
        if path.is_file() and path.name != "secret-sources.json"
    ]
    missing = [
        planting.id
        for planting in plantings
        if not any(_recovered(text, planting.secret) for texts in internal for text in texts)
    ]
    assert not missing, f"never printed: {missing}"
    where = _published(tmp_path, run_dir, process)
    recovered = sorted(
        f"{planting.id} in {place}"
        for planting in plantings
        for place, texts in where.items()
        if any(_recovered(text, planting.secret) for text in texts)
    )
    assert not recovered, f"{len(recovered)} recovered:\n" + "\n".join(recovered)


# --- the stderr tail: qualify's own quote of the end of the E2E's stderr (a JUnit case's text)

QUOTED = 4000
"""How much of the end of stderr qualify quotes in a testcase."""
STDERR_TAIL = """\
import sys
value = sys.argv[1]
lines = "".join(f"line {n:04d} of what the suite said last\\n" for n in range(200))
rest = "\\n" + lines[: {rest} - 1]
sys.stderr.write("the suite began\\n" + "the value was " + value + rest)
sys.stderr.flush()
sys.exit(1)
"""
CONFTEST_EXIT = """\
import os, subprocess, sys

def pytest_unconfigure(config):
    subprocess.run([sys.executable, "quote.py", {value!r}])
    os._exit(3)
"""


def _stderr_tail_family(root: Path, kind: str, value: str) -> Path:
    # The quote of the last 4000 characters would start 10 characters before the value's end.
    script = STDERR_TAIL.replace("{rest}", str(QUOTED - 10))
    files = {"quote.py": script}
    if kind == "command":  # not pytest: one testcase for the command, quoting stderr
        toml = f'[e2e]\ncommand = ["python", "quote.py", "{value}"]\n'
    else:  # pytest passed, then its process failed: qualify's own case quotes stderr
        toml = '[e2e]\ncommand = ["python", "-m", "pytest", "-q", "-p", "no:cacheprovider"]\n'
        files |= {
            "conftest.py": CONFTEST_EXIT.format(value=value),
            "test_ok.py": "def test_ok():\n    pass\n",
        }
    return family_repo(root / "repo", "tail", toml, files)


@pytest.mark.slow
@pytest.mark.parametrize("level", ["public", "internal"])
@pytest.mark.parametrize("kind", ["command", "pytest-then-exit"])
def test_the_stderr_tail_quote_never_cuts_a_known_value(
    tmp_path: Path, kind: str, level: str
) -> None:
    """The "stderr tail" channel: a known value written where qualify's quote of the end of
    stderr begins would be cut, its last 10 characters quoted (under the 12-character bar,
    so never redacted); the quote must start at a line or word boundary instead."""
    value = _value(random.Random(f"stderr-tail-{kind}"))
    repo = _stderr_tail_family(tmp_path, kind, value)
    secrets_file = tmp_path / "masked.txt"
    secrets_file.write_text(value + "\n")
    process = subprocess.run(
        qualify_argv(
            *("run", "--family", "tail", "--repo", str(repo), "--mem", "512M"),
            *("--secrets-file", str(secrets_file), "--publish", level),
        ),
        cwd=tmp_path,
        env={**os.environ, "GITHUB_ACTIONS": "true"},
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    run_dir = tmp_path / process.stdout.strip().splitlines()[-1]
    assert run_dir.is_dir(), process.stdout + process.stderr
    stderr = (run_dir / "stderr.log").read_text()
    assert value in stderr[-QUOTED - 16 :]  # the value stood where the quote begins
    where = _published(tmp_path, run_dir, process)
    junit = where["public/junit.xml"]
    assert any("line 0000 of what the suite said" in text for text in junit)  # stderr quoted
    piece = value[-10:]
    recovered = sorted(
        place
        for place, texts in where.items()
        if any(_recovered(text, value) or piece in text for text in texts)
    )
    assert not recovered, f"the value's last 10 characters in: {recovered}"
