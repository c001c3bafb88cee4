"""Where a run's secrets come from, which values can be secrets, and the E2E's environment
without them.

Sources: environment variables whose names look secret (:func:`is_secret_name`), the names
given with ``--secret-env`` whatever they look like, and a ``--secrets-file`` (one value per
line, for CI systems that mask their own secrets and can write them out).

A value given explicitly (``--secret-env``, ``--secrets-file``) that reads as ordinary text is
refused before anything runs (:func:`refusal`): redacting ``failed`` or ``python`` everywhere
would make every report unreadable, or withhold it. A secret-named variable whose value reads
so (``XDG_SESSION_TYPE=wayland``) is still kept from the E2E, but not redacted everywhere;
one passed to the E2E by name is refused like an explicit value
(:func:`refuse_unredactable_passed`): the E2E could print it, and nothing would redact it.

The E2E is untrusted code: a secret it was given can leave in any encoding it likes, which no
sanitizer can undo. So the E2E never sees a secret unless a family (``pass_env`` in its
``[e2e]`` table) or the caller (``--pass-env NAME``) passes it by name
(:func:`withhold_secrets`).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Collection, Iterable, Mapping
from pathlib import Path

from qualify.errors import UsageError
from qualify.records import frozen_record

MIN_SECRET_LENGTH = 6
"""Shorter values (``SESSION=1``) would redact ordinary text everywhere."""
ORDINARY_BELOW = 12
"""A value of letters only or digits only shorter than this reads as a word or a number."""

SECRET_WORDS = frozenset(
    {
        "TOKEN", "TOKENS", "SECRET", "SECRETS", "KEY", "KEYS", "APIKEY", "PASSWORD",
        "PASSWORDS", "PASSWD", "PASSPHRASE", "PASS", "PWD", "PSW", "CREDENTIAL", "CREDENTIALS",
        "CREDS", "AUTH", "COOKIE", "COOKIES", "SESSION", "PRIVATE", "SIGNATURE", "PAT", "DSN",
        "SALT", "WEBHOOK", "SAS", "ACCOUNTKEY", "CONNSTR",
    }
)  # fmt: skip
"""A variable is secret when one of its ``_``-separated words is one of these (``SMTP_PASS``,
``MYSQL_PWD``, ``GH_PAT``, ``API_KEY``; not ``TOKENIZER``, ``KEYBOARD``, ``AUTHOR``, ``PATH``
or ``PASSTHROUGH``)..."""
SECRET_SUFFIXES = ("TOKEN", "SECRET", "PASSWORD", "PASSWD", "PASSPHRASE", "APIKEY")
"""... or when a word ends with one of these (``GHTOKEN``, ``DBPASSWORD``)..."""
SECRET_URL_NAMES = frozenset({"DATABASE_URL", "DATABASE_URI", "CONNECTION_STRING"})
"""... or when it names a database connection (whole value secret)..."""
_URL_SUFFIX = ("_URL", "_URI", "_DSN", "_CONNECTION_STRING", "_CONN_STR")


@functools.cache
def _url_credentials() -> re.Pattern[str]:
    """... or when it is any ``*_URL``/``*_URI`` whose value carries ``user:password@``."""
    return re.compile(r"://[^\s/@]*:[^\s/@]+@")


NOT_SECRET_NAMES = frozenset({"PWD", "OLDPWD"})
OWN_PREFIX = "QUALIFY_"
"""qualify's own variables (run paths, family options given on its command line, recorded in
the audit) are not secret by name; ``--secret-env`` still makes one secret."""


def is_secret_name(name: str, value: str) -> bool:
    """Whether an environment variable's name says its value is secret."""
    upper = name.upper()
    if upper in NOT_SECRET_NAMES or upper.startswith(OWN_PREFIX):
        return False
    words = [word for word in re.split(r"[^A-Z0-9]+", upper) if word]
    if any(word in SECRET_WORDS or word.endswith(SECRET_SUFFIXES) for word in words):
        return True
    if upper in SECRET_URL_NAMES or upper.endswith("DATABASE_URL"):  # *_DSN: a secret word
        return True
    return upper.endswith(_URL_SUFFIX) and bool(_url_credentials().search(value))


@functools.cache
def _ordinary() -> re.Pattern[str]:
    return re.compile(r"[A-Za-z]+(?:[ _-][A-Za-z]+)*|[0-9]+")


