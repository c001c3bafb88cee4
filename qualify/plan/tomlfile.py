"""Small strict readers for the TOML contracts (family.toml, profiles): unknown keys are errors."""

from __future__ import annotations

import tomllib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from qualify.errors import UsageError


def load_toml(path: Path) -> dict[str, Any]:
    """Parse ``path``; a syntax error becomes one UsageError line naming the file."""
    if path.is_dir():
        raise UsageError(f"{path} is a directory, not a file")
    if path.exists() and not path.is_file():  # a FIFO would block the read forever
        raise UsageError(f"{path} is not a regular file")
    try:
        with path.open("rb") as handle:
            return tomllib.load(handle)
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"{path}: not valid TOML ({exc})") from None
    except UnicodeDecodeError as exc:
        byte = exc.object[exc.start]
        raise UsageError(
            f"{path}: not UTF-8 (byte 0x{byte:02x} at offset {exc.start}; TOML files are UTF-8)"
        ) from None
    except OSError as exc:
        raise UsageError(f"{path}: cannot be read ({exc.strerror})") from None


def check_keys(table: Mapping[str, Any], allowed: Iterable[str], where: str) -> None:
    """Raise UsageError naming the first key of ``table`` that is not ``allowed``."""
    valid = list(allowed)
    for key in table:
        if key not in valid:
            raise UsageError(f"{where}: unknown key {key!r} (valid: {', '.join(valid)})")


def get_table(data: Mapping[str, Any], key: str, where: str) -> dict[str, Any]:
    """The sub-table ``key`` (empty when absent); anything else is an error."""
    value = data.get(key, {})
    if not isinstance(value, dict):
        raise UsageError(f"{where}: [{key}] must be a table, not {type(value).__name__}")
    return value


def get_typed(
    table: Mapping[str, Any], key: str, kind: type | tuple[type, ...], where: str, default: Any
) -> Any:
    """``table[key]`` checked against ``kind`` (bool is never accepted as int)."""
    if key not in table:
        return default
    value = table[key]
    kinds = kind if isinstance(kind, tuple) else (kind,)
    # bool is a subclass of int: `gpus = true` must not pass as a number.
    bool_as_number = isinstance(value, bool) and bool not in kinds
    if bool_as_number or not isinstance(value, kinds):
        names = " or ".join(k.__name__ for k in kinds)
        raise UsageError(f"{where}: {key} = {value!r} must be {names}")
    return value
