"""The sanitizer's rules: planted secrets of every shape, wrapped, encoded; near-misses kept."""

from __future__ import annotations

import base64
import dataclasses
import json
import random
import re
import urllib.parse

import pytest

from qualify.publish import sanitize, views
from qualify.publish.sanitize import TOKEN_RULES, Identities, Sanitizer
from qualify.publish.secrets import forms as encoded_forms
from qualify.publish.secrets import from_environment


def secret_values(environ: dict[str, str]) -> dict[str, str]:
    found = from_environment(environ)
    return {secret.origin.removeprefix("env "): secret.value for secret in found}


GH = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
SHAPES = {
    "github-token": GH,
    "github-pat": "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEFGHIJ",
    "huggingface-token": "hf_" + "aBcDeFgHiJkLmNoPqRsTuVwXyZ01234567",
    "aws-access-key-id": "AKIAIOSFODNN7EXAMPLE",
    "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0."
    "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    "bearer-token": "Zm9vYmFyYmF6cXV4cXV1eHh4eXl5enp6",
}
PEM = (
    "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA0Z3VS5JJcds3xfn/ygWyF8PbnGy0AHB7MaK1\n"
    "Qx9Rr5oPq3k2bXNlY3JldA==\n-----END RSA PRIVATE KEY-----"
)
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"


EVERY_RULE = {
    **{rule: f"log line {value} end" for rule, value in SHAPES.items()},
    "bearer-token": f"curl -H 'Bearer {SHAPES['bearer-token']}' x",
    "gitlab-token": "push with glpat-" + "Xy7zQ2mN4pL8kR3vT6wB",
    "slack-token": "bot xoxb-" + "2417365912-5127734561803-Q7sYhT2pLk9WmZx4RcVb8NdE",
    "slack-webhook": "post to https://hooks.slack.com/services/" + "T0123ABCD/B0456EFGH/zq9XkLm2",
    "openai-key": "OPENAI_KEY is sk-proj-" + "Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z",
    "stripe-key": "charge with sk_live_"
    + "4eC39HqLyjWDarjtT1zdp7dc and rk_test_"
    + "51H8bNcKq2Ld9XzVw3Yt",
    "google-api-key": "maps AIza" + "SyD3x8Qm2Lk9WvN4pRt7ZcB1yH6jF0sGe5u",
    "npm-token": "//registry npm_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8",
    "pypi-token": "upload pypi-AgE" + "IcHlwaS5vcmcCJGQ4ZmU5NzE1LTc0",
    "docker-pat": "login dckr_pat_" + "Zq9XkLm2Np4Rs6Tv8Wx0",
    "private-key": f"key:\n{PEM}",
    "auth-header": "X-Api-Key: zq9Xk7Lm2Np4",
    "url-credentials": "clone https://ci-bot:Xk9pAssw0rd77@git.example.com/r.git",
    "secret-assignment": "db_password=zq9Value77x",
}
"""An example of every rule: each is found behind the trigger that gates all rules."""


def test_every_rule_has_an_example_found_behind_the_trigger() -> None:
    assert set(EVERY_RULE) == set(TOKEN_RULES)
    for rule, text in EVERY_RULE.items():
        cleaned = plain().clean(text)
        assert f"[REDACTED:{rule}]" in cleaned, (rule, cleaned)


@pytest.mark.parametrize(
    "text",
    [
        "tests/test_ma.py::test_mask_shapes[masked_array-network_mark_]",  # sk_ and rk_ inside
        "docs: task-list and desk-top",
    ],
)
def test_words_holding_a_token_prefix_trigger_no_rule(text: str) -> None:
    assert sanitize._TRIGGER.search(text.lower()) is None


def plain() -> Sanitizer:
    return Sanitizer({}, Identities())


@pytest.mark.parametrize(("rule", "value"), SHAPES.items())
def test_token_shapes_are_redacted(rule: str, value: str) -> None:
    text = f"log line {value} end" if rule != "bearer-token" else f"curl -H 'Bearer {value}' x"
    sanitizer = plain()
    cleaned = sanitizer.clean(text)
    assert value not in cleaned and f"[REDACTED:{rule}]" in cleaned
    assert sanitizer.counts[rule] == 1


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        (f"key id {SHAPES['aws-access-key-id']} secret {AWS_SECRET}", AWS_SECRET),
        (f"prefix\n{PEM}\nsuffix", "MIIEowIBAAKCAQEA0Z3VS5JJcds3xfn"),
        (PEM[:80], "MIIEowIBAAKCAQEA0Z3VS5JJcds3xfn"),  # truncated log: no END line
        ("Authorization: Basic dXNlcjpwYXNzd29yZA==", "dXNlcjpwYXNzd29yZA"),
        ('{"authorization": "token abcdef123456"}', "abcdef123456"),
        ("fetch https://alice:s3cretPw@internal.example.com/x", "s3cretPw"),
        ("git clone https://oauth2:glpat-XYZ12345@gitlab.example/x.git", "glpat-XYZ12345"),
        ("MY_API_KEY=zq9-unlisted-value-77", "zq9-unlisted-value-77"),
    ],
)
def test_contextual_secrets(text: str, secret: str) -> None:
    sanitizer = plain()
    cleaned = sanitizer.clean(text)
    assert secret not in cleaned, cleaned


