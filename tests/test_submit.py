"""qualify submit without a cluster: the plan, the scripts, the records, Slurm's words read back
from real captured samples (tests/data/samples/slurm/), the merge of Slurm-evidenced rows, and
the Kubernetes manifests validated with the official client's models. The real cluster is in
tests/test_slurm.py."""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import stat
import subprocess
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from qualify.cli import main
from qualify.commands.merge import merge
from qualify.commands.submit import SubmitRequest, submit
from qualify.schedule import aftercare, kubernetes
from qualify.schedule.cells import DEFAULT_OVERHEAD, Cell, parse_cell
from qualify.schedule.slurm import (
    JobState,
    OutputWords,
    SchedulerError,
    Slurm,
    StepState,
    TaskEvidence,
    accounting,
    array_indices,
    array_script,
    jobs_from_key_values,
    jobs_from_sacct,
    merge_script,
    parse_config,
    read_output,
    slurm_mem,
    slurm_time,
)
from qualify.schedule.submission import (
    ArrayJob,
    MergeJob,
    RecordCell,
    SubmitRecord,
    find_records,
    parse_record,
)
from qualify.verdict import PROVISIONAL_REASON
from tests.conftest import ROOT, git
from tests.test_merge import HEAD, make_run

SAMPLES = ROOT / "tests" / "data" / "samples" / "slurm"
GIB = 1 << 30


def sample(name: str) -> str:
    return (SAMPLES / name).read_text()


class FakeSlurm(Slurm):
    """Slurm's commands answered from captured samples; sbatch hands out job ids."""

    def __init__(self, config: str = "scontrol-show-config-jobcomp.txt", sacct: str = ""):
        super().__init__()
        self.config_text = sample(config)
        self.sacct_text = sacct
        self.calls: list[tuple[list[str], str | None]] = []
        self.next_id = 40

    def _run(self, argv: Sequence[str], script: str | None = None) -> str:
        self.calls.append((list(argv), script))
        if list(argv[:2]) == ["sbatch", "--version"]:
            return sample("sbatch-version.txt")
        if argv[0] == "sbatch":
            self.next_id += 1
            return f"{self.next_id}\n"
        if list(argv[:3]) == ["scontrol", "show", "config"]:
            return self.config_text
        if argv[0] == "squeue":
            raise SchedulerError("squeue --noheader: " + sample("squeue-invalid-job.txt").strip())
        if argv[0] == "sacct":
            return self.sacct_text
        return ""

    def available(self) -> bool:
        return True

    def sbatches(self) -> list[tuple[list[str], str | None]]:
        return [
            (argv, script) for argv, script in self.calls if argv[:2] == ["sbatch", "--parsable"]
        ]


def run_submit(request: SubmitRequest, slurm: Slurm | None = None) -> tuple[int, str, str]:
    stdout, stderr = io.StringIO(), io.StringIO()
    code = submit(request, slurm=slurm or FakeSlurm(), stdout=stdout, stderr=stderr)
    return code, stdout.getvalue(), stderr.getvalue()


# ---- Slurm's words, from real captured files ------------------------------------------------


def test_sacct_gives_each_array_task_its_job_and_steps() -> None:
    jobs, steps = jobs_from_sacct(sample("sacct-accounting.txt"), "1")
    assert set(jobs) == {"1_0", "1_1"}
    assert jobs["1_0"] == JobState("7", "FAILED", "1:0", "0:125", None, "sacct", True)
    assert [(s.step, s.state, s.exit_code) for s in steps["1_0"]] == [
        ("7.batch", "FAILED", "1:0"),
        ("7.0", "OUT_OF_MEMORY", "0:125"),
    ]
    # a pending array is one record over a range; "CANCELLED by 0" is CANCELLED
    pending, _ = jobs_from_sacct(sample("sacct-pending-array.txt"), "6")
    assert sorted(pending) == ["6_0", "6_1", "6_2", "6_3"] and pending["6_2"].state == "PENDING"
    cancelled, _ = jobs_from_sacct(sample("sacct-accounting.txt"), "6")
    assert cancelled["6_0"].state == "CANCELLED" and cancelled["6_0"].started is False


