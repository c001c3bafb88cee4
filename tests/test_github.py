"""GitHub Actions: workflow-command escaping, bounded summary, outputs, the PR event, and the
example workflow's qualify step run end to end with a real pull_request payload."""

from __future__ import annotations

import io
import json
import os
import re
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from qualify.errors import UsageError
from qualify.evidence.junit import JUnitCase
from qualify.plan.commit import commit_info, github_commit, record_sha
from qualify.publish.github import publish_github
from qualify.publish.sanitize import Identities, Sanitizer
from qualify.report.github import (
    Failure,
    annotation,
    annotation_lines,
    escape_property,
    output_lines,
)
from qualify.report.github_summary import SUMMARY_LIMIT, render_summary
from qualify.report.junit import render_junit
from qualify.rundir import Audit, RunDir
from qualify.rundir import audit as audit_records
from tests.conftest import ROOT, git

EVENT = ROOT / "tests" / "data" / "github" / "pull_request.opened.payload.json"
PR_HEAD = "ec26c3e57ca3a959ca5aad62de7213c562f8c821"
PR_BASE = "f95f852bd8fca8fcc58a9a2d6c842781e32a215e"
MERGE = "0123456789abcdef0123456789abcdef01234567"


@pytest.mark.parametrize(
    ("value", "escaped"),
    [
        ("plain", "plain"),
        ("a:b,c", "a%3Ab%2Cc"),
        ("100%", "100%25"),
        ("two\r\nlines", "two%0D%0Alines"),
        ("%3A", "%253A"),
    ],
)
def test_property_escaping(value: str, escaped: str) -> None:
    assert escape_property(value) == escaped


def test_annotation_keeps_its_message_on_one_line() -> None:
    line = annotation("OOM: t::x", "peak 100%\nkilled: yes", "families/a,b/t.py", 7)
    assert line == (
        "::error file=families/a%2Cb/t.py,line=7,title=OOM%3A t%3A%3Ax::peak 100%25%0Akilled: yes"
    )


def _failures(count: int, text_size: int = 100) -> list[Failure]:
    return [
        Failure("test_m", f"test_{i}", "failed", f"boom {i}", "x" * text_size, None, "t.py", i)
        for i in range(count)
    ]


def test_at_most_ten_annotations_the_rest_folded() -> None:
    lines = annotation_lines(Audit(verdict="FAILED"), _failures(25))
    assert len(lines) == 10
    assert all(line.startswith("::error file=t.py,line=") for line in lines[:9])
    assert "16 more failures" in lines[9]
    assert len(annotation_lines(Audit(verdict="FAILED"), _failures(10))) == 10
    assert annotation_lines(Audit(verdict="PASSED"), []) == []
    assert annotation_lines(Audit(verdict="ERROR", reason="r"), []) == [
        "::error title=qualify ERROR::r"
    ]


def test_huge_failure_list_stays_under_the_step_limit(tmp_path: Path) -> None:
    failures = [
        *_failures(3000, text_size=5000),
        Failure("test_m", "killer", "error", "OOM_KILLED", "e", "OOM_KILLED"),
    ]
    text = render_summary(Audit(verdict="OOM_KILLED"), failures, str(tmp_path), SUMMARY_LIMIT)
    size = len(text.encode())
    assert SUMMARY_LIMIT - 10_000 < size <= SUMMARY_LIMIT < 1024 * 1024
    assert text.index("test_m::killer") < text.index("test_m::test_0")  # errors first
    assert re.search(r"\*\*\d+ more failures not shown\*\*", text)
    assert "artifact" in text
    assert render_summary(Audit(), failures, str(tmp_path), 0) == ""
    assert len(render_summary(Audit(), failures, str(tmp_path), 300).encode()) <= 300


def test_the_summary_counts_reruns_and_names_what_passed_only_on_one(tmp_path: Path) -> None:
    flaky = ["t.py::a", "t.py::b[x|y]", "t.py::c", "t.py::d"]
    tests = audit_records.TestsRecord(passed=3, failed=1, reruns=6, flaky=flaky[:3], flaky_count=4)
    text = render_summary(Audit(verdict="FAILED", tests=tests), [], str(tmp_path), SUMMARY_LIMIT)
    assert (
        "| tests | 3 passed, 1 failed, 0 errors, 0 skipped; 6 reruns, passed only on a rerun: "
        "t.py::a, t.py::b[x&#124;y], t.py::c and 1 more |"
    ) in text
    plain = render_summary(
        Audit(tests=audit_records.TestsRecord(passed=3)), [], str(tmp_path), SUMMARY_LIMIT
    )
    assert "| tests | 3 passed, 0 failed, 0 errors, 0 skipped |" in plain