def refusal(value: str) -> str | None:
    """Why ``value`` cannot be a secret (it reads as ordinary text), or None when it can."""
    stripped = value.strip()
    if len(stripped) < MIN_SECRET_LENGTH:
        return (
            f"{len(stripped)} characters is too short to redact without redacting ordinary "
            f"text (valid: a value of at least {MIN_SECRET_LENGTH} characters)"
        )
    if len(stripped) < ORDINARY_BELOW and _ordinary().fullmatch(stripped):
        return (
            "it reads as an ordinary word or number, which would be redacted everywhere "
            f"(valid: a value with letters and digits or symbols, or of {ORDINARY_BELOW}+ "
            "characters)"
        )
    return None


@frozen_record
class KnownSecret:
    """A value to redact wherever it appears, and where it came from (no value in ``origin``)."""

    value: str
    origin: str
    """``env GH_TOKEN``, ``secrets file line 3``, ``github-token found in stdout.log``."""


def from_environment(
    environ: Mapping[str, str], extra_names: Iterable[str] = ()
) -> list[KnownSecret]:
    """The values of secret-looking variables of ``environ`` and of ``extra_names``; a value
    named with ``--secret-env`` that cannot be a secret is refused (UsageError), one a name
    alone made secret is skipped."""
    chosen = set(extra_names)
    found = []
    for name, value in sorted(environ.items()):
        if name in chosen:
            reason = refusal(value)
            if reason is not None:
                raise UsageError(f"--secret-env {name}: its value is not valid: {reason}")
        elif not is_secret_name(name, value) or refusal(value) is not None:
            continue
        found.append(KnownSecret(value, f"env {name}"))
    return found


def refuse_unredactable_passed(
    environ: Mapping[str, str], *, by_caller: Collection[str], by_family: Collection[str]
) -> None:
    """A secret-named variable passed into the E2E (``--pass-env``, the family's
    ``pass_env``) whose value cannot be redacted is refused (UsageError naming the variable and
    why, never its value): the E2E could print it, and it would be published in clear. Not
    passed, such a variable is withheld from the E2E and needs no refusal."""
    for name in sorted({*by_caller, *by_family}):
        value = environ.get(name)
        if value is None or not is_secret_name(name, value):
            continue
        reason = refusal(value)
        if reason is not None:
            given = "--pass-env" if name in by_caller else "the family's pass_env"
            raise UsageError(
                f"{given} {name}: its name says secret and its value cannot be redacted, so "
                f"the E2E could publish it in clear: {reason}"
            )


def read_secrets_file(path: Path) -> list[KnownSecret]:
    """One value per line (the line break removed; blank lines skipped); a line that cannot be
    a secret is refused (UsageError naming the line, never its value)."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise UsageError(
            f"--secrets-file {str(path)!r} cannot be read ({exc.strerror or exc})"
        ) from None
    text = data.decode(errors="surrogateescape")
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        reason = refusal(line)
        if reason is not None:
            raise UsageError(f"--secrets-file {str(path)!r} line {number} is not valid: {reason}")
        found.append(KnownSecret(line, f"secrets file line {number}"))
    return found


@frozen_record
class ScreenedEnv:
    """The E2E's environment without the secrets it was not given, and what was decided."""

    env: dict[str, str]
    withheld: tuple[str, ...]
    """Names kept from the E2E (secret by name, named with ``--secret-env``, or holding a
    ``--secrets-file`` value); recorded in the audit, never their values."""
    passed: tuple[str, ...]
    """Secret names passed to the E2E all the same (``pass_env``, ``--pass-env``)."""


def withhold_secrets(
    base: Mapping[str, str],
    *,
    secret_names: Collection[str] = (),
    secret_values: Collection[str] = (),
    pass_env: Collection[str] = (),
) -> ScreenedEnv:
    """``base`` without every variable that is secret by name, named in ``secret_names`` or
    whose value holds one of ``secret_values``, unless ``pass_env`` names it."""
    env: dict[str, str] = {}
    withheld, passed = [], []
    for name, value in base.items():
        secret = (
            name in secret_names
            or is_secret_name(name, value)
            or any(known in value for known in secret_values)
        )
        if secret and name not in pass_env:
            withheld.append(name)
            continue
        if secret:
            passed.append(name)
        env[name] = value
    return ScreenedEnv(env, tuple(sorted(withheld)), tuple(sorted(passed)))