def wrap(value: str, width: int, line_break: str) -> str:
    # No key word before the value: only the token's own shape can catch it.
    prefix = "value ".rjust(max(6, width - 10), "=")  # the token straddles a wrap
    text = prefix + value + " done"
    return line_break.join(text[i : i + width] for i in range(0, len(text), width))


@pytest.mark.parametrize("width", [7, 20, 76, 80])
@pytest.mark.parametrize("line_break", ["\n", "\r\n", "\\n", "&#10;", "\nE       ", "\n    "])
@pytest.mark.parametrize("rule", ["github-token", "jwt", "github-pat"])
def test_wrapped_tokens_are_caught(rule: str, width: int, line_break: str) -> None:
    value = SHAPES[rule]
    text = wrap(value, width, line_break)
    assert value not in text
    cleaned = plain().clean(text)
    assert f"[REDACTED:{rule}]" in cleaned
    flat = cleaned.replace(line_break, "")
    for piece in (value[4:16], value[-12:]):
        assert piece not in flat, cleaned
    # The shape's own rule is what catches it.
    assert value[4:16] in Sanitizer({}, Identities(), disabled_rules=[rule]).clean(text).replace(
        line_break, ""
    )


def test_token_at_line_start_after_a_word() -> None:
    cleaned = plain().clean(f"word\n{GH}\nnext")
    assert GH not in cleaned and cleaned.endswith("next")


PASSWORD = "correct horse/battery+staple?"


def b64_embedded(value: str, offset: int, urlsafe: bool) -> str:
    raw = b"x" * offset + value.encode() + b"yz"
    encode = base64.urlsafe_b64encode if urlsafe else base64.b64encode
    return encode(raw).decode()


@pytest.mark.parametrize("offset", [0, 1, 2])
@pytest.mark.parametrize("urlsafe", [False, True])
def test_env_secret_base64_every_alignment(offset: int, urlsafe: bool) -> None:
    sanitizer = Sanitizer({"DB_PASSWORD": PASSWORD}, Identities())
    text = "blob " + b64_embedded(PASSWORD, offset, urlsafe) + " end"
    cleaned = sanitizer.clean(text)
    assert "[REDACTED:known-secret]" in cleaned
    assert not any(form in cleaned for form in encoded_forms(PASSWORD))


@pytest.mark.parametrize(
    "form",
    [
        PASSWORD,
        urllib.parse.quote(PASSWORD, safe=""),
        urllib.parse.quote_plus(PASSWORD),
        json.dumps(PASSWORD)[1:-1],
        PASSWORD[:9] + "\n" + PASSWORD[9:],
    ],
)
def test_env_secret_plain_and_encoded(form: str) -> None:
    sanitizer = Sanitizer({"DB_PASSWORD": PASSWORD}, Identities())
    cleaned = sanitizer.clean(f"connect with {form} now")
    assert form not in cleaned and "[REDACTED:known-secret]" in cleaned


@pytest.mark.parametrize(
    ("name", "secret"),
    [
        ("GITHUB_TOKEN", True),
        ("AWS_SECRET_ACCESS_KEY", True),
        ("DB_PASSWD", True),
        ("GH_PAT", True),
        ("NPM_AUTH", True),
        ("SESSION_COOKIE", True),
        ("MY_PRIVATE_THING", True),
        ("PATH", False),
        ("PWD", False),
        ("GIT_AUTHOR_EMAIL", False),
        ("HOME", False),
        ("PYTHONPATH", False),
        ("MYSQL_PWD", True),
        ("SMTP_PASS", True),
        ("DATABASE_URL", True),
        ("SENTRY_DSN", True),
        ("GHTOKEN", True),
        ("HF_TOKENIZER", False),
        ("PASSTHROUGH_MODE", False),
        ("OLDPWD", False),
        ("QUALIFY_OPT_PROMPT_KEY", False),
        ("QUALIFY_OPT_TOKENIZER", False),
    ],
)
def test_secret_names(name: str, secret: bool) -> None:
    assert (name in secret_values({name: "some-long-value"})) is secret


def test_short_values_are_not_secrets() -> None:
    assert secret_values({"XDG_SESSION_ID": "3", "SESSION_TYPE": "tty"}) == {}


IDENTITIES = Identities(
    hostnames=frozenset({"build-box-7", "build-box-7.corp.example"}),
    users=frozenset({"alice"}),
    homes=frozenset({"/home/alice"}),
)


