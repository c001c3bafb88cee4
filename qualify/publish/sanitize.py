"""The sanitizer: secrets redacted, identities pseudonymized, before anything is published.

Secret rules replace a match with ``[REDACTED:<rule>]``:
- ``known-secret``: every known value (:mod:`qualify.publish.secrets`: secret-named environment
  variables, ``--secret-env``, ``--secrets-file``, and values the rules below found anywhere in
  the run), in every form it may take, and any fragment of 12+ characters of one;
- token shapes (:data:`TOKEN_RULES`), matched wherever they stand in a word (``tokenghp_...``,
  glued to an ANSI colour code), cut short too (a truncated ``ghp_`` token is still one);
- key-value (``password: x``, ``"api_key": "x"``, ``Authorization: Bearer x``) and URL
  credentials (``scheme://user:password@``, ``scheme://:password@``).

Every rule runs on the text and on views of it (:mod:`qualify.publish.views`) with line breaks
removed and with URL, JSON, HTML escapes undone and ANSI codes removed; a match is mapped back
to the original span, which is replaced whole.

Identity rules replace a value by a stable pseudonym (``host-1``, ``user-1``, ``home-1``,
``ip-1``), the same value always the same pseudonym within one run:
- home directories wherever they appear (a path is always a name);
- user and host names where they stand as a name: a path component, ``user@host``, a URL's
  host, ``host:port``, a ``user=``/``hostname:`` field, a syslog line's host; anywhere only
  when the name cannot be an ordinary word (it has a digit, ``-``, ``_`` or ``.``). With
  ``USER=build``, ``build:prefill`` is kept. Generic accounts (root, runner, ubuntu, ...) are
  never pseudonymized: they identify nobody;
- internal IPs (RFC 1918, link-local 169.254/16, CGNAT 100.64/10, IPv6 ULA fc00::/7 and
  link-local fe80::/10; loopback and public addresses are kept). A dotted quad is a version,
  never an IP, when it follows a word that is not a network word (``TensorRT 10.0.1.6``),
  ``v``/``version``/``==``/``-``, or is followed by ``.digit``, ``-``, ``+`` or a letter.
"""

from __future__ import annotations

import bisect
import collections
import contextlib
import functools
import itertools
import os
import pwd
import re
import socket
import string
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from qualify.publish import views
from qualify.publish.secrets import (
    MIN_HARVESTED_LENGTH,
    KnownSecret,
    SecretIndex,
    from_environment,
)
from qualify.records import frozen_record

GENERIC_USERS = frozenset(
    {
        "root", "nobody", "runner", "ubuntu", "debian", "admin", "user", "build", "builder",
        "ci", "docker", "jenkins", "gitlab-runner", "buildkite-agent", "circleci", "ec2-user",
        "vagrant", "github", "actions", "worker", "app", "test",
    }
)  # fmt: skip
GENERIC_HOSTS = frozenset(
    {"localhost", "localhost.localdomain", "localdomain", "ip6-localhost", "ip6-loopback"}
)
_NOT_MARKER = r"(?!\[?REDACTED)"


@frozen_record
class Rule:
    """A secret shape: the match (its ``secret`` group when it has one) is the secret."""

    pattern: re.Pattern[str]
    classes: int = 0
    """How many of upper case, lower case and digits the secret must mix (0: any): a cut
    token must still look random, ``hf_transfer`` is a package."""
    lower: bool = False
    """Matched on the text with A-Z lowered (same positions): case-insensitive words without
    the cost of ``re.IGNORECASE`` on megabytes."""
    accept: Callable[[str, re.Match[str]], bool] | None = None
    """A check on the original text around the match."""

    def secret(self, match: re.Match[str], text: str) -> tuple[int, int] | None:
        """The secret's span in ``text`` (the original; ``match`` may be on its lowered copy),
        or None when the match is not one."""
        for group in ("secret", "quoted", "single"):
            if group in self.pattern.groupindex and match.group(group) is not None:
                start, end = match.span(group)
                break
        else:
            start, end = match.span()
        if self.classes and _classes(text[start:end]) < self.classes:
            return None
        if self.accept is not None and not self.accept(text, match):
            return None
        return start, end


_LOWER = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)


def _lowered(text: str) -> str:
    """``text`` with its ASCII capitals lowered (no other character changed): ``str.lower`` for
    an ASCII text, the same characters several times faster than ``translate``, which pays a
    table's set-up at every call."""
    return text.lower() if text.isascii() else text.translate(_LOWER)


_KEY_PREFIXES = ("api", "access", "secret", "private", "client", "ssh", "signing", "encryption")
_TOKEN_PREFIXES = (
    "access", "auth", "api", "refresh", "id", "bearer", "oauth", "session", "csrf", "bot",
    "app", "job", "deploy", "personal_access", "personal-access",
)  # fmt: skip
_NOT_SECRET_TOKENS = ("eos_", "bos_", "pad_", "unk_", "sep_", "cls_", "mask_", "num_")
"""A tokenizer's special tokens and counts (``EOS_TOKEN = '</s>'``, ``NUM_TOKEN=4096``)."""


def _key_accepted(text: str, match: re.Match[str]) -> bool:
    """Whether the key word of a ``key: value`` match names a secret in its context: ``key``
    only as ``api_key``, ``private-key``...; ``token`` as a word of its own, after an auth word
    or in an upper-case variable name (``CI_JOB_TOKEN``), not ``native_token`` nor a tokenizer's
    ``EOS_TOKEN``; the prefix is looked for in the 20 characters before the key; ``pass`` not
    inside a word (``bypass``); ``pwd`` only as ``MYSQL_PWD`` (``PWD`` is the directory)."""
    word, start = match.group("word"), match.start("word")
    before = _lowered(text[max(0, start - 20) : start])
    bare = before.rstrip("-_")
    if word == "key":
        return bare.endswith(_KEY_PREFIXES) or _compound_key(text, start)
    if word == "sig":
        return not before or before[-1] in "?&;"
    if word == "signature":
        return not before or not before[-1].isalpha() or _compound_key(text, start)
    if word == "token":
        if before.endswith(_NOT_SECRET_TOKENS):
            return False
        if not before or not (before[-1].isalnum() or before[-1] == "_"):
            return True
        if bare.endswith(_TOKEN_PREFIXES):  # glued (authtoken) or after "-"/"_" (auth_token)
            return True
        return text[start : start + 5] == "TOKEN" and text[start - 1] == "_"
    if word == "pass":
        return not before or not before[-1].isalpha()
    if word == "pwd":
        return before.endswith(("-", "_", "."))
    return True