@pytest.mark.parametrize(
    ("spec", "indices"),
    [("0-3", [0, 1, 2, 3]), ("[1,3,5-6]", [1, 3, 5, 6]), ("0-9%2", list(range(10))),
     ("0-6:3", [0, 3, 6]), ("4", [4]), ("x", [])],
)  # fmt: skip
def test_array_indices(spec: str, indices: list[int]) -> None:
    assert array_indices(spec) == indices


def test_jobcomp_and_scontrol_lines_give_the_array_tasks() -> None:
    lines = sample("jobcomp-oom-array-timeout-cancelled.txt").splitlines()
    jobs = jobs_from_key_values(lines, "2", "jobcomp")
    assert jobs["2_0"].job_id == "3" and jobs["2_1"].job_id == "2"
    assert jobs["2_0"].state == "FAILED" and jobs["2_0"].derived_exit_code == "0:125"
    completed = jobs_from_key_values(
        sample("jobcomp-array-completed-step-oom.txt").splitlines(), "1", "jobcomp"
    )
    assert completed["1_0"].state == "COMPLETED" and completed["1_0"].derived_exit_code == "0:125"
    listed = jobs_from_key_values(sample("scontrol-show-job-array.txt").splitlines(), "1", "x")
    assert listed["1_0"].job_id == "3" and listed["1_0"].state == "COMPLETED"
    assert jobs_from_key_values(lines, "99", "jobcomp") == {}


def test_config_says_whether_there_is_accounting() -> None:
    jobcomp = parse_config(sample("scontrol-show-config-jobcomp.txt"))
    assert not accounting(jobcomp) and jobcomp["JobCompType"] == "jobcomp/filetxt"
    assert accounting(parse_config(sample("scontrol-show-config-slurmdbd.txt")))


@pytest.mark.parametrize(
    ("name", "steps", "job_state"),
    [
        ("output-step-oom.txt", [("7.0", "OUT_OF_MEMORY")], None),
        ("output-batch-oom.txt", [("2.batch", "OUT_OF_MEMORY")], None),
        ("output-timeout.txt", [("3.0", "TIMEOUT")], "TIMEOUT"),
        ("output-cancelled.txt", [("5.0", "CANCELLED")], "CANCELLED"),
        ("output-cell-too-small.txt", [("23.0", "OUT_OF_MEMORY")], None),
        ("output-cell-passed.txt", [], None),
    ],
)
def test_slurms_own_lines_give_step_states(
    name: str, steps: list[tuple[str, str]], job_state: str | None
) -> None:
    words = read_output(sample(name))
    assert [(s.step, s.state) for s in words.steps] == steps
    assert words.job_state == job_state
    assert all(line.startswith(("slurmstepd", "srun")) for line in words.lines)


def test_a_cells_output_names_its_task_and_run() -> None:
    words = read_output(sample("output-cell-too-small.txt"))
    assert words.job_id == "23" and words.started == 1796056541
    assert any("took over the dead run" in line for line in words.printed)
    passed = read_output(sample("output-cell-passed.txt"))
    assert passed.printed[-2].startswith("reports/") and passed.printed[-2].endswith("150bfd")


def evidence(
    job: JobState | None = None, output: str | None = None, steps: Sequence[StepState] = ()
) -> TaskEvidence:
    words: OutputWords | None = read_output(sample(output)) if output else None
    return TaskEvidence(
        submission="1",
        task="1_0",
        family="hog",
        profile="small",
        mem_bytes=40 << 20,
        cap_bytes=40 << 20,
        job=job,
        steps=tuple(steps) + (words.steps if words else ()),
        words=words,
        output="/shared/reports/h/slurm/1_0.out",
        ended=None,
    )


SACCT_JOBS, SACCT_STEPS = jobs_from_sacct(sample("sacct-accounting.txt"), "1")
JOBCOMP = {
    line.split()[0]: line for line in sample("jobcomp-oom-array-timeout-cancelled.txt").splitlines()
}


def jobcomp(job_id: str) -> JobState:
    fields = dict(item.split("=", 1) for item in JOBCOMP[f"JobId={job_id}"].split() if "=" in item)
    return JobState(
        job_id, fields["JobState"], fields["ExitCode"], fields["DerivedExitCode"], None, "jobcomp"
    )


