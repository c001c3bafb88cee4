"""Known secrets: where they come from, their forms, and the index that finds them whole or
cut (each test states the rule it holds the code to)."""

from __future__ import annotations

import base64
import html
import json
import random
import urllib.parse
from pathlib import Path

import pytest

from qualify.errors import UsageError
from qualify.publish import views
from qualify.publish.secrets import (
    FRAGMENT,
    MIN_SECRET_LENGTH,
    KnownSecret,
    SecretIndex,
    forms,
    from_environment,
    is_secret_name,
    read_secrets_file,
)

VALUE = "Kp7" + "qZ2vX9mR4tW8nL"  # 17 characters


@pytest.mark.parametrize(
    ("name", "value", "secret"),
    [
        ("APP_DATABASE_URL", "sqlite:///tmp/app.db", True),  # a database connection, always
        ("DATABASE_URI", "sqlite:///x", True),
        ("REDIS_URL", "redis://:s3cretpw@cache:6379/0", True),  # a URL that carries a password
        ("REDIS_URL", "redis://cache:6379/0", False),  # one that does not
        ("HOMEPAGE_URL", "https://user:pw@example.com", True),
        ("BROKER_URI", "amqp://guest@rabbit", False),  # a user alone is not a password
        ("QUALIFY_OPT_API_KEY", "x" * 20, False),  # qualify's own variables
        ("OLDPWD", "/home/someone", False),
    ],
)
def test_secret_names_and_url_values(name: str, value: str, secret: bool) -> None:
    assert is_secret_name(name, value) is secret


