"""The sanitizer's rules: planted secrets of every shape, wrapped, encoded; near-misses kept."""

from __future__ import annotations

import base64
import json
import urllib.parse

import pytest

from qualify.publish.sanitize import Identities, Sanitizer, encoded_forms, secret_values

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


def plain() -> Sanitizer:
    return Sanitizer({}, Identities())


@pytest.mark.parametrize(("rule", "value"), SHAPES.items())
def test_token_shapes_are_redacted(rule: str, value: str) -> None:
    text = f"log line {value} end" if rule != "bearer-token" else f"curl -H 'Bearer {value}' x"
    sanitizer = plain()
    cleaned = sanitizer.clean(text)
    assert value not in cleaned and f"[REDACTED:{rule}]" in cleaned
    assert sanitizer.counts[rule] == 1
    assert not sanitizer.findings(cleaned)


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
    assert not sanitizer.findings(cleaned)


def wrap(value: str, width: int, line_break: str) -> str:
    prefix = "token: ".rjust(max(7, width - 10), "=")  # the token straddles a wrap
    text = prefix + value + " done"
    return line_break.join(text[i : i + width] for i in range(0, len(text), width))


@pytest.mark.parametrize("width", [7, 20, 76, 80])
@pytest.mark.parametrize("line_break", ["\n", "\r\n", "\\n", "&#10;", "\nE       ", "\n    "])
@pytest.mark.parametrize("value", [GH, SHAPES["jwt"], SHAPES["github-pat"]])
def test_wrapped_tokens_are_caught(value: str, width: int, line_break: str) -> None:
    text = wrap(value, width, line_break)
    assert value not in text
    cleaned = plain().clean(text)
    assert "[REDACTED:" in cleaned
    flat = cleaned.replace(line_break, "")
    for piece in (value[4:16], value[-12:]):
        assert piece not in flat, cleaned


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
    assert "[REDACTED:env-secret]" in cleaned
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
    assert form not in cleaned and "[REDACTED:env-secret]" in cleaned


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
        "alice again on build-box-7 from 10.2.3.4 and 10.2.3.4, then 192.168.7.9"
    )
    cleaned = sanitizer.clean(text)
    assert "alice" not in cleaned and "build-box" not in cleaned.lower()
    assert "/home/alice" not in cleaned and "10.2.3.4" not in cleaned
    assert cleaned.count("user-1") == 2 and "home-1/work" in cleaned
    assert cleaned.count("ip-1") == 2 and "ip-2" in cleaned and "ip-3" not in cleaned
    assert sanitizer.clean("10.2.3.4") == "ip-1"
    assert sanitizer.pseudonyms["10.2.3.4"] == "ip-1"
    assert not sanitizer.findings(cleaned)


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


def test_disabled_rule_is_skipped_but_still_found() -> None:
    sanitizer = Sanitizer({}, Identities(), disabled_rules={"github-token"})
    cleaned = sanitizer.clean(f"t {GH}")
    assert GH in cleaned
    assert plain().findings(cleaned) == {"github-token": 1}


def test_file_names_get_a_safe_marker() -> None:
    name = plain().clean_name(f"out-{GH}.txt")
    assert GH not in name and name == "out-REDACTED-github-token.txt"
