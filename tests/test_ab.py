"""``qualify ab``: the method's numbers from real runs under a real cap, its refusals, and the
merge of results from two hosts.

The tiny A/B's cap is measured (families/tiny/README.md; checked again before choosing it): at
size small the build's anonymous memory peaks at about 718 MiB with one plan resident and 911
MiB with both, so under 850M every retaining run is OOM-killed and every staged run passes.
"""

from __future__ import annotations

import io
import json
import shutil
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest

from qualify.errors import UsageError
from qualify.experiment.plan import ARMS, check_metrics
from qualify.experiment.stats import Spread, chance_apart, is_real, spread
from qualify.experiment.summary import compare, judge_group
from tests.conftest import IGNORED, ROOT, RunQualify, git, qualify_argv, wait_for

HOST_A, HOST_B = "runner-a", "runner-b"


def _record(stdout: str, cwd: Path) -> tuple[Path, dict[str, Any]]:
    directory = cwd / stdout.strip().splitlines()[-1]
    return directory, json.loads((directory / "ab.json").read_text())


# --- the rules, on numbers chosen by hand


@pytest.mark.parametrize(
    ("a", "b", "real"),
    [
        ([10.0, 10.5, 11.0, 11.5, 12.0], [12.5, 12.6, 12.8, 12.9, 13.0], True),
        ([10.0, 10.5, 11.0, 11.5, 12.0], [12.0, 12.6, 12.8, 12.9, 13.0], False),  # touching
        ([10.0, 12.0, 14.0, 18.0, 20.0], [14.5, 15.0, 15.5, 16.0, 17.0], False),  # one inside
        ([10.0, 11.0, 12.0], [12.5, 13.0], False),  # apart, but by chance 1 time in 5
        ([5.0], [5.0], False),
    ],
)
def test_real_only_when_ranges_do_not_overlap(a: list[float], b: list[float], real: bool) -> None:
    assert is_real(spread(a), spread(b)) is real
    assert is_real(spread(b), spread(a)) is real


def test_spread_and_relative_difference() -> None:
    found = spread([3.0, 1.0, 2.0, 10.0])
    assert found == Spread(4, 1.0, 2.5, 10.0, 4.0, pytest.approx(4.0825, abs=1e-4))
    high, low = five(100.0, 110.0), five(80.0, 90.0)
    latency = compare("ttft_ms", "ms", spread(high), spread(low))
    assert latency.real and latency.better == "b" and latency.relative == pytest.approx(-20 / 105)
    rate = compare("tokens_per_s", "tokens/s", spread(high), spread(low))
    assert rate.real and rate.better == "a"


def five(low: float, high: float) -> list[float]:
    """Five values evenly from ``low`` to ``high`` (enough runs per arm to call a difference)."""
    return [low + (high - low) * step / 4 for step in range(5)]


def test_too_few_runs_are_not_called_real_and_say_why() -> None:
    """Two runs per arm, ranges apart: that happens by chance 1 time in 3 with no difference
    at all (2 / C(4, 2)); five per arm, 1 time in 126."""
    assert chance_apart(2, 2) == pytest.approx(1 / 3) and chance_apart(5, 5) < 0.01
    few = compare("ttft_ms", "ms", spread([100.0, 110.0]), spread([80.0, 90.0]))
    assert not few.real
    assert few.to_dict()["not_called"] == (
        "ranges apart, but with n=2 and n=2 they are apart by chance 1 time in 3: not called "
        "real below a 1% chance (5 runs per arm)"
    )
    itl = compare("itl_ms", "ms", spread([10.0, 11.0]), spread([10.5, 12.0]))
    assert judge_group([few, itl]).startswith("not called in ttft_ms or itl_ms: ranges apart")


