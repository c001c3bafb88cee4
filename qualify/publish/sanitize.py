"""The sanitizer: secrets redacted, identities pseudonymized, before anything is published.

Two kinds of rules. Secret rules replace a match with ``[REDACTED:<rule>]``: the values of
secret-looking environment variables (and their base64, URL, JSON and XML encodings) and
known token shapes. They are matched on a copy of the text with line breaks removed (real,
JSON ``\\n`` and XML ``&#10;`` ones, plus the indentation and pytest's ``E   `` prefix after
them), so a token wrapped by a terminal or by JUnit text at 76/80 columns is still caught; a
match is mapped back to the original text and the whole wrapped span is replaced.

Identity rules replace a value by a stable pseudonym (``host-1``, ``user-1``, ``home-1``,
``ip-1``): the same value always maps to the same pseudonym within one Sanitizer (one run).

IP rule (``internal-ip``): RFC 1918, link-local 169.254/16, CGNAT 100.64/10, IPv6 ULA fc00::/7
and link-local fe80::/10. Loopback and public addresses are kept (they identify nobody;
public CI runners' addresses are not secret). A dotted quad is not an IP when it is a version:
preceded by a letter, ``v``/``version``/``release``/``rev`` words, ``==``/``>=``/``~=``/``@v``,
or followed by ``.digit``, ``-``, ``+`` or a letter (``torch 2.13.0.1``, ``v10.0.0.1``,
``10.0.0.1-rc1``, ``10.1.2.3+cu121``).

User rule: generic accounts (root, nobody, runner) are not pseudonymized: they identify
nobody and the words would mangle ordinary text.
"""

from __future__ import annotations

import base64
import bisect
import collections
import contextlib
import copy
import dataclasses
import ipaddress
import json
import os
import pwd
import re
import socket
import urllib.parse
from collections.abc import Collection, Iterable, Mapping
from pathlib import Path
from xml.sax.saxutils import escape as xml_escape

# Names that look secret; AUTHOR (GIT_AUTHOR_NAME) is not, PAT only as a whole word (not PATH).
_SECRET_NAME = re.compile(
    r"TOKEN|SECRET|KEY|PASSWORD|PASSWD|PASSPHRASE|CREDENTIAL|AUTH(?!OR)|COOKIE|SESSION|"
    r"PRIVATE|SIGNATURE|(?:^|_)PAT(?:_|$)"
)
MIN_SECRET_LENGTH = 6
"""Shorter values (``SESSION=1``) would redact ordinary text everywhere."""
MIN_ENCODED_LENGTH = 8
GENERIC_USERS = frozenset({"root", "nobody", "runner"})
GENERIC_HOSTS = frozenset({"localhost", "localhost.localdomain", "localdomain", "ip6-localhost"})

_NOT_MARKER = r"(?!\[?REDACTED)"
TOKEN_RULES: dict[str, re.Pattern[str]] = {
    "github-token": re.compile(r"\bgh[pousr]_[A-Za-z0-9]{30,}"),
    "github-pat": re.compile(r"\bgithub_pat_[A-Za-z0-9_]{22,}"),
    "huggingface-token": re.compile(r"\bhf_[A-Za-z0-9]{30,}"),
    "aws-access-key-id": re.compile(r"\b(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Za-z0-9])"),
    "jwt": re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"),
    "private-key": re.compile(
        r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----"
        r"(?:.*?-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|[A-Za-z0-9+/=\s:,\\-]*)",
        re.DOTALL,
    ),
    "auth-header": re.compile(
        r"(?i)authorization[\"']?\s*[:=]\s*[\"']?\s*(?:(?:bearer|basic|token|digest)\s+)?"
        r"(?P<secret>" + _NOT_MARKER + r"(?!(?:bearer|basic|token|digest)\b)[^\s\"'<>,;\[]{6,})"
    ),
    "bearer-token": re.compile(
        r"(?i)\bbearer\s+(?P<secret>" + _NOT_MARKER + r"[A-Za-z0-9._~+/-]{16,}=*)"
    ),
    "url-credentials": re.compile(
        r"(?i)(?<=[a-z0-9+.-]://)" + _NOT_MARKER + r"[^\s/:@<>\"'\[]+:[^\s/@<>\"']+(?=@)"
    ),
    "secret-assignment": re.compile(
        r"(?i)(?<![A-Za-z0-9])[A-Za-z0-9_-]*(?:token|secret|password|passwd|api_?key|"
        r"access_?key|private_?key)\s*[:=]\s*[\"']?(?P<secret>"
        + _NOT_MARKER
        + r"[^\s\"'<>,;\[]{8,})"
    ),
}
PSEUDONYM_RULES = {
    "home": "home-dir",
    "user": "user-name",
    "host": "host-name",
    "ip": "internal-ip",
}
"""Pseudonym prefix -> rule name."""
RULES = ("env-secret", *TOKEN_RULES, "aws-secret-key", *PSEUDONYM_RULES.values())
"""Every rule name (what ``disabled_rules`` and the per-rule counts use)."""
_AWS_SECRET = re.compile(r"(?<![A-Za-z0-9/+])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])")
_AWS_WINDOW = 200
# Line breaks (real, JSON-escaped, XML character references) and what follows a wrap.
_BREAK = re.compile(r"(?:\r?\n|\\r\\n|\\n|&#10;|&#13;&#10;|&#xA;)(?:[ \t]*E {2,})?[ \t]*")
_IPV4 = re.compile(r"(?<![\w.])(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})(?![\w+-]|\.\d)")
_IPV6 = re.compile(r"(?<![\w:])f[cde][0-9a-f]{2}:[0-9a-f:]*[0-9a-f](?![\w:])", re.IGNORECASE)
_VERSION_BEFORE = re.compile(r"(?i)(?:\b(?:v|version|ver|release|rev)|==|>=|<=|~=|!=)\s*[:=]?\s*$")
_INTERNAL_V4 = [
    ipaddress.ip_network(net)
    for net in ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "169.254.0.0/16", "100.64.0.0/10")
]
_INTERNAL_V6 = [ipaddress.ip_network(net) for net in ("fc00::/7", "fe80::/10")]