def test_outputs_use_the_heredoc_form() -> None:
    text = output_lines({"verdict": "PASSED", "run-dir": "a\nb"})
    match = re.fullmatch(r"verdict<<(\S+)\nPASSED\n\1\nrun-dir<<(\S+)\na\nb\n\2\n", text)
    assert match is not None and match.group(1) != match.group(2)


def _pr_environ(tmp_path: Path, event: Path = EVENT) -> dict[str, str]:
    return {
        "GITHUB_ACTIONS": "true",
        "GITHUB_EVENT_NAME": "pull_request",
        "GITHUB_EVENT_PATH": str(event),
        "GITHUB_SHA": MERGE,
        "GITHUB_OUTPUT": str(tmp_path / "github_output"),
        "GITHUB_STEP_SUMMARY": str(tmp_path / "step_summary.md"),
    }


def test_pull_request_head_base_and_merge_are_recorded_apart(tmp_path: Path) -> None:
    environ = _pr_environ(tmp_path)
    assert github_commit(environ) == {
        "event": "pull_request",
        "head": PR_HEAD,
        "base": PR_BASE,
        "merge": MERGE,
        "pr_number": 2,
    }
    assert github_commit({}) is None
    push = github_commit({"GITHUB_ACTIONS": "true", "GITHUB_EVENT_NAME": "push", "GITHUB_SHA": "s"})
    assert push is not None and push["head"] == "s" and push["merge"] is None


def test_record_is_keyed_by_the_pr_head(repo: Path, tmp_path: Path) -> None:
    plain = commit_info(repo)
    assert plain.github is None
    assert record_sha(plain) == plain.head
    in_actions = commit_info(repo, None, _pr_environ(tmp_path))
    assert record_sha(in_actions) == PR_HEAD
    assert in_actions.head == plain.head  # what was checked out stays recorded as such


def test_unreadable_event_file_is_a_usage_error(tmp_path: Path) -> None:
    broken = tmp_path / "event.json"
    broken.write_text('{"action": "opened"}')
    with pytest.raises(UsageError, match="GITHUB_EVENT_PATH"):
        github_commit(_pr_environ(tmp_path, broken))


def test_publish_once_per_run_directory(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "audit.json").write_bytes(Audit(verdict="ERROR", reason="x").to_bytes())
    environ = _pr_environ(tmp_path)
    first, second = io.StringIO(), io.StringIO()
    sanitizer = Sanitizer({}, Identities())
    assert publish_github(RunDir(run_dir), environ, first, sanitizer).written
    assert not publish_github(RunDir(run_dir), environ, second, sanitizer).written
    assert first.getvalue() == "::error title=qualify ERROR::x\n" and second.getvalue() == ""
    assert (tmp_path / "github_output").read_text().count("verdict<<") == 1


# --- the example workflow, run locally


def _expand(value: str, context: dict[str, Any]) -> str:
    """``${{ a.b }}`` expressions of the workflow, from ``context`` (only what is used)."""

    def lookup(match: re.Match[str]) -> str:
        scope, _, name = match.group(1).strip().partition(".")
        return str(context[scope].get(name, ""))

    return re.sub(r"\$\{\{(.*?)\}\}", lookup, value)


def _parse_outputs(text: str) -> dict[str, str]:
    pattern = re.compile(r"^([\w-]+)<<(\S+)\n(.*?)\n\2$", re.S | re.M)
    return {name: value for name, _, value in pattern.findall(text)}


