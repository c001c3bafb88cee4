"""The sanitizer at the edges of its rules: which key names a key-value rule takes, JSON keys,
where this machine's names come from, pseudonyms and their cases, versions next to addresses,
adjacent and repeated secrets, what a harvest learns, escapes and wraps mapped back, the index's
chunks and runs, and the final scan's lines and reasons.

Each case states the expected text in full: the marker where a secret stood, the text kept
where none did.
"""

from __future__ import annotations

import pwd
import socket
from collections.abc import Collection
from pathlib import Path
from types import SimpleNamespace

import pytest

from qualify.publish.final_scan import (
    HTML,
    TEXT,
    Leak,
    describe,
    file_channel,
    final_scan,
    strip_ansi,
    unescape_command,
)
from qualify.publish.sanitize import Identities, Sanitizer
from qualify.publish.secrets import Hit, KnownSecret, SecretIndex, read_secrets_file

V = "zq9Value77x"
"""A value no token shape matches: only a key-value rule (or knowing it) finds it."""
GH = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
GH2 = "ghp_" + "Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2"
HF = "hf_" + "aBcDeFgHiJkLmNoPqRsTuVwXyZ01234567"
AKIA = "AKIAIOSFODNN7EXAMPLE"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
PEM = (
    "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA0Z3VS5JJcds3xfn/ygWyF8PbnGy0AHB7MaK1\n"
    "Qx9Rr5oPq3k2bXNlY3JldA==\n-----END RSA PRIVATE KEY-----"
)
KEY_VALUE = "[REDACTED:secret-assignment]"
KNOWN = "[REDACTED:known-secret]"


def plain(disabled_rules: Collection[str] = ()) -> Sanitizer:
    return Sanitizer({}, Identities(), disabled_rules=disabled_rules)


def knowing(*values: str) -> Sanitizer:
    return Sanitizer({}, Identities(), known=[KnownSecret(v, f"test {v[:3]}") for v in values])


# ---- which key names a key-value rule takes


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        (f"api_key: {V}", True),  # at the very start of the text
        (f"sort_key: {V}", False),  # "key" only after api, access, secret, private...
        (f"token: {V}", True),  # a word of its own, at the start
        (f"the token: {V}", True),
        (f"native_token: {V}", False),
        (f"mytoken: {V}", False),
        (f"xtoken: {V}", False),  # one character before it is still a word
        (f"access_token: {V}", True),
        (f"access-token={V}", True),
        (f"authtoken: {V}", True),  # an auth word glued to it (ngrok's authtoken)
        (f"RUNNER_TOKEN={V}", True),  # an upper-case variable name
        (f"runner_token={V}", False),
        ("EOS_TOKEN = '<|endoftext|>'", False),  # a tokenizer's special tokens
        ('PAD_TOKEN: "[PAD]xyz"', False),
        ("NUM_TOKEN=4096", False),
        (f"HF_TOKEN={V} python run.py --eos_token '</s>'", True),  # a kept word later on
        ("API_TOKEN=abcd1234 num_tokens=5", True),
        ("api" + "_" * 17 + f"key: {V}", True),  # the prefix within 20 characters
        ("api" + "_" * 18 + f"key: {V}", False),
        (f"password: {V}", True),
        (f"mypassword: {V}", True),
        (f"pass: {V}", True),
        (f"db-pass={V}", True),
        (f"bypass: {V}", False),
        (f"pwd: {V}", False),  # the working directory
        (f"cwd pwd: {V}", False),
        (f"MYSQL_PWD={V}", True),
        (f"mysql.pwd={V}", True),
        (f"mysql-pwd={V}", True),
    ],
)
def test_key_names_a_key_value_rule_takes(text: str, secret: bool) -> None:
    cleaned = plain().clean(text)
    if secret:
        assert KEY_VALUE in cleaned and V not in cleaned, cleaned
    else:
        assert cleaned == text


