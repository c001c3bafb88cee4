"""qualify triage on real captured artifacts: every sample file, exact fields and classes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from qualify.evidence.docker_state import parse_docker_state, read_docker_state
from qualify.evidence.lines import parse_line
from qualify.evidence.scan import scan_log
from qualify.triage import Sources, TriageClass, triage
from qualify.triage.render import render_json, render_markdown
from tests.conftest import SAMPLES

TRIAGE_DATA = Path(__file__).parent / "data" / "triage"
KIB = 1024


def sample(directory: str, prefix: str) -> Path:
    (path,) = [p for p in (SAMPLES / directory).glob("*.txt") if p.name.startswith(prefix)]
    return path


def covered(directory: str, table: list[tuple[Any, ...]]) -> None:
    names = {p.name for p in (SAMPLES / directory).glob("*.txt")}
    assert {n for n in names for row in table if n.startswith(row[0])} == names


# file prefix, class, victim (pid, comm, anon-rss KiB) or None, line of the first evidence
KERNEL_TABLE: list[tuple[Any, ...]] = [
    ("aks-k5.15-azure-cgroup-v2-kubepods", TriageClass.CGROUP_OOM, (7788, "bash", 7165824), 93),
    ("aks-k5.15-azure-cgroup-v2-memcg", TriageClass.CGROUP_OOM, (183960, "stress-ng-vm", 93176), 85),
    ("cadvisor-k3.13-ubuntu-cgroup-v1", TriageClass.CGROUP_OOM, (13536, "memorymonster", 920), 23),
    ("cadvisor-k3.13-ubuntu-global", TriageClass.GLOBAL_OOM, (1532, "badsysprogram", 1595164), 80),
    ("cadvisor-k4.8-docker", TriageClass.CGROUP_OOM, (1381, "gunpowder-memho", 18624), 21),
    ("console-global", TriageClass.GLOBAL_OOM, (934, "sleep", 256), 1),
    ("dmesg-global-oom-tail", TriageClass.GLOBAL_OOM, (1811, "stress-ng", 0), 9),
    ("dmesg-iso-time", TriageClass.GLOBAL_OOM, (1440763, "perl", 60356340), 4),
    ("journal-kernel-prefix", TriageClass.CGROUP_OOM, None, 2),
    ("local-k6.18-cgroup-v1-memcg-oom-dmesg-no", TriageClass.CGROUP_OOM, (3178, "python3", 65280), 80),
    ("local-k6.18-cgroup-v1-memcg-oom-dmesg.txt", TriageClass.CGROUP_OOM, (3178, "python3", 65280), 80),
    ("oom-analyzer-k4.18", TriageClass.GLOBAL_OOM, (3117813, "cache-main", 4805020), 95),
]  # fmt: skip


def test_kernel_table_covers_every_sample() -> None:
    covered("kernel_oom", KERNEL_TABLE)


@pytest.mark.parametrize("row", KERNEL_TABLE, ids=[row[0] for row in KERNEL_TABLE])
def test_kernel_reports(row: tuple[Any, ...]) -> None:
    prefix, expected, victim, first_line = row
    result = triage(Sources(kernel=(sample("kernel_oom", prefix),)))
    assert result.triage_class is expected
    assert result.exit_code == 3
    assert result.decided_by[0].line == first_line
    victims = result.attribution["victims"]
    if victim is None:
        assert victims == []
    else:
        pid, comm, anon_kib = victim
        assert (victims[0]["pid"], victims[0]["comm"]) == (pid, comm)
        assert victims[0]["anon_rss_bytes"] == anon_kib * KIB


def test_oom_kill_line_fields() -> None:
    line = (
        "[  219.351982] oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/,"
        "mems_allowed=0,oom_memcg=/a/b,task_memcg=/a/b/c,task=python3,pid=3178,uid=0"
    )
    found = parse_line(line)
    assert found is not None and found.kind == "kernel_oom_kill"
    assert found.fields["oom_memcg"] == "/a/b" and found.fields["task_memcg"] == "/a/b/c"
    assert (found.fields["task"], found.fields["pid"], found.fields["uid"]) == (
        "python3",
        3178,
        "0",
    )
    assert found.fields["scope"] == "memcg"


def test_journal_and_syslog_prefixes() -> None:
    journal = parse_line("kernel: systemd invoked oom-killer: gfp_mask=0xcc0(GFP_KERNEL), order=0")
    assert journal is not None and journal.fields["comm"] == "systemd"
    syslog = sample("kernel_oom", "oom-analyzer").read_text().splitlines()[0]
    found = parse_line(syslog)
    assert found is not None and found.fields["comm"] == "in:imjournal"


# file prefix, OOMKilled, ExitCode, line of OOMKilled (None: docker events)
DOCKER_TABLE: list[tuple[Any, ...]] = [
    ("docker-events-oom-then-die", None, 137, None),
    ("inspect-head-oomkilled-false", False, 137, 17),
    ("state-fragment-oomkilled-false", False, 137, 6),
    ("state-fragment-oomkilled-true", True, 137, 6),
]


def test_docker_table_covers_every_sample() -> None:
    covered("docker_inspect", DOCKER_TABLE)


@pytest.mark.parametrize("row", DOCKER_TABLE, ids=[row[0] for row in DOCKER_TABLE])
def test_docker_state(row: tuple[Any, ...]) -> None:
    prefix, oom_killed, exit_code, line = row
    state, problem = read_docker_state(sample("docker_inspect", prefix))
    assert problem is None
    assert (state.oom_killed, state.exit_code) == (oom_killed, exit_code)
    if line is not None:
        (evidence,) = [e for e in state.evidence if e.kind == "docker_oomkilled"]
        assert evidence.line == line
    else:
        assert state.oom_event
    result = triage(Sources(inspect=(sample("docker_inspect", prefix),)))
    expected = TriageClass.EXTERNAL_KILL if oom_killed is False else TriageClass.CGROUP_OOM
    assert result.triage_class is expected


def test_docker_false_with_kernel_memcg_is_a_conflict() -> None:
    result = triage(
        Sources(
            inspect=(sample("docker_inspect", "state-fragment-oomkilled-false"),),
            kernel=(sample("kernel_oom", "local-k6.18-cgroup-v1-memcg-oom-dmesg.txt"),),
        )
    )
    assert result.triage_class is TriageClass.CGROUP_OOM
    (conflict,) = result.conflicts
    assert "OOMKilled=false" in conflict.title
    assert {e.kind for e in conflict.evidence} >= {"docker_oomkilled", "kernel_oom_kill"}


def test_docker_true_with_global_kernel_report_is_a_conflict() -> None:
    result = triage(
        Sources(
            inspect=(sample("docker_inspect", "state-fragment-oomkilled-true"),),
            kernel=(sample("kernel_oom", "dmesg-iso-time"),),
        )
    )
    assert any("global" in c.title for c in result.conflicts)


def test_docker_error_is_infra() -> None:
    state = parse_docker_state('"OOMKilled": false,\n"ExitCode": 128,\n"Error": "OCI runtime"')
    assert state.error == "OCI runtime" and state.exit_code == 128


# file prefix, class, kinds seen (in order, deduplicated)
CONSOLE_TABLE: list[tuple[Any, ...]] = [
    ("gha-annotations-shutdown", TriageClass.EXTERNAL_KILL, ["runner_shutdown", "exit_code", "canceled"]),
    ("gha-docker-exec", TriageClass.EXTERNAL_KILL, ["exit_code"]),
    ("gha-killed-then", TriageClass.EXTERNAL_KILL, ["shell_killed", "exit_code"]),
    ("gha-raw-log-killed", TriageClass.EXTERNAL_KILL, ["shell_killed", "exit_code"]),
    ("gha-raw-log-runner-shutdown", TriageClass.EXTERNAL_KILL, ["runner_shutdown", "canceled"]),
]  # fmt: skip


def kinds(path: Path) -> list[str]:
    seen: list[str] = []
    for found in scan_log(path).signals:
        if found.signal.kind not in seen:
            seen.append(found.signal.kind)
    return seen


def test_console_table_covers_every_sample() -> None:
    covered("ci_console", CONSOLE_TABLE)


@pytest.mark.parametrize("row", CONSOLE_TABLE, ids=[row[0] for row in CONSOLE_TABLE])
def test_ci_console(row: tuple[Any, ...]) -> None:
    prefix, expected, seen = row
    path = sample("ci_console", prefix)
    assert kinds(path) == seen
    result = triage(Sources(logs=(path,)))
    assert result.triage_class is expected
    assert any("kernel log" in m for m in result.missing)  # an OOM is not ruled out


def test_exit_137_plus_kernel_memcg_is_cgroup_oom() -> None:
    result = triage(
        Sources(
            logs=(sample("ci_console", "gha-killed-then"),),
            kernel=(sample("kernel_oom", "aks-k5.15-azure-cgroup-v2-memcg"),),
        )
    )
    assert result.triage_class is TriageClass.CGROUP_OOM


# file prefix, class, crashed worker, nodeid of the crash (None: not on that line)
PYTEST_TABLE: list[tuple[Any, ...]] = [
    ("xdist-crashed-restarting", TriageClass.UNKNOWN, "gw0", None),
    ("xdist-crashed-while-running-plus-FAILED", TriageClass.UNKNOWN, "gw0",
     "test_0053_hang_watchdog.py::test_watching_restores_the_previous_watchdog"),
    ("xdist-worker-crashed", TriageClass.UNKNOWN, "gw3",
     "tests/test_integration/test_throttling/test_backends/test_redis_backend/"
     "test_redis_unsupported.py::test_redis_with_unsupported_algorithm[True]"),
    ("xdist1.28-windows", TriageClass.UNKNOWN, "gw1", None),
    ("xdist2.3-node-down", TriageClass.UNKNOWN, "gw0", None),
    ("xdist2.5-node-down", TriageClass.UNKNOWN, "gw0", None),
    ("xdist2.5-verbose", TriageClass.UNKNOWN, "gw0", None),
]  # fmt: skip


def test_pytest_table_covers_every_sample() -> None:
    covered("pytest_crash", PYTEST_TABLE)


@pytest.mark.parametrize("row", PYTEST_TABLE, ids=[row[0] for row in PYTEST_TABLE])
def test_pytest_crash(row: tuple[Any, ...]) -> None:
    prefix, expected, worker, nodeid = row
    path = sample("pytest_crash", prefix)
    crashes = scan_log(path).of_kind("xdist_crash", "xdist_node_down")
    assert crashes[0].signal.fields["worker"] == worker
    if crashes[0].signal.kind == "xdist_crash":
        assert crashes[0].signal.fields["nodeid"] == nodeid
    result = triage(Sources(logs=(path,)))
    assert result.triage_class is expected
    assert any("worker died" in m for m in result.missing)


# file prefix, signal kind, the summary's counts
SUMMARY_TABLE: list[tuple[str, str, str]] = [
    ("quiet-failed-errors", "pytest_summary", "841 failed, 8423 passed, 968 skipped, 16 errors"),
    ("rule-one-equals-rerun", "pytest_summary",
     "2 failed, 2424 passed, 149 skipped, 14 xfailed, 16 rerun"),
]  # fmt: skip


def test_pytest_summary_table_covers_every_sample() -> None:
    covered("pytest_summary", SUMMARY_TABLE)


@pytest.mark.parametrize("row", SUMMARY_TABLE, ids=[row[0] for row in SUMMARY_TABLE])
def test_pytest_summary(row: tuple[str, str, str]) -> None:
    """The summary line, with ``=`` rules or alone (``-q``), gives the counts."""
    prefix, kind, counts = row
    found = scan_log(sample("pytest_summary", prefix)).of_kind("pytest_summary", "pytest_passed")
    assert [(s.signal.kind, s.signal.fields["summary"]) for s in found] == [(kind, counts)]


def test_crashed_worker_with_a_kernel_report_is_the_oom() -> None:
    result = triage(
        Sources(
            logs=(sample("pytest_crash", "xdist-worker-crashed"),),
            kernel=(sample("kernel_oom", "local-k6.18-cgroup-v1-memcg-oom-dmesg.txt"),),
        )
    )
    assert result.triage_class is TriageClass.CGROUP_OOM


# file prefix, class, requested bytes of the first decisive or warning line
TRT_TABLE: list[tuple[Any, ...]] = [
    ("deepstream", TriageClass.CUDA_OOM_CAPACITY, 4294967296),
    ("torch2trt-legacy", TriageClass.CUDA_OOM_CAPACITY, 150994944),
    ("trt-python-logger", TriageClass.CUDA_OOM_CAPACITY, 17179869184),
    ("trt-streamdiffusion", TriageClass.UNKNOWN, 11580055552),
    ("trt8.2-cpp-warning", TriageClass.UNKNOWN, 4294967296),
    ("trtllm-build-py", TriageClass.CUDA_OOM_CAPACITY, 24793579520),
    ("trtllm-build-unsupported", TriageClass.CUDA_OOM_CAPACITY, 33555480576),
    ("trtllm0.12", TriageClass.CUDA_OOM_CAPACITY, 16654532608),
]


def test_trt_table_covers_every_sample() -> None:
    covered("tensorrt_oom", TRT_TABLE)


@pytest.mark.parametrize("row", TRT_TABLE, ids=[row[0] for row in TRT_TABLE])
def test_tensorrt(row: tuple[Any, ...]) -> None:
    prefix, expected, requested = row
    path = sample("tensorrt_oom", prefix)
    sizes = [
        s.signal.fields["requested_bytes"]
        for s in scan_log(path).of_kind("trt_oom", "trt_oom_warning")
        if s.signal.fields.get("requested_bytes")
    ]
    assert sizes[0] == requested
    assert triage(Sources(logs=(path,))).triage_class is expected


# file prefix, class (the sub-kind from qualify.cuda_oom: tests/test_gpu.py checks the numbers)
CUDA_TABLE: list[tuple[str, TriageClass]] = [
    ("rocm-hip-PYTORCH_HIP", TriageClass.CUDA_OOM_CAPACITY),
    ("rocm-hip-allowed", TriageClass.CUDA_OOM_BUDGET),  # a cap: tested before fragmentation
    ("torch-cuda-allowed", TriageClass.CUDA_OOM_BUDGET),
    ("torch-multiple-process", TriageClass.CUDA_OOM_CAPACITY),
    ("torch-npu-legacy-current-active-frag", TriageClass.CUDA_OOM_FRAGMENTATION),
    ("torch-npu-legacy-current-active-capacity", TriageClass.CUDA_OOM_CAPACITY),
    ("torch1.0-old", TriageClass.CUDA_OOM_CAPACITY),
    ("torch1.x-old", TriageClass.CUDA_OOM_CAPACITY),
    ("torch2.0-old", TriageClass.CUDA_OOM_CAPACITY),
    ("torch2.1-capacty-typo-including", TriageClass.CUDA_OOM_CAPACITY),
    ("torch2.1-capacty-typo-no-process", TriageClass.CUDA_OOM_CAPACITY),
    ("torch2.1-capacty-typo-process-has", TriageClass.CUDA_OOM_CAPACITY),
    ("torch2.1-capacty-typo-wrapped", TriageClass.CUDA_OOM_FRAGMENTATION),
    ("torch2.10-PYTORCH_ALLOC_CONF", TriageClass.CUDA_OOM_CAPACITY),
    ("torch2.2plus", TriageClass.CUDA_OOM_FRAGMENTATION),
    ("torch2.x-no-docs-url", TriageClass.CUDA_OOM_FRAGMENTATION),
    ("vllm-private-pools-cuda-graphs", TriageClass.CUDA_OOM_CAPACITY),
    ("vllm-private-pools-process-has", TriageClass.CUDA_OOM_FRAGMENTATION),
    ("vllm-v1-engine-core", TriageClass.CUDA_OOM_CAPACITY),
    ("vllm-worker-rank1", TriageClass.CUDA_OOM_CAPACITY),
]


def test_cuda_table_covers_every_sample() -> None:
    names = {p.name for p in (SAMPLES / "cuda_oom").glob("*.txt")} - {
        p.name for p in (SAMPLES / "cuda_oom").glob("REFERENCE*")
    }
    assert {n for n in names for row in CUDA_TABLE if n.startswith(row[0])} == names


@pytest.mark.parametrize("row", CUDA_TABLE, ids=[row[0] for row in CUDA_TABLE])
def test_cuda_oom_logs(row: tuple[str, TriageClass]) -> None:
    prefix, expected = row
    result = triage(Sources(logs=(sample("cuda_oom", prefix),)))
    assert result.triage_class is expected
    assert result.decided_by[0].kind == "cuda_oom"
    if expected is TriageClass.CUDA_OOM_FRAGMENTATION:
        assert any("expandable_segments:True" in r and ">= request" in r for r in result.remedies)


def test_fragmentation_remedy_numbers() -> None:
    result = triage(Sources(logs=(sample("cuda_oom", "vllm-private-pools-process-has"),)))
    assert result.remedies[0] == (
        "set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True "
        "(reserved-unallocated 737 MiB >= request 546 MiB)"
    )


def test_budget_from_the_message() -> None:
    path = (
        TRIAGE_DATA / "gpu-hip-rocm-budget-allowed-pytest-failed-duration-gfx950-therock-2118.txt"
    )
    result = triage(Sources(logs=(path,)))
    assert result.triage_class is TriageClass.CUDA_OOM_BUDGET
    assert result.remedies[0].startswith(
        "the per-process GPU budget (1.05 GiB) was the wall (the device had 276 GiB free): "
        "PyTorch held 1.05 GiB and the request maps 20 MiB more"
    )


def test_reference_note_is_not_an_oom() -> None:
    result = triage(Sources(logs=(sample("cuda_oom", "REFERENCE"),)))
    assert result.triage_class is TriageClass.UNKNOWN


# ---- garbage never crashes it


def test_binary_log(tmp_path: Path) -> None:
    path = tmp_path / "core.bin"
    path.write_bytes(bytes(range(256)) * 4000)
    result = triage(Sources(logs=(path,)))
    assert result.triage_class is TriageClass.UNKNOWN
    assert any("binary" in w for w in result.warnings) and result.missing


def test_empty_files(tmp_path: Path) -> None:
    empty = tmp_path / "empty.txt"
    empty.write_bytes(b"")
    result = triage(
        Sources(
            logs=(empty,), kernel=(empty,), inspect=(empty,), junit=(empty,), report_log=(empty,)
        )
    )
    assert result.triage_class is TriageClass.UNKNOWN
    assert any("is empty" in w for w in result.warnings)
    assert any("not valid XML" in w for w in result.warnings)


@pytest.mark.foreign_audit
def test_wrong_json_everywhere(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "audit.json").write_text("[1, 2")
    (run / "events.jsonl").write_text('{"event": "phase_start"\n[]\n"x"\n')
    (run / "timeline.jsonl").write_text('{"usage": "many"}\n{"mono": 1}\n')
    report = tmp_path / "report.jsonl"
    report.write_text("[]\nnot json\n")
    inspect = tmp_path / "inspect.json"
    inspect.write_text(json.dumps({"State": "odd"}))
    result = triage(Sources(run_dir=run, report_log=(report,), inspect=(inspect,)))
    assert result.triage_class is TriageClass.UNKNOWN
    assert any("audit.json is not valid JSON" in w for w in result.warnings)
    assert json.loads(render_json(result))["class"] == "UNKNOWN"


def test_long_lines_are_bounded(tmp_path: Path) -> None:
    path = tmp_path / "long.log"
    oom = sample("cuda_oom", "torch2.2plus").read_bytes().strip()
    with path.open("wb") as handle:
        handle.write(b"x" * (20 << 20) + b"\n")  # one 20 MiB line, no newline for blocks
        handle.write(b"error " * 100_000 + b"\n")
        handle.write(oom + b"\n")
    scan = scan_log(path)
    assert scan.lines == 3
    assert scan.cuda_ooms[0][0].line == 3
    assert len(scan.cuda_ooms[0][0].text) <= 400


def test_streamed_log_with_oom_near_the_end(tmp_path: Path) -> None:
    path = tmp_path / "console.log"
    filler = b"2024-04-14T21:49:58.7397481Z    Compiling crate v0.7.1 (step ok)\n" * 200_000
    with path.open("wb") as handle:
        handle.write(filler)
        handle.write(sample("cuda_oom", "vllm-worker-rank1").read_bytes())
        handle.write(b"Error: Process completed with exit code 1.\n")
    result = triage(Sources(logs=(path,)))
    assert result.triage_class is TriageClass.CUDA_OOM_CAPACITY
    assert result.decided_by[0].line == 200_001


def test_markdown_fits_a_pr_comment(tmp_path: Path) -> None:
    path = tmp_path / "many.log"
    line = sample("kernel_oom", "console-global").read_text().splitlines()[0]
    path.write_text("\n".join(f"{line} {i}" for i in range(5000)))
    text = render_markdown(triage(Sources(kernel=(path,))))
    assert len(text.encode()) < 64 * 1024
    assert text.startswith("### qualify triage: `GLOBAL_OOM`")


# ruff: noqa: E501  (the sample tables keep one row per real file)
