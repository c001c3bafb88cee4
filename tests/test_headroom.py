"""``qualify headroom`` on a family with a known allocation, under real caps and real OOM kills.

The hog family (tests/conftest.py) holds 64 MiB in its first phase and then 160 MiB in its
second, on top of an interpreter running pytest: the boundary must lie above the 160 MiB it
allocates and at or below the peak of a run with room to spare, and the search must close the
gap between the largest failing and the smallest passing cap to the asked resolution.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from qualify.commands.headroom import parse_resolution
from qualify.errors import UsageError
from qualify.experiment.bisect import Resolution, bisect
from qualify.experiment.repetition import Repetition
from qualify.experiment.tables import Table, to_text
from qualify.sizes import format_bytes
from tests.conftest import Completed, RunQualify

MIB = 2**20
ALLOCATED = 160 * MIB  # hog's second_mib default


def _document(result: Completed) -> dict[str, Any]:
    assert result.run_dir is not None, result.stdout + result.stderr  # the directory it printed
    document: dict[str, Any] = json.loads((result.run_dir / "headroom.json").read_text())
    return document


@pytest.mark.parametrize(
    ("text", "expected"),
    [("2%", Resolution(fraction=0.02)), ("0.5 %", Resolution(fraction=0.005)),
     ("16M", Resolution(bytes=16 * MIB))],
)  # fmt: skip
def test_resolution(text: str, expected: Resolution) -> None:
    assert parse_resolution(text) == expected


@pytest.mark.parametrize("text", ["0%", "100%", "-2%", "two", ""])
def test_bad_resolution_is_refused(text: str) -> None:
    with pytest.raises(UsageError, match="--resolution"):
        parse_resolution(text)


@pytest.mark.privileged
@pytest.mark.slow
def test_finds_the_boundary_within_the_resolution(repo: Path, run_qualify: RunQualify) -> None:
    measured = run_qualify("run", "--family", "hog", "--repo", str(repo), "--mem", "1G")
    assert measured.returncode == 0, measured.stdout + measured.stderr
    peak = measured.audit()["memory"]["peak_bytes"]
    result = run_qualify(
        "headroom", "--family", "hog", "--repo", str(repo), "--lo", "64M", "--hi", "512M",
        "--resolution", "4%", "--repeat", "2",
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    found = _document(result)
    passing, failing = found["smallest_passing_bytes"], found["largest_failing_bytes"]
    # The need lies in (failing, passing]: above what the test allocates, at or below the
    # peak it reached with room to spare; passing may overshoot the need by the resolution.
    assert ALLOCATED < failing < peak + MIB
    assert failing < passing and found["stopped"] is None
    probes = found["probes"]
    assert [p["verdict"] for p in probes[:2]] == ["PASSED", "OOM_KILLED"]  # --hi, then --lo
    # A boundary cap whose repeat disagreed (the interpreter's own need varies by a few MiB) is
    # reported as flaky and the agreed caps around it are reported instead: every cap probed
    # between the two reported ones is then a flaky one, and nothing else is.
    flaky = found["flaky_bytes"]
    between = {p["limit_bytes"] for p in probes if failing < p["limit_bytes"] < passing}
    assert between == set(flaky), (between, flaky)
    if not flaky:
        assert passing - failing <= 0.04 * passing
        at = {
            cap: [p["verdict"] for p in probes if p["limit_bytes"] == cap]
            for cap in (passing, failing)
        }
        assert at == {passing: ["PASSED", "PASSED"], failing: ["OOM_KILLED", "OOM_KILLED"]}
    standard = next(row for row in found["profiles"] if row["profile"] == "standard")
    assert standard["cap_bytes"] == 48 * 2**30 and standard["needs_bytes"] == passing
    # The terminal gets plain columns (headroom.md keeps the Markdown).
    needs = rf"^standard +48 GiB +{re.escape(format_bytes(passing))}\b"
    assert re.search(needs, result.stdout, re.M), result.stdout
    assert " | " not in result.stdout and not re.search(r"^(#+ \w|- )", result.stdout, re.M)
    markdown = (result.run_dir / "headroom.md").read_text()  # type: ignore[operator]
    assert f"| standard | 48 GiB | {format_bytes(passing)} |" in markdown
    assert result.run_dir is not None
    page = (result.run_dir / "headroom.html").read_text()
    assert page.count("<tr>") == len(probes) + len(found["profiles"]) + 2  # two header rows
    assert f"<td>{format_bytes(passing)}</td>" in page and "script" not in page


@pytest.mark.privileged
def test_tests_failing_at_every_cap_stop_the_search(repo: Path, run_qualify: RunQualify) -> None:
    result = run_qualify(
        "headroom", "--family", "hog", "--repo", str(repo), "--lo", "64M", "--hi", "512M",
        "--set", "first_mib=-1",
    )  # fmt: skip
    assert result.returncode == 1, result.stdout + result.stderr
    found = _document(result)
    assert [p["verdict"] for p in found["probes"]] == ["FAILED"]
    assert found["stopped"].startswith("FAILED at --hi, not a resource death")
    assert found["smallest_passing_bytes"] is None and found["profiles"] == []


@pytest.mark.privileged
def test_passing_at_lo_says_the_boundary_is_below(repo: Path, run_qualify: RunQualify) -> None:
    result = run_qualify(
        "headroom", "--family", "hog", "--repo", str(repo), "--lo", "400M", "--hi", "512M"
    )
    assert result.returncode == 0, result.stdout + result.stderr
    found = _document(result)
    assert [p["verdict"] for p in found["probes"]] == ["PASSED", "PASSED"]
    assert found["stopped"] == "passes at --lo: the boundary is below it"
    assert found["smallest_passing_bytes"] == 400 * MIB


def _probe_of(need: int, flaky_at: int | None = None) -> Callable[[int], Repetition]:
    """A family that passes at ``need`` and above, and at ``flaky_at`` every other time (the
    seam: what bisect does with verdicts, without the runs)."""
    seen: list[int] = []

    def probe(cap: int) -> Repetition:
        seen.append(cap)
        passed = cap >= need and not (cap == flaky_at and seen.count(cap) % 2 == 0)
        verdict = "PASSED" if passed else "OOM_KILLED"
        return Repetition(
            "probe", "", len(seen) - 1, "", "", verdict, "", cap, cap, None, {}, {}, 1.0
        )

    return probe


@pytest.mark.parametrize("need", [65 * MIB, 300 * MIB, 511 * MIB])
def test_bisection_closes_on_the_need(need: int) -> None:
    found = bisect(64 * MIB, 512 * MIB, Resolution(fraction=0.02), 2, _probe_of(need))
    assert found.stopped is None and found.flaky == []
    assert found.largest_failing is not None and found.smallest_passing is not None
    assert found.largest_failing < need <= found.smallest_passing
    assert found.smallest_passing - found.largest_failing <= max(0.02 * found.smallest_passing, MIB)


def test_a_flaky_boundary_is_reported_and_not_called_passing() -> None:
    first = bisect(64 * MIB, 512 * MIB, Resolution(bytes=MIB), 1, _probe_of(300 * MIB))
    boundary = first.smallest_passing
    assert boundary == 300 * MIB
    found = bisect(64 * MIB, 512 * MIB, Resolution(bytes=MIB), 3, _probe_of(300 * MIB, boundary))
    assert found.flaky == [boundary]
    assert found.smallest_passing is not None and found.smallest_passing > boundary
    assert found.largest_failing is not None and found.largest_failing < boundary
    between = {
        p.limit_bytes
        for p in found.probes
        if p.limit_bytes is not None
        and found.largest_failing < p.limit_bytes < found.smallest_passing
    }
    assert between == {boundary}  # what the run on the real hog checks when its boundary flakes


def test_the_terminal_text_is_plain_aligned_columns() -> None:
    rows = [("standard", "48 GiB", "300 MiB"), ("l4-budget", "48 GiB", "300 MiB")]
    notes = ["needs: the smallest passing cap"]
    table = Table("Profiles", ("profile", "cap", "needs"), rows, notes)
    text = to_text("headroom of hog", [("head", "abc"), ("resolution", "4%")], [table])
    assert text.splitlines() == [
        "headroom of hog",
        "",
        "head:       abc",
        "resolution: 4%",
        "",
        "Profiles",
        "profile    cap     needs",
        "standard   48 GiB  300 MiB",
        "l4-budget  48 GiB  300 MiB",
        "needs: the smallest passing cap",
    ]