@pytest.mark.parametrize("quote", ['"', "'"])
def test_a_quoted_value_is_redacted_inside_its_quotes(quote: str) -> None:
    assert plain().clean(f"password={quote}{V}{quote}") == f"password={quote}{KEY_VALUE}{quote}"


def test_json_values_under_secret_keys_are_redacted_whole() -> None:
    sanitizer = plain()
    document = {
        "api_key": V,
        "tokenizer": "gpt2-fast",
        "eos_token": "</s>",
        "EOS_TOKEN": "<|endoftext|>",
        "db_password": "abcd",  # four characters: redacted
        "auth_token": "abc",  # three: a placeholder, kept
        "session_token": None,
        "nested": [{"client_secret": V}, GH],
        "retries": 3,
        GH: 1,
    }
    assert sanitizer.clean_json(document) == {
        "api_key": KEY_VALUE,
        "tokenizer": "gpt2-fast",
        "eos_token": "</s>",
        "EOS_TOKEN": "<|endoftext|>",
        "db_password": KEY_VALUE,
        "auth_token": "abc",
        "session_token": None,
        "nested": [{"client_secret": KEY_VALUE}, "[REDACTED:github-token]"],
        "retries": 3,
        "[REDACTED:github-token]": 1,
    }
    assert sanitizer.counts["secret-assignment"] == 3
    assert sanitizer.counts["github-token"] == 2


# ---- this machine's names


