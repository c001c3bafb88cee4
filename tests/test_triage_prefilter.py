"""The literal prefilter of the line readers' patterns (qualify/evidence/prefilter.py).

A guarded pattern must find exactly what the pattern finds, on every line the corpora hold, as
they are and lowered: the literals are derived from ``re``'s own parse, and these tests are what
says the derivation is sound for every pattern it is used on (and for every other pattern of the
readers, on a sample of the lines, so that a pattern guarded later is covered too).
"""

from __future__ import annotations

import importlib
import pkgutil
import re
from functools import cache
from pathlib import Path

import pytest

import qualify.evidence
import qualify.triage
from qualify.evidence.prefilter import Guarded, guarded, literals

DATA = Path(__file__).parent / "data"


@cache
def _lines() -> tuple[str, ...]:
    """The distinct lines of the build corpus, the samples and the line tables (short ones)."""
    found: set[str] = set()
    for folder in ("triage", "samples", "triage-lines"):
        for path in sorted((DATA / folder).rglob("*")):
            if path.suffix in (".txt", ".log", ".md", ".json") and path.is_file():
                text = path.read_text(errors="replace")
                found.update(line for line in text.splitlines() if len(line) < 4096)
    return tuple(sorted(found))


def _patterns() -> dict[str, re.Pattern[str] | Guarded]:
    """Every module-level pattern of the evidence readers and of triage, by name."""
    found: dict[str, re.Pattern[str] | Guarded] = {}
    for package in (qualify.evidence, qualify.triage):
        for info in pkgutil.iter_modules(package.__path__):
            module = importlib.import_module(f"{package.__name__}.{info.name}")
            for name, value in vars(module).items():
                if isinstance(value, Guarded) or (
                    isinstance(value, re.Pattern) and isinstance(value.pattern, str)
                ):
                    found[f"{info.name}.{name}"] = value
    return found


GUARDED = {name: value for name, value in _patterns().items() if isinstance(value, Guarded)}


def _same(left: re.Match[str] | None, right: re.Match[str] | None) -> bool:
    if left is None or right is None:
        return left is right
    return left.span() == right.span() and left.groups() == right.groups()


def test_the_readers_guard_their_costliest_patterns() -> None:
    assert {"oom_parts._SAID", "oom_parts._ALLOCATING", "lines._TIMEOUT"} <= set(GUARDED)
    for name, pattern in GUARDED.items():
        assert pattern.test is not None, name  # a guard that filters nothing is not one


@pytest.mark.parametrize("name", sorted(GUARDED))
def test_a_guarded_pattern_finds_what_its_pattern_finds(name: str) -> None:
    wrapped = GUARDED[name]
    pattern = wrapped.pattern
    found = 0
    for at, line in enumerate(_lines()):
        for text in (line, line.lower()):
            whole = pattern.search(text)
            found += whole is not None
            assert _same(wrapped.search(text), whole), (name, text)
            assert _same(wrapped.match(text), pattern.match(text)), (name, text)
            if at % 3:
                continue  # (bounded searches on a third of the lines)
            third, stop = len(text) // 3, 2 * len(text) // 3 + 1
            assert _same(wrapped.search(text, third, stop), pattern.search(text, third, stop)), (
                name,
                text,
            )
            assert _same(wrapped.match(text, third), pattern.match(text, third)), (name, text)
            assert [m.span() for m in wrapped.finditer(text, third)] == [
                m.span() for m in pattern.finditer(text, third)
            ], (name, text)
    assert found, name  # the corpora exercise it


def test_every_readers_pattern_guarded_would_find_the_same() -> None:
    lines = _lines()[::5]
    checked = 0
    for name, value in _patterns().items():
        pattern = value.pattern if isinstance(value, Guarded) else value
        wrapped = Guarded(pattern)
        if wrapped.test is None:
            continue
        checked += 1
        for line in lines:
            for text in (line, line.lower()):
                assert _same(wrapped.search(text), pattern.search(text)), (name, text)
    assert checked > 100


def test_literals_are_the_parts_every_match_holds() -> None:
    assert literals(re.compile(r"\bout of memory\b")) == {("out of memory", False)}
    assert literals(re.compile(r"(?i)timed out")) == {("timed out", True)}
    assert literals(re.compile(r"(?i:killed) by")) == {("killed", True)}
    # an optional part holds nothing; a repeated one at least once holds its literals
    assert literals(re.compile(r"x(?:memory )?exhausted")) == {("exhausted", False)}
    assert literals(re.compile(r"(?:heap )+\d")) == {("heap ", False)}
    # a branch's literals are the union of its alternatives'; the fewest win over the longest
    assert literals(re.compile(r"(?:memory|ram)\W+(?:error|exception)")) == {
        ("memory", False),
        ("ram", False),
    }
    # what a lookaround holds is not consumed where the search runs: nothing
    assert literals(re.compile(r"(?<=memory )\d+")) is None
    assert literals(re.compile(r"\d+(?=memory)")) is None
    # an alternative with no literal, an empty one, common words alone: no prefilter
    assert literals(re.compile(r"\bkill\w*|\d{3}")) is None
    assert literals(re.compile(r"(?:memory|)x")) is None
    assert literals(re.compile(r"failed to")) is None


def test_a_pattern_split_searches_its_other_branches_where_no_literal_stands() -> None:
    pattern = guarded(r"\bsigkill\b|\bsignal 9\b|^\d+$")
    assert pattern.test is not None and pattern.rest is not None and pattern.anchored
    assert pattern.search("123") is not None
    assert pattern.search("x 123") is None
    assert pattern.search("123", 1) is None  # "^" matches at 0 only, as the pattern's does
    assert pattern.search("died of SIGKILL".lower()) is not None
    assert pattern.search("exit 9") is None
    groups = guarded(r"(sigkill)|(\d+)")  # groups: the rest would be numbered otherwise
    assert groups.test is None and groups.rest is None
    assert groups.search("pid 12")[2] == "12"  # type: ignore[index]


def test_a_line_outside_ascii_is_searched_whole_when_case_is_ignored() -> None:
    pattern = guarded(r"(?i)timed out")
    assert pattern.lowered
    assert pattern.search("Step TIMED OUT") is not None
    assert pattern.search("\u0130 TIMED OUT") is not None  # (lowering "İ" moves every index)
    assert pattern.search("\u0130 fine") is None
