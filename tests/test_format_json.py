"""``--format json`` on every command that prints a result: ab, headroom, bisect and merge
print their record (the file written beside their runs) on stdout instead of their text; real
runs of the hog family in real cgroups."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import Completed, RunQualify, git

pytestmark = pytest.mark.privileged


def _printed(result: Completed) -> dict[str, object]:
    """stdout as one JSON document (nothing else printed there)."""
    assert result.returncode in (0, 1, 3), result.stdout + result.stderr
    document = json.loads(result.stdout)
    assert isinstance(document, dict)
    return document


def _only(root: Path, name: str) -> dict[str, object]:
    (path,) = root.rglob(name)
    document = json.loads(path.read_text())
    assert isinstance(document, dict)
    return document


def test_ab_and_headroom_print_their_records(repo: Path, run_qualify: RunQualify) -> None:
    ab = run_qualify("ab", "--family", "hog", "--repo", str(repo), "--n", "1", "--mem", "512M",
                     "--a", "first_mib=16", "--b", "first_mib=48", "--format", "json")  # fmt: skip
    printed = _printed(ab)
    assert printed == _only(repo.parent / "reports", "ab.json")
    # Progress on stderr: each run as it starts and as it ends.
    said = [line for line in ab.stderr.splitlines() if line.startswith("qualify ab: [")]
    assert said[0] == "qualify ab: [1/2] arm a starts" and said[1].startswith("qualify ab: [1/2]")
    assert len(said) == 4
    assert printed["repetitions"]
    headroom = run_qualify("headroom", "--family", "hog", "--repo", str(repo), "--lo", "128M",
                           "--hi", "512M", "--resolution", "96M", "--repeat", "1",
                           "--format", "json")  # fmt: skip
    printed = _printed(headroom)
    said = [line for line in headroom.stderr.splitlines() if "qualify headroom: probe 1:" in line]
    assert said[0].endswith(" starts") and len(said) == 2
    assert printed == _only(repo.parent / "reports", "headroom.json")
    assert printed["kind"] == "qualify-headroom" and printed["smallest_passing_bytes"]


def test_bisect_and_merge_print_their_records(repo: Path, run_qualify: RunQualify) -> None:
    good = git(repo, "rev-parse", "HEAD")
    toml = repo / "families" / "hog" / "family.toml"
    toml.write_text(toml.read_text().replace("second_mib = 160", "second_mib = 400"))
    git(repo, "commit", "-q", "-am", "a larger second phase")
    bisect = run_qualify("bisect", "--family", "hog", "--repo", str(repo), "--good", good,
                         "--bad", "main", "--mem", "300M", "--format", "json")  # fmt: skip
    printed = _printed(bisect)
    assert printed == _only(repo.parent / "reports", "bisect.json")
    assert printed["first_bad"] == git(repo, "rev-parse", "HEAD")
    run = run_qualify("run", "--family", "hog", "--repo", str(repo), "--mem", "512M")
    assert run.run_dir is not None
    out = repo.parent / "merged"
    merge = run_qualify("merge", str(run.run_dir), "--out", str(out), "--format", "json")
    printed = _printed(merge)
    assert printed == json.loads((out / "index.json").read_text())
    assert [row["verdict"] for row in printed["runs"]] == ["PASSED"]  # type: ignore[index]


def test_merged_rows_say_their_cap_and_the_options_that_differ(
    repo: Path, run_qualify: RunQualify
) -> None:
    """``qualify merge reports/<head>`` after a ``qualify ab`` in the same tree: one line per
    run with its cap and the options that tell the runs apart; text stays the default."""
    run = run_qualify("run", "--family", "hog", "--repo", str(repo), "--mem", "512M")
    assert run.returncode == 0, run.stdout + run.stderr
    ab = run_qualify("ab", "--family", "hog", "--repo", str(repo), "--n", "1", "--mem", "384M",
                     "--a", "first_mib=16", "--b", "first_mib=48")  # fmt: skip
    assert ab.returncode == 0, ab.stdout + ab.stderr
    head = git(repo, "rev-parse", "HEAD")
    merge = run_qualify("merge", str(repo.parent / "reports" / head), "--out",
                        str(repo.parent / "merged"))  # fmt: skip
    assert merge.returncode == 0, merge.stdout + merge.stderr
    rows = sorted(line.split(" ", 2)[2] for line in merge.stdout.splitlines()[:-1])
    assert rows == [
        "PASSED cap 384 MiB first_mib=16",
        "PASSED cap 384 MiB first_mib=48",
        "PASSED cap 512 MiB first_mib=64",
    ], merge.stdout
    index = json.loads((repo.parent / "merged" / "index.json").read_text())
    assert sorted(row["cap_bytes"] for row in index["runs"]) == [384 << 20] * 2 + [512 << 20]
    assert sorted(row["options"]["first_mib"] for row in index["runs"]) == [16, 48, 64]


def test_run_prints_the_paths_it_wrote_and_its_audit(repo: Path, run_qualify: RunQualify) -> None:
    """``run --format json``: one JSON document on stdout (the summary's lines are not there),
    the paths it wrote and the audit as written; an OOM kill's exit code as ever."""
    run = run_qualify("run", "--family", "hog", "--repo", str(repo), "--mem", "128M",
                      "--format", "json")  # fmt: skip
    assert run.returncode == 3, run.stdout + run.stderr
    printed = json.loads(run.stdout)
    run_dir = repo.parent / printed["run_dir"]
    assert printed["audit"] == json.loads((run_dir / "audit.json").read_text())
    assert printed["audit"]["verdict"] == "OOM_KILLED"
    assert repo.parent / printed["report"] == run_dir / "report.html"
    assert (repo.parent / printed["public"] / "junit.xml").is_file()
    assert "qualify: hog: the E2E is running" in run.stderr  # progress stays on stderr
