"""Sizes and durations: exact bytes, binary vs decimal, one-line errors."""

from __future__ import annotations

import pytest

from qualify.errors import UsageError
from qualify.sizes import format_bytes, parse_duration, parse_size

GIB = 2**30


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("48G", 48 * GIB),
        ("48Gi", 48 * GIB),
        ("48GiB", 48 * GIB),
        ("48g", 48 * GIB),
        ("48GB", 48 * 10**9),
        ("256M", 256 * 2**20),
        ("256MiB", 256 * 2**20),
        ("512k", 512 * 1024),
        ("1T", 2**40),
        ("4096", 4096),
        ("4096b", 4096),
        ("22.04GiB", int(22.04 * GIB)),
        (" 2G ", 2 * GIB),
    ],
)
def test_parse_size(text: str, expected: int) -> None:
    assert parse_size(text) == expected


@pytest.mark.parametrize("text", ["0", "-1", "12XB", "G", "", "1.2.3G", "48 GiBs", "1e9"])
def test_parse_size_rejects(text: str) -> None:
    with pytest.raises(UsageError, match=r"^--mem .* is not valid: expected a positive size"):
        parse_size(text, what="--mem")


def test_zero_allowed_when_asked() -> None:
    assert parse_size("0", allow_zero=True) == 0


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("90s", 90), ("10m", 600), ("1h30m", 5400), ("45", 45), ("50ms", 0.05), ("1.5h", 5400)],
)
def test_parse_duration(text: str, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["soon", "0", "-5s", "10x", "", "m"])
def test_parse_duration_rejects(text: str) -> None:
    with pytest.raises(UsageError, match="is not valid: expected a positive duration"):
        parse_duration(text, what="--timeout")


@pytest.mark.parametrize(
    ("size", "text"),
    [
        (None, "-"),
        (512, "512 B"),
        (1536, "1.5 KiB"),
        (256 * 2**20, "256 MiB"),
        (int(22.04 * GIB), "22.04 GiB"),
        (48 * GIB, "48 GiB"),
        (130 * GIB, "130 GiB"),
    ],
)
def test_format_bytes(size: int | None, text: str) -> None:
    assert format_bytes(size) == text


def test_parse_size_is_exact_without_float_rounding() -> None:
    assert parse_size("9007199254740993") == 2**53 + 1  # a float rounds it to 2**53
    assert parse_size("4194303.999999999T") == 4194303999999999 * 2**40 // 10**9


@pytest.mark.parametrize("text", ["4194304T", "1" + "0" * 399, "1" * 5000 + "G"])
def test_parse_size_rejects_sizes_past_any_cap(text: str) -> None:
    with pytest.raises(UsageError, match=r"^--mem .* is not valid: too large \(at most 4611"):
        parse_size(text, what="--mem")


@pytest.mark.parametrize("text", ["1" + "0" * 399, "1" + "0" * 399 + "h"])
def test_parse_duration_rejects_infinity(text: str) -> None:
    with pytest.raises(UsageError, match="is not valid: too long"):
        parse_duration(text, what="--timeout")