def test_identities_get_stable_pseudonyms() -> None:
    sanitizer = Sanitizer({}, IDENTITIES)
    text = (
        "alice@build-box-7.corp.example ran in /home/alice/work on BUILD-BOX-7; "
        "user=alice on build-box-7 from 10.2.3.4 and 10.2.3.4, then 192.168.7.9"
    )
    cleaned = sanitizer.clean(text)
    assert "alice" not in cleaned and "build-box" not in cleaned.lower()
    assert "/home/alice" not in cleaned and "10.2.3.4" not in cleaned
    assert cleaned.count("user-1") == 2 and "home-1/work" in cleaned
    assert cleaned.count("ip-1") == 2 and "ip-2" in cleaned and "ip-3" not in cleaned
    assert sanitizer.clean("10.2.3.4") == "ip-1"
    assert sanitizer.pseudonyms["10.2.3.4"] == "ip-1"


def test_words_containing_a_user_name_are_kept() -> None:
    assert Sanitizer({}, IDENTITIES).clean("malice alices alice_x") == "malice alices alice_x"


def test_current_identities_include_this_host() -> None:
    import socket

    identities = Identities.current({"USER": "zed-planted", "HOME": "/home/zed-planted"})
    assert socket.gethostname() in identities.hostnames or len(socket.gethostname()) < 3
    assert "zed-planted" in identities.users and "/home/zed-planted" in identities.homes
    assert "root" not in identities.users


@pytest.mark.parametrize(
    "address",
    ["10.0.0.1", "172.16.5.4", "172.31.255.255", "192.168.1.1", "169.254.169.254",
     "100.64.0.1", "100.127.255.254", "fd12:3456:789a::1", "fe80::1ff:fe23:4567:890a"],
)  # fmt: skip
def test_internal_ips_are_pseudonymized(address: str) -> None:
    for text in (f"host {address} up", f"({address}:8080)", f"url=http://{address}/x"):
        assert address not in plain().clean(text)


@pytest.mark.parametrize(
    "text",
    [
        "torch 2.13.0.1",
        "v10.0.0.1",
        "version 10.0.0.1",
        "release: 10.1.2.3",
        "cuda==10.0.0.1",
        "10.0.0.1-rc1",
        "10.1.2.3+cu121",
        "10.0.0.1.5",
        "1.10.0.1",
        "libfoo.so.10.0.0.1",
        "10.0.0-rc1",
        "127.0.0.1",
        "8.8.8.8",
        "172.32.0.1",
        "100.128.0.1",
        "10.0.0.256",
        "tokenizers==0.20.1 max_new_tokens=20",
        "Basic arithmetic and bearer tokens",
        "hf_hub_download(repo_id) and ghp_short",
        "commit b1b245667afd172bd6c6045dc65a5e476369cd1d",
        "Authorization: Bearer [REDACTED:auth-header]",
    ],
)
def test_near_misses_are_kept(text: str) -> None:
    sanitizer = plain()
    assert sanitizer.clean(text) == text
    assert not sanitizer.counts


def test_disabled_rule_is_skipped_but_its_value_is_learnt() -> None:
    sanitizer = Sanitizer({}, Identities(), disabled_rules={"github-token"})
    cleaned = sanitizer.clean(f"t {GH}")
    assert GH in cleaned
    sanitizer.harvest(cleaned, "stdout.log")
    assert [secret.value for secret in sanitizer.known] == [GH]
    assert [hit.whole for hit in sanitizer.index.find(cleaned)] == [True]


def test_file_names_get_a_safe_marker() -> None:
    name = plain().clean_name(f"out-{GH}.txt")
    assert GH not in name and name == "out-REDACTED-github-token.txt"


# --- what got through a red-team run: glued, coloured, escaped, cut short

SLACK = "xoxb-" + "2417365912-5127734561803-" + "Q7sYhT2pLk9WmZx4RcVb8NdE"
OPENAI = "sk-proj-" + "Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z"
GITLAB = "glpat-" + "x7Kp2Qm9Rt4Vw8Yz1Bc3"