@pytest.mark.parametrize(
    ("found", "verdict", "words"),
    [
        # srun in sbatch: the OOM is on the step, the job is FAILED (sacct and jobcomp)
        (evidence(SACCT_JOBS["1_0"], "output-step-oom.txt", SACCT_STEPS["1_0"]), "KILLED",
         "step 7.0 OUT_OF_MEMORY exit 0:125 (sacct)"),
        (evidence(jobcomp("3"), "output-step-oom.txt"), "KILLED", "derived 0:125"),
        # the step's OOM seen only in the derived exit code of a COMPLETED job
        (evidence(jobs_from_key_values(sample("jobcomp-array-completed-step-oom.txt")
                  .splitlines(), "1", "jobcomp")["1_0"]), "KILLED", "COMPLETED"),
        (evidence(None, "output-batch-oom.txt"), "KILLED", "StepId=2.batch"),
        (evidence(jobcomp("4"), "output-timeout.txt"), "TIMEOUT", "job 4 TIMEOUT"),
        (evidence(None, "output-timeout.txt"), "TIMEOUT", "DUE TO TIME LIMIT"),
        (evidence(jobcomp("5"), "output-cancelled.txt"), "KILLED", "CANCELLED"),
        (evidence(JobState("9", "CANCELLED", "0:0", "0:0", None, "sacct", False)), "MISSING",
         "cancelled before it started"),
        (evidence(JobState("9", "NODE_FAIL", "0:0", "0:0", None, "sacct", True)), "MISSING",
         "node failure"),
        (evidence(JobState("9", "PENDING", "0:0", "0:0", "Resources", "scontrol")), "MISSING",
         "not run yet"),
        (evidence(JobState("9", "FAILED", "2:0", "0:0", None, "jobcomp")), "MISSING",
         "qualify wrote no report: job 9 FAILED exit 2:0"),
        (evidence(), "MISSING", "nothing recorded by Slurm"),
    ],
)  # fmt: skip
def test_slurms_evidence_decides_a_row_without_a_report(
    found: TaskEvidence, verdict: str, words: str
) -> None:
    decided, reason = found.verdict()
    assert decided == verdict and words in reason, reason
    if verdict == "KILLED" and found.oom():
        assert "raise --overhead" in reason
    assert json.loads(json.dumps(found.to_dict()))["task"] == "1_0"


# ---- what is submitted ----------------------------------------------------------------------


def test_sizes_and_times_as_slurm_reads_them() -> None:
    assert slurm_mem(1536 << 20) == "1536M" and slurm_mem((1 << 20) + 1) == "2M"
    assert slurm_time(720) == "00:12:00" and slurm_time(90061) == "1-01:01:01"
    assert parse_cell("tiny/small") == ("tiny", "small") == parse_cell("tiny:small")
    with pytest.raises(Exception, match="expected family/profile"):
        parse_cell("tiny")


