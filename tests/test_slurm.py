"""qualify submit on a real Slurm cluster: the suite starts its own (tests/slurmcluster.py).

One module-scoped cluster; the cells are real ``qualify run`` processes inside real Slurm
allocations whose memory Slurm enforces: the embedded family ``tiny`` at a cap it passes, the
``hog`` family at a cap its E2E exceeds (qualify's own OOM_KILLED), and a cell whose allocation
is too small for qualify itself (Slurm OOM-kills it: the row is Slurm's evidence).
"""

from __future__ import annotations

import glob
import json
import os
import subprocess
import textwrap
import threading
import time
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from qualify.schedule.cells import DEFAULT_OVERHEAD
from tests.conftest import HOG_TEST, git, invalid_audits, qualify_argv, strict
from tests.slurmcluster import Cluster, cgroup_dirs, cluster, missing_programs

pytestmark = [pytest.mark.slow, pytest.mark.privileged, pytest.mark.timeout(600)]


@pytest.fixture(scope="module")
def slurm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """A running single-node cluster; SLURM_CONF exported for qualify and its jobs."""
    missing = missing_programs()
    if missing:
        message = f"the Slurm tests need {', '.join(missing)} (apt-get install slurm-wlm munge)"
        if strict():
            pytest.fail(message)
        pytest.skip(message)
    previous = os.environ.get("SLURM_CONF")
    with cluster(tmp_path_factory.mktemp("slurm")) as running:
        os.environ["SLURM_CONF"] = str(running.conf)
        try:
            yield running
        finally:
            if previous is None:
                os.environ.pop("SLURM_CONF", None)
            else:
                os.environ["SLURM_CONF"] = previous


@pytest.fixture(scope="module")
def hog_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A repository whose ``hog`` allocates 64 MiB, then 2 GiB (over a 1.5 GiB cap)."""
    root = tmp_path_factory.mktemp("repo")
    family = root / "families" / "hog"
    family.mkdir(parents=True)
    (family / "family.toml").write_text(
        textwrap.dedent("""
        name = "hog"
        description = "allocates 64 MiB, then 2 GiB"
        [e2e]
        command = ["python", "-m", "pytest", "test_hog.py", "-q"]
        timeout = "5m"
        [options]
        first_mib = 64
        second_mib = 2048
        hold_s = 0.3
        sleep_s = 0.0
        """)
    )
    (family / "test_hog.py").write_text(HOG_TEST)
    (family / "pytest.ini").write_text("[pytest]\n")
    (root / ".gitignore").write_text("reports/\n")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "hog family")
    return root


def submit(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        qualify_argv("submit", "--repo", str(repo), "--poll", "0.5s", *args),
        cwd=repo,
        capture_output=True,
        text=True,
        timeout=540,
        check=False,
    )


class OverheadSampler(threading.Thread):
    """Every 5 ms while a cell runs: its allocation's memory usage minus that of qualify's run
    cgroup inside it (what qualify and the batch step cost beyond the cap), per job."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.stop = threading.Event()
        self.peaks: dict[str, int] = {}

    @staticmethod
    def _read(path: str) -> int:
        try:
            return int(Path(path).read_text())
        except (OSError, ValueError):
            return 0

    def run(self) -> None:
        pattern = "/sys/fs/cgroup/memory/slurm_*/uid_*/job_*"
        while not self.stop.is_set():
            for job in glob.glob(pattern):
                runs = glob.glob(f"{job}/step_*/task_*/qualify-*/memory.usage_in_bytes")
                if not runs:
                    continue
                inner = sum(self._read(path) for path in runs)
                outside = self._read(f"{job}/memory.usage_in_bytes") - inner
                self.peaks[job] = max(self.peaks.get(job, 0), outside)
            time.sleep(0.005)


def rows(index: dict[str, Any], family: str, profile: str) -> list[dict[str, Any]]:
    return [row for row in index["runs"] if (row["family"], row["profile"]) == (family, profile)]