@pytest.mark.parametrize(
    ("text", "secret", "kept"),
    [
        (f"tokenghp{GH[3:]} end", GH[4:], ["token", "end"]),
        (f"\x1b[31m{GH}\x1b[0m done", GH[4:], ["done"]),
        (f"id=AKIA{'IOSFODNN7EXAMPLE'}x", "IOSFODNN7EXAMPLE", ["id="]),
        ("url https%3A%2F%2Fbob%3Ahunter2pw%40db.example%2Fx", "hunter2pw", ["db.example"]),
        ("url https%253A%252F%252Fbob%253Ahunter2pw%2540db", "hunter2pw", ["url "]),
        (r'{"u": "https:\/\/bob:hunter2pw@db.example\/x"}', "hunter2pw", ["db.example"]),
        ("dsn postgres://:onlypassw0rd@db:5432/x", "onlypassw0rd", ["db:5432"]),
        ('{"headers": {"Authorization": "Bearer abc123DEF456ghi"}}', "abc123DEF456ghi", []),
        ("Authorization%3A%20Bearer%20abc123DEF456ghi", "abc123DEF456ghi", []),
        (f"slack {SLACK} x", SLACK[5:], ["slack"]),
        (f"key={OPENAI}", OPENAI[8:], []),
        (f"remote {GITLAB}", GITLAB[6:], ["remote"]),
        ("password: hunter22", "hunter22", ["password"]),
        ('{"db_password": "s3cr3t-v4lue"}', "s3cr3t-v4lue", ["db_password"]),
        ("SMTP_PASS=mailpass99 MYSQL_PWD=sqlpass99", "pass99", ["SMTP_PASS", "MYSQL_PWD"]),
        ("aws_secret_access_key = wJalrXUtnFEMIK7MDENGbPxRfiCY", "wJalrXUtnFEMI", []),
    ],
)
def test_shapes_wherever_they_stand(text: str, secret: str, kept: list[str]) -> None:
    cleaned = plain().clean(text)
    assert secret not in cleaned, cleaned
    for word in kept:
        assert word in cleaned, cleaned


@pytest.mark.parametrize(
    "form",
    [
        "O'Brien&Sons<pw>",
        "O&#x27;Brien&amp;Sons&lt;pw&gt;",
        "O&#39;Brien&amp;Sons&lt;pw&gt;",
        "O\\u0027Brien\\u0026Sons\\u003cpw\\u003e",
    ],
)
def test_env_secret_with_a_quote_in_html_and_json(form: str) -> None:
    sanitizer = Sanitizer({"DB_PASSWORD": "O'Brien&Sons<pw>"}, Identities())
    assert sanitizer.clean(f"<td>{form}</td>") == "<td>[REDACTED:known-secret]</td>"


def test_fragments_of_a_known_value_left_by_truncation() -> None:
    value = "Zq8" + "mW2vN7xR4tL9pK3sH6jD1fG5"  # 27 characters
    sanitizer = Sanitizer({"API_TOKEN": value}, Identities())
    pytest_repr = f"assert '{value[:14]}...{value[-13:]}' == x"
    cleaned = sanitizer.clean(pytest_repr)
    assert value[:14] not in cleaned and value[-13:] not in cleaned
    assert cleaned.startswith("assert '") and cleaned.endswith("' == x")
    assert sanitizer.clean(f"short {value[:11]} kept") == f"short {value[:11]} kept"


def test_a_token_seen_whole_is_caught_cut_elsewhere() -> None:
    sanitizer = plain()
    sanitizer.harvest(f"printed {GH} in full", "stdout.log")
    cut = f"message: {GH[4:20]}... and {GH[-14:]}"
    cleaned = sanitizer.clean(cut)
    assert GH[4:20] not in cleaned and GH[-14:] not in cleaned


@pytest.mark.parametrize(
    "text",
    [
        "TensorRT 10.0.1.6",
        "tensorrt 10.0.1.6",
        "TensorRT-10.0.1.6",
        "libnvinfer10 10.0.1.6-1+cuda12.4",
        "CUDA 10.1.2.3 installed",
    ],
)
def test_versions_are_never_ips(text: str) -> None:
    assert plain().clean(text) == text


@pytest.mark.parametrize(
    "text",
    ["connect to 10.0.1.6", "then 10.2.3.4", "10.0.1.6:29500", "inet 10.0.1.6/24"],
)
def test_addresses_after_ordinary_words_are_ips(text: str) -> None:
    assert "10." not in plain().clean(text)


def test_a_common_user_name_only_where_it_is_a_name() -> None:
    identities = Identities.current({"USER": "builder7", "HOME": "/home/builder7"})
    words = Sanitizer({}, dataclasses.replace(identities, users=frozenset({"build"})))
    text = "build:prefill ok; /srv/build/x; build@ci-host; user=build; rebuild build-id"
    assert words.clean(text) == (
        "build:prefill ok; /srv/user-1/x; user-1@ci-host; user=user-1; rebuild build-id"
    )


def test_a_common_host_name_only_where_it_is_a_name() -> None:
    sanitizer = Sanitizer({}, Identities(hostnames=frozenset({"gpu"})))
    text = "gpu memory; ssh gpu:22; root@gpu; hostname: gpu\nNov 30 15:42:42 gpu kernel: oom"
    assert sanitizer.clean(text) == (
        "gpu memory; ssh host-1:22; root@host-1; hostname: host-1\n"
        "Nov 30 15:42:42 host-1 kernel: oom"
    )


def test_an_option_named_like_a_secret_redacts_nothing_elsewhere() -> None:
    environ = {"QUALIFY_OPT_TOKENIZER": "gpt2-medium-tok", "QUALIFY_OPT_PROMPT_KEY": "question"}
    sanitizer = Sanitizer(environ, Identities())
    text = "loading gpt2-medium-tok for the question"
    assert sanitizer.clean(text) == text