def test_the_array_script_runs_the_cell_of_its_index(tmp_path: Path, repo: Path) -> None:
    """The script for real, with a stand-in srun that records its argv."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    srun = bin_dir / "srun"
    srun.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > {tmp_path}/argv\nexit 3\n')
    srun.chmod(srun.stat().st_mode | stat.S_IXUSR)
    head = git(repo, "rev-parse", "HEAD")
    odd = tmp_path / "it's a dir"
    cells = [
        (0, "hog/small", ["run", "--family", "hog"]),
        (1, "hog/large", ["run", "--out", str(odd)]),
    ]
    script = array_script(
        head=head, repo=repo, qualify=["python3", "-m", "qualify"], aftercare=["true"], cells=cells
    )
    env = dict(os.environ, PATH=f"{bin_dir}:{os.environ['PATH']}", SLURM_JOB_ID="12",
               SLURM_ARRAY_JOB_ID="11", SLURM_ARRAY_TASK_ID="1")  # fmt: skip
    done = subprocess.run(
        ["bash", "-c", script], env=env, capture_output=True, text=True, check=False
    )
    assert done.returncode == 3, done.stderr
    assert (tmp_path / "argv").read_text().splitlines() == [
        "--ntasks=1", "--job-name=qualify:hog/large", "python3", "-m", "qualify", "run", "--out",
        str(odd),
    ]  # fmt: skip
    assert re.match(r"qualify-submit: cell hog/large task 11_1 job 12 on \S+ started \d+$",
                    done.stdout.splitlines()[0])  # fmt: skip
    assert "exited with 3" in done.stdout
    wrong = subprocess.run(
        ["bash", "-c", script],
        env=dict(env, SLURM_ARRAY_TASK_ID="7"),
        capture_output=True,
        check=False,
    )
    assert wrong.returncode == 2 and b"not a cell of this submission" in wrong.stderr
    (repo / "new").write_text("x")
    git(repo, "add", "new")
    git(repo, "commit", "-q", "-m", "moved on")
    moved = subprocess.run(
        ["bash", "-c", script], env=env, capture_output=True, text=True, check=False
    )
    assert moved.returncode == 2 and f"not at the submitted head {head}" in moved.stderr
    merged = merge_script(head=head, head_dir=odd, qualify=["python3", "-m", "qualify"])
    assert subprocess.run(["bash", "-n", "-c", merged], check=False).returncode == 0


def test_submit_one_array_per_allocation_size_then_a_merge_job(repo: Path) -> None:
    slurm = FakeSlurm()
    out = repo / "reports"
    code, stdout, stderr = run_submit(
        SubmitRequest(families="hog", profiles="small,large,l4-budget", repo=repo, out=out,
                      partition="gpu", account="ci", time="30m", command_line=["qualify"]),
        slurm,
    )  # fmt: skip
    assert code == 0, stderr
    head = git(repo, "rev-parse", "HEAD")
    (small, _), (big, _), (l4, _), (merge_argv, merge_text) = slurm.sbatches()
    overhead = DEFAULT_OVERHEAD >> 20
    assert f"--mem={6 * 1024 + overhead}M" in small and "--array=0-0" in small
    assert "--gpus-per-task=1" not in small and "--time=00:30:00" in small
    # large (96 GiB) and l4-budget (48 GiB) differ in size: one array each
    assert f"--mem={96 * 1024 + overhead}M" in big and "--gpus-per-task=1" in big
    assert f"--mem={48 * 1024 + overhead}M" in l4 and "--gpus-per-task=1" in l4
    assert "--partition=gpu" in small and "--account=ci" in merge_argv
    assert "--dependency=afterany:41:42:43" in merge_argv
    assert f"merge {out / head} --out {out / head} --submitted {out / head}" in (merge_text or "")
    record = json.loads((out / head / "submit-41.json").read_text())
    assert parse_record(record).merge == MergeJob(
        "44", "afterany:41:42:43", merge_argv[2:], merge_text or ""
    )
    assert [a["cells"][0]["profile"] for a in record["arrays"]] == ["small", "large", "l4-budget"]
    assert record["slurm_version"] == "slurm-wlm 22.05.8"
    assert stdout.splitlines()[-1] == str(out / head / "submit-41.json")
    assert (out / head / "slurm").is_dir()


def test_a_short_time_limit_shortens_the_e2e_timeout(repo: Path) -> None:
    slurm = FakeSlurm()
    code, _, stderr = run_submit(
        SubmitRequest(families="hog", profiles="small", repo=repo, out=repo / "reports",
                      time="4m", mem="1G"),
        slurm,
    )  # fmt: skip
    assert code == 0, stderr
    argv, script = slurm.sbatches()[0]
    assert "--time=00:04:00" in argv and "--mem=1280M" in argv
    assert "--mem 1024M" in (script or "") and "--timeout 120s" in (script or "")


@pytest.mark.parametrize(
    ("request_", "message"),
    [
        (SubmitRequest(families="hog", profiles="small", emit=Path("k")), "--emit DIR is for"),
        (SubmitRequest(engine="kubernetes", families="hog", profiles="small", wait=True),
         "--wait is for --engine slurm"),
        (SubmitRequest(families="hog"), "--families and --profiles are required"),
        (SubmitRequest(retry="hog/small", mem="1G"), "drop --mem"),
        (SubmitRequest(families="hog", profiles="small", time="90s"), "give more than 120s"),
        (SubmitRequest(families="hog", profiles="small", overhead="lots"), "--overhead"),
        (SubmitRequest(families="nope", profiles="small"), "unknown family 'nope'"),
        (SubmitRequest(retry="hog/small"), "no submission of head"),
        (SubmitRequest(engine="kubernetes", families="hog", profiles="small"), "--image"),
    ],
)  # fmt: skip
def test_bad_input_is_one_line_and_submits_nothing(
    repo: Path, request_: SubmitRequest, message: str
) -> None:
    slurm = FakeSlurm()
    request = SubmitRequest(**{**request_.__dict__, "repo": repo, "out": repo / "reports"})
    code, stdout, stderr = run_submit(request, slurm)
    assert code == 2 and message in stderr and stderr.count("\n") == 1, stderr
    assert slurm.sbatches() == [] and stdout == ""


def test_slurms_refusal_is_exit_4_in_slurms_words(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The real Slurm wrapper against a stand-in sbatch that answers as 22.05.8 did."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    sbatch = bin_dir / "sbatch"
    sbatch.write_text(
        '#!/bin/sh\n[ "$1" = --version ] && { echo "slurm-wlm 22.05.8"; exit 0; }\n'
        f"cat {SAMPLES / 'sbatch-invalid-partition.txt'} >&2\nexit 1\n"
    )
    sbatch.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    code, _, stderr = run_submit(
        SubmitRequest(families="hog", profiles="small", repo=repo, out=repo / "reports"), Slurm()
    )
    assert code == 4 and stderr.count("\n") == 1
    assert stderr.startswith("qualify submit: error: Slurm refused: ")
    assert "Batch job submission failed: Invalid partition name specified" in stderr
    # Slurm's words are printed as every error line is, to a log that may be public.
    sbatch.write_text(
        '#!/bin/sh\n[ "$1" = --version ] && { echo "slurm-wlm 22.05.8"; exit 0; }\n'
        "echo 'sbatch: error: https://slurm:Pw9xYz12abc@rest.example.org refused' >&2\nexit 1\n"
    )
    code, _, stderr = run_submit(
        SubmitRequest(families="hog", profiles="small", repo=repo, out=repo / "reports"), Slurm()
    )
    assert code == 4 and "Pw9xYz12abc" not in stderr and "rest.example.org refused" in stderr
    only_git = tmp_path / "only-git"
    only_git.mkdir()
    (only_git / "git").symlink_to(shutil.which("git") or "/usr/bin/git")
    monkeypatch.setenv("PATH", str(only_git))
    code, _, stderr = run_submit(
        SubmitRequest(families="hog", profiles="small", repo=repo, out=repo / "reports"), Slurm()
    )
    assert code == 4 and "sbatch is not on PATH" in stderr


def test_retry_submits_the_same_script_for_one_index(repo: Path) -> None:
    slurm = FakeSlurm()
    out = repo / "reports"
    request = SubmitRequest(families="hog", profiles="small", repo=repo, out=out)
    assert run_submit(request, slurm)[0] == 0
    (first_argv, first_script), _ = slurm.sbatches()
    code, _, stderr = run_submit(SubmitRequest(retry="hog/small", repo=repo, out=out), slurm)
    assert code == 0, stderr
    retry_argv, retry_script = slurm.sbatches()[2]
    assert retry_script == first_script
    assert retry_argv == [*first_argv[:-1], "--array=0"]
    head = git(repo, "rev-parse", "HEAD")
    records = find_records([out / head])
    assert [r.retry_of for r in records] == [None, "41"] and records[1].id == "43"


def test_wait_merges_here_when_the_merge_job_wrote_nothing(repo: Path) -> None:
    slurm = FakeSlurm()
    out = repo / "reports"
    code, stdout, stderr = run_submit(
        SubmitRequest(families="hog", profiles="small,large", repo=repo, out=out, wait=True,
                      poll="1s"),
        slurm,
    )  # fmt: skip
    assert code == 4 and "merging here" in stderr
    lines = stdout.splitlines()
    assert lines[-5].split() == ["family", "small", "large"]
    assert lines[-4].split() == ["hog", "MISSING", "MISSING"]
    assert "hog/small (41_0): MISSING: " in lines[-3] and "nothing recorded by Slurm" in lines[-3]
    index = json.loads(Path(lines[-1]).read_text())
    assert index["submissions"] == ["41"] and index["exit_code"] == 4


def test_format_json_prints_the_record_written(repo: Path) -> None:
    """``--format json``: stdout is the file last written, nothing else: the submission record,
    with ``--wait`` the merged index (its rows are the matrix), and the Kubernetes index."""
    out = repo / "reports"
    printed = {}
    for name, request in (
        ("submitted", SubmitRequest(families="hog", profiles="small", repo=repo, out=out / "a")),
        ("waited", SubmitRequest(families="hog", profiles="small,large", repo=repo,
                                 out=out / "b", wait=True, poll="1s")),
        ("emitted", SubmitRequest(engine="kubernetes", families="hog", profiles="small",
                                  repo=repo, emit=repo / "k8s", image="registry/q:1")),
    ):  # fmt: skip
        stdout, stderr = io.StringIO(), io.StringIO()
        code = submit(request, slurm=FakeSlurm(), stdout=stdout, stderr=stderr,
                      output_format="json")  # fmt: skip
        assert code in (0, 4), stderr.getvalue()
        printed[name] = json.loads(stdout.getvalue())
    head = git(repo, "rev-parse", "HEAD")
    (record,) = find_records([out / "a" / head])
    assert printed["submitted"] == json.loads(record.path(out / "a" / head).read_text())
    assert printed["submitted"]["head"] == head and printed["submitted"]["merge"]
    index = json.loads((out / "b" / head / "index.json").read_text())
    assert printed["waited"] == index
    assert printed["waited"]["exit_code"] == 4 and len(printed["waited"]["runs"]) == 2
    assert printed["emitted"] == json.loads((repo / "k8s" / "index.json").read_text())
    assert main(["submit", "--engine", "github", "--families", "hog", "--profiles", "small",
                 "--repo", str(repo), "--format", "json"]) == 0  # fmt: skip


def test_wait_says_the_tasks_by_state_as_they_change() -> None:
    """``submit --wait``'s lines on stderr: the array's tasks counted by state and the merge
    job's state, a line only when they change, none once the merge job has left the queue."""
    from qualify.schedule.slurm import wait_for

    script = [
        ("PENDING", ["PENDING"]),
        ("PENDING", ["PENDING"]),
        ("PENDING", ["RUNNING", "RUNNING"]),
        ("PENDING", ["RUNNING"]),
        ("RUNNING", []),
        (None, []),
    ]

    class Scripted(FakeSlurm):
        def active(self, job_id: str) -> str | None:
            return script[0][0]

        def states(self, job_id: str) -> list[str]:
            return script[0][1]

    said: list[str] = []
    wait_for(Scripted(), "45", 10.0, sleep=lambda _: script.pop(0), arrays=["41"], say=said.append)
    assert said == [
        "array 41: 1 PENDING; merge job 45 PENDING",
        "array 41: 2 RUNNING; merge job 45 PENDING",
        "array 41: 1 RUNNING; merge job 45 PENDING",
        "array 41: over; merge job 45 RUNNING",
    ]


