"""qualify matrix and qualify merge: shards in, one record per head commit out."""

from __future__ import annotations

import io
import json
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from qualify.cli import main
from qualify.commands.matrix import matrix
from qualify.commands.merge import merge
from qualify.evidence.junit import JUnitCase
from qualify.plan.commit import CommitInfo
from qualify.report.junit import render_junit
from qualify.rundir.audit import Audit, FamilyRecord, MemoryRecord, PhaseRecord, TimingsRecord

HEAD = "a" * 40
OTHER = "b" * 40


def make_run(
    root: Path,
    family: str,
    profile: str,
    run_id: str,
    verdict: str = "PASSED",
    head: str = HEAD,
    started: str = "2025-01-01T00:00:00.000Z",
) -> Path:
    run_dir = root / head / family / profile / run_id
    run_dir.mkdir(parents=True)
    audit = Audit(
        run_id=run_id,
        verdict=verdict,
        family=FamilyRecord(name=family),
        profile=profile,
        commit=CommitInfo(head=head),
        timings=TimingsRecord(started=started),
        memory=MemoryRecord(peak_bytes=123, phases=[PhaseRecord(name="load", peak_bytes=100)]),
    )
    (run_dir / "audit.json").write_bytes(audit.to_bytes())
    outcome = "passed" if verdict == "PASSED" else "failed"
    cases = [JUnitCase("t", "test_a", outcome, 1.5, "boom" if outcome != "passed" else None)]
    (run_dir / "junit.xml").write_bytes(render_junit(family, cases, {}, ""))
    return run_dir


def run_merge(*inputs: Path, **options: object) -> tuple[int, str, str]:
    stdout, stderr = io.StringIO(), io.StringIO()
    code = merge(inputs=list(inputs), stdout=stdout, stderr=stderr, **options)  # type: ignore[arg-type]
    return code, stdout.getvalue(), stderr.getvalue()


def read(out: Path) -> tuple[dict[str, object], ET.Element]:
    return json.loads((out / "index.json").read_text()), ET.parse(out / "junit.xml").getroot()


def test_matrix_prints_include(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        ["matrix", "--families", "hog", "--profiles", "standard,large", "--repo", str(repo)]
    )
    assert code == 0
    assert json.loads(capsys.readouterr().out) == {
        "include": [
            {"family": "hog", "profile": "standard"},
            {"family": "hog", "profile": "large"},
        ]
    }


@pytest.mark.parametrize(
    ("families", "profiles", "message"),
    [
        ("hog,nope", "standard", "unknown family 'nope'"),
        ("hog", "standard,huge", "unknown profile 'huge'"),
        ("../x", "standard", "is not valid"),
        (" , ", "standard", "is empty"),
    ],
)
def test_matrix_rejects_bad_names(repo: Path, families: str, profiles: str, message: str) -> None:
    stdout, stderr = io.StringIO(), io.StringIO()
    code = matrix(families=families, profiles=profiles, repo=repo, stdout=stdout, stderr=stderr)
    assert code == 2 and stdout.getvalue() == ""
    assert message in stderr.getvalue() and stderr.getvalue().count("\n") == 1


def test_merge_one_head_with_duplicates_and_repeats(tmp_path: Path) -> None:
    runner1, runner2 = tmp_path / "runner1", tmp_path / "runner2"
    first = make_run(runner1, "tiny", "standard", "r1", started="2025-01-01T00:00:00.000Z")
    make_run(runner2, "tiny", "standard", "r2", started="2025-01-02T00:00:00.000Z")
    make_run(runner2, "phi4", "large", "r3", verdict="FAILED")
    shutil.copytree(first, first / "public")  # its public/ copy: the same run
    out = tmp_path / "merged"
    code, stdout, _ = run_merge(runner1, runner2, first, out=out)
    assert code == 1, stdout
    index, junit = read(out)
    runs = index["runs"]
    assert isinstance(runs, list)
    assert [(r["family"], r["profile"], r["run_id"]) for r in runs] == [
        ("phi4", "large", "r3"),
        ("tiny", "standard", "r2"),
        ("tiny", "standard", "r1"),
    ]
    assert index["head"] == HEAD and index["exit_code"] == 1
    assert runs[2]["path"] == f"{HEAD}/tiny/standard/r1" and runs[2]["input"] == str(runner1)
    assert runs[1]["peaks"] == {"memory_bytes": 123, "phases": {"load": 100}}
    suites = junit.findall("testsuite")
    assert [s.get("name") for s in suites] == ["phi4/large", "tiny/standard", "tiny/standard"]
    assert junit.get("tests") == "3" and junit.get("failures") == "1"


