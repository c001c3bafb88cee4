"""Sizes and durations as people write them, converted to exact bytes and seconds.

"48G", "48Gi" and "48GiB" are binary (2**30, as docker reads them); "48GB" is decimal.
"""

from __future__ import annotations

import math
import re

from qualify.errors import UsageError

_BINARY = {"": 1, "b": 1, "k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40}
_DECIMAL = {"kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12}
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*$")
_VALID_SIZES = "a positive size such as 512M, 48G, 48GiB (binary) or 48GB (decimal)"
MAX_SIZE = 2**62 - 1
"""The largest size: cgroup v1 reads a limit of 2**62 bytes or more as no limit at all, so a
larger cap could not be enforced (and no memory, GPU or /dev/shm is that large)."""

_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|h|m|s)")
_DURATION_UNITS = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}
_VALID_DURATIONS = "a positive duration such as 90s, 10m, 1h30m or a number of seconds"


def _multiplier(unit: str) -> int | None:
    unit = unit.lower()
    if unit in _DECIMAL:
        return _DECIMAL[unit]
    for suffix in ("ib", "i"):
        if unit.endswith(suffix) and len(unit) == len(suffix) + 1:
            unit = unit[0]
    return _BINARY.get(unit)


def parse_size(text: str, *, what: str = "size", allow_zero: bool = False) -> int:
    """Bytes in ``text``; raises UsageError naming ``what`` and the bad value."""
    match = _SIZE.match(str(text))
    multiplier = _multiplier(match.group(2)) if match else None
    if match is None or multiplier is None:
        raise UsageError(f"{what} {text!r} is not valid: expected {_VALID_SIZES}")
    number = match.group(1)
    # Exact (integers, no float rounding), and no conversion of hundreds of digits to find
    # them too many.
    whole, _, fraction = number.partition(".")
    size: int | None = None
    scale: int = 10 ** len(fraction)
    try:
        if len(whole.lstrip("0")) <= len(str(MAX_SIZE)):
            size = int(whole + fraction) * multiplier // scale
    except ValueError:  # a fraction of thousands of digits
        raise UsageError(f"{what} {text!r} is not valid: expected {_VALID_SIZES}") from None
    if size is None or size > MAX_SIZE:
        raise UsageError(
            f"{what} {text!r} is not valid: too large (at most {MAX_SIZE} bytes, 4EiB - 1)"
        )
    if size <= 0 and not allow_zero:
        raise UsageError(f"{what} {text!r} is not valid: expected {_VALID_SIZES}")
    return size


def parse_duration(text: str, *, what: str = "duration") -> float:
    """Seconds in ``text`` ("90s", "10m", "1h30m", "45"); raises UsageError when invalid."""
    raw = str(text).strip().lower()
    seconds: float | None = None
    if re.fullmatch(r"\d+(?:\.\d+)?", raw):
        seconds = float(raw)
    elif raw and _DURATION_PART.sub("", raw) == "":
        seconds = sum(
            float(number) * _DURATION_UNITS[unit] for number, unit in _DURATION_PART.findall(raw)
        )
    if seconds is None or seconds <= 0:
        raise UsageError(f"{what} {text!r} is not valid: expected {_VALID_DURATIONS}")
    if not math.isfinite(seconds):  # more digits than a float holds: Infinity
        raise UsageError(
            f"{what} {text!r} is not valid: too long (expected a finite duration such as "
            "90s, 10m or 1h30m)"
        )
    return seconds


def format_bytes(size: int | float | None) -> str:
    """Human-readable binary size ("1.5 GiB"); exact bytes stay in the records."""
    if size is None:
        return "-"
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(value) < 1024 or unit == "GiB":
            break
        value /= 1024
    if unit == "B":
        return f"{int(value)} B"
    digits = f"{value:.2f}" if abs(value) < 100 else f"{value:.0f}"
    return f"{digits.rstrip('0').rstrip('.') if '.' in digits else digits} {unit}"


def format_duration(seconds: float) -> str:
    """Short duration for summaries ("2m05s", "12.3s")."""
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes}m{rest:02d}s"