def test_secret_env_names_any_variable() -> None:
    environ = {"BUILD_NOTE": "opaque-value-77"}
    sanitizer = Sanitizer(environ, Identities(), secret_env=["BUILD_NOTE"])
    assert sanitizer.clean("note opaque-value-77") == "note [REDACTED:known-secret]"


def test_a_code_like_value_is_redacted_in_place_but_not_learnt() -> None:
    sanitizer = plain()
    sanitizer.harvest("password=os.environ and token: Xk9-secret-77", "stdout.log")
    assert [secret.value for secret in sanitizer.known] == ["Xk9-secret-77"]
    assert plain().clean("password=os.environ") == "password=[REDACTED:secret-assignment]"


# --- the final scan: every form, every channel's escaping undone

from qualify.publish.final_scan import (  # noqa: E402
    ANNOTATIONS,
    HTML,
    TERMINAL,
    TEXT,
    describe,
    final_scan,
)
from qualify.publish.secrets import KnownSecret, SecretIndex  # noqa: E402

SCANNED = "Tq4" + "xW9zLp2Rk7Vm3Nb8"  # 19 characters


def _b64_inside(value: str, offset: int, encode=base64.b64encode) -> str:  # type: ignore[no-untyped-def]
    return encode(b"#" * offset + value.encode() + b"!!").decode()


@pytest.mark.parametrize(
    "shown",
    [
        SCANNED,
        SCANNED[::-1],
        SCANNED.encode().hex(),
        SCANNED.encode().hex().upper(),
        urllib.parse.quote("a/" + SCANNED + "/b", safe=""),
        urllib.parse.quote(urllib.parse.quote("=" + SCANNED + "?", safe=""), safe=""),
        json.dumps({"k": SCANNED + '"'}),
        "<td>" + SCANNED.replace("q", "&#113;") + "</td>",
        _b64_inside(SCANNED, 0),
        _b64_inside(SCANNED, 1),
        _b64_inside(SCANNED, 2, base64.urlsafe_b64encode),
        "cut " + SCANNED[:12] + "...",
        "cut ..." + SCANNED[-12:],
        SCANNED[:10] + "\n" + SCANNED[10:],
    ],
)
def test_the_final_scan_finds_every_form(shown: str) -> None:
    index = SecretIndex([KnownSecret(SCANNED, "env NOTE_TOKEN")])
    leaks = final_scan(f"before {shown} after".encode(), index, HTML, "public/x.html")
    assert leaks and "env NOTE_TOKEN" in describe(leaks) and SCANNED not in describe(leaks)
    assert str(leaks[0]).startswith("public/x.html line ")


def test_the_final_scan_finds_nothing_in_clean_text() -> None:
    index = SecretIndex([KnownSecret(SCANNED, "env NOTE_TOKEN")])
    text = f"nothing here but {SCANNED[:11]} and {SCANNED[-11:]} (11 each)".encode()
    assert final_scan(text, index, TEXT, "x") == []
    assert final_scan(b"anything", SecretIndex([]), TEXT, "x") == []


def test_the_final_scan_undoes_each_channels_escaping() -> None:
    index = SecretIndex([KnownSecret("pass:word,1%", "secrets file line 1")])
    command = b"::error title=pass%3Aword%2C1%25::x\n"
    leaks = final_scan(command, index, ANNOTATIONS, "")
    assert [str(leak) for leak in leaks] == ["line 1: known-secret (secrets file line 1)"]
    coloured = b"\x1b[31mpass:wo\x1b[0mrd,1%\n"
    assert final_scan(coloured, index, TERMINAL, "")
    assert "and 1 more" in describe([*leaks] * 11, limit=10)


def test_boundaries_asserted_after_the_first_character_find_what_lookbehinds_find() -> None:
    """The address and home patterns assert "no word character before" after their first
    character (for speed); on texts made to sit on every boundary they find exactly what the
    plain spelling, the lookbehind first, finds."""
    homes = ["/root", "/home/alice", "/home/al", "/srv/ci-runner"]
    alternation = "|".join(re.escape(home) for home in sorted(homes, reverse=True))
    plain = {
        "ipv4": re.compile(r"(?<![\w.])(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})(?![\w+-]|\.\d)"),
        "ipv6": re.compile(
            r"(?<![\w:])f[cde][0-9a-f]{2}:[0-9a-f:]*[0-9a-f](?![\w:])", re.IGNORECASE
        ),
        "home": re.compile(rf"(?<![\w.-])({alternation})(?![\w-])"),
    }
    fast = {
        "ipv4": sanitize._IPV4,
        "ipv6": sanitize._IPV6,
        "home": sanitize._homes_pattern(homes),
    }
    pieces = [
        "10.1.2.3", "192.168.0.1", "1.2.3.4.5", "fd00::1", "FC12:ab::9", "fe80::1", "/root",
        "/home/alice", "/home/al", "/srv/ci-runner", "x", "-", ".", ":", "_", " ", "\n", "9",
        "a", "F", "/", "+", "é",
    ]  # fmt: skip
    rng = random.Random(7)
    texts = ["".join(rng.choice(pieces) for _ in range(rng.randint(1, 8))) for _ in range(4000)]
    for name, pattern in plain.items():
        candidate = fast[name]
        assert candidate is not None
        for text in texts:
            expected = [(m.span(), m.groups()) for m in pattern.finditer(text)]
            assert [(m.span(), m.groups()) for m in candidate.finditer(text)] == expected, text


