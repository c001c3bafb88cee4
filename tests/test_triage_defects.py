"""One test per defect of issue 17, each on real artifacts (tests/data/samples, tests/data/triage).

Where no public artifact shows the case (a handled OOM followed by a passing summary), the log
is made by running pytest for real on a test that prints a real OOM message and passes.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from qualify.evidence.cuda_oom import parse_cuda_oom, segment_bytes
from qualify.evidence.detect import detect
from qualify.evidence.scan import MAX_LINE_BYTES, scan_log
from qualify.triage import Sources, TriageClass, triage
from qualify.triage.render import render_json, render_markdown
from tests.conftest import SAMPLES, qualify_argv

CORPUS = SAMPLES.parent / "triage"
CUDA = SAMPLES / "cuda_oom"
GIB, MIB = 1 << 30, 1 << 20


def one(directory: Path, prefix: str) -> Path:
    (path,) = [p for p in directory.glob("*.txt") if p.name.startswith(prefix)]
    return path


def every_artifact() -> list[Path]:
    dirs = [
        CORPUS,
        *(SAMPLES / d for d in ("cuda_oom", "ci_console", "kernel_oom", "tensorrt_oom")),
    ]
    dirs += [SAMPLES / "pytest_crash", SAMPLES / "pytest_summary"]
    return sorted(p for d in dirs for p in d.glob("*.txt"))


# ---- "Process N has X memory in use" is not always another process


def test_process_listed_that_is_the_failing_process_itself() -> None:
    # FlagGems (in a container): Process 4190197 has 16.48 GiB covers the 16.05 GiB PyTorch
    # itself reserved; Process 1542591 (22.28 GiB) is the other one.
    result = triage(Sources(paths=(one(CORPUS, "gpu-torch-oom-inside-pytest-e-line-process"),)))
    assert any("Process 4190197" in f.title and "itself" in f.title for f in result.findings)
    (others,) = [r for r in result.remedies if r.startswith("other processes")]
    assert "1542591" in others and "4190197" not in others


@pytest.mark.parametrize(
    "prefix", ["vllm-private-pools-process-has", "torch2.1-capacty-typo-process"]
)
def test_only_process_listed_is_this_one(prefix: str) -> None:
    result = triage(Sources(paths=(one(CUDA, prefix),)))
    assert not any(r.startswith("other processes") for r in result.remedies)
    assert any("failing process itself" in r for r in result.remedies)


def test_this_process_sentence_leaves_the_listed_ones_as_others() -> None:
    oom = parse_cuda_oom(one(CUDA, "torch-multiple-process").read_text())
    assert oom is not None and oom.this_process_bytes is not None
    assert oom.self_process() is None and len(oom.other_processes()) == 2


def test_reporter_pid_is_read_from_the_line_head() -> None:
    # vLLM's "(VllmWorker rank=1 pid=194255) ERROR ..." names the process that failed.
    oom = parse_cuda_oom(one(CUDA, "vllm-worker-rank1").read_text())
    assert oom is not None and oom.reporter_pid == 194255


# ---- a per-process cap is tested before fragmentation; legacy "allowed;" parses


@pytest.mark.parametrize("prefix", ["rocm-hip-allowed", "torch-cuda-allowed"])
def test_budget_is_tested_before_fragmentation(prefix: str) -> None:
    oom = parse_cuda_oom(one(CUDA, prefix).read_text())
    assert oom is not None and oom.allowed_bytes is not None
    assert oom.unallocated_bytes is not None and oom.unallocated_bytes >= oom.requested_bytes
    reserved = oom.reserved_total_bytes
    assert reserved is not None
    assert reserved + segment_bytes(oom.requested_bytes) >= oom.allowed_bytes - 10 * MIB
    result = triage(Sources(paths=(one(CUDA, prefix),)))
    assert result.triage_class is TriageClass.CUDA_OOM_BUDGET


def test_legacy_message_with_allowed_parses() -> None:
    path = one(CORPUS, "gpu-torch1.8-legacy-format-with-allowed")
    oom = parse_cuda_oom(path.read_text())
    assert oom is not None and oom.format == "legacy"
    assert oom.allowed_bytes == round(5.59 * GIB)
    assert oom.free_bytes == round(10.91 * GIB) and oom.total_bytes == round(11.17 * GIB)
    assert triage(Sources(paths=(path,))).triage_class is TriageClass.CUDA_OOM_BUDGET


# ---- remedies never state a comparison the numbers contradict


def test_small_request_is_not_said_to_exceed_a_large_free() -> None:
    result = triage(Sources(paths=(one(CUDA, "torch1.0-old"),)))  # 12.50 MiB asked, 9.28 GiB free
    assert not any("exceeded" in r for r in result.remedies)
    assert "9.28 GiB free, more than the 12.5 MiB requested" in result.remedies[0]


_EXCEEDED = re.compile(r"the request \(([\d.]+ \w+)\) exceeded the free memory \(([\d.]+ \w+) ")


@pytest.mark.parametrize("path", every_artifact(), ids=lambda p: p.name[:50])
def test_every_stated_comparison_holds(path: Path) -> None:
    units = {"B": 1, "KiB": 1 << 10, "MiB": MIB, "GiB": GIB}

    def size(text: str) -> float:
        number, unit = text.split()
        return float(number) * units[unit]

    for remedy in triage(Sources(paths=(path,))).remedies:
        if match := _EXCEEDED.search(remedy):
            assert size(match[1]) > size(match[2]), remedy


# ---- an OOM that was handled is not the cause of death


def run_pytest(tmp_path: Path, body: str, *options: str) -> tuple[Path, Path]:
    """A real pytest run of one test: (console log, JUnit XML)."""
    test = tmp_path / "test_handled.py"
    test.write_text(body)
    junit = tmp_path / "junit.xml"
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-s", "-p", "no:cacheprovider", "-o", "addopts=",
         f"--junitxml={junit}", *options, str(test)],
        cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    log = tmp_path / "console.log"
    log.write_text(done.stdout + done.stderr)
    return log, junit


CAUGHT = """
from pathlib import Path