def check_output(small: str, matrix: str) -> None:
    """What the submitter printed: the job ids, the allocation, the matrix of verdicts."""
    assert "KILLED" in small and "Slurm OOM-killed the allocation" in small
    lines = matrix.splitlines()
    assert lines[0].startswith("head ") and "slurm" in lines[0]
    assert lines[1].startswith("array job ") and "--mem 1792M = cap + 256 MiB" in lines[1]
    assert lines[2].startswith("merge job ") and "--dependency=afterany:" in lines[2]
    assert lines[4].split() == ["family", "small"]
    assert lines[5].split() == ["tiny", "PASSED"] and lines[6].split() == ["hog", "OOM_KILLED"]


def check_index(index: dict[str, Any]) -> None:
    """PASSED and OOM_KILLED from qualify, KILLED from Slurm's evidence, each with its task."""
    [tiny] = rows(index, "tiny", "small")
    assert tiny["verdict"] == "PASSED" and tiny["slurm"]["state"] == "COMPLETED"
    assert tiny["slurm"]["sources"] == ["jobcomp", "output"]
    [hog] = rows(index, "hog", "small")
    assert hog["verdict"] == "OOM_KILLED" and hog["slurm"]["state"] == "FAILED"
    assert hog["slurm"]["exit_code"] == "3:0"  # qualify's exit code for a resource verdict
    killed = rows(index, "hog", "standard")
    assert len(killed) == 2, json.dumps(index["runs"], indent=1)  # the first submission, retry
    for row in killed:
        assert row["verdict"] == "KILLED" and row["exit_code"] == 3
        steps = {step["state"] for step in row["slurm"]["steps"]}
        assert "OUT_OF_MEMORY" in steps, row
        assert row["slurm"]["derived_exit_code"] == "0:125"  # Slurm's OOM signal of the step
        assert any("oom-kill event" in line for line in row["slurm"]["lines"]), row
        assert "raise --overhead" in row["reason"]


def check_records(records: dict[str, dict[str, Any]], index: dict[str, Any]) -> None:
    """The script, the index -> cell map, the job ids, the Slurm version; the retry's origin."""
    assert len(records) == 3
    assert sorted(index["submissions"]) == sorted(record["id"] for record in records.values())
    assert all(record["slurm_version"].startswith("slurm") for record in records.values())
    matrix = next(r for r in records.values() if len(r["arrays"][0]["cells"]) == 2)
    array = matrix["arrays"][0]
    assert [(c["index"], c["family"]) for c in array["cells"]] == [(0, "tiny"), (1, "hog")]
    assert "srun --ntasks=1" in array["script"] and array["array"] == "0-1"
    assert f"--dependency=afterany:{array['job_id']}" in matrix["merge"]["sbatch"]
    [retried] = [r for r in records.values() if r["retry_of"]]
    assert retried["arrays"][0]["cells"][0]["profile"] == "standard"
    assert (
        retried["arrays"][0]["script"]
        == records[f"submit-{retried['retry_of']}.json"]["arrays"][0]["script"]
    )