SPLIT_VALUE = "Kq7wZp2mXr9" + "Tb4nVc8sLd1"
"""22 characters: each half of 11 is under the 12-character fragment the index finds."""


@pytest.mark.parametrize(
    "between",
    [
        "\r",  # a progress line redrawn
        "\t",  # a column
        "\b",  # a spinner
        "  \r ",  # a redraw after clearing with spaces
        "\b \b",  # the erase idiom
        "\x0c",
        "\\r",  # JSON-escaped
        "\\t",
        "\\b",
        "\\u0008",
        "\\u000d",
        "&#13;",  # XML character references
        "&#xD;",
        "&#9;",
        "&#x9;",
        "&#8;",
        "#x08",  # pytest's JUnit spelling of a character XML cannot hold
    ],
)
def test_a_value_split_by_a_character_that_shows_nothing_is_redacted(between: str) -> None:
    first, second = SPLIT_VALUE[:11], SPLIT_VALUE[11:]
    text = f"loading {first}{between}{second} done"
    sanitizer = Sanitizer({"DEPLOY_TOKEN": SPLIT_VALUE}, Identities())
    cleaned = sanitizer.clean(text)
    assert first not in cleaned and second not in cleaned, cleaned
    assert cleaned.startswith("loading [REDACTED:known-secret]") and cleaned.endswith(" done")
    # The final scan reads the same views: it finds what a redaction would have missed.
    leaks = final_scan(text.encode(), sanitizer.index, TEXT, "log")
    assert leaks and leaks[0].whole


def test_text_with_tabs_and_carriage_returns_but_no_secret_is_kept() -> None:
    text = "col\tvalue\r\nprogress 10%\rprogress 100%\b\n#x08 &#13;"
    assert Sanitizer({"DEPLOY_TOKEN": SPLIT_VALUE}, Identities()).clean(text) == text


def test_a_table_printed_in_a_repr_is_read_down_its_columns() -> None:
    """pytest shows a parameter as its repr: a table's rows joined by escaped line breaks."""
    value = "Kq7wZp2mXr9Tb4nVc8sLd1Abcd"
    rows = [f"│ token   │ {value[:10]:<10} │", f"│         │ {value[10:20]:<10} │"]
    rows.append(f"│         │ {value[20:]:<10} │")
    text = "text = " + repr("\n".join(rows)) + "\n\n    def test_out(text):"
    cleaned = Sanitizer({"DEPLOY_TOKEN": value}, Identities()).clean(text)
    assert not any(value[i : i + 6] in cleaned for i in range(0, 24, 6)), cleaned
    assert cleaned.endswith("def test_out(text):")


def _kept_corpus() -> list[str]:
    """Texts of every kind cleaning changes or keeps: every rule's example and its near misses,
    each escaped, coloured and wrapped; identities, addresses and versions; key names; a known
    secret whole and cut; long texts; test ids; pieces that meet only across a neighbour."""
    texts = [*EVERY_RULE.values(), *SHAPES.values(), PEM, AWS_SECRET]
    texts += [
        "torch 2.13.0.1", "v10.0.0.1", "10.0.0.1", "host 10.2.3.4 up", "(10.2.3.4:8080)",
        "192.168.1.1", "8.8.8.8", "fd12:3456:789a::1", "fe80::1ff:fe23:4567:890a", "::1",
        "alice@build-box-7", "/home/alice/x", "BUILD-BOX-7 ready", "user=alice", "malice",
        "api_key", "db_password", "tokenizer", "signal", "keyboard", "passes", "cookies",
        "t.py::test_a[0.5]", "t.py::TestX::test_y[1.2.3]", "t.py::test_z[int-fe80]", "",
        "\x1b[31mghp_" + GH[4:] + "\x1b[0m", "\\u0067hp_" + GH[4:], "%67hp_" + GH[4:],
        "&#103;hp_" + GH[4:], GH[:20] + "\n" + GH[20:], GH[:20] + "\\n" + GH[20:], "gh", "p_",
        f"loading {SPLIT_VALUE} done", SPLIT_VALUE[:13], SPLIT_VALUE[3:], SPLIT_VALUE[:8],
        "x" * 300, "x" * 300 + GH, "y" * 290 + " /home/alice", "sep\uffffghp_" + GH[4:],
        "\uffff", "tab\there", "line\nbreak", "&amp; done", "100%", "a\\b",
    ]  # fmt: skip
    rng = random.Random(38)
    pieces = [*texts[:40], "ghp_", "10.", "0.", "1", ":", "fd", "/home/", "alice", "=", " "]
    for _ in range(300):
        texts.append("".join(rng.choice(pieces)[: rng.randint(1, 40)] for _ in range(3)))
    return texts