def test_a_gain_bought_with_the_other_half_is_a_trade() -> None:
    ttft = compare("ttft_ms", "ms", spread(five(100.0, 110.0)), spread(five(60.0, 70.0)))
    itl = compare("itl_ms", "ms", spread(five(10.0, 11.0)), spread(five(14.0, 15.0)))
    assert judge_group([ttft, itl]) == "trade, not a win: ttft_ms better in b, itl_ms better in a"
    same = compare("itl_ms", "ms", spread(five(10.0, 11.0)), spread(five(10.5, 12.0)))
    assert judge_group([ttft, same]) == "b better in ttft_ms (no real difference in itl_ms)"


def test_one_half_of_a_coupled_pair_alone_is_refused() -> None:
    pairs = [("ttft_ms", "itl_ms")]
    with pytest.raises(UsageError, match="ttft_ms is coupled with itl_ms"):
        check_metrics(["ttft_ms", "native_tokens_per_s"], pairs)
    check_metrics(["itl_ms", "ttft_ms"], pairs)
    check_metrics(["native_tokens_per_s"], pairs)
    check_metrics(None, pairs)


# --- refusals before any run (exit 2, one line naming the value)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--a", "mem=800M", "--b", "first_mib=64"), "--a mem: not an option of family hog"),
        (("--a", "image=x:1", "--b", "first_mib=64"), "--a image: not an option of family hog"),
        (("--a", "first_mib=64", "--b", "first_mib=64"), "resolve to the same options"),
        (("--a", "first_mib=8", "--b", "second_mib=8", "--set", "first_mib=1"), "--set first_mib"),
        (("--a", "first_mib=8", "--b", "first_mib=9", "--sweep", "mem=1G", "--mem", "2G"), "both"),
        (("--a", "first_mib=8", "--b", "first_mib=x"), "first_mib"),
    ],
)
def test_arms_differing_in_anything_else_are_refused(
    repo: Path, run_qualify: RunQualify, args: tuple[str, ...], message: str
) -> None:
    result = run_qualify("ab", "--family", "hog", "--repo", str(repo), "--n", "1", *args)
    assert result.returncode == 2, result.stdout + result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("qualify ab: error: ") and message in lines[0]
    assert not list(repo.parent.glob("reports/*/hog/ab/*/runs/*")), "a run was made"


def test_asking_for_one_half_of_tinys_pair_is_refused(run_qualify: RunQualify) -> None:
    result = run_qualify(
        "ab", "--family", "tiny", "--repo", str(ROOT), "--a", "retain_plans=true",
        "--b", "retain_plans=false", "--metrics", "itl_ms",
    )  # fmt: skip
    assert result.returncode == 2
    assert "itl_ms is coupled with ttft_ms" in result.stderr
    assert "--metrics itl_ms,ttft_ms" in result.stderr


DRIFT_TEST = """
from pathlib import Path

import harness


def test_maybe_edit_the_tree():
    name = harness.option("touch", "")
    if name:  # the run edits the working tree it is qualified from
        (Path(__file__).parent / name).write_text("edited during the experiment\\n")
"""


@pytest.mark.privileged
def test_a_tree_edited_between_runs_refuses_the_experiment(
    tmp_path: Path, run_qualify: RunQualify
) -> None:
    root = _one_test_family(tmp_path / "repo", "drift", 'touch = ""\nlabel = "x"\n', DRIFT_TEST)
    result = run_qualify(
        "ab", "--family", "drift", "--repo", str(root), "--mem", "256M", "--n", "2",
        "--a", "touch=edited.txt", "--b", "label=y",
    )  # fmt: skip
    assert result.returncode == 2, result.stdout + result.stderr
    assert "refused: run 2" in result.stderr and "tree:" in result.stderr
    _, record = _record(result.stdout, tmp_path)
    assert len(record["repetitions"]) == 2  # stopped at the first run that differed
    assert "tree:" in record["refused"] and record["summary"] == []


WAIT_TEST = """
import time
from pathlib import Path

import harness


def test_wait_for_release():
    name = harness.option("wait_for", "")
    deadline = time.monotonic() + 120
    while name and not Path(name).exists() and time.monotonic() < deadline:
        time.sleep(0.1)
"""