def secret_values(environ: Mapping[str, str]) -> dict[str, str]:
    """The environment variables whose names look secret and whose values are long enough."""
    return {
        name: value
        for name, value in environ.items()
        if _SECRET_NAME.search(name.upper())
        and name.upper() not in ("PWD", "OLDPWD")
        and len(value.strip()) >= MIN_SECRET_LENGTH
    }


def _base64_forms(value: bytes) -> set[str]:
    """The part of base64(prefix + value + suffix) fixed by ``value`` alone, for the three
    alignments, standard and URL-safe alphabets."""
    forms = set()
    for offset in range(3):
        encoded = base64.b64encode(b"\0" * offset + value).decode().rstrip("=")
        start = (0, 2, 3)[offset]
        end = (8 * (offset + len(value))) // 6
        fixed = encoded[start:end]
        if len(fixed) >= MIN_ENCODED_LENGTH:
            forms.add(fixed)
            forms.add(fixed.translate(str.maketrans("+/", "-_")))
    return forms


def encoded_forms(value: str) -> set[str]:
    """``value`` as it may appear in a file: raw, base64, URL-encoded, JSON and XML escaped."""
    raw = value.encode()
    forms = {value, value.strip(), json.dumps(value)[1:-1], xml_escape(value, {'"': "&quot;"})}
    forms |= {urllib.parse.quote(value, safe=""), urllib.parse.quote_plus(value)}
    forms |= _base64_forms(raw)
    # A multi-line value (a PEM key in a variable): each substantial line on its own too.
    forms |= {line.strip() for line in value.splitlines() if len(line.strip()) >= MIN_SECRET_LENGTH}
    return {_BREAK.sub("", form) for form in forms if len(form) >= MIN_SECRET_LENGTH}


@dataclasses.dataclass(frozen=True)
class Identities:
    """Values replaced by pseudonyms: this machine's names, its users and their homes."""

    hostnames: frozenset[str] = frozenset()
    users: frozenset[str] = frozenset()
    homes: frozenset[str] = frozenset()

    @classmethod
    def current(cls, environ: Mapping[str, str]) -> Identities:
        """Read from this machine: hostname, /etc/hostname, FQDN, uid's passwd entry, env."""
        hosts = {socket.gethostname(), socket.getfqdn()}
        with contextlib.suppress(OSError):
            hosts.add(Path("/etc/hostname").read_text(encoding="utf-8").strip())
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


def _literal_pattern(values: Iterable[str], flags: int = 0) -> re.Pattern[str] | None:
    ordered = sorted(set(values), key=len, reverse=True)
    if not ordered:
        return None
    return re.compile("|".join(re.escape(value) for value in ordered), flags)