def test_kept_among_agrees_with_cleaning_each_text() -> None:
    """``kept_among`` searches every text's necessary conditions at once: what it keeps is
    what cleaning each text alone keeps, counting nothing (a long text, never remembered, may
    be kept where ``keeps`` would not say so, but never one cleaning changes)."""
    texts = _kept_corpus()
    environ = {"DEPLOY_TOKEN": SPLIT_VALUE}
    for order in range(3):
        random.Random(order).shuffle(texts)  # (other neighbours across the separator)
        kept = Sanitizer(environ, IDENTITIES).kept_among(texts)
        for text in texts:
            reference = Sanitizer(environ, IDENTITIES)
            unchanged = reference.clean(text) == text and not reference.counts
            unchanged = unchanged and not sanitize._secret_key(text)
            if len(text) <= sanitize._MEMO_LENGTH:
                assert (text in kept) is unchanged, text
            else:
                assert text not in kept or unchanged, text


def test_kept_among_answers_again_from_what_it_found() -> None:
    sanitizer = Sanitizer({}, IDENTITIES)
    assert sanitizer.kept_among(["t.py::a", "/home/alice"]) == {"t.py::a"}
    assert sanitizer.kept_among(["t.py::a", "/home/alice"]) == {"t.py::a"}
    assert sanitizer.clean("t.py::a") == "t.py::a" and not sanitizer.counts
    assert sanitizer.clean("/home/alice") == "home-1" and sanitizer.counts["home-dir"] == 1


def test_the_necessary_conditions_hold_no_anchor_or_lookaround() -> None:
    """``kept_among`` searches them over texts joined together: a pattern that asserts what
    stands around a match would see a neighbour where one text alone has its start or end."""
    sanitizer = Sanitizer({}, IDENTITIES)
    needles = [*sanitize._TRIGGER.parts, sanitize._KEY_WORD, *sanitizer._identity_needles]
    needles += [
        sanitize.views.ESCAPE_START,
        sanitize.views.BREAK_HINT,
        sanitize.views.BREAK_CONTROL,
    ]
    for needle in needles:
        source = needle.pattern.replace("\\\\", "")
        assert not re.search(r"\(\?[=!<]|(?<!\\)[\^$]|\\[bBAZ]", source), source
    assert sanitize._SEPARATOR not in "".join(needle.pattern for needle in needles)


def test_the_run_s_own_conditions_touch_what_their_whole_searches_touch() -> None:
    """``kept_among``'s identity needles, each searched the cheap way (the dotted quad only
    where ``_DOTS`` finds a start, the internal IPv6 group from the string searches of its
    lowered starts), touch the texts their searches over the whole joined text touch; also
    where a character lowers to two (the group searched whole)."""
    sanitizer = Sanitizer({}, IDENTITIES)
    pieces = [
        "fc00:", "FD12:", "fE80::1", "Fc0", "0:", "ffe1:", "fcfe0:", "10.2.3.4", "1.2.3", ".4.5.",
        "9.", "alice", "Build-Box-7", "x", ":", "\u0130", "\u212a", "\ufb00", "\uffff", "diff",
    ]  # fmt: skip
    rng = random.Random(20261208)
    for _ in range(2000):
        texts = [
            "".join(rng.choices(pieces, k=rng.randint(0, 5))) for _ in range(rng.randint(1, 6))
        ]
        joined = sanitize._SEPARATOR.join(texts)
        whole = [(needle, joined, 0) for needle in sanitizer._identity_needles]
        assert sanitizer._touched(texts) == sanitize._touching(whole, texts), texts


def test_kept_among_searches_many_texts_in_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    """Texts joined a few at a time find what they find joined all at once."""
    texts = _kept_corpus()
    whole = Sanitizer({"DEPLOY_TOKEN": SPLIT_VALUE}, IDENTITIES).kept_among(texts)
    monkeypatch.setattr(sanitize, "_JOINED_BYTES", 64)
    assert Sanitizer({"DEPLOY_TOKEN": SPLIT_VALUE}, IDENTITIES).kept_among(texts) == whole


def test_each_trigger_part_is_looked_for_by_its_literal_start() -> None:
    """A part of the trigger is searched only in a text that holds its literal start: the
    characters every match of it begins with."""
    assert [sanitize.literal_prefix(part) for part in ("a|b", "(a|b)c", "[|]x", "x[]|]")] == [
        "",
        "",
        "",
        "x",
    ]
    assert [sanitize.literal_prefix(part) for part in ("ab?", "ab{2}", r"ab\.c", "a(?:b)")] == [
        "a",
        "a",
        "ab",
        "a",
    ]
    # Every match in this module's examples starts with its part's literal start.
    with open(__file__, encoding="utf-8") as handle:
        examples = handle.read().lower()
    found = 0
    for part in sanitize._TRIGGER.parts:
        prefix = sanitize.literal_prefix(part.pattern)
        assert prefix and part.pattern.startswith(prefix), part.pattern
        for match in part.finditer(examples):
            assert match.group().startswith(prefix), (part.pattern, match.group())
            found += 1
        assert (prefix in examples) == (part in sanitize._TRIGGER.present(examples))
    assert found > 100