def _compound_key(text: str, start: int) -> bool:
    """A capitalized key word closing a compound name, the way connection strings and
    configuration keys name their secrets (``AccountKey``, ``SharedAccessKey``, ``MasterKey``,
    ``X-Amz-Signature``): not a word that merely ends so (``monkey``, ``hotkey``)."""
    return text[start : start + 1].isupper() and start > 0 and text[start - 1].isalpha()


def _classes(value: str) -> int:
    return sum(
        any(test(char) for char in value) for test in (str.isupper, str.islower, str.isdigit)
    )


_KEY = (
    r"(?P<word>key|secret|token|passw(?:or)?d|passphrase|pass|pwd|credentials?|cookie|dsn"
    r"|signature|sig)"
)
"""The key words of ``key: value``, ``key=value``, ``"key": "value"``, matched on the lowered
text; the context decides (:func:`_key_accepted`): ``native_token: Hello`` is text."""
_VALUE = (
    r"(?:\"(?P<quoted>" + _NOT_MARKER + r"[^\"\n]{4,})\"|'(?P<single>" + _NOT_MARKER
    + r"[^'\n]{4,})'|(?P<secret>" + _NOT_MARKER + r"[^\s\"'<>,;\[\]{}()]{4,}))"
)  # fmt: skip
_PEM_BREAK = r"(?:\s|\\[nr]|&#1[03];|&#x[aAdD];)+(?:E\s+)?(?:[+-]\s+)?"


@functools.cache
def _base64_run() -> re.Pattern[str]:
    return re.compile(r"[A-Za-z0-9+/=]{16,}")


