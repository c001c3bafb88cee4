"""``qualify bisect``: the first commit at which a family stops passing under a real cap."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from harness import contract
from qualify.experiment.commits import Commit, CommitProbe, search_commits
from tests.conftest import Completed, RunQualify, git

# --- the search, with probes whose answers are known


def _commits(n: int) -> list[Commit]:
    return [Commit(f"{i:040x}", f"commit {i}") for i in range(n)]


def _prober(bad_from: int, skip: frozenset[int] = frozenset()) -> tuple[list[int], object]:
    asked: list[int] = []

    def probe(commit: Commit) -> CommitProbe:
        index = int(commit.sha, 16)
        asked.append(index)
        if index in skip:
            return CommitProbe(commit, (), (), None, "could not be run")
        bad = index >= bad_from
        return CommitProbe(commit, (), (bad,), bad, "OOM_KILLED" if bad else "PASSED")

    return asked, probe


@pytest.mark.parametrize(("n", "bad_from"), [(2, 1), (3, 1), (3, 2), (8, 4), (17, 9), (64, 63)])
def test_the_search_names_the_first_bad_commit_in_log2_probes(n: int, bad_from: int) -> None:
    asked, probe = _prober(bad_from)
    found = search_commits(_commits(n), probe)  # type: ignore[arg-type]
    assert found.first_bad is not None and int(found.first_bad.sha, 16) == bad_from
    assert found.last_good is not None and int(found.last_good.sha, 16) == bad_from - 1
    assert asked[:2] == [0, n - 1]  # both ends first
    assert len(asked) <= 2 + max(1, (n - 2).bit_length())


def test_a_skipped_commit_is_stepped_around_and_a_hidden_boundary_is_a_range() -> None:
    asked, probe = _prober(6, skip=frozenset({3}))
    found = search_commits(_commits(8), probe)  # type: ignore[arg-type]
    assert 3 in asked and found.first_bad is not None and int(found.first_bad.sha, 16) == 6
    # The boundary is next to the skipped commits: only "3, 4 or 5" can be said.
    asked, probe = _prober(4, skip=frozenset({3, 4}))
    found = search_commits(_commits(8), probe)  # type: ignore[arg-type]
    assert found.first_bad is None
    assert [int(c.sha, 16) for c in found.suspects] == [3, 4, 5]


def test_ends_that_do_not_bracket_a_change_stop_the_search() -> None:
    _, probe = _prober(0)
    assert "the good end" in (search_commits(_commits(5), probe).stopped or "")  # type: ignore[arg-type]
    _, probe = _prober(99)
    assert "is good" in (search_commits(_commits(5), probe).stopped or "")  # type: ignore[arg-type]


# --- real runs of a real history


def _commit_toml(repo: Path, second_mib: int, message: str, extra: str | None = None) -> str:
    toml = repo / "families" / "hog" / "family.toml"
    toml.write_text(re.sub(r"second_mib = \d+", f"second_mib = {second_mib}", toml.read_text()))
    if extra is not None:
        (repo / extra).write_text(message + "\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD").strip()


@pytest.mark.privileged
@pytest.mark.slow
def test_bisect_names_the_commit_that_made_the_family_die_under_its_cap(
    repo: Path, tmp_path: Path, run_qualify: RunQualify
) -> None:
    # hog holds 64 MiB then second_mib over an interpreter running pytest: under 256M, 100
    # fits and 300 does not (as test_ab's sweep shows). The third commit of five raises it.
    commits = [
        _commit_toml(repo, 100, "small cache"),
        _commit_toml(repo, 100, "docs", extra="NOTES.md"),
        _commit_toml(repo, 300, "keep a bigger cache alive"),
        _commit_toml(repo, 300, "more docs", extra="MORE.md"),
        _commit_toml(repo, 300, "tidy", extra="TIDY.md"),
    ]
    result = run_qualify(
        "bisect", "--family", "hog", "--repo", str(repo), "--good", commits[0], "--bad", "main",
        "--mem", "256M",
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"first bad commit: {commits[2]} keep a bigger cache alive" in result.stdout
    directory = tmp_path / _printed_dir(result)
    record = json.loads((directory / "bisect.json").read_text())
    assert record["complete"] and record["first_bad"] == commits[2]
    assert record["last_good"] == commits[1]
    probed = {probe["commit"]: probe for probe in record["probes"]}
    assert set(probed) <= set(commits) and len(probed) == len(record["probes"]) <= 4
    for sha, probe in probed.items():
        verdicts = [run["verdict"] for run in probe["runs"]]
        assert verdicts == (["OOM_KILLED"] if commits.index(sha) >= 2 else ["PASSED"]), sha
        (run,) = probe["runs"]
        audit = json.loads((directory / run["run_dir"] / contract.AUDIT).read_text())
        assert audit["commit"]["head"] == sha  # each probe ran its own commit
    assert len(git(repo, "worktree", "list").strip().splitlines()) == 1  # worktrees removed


def _printed_dir(result: Completed) -> str:
    return result.stdout.strip().splitlines()[-1]


def test_bad_refs_are_refused_in_one_line(repo: Path, run_qualify: RunQualify) -> None:
    later = _commit_toml(repo, 300, "later")
    first = git(repo, "rev-list", "--max-parents=0", "HEAD").strip()
    for good, bad, said in (
        ("nope", "main", "--good 'nope' is not a commit"),
        (later, first, "is not an ancestor of --bad"),
        (later, later, "are the same commit"),
    ):
        result = run_qualify(
            "bisect", "--family", "hog", "--repo", str(repo), "--good", good, "--bad", bad
        )
        assert result.returncode == 2, result.stdout + result.stderr
        assert said in result.stderr and len(result.stderr.strip().splitlines()) == 1


@pytest.mark.privileged
@pytest.mark.slow
def test_ab_of_two_commits_gives_each_its_own_family(
    repo: Path, tmp_path: Path, run_qualify: RunQualify
) -> None:
    before = _commit_toml(repo, 100, "small cache")
    after = _commit_toml(repo, 300, "keep a bigger cache alive")
    result = run_qualify(
        "ab", "--family", "hog", "--repo", str(repo), "--commits", f"{before},{after}",
        "--n", "3", "--mem", "256M",
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    directory = tmp_path / _printed_dir(result)
    record = json.loads((directory / "ab.json").read_text())
    assert record["differing"] == {"commit": {"a": before, "b": after}}
    assert record["arms"]["a"] == {"commit": f"{before[:12]} small cache"}
    arm_a, arm_b = (record["summary"][0]["arms"][arm] for arm in ("a", "b"))
    assert arm_a["availability"] == "3/3" and arm_b["availability"] == "0/3"
    assert arm_b["verdicts"] == ["OOM_KILLED"] * 3
    heads = {
        run["arm"]: json.loads((directory / run["run_dir"] / contract.AUDIT).read_text())
        for run in record["repetitions"]
    }
    assert heads["a"]["commit"]["head"] == before and heads["b"]["commit"]["head"] == after
    assert f"a (commit={before[:12]} small cache): 3/3" in result.stdout
    assert len(git(repo, "worktree", "list").strip().splitlines()) == 1


def test_ab_arms_are_commits_or_options_never_both(repo: Path, run_qualify: RunQualify) -> None:
    later = _commit_toml(repo, 300, "later")
    for args, said in (
        (("--commits", f"main,{later}"), "both refs are the same commit"),
        (("--commits", "main"), "expected REF_A,REF_B"),
        (("--commits", f"nope,{later}"), "--commits 'nope' is not a commit"),
        (("--commits", f"main~1,{later}", "--a", "second_mib=1"), "give one"),
        (("--a", "second_mib=1"), "give --a and --b"),
    ):
        result = run_qualify("ab", "--family", "hog", "--repo", str(repo), *args)
        assert result.returncode == 2, result.stdout + result.stderr
        assert said in result.stderr and len(result.stderr.strip().splitlines()) == 1