def test_environment_values_from_the_minimum_length_and_in_any_order() -> None:
    environ = {
        "A_TOKEN": "x" * (MIN_SECRET_LENGTH - 1),  # too short, and first in sorted order
        "B_TOKEN": "y1" * (MIN_SECRET_LENGTH // 2),  # exactly long enough
        "C_URL": "https://u:passw0rd@h",  # secret by its value
        "D_NOTE": "plain-value-here",  # named with --secret-env
        "XDG_SESSION_TYPE": "wayland",  # secret by name, but an ordinary word: not redacted
    }
    found = from_environment(environ, extra_names=["D_NOTE"])
    assert [(s.origin, s.value) for s in found] == [
        ("env B_TOKEN", "y1" * (MIN_SECRET_LENGTH // 2)),
        ("env C_URL", "https://u:passw0rd@h"),
        ("env D_NOTE", "plain-value-here"),
    ]


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ("abc12", "5 characters is too short"),
        ("failed", "reads as an ordinary word"),
        ("testcase", "reads as an ordinary word"),
        ("Password", "reads as an ordinary word"),
        ("dry-run", "reads as an ordinary word"),
        ("31415926", "reads as an ordinary word or number"),
    ],
)
def test_a_value_named_with_secret_env_that_reads_as_text_is_refused(value: str, why: str) -> None:
    with pytest.raises(UsageError, match=f"^--secret-env DEPLOY_WORD: its value .*{why}"):
        from_environment({"DEPLOY_WORD": value}, extra_names=["DEPLOY_WORD"])


@pytest.mark.parametrize("value", ["hunter22", "Kp7-qZ", "verdictverdict", "to be 4 me"])
def test_a_short_value_that_does_not_read_as_a_word_is_accepted(value: str) -> None:
    assert from_environment({"X": value}, extra_names=["X"]) == [KnownSecret(value, "env X")]


def test_secrets_file_lines(tmp_path: Path) -> None:
    path = tmp_path / "masked.txt"
    path.write_bytes(b"first-value-1\n\n  padded-value  \ncaf\xe9-latin1-value\n")
    found = read_secrets_file(path)
    assert [(s.origin, s.value) for s in found] == [
        ("secrets file line 1", "first-value-1"),
        ("secrets file line 3", "  padded-value  "),
        ("secrets file line 4", "caf\udce9-latin1-value"),  # the byte kept as it was
    ]
    with pytest.raises(UsageError, match=r"--secrets-file '.*nope' cannot be read \(No such"):
        read_secrets_file(tmp_path / "nope")


@pytest.mark.parametrize("word", ["failed", "message", "passed", "pytest", "verdict", "ab1c2"])
def test_a_secrets_file_line_that_reads_as_text_is_refused_naming_the_line(
    tmp_path: Path, word: str
) -> None:
    path = tmp_path / "masked.txt"
    path.write_text(f"first-value-1\n{word}\n")
    with pytest.raises(UsageError) as caught:
        read_secrets_file(path)
    message = str(caught.value)
    assert "line 2 is not valid" in message
    assert word not in message.partition(" line 2 ")[2]  # the value is never echoed


def test_forms_are_every_encoding_of_the_value() -> None:
    value = "a'b\"c&d<e/f +g"
    raw = value.encode()
    expected = {
        value,
        value[::-1],
        raw.hex(),
        raw.hex().upper(),
        json.dumps(value)[1:-1],
        html.escape(value),
        html.escape(value, quote=False),
        urllib.parse.quote(value, safe=""),
        urllib.parse.quote_plus(value),
        urllib.parse.quote(urllib.parse.quote(value, safe=""), safe=""),
    }
    assert expected <= forms(value)
    assert json.dumps("é€" + value, ensure_ascii=False)[1:-1] in forms("é€" + value)
    assert {"line-one-secret", "line-two-secret"} <= forms("line-one-secret\nline-two-secret\n")


@pytest.mark.parametrize("offset", [0, 1, 2])
def test_base64_forms_are_the_longest_part_fixed_by_the_value(offset: int) -> None:
    """For each alignment, the form appears in the encoding of the value wherever it stands,
    and one more character on either side would depend on the bytes around it."""
    rng = random.Random(offset)
    encodings = []
    for _ in range(20):
        before = bytes(rng.randrange(256) for _ in range(3 * rng.randrange(3) + offset))
        after = bytes(rng.randrange(256) for _ in range(rng.randrange(4)))
        encodings.append(base64.b64encode(before + VALUE.encode() + after).decode())
    fixed = [f for f in forms(VALUE) if all(f in e for e in encodings)]
    longest = max(fixed, key=len)
    assert len(longest) >= len(VALUE) * 4 // 3 - 2
    widened = [
        e[e.index(longest) - 1 : e.index(longest) + len(longest) + 1]
        for e in encodings
        if e.index(longest) > 0 and e.index(longest) + len(longest) < len(e)
    ]
    assert len({w[0] for w in widened}) > 1 or len({w[-1] for w in widened}) > 1


def test_the_index_finds_fragments_from_twelve_characters() -> None:
    index = SecretIndex([KnownSecret(VALUE, "env A_TOKEN")])
    for start in range(len(VALUE) - FRAGMENT + 1):
        piece = VALUE[start : start + FRAGMENT]
        hits = index.find(piece)  # the piece is the whole text: from its first character
        assert [(h.start, h.end, h.whole) for h in hits] == [(0, FRAGMENT, False)], start
    assert index.find(VALUE[: FRAGMENT - 1]) == []
    assert [(h.start, h.end, h.whole) for h in index.find("xx" + VALUE)] == [(2, 19, True)]
    assert index.find("xx" + VALUE)[0].secret == KnownSecret(VALUE, "env A_TOKEN")


def test_the_index_takes_short_values_whole_only() -> None:
    short = "Ab3dE6"  # exactly the minimum length
    index = SecretIndex([KnownSecret(short, "env X_TOKEN"), KnownSecret("tiny5", "env Y")])
    assert [s.value for s in index.secrets] == [short]
    assert [(h.start, h.end) for h in index.find(f"[{short}]")] == [(1, 7)]
    assert index.find(short[:5]) == []


def test_the_index_reports_each_run_once_in_order() -> None:
    other = "Zz9" + "yY8xX7wW6vV5"
    index = SecretIndex(
        [KnownSecret(VALUE, "one"), KnownSecret(VALUE, "again"), KnownSecret(other, "two")]
    )
    assert [s.origin for s in index.secrets] == ["one", "two"]  # a value once, first origin
    text = f"{other} and {VALUE[3:]} then {VALUE}"
    found = [(h.start, h.end, h.secret.origin, h.whole) for h in index.find(text)]
    assert found == [
        (0, len(other), "two", True),
        (len(other) + 5, len(other) + 5 + len(VALUE) - 3, "one", False),
        (len(text) - len(VALUE), len(text), "one", True),
    ]


def test_views_map_every_span_back_through_the_layers() -> None:
    text = "a%252F" + "b\\nc" + "&amp;d"
    layers = views.views(text)
    decoded_twice = [t for t, v in layers if t.startswith("a/")]
    assert decoded_twice, layers
    view = next(v for t, v in layers if t == "a/b\\nc&d")
    assert view is not None and view.span(1, 2) == (1, 6)  # "/" came from "%252F"
    assert view.span(0, len(view.text)) == (0, len(text))
    flat = views.collapsed("x\n    y")
    assert flat.text == "xy" and flat.span(1, 2) == (6, 7) and flat.span(0, 2) == (0, 7)
    assert views.decoded("%ff").text == "\udcff"  # a byte that is not UTF-8 is kept