@pytest.mark.privileged
@pytest.mark.slow
def test_example_workflow_step_end_to_end(repo: Path, tmp_path: Path) -> None:
    import subprocess

    workflow = yaml.safe_load((ROOT / ".github" / "workflows" / "qualify.yml").read_text())
    action = yaml.safe_load((ROOT / "action.yml").read_text())
    job = workflow["jobs"]["qualify"]
    assert job["strategy"]["fail-fast"] is False
    steps = job["steps"]
    uses = next(step for step in steps if step.get("uses") == "$/")  # this repository's action
    upload = next(step for step in steps if "upload-artifact" in step.get("uses", ""))
    assert upload["if"] == "always()"
    assert upload["with"]["path"] == "${{ steps.qualify.outputs.run-dir }}/public/"
    assert set(action["outputs"]) == {"verdict", "run-dir", "junit"}
    assert set(action["inputs"]) >= {
        "family", "mem", "profile", "backend", "image", "gpu-mem", "out", "publish-level"
    }  # fmt: skip
    install, run_step = action["runs"]["steps"]
    assert '"$GITHUB_ACTION_PATH' in install["run"]  # installing is skipped: .venv has qualify

    # The matrix entry: the hog family on the small profile, with a cap it cannot fit in.
    matrix = {"family": "hog", "profile": "small"}
    given = {key: _expand(str(value), {"matrix": matrix}) for key, value in uses["with"].items()}
    inputs = {name: str(spec.get("default", "")) for name, spec in action["inputs"].items()}
    inputs |= given | {"mem": "128M", "out": str(tmp_path / "reports")}
    inputs["secret-env"] = "PLANTED_NOTE, OTHER_NOTE"  # names the action passes on, trimmed
    env = {key: _expand(str(value), {"inputs": inputs}) for key, value in run_step["env"].items()}
    environ = _pr_environ(tmp_path)
    environ["GITHUB_SHA"] = git(repo, "rev-parse", "HEAD")  # checkout gives the merge commit
    script = tmp_path / "step.sh"
    script.write_text(run_step["run"])
    process = subprocess.run(
        # how a composite step with `shell: bash` runs its script
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
        cwd=repo,
        env=dict(
            os.environ,
            **environ,
            **env,
            GITHUB_WORKSPACE=str(repo),
            PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
            PLANTED_NOTE="note-value-in-no-secret-shape",
        ),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        stdin=subprocess.DEVNULL,
    )
    assert process.returncode == 3, process.stdout + process.stderr  # OOM_KILLED's code

    outputs = _parse_outputs((tmp_path / "github_output").read_text())
    assert outputs["verdict"] == "OOM_KILLED"
    run_dir = Path(outputs["run-dir"])
    assert outputs["junit"] == str(run_dir / "public" / "junit.xml") and run_dir.is_dir()
    assert (run_dir / "report.html").is_file()
    recorded = json.loads((run_dir / "secret-sources.json").read_text())
    assert recorded["secret_env"] == ["PLANTED_NOTE", "OTHER_NOTE"]
    audit = json.loads((run_dir / "audit.json").read_text())
    # The action's decision (qualify doctor --plan) is the first note of the sandbox.
    assert audit["sandbox"]["notes"][0].startswith("--backend auto chose cgroup: cgroup v")
    assert audit["commit"]["github"]["head"] == PR_HEAD
    assert audit["commit"]["github"]["merge"] == environ["GITHUB_SHA"]
    assert run_dir.relative_to(tmp_path / "reports").parts[0] == PR_HEAD

    errors = [line for line in process.stdout.splitlines() if line.startswith("::error")]
    assert len(errors) == 1, process.stdout
    line = int(git(repo, "grep", "-n", "def test_alloc", "--", "families/hog").split(":")[1])
    assert errors[0].startswith(
        f"::error file=families/hog/test_hog.py,line={line},"
        "title=OOM_KILLED%3A test_hog%3A%3Atest_alloc::OOM_KILLED in phase second"
    )

    summary = (tmp_path / "step_summary.md").read_text()
    assert summary.startswith("## qualify OOM_KILLED: hog (small)")
    assert "test_hog::test_alloc" in summary and "### Failures (1)" in summary
    # What a reviewer acts on: triage's answer and remedy, the phases against the cap, the
    # memory curve as a chart GitHub draws; never a Python None, never an empty table row.
    assert "### Why: CGROUP_OOM" in summary and "**What to change**" in summary
    assert "| phase | duration | peak | of the cap |" in summary and "| second |" in summary
    assert "```mermaid\nxychart-beta\n" in summary and "    line [" in summary
    assert "None" not in summary and "| | |" not in summary
    assert f"`{run_dir}/report.html`" in summary


# --- each channel scanned in its final bytes; withheld alone when a known secret survives

NOTE = "opaque-" + "Vq7Lm2Xp9Rt4Wz8K"


def _failing_run(tmp_path: Path) -> RunDir:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "audit.json").write_bytes(Audit(verdict="FAILED", reason="1 failed").to_bytes())
    case = JUnitCase("t", "test_x", "failed", 0.1, f"got {NOTE}: 100%", f"E  {NOTE}\nmore")
    (run_dir / "junit.xml").write_bytes(render_junit("fam", [case], {}, ""))
    return RunDir(run_dir)