def test_oom_is_caught_and_retried():
    message = Path({sample!r}).read_text()
    try:
        raise MemoryError(message)
    except MemoryError as exc:
        print(exc)  # the program logs the OOM, frees memory and retries
"""


def test_oom_followed_by_a_passing_summary_is_handled(tmp_path: Path) -> None:
    sample = one(CUDA, "torch2.2plus")
    log, junit = run_pytest(tmp_path, CAUGHT.format(sample=str(sample)))
    text = log.read_text()
    assert re.search(r"=+ 1 passed in [\d.]+s =+", text) and "CUDA out of memory" in text
    result = triage(Sources(paths=(log,)))
    assert result.triage_class is TriageClass.PASSED
    (handled,) = [f for f in result.findings if "handled" in f.title]
    assert handled.evidence[0].kind == "cuda_oom"
    assert detect(junit) == "junit"
    assert triage(Sources(paths=(log, junit))).triage_class is TriageClass.PASSED
    # The same log cut before its summary: the OOM is what the text ends on.
    cut = tmp_path / "cut.log"
    cut.write_text(text[: text.rindex("=" * 5, 0, text.index(" passed in"))])
    assert triage(Sources(paths=(cut,))).triage_class.name.startswith("CUDA_OOM")


@pytest.mark.parametrize("color", ["no", "yes"])
def test_oom_followed_by_a_quiet_passing_summary_is_handled(tmp_path: Path, color: str) -> None:
    """The same under ``pytest -q``, whose summary is one line without ``=`` rules (and, with
    ``--color=yes``, with the colour codes between its words): it was not read, so the OOM
    the test caught was taken for what ended the run."""
    sample = one(CUDA, "torch2.2plus")
    log, _ = run_pytest(tmp_path, CAUGHT.format(sample=str(sample)), "-q", f"--color={color}")
    text = log.read_text()
    last = text.rstrip().splitlines()[-1]
    assert "=" not in last and "1 passed" in last and "CUDA out of memory" in text
    assert ("\x1b[" in last) == (color == "yes")
    result = triage(Sources(paths=(log,)))
    assert result.triage_class is TriageClass.PASSED
    (handled,) = [f for f in result.findings if "handled" in f.title]
    assert handled.evidence[0].kind == "cuda_oom"
    cut = tmp_path / "cut.log"
    cut.write_text(text[: text.rindex(last)])
    assert triage(Sources(paths=(cut,))).triage_class.name.startswith("CUDA_OOM")


FAILS_AFTER = """
from pathlib import Path

def test_oom_then_a_failure():
    print(Path({sample!r}).read_text())
    assert False, "the retry failed too"