def test_github_engine_prints_the_matrix(repo: Path) -> None:
    code, stdout, _ = run_submit(
        SubmitRequest(engine="github", families="hog", profiles="small", repo=repo)
    )
    assert code == 0 and json.loads(stdout) == {"include": [{"family": "hog", "profile": "small"}]}


# ---- the merged index: each task accounted for --------------------------------------------


def record_for(root: Path, cells: list[tuple[str, str]]) -> SubmitRecord:
    array = ArrayJob(
        job_id="50",
        mem_bytes=2 * GIB,
        gpus=0,
        sbatch=[],
        array=f"0-{len(cells) - 1}",
        script="",
        cells=[
            RecordCell(i, family, profile, GIB, 600.0) for i, (family, profile) in enumerate(cells)
        ],
    )
    return SubmitRecord(
        id="50", created="2025-01-01T00:00:00Z", head=HEAD, dirty=False, repo=str(root),
        out=str(root), command=[], qualify=[], slurm_version="slurm 24.05.1",
        overhead_bytes=DEFAULT_OVERHEAD, time_s=720, arrays=[array], merge=None,
    )  # fmt: skip


@pytest.mark.foreign_audit
def test_merge_accounts_for_every_task_of_a_submission(tmp_path: Path) -> None:
    head_dir = tmp_path / HEAD
    passed = make_run(tmp_path, "tiny", "small", "r-passed", started="2025-01-01T00:00:10.000Z")
    dead = make_run(tmp_path, "hog", "small", "r-dead", verdict="ERROR",
                    started="2025-01-01T00:00:10.000Z")  # fmt: skip
    audit = json.loads((dead / "audit.json").read_text())
    audit["reason"] = PROVISIONAL_REASON
    (dead / "audit.json").write_text(json.dumps(audit))
    record = record_for(tmp_path, [("tiny", "small"), ("hog", "small"), ("hog", "large")])
    record.write(head_dir)
    slurm_dir = head_dir / "slurm"
    slurm_dir.mkdir()
    start = "qualify-submit: cell {} task 50_{} job {} on n1 started 1735689605\n"
    (slurm_dir / "50_0.out").write_text(
        start.format("tiny/small", 0, 51) + f"{passed}\nqualify-submit: qualify run exited with 0\n"
    )
    (slurm_dir / "50_1.out").write_text(
        start.format("hog/small", 1, 52) + sample("output-step-oom.txt").replace("7.0", "52.0")
    )
    os.utime(slurm_dir / "50_1.out", (1735689620, 1735689620))
    stdout, stderr = io.StringIO(), io.StringIO()
    code = merge(inputs=[head_dir], out=head_dir, submitted=[head_dir], slurm=FakeSlurm(),
                 stdout=stdout, stderr=stderr)  # fmt: skip
    assert code == 4, stderr.getvalue()
    index = json.loads((head_dir / "index.json").read_text())
    runs = {(r["family"], r["profile"]): r for r in index["runs"]}
    assert len(index["runs"]) == 3 and index["submissions"] == ["50"]
    assert runs["tiny", "small"]["verdict"] == "PASSED"
    assert runs["tiny", "small"]["slurm"]["task"] == "50_0"
    killed = runs["hog", "small"]
    assert killed["verdict"] == "KILLED" and killed["path"] == "hog/small/r-dead"
    assert killed["slurm"]["steps"] == [
        {"step": "52.0", "state": "OUT_OF_MEMORY", "exit_code": None, "source": "output"}
    ]
    assert runs["hog", "large"]["verdict"] == "MISSING" and runs["hog", "large"]["path"] is None
    junit = ET.parse(head_dir / "junit.xml").getroot()
    errors = {s.get("name"): s.find("testcase/error") for s in junit.iter("testsuite")}
    assert errors["hog/small"] is not None and errors["hog/small"].get("type") == "KILLED"
    assert "oom-kill event" in (errors["hog/small"].text or "")
    assert errors["hog/large"] is not None and errors["hog/large"].get("type") == "MISSING"