def test_matrix_cells_end_passed_oom_killed_and_killed_by_slurm(
    slurm: Cluster, hog_repo: Path, small_checkpoint: None
) -> None:
    took = {}
    started = time.monotonic()
    # A cell whose allocation (40 MiB, no overhead) cannot even hold qualify: Slurm kills it.
    small = submit(
        hog_repo, "--families", "hog", "--profiles", "standard", "--mem", "40M",
        "--overhead", "0", "--gpus-per-task", "0", "--wait",
    )  # fmt: skip
    assert small.returncode == 3, small.stdout + small.stderr
    took["too small"] = time.monotonic() - started
    sampler = OverheadSampler()
    sampler.start()
    try:
        matrix = submit(
            hog_repo, "--families", "tiny,hog", "--profiles", "small", "--mem", "1536M", "--wait"
        )
    finally:
        sampler.stop.set()
        sampler.join()
    assert matrix.returncode == 3, matrix.stdout + matrix.stderr
    # While it waits: the tasks by state and the merge job's, as they change.
    waited = [line for line in matrix.stderr.splitlines() if line.startswith("qualify submit: ")]
    assert waited and all(" merge job " in line for line in waited), matrix.stderr
    assert waited[0].startswith("qualify submit: array "), waited
    took["tiny,hog"] = time.monotonic() - started - sum(took.values())
    retry = submit(hog_repo, "--retry", "hog/standard", "--wait")
    assert retry.returncode == 3, retry.stdout + retry.stderr
    took["retry"] = time.monotonic() - started - sum(took.values())
    check_output(small.stdout, matrix.stdout)

    head_dir = hog_repo / "reports" / git(hog_repo, "rev-parse", "HEAD")
    index = json.loads((head_dir / "index.json").read_text())
    check_index(index)
    check_records(
        {path.name: json.loads(path.read_text()) for path in head_dir.glob("submit-*.json")},
        index,
    )
    junit = ET.parse(head_dir / "junit.xml").getroot()
    suites = [suite.get("name") for suite in junit.iter("testsuite")]
    assert suites == ["hog/small", "hog/standard", "hog/standard", "tiny/small"]
    errors = [
        error
        for suite in junit.iter("testsuite")
        if suite.get("name") == "hog/standard"
        for error in suite.iter("error")
    ]
    assert [error.get("type") for error in errors] == ["KILLED", "KILLED"]
    assert all("oom-kill" in (error.text or "") for error in errors)
    assert invalid_audits(hog_repo / "reports") == []

    overhead = max(sampler.peaks.values())
    print(
        f"\nmeasured overhead beyond the cap: {overhead / 2**20:.1f} MiB per job "
        f"{[round(v / 2**20, 1) for v in sampler.peaks.values()]}; "
        f"submitted and waited: {', '.join(f'{k} {v:.1f}s' for k, v in took.items())}"
    )
    assert 0 < overhead < DEFAULT_OVERHEAD


def test_bad_submissions_submit_nothing(slurm: Cluster, hog_repo: Path) -> None:
    before = slurm.jobs()
    unknown = submit(hog_repo, "--families", "nope", "--profiles", "small")
    assert unknown.returncode == 2 and "unknown family 'nope'" in unknown.stderr
    refused = submit(
        hog_repo, "--families", "hog", "--profiles", "small", "--partition", "nosuchpartition"
    )
    assert refused.returncode == 4 and "Slurm refused" in refused.stderr, refused.stderr
    assert "invalid partition" in refused.stderr.lower()
    assert slurm.jobs() == before


def test_stopping_the_cluster_leaves_nothing_behind(
    slurm: Cluster, hog_repo: Path, tmp_path: Path
) -> None:
    """Last: a job still running is cancelled, the daemons stop, no cgroup stays, and no run of
    the cells is left registered as dead (the cells' batch scripts took over their own)."""
    said = slurm.run(
        "sbatch", "--parsable", "--mem=64M", "--time=5", f"--output={tmp_path}/%j.out",
        "--wrap", "srun sleep 300",
    )  # fmt: skip
    assert said.returncode == 0, said.stderr
    deadline = time.monotonic() + 30
    while "RUNNING" not in slurm.run("squeue", "--noheader", "--format", "%T").stdout:
        assert time.monotonic() < deadline
        time.sleep(0.1)
    assert cgroup_dirs()
    assert slurm.stop() == []
    assert all(process.poll() is not None for process in slurm.processes.values())
    assert slurm.survivors() == []
    assert cgroup_dirs() == []
    registry = Path("/run/qualify")
    entries = [path.read_text() for path in registry.glob("*.json")] if registry.is_dir() else []
    assert [entry for entry in entries if str(hog_repo) in entry] == []