"""


@pytest.mark.parametrize("color", ["no", "yes"])
def test_a_quiet_failing_summary_counts_the_failure(tmp_path: Path, color: str) -> None:
    """``pytest -q`` with a test that failed after the OOM: the summary names the failure and
    the OOM stays the cause."""
    sample = one(CUDA, "torch2.2plus")
    log, _ = run_pytest(tmp_path, FAILS_AFTER.format(sample=str(sample)), "-q", f"--color={color}")
    summaries = scan_log(log).of_kind("pytest_summary")
    assert [s.signal.fields["summary"] for s in summaries] == ["1 failed"]
    assert triage(Sources(paths=(log,))).triage_class.name.startswith("CUDA_OOM")


@pytest.mark.parametrize(
    ("prefix", "line"),
    [("gpu-handled-comfyui", 1), ("gpu-handled-tensorflow-bfc", 4)],
)
def test_oom_retried_by_the_program_is_handled(prefix: str, line: int) -> None:
    result = triage(Sources(paths=(one(CORPUS, prefix),)))
    assert result.triage_class is TriageClass.UNKNOWN
    assert any(e.line == line for f in result.findings for e in f.evidence)


# ---- text far into one line is read, and a long line is said


def progress_line(length: int) -> bytes:
    """A real Keras progress bar (the TensorFlow artifact's first line), redrawn with \\r."""
    bar = one(CORPUS, "gpu-handled-tensorflow-bfc").read_bytes().splitlines()[0]
    return b"\r".join([bar] * (length // len(bar) + 1))


@pytest.mark.parametrize("offset", [9 << 10, 3 * MAX_LINE_BYTES])
def test_oom_message_deep_inside_one_line(tmp_path: Path, offset: int) -> None:
    sample = one(CUDA, "torch1.x-old")
    alone = triage(Sources(paths=(sample,)))
    path = tmp_path / "console.log"
    path.write_bytes(b"setup\n" + progress_line(offset) + b"\r" + sample.read_bytes())
    result = triage(Sources(paths=(path,)))
    assert (result.triage_class, result.summary) == (alone.triage_class, alone.summary)
    assert result.decided_by[0].line == 2
    long_warning = [w for w in result.warnings if "read in windows" in w]
    assert bool(long_warning) is (offset > MAX_LINE_BYTES)


# ---- findings never print "pid None"; CGROUP_OOM gets a remedy with numbers


@pytest.mark.parametrize("path", every_artifact(), ids=lambda p: p.name[:50])
def test_no_unknown_value_is_printed(path: Path) -> None:
    result = triage(Sources(paths=(path,)))
    # (a line quoted from the input says what it says: python-chess's "Connection lost (exit
    # code: -11, error: None)")
    text = "\n".join(line for line in render_markdown(result).splitlines() if str(path) not in line)
    assert "None" not in text.replace("NoneType", "")
    assert "pid -" not in text


@pytest.mark.parametrize(
    ("path", "figures"),
    [
        (one(CORPUS, "kernel-k8s-v1-wrapped"), ("limit is 512 MiB", "usage reached 512 MiB")),
        (one(CORPUS, "kernel-v2-syslog-report-cut"), ("limit is 1 GiB", "usage reached 1 GiB")),
        (one(SAMPLES / "kernel_oom", "aks-k5.15-azure-cgroup-v2-memcg"), ("limit is", "usage")),
    ],
    ids=["kubedirector", "dpservice", "aks"],
)
def test_cgroup_oom_remedy_has_the_numbers(path: Path, figures: tuple[str, str]) -> None:
    result = triage(Sources(paths=(path,)))
    assert result.triage_class is TriageClass.CGROUP_OOM
    assert any(all(f in r for f in figures) for r in result.remedies), result.remedies


def test_cgroup_oom_without_figures_still_gets_a_remedy() -> None:
    for prefix in ("kill-k8s-describe-last-state-terminated", "kill-slurm-slurmstepd-detected"):
        result = triage(Sources(paths=(one(CORPUS, prefix),)))
        assert result.triage_class is TriageClass.CGROUP_OOM and result.remedies


# ---- any input, any flag: kinds detected from content, "-" is standard input


@pytest.mark.parametrize(
    ("directory", "kind"),
    [("kernel_oom", "kernel"), ("docker_inspect", "inspect"), ("ci_console", "log"),
     ("cuda_oom", "log"), ("tensorrt_oom", "log"), ("pytest_crash", "log"),
     ("pytest_summary", "log")],
)  # fmt: skip
def test_kind_is_detected_from_the_content(directory: str, kind: str) -> None:
    for path in (SAMPLES / directory).glob("*.txt"):
        if not path.name.startswith("REFERENCE"):
            assert detect(path) == kind, path.name


def test_pod_descriptions_and_run_dirs_are_detected(tmp_path: Path) -> None:
    assert detect(one(CORPUS, "kill-k8s-describe-last-state-terminated")) == "pod"
    assert detect(tmp_path) == "run_dir"


def test_detected_inputs_decide_like_flagged_ones() -> None:
    console = one(SAMPLES / "ci_console", "gha-killed-then")
    kernel = one(SAMPLES / "kernel_oom", "aks-k5.15-azure-cgroup-v2-memcg")
    inspect = one(SAMPLES / "docker_inspect", "state-fragment-oomkilled-true")
    auto = triage(Sources(paths=(console, kernel, inspect)))
    flagged = triage(Sources(logs=(console,), kernel=(kernel,), inspect=(inspect,)))
    assert auto.triage_class is flagged.triage_class is TriageClass.CGROUP_OOM
    assert auto.decided_by == flagged.decided_by
    assert [i["kind"] for i in auto.inputs] == ["logs", "inspect", "kernel"]
    assert all(i["detected"] for i in auto.inputs)


def cli(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "GITHUB_ACTIONS")}
    return subprocess.run(
        qualify_argv("triage", *args), input=stdin, capture_output=True, timeout=120,
        check=False, env=env,
    )  # fmt: skip


def test_standard_input_is_read() -> None:
    path = one(CORPUS, "kill-slurm-slurmstepd-detected")
    done = cli("-", "--format", "json", stdin=path.read_bytes())
    found = json.loads(done.stdout)
    assert done.returncode == 3 and found["class"] == "CGROUP_OOM"
    assert found["inputs"] == [{"kind": "logs", "path": "<stdin>", "detected": True}]
    assert all(e["source"] == "<stdin>" for e in found["decided_by"])


def test_positional_files_of_mixed_kinds() -> None:
    console = one(SAMPLES / "ci_console", "gha-killed-then")
    kernel = one(SAMPLES / "kernel_oom", "aks-k5.15-azure-cgroup-v2-memcg")
    done = cli(str(console), str(kernel), "--format", "json")
    assert json.loads(done.stdout)["class"] == "CGROUP_OOM"
    missing = cli(str(console.with_name("no-such-file.txt")))
    assert missing.returncode == 2 and b"no such file" in missing.stderr


def test_utf16_log_is_decoded(tmp_path: Path) -> None:
    original = one(CORPUS, "kill-jenkins-killed-script")
    path = tmp_path / "console-utf16.log"
    path.write_bytes(original.read_text().encode("utf-16"))  # PowerShell's Out-File
    result = triage(Sources(paths=(path,)))
    assert result.triage_class is triage(Sources(paths=(original,))).triage_class
    assert not any("binary" in w for w in result.warnings)
    assert scan_log(path).encoding == "utf-16-le"
    assert json.loads(render_json(result))["class"] == "EXTERNAL_KILL"


# ---- kernel reports: one kill per event, cut reports still decide


@pytest.mark.parametrize(
    ("prefix", "pid"),
    [("kernel-k3.10-syslog-kill-process-and-killed", 33421), ("kernel-k8s-v1-wrapped", 62769)],
)
def test_kill_process_and_killed_process_are_one_kill(prefix: str, pid: int) -> None:
    result = triage(Sources(paths=(one(CORPUS, prefix),)))
    assert result.triage_class is TriageClass.CGROUP_OOM
    assert result.conflicts == ()
    assert [v["pid"] for v in result.attribution["victims"]] == [pid]


def test_report_cut_before_the_kill_line_is_a_cgroup_oom_with_low_confidence() -> None:
    result = triage(Sources(paths=(one(CORPUS, "kernel-v2-syslog-report-cut"),)))
    assert (result.triage_class, result.confidence) == (TriageClass.CGROUP_OOM, "low")
    assert json.loads(render_json(result))["confidence"] == "low"


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        # Captured from the suite's own Slurm cluster (tests/data/samples/slurm/SOURCES.md).
        ("output-cancelled.txt", TriageClass.EXTERNAL_KILL),  # scancel of a running job
        ("output-timeout.txt", TriageClass.TIMEOUT),  # the same words, DUE TO TIME LIMIT
    ],
)
def test_slurm_cancel_and_time_limit(name: str, expected: TriageClass) -> None:
    found = triage(Sources(logs=(SAMPLES / "slurm" / name,)))
    assert found.triage_class is expected
    assert any("CANCELLED AT" in evidence.text for evidence in found.decided_by)