def test_this_machines_names_from_every_source(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    hostname = tmp_path / "hostname"
    hostname.write_text("gpu-node-3.cluster.example\n", encoding="utf-8")
    monkeypatch.setattr(Identities, "HOSTNAME_FILE", hostname)
    monkeypatch.setattr(socket, "gethostname", lambda: "trainer-7.lab.example")
    monkeypatch.setattr(socket, "getfqdn", lambda: "LOCALHOST")
    entry = SimpleNamespace(pw_name="carol-9", pw_dir="/srv/carol-9/")
    monkeypatch.setattr(pwd, "getpwuid", lambda uid: entry)
    found = Identities.current({"USER": "alice-7", "LOGNAME": "bob", "HOME": "/home/alice-7/"})
    assert found.hostnames == {
        "trainer-7.lab.example", "trainer-7", "gpu-node-3.cluster.example", "gpu-node-3"
    }  # fmt: skip
    assert found.users == {"alice-7", "bob", "carol-9"}
    assert found.homes == {"/home/alice-7", "/srv/carol-9"}


def test_this_machines_names_when_sources_are_missing_short_or_generic(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(Identities, "HOSTNAME_FILE", tmp_path / "absent")
    monkeypatch.setattr(socket, "gethostname", lambda: "gpu")  # three characters: a name
    monkeypatch.setattr(socket, "getfqdn", lambda: "ab")

    def no_entry(uid: int) -> None:
        raise KeyError(uid)  # a container's uid without a passwd entry

    monkeypatch.setattr(pwd, "getpwuid", no_entry)
    assert Identities.current({}) == Identities(hostnames=frozenset({"gpu"}))
    generic = Identities.current({"USER": "runner", "LOGNAME": "al", "HOME": "/"})
    assert (generic.users, generic.homes) == (frozenset(), frozenset())
    assert Identities.current({"HOME": "/w/"}).homes == {"/w"}
    assert Identities.current({"HOME": "/home/REX/"}).homes == {"/home/REX"}


def test_the_fully_qualified_name_is_looked_up_once_per_name(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from qualify.publish.sanitize import fully_qualified

    lookups: list[str] = []
    names = iter(["node-1.example.org", "node-1.other.example"])

    def resolver() -> str:  # the resolver's answer may change: the first one stays
        lookups.append("lookup")
        return next(names)

    monkeypatch.setattr(Identities, "HOSTNAME_FILE", tmp_path / "absent")
    monkeypatch.setattr(socket, "gethostname", lambda: "node-1")
    monkeypatch.setattr(socket, "getfqdn", resolver)
    assert fully_qualified("node-1") == "node-1.example.org"
    first = Identities.current({})
    assert Identities.current({}) == first
    assert first.hostnames == {"node-1", "node-1.example.org"}
    assert lookups == ["lookup"]
    # Another name (the machine renamed) is looked up.
    monkeypatch.setattr(socket, "gethostname", lambda: "node-2")
    assert Identities.current({}).hostnames == {"node-2", "node-1.other.example", "node-1"}
    assert lookups == ["lookup", "lookup"]


# ---- pseudonyms


def test_host_names_are_one_pseudonym_whatever_their_case() -> None:
    sanitizer = Sanitizer({}, Identities(hostnames=frozenset({"gpu-box-7"})))
    assert sanitizer.clean("GPU-BOX-7 up; ssh gpu-box-7") == "host-1 up; ssh host-1"
    assert sanitizer.pseudonyms == {"gpu-box-7": "host-1"}
    assert sanitizer.counts["host-name"] == 2
    assert sanitizer.clean("GPU-BOX-7 up") == "host-1 up"  # no address-like text around it


def test_user_names_are_case_sensitive() -> None:
    sanitizer = Sanitizer({}, Identities(users=frozenset({"Alice-7"})))
    assert sanitizer.clean("Alice-7 and ALICE-7") == "user-1 and ALICE-7"
    assert sanitizer.pseudonyms == {"Alice-7": "user-1"}


def test_ipv6_addresses_are_one_pseudonym_whatever_their_case() -> None:
    sanitizer = plain()
    assert sanitizer.clean("peer fd12:3456::1 and FD12:3456::1") == "peer ip-1 and ip-1"
    assert sanitizer.pseudonyms == {"fd12:3456::1": "ip-1"}


def test_a_disabled_identity_rule_keeps_only_its_own_names() -> None:
    identities = Identities(users=frozenset({"alice-7"}), hostnames=frozenset({"gpu-box-7"}))
    no_users = Sanitizer({}, identities, disabled_rules={"user-name"})
    assert no_users.clean("alice-7@gpu-box-7") == "alice-7@host-1"
    assert plain(disabled_rules={"internal-ip"}).clean("connect to 10.1.2.3") == (
        "connect to 10.1.2.3"
    )
    assert plain().clean("connect to 10.1.2.3") == "connect to ip-1"


def test_no_home_leaves_the_word_none_alone() -> None:
    assert Sanitizer({}, Identities(users=frozenset({"alice-7"}))).clean("value: None") == (
        "value: None"
    )


def test_a_word_like_user_name_where_it_stands_as_a_name() -> None:
    sanitizer = Sanitizer({}, Identities(users=frozenset({"alice"})))
    assert sanitizer.clean("/data/alice/run alice@gpu alice went home") == (
        "/data/user-1/run user-1@gpu alice went home"
    )


def test_host_names_anywhere_and_where_they_stand_as_names() -> None:
    sanitizer = Sanitizer({}, Identities(hostnames=frozenset({"gpu-box-7", "apollo"})))
    assert sanitizer.clean("gpu-box-7 ready, /mnt/apollo/x, APOLLO:22 up, apollo missions") == (
        "host-1 ready, /mnt/host-2/x, host-2:22 up, apollo missions"
    )


def test_a_home_inside_another_home_is_its_own_name() -> None:
    sanitizer = Sanitizer({}, Identities(homes=frozenset({"/srv/alice", "/srv/alice/work"})))
    assert sanitizer.clean("cd /srv/alice/work/x && ls /srv/alice") == "cd home-1/x && ls home-2"


def test_adjacent_secrets_are_one_marker() -> None:
    sanitizer = knowing(V)
    assert sanitizer.clean(f"{V}{GH} end") == f"{KNOWN} end"
    assert sanitizer.counts == {"known-secret": 1}


# ---- versions next to addresses


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        ("trt 10.0.1.6", True),  # a product's name at the very start
        ("TensorRT 10.0.1.6\nnext line", True),
        ("NeMo 10.0.1.6", True),  # a capital inside the name
        ("xFormers 10.0.1.6", True),  # the capital right after the first letter
        ("log\nversion\n10.0.1.6", False),  # "version" on another line says nothing
        ("eth0 10.1.2.3", False),  # a network word, digit and all
        ("eth0. 10.1.2.3", False),  # ... at the end of a sentence
        ("IP 10.1.2.3", False),
    ],
)
def test_a_dotted_quad_after_a_word(text: str, kept: bool) -> None:
    cleaned = plain().clean(text)
    if kept:
        assert cleaned == text
    else:
        assert cleaned == text.replace(text.rsplit(maxsplit=1)[-1], "ip-1")


# ---- token and AWS rules


def test_a_disabled_rule_leaves_the_rules_after_it_running() -> None:
    assert plain(disabled_rules={"github-token"}).clean(f"a {GH} b {HF}") == (
        f"a {GH} b [REDACTED:huggingface-token]"
    )


def test_a_rejected_match_leaves_the_next_one_found() -> None:
    text = f"ghp_aaaaaaaaaaaa and {GH}"  # the first is one letter class: not a token
    assert plain().clean(text) == "ghp_aaaaaaaaaaaa and [REDACTED:github-token]"


def test_each_secret_is_counted() -> None:
    sanitizer = plain()
    assert sanitizer.clean(f"{GH} {GH2}") == "[REDACTED:github-token] [REDACTED:github-token]"
    assert sanitizer.counts["github-token"] == 2


def test_aws_secret_keys_near_an_access_key_id() -> None:
    assert plain().clean(f"{AWS_SECRET} {AKIA}") == (
        "[REDACTED:aws-secret-key] [REDACTED:aws-access-key-id]"
    )
    no_digit = AWS_SECRET.replace("7", "x")
    assert plain().clean(f"{AKIA} {no_digit}") == (
        "[REDACTED:aws-access-key-id] [REDACTED:aws-secret-key]"
    )
    sha = "0123456789abcdef0123456789abcdef01234567"  # a commit, not a key
    assert plain().clean(f"{AKIA} commit {sha}") == f"[REDACTED:aws-access-key-id] commit {sha}"
    assert plain(disabled_rules={"aws-secret-key"}).clean(f"{AKIA} {AWS_SECRET}") == (
        f"[REDACTED:aws-access-key-id] {AWS_SECRET}"
    )


def test_known_secrets_and_rules_together() -> None:
    assert knowing(V).clean(f"{V} and {GH}") == f"{KNOWN} and [REDACTED:github-token]"


# ---- learning and harvesting


def test_learnt_values_join_the_known_ones() -> None:
    sanitizer = knowing(V)
    sanitizer.learn([KnownSecret("other-Value-99", "first"), KnownSecret("other-Value-99", "2nd")])
    assert sanitizer.clean(f"{V} other-Value-99") == f"{KNOWN} {KNOWN}"
    (leak,) = final_scan(b"other-Value-99", sanitizer.index, TEXT, "f")
    assert leak.origin == "first"


def test_a_harvested_private_key_is_its_base64_not_its_armour() -> None:
    sanitizer = plain()
    sanitizer.harvest(f"key:\n{PEM}", "secrets.log")
    line = "MIIEowIBAAKCAQEA0Z3VS5JJcds3xfn/ygWyF8PbnGy0AHB7MaK1"
    assert sanitizer.clean(f"copy {line}") == f"copy {KNOWN}"
    public = "-----BEGIN RSA PUBLIC KEY-----"
    assert sanitizer.clean(public) == public


def test_every_value_of_a_harvest_is_learnt_with_its_origin() -> None:
    sanitizer = plain()
    sanitizer.harvest(f"{GH} and {HF}", "a.log")
    assert sanitizer.clean(f"cut {GH[4:20]} and {HF[3:19]}") == f"cut {KNOWN} and {KNOWN}"
    assert final_scan(GH.encode(), sanitizer.index, TEXT, "out.txt") == [
        Leak("out.txt", "github-token found in a.log", True, 1)
    ]


def test_harvested_values_from_eight_characters() -> None:
    sanitizer = plain()
    sanitizer.harvest("password: zq9Val77", "cfg")
    sanitizer.harvest("password: zq9Va77", "cfg")
    assert sanitizer.clean("login zq9Val77 or zq9Va77") == f"login {KNOWN} or zq9Va77"


_RECORDS = [
    f'{{"nodeid": "tests/test_x.py::test_login[{GH}]"}}',  # a token in a test id
    f'{{"longrepr": "AssertionError: token %67hp_{GH[4:]} refused"}}',  # URL-encoded
    f'{{"longrepr": "E   assert {HF[:20]}\\n  E   {HF[20:]} == 1"}}',  # wrapped by pytest
    '{"nodeid": "test_db[password=zq9Value77x]"}',  # a key-value in a parameter id
    '{"message": "clone https://ci-bot:Xk9pAssw0rd77@git.example.com/repo.git"}',
    '{"text": "Authorization: Bearer zq9BearerValue77"}',
]
_EXPECTED = {GH, HF, "zq9Value77x", "ci-bot:Xk9pAssw0rd77", "zq9BearerValue77"}


def _learnt(sanitizer: Sanitizer) -> set[str]:
    return {secret.value for secret in sanitizer.known}


def test_records_are_harvested_like_the_whole_text() -> None:
    """Every shape a record can hold a secret in (plain, URL-encoded, wrapped inside a JSON
    string, key-value, URL credentials, a header) is learnt from its line alone, among
    thousands of lines no rule can match, exactly as a harvest of the whole text learns it."""
    ordinary = [f'{{"nodeid": "tests/test_m.py::test_mask_{n}[a-b-{n}]"}}' for n in range(3000)]
    text = "\n".join([*ordinary[:1500], *_RECORDS, *ordinary[1500:], '{"outcome": "passed"}'])
    records, whole = plain(), plain()
    records.harvest_records(text, "events.jsonl")
    whole.harvest(text, "events.jsonl")
    assert _learnt(records) >= _EXPECTED
    assert _learnt(records) == _learnt(whole)


@pytest.mark.parametrize("record", _RECORDS)
def test_each_record_is_harvested_on_its_own(record: str) -> None:
    sanitizer = plain()
    sanitizer.harvest_records(f'{{"a": 1}}\n{record}\n{{"b": 2}}', "events.jsonl")
    learnt = _learnt(sanitizer)
    assert len(learnt & _EXPECTED) == 1, learnt


def test_a_value_holding_a_marker_is_not_learnt() -> None:
    sanitizer = plain()
    sanitizer.harvest("token=abcd-REDACTED-github-token", "names")
    name = "file x-REDACTED-github-token.log"
    assert sanitizer.clean(name) == name


def test_long_texts_and_repeated_short_ones() -> None:
    sanitizer = plain()
    long = "x" * 300 + f" {GH}"
    assert sanitizer.clean(long) == "x" * 300 + " [REDACTED:github-token]"
    for text in (f"a {GH}", f"b {GH}", f"b {GH}"):
        assert sanitizer.clean(text) == text[:2] + "[REDACTED:github-token]"
    assert sanitizer.counts["github-token"] == 4  # a remembered text counted on every use


# ---- escapes and wraps mapped back to the original


def test_hex_escapes_and_colour_codes_inside_a_value() -> None:
    sanitizer = knowing("zq9Value77xQ")
    assert sanitizer.clean('repr: "zq9\\x56alue77xQ"') == f'repr: "{KNOWN}"'
    assert sanitizer.clean("zq9Value\x1b[1m77xQ done") == f"{KNOWN} done"


def test_two_escaped_secrets_in_one_text_each_mapped_back() -> None:
    text = '{"a": "zq9\\/Value\\/77xQ", "b": "zq9\\/Value\\/77xQ"}'
    assert knowing("zq9/Value/77xQ").clean(text) == f'{{"a": "{KNOWN}", "b": "{KNOWN}"}}'


def test_every_kind_of_escape_in_one_line() -> None:
    text = 'ansi \x1b[1mbold\x1b[0m, url %41, entity &amp;, json "zq9\\/Value\\/77xQ"'
    expected = f'ansi \x1b[1mbold\x1b[0m, url %41, entity &amp;, json "{KNOWN}"'
    assert knowing("zq9/Value/77xQ").clean(text) == expected


def test_an_escaped_and_wrapped_secret_is_mapped_through_both_layers() -> None:
    text = 'msg: "zq9\\u0041Value\\n    77xQ-tail"'
    assert knowing("zq9AValue77xQ-t").clean(text) == f'msg: "{KNOWN}ail"'


def test_a_cut_json_escaped_non_ascii_secret() -> None:
    # json.dumps("пароль-секрет"), cut inside its first and last escapes.
    cut = "440\\u043e\\u043b\\u044c-\\u0441\\u0435\\u043a\\u0440\\u"
    assert knowing("пароль-секрет").clean(f'msg: "{cut}"') == f'msg: "{KNOWN}"'


@pytest.mark.parametrize(
    ("encoded", "cleaned"),
    [
        ("czNjcjN0IXg=", f"{KNOWN}g="),  # base64("s3cr3t!x")
        ("UXMzY3IzdCF4", f"UX{KNOWN}"),  # base64("Q" + it): two characters are the Q's
        ("UVFzM2NyM3QheA==", f"UVF{KNOWN}A=="),  # base64("QQ" + it)
    ],
)
def test_base64_of_a_short_secret_is_redacted_where_only_it_decides(
    encoded: str, cleaned: str
) -> None:
    assert knowing("s3cr3t!x").clean(f"auth {encoded}") == f"auth {cleaned}"


def test_a_secrets_file_line_that_is_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "secrets"
    path.write_bytes(b"pass\xffword-1\nabc1ef\n")
    secrets = read_secrets_file(path)
    assert [(s.origin, len(s.value)) for s in secrets] == [
        ("secrets file line 1", 11),
        ("secrets file line 2", 6),  # six characters: the minimum
    ]
    index = SecretIndex(secrets)
    hits = index.find("dump 70617373ff776f72642d31")  # its bytes in hex
    assert [(h.start, h.end, h.whole) for h in hits] == [(5, 27, True)]


# ---- the index


def test_an_empty_index_finds_nothing() -> None:
    assert SecretIndex([KnownSecret("tiny", "env T")]).find("tiny text") == []


def test_short_secrets_sharing_a_prefix_are_both_found() -> None:
    one, two = KnownSecret("abcdefgh", "one"), KnownSecret("abcdexyz", "two")
    index = SecretIndex([one, two])
    assert index.find("id abcdexyz") == [Hit(3, 11, two, True)]
    assert index.find("id abcdefgh") == [Hit(3, 11, one, True)]


def test_a_run_is_extended_only_within_the_text() -> None:
    secret = KnownSecret("0123456789abcdefgh", "s")
    index = SecretIndex([secret])
    assert index.find("6789abcdefgh tail 5") == [Hit(0, 12, secret, False)]
    assert index.find("xx23456789abcdefgyy") == [Hit(2, 17, secret, False)]


def test_a_run_whole_for_one_secret_is_reported_whole() -> None:
    short, longer = KnownSecret("zq9Value77xQ", "short"), KnownSecret("zq9Value77xQ-extra", "l")
    for order in ([short, longer], [longer, short]):
        assert SecretIndex(order).find("zq9Value77xQ") == [Hit(0, 12, short, True)]
    assert SecretIndex([short, longer]).find("zq9Value77xQ-extra") == [
        Hit(0, 18, longer, True),
        Hit(0, 12, short, True),
    ]  # the longest first


# ---- the final scan


def test_a_leak_and_the_reason_a_channel_is_withheld() -> None:
    assert str(Leak("public/x.log", "env A_TOKEN", False, 3)) == (
        "public/x.log line 3: a fragment of 12+ characters of a known-secret (env A_TOKEN)"
    )
    assert str(Leak("", "env A_TOKEN", True, 2)) == "line 2: known-secret (env A_TOKEN)"
    leaks = [Leak("f", f"env S{n}", True, n) for n in range(1, 12)]
    shown = "; ".join(f"f line {n}: known-secret (env S{n})" for n in range(1, 11))
    assert describe(leaks) == shown + "; and 1 more"
    assert describe(leaks[:10]) == shown


def test_channel_escapes_undone() -> None:
    assert unescape_command("a%3Ab%0Ac%25%2C") == "a:b\nc%,"
    assert strip_ansi("\x1b[31mred\x1b[0m \x1b]0;title\x07x") == "red x"
    for name in ("r.html", "r.htm", "x.xml", "i.svg"):
        assert file_channel(name) is HTML
    for name in ("r.txt", "r.json", "html"):
        assert file_channel(name) is TEXT


def test_an_entity_without_its_semicolon_is_read_as_a_browser_reads_it() -> None:
    index = SecretIndex([KnownSecret("zq9wert<Value77xyz", "env S")])
    data = b"<p>zq9wert&ltValue77xyz</p>"
    assert final_scan(data, index, file_channel("r.html"), "r.html") == [
        Leak("r.html", "env S", True, 1)
    ]
    assert final_scan(data, index, file_channel("r.txt"), "r.txt") == []


def test_leaks_are_placed_on_the_lines_of_the_original() -> None:
    secret = "zq9Value77xQ-tail-end"
    index = SecretIndex([KnownSecret(secret, "env S")])
    text = "\n\n\n\n\nx " + secret[:10] + "\n    " + secret[10:] + "\nlast " + secret
    assert final_scan(text.encode() + b"\xff", index, TEXT, "f") == [
        Leak("f", "env S", True, 6),  # wrapped over lines 6 and 7
        Leak("f", "env S", True, 8),
    ]


# --- the accidental forms (tests/test_accidental_forms.py runs them through a real run)

AZURE_KEY = (
    "q0Xf9Lk2TnW8vR3mYc6pB1sJ7hD4gZ5aE0uV9iN2oK8rF3tG6wH1yQ4cM7xL5bS2dA9eP0jU3nT6vB8zC1fR4=="
)
BUS_KEY = "Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MGFiY2RlZg=="
SAS_SIG = "k3J9%2Bq0vX8mW2nL5%3D"
AMZ_SIG = "9f86d081884c7d659a2feaa0c55ad015"


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        (
            "DefaultEndpointsProtocol=https;AccountName=ci;"
            f"AccountKey={AZURE_KEY};EndpointSuffix=core.windows.net",
            AZURE_KEY,
        ),
        (
            "Endpoint=sb://n.servicebus.windows.net/;SharedAccessKeyName=Root;"
            f"SharedAccessKey={BUS_KEY}",
            BUS_KEY,
        ),
        (f"https://a.blob.core.windows.net/c/b?sv=2022-11-02&sp=r&sig={SAS_SIG}", SAS_SIG),
        (f"GET /o?X-Amz-Credential=AKI%2F20261204&X-Amz-Signature={AMZ_SIG}", AMZ_SIG),
    ],
)
def test_connection_strings_name_their_secrets(text: str, secret: str) -> None:
    cleaned = plain().clean(text)
    assert secret not in cleaned and "[REDACTED:secret-assignment]" in cleaned