TOKEN_RULES: dict[str, Rule] = {
    # Fixed-length shapes are capped at their length: a whole token at the end of a line is not
    # continued onto the next line's first word in the view without line breaks.
    "github-token": Rule(re.compile(r"gh[pousr]_[A-Za-z0-9]{10,36}"), classes=2),
    "github-pat": Rule(re.compile(r"github_pat_[A-Za-z0-9_]{12,82}"), classes=2),
    "huggingface-token": Rule(re.compile(r"hf_[A-Za-z0-9]{10,34}"), classes=2),
    "gitlab-token": Rule(re.compile(r"gl(?:pat|dt|rt|ptt|cbt|ft|oas)-[A-Za-z0-9_-]{10,}")),
    "slack-token": Rule(
        re.compile(r"xox[abposre]-[A-Za-z0-9-]{10,}|xapp-\d-[A-Za-z0-9-]{10,}"), classes=1
    ),
    "slack-webhook": Rule(re.compile(r"hooks\.slack\.com/services/[A-Za-z0-9/_-]{10,}")),
    "openai-key": Rule(
        re.compile(r"sk-(?:proj-|ant-(?:api\d\d-)?|svcacct-|admin-)?[A-Za-z0-9_-]{20,}"),
        classes=3,
    ),
    "stripe-key": Rule(re.compile(r"[sr]k_(?:live|test)_[A-Za-z0-9]{16,}")),
    "google-api-key": Rule(re.compile(r"AIza[A-Za-z0-9_-]{30,}")),
    "npm-token": Rule(re.compile(r"npm_[A-Za-z0-9]{30,36}"), classes=2),
    "pypi-token": Rule(re.compile(r"pypi-AgE[A-Za-z0-9_-]{20,}")),
    "docker-pat": Rule(re.compile(r"dckr_pat_[A-Za-z0-9_-]{16,}")),
    "aws-access-key-id": Rule(
        re.compile(r"(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[A-Z0-9]{16}(?![A-Z0-9])")
    ),
    "jwt": Rule(re.compile(r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}(?:\.[A-Za-z0-9_-]*)?")),
    # The armour, then lines of base64 (wrapped, escaped, prefixed by pytest's "E" and diff
    # "+"/"-" markers), then the END armour when the text was not cut before it.
    "private-key": Rule(
        re.compile(
            r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----(?:"
            + _PEM_BREAK
            + r"[A-Za-z0-9+/=]{8,})*(?:"
            + _PEM_BREAK
            + r"-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----)?"
        )
    ),
    "auth-header": Rule(
        re.compile(
            r"(?:authorization|x-api-key|api-key|x-auth-token|private-token|x-access-token|"
            r"cookie)[\"']?\s*[:=]\s*[\"']?\s*"
            r"(?:(?:bearer|basic|token|digest|negotiate)\s+)?(?P<secret>"
            + _NOT_MARKER.replace("REDACTED", "redacted")
            + r"(?!(?:bearer|basic|token|digest|negotiate)\b)[^\s\"'<>,;\[]{6,})"
        ),
        lower=True,
    ),
    "bearer-token": Rule(
        re.compile(
            r"bearer\s+(?P<secret>"
            + _NOT_MARKER.replace("REDACTED", "redacted")
            + r"[a-z0-9._~+/-]{8,}=*)"
        ),
        classes=2,
        lower=True,
    ),
    "url-credentials": Rule(
        re.compile(r"(?<=://)" + _NOT_MARKER + r"[^\s/:@<>\"'\[]*:[^\s/@<>\"']+(?=@)")
    ),
    "secret-assignment": Rule(
        re.compile(_KEY + r"[\"']?\s*(?:=>|:=|[:=])\s*" + _VALUE.replace("REDACTED", "redacted")),
        lower=True,
        accept=_key_accepted,
    ),
}
_KEY_WORDS = ("key", "secret", "token", "pass", "pwd", "credentials?", "dsn", "sig(?:nature)?")
_TRIGGER_PARTS = (
    *("gh[pousr]_", "github_pat_", "hf_", "gl[a-z]{1,3}-", "xox", "xapp-", r"hooks\.slack"),
    *("sk-[a-z0-9_-]{20}", "sk_(?:live|test)_", "rk_(?:live|test)_", "aiza", "npm_", "pypi-"),
    *("dckr_", "a[a-z]{2}a[a-z0-9]{16}", "eyj", "-----begin", "authoriz", "api-key", "x-a"),
    *("private-token", "cookie", "bearer", "://", "passw", "passphrase"),
    *(word + r"s?[\"']?\s*(?:=>|:=|[:=])" for word in _KEY_WORDS),
)


class _Trigger:
    """A necessary condition of every rule above, on the lowered text (``tests/test_sanitize.py``
    holds an example of every rule that must be found behind it).

    Searched as separate patterns, each starting with a literal, which the regular expression
    engine finds with a string search: one alternation of them all is tried at every position
    of the text, four times slower on a 400 KB JUnit file."""

    def __init__(self, parts: Sequence[str]):
        self.parts = tuple(re.compile(part) for part in parts)
        self._prefixes = tuple((literal_prefix(part.pattern), part) for part in self.parts)

    def present(self, lowered: str) -> list[re.Pattern[str]]:
        """The parts that may match in ``lowered``, in order: those whose literal start it holds
        (a string search, several times faster than the expression's own scan for it)."""
        return [part for prefix, part in self._prefixes if prefix in lowered]

    def search(self, lowered: str) -> re.Match[str] | None:
        """A match of any part (not necessarily the first in the text), or None."""
        for part in self.present(lowered):
            match = part.search(lowered)
            if match is not None:
                return match
        return None

    def finditer(self, lowered: str) -> Iterator[re.Match[str]]:
        """Every match of every part, part after part."""
        for part in self.present(lowered):
            yield from part.finditer(lowered)


def literal_prefix(pattern: str) -> str:
    """The characters every match of ``pattern`` starts with: its leading plain characters,
    up to the first special one, less the last when a quantifier follows it ("" when the
    pattern has an alternative of its own, outside any group)."""
    index, depth = 0, 0
    while index < len(pattern):
        char = pattern[index]
        if char == "\\":
            index += 1  # (an escaped character stands for itself)
        elif char == "[":  # a class, to its closing bracket (a "]" first in it is a member)
            index += 2 if pattern.startswith("[^", index) else 1
            index += 1 if pattern.startswith("]", index) else 0
            while index < len(pattern) and pattern[index] != "]":
                index += 2 if pattern[index] == "\\" else 1
        elif char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        elif char == "|" and depth == 0:
            return ""
        index += 1
    prefix = ""
    for char in pattern:
        if char in "*+?{":
            return prefix[:-1]
        if char in ".^$[]()|\\}":
            return prefix
        prefix += char
    return prefix


_TRIGGER = _Trigger(_TRIGGER_PARTS)
PSEUDONYM_RULES = {
    "home": "home-dir",
    "user": "user-name",
    "host": "host-name",
    "ip": "internal-ip",
}
"""Pseudonym prefix -> rule name."""
RULES = ("known-secret", *TOKEN_RULES, "aws-secret-key", *PSEUDONYM_RULES.values())
"""Every rule name (what ``disabled_rules`` and the per-rule counts use)."""


@functools.cache
def _aws_secret() -> re.Pattern[str]:
    return re.compile(r"(?<![A-Za-z0-9/+])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])")


_AWS_WINDOW = 200
_MEMO_LENGTH = 256
_CONTEXT_RULES = frozenset({"secret-assignment", "auth-header", "bearer-token"})
_OPEN_ENDED = _CONTEXT_RULES | {"url-credentials"}
"""Rules whose value ends where the text's characters change, not where a shape ends."""


@functools.cache
def _code_like() -> re.Pattern[str]:
    """A value a key-value rule found but that reads like code (``password=os.environ``, a
    constant's name): redacted where it stands, not learnt as a value to redact everywhere."""
    return re.compile(r"[a-z_][a-z_.]*(?:\(\))?|[A-Z_][A-Z_.]*")


# Not preceded by a word character or a dot (a colon for IPv6), asserted after the first
# character rather than before it: a pattern that starts with a lookbehind is tried at every
# position of the text, one that starts with a character class only where that class matches
# (twice as fast on a large JUnit file). ``tests/test_sanitize.py`` checks both spellings find
# the same addresses.
_IPV4 = re.compile(r"(\d(?<![\w.]\d)\d{0,2})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})(?![\w+-]|\.\d)")
_IPV6 = re.compile(r"f(?<![\w:]f)[cde][0-9a-f]{2}:[0-9a-f:]*[0-9a-f](?![\w:])", re.IGNORECASE)


@functools.cache
def _version_before() -> re.Pattern[str]:
    return re.compile(
        r"(?i)(?:(?:\b(?:v|version|ver|release|rev|build)|==|>=|<=|~=|!=)\s*[:=]?\s*|@v|[A-Za-z][-_])$"
    )


@functools.cache
def _word_before() -> re.Pattern[str]:
    """The word before a dotted quad, without the dots that end a sentence (``eth0. 10.0.0.1``)."""
    return re.compile(r"([A-Za-z][\w.+]*?)\.*[ \t]+$")


PRODUCT_WORDS = frozenset(
    {"tensorrt", "trt", "cuda", "cudnn", "cublas", "nccl", "driver", "libnvinfer", "torch",
     "python", "onnxruntime", "openvino", "rocm", "triton", "vllm", "jetpack", "firmware"}
)  # fmt: skip
"""Lower-case names whose version a ``10.x.y.z`` after them is (``tensorrt 10.0.1.6``)."""
NETWORK_WORDS = frozenset(
    {
        "to", "from", "at", "host", "hostname", "addr", "address", "ip", "ipv4", "inet", "peer",
        "server", "client", "node", "via", "on", "gateway", "gw", "dns", "nameserver", "src",
        "dst", "remote", "local", "connect", "connecting", "connected", "listen", "listening",
        "bind", "bound", "resolved", "resolves", "is", "of", "by", "and", "or", "with", "for",
        "in", "as", "master", "worker", "rank", "endpoint", "proxy", "route", "subnet", "net",
        "network", "socket", "using", "interface", "eth0", "nic", "ping", "reach", "reaching",
        "unreachable", "refused", "timeout", "timed", "out",
    }
)  # fmt: skip
"""A dotted quad after one of these words is an address; after any other word, a version."""
_INTERNAL_V4 = ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "169.254.0.0/16", "100.64.0.0/10")
_INTERNAL_V6 = ("fc00::/7", "fe80::/10")


@functools.cache
def _internal_networks(version: int) -> list[Any]:
    """The internal networks of an IP ``version``, made at the first address a text holds
    (``ipaddress`` is imported then: most runs' texts hold none)."""
    import ipaddress

    return [ipaddress.ip_network(net) for net in (_INTERNAL_V4 if version == 4 else _INTERNAL_V6)]


_FQDN: dict[str, str] = {}


def fully_qualified(hostname: str) -> str:
    """``socket.getfqdn()`` for this machine's ``hostname``, looked up once per process and
    name: the lookup goes to the resolver (milliseconds; seconds where DNS is slow), so
    ``qualify run`` makes it while the E2E runs."""
    if hostname not in _FQDN:
        _FQDN[hostname] = socket.getfqdn()
    return _FQDN[hostname]


@frozen_record
class Identities:
    """Values replaced by pseudonyms: this machine's names, its users and their homes."""

    hostnames: frozenset[str] = frozenset()
    users: frozenset[str] = frozenset()
    homes: frozenset[str] = frozenset()

    HOSTNAME_FILE = Path("/etc/hostname")

    @classmethod
    def current(cls, environ: Mapping[str, str]) -> Identities:
        """Read from this machine: hostname, /etc/hostname, FQDN, uid's passwd entry, env."""
        hostname = socket.gethostname()
        hosts = {hostname, fully_qualified(hostname)}
        with contextlib.suppress(OSError):
            hosts.add(cls.HOSTNAME_FILE.read_bytes().decode().strip())
        hosts |= {host.split(".")[0] for host in hosts}
        users = {environ.get("USER", ""), environ.get("LOGNAME", "")}
        homes = {environ.get("HOME", "")}
        try:
            entry = pwd.getpwuid(os.getuid())
            users.add(entry.pw_name)
            homes.add(entry.pw_dir)
        except KeyError:
            pass
        return cls(
            hostnames=frozenset(h for h in hosts if len(h) >= 3 and h.lower() not in GENERIC_HOSTS),
            users=frozenset(u for u in users if len(u) >= 3 and u not in GENERIC_USERS),
            homes=frozenset(h.rstrip("/") for h in homes if len(h.rstrip("/")) >= 2),
        )


def _alternation(values: Iterable[str]) -> str | None:
    ordered = sorted(set(values), reverse=True)  # a name before its own prefixes
    return "|".join(re.escape(value) for value in ordered) or None


def _homes_pattern(homes: Collection[str]) -> re.Pattern[str] | None:
    """A home directory where it stands as a path of its own (not inside a longer name). The
    usual absolute homes share their first character, and the boundary is asserted after it
    (the engine then searches for the ``/``; see ``_IPV4``)."""
    if homes and all(home.startswith("/") and len(home) > 1 for home in homes):
        rests = _alternation(home[1:] for home in homes)
        return re.compile(rf"(/(?<![\w.-]/)(?:{rests}))(?![\w-])")
    alternation = _alternation(homes)
    return re.compile(rf"(?<![\w.-])({alternation})(?![\w-])") if alternation else None


def _word_like(value: str) -> bool:
    """A name that could be an ordinary word (``build``, ``alice``): pseudonymized only where it
    stands as a name."""
    return value.isalpha()


def _name_patterns(kind: str, names: Collection[str]) -> list[re.Pattern[str]]:
    """Patterns whose group 1 is one of ``names`` standing as a name."""
    anywhere = _alternation(name for name in names if not _word_like(name))
    words = _alternation(name for name in names if _word_like(name))
    found = []
    flags = re.IGNORECASE if kind == "host" else 0
    if anywhere:
        found.append(re.compile(rf"(?<![\w.-])({anywhere})(?![\w-])", flags))
    if not words:
        return found
    group = f"({words})"
    name = group + r"(?![\w-])"
    positions = [rf"(?<=/){name}", rf"(?<![\w.-]){group}(?=@[\w-])"]
    if kind == "user":
        positions += [
            rf"(?<=~){name}",
            r"(?i:\b(?:user(?:name)?|login|logname|owner|account)[\"']?\s*[:=]\s*[\"']?)" + name,
        ]
    else:
        positions += [
            rf"(?<=@){name}",
            rf"(?<=//){name}",
            rf"(?<![\w.-]){group}(?=:\d)",
            r"(?i:\b(?:host(?:name)?|node(?:name)?|server|machine)[\"']?\s*[:=]\s*[\"']?)" + name,
            r"(?m:^(?:[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d|\d{4}-\d\d-\d\dT\S+) )" + name,
        ]
    found += [re.compile(position, flags) for position in positions]
    return found


def _merge(spans: list[tuple[int, int, str]]) -> list[tuple[int, int, str]]:
    merged: list[tuple[int, int, str]] = []
    for start, end, rule in sorted(spans):
        if merged and start <= merged[-1][1]:
            previous = merged[-1]
            merged[-1] = (previous[0], max(previous[1], end), previous[2])
        else:
            merged.append((start, end, rule))
    return merged


class Sanitizer:
    """Redacts secrets and pseudonymizes identities; counts what each rule did.

    ``environ``: whose secret-named variables (and ``secret_env``) are known secrets.
    ``known``: more values (a secrets file; what an earlier pass found).
    ``disabled_rules``: rules skipped while redacting (tests force a leak with it); values are
    still learnt by every rule, so the final scan knows what a disabled rule let through.
    """

    def __init__(
        self,
        environ: Mapping[str, str],
        identities: Identities,
        *,
        known: Iterable[KnownSecret] = (),
        secret_env: Iterable[str] = (),
        disabled_rules: Collection[str] = (),
        pseudonyms: Mapping[str, str] | None = None,
    ):
        self.disabled = frozenset(disabled_rules)
        self.known: list[KnownSecret] = [*from_environment(environ, secret_env), *known]
        self._index: SecretIndex | None = None
        self._names = {
            kind: _name_patterns(kind, values)
            for kind, values in (("user", identities.users), ("host", identities.hostnames))
        }
        self._homes = _homes_pattern(identities.homes)
        names = _alternation([*identities.homes, *identities.users, *identities.hostnames])
        # A necessary condition of every identity rule: a name, or something like an address.
        self._identity_trigger = re.compile(
            rf"\d\.\d|:|{names}" if names else r"\d\.\d|:", re.IGNORECASE
        )
        # Narrower necessary conditions, one pattern each (``kept_among``): a name, a dotted
        # quad (``_IPV4``'s four numbers, the first's last digit and the last's first), an
        # internal IPv6 address's first group.
        self._identity_needles = (
            re.compile(r"\d\.\d{1,3}\.\d{1,3}\.\d"),
            re.compile(r"f[cde][0-9a-f]{2}:", re.IGNORECASE),
            *([re.compile(names, re.IGNORECASE)] if names else []),
        )
        self.pseudonyms: dict[str, str] = dict(pseudonyms or {})
        """value -> pseudonym; private: written to the run's pseudonym map, never published."""
        self.counts: collections.Counter[str] = collections.Counter()
        self._memo: dict[str, tuple[str, collections.Counter[str] | None]] = {}
        self._secret_keys: dict[str, bool] = {}
        self._kept: set[str] = set()
        """Texts that cleaning leaves as they are, as a key or as a value (``keeps``)."""
        self._quiet: set[str] = set()
        """Texts that no necessary condition of the rules touches (``quiet_among``): what each
        text is alone, whatever is learnt (unlike ``_kept``, never forgotten)."""

    # --- known secrets

    @property
    def index(self) -> SecretIndex:
        """Every known secret, ready to find (rebuilt after :meth:`learn`)."""
        if self._index is None:
            self._index = SecretIndex(self.known)
        return self._index

    def learn(self, secrets: Iterable[KnownSecret]) -> None:
        """Add known values (found elsewhere in the run); a value already known is kept with
        its first origin."""
        values = {secret.value for secret in self.known}
        added: dict[str, KnownSecret] = {}
        for secret in secrets:
            if secret.value not in values:
                added.setdefault(secret.value, secret)
        if added:
            self.known += added.values()
            self._index = None
            self._memo.clear()
            self._kept.clear()

    def harvest(self, text: str, where: str) -> None:
        """Learn every value a token, key-value or URL-credential rule finds in ``text`` (every
        rule, disabled or not), so that a cut or re-encoded copy elsewhere is caught too. What
        is learnt is a value, never the text around it: a value with no shape of its own (a
        key's, a header's, a URL's password) is learnt as one line holds it, since in a view
        that joins lines it would take the next line's text with it (``test_rt.py:59:``), and
        every location line would then be redacted; a token's shape ends it (``hf_`` and 34
        characters), so a wrapped token is learnt whole."""
        found = []
        for view_text, view in views.views(text):
            joined = view is not None and view.joins_lines
            for rule, start, end in self._rule_spans(view_text, every_rule=True):
                if joined and rule in _OPEN_ENDED:
                    continue
                value = view_text[start:end].strip()
                if rule != "private-key":  # a value, never the next line's text glued to it
                    value = views.LINE_END.split(value, maxsplit=1)[0].strip()
                # A key's value is its base64 lines, not its armour or the text's line breaks.
                pieces = _base64_run().findall(value) if rule == "private-key" else [value]
                found += [
                    KnownSecret(piece, f"{rule} found in {where}")
                    for piece in pieces
                    if len(piece) >= MIN_HARVESTED_LENGTH
                    and "REDACTED" not in piece
                    and (rule not in _CONTEXT_RULES or not _code_like().fullmatch(piece))
                ]
        self.learn(found)

    def harvest_records(self, text: str, where: str) -> None:
        """:meth:`harvest` of each line of ``text`` on its own: lines that are records (the
        distinct fields of a JSON-lines file), where a value never continues on the next line
        and neighbouring lines are unrelated. Only the lines a rule could match in are read:
        those a trigger touches, and those where an escape may start (a decoded view may show
        a trigger); on the others every view is the line itself and no rule can match (every
        rule needs its trigger)."""
        lines = text.split("\n")
        ends = list(itertools.accumulate(len(line) + 1 for line in lines))
        marked: set[int] = set()
        for pattern, haystack in ((_TRIGGER, _lowered(text)), (views.ESCAPE_START, text)):
            for match in pattern.finditer(haystack):
                first = bisect.bisect_right(ends, match.start())
                last = bisect.bisect_right(ends, max(match.start(), match.end() - 1))
                marked.update(range(first, last + 1))
        for index in sorted(marked):
            self.harvest(lines[index], where)

    # --- redaction

    def _enabled(self, rule: str) -> bool:
        return rule not in self.disabled

    def _rule_spans(self, text: str, every_rule: bool = False) -> list[tuple[str, int, int]]:
        found: list[tuple[str, int, int]] = []
        lowered = _lowered(text)
        if not _TRIGGER.search(lowered):
            return found  # no rule could match: one search instead of one per rule
        for name, rule in TOKEN_RULES.items():
            if not every_rule and not self._enabled(name):
                continue
            for match in rule.pattern.finditer(lowered if rule.lower else text):
                span = rule.secret(match, text)
                if span is None:
                    continue
                found.append((name, *span))
                if name == "aws-access-key-id" and (every_rule or self._enabled("aws-secret-key")):
                    found += self._aws_secrets(text, match.start(), match.end())
        return found

    def _aws_secrets(self, text: str, start: int, end: int) -> list[tuple[str, int, int]]:
        """40-character AWS secret keys near an access key id (mixed case: not a git SHA)."""
        window = max(0, start - _AWS_WINDOW)
        spans = []
        for match in _aws_secret().finditer(text[window : end + _AWS_WINDOW]):
            if _classes(match.group()) >= 2 and any(c.isupper() for c in match.group()):
                spans.append(("aws-secret-key", window + match.start(), window + match.end()))
        return spans

    def secret_spans(self, text: str) -> list[tuple[int, int, str]]:
        """(start, end, rule) of every secret in ``text``, found in the text or in a view of it
        (wrapped, escaped, coloured) and mapped back to the original."""
        spans: list[tuple[int, int, str]] = []
        check_known = self._enabled("known-secret") and bool(self.index)
        for view_text, view in views.views(text):
            found = self._rule_spans(view_text)
            if check_known:
                found += [
                    ("known-secret", hit.start, hit.end) for hit in self.index.find(view_text)
                ]
            for rule, view_start, view_end in found:
                start, end = view.span(view_start, view_end) if view else (view_start, view_end)
                spans.append((start, end, rule))
        return spans

    def redact(self, text: str, marker: str = "[REDACTED:{rule}]") -> str:
        """``text`` with every secret span replaced by ``marker``."""
        spans = _merge(self.secret_spans(text))
        if not spans:
            return text
        out, position = [], 0
        for start, end, rule in spans:
            self.counts[rule] += 1
            out += [text[position:start], marker.format(rule=rule)]
            position = end
        out.append(text[position:])
        return "".join(out)

    # --- identities

    def _pseudonym(self, kind: str, value: str) -> str:
        key = value.lower() if kind == "host" else value
        if key not in self.pseudonyms:
            used = sum(p.startswith(f"{kind}-") for p in self.pseudonyms.values())
            self.pseudonyms[key] = f"{kind}-{used + 1}"
        self.counts[PSEUDONYM_RULES[kind]] += 1
        return self.pseudonyms[key]

    def _replace_names(self, kind: str, text: str) -> str:
        if not self._enabled(PSEUDONYM_RULES[kind]):
            return text
        patterns = self._names[kind] if kind != "home" else [self._homes] if self._homes else []
        for pattern in patterns:
            text = pattern.sub(lambda m: self._swap(m, kind), text)
        return text

    def _swap(self, match: re.Match[str], kind: str) -> str:
        # Every name pattern ends with its name (only lookarounds after it); what stands before
        # it in the match (``user=``, a syslog line's date) is kept.
        kept = match.group()[: match.start(1) - match.start()]
        return kept + self._pseudonym(kind, match.group(1))

    def _ip(self, match: re.Match[str]) -> str:
        value = match.group()
        if "." in value and self._is_version(match):
            return value
        import ipaddress

        try:
            address = ipaddress.ip_address(value)
        except ValueError:
            return value
        if any(address in network for network in _internal_networks(address.version)):
            return self._pseudonym("ip", value.lower())
        return value

    @staticmethod
    def _is_version(match: re.Match[str]) -> bool:
        """A dotted quad that is a version: after ``v``, ``version``, ``==``, glued to a name
        (``TensorRT-10.0.1.6``); or a 10.x.y.z after a product's name (``TensorRT 10.0.1.6``:
        a word with a capital inside or a digit, or a known lower-case name), never after a
        network word (``connect to 10.0.0.1``) or an ordinary one (``then 10.2.3.4``)."""
        text = match.string
        before = text[max(0, match.start() - 40) : match.start()].rpartition("\n")[2]
        if _version_before().search(before):
            return True
        word = _word_before().search(before)
        if word is None or match.group(1) != "10":
            return False
        name = word.group(1)
        if name.lower() in NETWORK_WORDS:
            return False
        return (
            any(char.isupper() for char in name[1:])
            or any(char.isdigit() for char in name)
            or name.lower() in PRODUCT_WORDS
        )

    def pseudonymize(self, text: str) -> str:
        """Homes, user and host names (where they stand as names) and internal IPs replaced by
        stable pseudonyms."""
        if not self._identity_trigger.search(text):
            return text
        for kind in ("home", "user", "host"):
            text = self._replace_names(kind, text)
        if self._enabled("internal-ip"):
            for pattern in (_IPV4, _IPV6):
                text = pattern.sub(self._ip, text)
        return text

    # --- entry points

    def clean(self, text: str) -> str:
        """Secrets redacted, then identities pseudonymized.

        Short texts are remembered (a JSON-lines file repeats its event kinds, phase and test
        names thousands of times); what a rule did to one is counted again on every use.
        """
        if len(text) > _MEMO_LENGTH:
            return self.pseudonymize(self.redact(text))
        remembered = self._memo.get(text)
        if remembered is None:
            if text in self._kept:
                return text  # (found kept: nothing to replace, nothing to count)
            before = dict(self.counts)
            cleaned = self.pseudonymize(self.redact(text))
            # (most texts change no count: nothing to copy, nothing to add on each reuse)
            done = self.counts - collections.Counter(before) if self.counts != before else None
            remembered = (cleaned, done)
            self._memo[text] = remembered
        elif remembered[1]:
            self.counts.update(remembered[1])
        return remembered[0]

    def clean_quoted(self, text: str) -> str:
        """``clean(text)``, found unchanged without reading the whole text again where its
        pieces between double quotes (an XML file's attribute values, its markup) say so: every
        piece that a necessary condition of the rules touches (``quiet_among``: most values are
        quiet) searched alone for the trigger, as it stands and collapsed.

        Why that suffices: no view but the text and its collapsed view (no escape's start, no
        table's frame), no known secret, no name or address (the identity rules' conditions,
        ``_identity_needles``, over the whole text); no break (``views.BREAK``) and no part of
        the trigger matches a double quote but in a key word's optional quote before
        ``\\s*`` and an assignment, so a match that runs across a quote needs a piece after one
        that starts with an assignment, which sends the text to ``clean``, as any doubt does."""
        if (
            len(text) <= _MEMO_LENGTH
            or (self._enabled("known-secret") and bool(self.index))
            or any(start in text for start in views.ESCAPE_STARTS)
            or any(frame in text for frame in views.TABLE_FRAMES)
            or self._may_name(text)
        ):
            return self.clean(text)
        pieces = list(dict.fromkeys(text.split('"')))
        quiet = self.quiet_among(pieces)
        for piece in pieces:
            if piece in quiet:
                if _ASSIGNED.match(piece):
                    return self.clean(text)
                continue
            flat = views.collapsed(piece).text
            for shown in (piece, flat):
                if _ASSIGNED.match(shown) or _TRIGGER.search(_lowered(shown)):
                    return self.clean(text)
        return text

    def _may_name(self, text: str) -> bool:
        """Whether an identity rule's condition (``_identity_needles``) may match in ``text``,
        each asked the cheap way: a dotted quad's three dots (a string search starts it), an
        internal IPv6 group before each colon, a name."""
        if _DOTS.search(text):
            return True
        group, *names = self._identity_needles[1:]
        position = text.find(":", 4)
        while position >= 0:
            if group.match(text, position - 4):
                return True
            position = text.find(":", position + 1)
        return any(needle.search(text) for needle in names)

    def keeps(self, texts: Iterable[str]) -> bool:
        """Whether cleaning leaves every one of ``texts`` as it is and counts nothing, whether
        it stands as a JSON key or as a value (no key that names a secret). What a text is
        found to be is remembered (short texts, as ``clean`` remembers them); a text that
        cleaning would change is left for ``clean`` to count when it is cleaned."""
        kept = self._kept
        if kept.issuperset(texts):
            return True
        for text in texts:
            if text in kept:
                continue
            if len(text) > _MEMO_LENGTH or len(kept) >= _MEMO_KEPT or _secret_key(text):
                return False
            counts = self.counts.copy()
            if self.clean(text) != text or self.counts != counts:
                # (remembered with what it counts: ``clean`` counts it again when it is used)
                self.counts.clear()
                self.counts.update(counts)
                return False
            kept.add(text)
        return True

    def kept_among(self, texts: Sequence[str]) -> set[str]:
        """The ``texts`` that ``keeps`` would find kept, found together: one search of each
        necessary condition over all of them (joined by ``_SEPARATOR``) instead of every rule
        over each. A text that no condition touches is kept without being cleaned; the others
        are each asked of ``keeps``.

        The conditions: a rule's trigger (``_TRIGGER``) and a secret key's word, on the lowered
        text; where an escape or a line break may be (a text without either is its only view,
        :func:`qualify.publish.views.views`); a chunk of a known secret (``SecretIndex``); a
        name, a dotted quad or an internal IPv6 group (every identity rule needs one). None of
        them holds an anchor or a lookaround (``tests/test_sanitize.py``), so each finds in
        the joined text every match it finds in one text alone; a match that runs across a
        separator touches the texts on both sides."""
        kept = self._kept
        fresh = [text for text in dict.fromkeys(texts) if text not in kept]
        if not fresh:
            return set(texts)
        touched: set[int] = set()
        start = size = 0
        for end, text in enumerate(fresh, 1):  # batches of about _JOINED_BYTES (bounded memory)
            size += len(text) + 1
            if size >= _JOINED_BYTES or end == len(fresh):
                touched.update(start + index for index in self._touched(fresh[start:end]))
                start, size = end, 0
        found = set(texts).difference(fresh)
        for number, text in enumerate(fresh):
            if number in touched:
                if self.keeps((text,)):
                    found.add(text)
                continue
            found.add(text)
            if len(text) <= _MEMO_LENGTH and len(kept) < _MEMO_KEPT:
                kept.add(text)
        return found

    def _touched(self, texts: Sequence[str]) -> set[int]:
        """The indices of ``texts`` that some necessary condition of a change touches: the
        rules' (``_rule_touched``) asked only of the texts not already found quiet, the run's
        own (a name, an address, a known secret's chunk) of them all."""
        quiet = self._quiet
        loud = [number for number, text in enumerate(texts) if text not in quiet]
        touched: set[int] = set()
        if loud:
            found = _rule_touched([texts[number] for number in loud])
            touched.update(loud[number] for number in found)
        joined = _SEPARATOR.join(texts)
        quad, group, *names = self._identity_needles
        searches: list[tuple[re.Pattern[str], str, int]] = [(needle, joined, 0) for needle in names]
        if _DOTS.search(joined):  # (the dotted quad's needle holds it: else no match)
            searches.append((quad, joined, 0))
        spans = _group_spans(group, joined)
        if spans is None:
            searches.append((group, joined, 0))
        if self.index.pattern is not None:
            searches.append((self.index.pattern, joined, 1))  # (the chunk is group 1)
        touched.update(_touching(searches, texts, spans or ()))
        return touched

    def quiet_among(self, texts: Iterable[str]) -> set[str]:
        """The ``texts`` that no necessary condition of the rules touches (their triggers and
        secret keys' words, an escape's or a line break's start: ``_rule_touched``), found
        together and remembered: what a text is alone, whatever the run's known secrets and
        names. No rule finds anything in such a text, nor in a JSON-lines field that holds it
        as key and value (``JsonlFields.text``): no condition matches across the field's
        quotes, colon and space but where it also matches in the key or the value alone."""
        quiet = self._quiet
        unique = dict.fromkeys(texts)
        fresh = [text for text in unique if text not in quiet]
        found: set[str] = set()
        start = size = 0
        for end, text in enumerate(fresh, 1):  # batches of about _JOINED_BYTES, as kept_among
            size += len(text) + 1
            if size >= _JOINED_BYTES or end == len(fresh):
                batch = fresh[start:end]
                touched = _rule_touched(batch)
                found.update(text for number, text in enumerate(batch) if number not in touched)
                start, size = end, 0
        for text in found:
            if len(quiet) >= _MEMO_KEPT:
                break
            quiet.add(text)
        return found.union(text for text in unique if text in quiet)

    def clean_name(self, name: str) -> str:
        """A file name: the same rules, with a marker safe in names and artifact uploads."""
        return self.pseudonymize(self.redact(name, marker="REDACTED-{rule}"))

    def clean_json(self, document: Any) -> Any:
        """A parsed JSON document with every string cleaned; the value of a key whose name says
        secret (``"api_key": "..."``) is redacted whole."""
        kind = type(document)  # (json.loads makes exact types: a large file's many values)
        if kind is str or isinstance(document, str):
            return self.clean(document)
        if kind is dict or isinstance(document, dict):
            return self._clean_object(document)
        if kind is list or isinstance(document, list):
            return [self.clean_json(item) for item in document]
        return document

    def _clean_object(self, document: dict[Any, Any]) -> dict[str, Any]:
        """A JSON object's keys and values cleaned; the value of a key that names a secret
        redacted whole (whether a key does is decided once per key name)."""
        cleaned = {}
        secret_keys = self._secret_keys
        for key, value in document.items():
            text = key if type(key) is str else str(key)
            name = self.clean(text)
            if type(value) is str or isinstance(value, str):
                if len(value) >= 4:
                    secret = secret_keys.get(text)
                    if secret is None:
                        secret = _secret_key(text)
                        if len(secret_keys) < _MEMO_KEYS:
                            secret_keys[text] = secret
                    if secret:
                        self.counts["secret-assignment"] += 1
                        cleaned[name] = "[REDACTED:secret-assignment]"
                        continue
                cleaned[name] = self.clean(value)
            elif value is None or type(value) in _SCALARS:
                cleaned[name] = value
            else:
                cleaned[name] = self.clean_json(value)
        return cleaned


_SCALARS = (int, float, bool)
_DOTS = re.compile(r"\.\d{1,3}\.\d{1,3}\.")
"""A necessary condition of the dotted quad's needle (``Sanitizer._identity_needles``) that
starts with a literal: a string search finds where it may start."""
_ASSIGNED = re.compile(r"\s*[:=]")
"""What follows a key word's optional quote in the trigger's key-word parts (``=>``, ``:=``,
``:``, ``=``, after spaces): a piece after a quote that starts so may end a match begun before
the quote (``Sanitizer.clean_quoted``)."""
_MEMO_KEYS = 4096
"""Key names whose secrecy is remembered, at most."""
_MEMO_KEPT = 1 << 16
"""Texts found to be kept as they are (``Sanitizer.keeps``), remembered at most."""
_SEPARATOR = "\uffff"
"""Between the texts ``Sanitizer.kept_among`` searches together: a character no necessary
condition matches (a noncharacter; were one to, it would only touch both neighbours)."""
_JOINED_BYTES = 4 << 20
"""Characters of texts ``Sanitizer.kept_among`` joins at once, about (a larger file's strings are
searched in batches: its copies stay this size)."""
_KEY_WORD = re.compile(r"key|secret|token|pass|pwd|credential|cookie|dsn|sig")
"""A necessary condition of ``_secret_key`` (``_KEY``'s words), on the lowered text."""
_KEY_WORD_WORDS = tuple(_KEY_WORD.pattern.split("|"))
"""``_KEY_WORD``'s words one by one (each found by string searches)."""


def _rule_touched(texts: Sequence[str]) -> set[int]:
    """The indices of ``texts`` that a necessary condition of the rules touches: a part of the
    trigger or a secret key's word, on the lowered text; where an escape or a line break may
    start. Each is a property of a text alone (no condition matches the separator)."""
    # The texts are joined by characters that no condition matches (none holds a lookaround):
    # NUL for the trigger's parts and the key words (no literal start holds it, no class takes
    # it, it is no space), and U+00FF, printable, for the escapes' and breaks' starts. ASCII
    # texts are lowered joined; others each on its own (``_lowered``: ``translate`` over a wide
    # joined text costs twenty times as much).
    lowered = "\x00".join(texts)
    if lowered.isascii():
        lowered = lowered.lower()
    else:
        lowered = "\x00".join([_lowered(text) for text in texts])
    joined = "\xff".join(texts)
    # Each search only where a string search finds its literal start (``_TRIGGER.present``),
    # or a character (a control character, where the joined texts are not all printable); the
    # key words by string searches alone.
    searches: list[tuple[re.Pattern[str], str, int]] = [
        (part, lowered, 0) for part in _TRIGGER.present(lowered)
    ]
    if any(start in joined for start in views.ESCAPE_STARTS):
        searches.append((views.ESCAPE_START, joined, 0))
    if any(start in joined for start in _BREAK_STARTS):
        searches.append((views.BREAK_HINT, joined, 0))
    elif not joined.isprintable():  # (only control characters: ``BREAK_HINT``'s matches then)
        searches.append((views.BREAK_CONTROL, joined, 0))
    touched = _touching(searches, texts)
    words = [word for word in _KEY_WORD_WORDS if word in lowered]
    if words:
        ends = list(itertools.accumulate(len(text) + 1 for text in texts))
        for word in words:  # (a word holds no separator: it stands in one text)
            position = lowered.find(word)
            while position >= 0:
                touched.add(bisect.bisect_right(ends, position))
                position = lowered.find(word, position + len(word))
    return touched


_BREAK_STARTS = ("\\", "&#", "#x")
"""What ``views.BREAK_HINT`` matches but its control characters start with (none printable)."""


def _touching(
    searches: Sequence[tuple[re.Pattern[str], str, int]],
    texts: Sequence[str],
    spans: Iterable[tuple[int, int]] = (),
) -> set[int]:
    """The indices of ``texts`` that a match of a search touches: each search a pattern, the
    texts joined by one character (as they stand or lowered) and the group that counts; and
    those that each of ``spans`` (matches found already, in the texts joined) touches."""
    ends = list(itertools.accumulate(len(text) + 1 for text in texts))
    touched: set[int] = set()
    found = [match.span(group) for pattern, haystack, group in searches
             for match in pattern.finditer(haystack)]  # fmt: skip
    for start, end in itertools.chain(found, spans):
        first = bisect.bisect_right(ends, start)
        last = bisect.bisect_right(ends, max(start, end - 1))
        touched.update(range(first, last + 1))
    return touched


_GROUP_STARTS = ("fc", "fd", "fe")
"""How a match of the internal IPv6 group's needle (``f[cde][0-9a-f]{2}:``, any case) starts,
lowered."""


def _group_spans(group: re.Pattern[str], joined: str) -> list[tuple[int, int]] | None:
    """The spans of every match of the internal IPv6 group's needle ``group`` in ``joined``,
    found where a string search of the lowered text finds a start (None when the lowered text
    is longer: a character lowered to two); two of its matches never overlap (the fifth
    character, a colon, is no hex digit and no ``f``), so these are ``finditer``'s matches."""
    lowered = joined.lower()
    if len(lowered) != len(joined):
        return None
    spans = []
    for start in _GROUP_STARTS:
        position = lowered.find(start)
        while position >= 0:
            match = group.match(joined, position)
            if match is not None:
                spans.append(match.span())
            position = lowered.find(start, position + 1)
    return spans


def _secret_key(key: str) -> bool:
    """A JSON key that names a secret (``api_key``, ``db_password``, ``access_token``; not
    ``tokenizer``, ``eos_token``, ``native_token``)."""
    match = _JSON_KEY.search(_lowered(key))
    return match is not None and _key_accepted(key, match)


_JSON_KEY = re.compile(_KEY + r"s?$")