@pytest.mark.privileged
def test_a_killed_experiment_leaves_the_runs_it_made_on_record(tmp_path: Path) -> None:
    """SIGKILL of ``qualify ab`` while its second run is under way: ``ab.json`` already holds
    the first run, marked incomplete (no summary), and the pages agree."""
    root = _one_test_family(tmp_path / "repo", "wait", 'wait_for = ""\n', WAIT_TEST)
    release = tmp_path / "release"
    out = tmp_path / "out"
    process = subprocess.Popen(
        qualify_argv(
            "ab", "--family", "wait", "--repo", str(root), "--mem", "256M", "--n", "1",
            "--a", "wait_for=", "--b", f"wait_for={release}", "--out", str(out),
        ),
        cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        record_path = wait_for(lambda: _incomplete_with(out, 1), 120, "the first run's record")
        runs = record_path.parent / "runs"
        wait_for(lambda: len(list(runs.glob("*/*/*/*"))) == 2, 60, "the second run's start")
        process.kill()
        assert process.wait(timeout=30) == -signal.SIGKILL
    finally:
        release.touch()  # the second run (an orphan now) finishes on its own
        process.kill()
        process.wait(timeout=30)
    record = json.loads(record_path.read_text())
    assert [r["arm"] for r in record["repetitions"]] == ["a"]
    assert record["repetitions"][0]["verdict"] == "PASSED"
    assert record["refused"] == "incomplete: 1 of 2 runs recorded (qualify ab did not finish)"
    assert record["summary"] == []
    assert "incomplete: 1 of 2 runs recorded" in (record_path.parent / "ab.md").read_text()
    wait_for(lambda: len(list(runs.glob("*/*/*/*/audit.json"))) == 2, 120, "the orphan's end")


def _incomplete_with(out: Path, runs: int) -> Path | None:
    for path in out.glob("*/wait/ab/*/ab.json"):
        try:
            record = json.loads(path.read_text())
        except ValueError:
            return None
        if len(record["repetitions"]) == runs and record["refused"].startswith("incomplete"):
            return path
    return None


def _one_test_family(root: Path, name: str, options: str, test: str) -> Path:
    """A committed repository holding one family of one test file with these options."""
    family = root / "families" / name
    family.mkdir(parents=True)
    (family / "family.toml").write_text(
        f'name = "{name}"\n[e2e]\ncommand = ["python", "-m", "pytest", "test_{name}.py", "-q"]\n'
        f"[options]\n{options}"
    )
    (family / f"test_{name}.py").write_text(test)
    (family / "pytest.ini").write_text("[pytest]\n")
    (root / ".gitignore").write_text(IGNORED)
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", f"{name} family")
    return root


# --- real runs


@pytest.mark.privileged
@pytest.mark.slow
def test_merge_of_two_hosts_keeps_them_apart(
    repo: Path, tmp_path: Path, run_qualify: RunQualify
) -> None:
    arms = ("--a", "second_mib=100", "--b", "second_mib=300", "--n", "5", "--mem", "256M")
    made = []
    for host in (HOST_A, HOST_B):
        common = ("ab", "--family", "hog", "--repo", str(repo), "--host", host)
        result = run_qualify(*common, *arms, "--out", f"out-{host}")
        assert result.returncode == 0, result.stdout + result.stderr
        made.append(_record(result.stdout, tmp_path))
    for _, record in made:
        arm_a, arm_b = (record["summary"][0]["arms"][arm] for arm in ARMS)
        assert arm_a["availability"] == "5/5" and arm_b["verdicts"] == ["OOM_KILLED"] * 5
    shutil.copytree(made[1][0], tmp_path / "downloaded" / made[1][0].name)  # as an artifact
    merged = run_qualify("merge", str(made[0][0]), str(tmp_path / "downloaded"), "--out", "merged")
    assert merged.returncode == 0, merged.stdout + merged.stderr
    document = json.loads((tmp_path / "merged" / "ab-merged.json").read_text())
    assert document["hosts"] == [HOST_A, HOST_B]
    markdown = (tmp_path / "merged" / "ab.md").read_text()
    rows = [line for line in markdown.splitlines() if "| a (second_mib=100) | 5/5" in line]
    assert [row.split("|")[1].strip() for row in rows] == [HOST_A, HOST_B]
    assert all("| 5/5: PASSED, PASSED, PASSED, PASSED, PASSED |" in row for row in rows)  # per host
    assert "peak_bytes: reproduced on all 2 hosts (a better)" in markdown
    assert "<td>runner-b</td>" in (tmp_path / "merged" / "ab.html").read_text()


@pytest.mark.privileged
@pytest.mark.slow
def test_a_sweep_of_the_cap_runs_both_arms_at_each_level(
    repo: Path, tmp_path: Path, run_qualify: RunQualify
) -> None:
    # hog holds 64 MiB then 100 or 300 MiB over an interpreter running pytest: at 256M only
    # the smaller arm fits, at 512M both do.
    result = run_qualify(
        "ab", "--family", "hog", "--repo", str(repo), "--n", "1", "--order", "random",
        "--seed", "7", "--a", "second_mib=100", "--b", "second_mib=300",
        "--sweep", "mem=256M,512M",
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    _, record = _record(result.stdout, tmp_path)
    assert record["levels"] == ["256M", "512M"] and record["seed"] == 7
    assert [run["level"] for run in record["repetitions"]] == ["256M", "256M", "512M", "512M"]
    verdicts = {
        (level["level"], arm): level["arms"][arm]["verdicts"]
        for level in record["summary"]
        for arm in ARMS
    }
    assert verdicts == {
        ("256M", "a"): ["PASSED"],
        ("256M", "b"): ["OOM_KILLED"],
        ("512M", "a"): ["PASSED"],
        ("512M", "b"): ["PASSED"],
    }
    limits = {run["level"]: run["limit_bytes"] for run in record["repetitions"]}
    assert limits == {"256M": 256 * 2**20, "512M": 512 * 2**20}


@pytest.fixture
def tiny_repo(tmp_path: Path) -> Path:
    """This repository's families in a repository of their own: other work in the checkout
    while the experiment runs must not change the tree the runs are pinned to."""
    root = tmp_path / "repo"
    shutil.copytree(
        ROOT / "families", root / "families", ignore=shutil.ignore_patterns("__pycache__")
    )
    (root / ".gitignore").write_text(IGNORED)
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "families")
    return root


CAP = "850M"
N = 2


@pytest.mark.family
@pytest.mark.privileged
@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.usefixtures("small_checkpoint")
def test_tiny_retained_plans_against_staged_plans(
    tiny_repo: Path, tmp_path: Path, run_qualify: RunQualify
) -> None:
    result = run_qualify(
        "ab", "--family", "tiny", "--repo", str(tiny_repo), "--mem", CAP, "--n", str(N),
        "--a", "retain_plans=true", "--b", "retain_plans=false",
        "--set", "size=small", "--set", "new_tokens=6",
        timeout=840,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    directory, record = _record(result.stdout, tmp_path)
    runs = record["repetitions"]
    assert [run["arm"] for run in runs] == ["a", "b", "b", "a"]  # interleaved, alternating
    assert len({run["run_dir"] for run in runs}) == 2 * N
    for run in runs:
        assert (directory / run["run_dir"] / "audit.json").is_file()
        assert run["limit_bytes"] == 850 * 2**20
    level = record["summary"][0]
    retained, staged = level["arms"]["a"], level["arms"]["b"]
    assert retained["availability"] == f"0/{N}" and set(retained["verdicts"]) == {"OOM_KILLED"}
    assert staged["availability"] == f"{N}/{N}" and set(staged["verdicts"]) == {"PASSED"}
    for arm in (retained, staged):
        peak = arm["peak_bytes"]
        assert peak["count"] == N and peak["min"] <= peak["median"] <= peak["max"]
        assert peak["stdev"] >= 0 and peak["max"] <= 850 * 2**20
        assert "build:decode" in arm["phases"]
    assert "native" in staged["phases"] and "native" not in retained["phases"]
    metrics = staged["metrics"]
    assert metrics["ttft_ms"]["count"] == N and metrics["ttft_ms"]["min"] > 0
    assert metrics["itl_ms"]["count"] == N and metrics["itl_ms"]["unit"] == "ms"
    for run in runs:
        if run["arm"] == "b":  # 10 prompts; new_tokens=6: 10 TTFTs, up to 50 steps
            samples = run["metrics"]
            assert len(samples["ttft_ms"]["values"]) == 10
            assert 0 < len(samples["itl_ms"]["values"]) <= 50
    names = [c["name"] for c in level["comparisons"]]
    assert names[names.index("ttft_ms") + 1] == "itl_ms"  # the pair, together
    assert level["coupled"] == [
        {
            "metrics": ["ttft_ms", "itl_ms"],
            "judgement": "not comparable: ttft_ms, itl_ms not recorded by both arms",
        }
    ]
    markdown = (directory / "ab.md").read_text()
    rows = [line for line in markdown.splitlines() if "(coupled: ttft_ms + itl_ms)" in line]
    assert [row.split("|")[2].strip().split()[0] for row in rows] == ["ttft_ms", "itl_ms"]
    assert "| 0/2: OOM_KILLED, OOM_KILLED |" in markdown
    assert "| 2/2: PASSED, PASSED |" in markdown
    assert "retain_plans: a=true vs b=false" in markdown


@pytest.mark.parametrize(
    "coupled",
    ['[["ttft_ms"]]', '[["ttft_ms", "itl_ms"], ["itl_ms", "tpot_ms"]]', '["ttft_ms"]'],
)
def test_a_coupled_group_that_cannot_be_quoted_together_is_refused(
    tmp_path: Path, coupled: str
) -> None:
    from qualify.plan.families import load_family

    family = tmp_path / "lat"
    family.mkdir()
    (family / "family.toml").write_text(
        f'name = "lat"\n[e2e]\ncommand = ["true"]\n[ab]\ncoupled = {coupled}\n'
    )
    with pytest.raises(UsageError, match=r"\[ab\] coupled: .* is not valid"):
        load_family(family)
    (family / "family.toml").write_text(
        'name = "lat"\n[e2e]\ncommand = ["true"]\n[ab]\ncoupled = [["ttft_ms", "itl_ms"]]\n'
    )
    assert load_family(family).coupled == (("ttft_ms", "itl_ms"),)


@pytest.mark.foreign_audit
def test_ab_results_beside_run_directories_are_merged_as_runs(tmp_path: Path) -> None:
    """A tree holding A/B results and other runs (``reports/<head>`` after a ``qualify ab``)
    is merged as runs, and stderr says how to merge the A/B results as such; an A/B record
    alone takes no run flags."""
    from qualify.commands.merge import merge

    record = tmp_path / "results" / "ab" / "x"
    record.mkdir(parents=True)
    (record / "ab.json").write_text('{"kind": "qualify-ab"}')
    loose = tmp_path / "results" / "run"
    loose.mkdir()
    (loose / "audit.json").write_text("{}")
    errors, printed = io.StringIO(), io.StringIO()
    code = merge(inputs=[tmp_path / "results"], out=tmp_path / "merged", stdout=printed,
                 stderr=errors)  # fmt: skip
    said = errors.getvalue()
    assert "holds A/B results (ab.json) beside other runs: their runs are merged as runs" in said
    assert code == 2 and "results/run/audit.json is not a qualify audit" in said  # merged: read
    assert printed.getvalue() == ""
    errors = io.StringIO()
    code = merge(inputs=[record], expect="hog:custom", stdout=io.StringIO(), stderr=errors)
    assert code == 2 and "--expect applies to run directories" in errors.getvalue()