@pytest.mark.parametrize(
    "text",
    [
        "monkey=banana_split_42",  # a word that merely ends in "key"
        "hotkey: ctrl+alt+delete",
        "signaturesOK=all_verified_today",
        "design=signature-free",
    ],
)
def test_words_ending_like_a_key_are_text(text: str) -> None:
    assert plain().clean(text) == text


def test_a_value_down_a_table_column_is_redacted_where_it_stands() -> None:
    """A value too wide for its cell, wrapped onto the next rows of the same column (rich's
    box drawing; tabulate's ``|``), with other columns' cells in between."""
    value = "Vq83mZpLk20xTr7Wn5Yb6Hc1"
    sanitizer = plain()
    sanitizer.learn([KnownSecret(value, "secrets file line 1")])
    for frame in ("│", "|"):
        table = (
            f"{frame} name  {frame} {value[:8]} {frame} ok {frame}\n"
            f"{frame} other {frame} {value[8:16]} {frame}    {frame}\n"
            f"{frame}       {frame} {value[16:]} {frame}    {frame}\n"
        )
        cleaned = sanitizer.clean(table)
        assert value[:8] not in cleaned and value[16:] not in cleaned, cleaned
        assert cleaned.startswith(f"{frame} name  {frame} ")


def test_ansi_written_as_pytest_writes_it_in_junit() -> None:
    """pytest's JUnit writer replaces ESC, illegal in XML, with the text ``#x1B``."""
    value = "Vq83mZpLk20xTr7Wn5Yb6Hc1"
    sanitizer = plain()
    sanitizer.learn([KnownSecret(value, "secrets file line 1")])
    text = (
        f"E   AssertionError: #x1B[1;31m{value[:6]}#x1B[0m#x1B[32m{value[6:11]}#x1B[0m{value[11:]}"
    )
    cleaned = sanitizer.clean(text)
    assert KNOWN in cleaned and value[11:] not in cleaned