def _quoted_corpus() -> list[str]:
    """XML-like texts longer than a remembered text: testcase lines whose names and values
    are the kept corpus' texts, some quoted, some meeting the markup across a quote (a key word
    before a quote and an assignment after it), broken over lines and indented."""
    texts = _kept_corpus()
    rng = random.Random(52)
    markup = ['"', '" ', '"/>\n    <testcase name="', '" classname="', "=", ":", " = ", "\n  "]
    words = ["api_key", "password", "token", "x", "test_a", "0.001", "Secret", "pass"]
    corpus = []
    for _ in range(400):
        parts = [
            rng.choice(markup) if rng.random() < 0.4 else rng.choice(texts + words)
            for _ in range(rng.randint(4, 40))
        ]
        corpus.append("<testsuite>" + "".join(parts) + " " * 260 + "</testsuite>")
    # Most of them sent to ``clean`` by a doubt; these seldom are, their quotes met by keys and
    # assignments, line breaks and indentation.
    plain = ["test_a", "x", "TestY", "key", "api_key", "pass", "token", "sk-", "ghp", "_", "-"]
    plain += ["aws", "a" * 20, "0" * 16, "=", ":", " ", "\n", "\t  ", ":=", "=>", "/", "//"]
    plain += ["bearer ", "cookie", "Authorization", "-----BEGIN", "eyJ", "://", "hf_", "PASS"]
    for _ in range(1200):
        parts = [rng.choice(plain[: 11 if rng.random() < 0.9 else None]) for _ in range(12)]
        text = "".join(rng.choice(['"', *parts]) for _ in range(len(parts)))
        corpus.append(text + "\n    " * 60)
    quiet = "".join(
        f'    <testcase name="test_{n}[{n % 7}]" classname="t.TestX" time="0.00{n % 9}"/>\n'
        for n in range(50)
    )
    corpus += [
        quiet,
        quiet + '<property name="api_key" value="' + SPLIT_VALUE + '"/>',
        quiet + '<property name="api_key"\n value="' + SPLIT_VALUE + '"/>',
        quiet + '<p name="password" value="hunter2hunter2"/>',
        quiet + '<p v="ghp_' + GH[4:20] + '"\n      x="' + GH[20:] + '"/>',
        quiet + '<p host="build-box-7" addr="10.2.3.4" six="fd12:3456:789a::1"/>',
        quiet + '<p home="/home/alice/x" user="alice"/>',
        quiet + '<p token"="abcdefghijklmnop12345"/>',
        quiet + "<p a='x'>key: " + SPLIT_VALUE + "</p>",
        quiet + "<p>a | b | c\n1 | 2 | 3</p>",
        quiet + "<p>&amp; 100% a\\b</p>",
    ]
    return corpus


def test_clean_quoted_is_clean() -> None:
    """``clean_quoted`` gives what ``clean`` gives, and counts what it counts, whether a known
    secret is set or not."""
    for environ in ({}, {"DEPLOY_TOKEN": SPLIT_VALUE}):
        for text in _quoted_corpus():
            reference, quoted = Sanitizer(environ, IDENTITIES), Sanitizer(environ, IDENTITIES)
            assert quoted.clean_quoted(text) == reference.clean(text), text
            assert quoted.counts == reference.counts, text
            assert quoted.pseudonyms == reference.pseudonyms, text


def test_no_condition_clean_quoted_reads_by_pieces_matches_a_quote() -> None:
    """What ``clean_quoted`` reads piece by piece never matches a double quote: the trigger's
    parts but the key words' optional quote, a break, the dotted quad's and the IPv6 group's
    needles (nor the faster condition standing for the first)."""
    suffix = r"s?[\"']?\s*(?:=>|:=|[:=])"
    for part in sanitize._TRIGGER.parts:
        source = part.pattern.removesuffix(suffix)
        assert '"' not in source and "\\s" not in source and "[^" not in source, source
        assert not re.search(r"(?<!\\)\.", source), source
    for pattern in (views.BREAK, *Sanitizer({}, IDENTITIES)._identity_needles[:2]):
        assert not pattern.search('"'), pattern.pattern
        assert '"' not in pattern.pattern and "[^" not in pattern.pattern, pattern.pattern
    assert sanitize._ASSIGNED.match(" \t=>") and not sanitize._ASSIGNED.match('"=')
    for quad in ("10.2.3.4", "1.22.333.4"):
        assert sanitize._DOTS.search(quad)