def test_annotations_are_sanitized_before_they_are_escaped(tmp_path: Path) -> None:
    run_dir = _failing_run(tmp_path)
    stdout = io.StringIO()
    sanitizer = Sanitizer({"NOTE_PASSWORD": NOTE}, Identities())
    result = publish_github(run_dir, _pr_environ(tmp_path), stdout, sanitizer)
    assert result.ok and result.written
    assert stdout.getvalue() == (
        "::error title=FAILED%3A t%3A%3Atest_x::got [REDACTED:known-secret]: 100%25\n"
    )
    summary = (tmp_path / "step_summary.md").read_text()
    assert NOTE not in summary and "[REDACTED:known-secret]" in summary


def test_a_channel_with_a_surviving_secret_is_withheld_alone(tmp_path: Path) -> None:
    run_dir = _failing_run(tmp_path)
    stdout = io.StringIO()
    leaky = Sanitizer({"NOTE_PASSWORD": NOTE}, Identities(), disabled_rules=["known-secret"])
    result = publish_github(run_dir, _pr_environ(tmp_path), stdout, leaky)
    assert not result.ok and set(result.withheld) == {"annotations", "step summary"}
    assert NOTE not in stdout.getvalue()
    assert stdout.getvalue() == (
        "::error title=qualify FAILED::annotations withheld: line 1: known-secret "
        "(env NOTE_PASSWORD)\n"
    )
    summary = (tmp_path / "step_summary.md").read_text()
    assert NOTE not in summary and "step summary withheld: " in summary
    outputs = _parse_outputs((tmp_path / "github_output").read_text())
    assert outputs["verdict"] == "FAILED"


def test_qualify_report_sanitizes_what_it_publishes(tmp_path: Path) -> None:
    import subprocess

    run_dir = _failing_run(tmp_path)
    environ = {**os.environ, **_pr_environ(tmp_path), "NOTE_PASSWORD": NOTE}
    process = subprocess.run(
        [sys.executable, "-m", "qualify", "report", str(run_dir.path)],
        env=environ,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert process.returncode == 0, process.stderr
    assert NOTE not in process.stdout + process.stderr
    assert "::error title=FAILED%3A t%3A%3Atest_x::got [REDACTED:known-secret]" in process.stdout
    assert NOTE not in (tmp_path / "step_summary.md").read_text()


def test_a_failure_in_the_summary_keeps_the_familys_frames(tmp_path: Path) -> None:
    """A real pytest traceback through the standard library (subprocess.run's check): the
    summary's details show the test's own frame and the error, not subprocess.py's source."""
    import subprocess
    import xml.etree.ElementTree as ET

    from qualify.report.github_summary import family_frames

    (tmp_path / "test_sub.py").write_text(
        "import subprocess, sys\n\n"
        "def test_tool():\n"
        "    subprocess.run([sys.executable, '-c', 'raise SystemExit(3)'], check=True)\n"
    )
    subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--junitxml=j.xml"],
        cwd=tmp_path, capture_output=True, check=False, timeout=120,
    )  # fmt: skip
    text = ET.parse(tmp_path / "j.xml").getroot().find(".//failure").text  # type: ignore[union-attr]
    assert "def run(" in text  # pytest shows subprocess.py's source
    trimmed = family_frames(text)
    assert "def run(" not in trimmed and "frame(s) in the standard library" in trimmed
    assert "def test_tool():" in trimmed and "CalledProcessError" in trimmed
    assert len(trimmed) < len(text) / 2


def test_a_pull_request_without_its_event_file_says_what_is_missing(tmp_path: Path) -> None:
    environ = {"GITHUB_ACTIONS": "true", "GITHUB_EVENT_NAME": "pull_request", "GITHUB_SHA": "a"}
    with pytest.raises(UsageError) as raised:
        github_commit(environ)
    said = str(raised.value)
    assert "GITHUB_EVENT_PATH is not set" in said and "None" not in said
    with pytest.raises(UsageError) as raised:
        github_commit({**environ, "GITHUB_EVENT_PATH": str(tmp_path)})  # a directory
    said = str(raised.value)
    assert "cannot be read (Is a directory" in said and "Error(" not in said