def test_merge_cli_reads_submissions(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    record = record_for(tmp_path, [("tiny", "small")])
    record.write(tmp_path)
    monkeypatch.setenv("PATH", str(tmp_path / "no-slurm-here"))
    assert (
        main(["merge", str(tmp_path), "--out", str(tmp_path / "m"), "--submitted", str(tmp_path)])
        == 4
    )
    index = json.loads((tmp_path / "m" / "index.json").read_text())
    assert [r["verdict"] for r in index["runs"]] == ["MISSING"]
    (tmp_path / "submit-9.json").write_text("{}")
    assert main(["merge", str(tmp_path), "--submitted", str(tmp_path / "submit-9.json")]) == 2


# ---- aftercare ------------------------------------------------------------------------------


def test_aftercare_finds_the_jobs_cgroups_from_inside() -> None:
    dirs = aftercare.job_dirs(
        "3",
        sample("proc-self-cgroup-step.txt").encode(),
        sample("proc-self-mountinfo-job.txt").encode(),
    )
    memory = Path("/sys/fs/cgroup/memory/slurm_localhost/uid_0/job_3")
    assert (memory, memory / "step_0" / "task_0") in dirs
    assert len(dirs) == 3  # memory, freezer, cpuacct: the hierarchies Slurm put the step in
    assert aftercare.job_dirs("4", sample("proc-self-cgroup-step.txt").encode(), b"") == []


def test_aftercare_removes_finished_steps_only(tmp_path: Path) -> None:
    job = tmp_path / "job_3"
    dead = job / "step_0" / "task_0" / "qualify-20250101T000000Z-abcdef"
    own = job / "step_batch" / "task_0"
    other = job / "not-slurms"
    for path in (dead, own, other):
        path.mkdir(parents=True)
    removed = aftercare.remove_finished(job, own)
    assert removed == [dead, dead.parent, dead.parent.parent]
    assert own.is_dir() and other.is_dir()


# ---- Kubernetes -----------------------------------------------------------------------------


def emitted(repo: Path, tmp_path: Path, *args: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    out = tmp_path / "k8s"
    argv = ["submit", "--engine", "kubernetes", "--repo", str(repo), "--emit", str(out), *args]
    assert main(argv) == 0
    index = json.loads((out / "index.json").read_text())
    return index, [json.loads((out / cell["manifest"]).read_text()) for cell in index["cells"]]


def test_kubernetes_manifests_validate_against_the_official_models(
    repo: Path, tmp_path: Path
) -> None:
    client = pytest.importorskip("kubernetes.client")
    from kubernetes.utils import parse_quantity

    index, manifests = emitted(
        repo, tmp_path, "--families", "hog", "--profiles", "small,large", "--image",
        "registry.example/qualify:1", "--shm", "1G", "--time", "2h", "--pvc", "reports",
    )  # fmt: skip
    head = git(repo, "rev-parse", "HEAD")
    api = client.ApiClient()
    for manifest, cell in zip(manifests, index["cells"], strict=True):
        job = api._ApiClient__deserialize(manifest, "V1Job")  # the client's own model
        assert isinstance(job, client.V1Job)
        # nothing the model does not know: serialized back, it is the same document
        assert api.sanitize_for_serialization(job) == manifest
        assert re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", job.metadata.name)
        assert len(job.metadata.name) <= 63
        spec = job.spec
        assert spec.backoff_limit == 0 and spec.active_deadline_seconds == 7200
        pod = spec.template.spec
        assert pod.restart_policy == "Never"
        [container] = pod.containers
        resources = container.resources
        assert resources.requests["memory"] == resources.limits["memory"]
        cap = 6 * GIB if cell["profile"] == "small" else 96 * GIB
        assert parse_quantity(resources.limits["memory"]) == cap + DEFAULT_OVERHEAD
        assert resources.limits.get("nvidia.com/gpu") == (
            "1" if cell["profile"] == "large" else None
        )
        shm = next(v for v in pod.volumes if v.name == "dshm")
        assert shm.empty_dir.medium == "Memory" and parse_quantity(shm.empty_dir.size_limit) == GIB
        assert {m.mount_path for m in container.volume_mounts} == {"/dev/shm", "/reports"}
        labels = job.metadata.labels
        assert labels["qualify.dev/head"] == head and labels["qualify.dev/family"] == "hog"
        assert labels["qualify.dev/profile"] == cell["profile"]
        assert spec.template.metadata.labels == labels
        assert container.command[:2] == ["qualify", "run"] and container.image.endswith(":1")
    assert index["apply"] == "kubectl apply -f jobs/"


def test_kubernetes_names_and_labels_stay_valid_for_odd_families() -> None:
    cell = Cell("Very_Long.Family-Name-" + "x" * 60, "l4-budget", GIB, 0, 600.0, False)
    name = kubernetes.job_name("f" * 40, cell)
    assert len(name) <= 63 and re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", name)
    value = kubernetes.label_value(cell.family)
    assert len(value) <= 63 and re.fullmatch(r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?", value)
    assert kubernetes.label_value("tiny") == "tiny"