def test_a_wrapped_diff_line_is_read_through_its_marker() -> None:
    value = "Vq83mZpLk20xTr7Wn5Yb6Hc1"
    sanitizer = plain()
    sanitizer.learn([KnownSecret(value, "secrets file line 1")])
    diff = (
        f"E         + config: {value[:8]}\n"
        f"E         +         {value[8:16]}\n"
        f"E         +  {value[16:]}"
    )
    assert sanitizer.clean(diff).count(KNOWN) == 1


def test_what_is_learnt_is_the_value_not_the_next_line() -> None:
    """A header's value at a line's end: in a view without the line breaks, the next line's
    text (a traceback's location) stands glued to it; learnt with it, every location line
    would be redacted. Raw and JSON-escaped."""
    text = (
        "E   HTTPError: 401 with Authorization: Bearer abcDEF1234567xyz\n\n"
        "test_rt.py:59: RuntimeError"
    )
    for written in (text, __import__("json").dumps({"longrepr": text})):
        sanitizer = plain()
        sanitizer.harvest(written, "events.jsonl")
        assert {secret.value for secret in sanitizer.known} == {"abcDEF1234567xyz"}
        assert sanitizer.clean("test_rt.py:59: RuntimeError") == "test_rt.py:59: RuntimeError"


def test_a_connection_string_escaped_as_gson_escapes_it() -> None:
    """Java's Gson writes ``=`` as ``\\u003d``: the key's value is found in the decoded view and
    the escaped span replaced."""
    escaped = AZURE_KEY.replace("=", "\\u003d")
    text = (
        '{"conn":"DefaultEndpointsProtocol\\u003dhttps;AccountName\\u003dci;'
        f'AccountKey\\u003d{escaped};EndpointSuffix\\u003dcore.windows.net"}}'
    )
    cleaned = plain().clean(text)
    assert AZURE_KEY[:40] not in cleaned and "[REDACTED:secret-assignment]" in cleaned