def test_report_and_publish_print_json_of_what_they_wrote(tmp_path: Path) -> None:
    """``--format json``: one JSON document on stdout naming the files written and (publish)
    the publication record; the annotations go to stderr; secrets redacted there too."""
    import subprocess

    run_dir = _failing_run(tmp_path)
    environ = {**os.environ, **_pr_environ(tmp_path), "NOTE_PASSWORD": NOTE}

    def qualify(*args: str) -> tuple[dict[str, Any], str]:
        done = subprocess.run(
            [sys.executable, "-m", "qualify", *args, str(run_dir.path), "--format", "json"],
            env=environ, capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
        assert NOTE not in done.stdout + done.stderr
        return json.loads(done.stdout), done.stderr

    printed, stderr = qualify("report")
    assert printed["run_dir"] == str(run_dir.path)
    assert Path(printed["report"]) == run_dir.path / "report.html"
    assert (run_dir.path / "report.html").is_file()
    assert printed["github"] == {"written": True, "withheld": {}}
    assert "::error title=FAILED%3A t%3A%3Atest_x::got [REDACTED:known-secret]" in stderr
    assert "[REDACTED:known-secret]" in (tmp_path / "step_summary.md").read_text()
    printed, _ = qualify("publish", "--level", "internal")
    assert Path(printed["public"]) == run_dir.path / "public"
    assert (run_dir.path / "public" / "audit.json").is_file()
    assert printed["publication"] == json.loads((run_dir.path / "publication.json").read_text())
    assert printed["publication"]["level"] == "internal"
    assert Path(printed["report"]) == run_dir.path / "report.html"
    assert printed["github"] == {"written": False, "withheld": {}}  # written once per run


def test_each_failure_is_in_one_place_as_the_tests_line_counts_it(tmp_path: Path) -> None:
    """qualify's own testcase (what ended the run) and the parity cases are not the family's
    tests: the Failures heading counts what the tests line counts; a list of changed tests is
    not drawn into the base table above it."""
    failures = [
        Failure("qualify", "run", "error", "OOM_KILLED: the cap was hit", "OOM_KILLED"),
        Failure("test_e2e", "test_checkpoint", "failed", "CalledProcessError", "E  died"),
        Failure("tiny.parity", "chat-0", "failed", "WRONG at 3", "WRONG"),
    ]
    base = audit_records.BaseRunRecord(
        summary="peak +357 MiB",
        phases=[audit_records.BasePhaseRecord("checkpoint", 493 << 20, 850 << 20, 357 << 20)],
        changed_tests=[["test_e2e::test_checkpoint", "passed", "failed"]],
    )
    audit = Audit(
        verdict="OOM_KILLED", tests=audit_records.TestsRecord(failed=1, skipped=4), base=base
    )
    text = render_summary(audit, failures, str(tmp_path), SUMMARY_LIMIT)
    assert "| tests | 0 passed, 1 failed, 0 errors, 4 skipped |" in text
    ended, tests, parity = (
        text.index("### What ended the run"),
        text.index("### Failures (1)"),
        text.index("### Parity cases that failed (1)"),
    )
    assert ended < text.index("qualify::run") < tests < text.index("test_checkpoint</b>")
    assert tests < parity < text.index("tiny.parity::chat-0")
    assert "| checkpoint | 493 MiB | 850 MiB | +357 MiB |\n\n- test_e2e::test_checkpoint" in text


def test_failures_read_the_events_only_for_a_run_with_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run whose JUnit holds no failure is answered without reading its events (a suite's are
    megabytes, already read by the judge in another form); one with a failure takes its test's
    location from them."""
    from qualify.report import github

    run_dir = RunDir(tmp_path)
    passed = [JUnitCase("t", "test_a", "passed", 0.1)]
    run_dir.junit_path.write_bytes(render_junit("s", passed, {}, "2026-12-07T00:00:00"))
    read: list[Path] = []
    real = github._locations
    monkeypatch.setattr(github, "_locations", lambda r: read.append(r.path) or real(r))
    assert github.read_failures(run_dir) == [] and read == []
    failed = [*passed, JUnitCase("t", "test_b", "failed", 0.1, "boom", "E boom")]
    run_dir.junit_path.write_bytes(render_junit("s", failed, {}, "2026-12-07T00:00:00"))
    run_dir.events_path.write_text(
        '{"event":"test_phase","state":"start","when":"setup","nodeid":"t::test_b",'
        '"file":"t.py","line":7,"t":1.0,"mono":1.0,"pid":1}\n'
    )
    (failure,) = github.read_failures(run_dir)
    assert (failure.name, failure.file, failure.line, read) == ("test_b", "t.py", 7, [tmp_path])
