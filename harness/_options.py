"""Family options: ``[options]`` of family.toml, overridden by ``qualify run --set``."""

from __future__ import annotations

import os
from typing import TypeVar, cast

from harness.contract import ENV_OPTION_PREFIX

T = TypeVar("T", bool, int, float, str)

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


def env_name(name: str) -> str:
    """The environment variable carrying option ``name`` into the sandbox."""
    return ENV_OPTION_PREFIX + name.upper().replace("-", "_")


def option(name: str, default: T) -> T:
    """The value of family option ``name``, typed like ``default``.

    Outside a qualify run (or when the option is unset) ``default`` is returned.
    """
    raw = os.environ.get(env_name(name))
    if raw is None:
        return default
    return parse_option(name, raw, default)


def parse_option(name: str, raw: str, default: T) -> T:
    """Parse ``raw`` into the type of ``default``; a bad value names the option."""
    return cast(T, parse_like(name, raw, default))


def parse_like(name: str, raw: str, default: bool | int | float | str) -> bool | int | float | str:
    """``raw`` parsed as the type of ``default`` (not generic: for callers holding a union)."""
    kind = type(default)
    try:
        if kind is bool:
            lowered = raw.strip().lower()
            if lowered in _TRUE:
                return True
            if lowered in _FALSE:
                return False
            raise ValueError(raw)
        return kind(raw)
    except ValueError:
        raise ValueError(f"option {name}={raw!r} is not a valid {kind.__name__}") from None