class _Collapsed:
    """``text`` without line breaks, and the way back from its positions to the original."""

    def __init__(self, text: str):
        pieces, self._cuts, self._widths = [], [], []
        position = removed = 0
        for match in _BREAK.finditer(text):
            pieces.append(text[position : match.start()])
            self._cuts.append(match.start() - removed)
            removed += match.end() - match.start()
            self._widths.append(removed)
            position = match.end()
        pieces.append(text[position:])
        self.text = "".join(pieces)

    def original(self, index: int) -> int:
        """Original position of the collapsed character at ``index``."""
        before = bisect.bisect_right(self._cuts, index)
        return index + (self._widths[before - 1] if before else 0)


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
    """Redacts secrets and pseudonymizes identities; counts what each rule did."""

    def __init__(
        self,
        environ: Mapping[str, str],
        identities: Identities,
        disabled_rules: Collection[str] = (),
        pseudonyms: Mapping[str, str] | None = None,
    ):
        self.disabled = frozenset(disabled_rules)
        forms = {form for value in secret_values(environ).values() for form in encoded_forms(value)}
        self._env_secrets = _literal_pattern(forms)
        self._homes = _literal_pattern(identities.homes)
        self._users = _literal_pattern(identities.users)
        self._hosts = _literal_pattern(identities.hostnames, re.IGNORECASE)
        self.pseudonyms: dict[str, str] = dict(pseudonyms or {})
        """value -> pseudonym; private: written to the run's pseudonym map, never published."""
        self.counts: collections.Counter[str] = collections.Counter()

    def _enabled(self, rule: str) -> bool:
        return rule not in self.disabled

    def _rules(self) -> list[tuple[str, re.Pattern[str]]]:
        rules = list(TOKEN_RULES.items())
        if self._env_secrets is not None:
            rules.insert(0, ("env-secret", self._env_secrets))
        return [(rule, pattern) for rule, pattern in rules if self._enabled(rule)]

    def _spans_in(self, text: str) -> list[tuple[int, int, str]]:
        found: list[tuple[int, int, str]] = []
        for rule, pattern in self._rules():
            for match in pattern.finditer(text):
                group = "secret" if "secret" in pattern.groupindex else 0
                found.append((match.start(group), match.end(group), rule))
                if rule == "aws-access-key-id":
                    found += self._aws_secrets(text, match.start(), match.end())
        return [span for span in found if span[1] > span[0]]

    def secret_spans(self, text: str) -> list[tuple[int, int, str]]:
        """(start, end, rule) of every secret in ``text``; matches may span line breaks.

        Scanned twice: as is (a token at the start of a line stays a word of its own) and
        with line breaks removed (a wrapped token is whole again), mapped back.
        """
        spans = self._spans_in(text)
        collapsed = _Collapsed(text)
        if collapsed.text != text:
            spans += [
                (collapsed.original(start), collapsed.original(end - 1) + 1, rule)
                for start, end, rule in self._spans_in(collapsed.text)
            ]
        return spans

    def _aws_secrets(self, text: str, start: int, end: int) -> list[tuple[int, int, str]]:
        """40-character AWS secret keys near an access key id (mixed case: not a git SHA)."""
        if not self._enabled("aws-secret-key"):
            return []
        window = max(0, start - _AWS_WINDOW)
        spans = []
        for match in _AWS_SECRET.finditer(text[window : end + _AWS_WINDOW]):
            value = match.group()
            if any(c.isupper() for c in value) and any(c.islower() for c in value):
                spans.append((window + match.start(), window + match.end(), "aws-secret-key"))
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

    def _pseudonym(self, kind: str, value: str) -> str:
        key = value.lower() if kind == "host" else value
        if key not in self.pseudonyms:
            used = sum(p.startswith(f"{kind}-") for p in self.pseudonyms.values())
            self.pseudonyms[key] = f"{kind}-{used + 1}"
        self.counts[PSEUDONYM_RULES[kind]] += 1
        return self.pseudonyms[key]

    def _replace(self, pattern: re.Pattern[str] | None, kind: str, text: str) -> str:
        if pattern is None or not self._enabled(PSEUDONYM_RULES[kind]):
            return text
        bounded = re.compile(rf"(?<![\w.-])(?:{pattern.pattern})(?![\w-])", pattern.flags)
        return bounded.sub(lambda m: self._pseudonym(kind, m.group()), text)

    def _ip(self, match: re.Match[str]) -> str:
        value = match.group()
        before = match.string[max(0, match.start() - 12) : match.start()]
        if "." in value and (_VERSION_BEFORE.search(before) or before.endswith("@v")):
            return value
        try:
            address = ipaddress.ip_address(value)
        except ValueError:
            return value
        networks = _INTERNAL_V4 if address.version == 4 else _INTERNAL_V6
        if any(address in network for network in networks):
            return self._pseudonym("ip", value.lower())
        return value

    def pseudonymize(self, text: str) -> str:
        """Homes, users, hostnames and internal IPs replaced by stable pseudonyms."""
        text = self._replace(self._homes, "home", text)
        text = self._replace(self._users, "user", text)
        text = self._replace(self._hosts, "host", text)
        if self._enabled("internal-ip"):
            for pattern in (_IPV4, _IPV6):
                text = pattern.sub(self._ip, text)
        return text

    def clean(self, text: str) -> str:
        """Secrets redacted, then identities pseudonymized."""
        return self.pseudonymize(self.redact(text))

    def clean_name(self, name: str) -> str:
        """A file name: the same rules, with a marker safe in names and artifact uploads."""
        return self.pseudonymize(self.redact(name, marker="REDACTED-{rule}"))

    def findings(self, text: str) -> collections.Counter[str]:
        """What the rules still find in ``text`` (the second scan): counts per rule only."""
        probe = copy.copy(self)
        probe.pseudonyms = dict(self.pseudonyms)
        probe.counts = collections.Counter()
        probe.clean(text)
        return probe.counts