def test_merge_reports_missing_shards(tmp_path: Path) -> None:
    make_run(tmp_path / "in", "tiny", "standard", "r1")
    matrix_file = tmp_path / "matrix.json"
    matrix_file.write_text(
        json.dumps({"include": [{"family": "tiny", "profile": "standard"},
                                {"family": "tiny", "profile": "large"}]})
    )  # fmt: skip
    code, _, _ = run_merge(
        tmp_path / "in", out=tmp_path / "out", matrix_file=matrix_file, expect="phi4:standard"
    )
    assert code == 4
    index, junit = read(tmp_path / "out")
    verdicts = {(r["family"], r["profile"]): r["verdict"] for r in index["runs"]}  # type: ignore[attr-defined]
    assert verdicts == {
        ("phi4", "standard"): "MISSING",
        ("tiny", "large"): "MISSING",
        ("tiny", "standard"): "PASSED",
    }
    missing = [s for s in junit.iter("testsuite") if s.get("name") == "tiny/large"]
    assert missing[0].find("testcase/error") is not None and missing[0].get("errors") == "1"


def test_merge_refuses_mixed_heads_unless_allowed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    make_run(tmp_path / "in", "tiny", "standard", "r1", head=HEAD)
    make_run(tmp_path / "in", "tiny", "standard", "r2", head=OTHER, verdict="OOM_KILLED")
    code, _, stderr = run_merge(tmp_path / "in")
    assert code == 2 and "different heads" in stderr and stderr.count("\n") == 1
    monkeypatch.chdir(tmp_path)
    code, _, _ = run_merge(tmp_path / "in", allow_mixed_heads=True)
    assert code == 3
    for head in (HEAD, OTHER):
        index, _ = read(tmp_path / "reports" / "merged" / head)
        assert [r["head"] for r in index["runs"]] == [head]  # type: ignore[attr-defined]


def test_pull_request_runs_are_keyed_by_the_pr_head(tmp_path: Path) -> None:
    run_dir = make_run(tmp_path / "in", "tiny", "standard", "r1", head=OTHER)
    audit = json.loads((run_dir / "audit.json").read_text())
    audit["commit"]["github"] = {"event": "pull_request", "head": HEAD, "merge": OTHER}
    (run_dir / "audit.json").write_text(json.dumps(audit))
    make_run(tmp_path / "in", "tiny", "large", "r2", head=HEAD)
    code, _, stderr = run_merge(tmp_path / "in", out=tmp_path / "out")
    assert code == 0, stderr
    assert read(tmp_path / "out")[0]["head"] == HEAD


def test_merge_default_out_and_cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    make_run(tmp_path / "in", "tiny", "standard", "r1")
    monkeypatch.chdir(tmp_path)
    assert main(["merge", "in"]) == 0
    assert (tmp_path / "reports" / "merged" / HEAD / "index.json").is_file()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--expect", "tiny"], "expected family:profile"),
        ([], "no run directories"),
    ],
)
def test_merge_usage_errors(tmp_path: Path, args: list[str], message: str) -> None:
    (tmp_path / "empty").mkdir()
    stderr = io.StringIO()
    code = merge(
        inputs=[tmp_path / "empty"],
        expect=args[1] if args else None,
        stdout=io.StringIO(),
        stderr=stderr,
    )
    assert code == 2 and message in stderr.getvalue()
