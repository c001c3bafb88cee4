"""Out-of-memory sentences read by their parts (``qualify.evidence.oom_parts``): the wordings of
ecosystems no named parser knows, classified by what they state. The lines are the wordings a
report on triage quoted from real artifacts (JAX, TensorFlow, Apple MPS, ggml, Ray, GitLab's
Kubernetes executor, DeepSpeed, Slurm, Julia, Python, PyTorch's CPU allocator, Kubernetes,
NCCL); the corpus of whole artifacts is tests/data/triage/ (and its held-out half)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from qualify.evidence.gpu_lines import parse_engine_line
from qualify.evidence.headers import unquoted
from qualify.evidence.lines import parse_line, parse_orchestrator_line
from qualify.evidence.oom_parts import in_source, parse_oom_parts
from qualify.evidence.pod import memory_used_up, platform_named
from qualify.triage import Sources, Triage, TriageClass, triage
from tests.test_triage_corpus import CORPUS


def _triage_text(tmp_path: Path, text: str) -> Triage:
    """``text`` triaged as a file of its own, its kind detected from its content."""
    log = tmp_path / "issue.txt"
    log.write_text(text, encoding="utf-8")
    return triage(Sources(paths=(log,)))


CASES = [
    (
        "jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying "
        "to allocate 17179869184 bytes.",
        TriageClass.CUDA_OOM_CAPACITY,
    ),
    (
        "tensorflow.python.framework.errors_impl.ResourceExhaustedError: OOM when allocating "
        "tensor with shape[32,1024,1024] and type float on /job:localhost/replica:0/task:0/"
        "device:GPU:0 by allocator GPU_0_bfc",
        TriageClass.CUDA_OOM_CAPACITY,
    ),
    (
        "RuntimeError: MPS backend out of memory (MPS allocated: 17.23 GB, other allocations: "
        "1.45 GB, max allowed: 18.13 GB). Tried to allocate 512.00 MB on private pool.",
        TriageClass.CUDA_OOM_BUDGET,
    ),
    (
        "ggml_backend_cuda_buffer_type_alloc_buffer: allocating 8192.00 MiB on device 0: "
        "cudaMalloc failed: out of memory",
        TriageClass.CUDA_OOM_CAPACITY,
    ),
    (
        "llama_model_load: error loading model: unable to allocate ROCm0 buffer",
        TriageClass.CUDA_OOM_CAPACITY,
    ),
    (
        "ray.exceptions.OutOfMemoryError: Task was killed due to the node running low on memory.",
        TriageClass.GLOBAL_OOM,
    ),
    ("    reason: 'OOMKilled'", TriageClass.CGROUP_OOM),
    (
        "[launch.py:315:sigkill_handler] Killing subprocess 4182 ... exits with return code = -9",
        TriageClass.EXTERNAL_KILL,
    ),
    (
        "slurmstepd: error: Job 4242 exceeded memory limit (16777216 > 16384000), being killed",
        TriageClass.CGROUP_OOM,
    ),
    ("srun: Exceeded job memory limit", TriageClass.CGROUP_OOM),
    (
        "ERROR: LoadError: Out of GPU memory trying to allocate 1.000 GiB",
        TriageClass.CUDA_OOM_CAPACITY,
    ),
    ("MemoryError: Unable to allocate 7.45 GiB for an array", TriageClass.HOST_ALLOC_FAILED),
    (
        "RuntimeError: [enforce fail at alloc_cpu.cpp:83] err == 0. DefaultCPUAllocator: can't "
        "allocate memory: you tried to allocate 34359738368 bytes. Error code 12 (Cannot "
        "allocate memory)",
        TriageClass.HOST_ALLOC_FAILED,
    ),
    (
        "Warning  Unhealthy  Liveness probe failed: Get http://10.0.0.5:8080/health: timeout\n"
        "Normal   Killing    Container model failed liveness probe, will be restarted",
        TriageClass.EXTERNAL_KILL,
    ),
    (
        "[Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, "
        "OpType=ALLREDUCE) ran for 1800000 milliseconds before timing out.",
        TriageClass.TIMEOUT,
    ),
    (
        "Allocation on device 0 would exceed allowed memory. (out of memory)",
        TriageClass.CUDA_OOM_CAPACITY,
    ),
    (
        "torch.OutOfMemoryError: XPU out of memory. Tried to allocate 2.00 GiB. GPU 0 has a "
        "total capacity of 15.11 GiB. Of the allocated memory 8.27 GiB allowed; 6.50 GiB "
        "allocated by PyTorch",
        TriageClass.CUDA_OOM_BUDGET,
    ),
    # Part C1 of the corpus (schedulers, serverless platforms, runtimes): a refusal whose verb
    # stands apart from the word memory, a limit stated with its size, an exit code whose
    # message names the OOM, a kill quoted mid-line, gcc's killed compiler.
    (
        'Slogan: sys_alloc: Cannot allocate 71302344 bytes of memory (of type "heap").',
        TriageClass.HOST_ALLOC_FAILED,
    ),
    (
        'eheap_alloc: Cannot allocate 976733209832459912 bytes of memory (of type "heap_frag").',
        TriageClass.HOST_ALLOC_FAILED,
    ),
    (
        "Memory limit of 256 MiB exceeded with 264 MiB used. Consider increasing the memory "
        "limit, see https://cloud.google.com/functions/docs/configuring/memory ",
        TriageClass.CGROUP_OOM,
    ),
    (
        "We have a problem with all our services killed without much taffic. Our Spring Boot "
        'Backend services exit with the message ` Exit Code: 137, Exit Message: "OOM Killed"`. '
        "We limited the memory of the containers to 300mb.",
        TriageClass.CGROUP_OOM,
    ),
    (
        "The failure reason of the task that caused the workflow execution to fail was: "
        ".command.sh: line 20: 118 Killed diann `cat diann_config.cfg` --fasta x.fasta",
        TriageClass.EXTERNAL_KILL,
    ),
    (
        'I saw many "g++: internal compiler error: Killed (program cc1plus)" errors while '
        "building apache/thrift on Travis. As far as I know this normally indicates not enough "
        "memory.",
        TriageClass.EXTERNAL_KILL,
    ),
]


@pytest.mark.parametrize(("text", "expected"), CASES, ids=[str(n) for n in range(len(CASES))])
def test_a_wording_is_classified_by_its_parts(
    tmp_path: Path, text: str, expected: TriageClass
) -> None:
    log = tmp_path / "job.log"
    log.write_text(text + "\n")
    result = triage(Sources(paths=(log,)))
    assert result.triage_class is expected, result.summary
    assert result.decided_by, result.summary


@pytest.mark.parametrize(
    "line",
    [
        "          OutOfMemoryError,",  # source code quoted in a note
        '      "CUDA out of memory. Tried to allocate ",',
        "## How to avoid out of memory errors",  # a title: no size, no error
        "    if out_of_memory: retry()",
        # a test's name is a name: its progress line reports nothing
        "tests/test_memory.py::test_allocation_failed_message PASSED                 [ 50%]",
        "tests/oom/test_retry.py::test_oom_killed_worker_is_replaced SKIPPED (no GPU) [100%]",
        "PASSED tests/test_memory.py::test_cuda_out_of_memory_is_caught",
    ],
)
def test_code_and_mentions_are_not_reports(line: str) -> None:
    assert parse_oom_parts(line) is None


@pytest.mark.parametrize(
    "line",
    [
        "WARNING: CUDA out of memory, retrying with batch size 16",
        "Ran out of memory on device 0 (2.0 GiB requested); falling back to the CPU",
    ],
)
def test_a_handled_oom_decides_nothing(line: str) -> None:
    signal = parse_oom_parts(line)
    assert signal is not None and signal.kind.endswith("handled")


def test_the_summary_names_only_what_the_line_shows(tmp_path: Path) -> None:
    """A Julia CUDA OOM names no framework the line does not name (no "PyTorch")."""
    log = tmp_path / "julia.log"
    log.write_text("ERROR: Out of GPU memory trying to allocate 1.000 GiB\n")
    result = triage(Sources(paths=(log,)))
    assert "PyTorch" not in result.summary and "requested 1 GiB" in result.summary


def test_a_docker_inspect_limit_is_the_remedys_limit(tmp_path: Path) -> None:
    inspect = tmp_path / "inspect.json"
    inspect.write_text(
        json.dumps(
            [
                {
                    "State": {"OOMKilled": True, "ExitCode": 137, "Error": ""},
                    "HostConfig": {"Memory": 4294967296, "MemorySwap": 4294967296},
                }
            ],
            indent=4,
        )
    )
    result = triage(Sources(paths=(inspect,)))
    assert result.triage_class is TriageClass.CGROUP_OOM
    remedy = " ".join(result.remedies)
    assert "4 GiB" in remedy and "--memory" in remedy
    assert "sacct" not in remedy and "no limit" not in remedy


def test_a_docker_state_without_its_limit_sends_the_reader_to_docker_not_slurm() -> None:
    """A real ``docker inspect`` State fragment (``"OOMKilled": true``, no HostConfig): the
    figures it lacks are read with docker's tools; a docker run has no sacct."""
    samples = Path(__file__).parent / "data" / "samples" / "docker_inspect"
    sample = samples / "state-fragment-oomkilled-true-exit137-java-2017-blademainer-blog.txt"
    result = triage(Sources(paths=(sample,)))
    assert result.triage_class is TriageClass.CGROUP_OOM
    remedy = " ".join(result.remedies)
    assert "docker inspect" in remedy and "--memory" in remedy
    assert "sacct" not in remedy and "seff" not in remedy


def test_a_pod_descriptions_limit_is_the_remedys_limit(tmp_path: Path) -> None:
    describe = tmp_path / "pod.txt"
    describe.write_text(
        "Name:         trainer-0\n"
        "Containers:\n"
        "  trainer:\n"
        "    State:          Terminated\n"
        "      Reason:       OOMKilled\n"
        "      Exit Code:    137\n"
        "    Limits:\n"
        "      cpu:     4\n"
        "      memory:  4Gi\n"
        "    Requests:\n"
        "      memory:  2Gi\n"
    )
    result = triage(Sources(paths=(describe,)))
    assert result.triage_class is TriageClass.CGROUP_OOM
    remedy = " ".join(result.remedies)
    assert "4 GiB" in remedy and "resources.limits.memory" in remedy


def test_a_passing_run_of_tests_named_for_memory_is_passed(tmp_path: Path) -> None:
    """A real pytest -v log whose tests are named after OOMs and allocation failures, all
    passing: their names are not reports."""
    import subprocess
    import sys

    (tmp_path / "test_memory.py").write_text(
        "def test_allocation_failed_message():\n    assert True\n\n"
        "def test_cuda_out_of_memory_is_caught():\n    assert True\n\n"
        "def test_oom_killed_worker_is_replaced():\n    assert True\n"
    )
    completed = subprocess.run(
        [sys.executable, "-m", "pytest", "-v", "-p", "no:cacheprovider", "test_memory.py"],
        cwd=tmp_path, capture_output=True, text=True, check=False, timeout=120,
    )  # fmt: skip
    assert completed.returncode == 0, completed.stdout
    log = tmp_path / "ci.log"
    log.write_text(completed.stdout)
    result = triage(Sources(paths=(log,)))
    assert result.triage_class is TriageClass.PASSED, (result.summary, completed.stdout)


@pytest.mark.parametrize(
    "line",
    [
        # warnings and explanations that name memory (part C1's look-alikes)
        "job 3264830 exceeded MEM usage soft limit",
        "2018-02-27T06:21:53.411393+00:00 heroku[web.1]: Error R14 (Memory quota exceeded)",
        # explanations scripts and READMEs print next to an exit code
        "`137` usually means the process was killed by the container runtime due to memory "
        "pressure.",
        "Exit code 137 usually means the process was killed by the operating system, often "
        "because the container ran out of RAM.",
    ],
)
def test_a_warning_or_an_explanation_is_not_a_kill(line: str) -> None:
    signal = parse_line(line)
    # "limit_noted": a quota crossed, which only a kill on the next lines makes a kill
    assert signal is None or signal.kind in {"memory_noted", "limit_noted", "exit_code"}, signal


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # a batch server's kill read by the resource it names
        ("=>> PBS: job killed: pmem 9000000kb exceeded limit 8000000kb\n", TriageClass.CGROUP_OOM),
        ("=>> PBS: job killed: cput 7300 exceeded limit 7200\n", TriageClass.TIMEOUT),
        ("=>> PBS: job killed: ncpus 9.3 exceeded limit 8\n", TriageClass.UNKNOWN),
        # Moab's hard limit deletes the job, its soft limit warns
        ("job 12 exceeded MEM usage hard limit (4100 > 4096)\n", TriageClass.CGROUP_OOM),
        ("job 12 exceeded MEM usage soft limit (4100 > 4096)\n", TriageClass.UNKNOWN),
        # a hold for memory stops the job; a hold for anything else decides nothing here
        (
            "Hold reason: put on hold by SYSTEM_PERIODIC_HOLD due to memory usage 9000\n",
            TriageClass.CGROUP_OOM,
        ),
        (
            "Hold reason: put on hold by SYSTEM_PERIODIC_HOLD due to disk usage 9000\n",
            TriageClass.UNKNOWN,
        ),
        # a quota crossed is a warning until a kill follows it
        (
            "web.1: Error R14 (Memory quota exceeded)\nweb.1: Process running mem=600M(117.2%)\n",
            TriageClass.UNKNOWN,
        ),
        (
            "web.1: Error R15 (Memory quota vastly exceeded)\n"
            "web.1: Stopping process with SIGKILL\n",
            TriageClass.CGROUP_OOM,
        ),
        # the JVM's own words, without "OutOfMemoryError" on the line
        ("> GC overhead limit exceeded\n", TriageClass.HOST_ALLOC_FAILED),
        # Windows' commit limit, by its message or its code
        (
            "docker: Error response from daemon: The paging file is too small for this operation"
            " to complete.\n",
            TriageClass.HOST_ALLOC_FAILED,
        ),
        ("OSError: [WinError 1455] Error loading foo.dll\n", TriageClass.HOST_ALLOC_FAILED),
        # a .NET exception with its HRESULT, read for its message
        (
            "System.ComponentModel.Win32Exception (0x80004005): The paging file is too small for"
            " this operation to complete\n",
            TriageClass.HOST_ALLOC_FAILED,
        ),
        # a CI agent gone mid-job, as Azure Pipelines says it
        (
            "##[error]We stopped hearing from agent Pool 3. Verify the agent machine is running.\n",
            TriageClass.EXTERNAL_KILL,
        ),
        ("The agent: Pool 3 lost communication with the server.\n", TriageClass.EXTERNAL_KILL),
    ],
)
def test_a_schedulers_reason_is_read_by_its_parts(
    tmp_path: Path, text: str, expected: TriageClass
) -> None:
    log = tmp_path / "job.log"
    log.write_text(text)
    result = triage(Sources(paths=(log,)))
    assert result.triage_class is expected, (result.summary, text)


def test_a_limit_the_kill_line_states_is_the_remedys_limit(tmp_path: Path) -> None:
    log = tmp_path / "job.o42"
    log.write_text("=>> PBS: job killed: vmem 3372163072 exceeded limit 2147483648\n")
    result = triage(Sources(paths=(log,)))
    assert result.triage_class is TriageClass.CGROUP_OOM
    remedies = " ".join(result.remedies)
    assert "limit is 2 GiB and usage reached 3.14 GiB" in remedies, remedies
    assert "-l mem=" in remedies and "no limit" not in remedies, remedies


SHORTAGES = [
    # ComfyUI Desktop's error, quoted alone on its line
    # (https://github.com/Comfy-Org/Comfy-Desktop/issues/1466)
    (
        '"Not enough GPU memory. Try reducing image resolution or batch size and run again"',
        "gpu_oom",
    ),
    # MySQL's ER_OUT_OF_SORTMEMORY (1038), as the server reference words it
    # (https://dev.mysql.com/doc/mysql-errors/8.0/en/server-error-reference.html)
    ("Out of sort memory, consider increasing server sort buffer size", "host_alloc_failed"),
    # Meshroom's DepthMap error, as an issue's title (a mention)
    # (https://github.com/alicevision/Meshroom/issues/2485)
    ("Not enough GPU memory to compute a single tile.", "memory_noted"),
]


@pytest.mark.parametrize(("line", "kind"), SHORTAGES, ids=["comfyui", "mysql", "meshroom-title"])
def test_a_shortage_with_words_between_is_read(line: str, kind: str, tmp_path: Path) -> None:
    """Memory said to run short with a word between ("not enough GPU memory", "out of sort
    memory"): no needle lists the word, the scanner's clause admits the line, and the parts
    reader classifies it."""
    found = parse_line(line)
    assert found is not None and found.kind == kind
    log = tmp_path / "console.log"
    log.write_text(f"step 1 of 3\n{line}\nstep 3 of 3\n")
    result = triage(Sources(paths=(log,)))
    assert 2 in {e.line for e in result.decided_by}
    if kind == "gpu_oom":
        assert result.triage_class is TriageClass.CUDA_OOM_CAPACITY
    elif kind == "host_alloc_failed":
        assert result.triage_class is TriageClass.HOST_ALLOC_FAILED
    else:
        assert result.triage_class is TriageClass.UNKNOWN


TIME_LIMITS = [
    # Travis CI's end of a job past its plan's time
    # (https://github.com/dimagi/commcare-hq/pull/11500, comment by millerdev, 2016-05-05)
    "The job exceeded the maximum time limit for jobs, and has been terminated.",
    # IBM Spectrum LSF's documented termination reason TERM_RUNLIMIT, as the job report words it
    "TERM_RUNLIMIT: job killed after reaching LSF run time limit.",
]


@pytest.mark.parametrize("line", TIME_LIMITS, ids=["travis", "lsf"])
def test_a_time_limit_crossed_is_a_timeout(line: str, tmp_path: Path) -> None:
    """A time limit said to be crossed (exceeded, reached), whatever ran: a timeout, not a kill."""
    found = parse_line(line)
    assert found is not None and found.kind == "timeout"
    log = tmp_path / "console.log"
    log.write_text(f"Running tests\n{line}\n")
    result = triage(Sources(paths=(log,)))
    assert result.triage_class is TriageClass.TIMEOUT
    assert 2 in {e.line for e in result.decided_by}


TIMED_OUT = [
    # Azure Resource Manager's deployment error (https://github.com/microsoft/PartsUnlimitedMRP/
    # issues/134): what timed out is an extension's provisioning, a word no list of units holds
    (
        '{ "code": "VMExtensionProvisioningTimeout", "message": "Provisioning of VM extension '
        "'mrpsetup' has timed out. Extension installation may be taking too long, or extension "
        'status could not be obtained." } ] } }',
        "timeout",
    ),
    # counter-cases: a network's (ssh's own wording; urllib3's, as requests raises it)
    ("ssh: connect to host 10.0.0.5 port 22: Connection timed out", None),
    (
        "requests.exceptions.ReadTimeout: HTTPSConnectionPool(host='huggingface.co', port=443): "
        "Read timed out. (read timeout=10)",
        None,
    ),
]


@pytest.mark.parametrize(("line", "kind"), TIMED_OUT, ids=["azure", "ssh", "urllib3"])
def test_whatever_timed_out_is_a_timeout_unless_a_networks(
    line: str, kind: str | None, tmp_path: Path
) -> None:
    """Something said to have timed out, in a clause that supposes nothing and on a line that
    names no network's part: its time limit ended it, whatever the thing is called."""
    found = parse_line(line)
    assert (found.kind if found is not None else None) == kind
    log = tmp_path / "console.log"
    log.write_text(f"Deploying\n{line}\n")
    result = triage(Sources(paths=(log,)))
    assert (result.triage_class is TriageClass.TIMEOUT) == (kind == "timeout")


SUPPOSED_TIME_LIMITS = [
    # Laravel 5's queue worker failing a job for its attempts (Illuminate/Queue/Worker.php,
    # MaxAttemptsExceededException): the time limit is the framework's guess at why
    (
        "Illuminate\\Queue\\MaxAttemptsExceededException: A queued job has been attempted too "
        "many times. The job may have previously timed out.",
        None,
    ),
    # counter-cases: the same words reported (a unit's state; Playwright's error quoted by the
    # person who got it, https://github.com/lucgagan/auto-playwright/issues/30)
    ("The job timed out after 60 minutes.", "timeout"),
    (
        "Consistently getting 'Test timeout of 30000ms exceeded.' error although "
        "playwright.config.js has the following timeout settings:",
        "timeout",
    ),
]


@pytest.mark.parametrize(
    ("line", "kind"), SUPPOSED_TIME_LIMITS, ids=["laravel", "job-state", "playwright"]
)
def test_a_time_limit_supposed_before_its_words_is_not_one(line: str, kind: str | None) -> None:
    """A named time limit's words with a possibility or a condition before them in their clause
    ("may have previously timed out", "if the step timed out") suppose the end; what comes after
    them, or a clause that introduces a paste, does not."""
    found = parse_line(line)
    assert (found.kind if found is not None else None) == kind


# Part J's wordings (tests/data/triage/SOURCES.md, part J): each line is copied from the thread
# its comment names; the whole artifacts are in the corpus.
PETSC = (  # https://github.com/precice/precice/issues/115
    "[0]PETSC ERROR: Out of memory. This could be due to allocating"
)
ISTIO = (  # https://github.com/istio/istio/issues/19925
    "2020-01-04T15:26:26.987721Z     warn    Envoy may have been out of memory killed. Check "
    "memory usage and limits."
)


def test_a_cause_supposed_after_a_failure_does_not_hedge_the_failure() -> None:
    """The failure is stated, then its cause supposed: a report. A kill supposed stays a
    supposition, and so does a kill stated before a supposed cause (its reading is what the
    supposition is about)."""
    found = parse_oom_parts(PETSC)
    assert found is not None and found.kind == "host_alloc_failed"
    for line in (ISTIO, "Killed: out of memory. This might be a leak in the loader"):
        found = parse_oom_parts(line)
        assert found is not None and found.kind == "memory_noted", line


@pytest.mark.parametrize(
    "line",
    [
        # https://github.com/psi4/psi4/issues/3336
        'It fails with the message, "Fatal Error: Too little memory given for DLPNO-CCSD '
        'Algorithm!"',
        # https://github.com/questdb/questdb/issues/6144
        "2025-09-15T13:10:47.0891595Z io.questdb.cairo.CairoException: [-1] global RSS memory "
        "limit exceeded [usage=7330513230, RSS_MEM_LIMIT=7330513230, size=64, memoryTag=33]",
        # https://github.com/bbuchfink/diamond/issues/315
        "I'm running 0.9.22 as part of eggnog-mapper. I get a crash with a bad_alloc error -6 "
        "and core dump.",
    ],
    ids=["too-little", "raised-limit", "person-got-named-error"],
)
def test_a_refusal_in_other_words_is_the_hosts(line: str, tmp_path: Path) -> None:
    log = tmp_path / "issue.txt"
    log.write_text(line + "\n")
    result = triage(Sources(paths=(log,)))
    assert result.triage_class is TriageClass.HOST_ALLOC_FAILED, result.summary
    assert 1 in {e.line for e in result.decided_by}


@pytest.mark.parametrize(
    "line",
    [
        # https://github.com/lxc/incus/issues/759: a kill denied
        "On LXD since 5.0.3 LTS we regularly see that processes in containers are not killed "
        "when the configured memory limit is reached (OOM).",
        # https://github.com/containerd/containerd/issues/188: another errno says why it failed
        "ERRO[57289] containerd: notify OOM events                 error=open /sys/fs/cgroup/"
        "memory/docker/759b1d6b52f1/ct28/memory.oom_control: no such file or directory",
        # https://github.com/facebook/hermes/issues/439: the usual cause, offered
        "As I mention above, the most common cause of a `hermes_fatal` is an Out of Memory (OOM) "
        "condition, where too much JS memory or native memory was created.",
    ],
    ids=["denied", "other-errno", "common-cause"],
)
def test_what_did_not_happen_is_no_report(line: str, tmp_path: Path) -> None:
    found = parse_oom_parts(line)
    assert found is None or found.kind == "memory_noted", found
    log = tmp_path / "issue.txt"
    log.write_text(line + "\n")
    assert triage(Sources(paths=(log,))).triage_class is TriageClass.UNKNOWN


MMSEQS = (  # https://github.com/soedinglab/MMseqs2/issues/738
    "## Current Behavior\n"
    "All available RAM is used leading to the following error:\n"
    "`tmp//2024282319877743305/search_tmp/15490307701832192549/translated_search.sh: line 45: "
    '3856193 Killed                  "$MMSEQS" extractorfs "$2" "${TMP_PATH}/t_orfs_aa" '
    "${ORF_PAR}\n"
    "Error: extract target orfs step died\n"
)


def _triaged(log: Path, text: str) -> Triage:
    """``text`` written to ``log``, triaged: the kill tests below vary one line at a time."""
    log.write_text(text)
    return triage(Sources(paths=(log,)))


def test_a_kill_with_the_machines_memory_said_used_up_is_the_oom_killers(tmp_path: Path) -> None:
    log = tmp_path / "issue.txt"
    result = _triaged(log, MMSEQS)
    assert result.triage_class is TriageClass.GLOBAL_OOM, result.summary
    assert {2, 3} <= {e.line for e in result.decided_by}
    assert "most likely" in result.summary
    # Under a platform's limit (a container named in the input): the container's.
    capped = _triaged(log, "Running in a docker container with --memory=8g\n" + MMSEQS)
    assert capped.triage_class is TriageClass.CGROUP_OOM
    # Supposed, asked or denied, the memory words decide nothing: the kill stays unexplained.
    for said in (
        "We set a limit so that it does not use all the memory on the server.",
        "Could it be that it uses all the memory on the server?",
    ):
        text = said + "\n" + MMSEQS.replace("All available RAM is used leading", "It led")
        assert _triaged(log, text).triage_class is TriageClass.EXTERNAL_KILL, said


def test_a_question_after_a_pasted_kill_is_the_persons(tmp_path: Path) -> None:
    # https://github.com/lh3/minimap2/issues/1252
    line = "Killed`,so could anyone give some advice?"
    found = parse_line(line)
    assert found is not None and found.kind == "terminated_externally"
    # https://github.com/vmware-tanzu/velero/issues/6879: an end guessed at is no end
    assert (
        parse_line("But after just over 2 hours the backup failed with what looks like a timeout")
        is None
    )


@pytest.mark.parametrize(
    "line",
    [
        # https://github.com/mesonbuild/meson/pull/7774
        "2020-09-23T01:25:14.7849592Z 1/5 Boost linktest      TIMEOUT        30.16s",
        # https://github.com/mesonbuild/meson/issues/5696
        "1/1 Test exe                                TIMEOUT 30.02 s ",
    ],
    ids=["meson-0.55", "meson-0.51"],
)
def test_a_time_limit_as_a_results_state_is_a_timeout(line: str, tmp_path: Path) -> None:
    found = parse_line(line)
    assert found is not None and found.kind == "timeout"
    log = tmp_path / "meson.log"
    log.write_text(f"ninja: no work to do.\n{line}\n")
    result = triage(Sources(paths=(log,)))  # the scanner finds the line
    assert result.triage_class is TriageClass.TIMEOUT and 2 in {e.line for e in result.decided_by}


def test_an_oom_as_a_verb_on_a_gpu_names_no_engine_the_line_does_not(tmp_path: Path) -> None:
    # https://github.com/turboderp-org/exllamav2/issues/390 (its first line, which says "It
    # completely fills up the first GPU's VRAM and OOMs."): "exllamav2" is not llama.cpp
    name = "gpu-exllamav2-dbrx-gpu-split-oom-turboderp-org-exllamav2-390.txt"
    line = (CORPUS / name).read_text().splitlines()[0]
    assert "exllama" in line and "VRAM and OOMs." in line
    log = tmp_path / "issue.txt"
    log.write_text(line + "\n")
    result = triage(Sources(paths=(log,)))
    assert result.triage_class is TriageClass.CUDA_OOM_CAPACITY, result.summary
    assert "llama.cpp" not in result.summary


def test_a_2_6_32_kernels_kill_line_names_its_victim() -> None:
    # https://github.com/influxdata/influxdb/issues/6087: RHEL 6's kernel puts the uid between
    line = (
        "Killed process 31343, UID 493, (influxd) total-vm:15100844kB, anon-rss:9065672kB, "
        "file-rss:4kB"
    )
    found = parse_line(line)
    assert found is not None and found.kind == "kernel_killed"
    assert found.fields["pid"] == 31343 and found.fields["comm"] == "influxd"
    assert found.fields["anon_rss_bytes"] == 9065672 * 1024


# Part K's wordings (tests/data/triage/SOURCES.md, part K), each from the thread its comment names.


def test_a_quoted_refusal_is_read_by_the_message_not_the_words_around_it() -> None:
    # https://github.com/enclavr/frontend/issues/80
    line = (
        "The vitest test runner crashes with `FATAL ERROR: Reached heap limit Allocation failed - "
        "JavaScript heap out of memory` during test execution. The worker process is killed, "
        "causing an unhandled error that terminates the test run."
    )
    found = parse_oom_parts(line)
    assert found is not None and found.kind == "host_alloc_failed"
    # A quoted phrase that reports nothing by itself is a mention (PyTorch's reference note:
    # 'On ROCm builds the text reads "HIP out of memory"').
    found = parse_oom_parts('On ROCm builds the text reads "HIP out of memory" and more')
    assert found is not None and found.kind == "memory_noted"


LINE_READINGS: dict[str, list[tuple[str, str, str | None]]] = {}
"""What ``parse_line`` reads each line as, by mechanism (each registered below with where its
lines come from): ``test_each_mechanism_reads_its_lines``."""
PARTS_READINGS: dict[str, list[tuple[str, str, str | None]]] = {}
"""The same for ``parse_oom_parts``: ``test_each_mechanism_reads_its_lines_by_their_parts``."""


def _reads(
    table: dict[str, list[tuple[str, str, str | None]]],
    mechanism: str,
    cases: list[tuple[str, str | None]],
    ids: list[str] | None = None,
) -> None:
    """Register a mechanism's lines and the kind each is read as, with their ids."""
    names = ids if ids is not None else [str(n) for n in range(len(cases))]
    assert mechanism not in table
    table[mechanism] = [(n, line, kind) for n, (line, kind) in zip(names, cases, strict=True)]


_reads(
    PARTS_READINGS,
    "k_wordings_by_their_parts",
    [
        # https://github.com/researchstudio-sat/webofneeds/issues/3177: a purpose after a
        # raised limit does not hedge it
        (
            "javax.jms.ResourceAllocationException: Usage Manager Memory Limit reached. Stopping "
            "producer (ID:MJlapone-63406-1576589973933-1:1:6:1) to prevent flooding "
            "queue://OwnerProtocol.in.",
            "host_alloc_failed",
        ),
        # https://github.com/fanhongtao/ebooks/issues/5
        ("! TeX capacity exceeded, sorry [main memory size=5000000].", "host_alloc_failed"),
        # https://github.com/siderolabs/talos/issues/13622: a user-space OOM controller acting
        ("   [talos] OOM controller triggered", "node_oom_kill"),
        # https://github.com/sokrypton/ColabFold/issues/186: the question, then the report
        (
            "Could not predict test_cdf7a. Not Enough GPU memory? RESOURCE_EXHAUSTED: Out of "
            "memory while trying to allocate 7866899248 bytes.",
            "gpu_oom",
        ),
        # https://github.com/sokrypton/ColabFold/issues/503: the question alone
        (
            "2023-10-03 17:53:48,059 Could not predict NF006199. Not Enough GPU memory? INTERNAL: "
            "cublas error",
            "memory_noted",
        ),
        # https://github.com/commercialhaskell/stack/issues/3017: a cause offered
        (
            "    Process exited with code: ExitFailure (-9) (THIS MAY INDICATE OUT OF MEMORY)",
            "memory_noted",
        ),
        # https://github.com/earlyoom/earlyoom/issues/269: a killer started is no kill
        (
            "mars 27 18:46:05 user-G3-3779-pro systemd[1]: Started Early OOM Daemon.",
            None,
        ),
    ],
    ids=["raised-limit", "tex", "oom-controller", "asked-then-said", "asked", "may-indicate",
         "daemon-started"],
)  # fmt: skip


def test_source_in_a_language_fence_is_code_but_its_comments_quote_output(tmp_path: Path) -> None:
    # https://github.com/woodpecker-ci/woodpecker/issues/1430: Go that sets an exit code
    log = tmp_path / "issue.txt"
    log.write_text(
        "When a step is canceled, the step state reported back is always failed.\n"
        "```go\n"
        "if canceled.IsSet() {\n"
        "  stepState.ExitCode = 137\n"
        '  stepState.Error = "Step canceled"\n'
        "}\n"
        "```\n"
    )
    assert triage(Sources(paths=(log,))).triage_class is TriageClass.UNKNOWN
    # The same lines in a log's fence are output.
    log.write_text(log.read_text().replace("```go", "```"))
    assert triage(Sources(paths=(log,))).triage_class is TriageClass.EXTERNAL_KILL
    # https://github.com/pingcap/tidb/issues/38322: a reproduction's comment quotes its error
    log.write_text(
        "```sql\n"
        "set tidb_mem_quota_query=10;\n"
        "select t.a, t1.a  from t use index(idx), t1 use index(idx)  where t.a=t1.a; -- ERROR "
        "1105 (HY000): Out Of Memory Quota![conn_id=1363783645558473149]\n"
        "```\n"
    )
    assert triage(Sources(paths=(log,))).triage_class is TriageClass.HOST_ALLOC_FAILED


CHROMA = (  # https://github.com/chroma-core/chroma/issues/1197
    "When I limit the RAM available to the container to 4Gb, the instance crashes as soon as I do "
    "`collection.query` with a single question.\n"
    "The only thing I see in logs is that the worker was killed.\n"
    "```\n"
    "chroma_bench-chroma-1  | /docker_entrypoint.sh: line 6:    12 Killed                  uvicorn "
    "chromadb.app:app --workers 1 --host 0.0.0.0 --port 8000\n"
    "```\n"
)


GLEAM = (  # https://github.com/gleam-lang/gleam/issues/4932
    "# Excessive memory usage / killed when compiling BitArray case\n"
    "\n"
    "evanlua · description · 2025-09-03\n"
    "When trying to compile a case expression [case.zip](https://github.com/user-attachments/"
    "files/22123863/case.zip) with many BitArray matches (used for parsing HTTP headers), the "
    "compiler process gets killed by the OS.\n"
)


@pytest.mark.parametrize(
    ("text", "expected", "without"),
    [
        # a cap the input sets on the work; without it, the kill stays unexplained
        (CHROMA, TriageClass.CGROUP_OOM, CHROMA.split("\n", 1)[1]),
        # memory's use said to be excessive; without the words on memory, unexplained
        (GLEAM, TriageClass.GLOBAL_OOM, GLEAM.replace("Excessive memory usage / killed", "Killed")),
    ],
    ids=["cap-set", "use-excessive"],
)
def test_an_unexplained_kill_is_read_with_what_the_input_says_of_memory(
    text: str, expected: TriageClass, without: str, tmp_path: Path
) -> None:
    log = tmp_path / "issue.txt"
    result = _triaged(log, text)
    assert result.triage_class is expected, result.summary
    assert {1, 4} <= {e.line for e in result.decided_by} and "most likely" in result.summary
    assert _triaged(log, without).triage_class is TriageClass.EXTERNAL_KILL


@pytest.mark.parametrize(
    "cap", ['sudo docker run --memory="100g" google/deepvariant', "#SBATCH --mem=8G"]
)
def test_a_cap_in_any_of_its_spellings_explains_the_kill(cap: str, tmp_path: Path) -> None:
    text = cap + "\n" + CHROMA.split("\n", 1)[1]
    assert _triaged(tmp_path / "issue.txt", text).triage_class is TriageClass.CGROUP_OOM


_reads(
    PARTS_READINGS,
    "l_wordings_by_their_parts",
    [
        # https://github.com/fsprojects/zarchive-fsharpbinding/issues/626: a namespace before
        # the exception's name is not the machine
        ("System.OutOfMemoryException: Out of memory", "host_alloc_failed"),
        ("The system ran out of memory and the process was killed", "node_oom_kill"),
        # https://github.com/apache/groovy/pull/835: Gradle's cause line, the JVM's detail alone
        ("> Java heap space", "host_alloc_failed"),
        # https://github.com/vlang/v/issues/28168: a program's own limit, with its error prefix
        (
            "error: v3 compiler memory usage reached 2568 MiB RSS during compilation (limit: "
            "2560 MiB); use `-no-memory-limit` to disable this limit",
            "host_alloc_failed",
        ),
        # the same crossing without the program's own prefix: a limit enforced from outside
        (
            "worker memory usage reached 2568 MiB RSS (limit: 2560 MiB), the worker was stopped",
            "limit_oom_kill",
        ),
        # https://github.com/rancher/rancher-docs/issues/668: an error avoided
        (
            "When testing locally, the combination of this and #667 allowed me to build #665 "
            "without running into `FATAL ERROR: Ineffective mark-compacts near heap limit "
            "Allocation failed - JavaScript heap out of memory`.",
            "memory_noted",
        ),
        # https://github.com/darktable-org/darktable/issues/3365: a device passed over at start
        (
            "0.437992 [opencl_init] discarding device 0 `GeForce GTX 1060 6GB' due to "
            "insufficient global memory (6069MB).",
            "memory_noted",
        ),
        # https://github.com/kubernetes/website/issues/11802: a state said never to occur
        ('The mentioned status "OOMKilled" never occurs.', "memory_noted"),
        ("The pod was OOMKilled, this never happened before", "limit_oom_kill"),
    ],
    ids=["dotnet-namespace", "system-ran-out", "gradle-cause", "own-limit", "limit-enforced",
         "avoided", "device-discarded", "never-occurs", "never-before"],
)  # fmt: skip


def test_a_fraction_of_a_byte_is_no_size() -> None:
    # https://github.com/verl-project/verl/issues/217: "an 0.5B model" counts parameters
    found = parse_oom_parts(
        "I am trying to run the example for an 0.5B model on a single H100 (80G), but I got out "
        "of memory when it is initializing the actor_rollout"
    )
    assert found is not None and "requested_bytes" not in found.fields, found
    found = parse_oom_parts("malloc: out of memory allocating 4096 B")
    assert found is not None and 4096 in found.fields.values(), found


_reads(
    LINE_READINGS,
    "l_ends_and_failures_by_their_parts",
    [
        # https://github.com/bitrise-io/bitrise/issues/714: an end with its reason in brackets
        ('It passes the 2 first steps but the third reaches "Abort via Bitrise DEN (timeout)".',
         "timeout"),
        # https://github.com/valkey-io/valkey/issues/2893: a runner's bracketed state
        ("*** [TIMEOUT]: benchmark: warmup and duration are cumulative in "
         "tests/integration/valkey-benchmark.tcl", "timeout"),
        # https://github.com/kotest/kotest/issues/879: a setting's name, an expectation
        ("# Timeout config fails", None),
        ("According to the doc, I'd expect the test to be cancelled after 1 second and fail",
         None),
        ("The test was cancelled after 1 second and failed", "timeout"),
        ("The test times out after 60 minutes", "timeout"),
        ("The request times out after 30 s", None),  # a network's
        # https://github.com/catchorg/Catch2/issues/1292 and /864: a check's location, then its
        # verdict alone
        ("..\\tests\\src\\hardware_cputemp_perf.cpp(281): FAILED:", "test_failed"),
        ("/path/to/my_test.cpp:6: Failure:", "test_failed"),
        ("src/main.c:12: warning: unused variable 'failed'", None),
        # https://github.com/google/googletest/issues/3229
        ("Expected equality of these values:", "test_failed"),
        # https://github.com/valkey-io/valkey/issues/841: the Tcl suite's exception state
        ("[exception]: Executing test client: I/O error reading reply.", "test_failed"),
    ],
    ids=["reason-in-brackets", "bracketed-state", "setting", "expectation", "cancelled-after",
         "times-out", "request-times-out",
         "catch2-failed", "location-failure", "warning", "googletest", "tcl-exception"],
)  # fmt: skip


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("[  RUN      ] Args.Four\nExpected equality of these values:\n  4\n  args\n"
         "    Which is: 4\n", TriageClass.TEST_FAILURE),
        ("*** [TIMEOUT]: benchmark: warmup and duration are cumulative in "
         "tests/integration/valkey-benchmark.tcl\n", TriageClass.TIMEOUT),
        # https://github.com/apache/groovy/pull/835
        ("> Task :generateGrammarSource FAILED\nFAILURE: Build failed with an exception.\n"
         "* What went wrong:\nExecution failed for task ':generateGrammarSource'.\n"
         "> Java heap space\n", TriageClass.HOST_ALLOC_FAILED),
        ("TAP version 13\nok 1 - parses\nnot ok 2 - should be equal\n1..2\n",
         TriageClass.TEST_FAILURE),
    ],
    ids=["googletest", "tcl-timeout", "gradle-heap", "tap"],
)  # fmt: skip
def test_the_scanner_finds_the_new_states(text: str, expected: TriageClass, tmp_path: Path) -> None:
    log = tmp_path / "ci.log"
    log.write_text("build started\n" * 50 + text + "done\n" * 50)
    assert triage(Sources(paths=(log,))).triage_class is expected


_reads(
    LINE_READINGS,
    "a_shortage_in_its_plain_forms_is_read",
    [
        # Memory run short in the statement's plain forms, on a program's error line: each is
        # read whatever the ecosystem that prints it.
        ("ERROR: memory allocation error", "host_alloc_failed"),
        ("error allocating 4096 bytes", "host_alloc_failed"),
        ("ERROR: memory request failed", "host_alloc_failed"),
        ("ERROR: memory is full", "host_alloc_failed"),
        ("[error] memory insufficient", "host_alloc_failed"),
        ("ERROR: lack of memory", "host_alloc_failed"),
        ("ERROR: memory shortage", "host_alloc_failed"),
        ("ERROR: exceeded memory", "host_alloc_failed"),
        ("ERROR: out of heap space", "host_alloc_failed"),
        ("ERROR: memory depleted", "host_alloc_failed"),
        ("ERROR: memory usage too high", "host_alloc_failed"),
        ("ERROR: memory commit failed", "host_alloc_failed"),
        ("ERROR: Failed to mmap 1048576 bytes", "host_alloc_failed"),
        ("ERROR: maximum heap size exceeded", "host_alloc_failed"),
        (
            "System.ComponentModel.Win32Exception (0x80004005): Not enough storage is available "
            "to process this command",
            "host_alloc_failed",
        ),
        ("ERROR: hit memory limit", "limit_oom_kill"),
        ("ERROR: process killed because it used too much memory", "oom_kill"),
        # the same words as a person's or a warning's, and what they are not
        ("The worker uses too much memory, restarting it", "memory_noted"),
        ("ERROR: ECC memory error detected", None),
        # https://github.com/openwrt/packages/issues/417: the kernel's warning, work goes on
        ("[278624.724000] dsl_cpe_control: page allocation failure: order:4, mode:0x2000d0", None),
    ],
)  # fmt: skip


_reads(
    LINE_READINGS,
    "failed_tests_in_their_plain_forms",
    [
        # Failed tests in the plain forms runners share, whatever the runner.
        ("not ok 3 - should be equal", "test_failed"),  # TAP (Perl, node-tap, bats)
        ("ok 3 - fine", None),
        ("[FAIL] test_foo", "test_failed"),
        ("1 failed, 3 passed", "test_failed"),
        ("0 failed, 3 passed", None),
        ("jobs: 1 failed, 3 passed", None),  # a CI's jobs, not tests
        ("✗ 2 tests failed", "test_failed"),
        ("Test Suites: 1 failed, 4 passed, 5 total", "test_failed"),  # Jest
    ],
)  # fmt: skip


@pytest.mark.parametrize(
    "line",
    [
        "ERROR: VRAM full",
        "ERROR: not enough VRAM",
        "Not enough VRAM to load the model, need 8 GB",
        "ERROR: out of video memory",
        "ERROR: graphics memory exhausted",
        "ERROR: exceeded GPU memory",
        "D3D12 ERROR: E_OUTOFMEMORY",  # Direct3D's
        "MTLCommandBufferErrorOutOfMemory",  # Metal's
        "ERROR: failed to allocate texture",
        "ERROR: framebuffer allocation failed",
        "OptiX error: out of memory",
        "ERROR: the video card ran out of memory",
        "ERROR: NCCL failed to allocate memory",
    ],
)
def test_a_devices_shortage_in_its_plain_forms_is_the_devices(line: str) -> None:
    found = parse_line(line)
    assert found is not None and found.kind == "gpu_oom", found


def test_enough_vram_is_no_shortage() -> None:
    assert parse_line("I have enough VRAM for this") is None


@pytest.mark.parametrize(
    "line", ["ERROR: cudaHostAlloc failed: out of memory", "ERROR: pinned memory allocation failed"]
)
def test_pinned_memory_a_device_api_allocates_is_the_hosts(line: str) -> None:
    found = parse_line(line)
    assert found is not None and found.kind == "host_alloc_failed", found


@pytest.mark.parametrize(
    "line",
    [
        # An error as the subject of a change, a document or a test: no event.
        "This fixes the out of memory error when loading large files",
        "Release notes: fixed a crash on out of memory",
        "Resolves #123: java.lang.OutOfMemoryError when parsing big XML",
        "docs: explain the 'JavaScript heap out of memory' error",
        "Previously this would fail with 'Cannot allocate memory'; now it succeeds",
        "The test checks that MemoryError is raised",
        "pytest.raises(MemoryError)",
        "expect(() => alloc()).toThrow(RangeError: Array buffer allocation failed)",
        # An OOM state counted none
        "OOMKilled: false",
        "oom_kill 0",
    ],
)
def test_an_error_treated_or_counted_none_is_no_event(line: str) -> None:
    found = parse_line(line)
    assert found is None or found.kind == "memory_noted", found


_reads(
    LINE_READINGS,
    "the_same_words_that_report_stay_reports",
    [
        ("Fixed-size pool exhausted: out of memory", "host_alloc_failed"),  # an adjective
        ("oom_kill 3", "oom_kill"),
    ],
)  # fmt: skip


_reads(
    LINE_READINGS,
    "ram_said_short_is_memory",
    [
        ("ERROR: not enough RAM", "host_alloc_failed"),
        ("ERROR: the program ran out of ram", "host_alloc_failed"),
        ("the machine ran out of RAM and the process was killed", "node_oom_kill"),
        ("I have enough RAM", None),
        ("IndexError: index out of range", "exception_line"),  # not memory
    ],
)  # fmt: skip


def test_an_explanation_of_a_code_is_no_oom_kill() -> None:
    found = parse_oom_parts("exit code 137 means the container was OOM killed")
    assert found is not None and found.kind == "memory_noted", found


_reads(
    PARTS_READINGS,
    "m_wordings_by_their_parts",
    [
        # https://github.com/davisking/dlib/issues/2340: a CUDA call giving out of memory as its
        # reason is the device's refusal, not the process's own end
        ("RuntimeError: Error while calling cudaMalloc(&data, new_size*sizeof(float)) in file "
         "/tmp/dlib/cuda/gpu_data.cpp:221. code: 2, reason: out of memory", "gpu_oom"),
        ("The window terminated unexpectedly (reason: 'oom', code: '-536870904')",
         "host_alloc_failed"),
        # https://github.com/love2d/love/issues/1759: a paste introduced and set off in bold
        ("I just downloaded Love 2D and when I'm just trying to run the basic hello world program "
         "I get the following error: **cannot create image (OpenGL error: out of memory)**",
         "gpu_oom"),
        ("I get the following error: **cannot create image (OpenGL error: out of memory)**",
         "gpu_oom"),
        ("This is the status of the pod with out of memory error:", "memory_noted"),
        # https://github.com/zeek/zeek/issues/2941: a sanitizer's own limit, used over limit
        ("==58528== ERROR: libFuzzer: out-of-memory (used: 2613Mb; limit: 2560Mb)",
         "host_alloc_failed"),
        ("The out-of-memory handler is installed", None),
        # https://github.com/osquery/osquery/issues/5381: a watchdog stops a worker at its limit
        ("W0122 16:03:43.886889 19454 watcher.cpp:331] osqueryd worker (19455) stopping: Memory "
         "limits exceeded: 240160000", "limit_oom_kill"),
        # https://github.com/StamusNetworks/Clear-NDR-ISO/issues/328: an error code by its parts
        ("[29853] 7/12/2021 -- 10:09:43 - (stream-tcp.c:5277) <Error> (StreamTcpThreadInit) -- "
         "[ERRCODE: SC_ERR_MEM_ALLOC(1)] - failed to setup/expand stream session pool. Expand "
         "stream.memcap?", "host_alloc_failed"),
        ("Win32 error ERROR_NOT_ENOUGH_MEMORY", "host_alloc_failed"),
        ("[ERRCODE: SC_ERR_POOL_INIT(66)] - pool init", None),
        # https://github.com/Kong/kong/issues/3105: a failure whose reason is "no memory"
        ("*127975840 [lua] responses.lua:107: do_authentication(): failed to get from node "
         "cache: could not write to lua_shared_dict: no memory", "host_alloc_failed"),
        ("Checked for leaks: no memory leak found", None),
        # https://github.com/Velir/dbt-ga4/issues/229: work that does not fit the memory given
        ("03:32:07    Resources exceeded during query execution: The query could not be "
         "executed in the allotted memory. Peak usage: 123% of limit.", "host_alloc_failed"),
        # https://github.com/cdcseacave/openMVS/issues/600: "mem" for memory
        ("Error: out of mem", "host_alloc_failed"),
        ("Reading out of memo field 3", None),
    ],
    ids=["cuda-reason", "own-reason", "bold-paste", "intro-bold-paste", "intro-unquoted",
         "libfuzzer", "hyphen-unreported", "watchdog-limits", "error-code", "windows-code",
         "other-code", "no-memory", "no-memory-leak", "allotted", "mem", "memo"],
)  # fmt: skip


@pytest.mark.parametrize(
    "line",
    [
        # https://github.com/airbytehq/airbyte/issues/27844: a JVM option quoted in a list
        "./airbyte-cron/build.gradle:    applicationDefaultJvmArgs = "
        "['-XX:+ExitOnOutOfMemoryError', '-XX:MaxRAMPercentage=75.0']",
        # https://github.com/mosaicml/composer/pull/485: an error avoided
        "Instead of crashing with CUDA out of memory, we dynamically scale the number of "
        "microbatches so we can fit the logical batchsize irrespective of the underlying hardware.",
        # https://github.com/dbt-labs/docs.getdbt.com/pull/5778: a page's label in front matter
        "+sidebar_label: 'Job failures due to exceeded memory limits'",
        "description: Use incremental models for job failures due to exceeded memory limits.",
        # https://github.com/uber/petastorm/pull/783: a consequence foretold
        "The default results_queue_size used in make_batch_reader is 50. This will lead to OOM "
        "exception while loading big datasets with thread reader pool type.",
        # https://github.com/containers/crun/pull/635: a question put
        "detect whether a OOM happened and inform users with a better error",
    ],
    ids=["jvm-option-in-list", "instead-of", "front-matter", "description-field", "will-lead-to",
         "whether"],
)  # fmt: skip
def test_m_mentions_report_nothing(line: str) -> None:
    found = parse_oom_parts(line)
    assert found is None or found.kind == "memory_noted", found


_reads(
    PARTS_READINGS,
    "m_reports_stay_reports",
    [
        # the same words where they report
        ("Emscripten: Cannot enlarge memory arrays ... if you want malloc to return NULL (0) "
         "instead of this abort, compile with -s ABORTING_MALLOC=0", "host_alloc_failed"),
        ("title_bar.cpp:12 OOM killed the renderer", "oom_kill"),
        ("The job will be killed: Memory limit exceeded", "limit_oom_kill"),
    ],
    ids=["instead-after", "title-in-a-name", "will-without-lead"],
)  # fmt: skip


_reads(
    LINE_READINGS,
    "m_ends_and_failures_by_their_parts",
    [
        # https://github.com/apache/superset/issues/8860: a dotted task name is no network word
        ("[2019-12-18 07:53:23,121: ERROR/MainProcess] Hard time limit (1200s) exceeded for "
         "email_reports.send[37eb6c91-a9a6-4bc2-8d7c-29a15f4595ad]", "timeout"),
        ("Read timeout exceeded for request.send", None),
        # https://github.com/canonical/charmcraft/issues/1982: a maximum crossed with its value
        ('- Run configure hook of "charmcraft" snap if present (run hook "configure": <exceeded '
         "maximum runtime of 5m0s>)", "timeout"),
        ("Set the maximum runtime of 5m0s if present", None),
        # https://github.com/sympy/sympy/issues/30038: pytest-timeout behind pytest's prefixes
        ("INTERNALERROR> E             Failed: Timeout (>10.0s) from pytest-timeout.", "timeout"),
        # https://github.com/rust-lang/rust/issues/42541: libtest's failed assertion and summary
        ("[01:06:58] <tab>thread 'test_hello' panicked at 'assertion failed: `(left == right)`",
         "test_failed"),
        ("assertion `left == right` failed", "test_failed"),
        ("[01:06:58] test result: FAILED. 0 passed; 1 failed; 0 ignored", "test_failed"),
        ("test result: ok. 3 passed; 0 failed; 0 ignored", None),
        # https://github.com/cdcseacave/openMVS/issues/600: the shell's word as a person saw it
        ("On my terminal i received a Killed at the end. but no additional .mvs had been created.",
         "terminated_externally"),
    ],
    ids=["dotted-name", "network-read", "maximum-runtime", "runtime-setting", "pytest-prefixes",
         "rust-panic", "rust-assertion", "libtest-summary", "libtest-ok", "received-killed"],
)  # fmt: skip


def test_the_kernels_reaper_names_the_victim() -> None:
    # https://github.com/Nuitka/Nuitka/issues/353
    found = parse_line(
        "kernel: [ 8152.785701] oom_reaper: reaped process 22768 (cc1), now anon-rss:0kB, "
        "file-rss:0kB, shmem-rss:0kB"
    )
    assert found is not None and found.kind == "kernel_killed"
    assert (found.fields["pid"], found.fields["comm"]) == (22768, "cc1")


RUNC = (
    "We had a test that specifies 10m container cgroup limit, which never failed before, but now "
    "the container get oom-killed a lot.\n"
    "```\n"
    "kernel: runc:[2:INIT] invoked oom-killer: gfp_mask=0x24000c0, order=0, oom_score_adj=998\n"
    "kernel: CPU: 0 PID: 333 Comm: runc:[2:INIT] Not tainted 4.4.64+ #1\n"
    "```\n"
)
"""https://github.com/opencontainers/runc/issues/1980: a kernel report cut before its scope, the
limit it ran under stated by the person."""


def test_a_report_cut_before_its_scope_takes_the_limit_the_input_states(tmp_path: Path) -> None:
    result = _triaged(tmp_path / "issue.txt", RUNC)
    assert result.triage_class is TriageClass.CGROUP_OOM, result.summary
    assert {1, 3} <= {e.line for e in result.decided_by}
    unstated = RUNC.split("\n", 1)[1]
    assert _triaged(tmp_path / "issue.txt", unstated).triage_class is TriageClass.GLOBAL_OOM


SESSION = (
    "```python\n"
    ">>> from skimage.feature import haar_like_feature\n"
    ">>> harr = haar_like_feature(image1_ii, 0, 0, 480, 640, feature_type=['type-2-x'])\n"
    "\n"
    "MemoryError: std::bad_alloc\n"
    "```\n"
)
"""https://github.com/scikit-image/scikit-image/issues/4476: what an interactive session printed."""


def test_an_interactive_sessions_output_is_no_source(tmp_path: Path) -> None:
    result = _triaged(tmp_path / "issue.txt", SESSION)
    assert result.triage_class is TriageClass.HOST_ALLOC_FAILED, result.summary
    # without the prompts, the error's line still holds no statement: printed (a line in a
    # language fence with no statement's shape); the same error raised is the program's source
    printed = SESSION.replace(">>> ", "")
    assert _triaged(tmp_path / "issue.txt", printed).triage_class is TriageClass.HOST_ALLOC_FAILED
    source = printed.replace("MemoryError: std::bad_alloc", 'raise MemoryError("std::bad_alloc")')
    assert _triaged(tmp_path / "issue.txt", source).triage_class is TriageClass.UNKNOWN


def test_a_kill_with_memory_said_to_have_run_out(tmp_path: Path) -> None:
    # https://github.com/cdcseacave/openMVS/issues/600
    text = (
        "On my terminal i received a Killed at the end. but no additional .mvs had been created.\n"
        "\n- RAM: 28.7 GB\n\nyou run out of mem\n"
    )
    result = _triaged(tmp_path / "issue.txt", text)
    assert result.triage_class is TriageClass.GLOBAL_OOM and "most likely" in result.summary
    hedged = text.replace("you run out of mem", "This usually indicates running out of memory.")
    assert _triaged(tmp_path / "issue.txt", hedged).triage_class is TriageClass.EXTERNAL_KILL


_reads(
    PARTS_READINGS,
    "probed_forms_by_their_parts",
    [
        # the JVM's message since JDK 11: the exception raised, its detail supposing a cause
        ("java.lang.OutOfMemoryError: unable to create native thread: possibly out of memory or "
         "process/resource limits reached", "host_alloc_failed"),
        ("This is possibly an OutOfMemoryError", "memory_noted"),
        # Emscripten's abort with its reason
        ("Aborted(OOM)", "host_alloc_failed"),
        ("Aborted(Assertion failed)", None),
        # a program's name before the statement alone (Lua's interpreter)
        ("lua: not enough memory", "host_alloc_failed"),
        # Qt's refusal answered with an empty result: handled
        ("QImage: out of memory, returning null image", "oom_handled"),
        # a condition opened before the words in their clause: advice
        ("Increase the memory limit if your pods get OOMKilled frequently.", "memory_noted"),
        ("The pod got OOMKilled: 'if' and 'when' were not involved", "limit_oom_kill"),
    ],
    ids=["jvm-native-thread", "possibly-exception", "aborted-oom", "aborted-other",
         "program-prefix", "returning-null", "condition", "quoted-if"],
)  # fmt: skip


def test_sacct_state_cut_to_its_column_is_slurms_oom(tmp_path: Path) -> None:
    # sacct's default columns are 10 wide: OUT_OF_MEMORY prints as "OUT_OF_ME+"
    text = (
        "       JobID    JobName      State ExitCode     MaxRSS     ReqMem\n"
        "------------ ---------- ---------- -------- ---------- ----------\n"
        "123456            train OUT_OF_ME+    0:125                   8Gn\n"
        "123456.batch      batch OUT_OF_ME+    0:125   8388608K\n"
    )
    result = _triaged(tmp_path / "sacct.txt", text)
    assert result.triage_class is TriageClass.CGROUP_OOM, result.summary
    assert 3 in {e.line for e in result.decided_by}
    cancelled = text.replace("OUT_OF_ME+", "CANCELLED+")
    assert _triaged(tmp_path / "sacct.txt", cancelled).triage_class is not TriageClass.CGROUP_OOM


_reads(
    LINE_READINGS,
    "probed_ends_by_their_parts",
    [
        # a probe of CI systems' and schedulers' ends, expected readings written first
        ("No output has been received in the last 10m0s, this potentially indicates a stalled "
         "build or something wrong with the build itself.", "timeout"),
        ("Set no_output_timeout to fail builds with no output in the last 10m", None),
        ("Error: Job exceeded the allotted time of 00:30:00 and was killed", "timeout"),
        ("Your job 123 was killed because it exceeded the requested runtime (h_rt=3600)",
         "timeout"),
        ("How do I raise the requested runtime of my job?", None),
        ("npm ERR! errno 137", "exit_code"),
        ("test_foo (tests.test_x.TestFoo) ... FAIL", "test_failed"),
        ("test_foo (tests.test_x.TestFoo) ... ok", None),
        ("error: test failed, to rerun pass `--lib`", "test_failed"),
    ],
    ids=["no-output", "no-output-setting", "allotted-time", "requested-runtime",
         "runtime-question", "npm-errno", "unittest-fail", "unittest-ok", "cargo-test"],
)  # fmt: skip


_reads(
    PARTS_READINGS,
    "an_end_read_by_its_reason",
    [
        # a retry that failed in turn is the end, not a recovery (MXNet's pooled storage)
        ("MXNetError: [12:00:00] src/storage/./pooled_storage_manager.h:157: cudaMalloc retry "
         "failed: out of memory", "gpu_oom"),
        ("cudaMalloc failed: out of memory, retrying with a smaller pool", "gpu_oom_handled"),
        # a process's end with its reason after a colon: the reason decides (Ollama)
        ("Error: llama runner process has terminated: cudaMalloc failed: out of memory",
         "gpu_oom"),
        ("The worker process has terminated: OOMKilled", "oom_kill"),
    ],
    ids=["retry-failed", "retrying", "terminated-for-a-refusal", "terminated-for-a-kill"],
)  # fmt: skip


_reads(
    PARTS_READINGS,
    "the_node_in_the_statements_own_sentence",
    [
        # the node named only in advice after the statement (MySQL's error 1041)
        ("ERROR 1041 (HY000): Out of memory; check if mysqld or some other process uses all "
         "available memory; if not, you may have to use 'ulimit' to allow mysqld to use more "
         "memory or you can add more swap space", "host_alloc_failed"),
        ("The node ran out of memory while allocating 4096 bytes", "node_oom_kill"),
    ],
    ids=["advice-after", "node-in-the-statement"],
)  # fmt: skip


def test_the_cuda_drivers_refusal_on_the_host_is_the_hosts() -> None:
    found = parse_line(
        "RuntimeError: Failed to allocate 2147483648 bytes on the host: CUDA_ERROR_OUT_OF_MEMORY"
    )
    assert found is not None and found.kind == "host_alloc_failed", found


_reads(
    LINE_READINGS,
    "a_count_of_things_killed_is_no_kill",
    [
        ("Killed 3 idle connections", None),
        ("Killed 12 long running queries", None),
        ("Killed", "shell_killed"),
        ("Killed python train.py --epochs 3", "terminated_externally"),
    ],
    ids=["count-of-connections", "count-of-queries", "shell-word", "shell-word-command"],
)  # fmt: skip


_reads(
    LINE_READINGS,
    "jenkins_abort_is_a_cancel",
    [
        ("Aborted by admin", "canceled"),
        ("Finished: ABORTED", "canceled"),
        ("Build was aborted", "canceled"),
        ("The build will be aborted if the queue is full", None),
    ],
    ids=["aborted-by", "finished-aborted", "build-was-aborted", "supposed"],
)  # fmt: skip


def test_a_hosts_dmesg_naming_docker_is_no_platform(tmp_path: Path) -> None:
    # a host's kernel log names docker's bridge and veths; its cut OOM report stays the host's
    text = (
        "[ 100.000000] docker0: port 1(veth1a2b3c) entered blocking state\n"
        "[ 100.000001] docker0: port 1(veth1a2b3c) entered forwarding state\n"
        "[ 200.000000] python3 invoked oom-killer: gfp_mask=0x100cca(GFP_HIGHUSER_MOVABLE), "
        "order=0, oom_score_adj=0\n"
    )
    result = _triaged(tmp_path / "dmesg.txt", text)
    assert result.triage_class is TriageClass.GLOBAL_OOM, result.summary


_reads(
    LINE_READINGS,
    "part_n2_read_by_mechanism",
    [
        # part N2's lines, each with a counter-case
        ("what: std::bad_alloc", "memory_noted"),  # alone, outside a pasted log: a mention
        ('Ryujinx.Graphics.Vulkan.VulkanException: Unexpected API error "ErrorOutOfDeviceMemory".',
         "gpu_oom"),
        ('Ryujinx.Graphics.Vulkan.VulkanException: Unexpected API error "ErrorSurfaceLostKhr".',
         "exception_line"),
        ("x264 [error]: malloc of size 11453376 failed", "host_alloc_failed"),
        ("malloc(1024) failed", "host_alloc_failed"),
        ("calloc of 12 bytes failed", "host_alloc_failed"),
        ("x264 [error]: open of output file failed", None),
        ("Cannot lock down 107341338 byte memory area (Cannot allocate memory)", "memory_noted"),
        ("mlock failed: Cannot allocate memory", "memory_noted"),
        ("mmap() failed: Cannot allocate memory", "host_alloc_failed"),
        ("[33743641.521654] Out of memory in UB 221814591: OOM killed process 7439 (cc1plus) "
         "score 0 vm:300996kB, rss:273744kB, swap:0kB", "limit_oom_kill"),
        ("[33743641.521654] Out of memory: Killed process 7439 (cc1plus) total-vm:300996kB",
         "kernel_killed"),
    ],
    ids=["what-alone", "vulkan-identifier", "vulkan-other-identifier", "malloc-of-size",
         "malloc-call", "calloc-of-bytes", "open-failed", "lock-down", "mlock", "mmap",
         "openvz-ub", "host-kernel"],
)  # fmt: skip


def test_the_number_after_an_identifiers_word_is_no_size() -> None:
    found = parse_line("Out of memory in UB 221814591: OOM killed process 7439 (cc1plus)")
    assert found is not None and "size_bytes" not in found.fields, found
    sized = parse_line("Out of memory allocating 221814591")  # a bare number, no identifier
    assert sized is not None and sized.fields.get("requested_bytes") == 221814591, sized


def test_cpp_what_in_a_pasted_log_is_the_exceptions_message(tmp_path: Path) -> None:
    text = (
        "inkscape crashes with the following message:\n\n```\n"
        "** (org.inkscape.Inkscape:77666): ERROR **: 16:12:36.757:\n"
        "unhandled exception (type std::exception) in signal handler:\n"
        "what: std::bad_alloc\n\n"
        "fish: Job 1, 'inkscape' terminated by signal SIGTRAP (Trace or breakpoint trap)\n```\n"
    )
    result = _triaged(tmp_path / "issue.txt", text)
    assert result.triage_class is TriageClass.HOST_ALLOC_FAILED, result.summary
    told = "The docs list the fields of an exception:\n\nwhat: std::bad_alloc\n"  # no paste
    assert _triaged(tmp_path / "told.txt", told).triage_class is not TriageClass.HOST_ALLOC_FAILED


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # probes written down with their answers before any run (canonical wordings)
        ("I/lowmemorykiller(  123): Killing 'com.example.app' (12345), adj 900,\n"
         "   to free 81920kB because cache 102400kB is below limit 110592kB for oom_score_adj 900",
         TriageClass.GLOBAL_OOM),
        ("Job has gone over cgroup memory limit of 2048 megabytes. Peak usage: 2100 megabytes. "
         "Consider resubmitting with a higher request_memory.", TriageClass.CGROUP_OOM),
        ('job 1234 exceeds job hard limit "h_vmem" of queue "all.q@node1" (4294967296.00000 > '
         "limit:4294967296.00000) - sending SIGKILL", TriageClass.CGROUP_OOM),
        # counter-cases: a wrapped line that is code, a time limit, a size without a limit
        ("    kill_process(pid, reason='lowmemorykiller',", TriageClass.UNKNOWN),
        ('job 1234 exceeds job hard limit "h_rt" of queue "all.q@node1" (3600.00000 > '
         "limit:3600.00000) - sending SIGKILL", None),  # a run-time limit: no memory class
        ("Peak usage: 2100 megabytes.", TriageClass.UNKNOWN),
    ],
    ids=["android-lmk-wrapped", "htcondor-megabytes", "grid-engine-h-vmem", "code-line",
         "grid-engine-h-rt", "usage-alone"],
)  # fmt: skip
def test_probe_nine_by_mechanism(tmp_path: Path, text: str, expected: TriageClass | None) -> None:
    result = _triaged(tmp_path / "x.log", text + "\n")
    if expected is None:
        assert "OOM" not in result.triage_class.value, result.summary
    else:
        assert result.triage_class is expected, result.summary


_reads(
    LINE_READINGS,
    "an_oom_met_by_switching_to_a_cheaper_way_is_handled",
    [
        ("WARNING: Not enough memory to continue with full-resolution; switching to tiled mode",
         "oom_handled"),
        ("torch.OutOfMemoryError: CUDA out of memory when switching to fp32", "gpu_oom"),
        ("RuntimeError: out of memory, switching to the next shard failed", "host_alloc_failed"),
    ],
    ids=["fallback", "oom-while-switching", "fallback-failed"],
)  # fmt: skip


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # Cloudflare Workers' JSON log: the message field is the record, not a string literal
        ('```log\n{\n  "message": "Worker exceeded memory limit.",\n  "outcome": "exceededMemory",'
         "\n}\n```", TriageClass.CGROUP_OOM),
        ('{\n  "error": "Worker exceeded memory limit.",\n  "statusCode": 503\n}',
         TriageClass.CGROUP_OOM),
        # counter-cases: a string literal in code, a field that is no sentence
        ('    raise_limit("Worker exceeded memory limit.",', TriageClass.UNKNOWN),
        ('  "name": "worker exceeded memory limit",', TriageClass.UNKNOWN),
    ],
    ids=["workers-message", "workers-error", "code-argument", "lowercase-name-field"],
)  # fmt: skip
def test_a_structured_logs_message_field_is_a_record(
    tmp_path: Path, text: str, expected: TriageClass
) -> None:
    result = _triaged(tmp_path / "x.log", text + "\n")
    assert result.triage_class is expected, result.summary


_reads(
    LINE_READINGS,
    "an_allocation_verb_and_its_object_then_fail",
    [
        # OceanBase's observer.log: the object between the verb and its failure
        ("[2021-06-07 19:38:53.589284] ERROR [LIB] ob_malloc (ob_malloc.h:38) [79518][226] [lt=5]"
         " allocate memory fail(attr=tenant_id=1, label=MysqlRequesReco, ctx_id=0, prio=0, "
         "nbyte=2088960)", "host_alloc_failed"),
        ("E0101 12:00:00.000 pool.cc:88] alloc buffer failed, size=4096", "host_alloc_failed"),
        # counter-cases: freeing memory failed, an allocation said to have worked
        ("[2021-06-07 19:38:53] ERROR free memory failed(addr=0x7f00)", None),
        ("[2021-06-07 19:38:53] INFO allocate memory ok(nbyte=2088960)", None),
    ],
    ids=["oceanbase-ob-malloc", "alloc-buffer", "free-failed", "allocated-ok"],
)  # fmt: skip


_reads(
    PARTS_READINGS,
    "a_limit_crossed_in_the_programs_own_panic_is_its_refusal",
    [
        # Databend's alloc-error hook: its own tracker refused, and it panicked with a backtrace
        ("memory usage 15.0 GB(15041424373) exceeds limit 15.0 GB(15032385536) backtrace= "
         "panic.file=src/common/base/src/runtime/memory/alloc_error_hook.rs panic.line=24",
         "host_alloc_failed"),
        ("thread 'main' panicked at 'memory usage 2.1 GiB exceeds limit 2.0 GiB'",
         "host_alloc_failed"),
        # counter-cases: the same crossing with no panic is a limit's kill; the kernel's panic
        ("memory usage 15.0 GB(15041424373) exceeds limit 15.0 GB(15032385536)", "limit_oom_kill"),
        ("Kernel panic - not syncing: memory usage 2.1 GiB exceeds limit 2.0 GiB",
         "limit_oom_kill"),
    ],
    ids=["databend-hook", "rust-panicked", "no-panic", "kernel-panic"],
)  # fmt: skip


_reads(
    LINE_READINGS,
    "an_oom_that_appears_or_seems_to_happen_is_a_guess",
    [
        # rspack's issue title: the author's guess at what ended the step
        ("[Issue] rspack appears to run out of memory and fail silenty on local and CI bundle "
         "step (large bundle size of almost 100 MB)", "memory_noted"),
        ("The worker seems to have run out of memory after 20 minutes", "memory_noted"),
        # counter-cases: a program's report in which "appears" is no hedge of the statement
        ("fatal error: runtime: out of memory", "host_alloc_failed"),
        ("ERROR: out of memory allocating 4096 bytes (the warning appears twice)",
         "host_alloc_failed"),
    ],
    ids=["rspack-title", "seems-to-have", "go-runtime", "appears-elsewhere"],
)  # fmt: skip


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # Supabase's edge runtime: a time limit named by its length, the worker ended for it
        ("`DEBUG max duration reached for the worker. terminating the worker. (duration 1m0s)`",
         TriageClass.TIMEOUT),
        ("Function invocation exceeded the maximum duration of 300s", TriageClass.TIMEOUT),
        # counter-cases: the setting asked about or set, a duration that is only a figure
        ("How do I configure the max duration of a worker?", TriageClass.UNKNOWN),
        ("max duration: 60s", TriageClass.UNKNOWN),
    ],
    ids=["supabase-edge-runtime", "maximum-duration-exceeded", "question", "setting"],
)  # fmt: skip
def test_a_time_limit_named_by_its_length_is_found(
    tmp_path: Path, text: str, expected: TriageClass
) -> None:
    result = _triaged(tmp_path / "x.log", text + "\n")
    assert result.triage_class is expected, result.summary


_reads(
    LINE_READINGS,
    "a_limit_report_whose_kill_field_is_false_killed_nothing",
    [
        # Erlang's max_heap_size report with its kill switch off: it only logged
        ("2021-09-05T12:16:26.175959+00:00 [error] Process:          <0.2120.0> on node "
         "'e2eemqx@e2eemqx-0', Context:          maximum heap size reached, Max Heap Size:    "
         "8388608, Total Heap Size:  35478866, Kill:             false, Error Logger:     true",
         "memory_noted"),
        # counter-cases: the same report with the kill on; a kill named in words, not a field
        ("2021-09-05T12:16:26.175959+00:00 [error] Context: maximum heap size reached, Max Heap "
         "Size: 8388608, Total Heap Size: 35478866, Kill: true, Error Logger: true",
         "host_alloc_failed"),
        ("2021-09-05T12:16:26 [error] maximum heap size reached, no kill switch, aborting",
         "host_alloc_failed"),
    ],
    ids=["erlang-kill-false", "erlang-kill-true", "kill-in-words"],
)  # fmt: skip


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # react-scripts' message (CodeBuild's log): memory supposed, the SIGKILL shared by both
        ("The build failed because the process exited too early. This probably means the system "
         "ran out of memory or someone called `kill -9` on the process.",
         TriageClass.EXTERNAL_KILL),
        ("Worker exited: probably out of memory or SIGKILL from the supervisor",
         TriageClass.EXTERNAL_KILL),
        # counter-cases: memory supposed with no kill as the other cause; memory stated, then a
        # kill named in another sentence
        ("This probably means the system ran out of memory or disk space.", TriageClass.UNKNOWN),
        ("kernel: Out of memory: Killed process 1234 (node), not by kill -9 or SIGKILL",
         TriageClass.GLOBAL_OOM),
    ],
    ids=["react-scripts", "sigkill-alternative", "no-kill-alternative", "stated-then-kill"],
)  # fmt: skip
def test_memory_or_a_sigkill_supposed_is_a_kill(
    tmp_path: Path, text: str, expected: TriageClass
) -> None:
    result = _triaged(tmp_path / "x.log", text + "\n")
    assert result.triage_class is expected, result.summary


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # TestCafe's report: the assertion's error as the first item of its failure list
        (" 1) AssertionError: expected false to be truthy\n\n      Browser: Chrome 97.0.4692.99 /"
         " Windows 10\n", TriageClass.TEST_FAILURE),
        ("  2) AssertionError [ERR_ASSERTION]: Expected values to be strictly equal:\n",
         TriageClass.TEST_FAILURE),
        # counter-cases: a program's own uncaught assertion, an item that names the error in prose
        ("Traceback (most recent call last):\n  File \"x.py\", line 3, in <module>\n"
         "AssertionError: expected false to be truthy\n", TriageClass.UNKNOWN),
        ("1) AssertionError is what the checker raises\n", TriageClass.UNKNOWN),
    ],
    ids=["testcafe", "mocha-node-assert", "program-assertion", "prose-item"],
)  # fmt: skip
def test_an_assertion_in_a_numbered_failure_list_is_a_failed_test(
    tmp_path: Path, text: str, expected: TriageClass
) -> None:
    assert _triaged(tmp_path / "x.log", text).triage_class is expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # AWS Amplify Hosting's build status: the container is the subject that ran out
        ("### Describe the bug\n\nBuild container ran out of memory\n", TriageClass.CGROUP_OOM),
        ("ERROR: container ran out of memory during npm run build\n", TriageClass.CGROUP_OOM),
        # counter-cases: a person's container, an expectation about one, the system's memory
        ("My container ran out of memory yesterday\n", TriageClass.UNKNOWN),
        ("Build successful as the log says or display why container ran out of memory.\n",
         TriageClass.UNKNOWN),
        ("System is out of memory\n", TriageClass.GLOBAL_OOM),
    ],
    ids=["amplify-build-container", "container-error", "person", "expectation", "system"],
)  # fmt: skip
def test_a_container_that_ran_out_of_memory_hit_its_limit(
    tmp_path: Path, text: str, expected: TriageClass
) -> None:
    result = _triaged(tmp_path / "x.log", text)
    assert result.triage_class is expected, result.summary


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # Turborepo's issue: a build tool's task is a process, no limit bounds it
        ("Specifically, this happens when (a) some tasks do succeed and exit with status `0`, but "
         "(b) a task is killed by a signal. We are encountering this when a task is OOM-killed.",
         TriageClass.GLOBAL_OOM),
        # counter-cases: a task whose limit or container is named, a job
        ("Task stopped: OutOfMemoryError: Container killed due to memory usage",
         TriageClass.CGROUP_OOM),
        ("task 3 OOM-killed: exceeded its memory limit of 512 MiB", TriageClass.CGROUP_OOM),
        ("slurmstepd: error: job 123 was OOM-killed", TriageClass.CGROUP_OOM),
    ],
    ids=["turborepo-task", "ecs-container", "task-limit", "slurm-job"],
)  # fmt: skip
def test_a_task_alone_bounds_no_oom_kill_to_a_limit(
    tmp_path: Path, text: str, expected: TriageClass
) -> None:
    result = _triaged(tmp_path / "x.log", text + "\n")
    assert result.triage_class is expected, result.summary


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # Lighthouse's issue: the kinds of problem listed, each to be described after
        ("I've come across two types of issues in doing a large run with plots:\n\n"
         "1) Out of memory error\n2) Segfault\n\nExample of OOM:\n\n```\nTODO\n```\n",
         TriageClass.UNKNOWN),
        ("Known problems:\n- out of memory errors\n- slow start\n", TriageClass.UNKNOWN),
        # counter-cases: an item that says where or how much, a report alone on its line
        ("1) Out of memory error while allocating 4096 bytes\n", TriageClass.HOST_ALLOC_FAILED),
        ("Out of memory error\n", TriageClass.HOST_ALLOC_FAILED),
    ],
    ids=["lighthouse-kinds", "bullets", "item-with-detail", "bare-report"],
)  # fmt: skip
def test_a_list_item_that_names_a_kind_of_problem_reports_nothing(
    tmp_path: Path, text: str, expected: TriageClass
) -> None:
    result = _triaged(tmp_path / "x.log", text)
    assert result.triage_class is expected, result.summary


_reads(
    PARTS_READINGS,
    "an_oom_as_the_object_of_a_persons_clause_is_their_account",
    [
        # Typesense's issue: the error is the object of the person's clause, mid-sentence
        ("Initially, we do have 8GB RAM and 4 vcpus. All the memories was occupied by the "
         "typesense and we got the out of memory error from the server.", "memory_noted"),
        ("After an hour the server slowed down and then they hit an out of memory error.",
         "memory_noted"),
        # counter-cases: the code they got, the error only memory raises named, a program's line
        ("When running on long tracks, we are getting OOM exit code 137 in the kubernetes.",
         "oom_kill"),
        ("Sometimes, we got a std::bad_alloc error and core dump.", "host_alloc_failed"),
        ("ERROR: the server got an out of memory error", "host_alloc_failed"),
    ],
    ids=["typesense", "they-hit", "exit-code", "bad-alloc-named", "program"],
)  # fmt: skip


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # kicad-tools' CI report: pytest-timeout's own wording, quoted in the report's prose
        ("Both are `Failed: Timeout (>60.0s) from pytest-timeout`. The two tests have\n",
         TriageClass.TIMEOUT),
        ("E   Failed: Timeout (>10.0s) from pytest-timeout.\n", TriageClass.TIMEOUT),
        # counter-cases: the wording as an assertion's pattern, a test's failure of its own
        ("E   AssertionError: expected 'Failed: Timeout (>5.0s) from pytest-timeout'\n"
         "FAILED tests/test_x.py::test_a - AssertionError\n", TriageClass.TEST_FAILURE),
        ("FAILED tests/test_x.py::test_a - Failed: DID NOT RAISE\n", TriageClass.TEST_FAILURE),
    ],
    ids=["kicad-prose", "pytest-e-line", "quoted-pattern", "did-not-raise"],
)  # fmt: skip
def test_pytest_timeouts_parenthesised_limit_is_a_timeout(
    tmp_path: Path, text: str, expected: TriageClass
) -> None:
    result = _triaged(tmp_path / "x.log", text)
    assert result.triage_class is expected, result.summary


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # cocotb's regression manager: the test and what ended it, named together
        (" 15000.00ns ERROR    cocotb.regression                         regression.py:399  in "
         "_score_test                     Test Failed: test_dff_simple (result was "
         "AssertionError)\n", TriageClass.TEST_FAILURE),
        # counter-cases: a failed test ended by memory, prose about a failing test
        ("ERROR cocotb.regression Test Failed: test_big (result was MemoryError)\n"
         "MemoryError: Unable to allocate 30.2 GiB for an array\n", TriageClass.HOST_ALLOC_FAILED),
        ("Naturally, the test failed on my machine.\n", TriageClass.UNKNOWN),
    ],
    ids=["cocotb", "memory-ends-it", "prose"],
)  # fmt: skip
def test_a_test_named_with_what_ended_it_is_a_failed_test(
    tmp_path: Path, text: str, expected: TriageClass
) -> None:
    result = _triaged(tmp_path / "x.log", text)
    assert result.triage_class is expected, result.summary


_reads(
    PARTS_READINGS,
    "a_signal_between_a_kill_and_its_memory_cause_is_read",
    [
        # Yosys' issue: a run wrapper names the signal between the kill and its memory cause
        ("**<<<<< Terminated by signal 9 (SIGKILL) due to explosive use of memory. >>>>>**",
         "oom_kill"),
        ("Killed by signal 9 (SIGKILL) due to the container memory limit", "limit_oom_kill"),
        # counter-cases: the signal alone, a cause that is not memory
        ("Terminated by signal 9 (SIGKILL).", None),
        ("Terminated by signal 15 (SIGTERM) due to a user request.", None),
    ],
    ids=["yosys-wrapper", "limit-named", "signal-alone", "user-request"],
)  # fmt: skip


_reads(
    PARTS_READINGS,
    "a_streams_label_pastes_the_programs_words_into_a_sentence",
    [
        # Av1an's issue: a stream's label pastes the source filter's own words into the sentence
        ("Since I used latest pre-build av1an at this time, I got the error source pipe stderr:  "
         "Failed to allocate memory for plane. Out of memory.", "host_alloc_failed"),
        ("I got the error source pipe stderr:  Failed to allocate memory for plane. Out of "
         "memory.", "host_alloc_failed"),
        # counter-cases: no label (the person's account), a paste not seen, a case supposed
        ("Since I used the latest build, I got an out of memory error from the source pipe.",
         "memory_noted"),
        ("I never saw stderr: Failed to allocate memory in older versions.", "memory_noted"),
        ("If stderr: shows Failed to allocate memory, add swap.", "memory_noted"),
    ],
    ids=["av1an", "av1an-intro", "no-label", "never-saw", "supposed"],
)  # fmt: skip


_reads(
    PARTS_READINGS,
    "a_request_of_zero_bytes_is_no_shortage",
    [
        # megalodon's issue: guppy's limit line for a request of nothing, 64 bytes in use
        ("2022-02-17 14:30:06.553515 [guppy/info] CUDA device 0 reached memory limit while trying "
         "to allocate 0 bytes, currently at 64/11551440896", "memory_noted"),
        ("Allocation of 0 bytes failed: out of memory", "memory_noted"),
        # counter-cases: a request of something, nothing free (not nothing asked)
        ("CUDA device 0 reached memory limit while trying to allocate 284079744 bytes, currently "
         "at 11000000000/11551440896", "gpu_oom"),
        ("RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 2.00 GiB total "
         "capacity; 1.60 GiB already allocated; 0 bytes free; 1.70 GiB reserved in total by "
         "PyTorch)", "gpu_oom"),
    ],
    ids=["guppy-zero", "zero-host", "guppy-sized", "zero-free"],
)  # fmt: skip


_reads(
    LINE_READINGS,
    "the_shells_killed_quoted_as_output_is_a_kill",
    [
        # PDAL's issue: the shell's word for a killed command, quoted as the output one got
        ("I have attempted this in both the conda version as well as the Docker version of PDAL "
         'and am getting the output "Killed" in my terminal window.  My pipeline is as follows:',
         "shell_killed"),
        ("The build prints `Killed` and stops.", "shell_killed"),
        # counter-cases: supposed, a label that is not output
        ('If you get "Killed" in the terminal, add swap.', None),
        ('Label the state "Killed" in the UI.', None),
    ],
    ids=["pdal", "backticks", "supposed", "label"],
)  # fmt: skip


_reads(
    PARTS_READINGS,
    "an_oom_offered_as_one_of_either_outcome_is_foretold",
    [
        # xarray-spatial's bug report: an OOM as one of two outcomes foretold, not one seen
        ("A 20000x20000 raster (400M pixels) tries to grab ~15 GB and either OOM-kills or "
         "thrashes swap.", "memory_noted"),
        ("The job either runs out of memory or times out, depending on the input.",
         "memory_noted"),
        # counter-cases: "either" that offers no OOM as an outcome
        ("The worker was OOM-killed; either the batch or the model is too large.", "oom_kill"),
        ("Either way, the worker was OOM-killed by the kernel.", "oom_kill"),
    ],
    ids=["xarray-spatial", "runs-out-or", "either-cause", "either-way"],
)  # fmt: skip


@pytest.mark.parametrize(
    ("line", "code"),
    [
        # Verilator's driver: its child's death by a signal, in its own words
        ("%Error: Verilator threw signal 9. Suggest trying --debug --gdbbt", -9),
        ("%Error: Verilator threw signal 11. Suggest trying --debug --gdbbt", -11),
        # counter-cases: an exception thrown, a count of errors
        ("%Error: Verilator threw an exception. Suggest trying --debug", None),
        ("The parser threw SignalError 9 times", None),
    ],
    ids=["verilator-9", "verilator-11", "exception", "count"],
)  # fmt: skip
def test_a_program_that_threw_a_signal_died_of_it(line: str, code: int | None) -> None:
    found = parse_line(line)
    assert (found.fields.get("code") if found else None) == code, found


_reads(
    PARTS_READINGS,
    "a_gpus_capacity_exceeded_is_its_memory",
    [
        # readfish's issue: guppy's server refuses to start, the GPU's capacity named as exceeded
        ("[guppy/error] run_server: Maximum GPU capacity exceeded. Try decreasing "
         "max(front_window_size, rear_window_size).. Error initialising basecall server using "
         "port: ipc://5555. Aborting.", "gpu_oom"),
        # counter-cases: another capacity, a GPU's count of something else
        ("Disk capacity exceeded on /dev/sda1", None),
        ("Maximum CPU capacity exceeded", None),
        ("GPU capacity exceeded: too many streams", None),
    ],
    ids=["guppy", "disk", "cpu", "streams"],
)  # fmt: skip


_reads(
    LINE_READINGS,
    "a_kill_given_as_the_reason_of_an_error_is_a_kill",
    [
        # Semgrep's canned message: the kill given as the reason the user sees an error
        ("                    You are seeing this because the engine was killed.",
         "terminated_externally"),
        ("The build failed because the worker was killed.", "terminated_externally"),
        # counter-cases: a kill with a cause of its own after it, a kill for another resource
        ("job killed: ncpus 9.3 exceeded limit 8", None),
        ("The pod was killed because of a CPU limit", None),
        ("The task was killed due to preemption", None),
    ],
    ids=["semgrep", "worker", "pbs-ncpus", "cpu", "preemption"],
)  # fmt: skip


@pytest.mark.parametrize(
    ("line", "kind"),
    [
        # Read the Docs: the platform's kill, for one of two causes it does not tell apart
        ("Command killed due to timeout or excessive memory consumption", "terminated_externally"),
        ("Command killed due to excessive memory consumption or timeout", "terminated_externally"),
        # counter-cases: one cause said, memory or time; another resource as the alternative
        ("Command killed due to excessive memory consumption", "oom_kill"),
        ("Command killed due to timeout", "timeout"),
        ("It might be killed due to timeout or excessive memory consumption", None),
    ],
    ids=["rtd-time-first", "rtd-memory-first", "memory", "time", "supposed"],
)  # fmt: skip
def test_a_kill_for_time_or_memory_is_a_kill(line: str, kind: str | None) -> None:
    found = parse_line(line)
    assert (found.kind if found else None) == kind, found
    used_up = memory_used_up(line + "\n", "log")
    assert (used_up is None) == (kind != "oom_kill"), used_up


_reads(
    PARTS_READINGS,
    "a_cause_that_seems_or_can_be_is_supposed",
    [
        # TypeScript-Sublime-Plugin's issue: the person's guess at why tsserver's heap ran out
        ("Is there anything I can do about that? I am working on a relatively large project and "
         "it seems like some recent commits caused the tsserver to exceed its memory limit when "
         "building.", "memory_noted"),
        # MkDocs' feature request: what a large build can come to
        ("When building a site with a lot of documents, the memory usage skyrockets. This is an "
         "issue as when using automation this can involve OOM process killing.", "memory_noted"),
        # counter-cases: the limit and the kill reported, a "like" that compares
        ("The tsserver exceeded its memory limit when building.", "limit_oom_kill"),
        ("The build was OOM killed like the one before.", "oom_kill"),
    ],
    ids=["tsserver-seems-like", "mkdocs-can-involve", "limit", "like"],
)  # fmt: skip


_reads(
    PARTS_READINGS,
    "a_paste_introduced_by_its_occasion_reports_the_end",
    [
        # Semgrep's issue: a paste introduced by the moment it was taken, the pod's OOM kill
        ("I believe I'm running into the same error while running as a container in Kubernetes. "
         "Here's the log output from the container after it died with an OOMKilled status",
         "limit_oom_kill"),
        ("Here's the log output from the container after it was OOMKilled", "limit_oom_kill"),
        # counter-cases: a paste of a kind of run, a kill avoided, a paste with no occasion
        ("Here is the log of a run that was OOMKilled", "memory_noted"),
        ("I set the limit so that it is not OOMKilled", "memory_noted"),
        ("Here's the log output from the OOMKilled container", "memory_noted"),
    ],
    ids=["semgrep", "after-it-was", "kind-of-run", "avoided", "no-occasion"],
)  # fmt: skip


_THRUST = "terminate called after throwing an instance of 'thrust::system::detail::bad_alloc'\n"


@pytest.mark.parametrize(
    ("what", "expected"),
    [
        # Autoware's CenterPoint: thrust's bad_alloc carries the CUDA error it met, a crash
        ("  what():  std::bad_alloc: cudaErrorIllegalAddress: an illegal memory access was "
         "encountered", TriageClass.UNKNOWN),
        ("  what():  std::bad_alloc: cudaErrorLaunchFailure: unspecified launch failure",
         TriageClass.UNKNOWN),
        # counter-cases: memory's own codes, a message that names no code, the words spelled
        ("  what():  std::bad_alloc: cudaErrorMemoryAllocation: out of memory",
         TriageClass.CUDA_OOM_CAPACITY),
        ("  what():  std::bad_alloc: CUDA_ERROR_OUT_OF_MEMORY", TriageClass.CUDA_OOM_CAPACITY),
        ("  what():  std::bad_alloc", TriageClass.HOST_ALLOC_FAILED),
        ("  what():  std::bad_alloc: cuda error in cudaMalloc: out of memory",
         TriageClass.CUDA_OOM_CAPACITY),
    ],
    ids=["autoware-illegal-address", "launch-failure", "memory-allocation", "out-of-memory",
         "no-code", "cuda-error-in"],
)  # fmt: skip
def test_an_allocation_exception_carrying_another_error_is_not_memory(
    tmp_path: Path, what: str, expected: TriageClass
) -> None:
    log = tmp_path / "node.log"
    log.write_text(f"{_THRUST}{what}\n*** SIGABRT received by PID 138\n")
    assert triage(Sources(paths=(log,))).triage_class is expected


_reads(
    PARTS_READINGS,
    "an_errors_name_spoken_of_as_a_kind_is_a_mention",
    [
        # OctoPrint's maintainer: the error's name spoken of as a kind, what it is
        ("A `MemoryError` is sadly something outside of the control of OctoPrint. It might be "
         "caused by a plugin you have installed, but as you said, it's probably not trivial to "
         "reproduce.", "memory_noted"),
        ("An OutOfMemoryError means the heap is too small.", "memory_noted"),
        # counter-cases: the error raised, reported in the passive, got, named by the program
        ("A MemoryError is raised when I load the file.", "host_alloc_failed"),
        ("The MemoryError was raised in the loader", "host_alloc_failed"),
        ("Got a MemoryError in worker 3", "host_alloc_failed"),
        ("MemoryError", "host_alloc_failed"),
    ],
    ids=["octoprint", "means", "is-raised", "the-was-raised", "got-a", "bare"],
)  # fmt: skip


_reads(
    LINE_READINGS,
    "a_log_records_prefix_leaves_its_message_first",
    [
        # Zephyr's twister: a log record's prefix, then the time limit's words as its message
        ("2022-01-18 20:29:53,541 - twister - DEBUG - Timed out while monitoring serial output "
         "on nucleo_l073rz", "timeout"),
        ("2022-01-18 20:29:53,541 - runner - INFO - Timed out while running the test suite",
         "timeout"),
        # counter-cases: a network's time, a setting, a supposition, after the same prefix
        ("2022-01-18 20:29:53,541 - app - INFO - connection timed out", None),
        ("2022-01-18 20:29:53,541 - app - INFO - set timeout to 30 s", None),
        ("2022-01-18 20:29:53,541 - twister - DEBUG - timeout may be raised if the board hangs",
         None),
    ],
    ids=["twister", "info", "connection", "setting", "supposed"],
)  # fmt: skip


_reads(
    LINE_READINGS,
    "a_process_that_got_a_killing_signal_ended_by_it",
    [
        # dune: a rule's command "(got signal KILL)", the signal by its short name
        ("> js_of_ocaml .js/uucp/uucp.cma.js (got signal KILL)", "exit_code"),
        ("worker 3 got signal 9", "exit_code"),
        # counter-cases: a word that ends in "got", a handler, no signal named
        ("it forgot signal KILL", None),
        ("got signal handler installed", None),
        ("got a signal from the parent", None),
    ],
    ids=["dune", "number", "forgot", "handler", "unnamed"],
)  # fmt: skip


_reads(
    LINE_READINGS,
    "an_end_the_work_went_on_past_is_a_fallback",
    [
        # sccache: the server gone, the work carried on another way in the same sentence
        ("sccache: warning: The server looks like it shut down unexpectedly, compiling locally "
         "instead", None),
        ("the daemon stopped unexpectedly, falling back to in-process builds", None),
        # counter-cases: no fallback, or one in the next sentence (the end is still told)
        ("sccache: warning: The server looks like it shut down unexpectedly",
         "terminated_externally"),
        ("The server shut down unexpectedly. Compiling locally instead", "terminated_externally"),
    ],
    ids=["sccache", "falling-back", "no-fallback", "next-sentence"],
)  # fmt: skip


_reads(
    LINE_READINGS,
    "a_kill_told_before_its_reading_as_memory_is_the_kill",
    [
        # solc's user: the kill told first (after their own circumstance), their reading of it
        # as memory after
        ("I'm just starting with thirdweb contracts, but when I try to run forge build, solc "
         "crashes saying SIGKILL 9, which I take means it runs out of memory.",
         "terminated_externally"),
        ("the linker was killed, which I think means it ran out of RAM", "terminated_externally"),
        # counter-cases: the kill after the memory words (Jupyter's UX idea), a kill supposed
        # (MLServer's), anyone else's "when", a signal only named
        ("I think currently, the UX of using JupyterLab, and having a kernel run out of memory, "
         "making the kernel process killed - the user won't understand much", "memory_noted"),
        ("Sometimes it is possible an inference worker gets killed independently of the parent "
         "worker - say some prediction causes a memory spike and OOM killer sends a SIGKILL.",
         "memory_noted"),
        ("when the limit is reached, the job is killed, which means memory ran out",
         "memory_noted"),
        ("the docs say SIGKILL, which means out of memory", "memory_noted"),
    ],
    ids=["solc", "linker", "jupyter", "mlserver", "their-when", "docs"],
)  # fmt: skip


_COCOAPODS = "活动监视器显示 ruby 进程所占用的内存持续飙升 11 ~ 19.95 GB\uff0c直到被系统杀死\u3002"
"""CocoaPods' user (the fullwidth comma and stop escaped): ruby's memory kept soaring, 11 to
19.95 GB, until the system killed it."""


@pytest.mark.parametrize(
    ("text", "used_up"),
    [
        # typst: the machine's whole memory by its size and owner, filled
        ("The problem is that it quickly fills my 32GB of RAM and then gets killed by the "
         "kernel.", True),
        # whisperX: memory said to blow up
        ("at the end of the process system memory blows up and the process is killed.", True),
        # dune's maintainer: a dash ends the clause before the advice after it
        ("This happens because it ran out of memory - fortunately simply running it again "
         "typically works.", True),
        # CocoaPods' user, in Chinese: ruby's memory kept soaring (持续飙升) until killed
        (_COCOAPODS, True),
        # counter-cases: an amount not owned as the whole, a supposition, a card, a change over
        # time, the advice in the same clause
        ("it uses 8GB of RAM", False),
        ("it may fill my 32GB of RAM", False),
        ("it uses my 16 GB memory card", False),
        ("memory grew over time", False),
        ("it typically runs out of memory", False),
        ("内存占用正常", False),
    ],
    ids=["typst", "whisperx", "dune", "cocoapods", "amount", "may", "card", "over-time",
         "typically", "chinese-normal"],
)  # fmt: skip
def test_memory_said_used_up_in_more_words(text: str, used_up: bool) -> None:
    assert (memory_used_up(text, "issue.md") is not None) is used_up


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # typst: the machine's memory filled, then the kernel's kill
        ("The problem is that it quickly fills my 32GB of RAM and then gets killed by the "
         "kernel.\n", TriageClass.GLOBAL_OOM),
        # CocoaPods' user: memory soaring until killed by the system (被系统杀死)
        (f"{_COCOAPODS}\n", TriageClass.GLOBAL_OOM),
        # dune: the signal, then the maintainer's cause
        ("> js_of_ocaml .js/uucp/uucp.cma.js (got signal KILL)\n\nThis happens because it ran "
         "out of memory - fortunately simply running it again typically works.\n",
         TriageClass.GLOBAL_OOM),
        # counter-cases: the kills alone, memory not said used up
        ("it gets killed by the kernel.\n", TriageClass.EXTERNAL_KILL),
        ("直到被系统杀死。\n", TriageClass.EXTERNAL_KILL),
        ("> js_of_ocaml .js/uucp/uucp.cma.js (got signal KILL)\n", TriageClass.EXTERNAL_KILL),
        ("进程被系统调度\n", TriageClass.UNKNOWN),
    ],
    ids=["typst", "cocoapods", "dune", "kernel-alone", "chinese-alone", "dune-alone",
         "chinese-no-kill"],
)  # fmt: skip
def test_a_kill_after_memory_said_used_up_is_the_machines(
    tmp_path: Path, text: str, expected: TriageClass
) -> None:
    assert _triage_text(tmp_path, text).triage_class is expected


_reads(
    PARTS_READINGS,
    "an_oom_a_thing_may_cause_is_foretold",
    [
        # typst's feature request: an OOM kill foretold as what caching "may cause"
        ("When compiling a large document with barely no duplicated contents, most computation "
         "results may not be reused, but they are cached in memory, which may cause a OOM kill "
         "for some memory limited machines.", "memory_noted"),
        ("Loading every shard at once could cause an out of memory error.", "memory_noted"),
        # counter-case: the kill it did cause
        ("the cache caused a OOM kill on the runner", "oom_kill"),
    ],
    ids=["typst", "could-cause", "caused"],
)  # fmt: skip


_reads(
    LINE_READINGS,
    "work_failed_due_over_time_ran_out_of_time",
    [
        # vcpkg's CI: a run failed because it went past its time ("due over time")
        ("osx ci is failed lately due over time after 2 days.", "timeout"),
        ("the build failed due to overtime", "timeout"),
        ("The job ran overtime and was cancelled", "timeout"),
        # counter-cases: a change over time, V8's GC trace's walltime beside "allocation failure"
        ("memory grew over time after 2 days", None),
        ("it failed, memory grew over time", None),
        ("(+ 0.2 ms in 3 steps since start of marking, biggest step 0.1 ms, walltime since start "
         "of marking 825 ms) (average mu = 0.325, current mu = 0.249) allocation failure; GC in "
         "old space requested", None),
    ],
    ids=["vcpkg", "overtime", "ran-overtime", "grew", "failed-grew", "v8-walltime"],
)  # fmt: skip


_reads(
    LINE_READINGS,
    "a_rename_said_out_of_memory_is_not_memory",
    [
        # PyInstaller under Wine: os.rename's error worded as memory, one path to another
        ("OSError: [WinError 8] Not enough memory: 'Z:\\\\src\\\\dist\\\\test_mem.exe."
         "notanexecutable' -> 'Z:\\\\src\\\\dist\\\\test_mem.exe'", "exception_line"),
        ("OSError: [Errno 12] Cannot allocate memory: '/tmp/a' -> '/tmp/b'", "exception_line"),
        # counter-cases: the same codes on one path (a shared-memory file), or on none
        ("OSError: [Errno 12] Cannot allocate memory: '/dev/shm/torch_1234'",
         "host_alloc_failed"),
        ("OSError: [Errno 12] Cannot allocate memory", "host_alloc_failed"),
        ("OSError: [WinError 8] Not enough memory resources are available to process this "
         "command", "host_alloc_failed"),
    ],
    ids=["pyinstaller-wine", "errno-rename", "shm-path", "no-path", "winerror-8"],
)  # fmt: skip


_reads(
    PARTS_READINGS,
    "a_restart_a_cheaper_way_handles_the_shortage",
    [
        # vcpkg: the build restarted a cheaper way, the memory it ran short of handled
        ("- Restarting Build without parallelism because memory exceeded", "oom_handled"),
        ("Restarting with fewer workers after out of memory", "oom_handled"),
        # counter-cases: a restart that names no cheaper way, a container's restart for its limit
        ("Restarting build because memory exceeded", "host_alloc_failed"),
        ("the container restarted because memory exceeded its limit", "limit_oom_kill"),
    ],
    ids=["vcpkg", "fewer-workers", "plain-restart", "container"],
)  # fmt: skip


GRAPHITE = (
    "Fresh install of 0.9.10 on an minimal EL6 machine produces traceback when rendering a graph:\n"
    "\n"
    "``` python\n"
    "Traceback (most recent call last):\n"
    '  File "/usr/lib/python2.6/site-packages/graphite/render/glyph.py", line 214, in getExtents\n'
    "    F = self.ctx.font_extents()\n"
    "MemoryError\n"
    "```\n"
)
"""https://github.com/dcarley/graphite-rpms/issues/6: a traceback fenced as Python."""


def test_a_traceback_in_a_language_fence_is_output(tmp_path: Path) -> None:
    result = _triaged(tmp_path / "issue.txt", GRAPHITE)
    assert result.triage_class is TriageClass.HOST_ALLOC_FAILED, result.summary
    assert 7 in {e.line for e in result.decided_by}
    # counter-cases: the same fence holding source that raises or catches it, or a comment
    # naming the head above source
    for source in (
        '```python\nraise MemoryError("out of memory")\n```\n',
        "```python\ntry:\n    f()\nexcept MemoryError:\n    raise MemoryError\n```\n",
        '```python\n# Traceback (most recent call last):\nraise MemoryError("no memory")\n```\n',
    ):
        assert _triaged(tmp_path / "issue.txt", source).triage_class is TriageClass.UNKNOWN


_reads(
    PARTS_READINGS,
    "a_persons_sentence_running_on_to_the_killer_acting_reports_it",
    [
        # syslog-ng: a person's sentence runs on to the OOM killer acting
        ("We are using syslog-ng in our embedded ARM based device with max. memory of 250MB. We "
         "found the memory usage of syslog-ng gradually increase when configured remote syslog "
         "destination over UDP, until oom-killer kicks in and device reboots.", "oom_kill"),
        ("We watched it grow and then the OOM killer killed the daemon.", "oom_kill"),
        # counter-cases: a killer that never acts, a question, a condition, a modal, a setting
        ("We found the memory grows, but the oom-killer never kicks in.", "memory_noted"),
        ("I wonder when the oom-killer kills it.", "memory_noted"),
        ("We saw it grow and if the oom-killer kills it we lose logs.", "memory_noted"),
        ("We expect the memory to stay flat, until the oom-killer should kick in.",
         "memory_noted"),
        ("We tuned oom_score_adj so that the oom-killer kills the worker first.", "memory_noted"),
    ],
    ids=["syslog-ng", "and-then", "never", "question", "condition", "modal", "setting"],
)  # fmt: skip


COLLECTD = (
    "When resolver is unavailable collectd takes all memory:\n"
    "```\n"
    "[50535.924569] Free swap  = 0kB\n"
    "[50535.924569] Total swap = 511996kB\n"
    "[50535.924574] [ pid ]   uid  tgid total_vm      rss nr_ptes nr_pmds swapents oom_score_adj "
    "name\n"
    "[50535.924581] [ 1158]     0  1158     8587      474      18       3      296         -1000 "
    "systemd-udevd\n"
    "```\n"
)
"""https://github.com/collectd/collectd/issues/2616: a kernel OOM report cut after its task list,
before its kill line."""


def test_the_oom_killers_task_list_shows_it_ran(tmp_path: Path) -> None:
    result = _triaged(tmp_path / "issue.txt", COLLECTD)
    assert result.triage_class is TriageClass.GLOBAL_OOM, result.summary
    assert {1, 5} <= {e.line for e in result.decided_by}  # the list's head, the person's words
    newer = COLLECTD.replace("nr_ptes nr_pmds swapents", "pgtables_bytes swapents")
    assert _triaged(tmp_path / "issue.txt", newer).triage_class is TriageClass.GLOBAL_OOM
    # Under a limit the input sets: that limit's.
    capped = "Running in a docker container with --memory=1g\n" + COLLECTD
    assert _triaged(tmp_path / "issue.txt", capped).triage_class is TriageClass.CGROUP_OOM
    # counter-cases: the memory figures alone, a ps listing's head, the words without the list
    for text in (
        COLLECTD.replace("oom_score_adj name", "name"),
        "```\n  PID   UID  TGID    VSZ   RSS COMMAND\n 1158     0  1158  8587   474 systemd\n```\n",
        "The oom_score_adj name column of the list is documented in proc(5).\n",
    ):
        assert _triaged(tmp_path / "issue.txt", text).triage_class is TriageClass.UNKNOWN, text


_reads(
    LINE_READINGS,
    "the_systems_kill_in_the_active_voice_is_a_kill",
    [
        # APISIX: the system's kill told in the active voice, of one process
        ("Then the system kill this nginx worker, and the download was terminated.",
         "terminated_externally"),
        ("Then the OS killed the worker.", "terminated_externally"),
        # counter-cases: a condition, a wish, a permission, a general account, a switch
        ("If the kernel killed the worker we would see it in dmesg.", None),
        ("I want the system to kill this worker.", None),
        ("We let the system kill the worker.", None),
        ("The kernel kills the process with the highest score.", None),
        ("the system kill switch was pressed", None),
    ],
    ids=["apisix", "os-killed", "condition", "wish", "let", "general", "switch"],
)  # fmt: skip


def test_a_use_a_hundredfold_its_normal_is_memory_blown_up() -> None:
    # https://github.com/apache/apisix/issues/7173
    line = (
        "When downloading file through rest api, I see the worker process vsz use about 35G, "
        "normal it only needs 200M, see picture as below"
    )
    assert memory_used_up(line, "issue.txt") is not None
    # counter-cases: a few times its normal, a use supposed
    for said in (
        "the worker uses about 800M, normally it needs 200M",
        "the worker uses 35G, normally 20G",
        "it may use 35G, normally 200M",
    ):
        assert memory_used_up(said, "issue.txt") is None, said


_reads(
    LINE_READINGS,
    "macos_memorystatus_killing_is_the_machines_memory_killer",
    [
        # OrbStack: macOS's Jetsam by its kernel name, killing for memory
        ("memorystatus: killing largest compressed process OrbStack Helper [58077] 56616 MB",
         "node_oom_kill"),
        ("memorystatus: killing_idle_process pid 412 [mdworker] (vm-pageshortage 3)",
         "node_oom_kill"),
        # counter-cases: its figures, its level, a setting that keeps it from killing
        ("memorystatus: 56616 MB compressed, 120 processes", None),
        ("memorystatus_level: 12", None),
        ("We tuned memorystatus so it never kills the helper.", "memory_noted"),
    ],
    ids=["orbstack", "idle", "figures", "level", "never"],
)  # fmt: skip


COLIMA = (
    " => ERROR [build-stage 6/8] RUN npm install\n"
    "------\n"
    " > [build-stage 6/8] RUN npm install:\n"
    "#0 2.558 terminate called after throwing an instance of 'std::bad_alloc'\n"
    "#0 2.559   what():  std::bad_alloc\n"
)
"""https://github.com/abiosoft/colima/issues/721: a step's output under BuildKit's plain progress,
each line led by its step number and seconds."""


def test_buildkits_step_prefix_is_no_comment(tmp_path: Path) -> None:
    result = _triaged(tmp_path / "build.log", COLIMA)
    assert result.triage_class is TriageClass.HOST_ALLOC_FAILED, result.summary
    assert 4 in {e.line for e in result.decided_by}
    found = parse_line("#12 41.07 terminate called after throwing an instance of 'std::bad_alloc'")
    assert found is not None and found.kind == "host_alloc_failed", found
    # counter-cases: a comment, source under the prefix, a debugger's frame, a directive
    for line, kind in (
        ("# terminate called after throwing an instance of 'std::bad_alloc'", "shell_crash"),
        ("#0 2.558 throw std::bad_alloc();", None),
        ("#0  0x00007f1 in std::__throw_bad_alloc() () from libstdc++.so.6", None),
        ("#define THROW_OOM throw std::bad_alloc()", None),
    ):
        found = parse_line(line)
        assert (found.kind if found else None) == kind, (line, found)


def test_available_memory_gone_to_zero_is_memory_used_up(tmp_path: Path) -> None:
    # https://github.com/cloud-hypervisor/cloud-hypervisor/issues/3419
    line = (
        "@michael2012z : I have 3 GB of RAM on my device and when I assign the VM 2 GB of RAM, "
        'the VM gets "Killed" after a few seconds. Before it gets killed I see a constant increase '
        "of \"Shared\" memory in 'free -m' and my 'available' memory goes basically down to zero "
        "which is when the CLH process gets killed."
    )
    assert memory_used_up(line, "issue.txt") is not None
    result = _triaged(tmp_path / "issue.txt", line + "\n")
    assert result.triage_class is TriageClass.GLOBAL_OOM, result.summary
    assert memory_used_up("Available RAM reaches zero after a minute.", "issue.txt") is not None
    # counter-cases: a condition, a negation, a fraction of a percent, a size left, a field
    for said in (
        "If the free memory drops to zero the kernel kills it.",
        "The free memory never drops to zero.",
        "free memory dropped to 0.5%",
        "the free memory goes down to 2 GB",
        "available memory: 0",
    ):
        assert memory_used_up(said, "issue.txt") is None, said


SYSBOX = (
    "On a Kubernetes/CRI-O node using cgroup v2 with the systemd cgroup manager, when a sysbox "
    "container exceeds its memory limit the kernel OOM-kills it correctly, but Kubernetes reports "
    "the container as terminated with `reason: Error` rather than `reason: OOMKilled`."
)
"""https://github.com/nestybox/sysbox/issues/1030: a question about how a kill is reported."""


def test_a_rule_told_of_any_container_and_a_reason_not_given_report_nothing(
    tmp_path: Path,
) -> None:
    result = _triaged(tmp_path / "issue.txt", SYSBOX + "\n")
    assert result.triage_class is TriageClass.UNKNOWN, result.summary
    found = parse_line(SYSBOX)
    assert found is not None and found.kind == "memory_noted", found
    not_given = "terminated with `reason: Error` rather than `reason: OOMKilled`"
    assert parse_orchestrator_line(not_given) is None
    # counter-cases: the reason given; one container, or the person's run, over its limit
    for line, kind in (
        ("Kubernetes reports the container as terminated with reason: OOMKilled", "k8s_oomkilled"),
        ("    Reason:       OOMKilled", "k8s_oomkilled"),
        ("when the container exceeds its memory limit the kernel OOM-kills it", "limit_oom_kill"),
        ("When I run it the container exceeds its memory limit and the kernel OOM-kills it",
         "limit_oom_kill"),
    ):  # fmt: skip
        found = parse_line(line)
        assert (found.kind if found else None) == kind, (line, found)


_reads(
    LINE_READINGS,
    "an_options_value_refused_by_the_parser_is_no_shortage",
    [
        # uhyve: clap refusing an option's value, its reason worded as memory
        ("error: invalid value '184KiB' for '--memory-size <MEMORY_SIZE>': Not enough guest "
         "memory. Must be at least 16 MiB (is 0.18 MiB)", "memory_noted"),
        ("error: argument -m/--memory: invalid size value: '1kb' (not enough memory for the "
         "guest)", "memory_noted"),
        # counter-cases: an invalid value of no option, the check's words alone, the emulator's
        # refusal, an argument error that is an allocation's
        ("error: invalid value for a pointer: out of memory", "host_alloc_failed"),
        ("Not enough guest memory. Must be at least 16 MiB", "host_alloc_failed"),
        ("qemu-system-x86_64: cannot set up guest memory 'pc.ram': Cannot allocate memory",
         "host_alloc_failed"),
        ("Invalid argument: cannot allocate 16 MiB for '--memory-size'", "host_alloc_failed"),
    ],
    ids=["uhyve", "argparse", "no-option", "check-alone", "qemu", "allocation"],
)  # fmt: skip


def test_the_cxx_runtimes_what_line_is_read_in_any_case() -> None:
    # mvisor's abort after "terminate called ... 'std::runtime_error'": the line holds a needle
    for line in ("  what():  Panic", "  WHAT():  Panic"):
        found = parse_line(line)
        assert found is not None and found.kind == "exception_line", (line, found)
    assert parse_line("what():") is None  # nothing after it


_reads(
    LINE_READINGS,
    "a_signal_number_in_an_option_is_the_signal",
    [
        # delta-rs: Rust's Option around the signal's number ("signal: Some(9)")
        ("DEBUG Command exited with signal: Some(9)", "terminated_externally"),
        ("DEBUG Command exited with signal: 9", "exit_code"),
        # counter-cases: another signal, no signal, a code in an Option
        ("Command exited with signal: Some(15)", None),
        ("Command exited with signal: None, code: Some(9)", None),
        ("exit code: Some(9)", None),
    ],
    ids=["delta-rs", "bare", "sigterm", "none", "code"],
)  # fmt: skip


@pytest.mark.parametrize(
    ("line", "kind"),
    [
        # MONAI's bug report, its expected behaviour: what the program should do on a condition
        ("- When it is using GPU but unable to allocate memory, it can provide a warning to user "
         "to change the analysis to CPU-mode.", "memory_noted"),
        ("When the GPU is unable to allocate memory, it should show a warning", "memory_noted"),
        # counter-cases: a condition told with what happened, not what should
        ("When I run the training, it fails with RuntimeError: CUDA out of memory. Tried to "
         "allocate 20.00 MiB", "!memory_noted"),
        ("When it is using GPU, RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB",
         "!memory_noted"),
    ],
    ids=["monai", "should", "report", "no-wish"],
)  # fmt: skip
def test_a_wish_for_what_a_program_should_do_on_a_condition_is_no_report(
    line: str, kind: str
) -> None:
    found = parse_oom_parts(line)
    if kind.startswith("!"):
        assert found is not None and found.kind != kind[1:], found
    else:
        assert found is not None and found.kind == kind, found


_reads(
    PARTS_READINGS,
    "a_modal_before_the_words_foretells_rather_than_reports",
    [
        # faasd's PR, OpenFaaS' question, Trigger.dev's docs: what will, would or may happen
        ("Memory limits now work and a function will be killed with OOM", "memory_noted"),
        ("The image processing job will return memory not enough error.", "memory_noted"),
        ('Sometimes you might see one of your runs fail with an "Out Of Memory" error.',
         "memory_noted"),
        # counter-cases: a negated modal is a refusal; a date is no modal; a retry after the
        # words is handling; a line that states no event is left as it reads
        ("could not allocate memory", "host_alloc_failed"),
        ("May 22 08:36:54 host kernel: Out of memory: Killed process 123 (python)",
         "node_oom_kill"),
        ("Error: CUDA out of memory. Will retry with a smaller batch", "gpu_oom_handled"),
        ("The job was killed because it ran out of memory and will be retried",
         "limit_oom_kill"),
        ("so this would just be getting OOM'd repeatedly if i was to roll it out.",
         "memory_noted"),
    ],
    ids=["faasd", "openfaas", "trigger-docs", "negated", "date", "retry", "after", "no-event"],
)  # fmt: skip


@pytest.mark.parametrize(
    ("line", "kind"),
    [
        # Scalingo's docs request, Pipedream's feature request, Lithops' design comment: what
        # happens each time, not what happened once
        ('When this appear, the app is killed by the system because of OOM ("Out Of Memory").',
         "memory_noted"),
        ("When the workflow throws Out of Memory error, there's no further information about "
         "the step that caused this error.", "memory_noted"),
        ("@JosepSampe Cloud Function service kills the entire action when got out of memory, "
         "but other actions of single map execution can be still alive", "memory_noted"),
        ("When the pod is OOMKilled, the container is restarted", "memory_noted"),
        # counter-cases: a person's own when (Demucs, Turborepo), a when told with its report
        ("When running on long tracks, we are getting OOM exit code 137 in the kubernetes.",
         "!memory_noted"),
        ("Specifically, this happens when (a) some tasks do succeed, but (b) a task is killed "
         "by a signal. We are encountering this when a task is OOM-killed.", "!memory_noted"),
        ("When I run the training, the pod is OOMKilled", "limit_oom_kill"),
    ],
    ids=["scalingo", "pipedream", "lithops", "restart", "demucs", "turborepo", "person"],
)  # fmt: skip
def test_a_when_that_is_no_persons_tells_a_habit_not_an_event(line: str, kind: str) -> None:
    found = parse_line(line)
    if kind.startswith("!"):
        assert found is not None and found.kind != kind[1:], found
    else:
        assert found is not None and found.kind == kind, found


_reads(
    PARTS_READINGS,
    "a_feature_asked_for_in_the_imperative_is_no_report",
    [
        # Pipedream's feature request: what a program should show
        ("Show the step that caused the Out of Memory error", "memory_noted"),
        ("Please show which step ran out of memory", "memory_noted"),
        # counter-case: the step named as what caused it
        ("Step 3 caused the Out of Memory error", "host_alloc_failed"),
    ],
    ids=["pipedream", "please", "statement"],
)  # fmt: skip


_reads(
    PARTS_READINGS,
    "a_reckoning_from_an_estimate_is_no_report",
    [
        # Modal's risk analysis: estimates, then arrows to what they would lead to
        ("- With `max_inputs=100`, even 3-4 concurrent search requests \u2248 200-400MB "
         "\u2192 exceeds 256MB \u2192 **OOM kill**", "memory_noted"),
        ("peak ~1.3 GB \u2192 over the 1 GB limit \u2192 OOM-killed", "memory_noted"),
        # counter-case: an arrow with no estimate before it
        ("build \u2192 OOM killed (exit 137)", "oom_kill"),
    ],
    ids=["modal", "tilde", "no-estimate"],
)  # fmt: skip


_reads(
    LINE_READINGS,
    "a_wrapped_line_of_prose_ending_in_a_comma_is_no_code",
    [
        # Knative's PR, a paragraph hard-wrapped near 80 columns: the line ends in a comma
        ("three `eventing-webhook` replicas get `OOMKilled` and enter `CrashLoopBackOff`,",
         "oom_kill"),
        # counter-cases: short lines ending in a comma, code's punctuation
        ("I think it comes from a lack of memory,", None),
        ("    OutOfMemory,", None),
        ("        raise MemoryError(f'out of memory: {size}', size,", None),
    ],
    ids=["knative", "short", "enum", "code"],
)  # fmt: skip


_reads(
    PARTS_READINGS,
    "a_memory_setting_exceeded_is_a_limit_crossed",
    [
        # Pipedream's execution message: a memory setting named by what it is, exceeded
        ("you've exceeded the default memory for this workflow, see "
         "https://pipedream.com/docs/troubleshooting/#out-of-memory", "limit_oom_kill"),
        ("Function exceeded the allotted memory and was stopped", "limit_oom_kill"),
        # counter-cases: the usage, not the setting; a condition
        ("you've exceeded the default memory usage", None),
        ("If you exceed the default memory for a workflow, it is stopped", "memory_noted"),
    ],
    ids=["pipedream", "allotted", "usage", "condition"],
)  # fmt: skip


@pytest.mark.parametrize(
    ("intro", "quoted", "expected"),
    [
        # Trigger.dev's docs: the message quoted as what the reader may see
        ('Sometimes you might see one of your runs fail with an "Out Of Memory" error.',
         "> TASK_PROCESS_OOM_KILLED. Your task ran out of memory. Try increasing the machine "
         "specs.", TriageClass.UNKNOWN),
        # counter-cases: a paste introduced as what happened; the supposing sentence not last
        ("Here is what our run printed:",
         "> TASK_PROCESS_OOM_KILLED. Your task ran out of memory. Try increasing the machine "
         "specs.", "!UNKNOWN"),
        ("When attempting to upload large packages, you may run into an error. Upon inspecting "
         "the ELMAH logs, you find this lovely gem:",
         "> Exception of type 'System.OutOfMemoryException' was thrown.", "!UNKNOWN"),
    ],
    ids=["trigger-docs", "pasted", "chocolatey"],
)  # fmt: skip
def test_a_message_quoted_as_what_the_reader_may_see_is_an_example(
    tmp_path: Path, intro: str, quoted: str, expected: TriageClass | str
) -> None:
    path = tmp_path / "artifact.txt"
    path.write_text(f"{intro}\n\n{quoted}\n")
    got = triage(Sources(paths=(path,))).triage_class
    if isinstance(expected, str):
        assert got.value != expected[1:], got
    else:
        assert got == expected, got


_reads(
    PARTS_READINGS,
    "memory_refused_by_a_verb_of_giving_is_an_allocation_refused",
    [
        # Stata (synth_runner's issue): memory the system refuses to provide, by its verb
        ("op. sys. refuses to provide memory", "host_alloc_failed"),
        ("the allocator refused to grant more memory", "host_alloc_failed"),
        # counter-cases: a refusal of something else; a refusal supposed
        ("The server refuses to provide more information", None),
        ("If the OS refuses to provide memory, Stata stops", "memory_noted"),
    ],
    ids=["stata", "grant", "information", "condition"],
)  # fmt: skip


@pytest.mark.parametrize(
    ("line", "kind", "size"),
    [
        # R in French (ggeffects' issue): the refusal and its size in octets
        ("`Erreur : impossible d'allouer un vecteur de taille 26.8 Go`", "host_alloc_failed",
         int(26.8 * (1 << 30))),
        ("erreur : impossible d'allouer de la mémoire", "host_alloc_failed", None),
        # counter-cases: French allocation of something that is no memory; a "go" that is no size
        ("Il est impossible d'allouer un poste au projet", None, None),
        ("We ran it in 1 go without any error", None, None),
        # French units are written with a capital: an English "3 mo" is three months, no size
        ("MemoryError after 3 mo of uptime", "host_alloc_failed", None),
    ],
    ids=["r-french", "memoire", "poste", "one-go", "three-months"],
)  # fmt: skip
def test_a_refusal_in_french_is_read_with_its_octets(
    line: str, kind: str | None, size: int | None
) -> None:
    found = parse_oom_parts(line)
    assert (found.kind if found else None) == kind, found
    if size is not None:
        assert found is not None and found.fields.get("size_bytes") == size, found
    elif found is not None:
        assert not any(key.endswith("_bytes") for key in found.fields), found


_reads(
    PARTS_READINGS,
    "an_error_quoted_in_its_own_form_with_its_figure_is_a_report",
    [
        # glmmSeq's issue: the program's error in its own form in a person's sentence, its figure
        ("I'm following the vignette. If I'm using the model ~disease+(1|condition)+covar1, R "
         "will give me Error: cannot allocate vector of size 6223.5 Gb. It runs ok if I remove "
         "1 fixed effect variable.", "host_alloc_failed"),
        # counter-cases: no label before the words; a label but no figure the message states
        ("I think R cannot allocate vector of size 6223.5 Gb here", "memory_noted"),
        ("I keep seeing error: cannot allocate memory in my notebooks", "memory_noted"),
    ],
    ids=["glmmseq", "unlabelled", "no-figure"],
)  # fmt: skip


_reads(
    PARTS_READINGS,
    "a_container_said_out_of_memory_without_a_verb_is_its_limit",
    [
        # shinyapps.io (cytomarker's issue): a container's own status quoted, its verb left out
        ("causes a memory kill error `oom- container out of memory` on shinyapps.io deployments.",
         "limit_oom_kill"),
        ("the app stops and the log shows `oom: container out of memory`", "limit_oom_kill"),
        # counter-cases: a refusal quoted; the container only named elsewhere on the line; the
        # same words alone, as a title, stay a mention
        ("the container logs `Error: cannot allocate memory` at start", "host_alloc_failed"),
        ("`out of memory` in the container", "host_alloc_failed"),
        ("Build container out of memory", "memory_noted"),
    ],
    ids=["shinyapps", "verbless", "refusal", "container-after", "title"],
)  # fmt: skip


@pytest.mark.parametrize(
    ("before", "line", "source"),
    [
        # Armeria's PR: JUnit's exception pasted in a fence highlighted as Java
        ("```java\nBraveServiceIntegrationTest > notFound FAILED\n",
         "    org.junit.runners.model.TestTimedOutException: test timed out after 5 seconds",
         False),
        ("```java\n", "Caused by: java.lang.OutOfMemoryError: Java heap space", False),
        # counter-cases: a throw, a catch and a raise of the same names stay source
        ("```java\n", '    throw new java.util.concurrent.TimeoutException("timed out");', True),
        ("```java\n", "} catch (java.lang.OutOfMemoryError e) {", True),
        ("```python\n", "    raise concurrent.futures.TimeoutError('timed out')", True),
    ],
    ids=["armeria", "caused-by", "throw", "catch", "raise"],
)  # fmt: skip
def test_an_exception_first_on_its_line_in_a_language_fence_was_printed(
    before: str, line: str, source: bool
) -> None:
    assert in_source(before, line) is source


@pytest.mark.parametrize(
    ("before", "line", "source"),
    [
        # OpenFold's issue: the shell's status after PyTorch's error, in a fence marked Python;
        # cugraph's: RMM's refusal alone in one. No statement holds neither punctuation nor a
        # keyword: what the program printed
        ("```python\ntorch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 128.00 "
         "GiB.\n[rank: 3] Child process with PID 11479 terminated with code 1.\n", "Killed",
         False),
        ("```python\n", "MemoryError: std::bad_alloc: out_of_memory: RMM failure at:/conda/envs/"
         "rapids-22.10/include/rmm/mr/device/pool_memory_resource.hpp:193: Maximum pool size "
         "exceeded", False),
        # counter-cases: statements, by their punctuation or their keyword (Woodpecker's Go)
        ("```go\n", "\tstepState.ExitCode = 137", True),
        ("```python\n", "import resource", True),
        ("```python\n", "print(torch.cuda.memory_summary())", True),
    ],
    ids=["openfold-killed", "cugraph-rmm", "assignment", "import", "call"],
)  # fmt: skip
def test_a_line_in_a_language_fence_with_no_statement_shape_was_printed(
    before: str, line: str, source: bool
) -> None:
    assert in_source(before, line) is source


_reads(
    LINE_READINGS,
    "an_assertion_comparing_expected_and_found_is_a_failed_test",
    [
        # Jetty's flaky test: an assertion library's comparison, expected against found
        ("org.opentest4j.AssertionFailedError: expected: <0> but was: <1>", "test_failed"),
        ("junit.framework.AssertionFailedError: expected:<1> but was:<2>", "test_failed"),
        # counter-cases: an assertion that compares nothing so (a program's own, uncaught), and
        # another error that compares
        ("AssertionError: assert 1 == 2", "exception_line"),
        ("AssertionError: expected false to be truthy", "exception_line"),
        ("ValueError: expected 3 values but got 2", "exception_line"),
    ],
    ids=["opentest4j", "junit3", "bare-assert", "chai", "value-error"],
)  # fmt: skip


_reads(
    LINE_READINGS,
    "a_test_result_count_and_a_test_named_with_its_exception_are_failed_tests",
    [
        # Payara's PR: Jenkins' test result with its count of failures
        ("Test Result (1 failure / +1)", "test_failed"),
        # Open Liberty's FAT: a test method's name, then the exception that ended it
        ("testTraceSourceForLibertyLogging:componenttest.exception.TopologyException: "
         "2020-08-05-02:43:11:826 Timed out waiting for application [TestApp] to start.",
         "test_failed"),
        # counter-cases: no failures counted; the wait's words alone, no test's: the waiter's
        # time limit (it gave up), not a failed test
        ("Test Result (no failures)", None),
        ("Test Result (0 failures / -1)", None),
        ("Timed out waiting for application [TestApp] to start.", "timeout"),
    ],
    ids=["jenkins", "liberty", "no-failures", "zero", "wait-alone"],
)  # fmt: skip


_reads(
    LINE_READINGS,
    "a_signal_9_in_parentheses_or_sent_by_number_is_a_kill",
    [
        # Termux's terminal: the end's own signal in parentheses, quoted by its user
        ("Termux work obnormaly and kill the termux process by **[Process completed (signal 9) - "
         "press Enter]**.......", "terminated_externally"),
        # Kivy's logcat: SIGKILL sent to a process by its number
        ("05-19 16:46:36.381 19752 19752 I Process : Sending signal. PID: 19752 SIG: 9",
         "terminated_externally"),
        # counter-cases: an exit code in the parentheses; another signal sent or ended by; a
        # signal to be sent only if
        ("[Process completed (exit code 0) - press Enter]", "exit_code"),
        ("05-19 16:46:36.381 19752 19752 I Process : Sending signal. PID: 19752 SIG: 3", None),
        ("[Process completed (signal 15) - press Enter]", None),
        ("Sending signal 9 to the process group if it does not exit", None),
    ],
    ids=["termux", "kivy", "exit-code", "sig-3", "signal-15", "if"],
)  # fmt: skip


_reads(
    LINE_READINGS,
    "a_kill_whose_cause_is_one_of_two_in_parentheses_supposes_memory",
    [
        # Cordova's camera plugin: the WebView's kill, its cause one of two in parentheses
        ("E/chromium: [ERROR:aw_browser_terminator.cc(89)] Render process (9006) kill (OOM or "
         "update) wasn't handed by all associated webviews, killing application.",
         "terminated_externally"),
        ("W/cr_ChildProcessConn: onServiceDisconnected (crash or killed by oom): pid=9006 "
         "bindings:W  S state:3 counts:0,0,0,1,", "terminated_externally"),
        # counter-cases: memory the one cause in parentheses; an aside that names no cause;
        # two causes neither of them memory
        ("Process killed (OOM)", "oom_kill"),
        ("The worker was killed by the OOM killer (or so it seems)", "node_oom_kill"),
        ("Render process (9006) kill (crash or update) wasn't handed by all associated webviews",
         None),
    ],
    ids=["webview", "service", "oom-alone", "aside", "no-memory"],
)  # fmt: skip


_reads(
    LINE_READINGS,
    "a_memory_killer_reporting_a_process_over_its_own_limit_is_that_limit",
    [
        # gomobile's iOS extension: the memory killer reporting the process's own hard limit
        ("16:12:49.226  kernel: memorystatus: exceeded mem limit: ActiveHard 50 MB (fatal)",
         "limit_oom_kill"),
        # the same process's limit as a setting's name, described: no event
        ("2. GOMEMLIMIT is a soft target; GC cannot respond inside a ~360 ms burst.", None),
        # counter-cases: the killer acting for the machine; LSF's own word for its limit
        ("memorystatus: killing largest compressed process OrbStack Helper [58077] 56616 MB",
         "node_oom_kill"),
        ("lowmemorykiller: Killing 'com.example' (12345), adj 900, to free 51234kB",
         "node_oom_kill"),
        ("TERM_MEMLIMIT: job killed after reaching LSF memory usage limit.", "limit_oom_kill"),
    ],
    ids=["jetsam-limit", "gomemlimit", "jetsam-largest", "lmk", "lsf"],
)  # fmt: skip


_reads(
    LINE_READINGS,
    "work_that_failed_to_start_in_a_stated_duration_ran_out_of_time",
    [
        # XHarness: the launch that failed to start in a stated duration, after its kills
        ("[07:34:56] dbug: Test failed to start in 0.3 minutes", "timeout"),
        # counter-cases: supposed; a connection's time; no duration stated
        ("If the app failed to start in 5 minutes, it is killed", None),
        ("Failed to connect in 30 seconds", None),
        ("Service failed to start in time", None),
    ],
    ids=["xharness", "if", "connect", "no-duration"],
)  # fmt: skip


_reads(
    LINE_READINGS,
    "an_errno_joined_to_memory_exhausted_by_its_colon_alone_adds_nothing",
    [
        # a build farm's compiler: the statement, then perror's errno after its colon alone
        ("virtual memory exhausted: Operation not permitted", "host_alloc_failed"),
        ("virtual memory exhausted: Cannot allocate memory", "host_alloc_failed"),
        # counter-case: words between them make the memory words what was being done
        ("ERRO[57289] containerd: notify OOM events                 error=open /sys/fs/cgroup/"
         "memory/docker/759b1d6b52f1/ct28/memory.oom_control: no such file or directory",
         "memory_noted"),
    ],
    ids=["eperm", "enomem", "containerd"],
)  # fmt: skip


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # dify's API pod: a worker's timeout with its pid, then that pid's kill
        ("2025-01-06 07:28:04 +0000] [1] [CRITICAL] WORKER TIMEOUT (pid:418)\n"
         "[2025-01-06 07:28:05 +0000] [1] [ERROR] Worker (pid:418) was sent SIGKILL! Perhaps out "
         "of memory?\n"
         "[2025-01-06 07:28:05 +0000] [511] [INFO] Booting worker with pid: 511\n",
         TriageClass.TIMEOUT),
        # counter-case (mlflow's artifact upload, the build half): the kill is of another pid,
        # the timeout after it
        ("[2024-08-26 06:20:25 +0000] [25] [INFO] Worker exiting (pid: 25)\n"
         "[2024-08-26 06:20:26 +0000] [22] [ERROR] Worker (pid:25) was sent SIGKILL! Perhaps out "
         "of memory?\n"
         "[2024-08-26 06:20:56 +0000] [22] [CRITICAL] WORKER TIMEOUT (pid:24)\n",
         TriageClass.EXTERNAL_KILL),
        # counter-case: the timeout alone, no kill of its pid
        ("[2024-08-26 06:20:56 +0000] [22] [CRITICAL] WORKER TIMEOUT (pid:24)\n",
         TriageClass.UNKNOWN),
    ],
    ids=["same-pid", "other-pid", "no-kill"],
)  # fmt: skip
def test_a_timeout_naming_a_pid_ends_the_run_when_that_pid_is_killed(
    tmp_path: Path, text: str, expected: TriageClass
) -> None:
    log = tmp_path / "server.log"
    log.write_text(text)
    result = triage(Sources(paths=(log,)))
    assert result.triage_class is expected, result.summary


_reads(
    LINE_READINGS,
    "a_summary_field_stating_success_is_a_pass",
    [
        # Launchpad's buildd: the summary block's status field
        ("Status: successful", "run_passed"),
        ("Build status: Succeeded", "run_passed"),
        # counter-cases: a status in an exception's message (the build half), a failure, a
        # sentence that says a status
        ("java.lang.IllegalStateException: Agent is not connected after 5 seconds, status: "
         "Succeeded", None),
        ("Status: failed", None),
        ("The status: successful, but the job hung", None),
    ],
    ids=["buildd", "build-status", "exception", "failed", "sentence"],
)  # fmt: skip


def test_a_summary_field_stating_success_passes_the_run(tmp_path: Path) -> None:
    log = tmp_path / "buildlog.txt"
    log.write_text("Build-Time: 40\nPackage: mainline\nStatus: successful\nVersion: 1.0.15\n")
    assert triage(Sources(paths=(log,))).triage_class is TriageClass.PASSED


_reads(
    LINE_READINGS,
    "a_word_of_a_links_path_names_no_limit",
    [
        # openQA's maintainer: the step is a link's path, the kernel's kill names no limit
        ("It often (https://openqa.suse.de/tests/524500#step/gcc5_Cpp_compilation/19) happens "
         "that the build proces get out of memory and gets killed by kernel.", "oom_kill"),
        # counter-case: the job named in the sentence, a link after it
        ("the job gets out of memory and gets killed (https://ci.example.org/job/524500)",
         "limit_oom_kill"),
    ],
    ids=["openqa", "job-named"],
)  # fmt: skip


@pytest.mark.parametrize(
    ("line", "code"),
    [
        # Langflow's user: the exit code before its name
        ("It crash loop with continuous 137 exit code.", 137),
        ("the build returns a 1 exit code", 1),
        # counter-cases: the usual order; a version's number before the words
        ("Container exited with exit code 137", 137),
        ("upgraded to v2.137 exit code unchanged", None),
    ],
    ids=["langflow", "one", "usual", "version"],
)  # fmt: skip
def test_an_exit_code_before_its_name_is_an_exit(line: str, code: int | None) -> None:
    found = parse_line(line)
    got = found.fields.get("code") if found is not None and found.kind == "exit_code" else None
    assert got == code, found


@pytest.mark.parametrize(
    ("text", "used_up"),
    [
        # Langflow's user: the container's memory up to its limit
        ("When running LangFlow as production in a Kubernetes environment, the Langflow "
         "container hits the 4Gb limits of memory on startup.", True),
        ("It reached the limit of memory", True),
        # counter-cases: a supposition; the limit set, nothing reached
        ("the container may hit the limits of memory on startup", False),
        ("the limits of memory are set to 4Gb", False),
    ],
    ids=["langflow", "reached", "may", "set"],
)  # fmt: skip
def test_a_limit_of_memory_hit_is_memory_used_up(text: str, used_up: bool) -> None:
    assert (memory_used_up(text + "\n", "issue.md") is not None) is used_up


_reads(
    LINE_READINGS,
    "a_panic_on_a_deadline_passed_ran_out_of_time",
    [
        # LUCI's build host: a Go panic whose value is the context's deadline passed; Cloud
        # Build's gcloud, the same words as its error after the build's TIMEOUT
        ("panic: context deadline exceeded", "timeout"),
        ("ERROR: context deadline exceeded", "timeout"),
        # counter-cases (the build half): the same words as what a test's assertion got; a panic
        # of another value
        ("    client_test.go:121: was expecting SQLError 2013 / HY000 / initial packet read "
         "failed but got: context deadline exceeded", None),
        ("panic: runtime error: invalid memory address or nil pointer dereference", None),
    ],
    ids=["luci", "error", "got", "nil"],
)  # fmt: skip


_reads(
    PARTS_READINGS,
    "a_cgroup_named_as_the_kills_scope_outranks_a_node_named_before",
    [
        # OpenPAI's user: the kernel's memcg line quoted after the node the dmesg was read on
        ("Check the dmesg on node 10.151.40.161, found ` Memory cgroup out of memory: Kill "
         "process 17811 (python3)`:", "limit_oom_kill"),
        # counter-cases: the node's own memory running out; a node named with no scope said
        ("The node was low on memory and the kernel killed process 4242 (java)",
         "node_oom_kill"),
        ("Check the dmesg on node 10.151.40.161, found ` Out of memory: Killed process 17811 "
         "(python3)`:", "node_oom_kill"),
    ],
    ids=["openpai", "node-low", "global"],
)  # fmt: skip


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # KAMONOHASHI's report (Japanese, written without spaces): the status becomes OOMKilled
        ("TensorBoardを起動してしばらくすると、ステータスがOOMKilledになることがある。\n",
         TriageClass.CGROUP_OOM),
        ("The TensorBoard status becomes OOMKilled after a while.\n", TriageClass.CGROUP_OOM),
        # counter-cases: a longer word holding the same letters; Japanese with no end in it
        ("ステータスがRunningになる。\n", TriageClass.UNKNOWN),
        ("TensorBoardのメモリ使用量が増える。\n", TriageClass.UNKNOWN),
    ],
    ids=["kamonohashi", "english", "running", "memory-grows"],
)  # fmt: skip
def test_a_latin_word_inside_unspaced_script_is_read(
    tmp_path: Path, text: str, expected: TriageClass
) -> None:
    assert _triage_text(tmp_path, text).triage_class is expected


def test_a_platform_named_inside_unspaced_script_is_found() -> None:
    assert platform_named("ステータスがOOMKilledになる\n", "issue.md") is not None
    assert platform_named("the status is NOOMKILLEDX\n", "issue.md") is None


_reads(
    LINE_READINGS,
    "machines_taken_back_by_their_platform_ended_the_run",
    [
        # Azure ML's pipeline error: the nodes pre-empted, in an exception's message
        ("The error message is UserError: AzureMLCompute job failed. PreemptionError: Nodes of "
         "this job got pre-empted. Check if the run has failed or restarted. Reason: Received "
         "pre-emption warning signal.", "terminated_externally"),
        ("Nodes of this job got pre-empted.", "terminated_externally"),
        ("The worker was preempted", "terminated_externally"),
        # counter-cases: a forecast, a docs sentence; an exception with no end from outside
        ("Spot instances can be preempted at any time.", None),
        ("Preemptible VMs may be pre-empted by the platform.", None),
        ("ValueError: the node list is empty", "exception_line"),
    ],
    ids=["azureml", "nodes", "worker", "can-be", "may-be", "value-error"],
)  # fmt: skip


@pytest.mark.parametrize(
    ("line", "kind"),
    [
        # TensorBoard's title asks about the driver's constant; its log reports it (the build
        # half's real line)
        ("# Tensorboard gives `CUDA_ERROR_OUT_OF_MEMORY`?", None),
        ("2018-05-17 19:44:32.427365: E tensorflow/core/common_runtime/direct_session.cc:167] "
         "Internal: failed initializing StreamExecutor for CUDA device ordinal 0: Internal: "
         "failed call to cuDevicePrimaryCtxRetain: CUDA_ERROR_OUT_OF_MEMORY; total memory "
         "reported: 12652838912", "gpu_oom"),
        ("failed to allocate 3.2G (3435973836 bytes) from device: CUDA_ERROR_OUT_OF_MEMORY",
         "gpu_oom"),
    ],
    ids=["asked", "reported", "allocate"],
)  # fmt: skip
def test_a_drivers_constant_asked_about_is_no_report(line: str, kind: str | None) -> None:
    found = parse_engine_line(line)
    assert (found.kind if found else None) == kind, found


_reads(
    LINE_READINGS,
    "a_refusal_with_its_verb_clipped_to_alloc_is_read",
    [
        # Part N28 (GPU compute libraries, LLM runtimes): DJL's MXNet engine, "alloc" clipped
        ('Exception in thread "main" ai.djl.engine.EngineException: MXNet engine call failed: '
         "MXNetError: can't alloc", "host_alloc_failed"),
        ("error: can't allocate region", "host_alloc_failed"),
        # counter-cases: a case supposed and handled; a name that only starts with "alloc"; the
        # clipped verb with its object, a fallback (Jittor's warning, the build half)
        ("If the pool can't alloc, it returns NULL and the caller retries.", "memory_noted"),
        ("Could not alloc_console: access denied", None),
        ("[w 0429 09:00:15.731000 16 cuda_device_allocator.cc:30] Unable to alloc cuda device "
         "memory, use unify memory instead. This may cause low performance.", None),
    ],
    ids=["mxnet", "allocate", "supposed", "longer-name", "jittor"],
)  # fmt: skip


_reads(
    LINE_READINGS,
    "a_host_allocation_call_names_the_hosts_memory",
    [
        # Part N28: stable-diffusion.cpp's host allocator, a library's prefix before "malloc"
        ("ggml_aligned_malloc: insufficient memory (attempted to allocate 2268047721628.89 MB)",
         "host_alloc_failed"),
        ("ggml_cuda_host_malloc: failed to allocate 512.00 MiB of pinned memory: out of memory",
         "host_alloc_failed"),
        # counter-cases: the allocation call names a device; the device's own malloc
        ("ggml_metal_malloc: out of memory", "gpu_oom"),
        ("cudaMalloc failed: out of memory", "gpu_oom"),
    ],
    ids=["ggml-aligned", "pinned", "metal", "cuda-malloc"],
)  # fmt: skip


_reads(
    LINE_READINGS,
    "out_of_device_memory_as_one_word_is_the_devices",
    [
        # Part N28: LLamaSharp's Vulkan backend; "out of device memory" joined into one word
        # names the device's memory as the words apart do
        ("LLamaSharp, however, appears to try allocating all specified layers to the GPU without "
         "checking for available memory, causing the backend to fail with an "
         "`ErrorOutOfDeviceMemory` and resulting in a `LoadWeightsFailedException`. The expected "
         "behavior is for the native library to automatically calculate the VRAM/RAM split and "
         "load the model successfully.", "gpu_oom"),
        ("vk::Device::allocateMemory: ErrorOutOfDeviceMemory", "gpu_oom"),
        # counter-case: the error handled, falling back
        ("The loader is falling back to the CPU after `ErrorOutOfDeviceMemory`.",
         "gpu_oom_handled"),
    ],
    ids=["llamasharp", "vk-hpp", "falling-back"],
)  # fmt: skip


_reads(
    LINE_READINGS,
    "a_persons_first_sentence_introduces_no_later_one",
    [
        # Part N30 (scientific Python): h5py's issue; the person's first sentence introduces
        # nothing of the second, which states what the code did
        ("I have a compound dataset `ds` that's too large to fit in memory, and I'm trying to get "
         "the first element in column `col`. However `ds['col'][0]` gives a `MemoryError` "
         "exception as `ds['col']` seems to automatically try to load the whole file. ",
         "host_alloc_failed"),
        # counter-cases: a sentence the person tells (h2oGPT's, the build half), a question
        ("I have encountered an issue when trying to prompt the Llama2 model. While I can "
         "successfully prompt the model after uploading a single document, I run into a CUDA out "
         "of memory error when I attempt to do the same after uploading two documents. This is my "
         "startup:", "memory_noted"),
        ("I have a question. Does ds[0] give a MemoryError?", "memory_noted"),
    ],
    ids=["h5py", "person-tells", "question"],
)  # fmt: skip


_reads(
    LINE_READINGS,
    "a_kill_after_memory_told_growing_is_one_occasion",
    [
        # Part N30: the OME-Zarr resave tool; memory told growing, then the job killed
        ("the memory keeps increasing and the job gets killed when it runs out of pod memory "
         "(96G).", "limit_oom_kill"),
        # counter-cases: a service's rule (Lithops, the build half); a kill with no story; a kill
        # foretold
        ("Cloud Function service kills the entire action when got out of memory", "memory_noted"),
        ("The job gets killed when it runs out of pod memory.", "memory_noted"),
        ("Memory keeps increasing and the worker may get killed when it runs out of memory.",
         "memory_noted"),
    ],
    ids=["ome-zarr", "lithops", "no-story", "may"],
)  # fmt: skip


_reads(
    LINE_READINGS,
    "a_memory_calls_failure_with_code_12_is_enomem",
    [
        # Part N30: netCDF4-python on macOS; malloc's mmap failing with ENOMEM's number
        ("Python(574) malloc: **\\* mmap(size=16777216) failed (error code=12)",
         "host_alloc_failed"),
        # counter-cases: code 12 of an exit and of a write: no memory call
        ("child process exited (error code=12)", None),
        ("write failed (error code=12)", None),
    ],
    ids=["macos-malloc", "exit", "write"],
)  # fmt: skip


@pytest.mark.parametrize(
    ("line", "kind"),
    [
        # Part N28: intel/llvm's PR; the constant as a value a change handles
        ("Additionally take into account UR_RESULT_ERROR_OUT_OF_DEVICE_MEMORY error which is "
         "also possible in addition to aforementioned error codes.", None),
        ("Parameterize the existing unit test by error code (which allows to avoid excessive "
         "code duplication) and add UR_RESULT_ERROR_OUT_OF_DEVICE_MEMORY value to testing.",
         None),
        ("Handle CUDA_ERROR_OUT_OF_MEMORY in the loader", None),
        # counter-cases: a program's reports, "add" before a colon, "returned" before the code
        ("Failed to add buffer: VK_ERROR_OUT_OF_DEVICE_MEMORY", "gpu_oom"),
        ("zeMemAllocDevice returned ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY", "gpu_oom"),
        ("failed to allocate 3.2G (3435973836 bytes) from device: CUDA_ERROR_OUT_OF_MEMORY",
         "gpu_oom"),
    ],
    ids=["take-into-account", "add-to-testing", "handle", "add-colon", "returned", "allocate"],
)  # fmt: skip
def test_a_drivers_constant_a_change_handles_is_no_report(line: str, kind: str | None) -> None:
    found = parse_engine_line(line, line.lower())
    assert (found.kind if found else None) == kind, found


_reads(
    LINE_READINGS,
    "a_constant_a_change_handles_is_no_report_read_whole",
    [
        # the same lines read whole: not again with the constant spelled as words, a log's lead
        # before the bullet or not
        ("Dec 18 19:34:56 build-7 worker[4512]: * Additionally take into account "
         "UR_RESULT_ERROR_OUT_OF_DEVICE_MEMORY error which is also possible in addition to "
         "aforementioned error codes.", None),
        ("Additionally take into account UR_RESULT_ERROR_OUT_OF_DEVICE_MEMORY error which is "
         "also possible in addition to aforementioned error codes.", None),
        ("Handle CUDA_ERROR_OUT_OF_MEMORY in the loader", "memory_noted"),
        # counter-cases: a program's reports
        ("Failed to add buffer: VK_ERROR_OUT_OF_DEVICE_MEMORY", "gpu_oom"),
        ("zeMemAllocDevice returned ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY", "gpu_oom"),
    ],
    ids=["journald-lead", "take-into-account", "handle", "add-colon", "returned"],
)  # fmt: skip


_reads(
    LINE_READINGS,
    "another_attempt_is_a_retry",
    [
        # Part N28: the SYCL program manager's retry, in other words
        ("Currently if program manager faces one of the errors  - UR_RESULT_ERROR_OUT_OF_RESOURCES "
         "or UR_RESULT_ERROR_OUT_OF_HOST_MEMORY - during the program building/linking then it "
         "will clear the cache and make another attempt. ", "oom_handled"),
        # counter-case: a person's attempt told, failed again
        ("I made another attempt with a smaller batch and it failed again: out of memory",
         "memory_noted"),
    ],
    ids=["sycl", "person-attempt"],
)  # fmt: skip


# Parts N33 and N36


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # GROBID's user pasted the answer as a line that is one code span
        ("And I get an XML with the following content:\n"
         "`[TIMEOUT] PDF to XML conversion timed out`\n", TriageClass.TIMEOUT),
        # counter-cases: a code span inside a sentence; a command alone in a span
        ("The `[TIMEOUT]` tag is what GROBID writes when a conversion is slow?\n",
         TriageClass.UNKNOWN),
        ("`curl -v --form input=@./mdpi_article.pdf localhost:8070/api/processFulltextDocument`\n",
         TriageClass.UNKNOWN),
    ],
    ids=["grobid", "span-in-sentence", "command"],
)  # fmt: skip
def test_a_line_that_is_one_code_span_is_read_as_a_paste(
    tmp_path: Path, text: str, expected: TriageClass
) -> None:
    assert _triage_text(tmp_path, text).triage_class is expected


_reads(
    LINE_READINGS,
    "a_quoted_killed_a_program_ended_with_is_a_kill",
    [
        # Spidy's report: the crawler ended with the shell's word, quoted
        ('Spidy aborts with "Killed". Do you have a clue why?', "shell_killed"),
        ('The crawler exited with "Killed"', "shell_killed"),
        # counter-cases: denied; asked about
        ('It never aborts with "Killed".', None),
        ('Does it abort with "Killed"?', None),
    ],
    ids=["spidy", "exited", "never", "asked"],
)  # fmt: skip


_reads(
    LINE_READINGS,
    "a_kill_the_person_tried_is_no_end",
    [
        # olmOCR's user killed the desktop to free VRAM: a remedy tried, not the run's end
        ("Even tried killing the GUI to release more VRAM. ", None),
        ("I tried to kill the other jobs to free memory, no luck", None),
        # counter-cases: a kill to free memory by a memory killer; a kill told after the remedy
        ("lowmemorykiller: Killing 'com.example' (1234), adj 900 to free 51234kB",
         "node_oom_kill"),
        ("Even tried killing the GUI, then the job was killed", "terminated_externally"),
    ],
    ids=["olmocr", "tried-to", "lowmemorykiller", "killed-after"],
)  # fmt: skip


_reads(
    PARTS_READINGS,
    "code_spans_pair_from_the_start_and_an_avoided_error_is_none",
    [
        # Tika's PR: a short code span's closing mark opens no span over the words after it
        ("- The `tika` deployment in `applications-production` has been crash-looping: both "
         "replicas are being OOMKilled (`exitCode: 137`), which trips the "
         "`DeploymentUnavailableCritical` Grafana alert.", "oom_kill"),
        # the same PR: an error that did not happen, its subject named before it
        ("- The JVM's default container-aware ergonomics only give the heap 25% of the "
         "container memory limit (512Mi of the original 2Gi), while Metaspace and direct memory "
         "are left uncapped — a large document can balloon off-heap memory until the kernel "
         "SIGKILLs the whole container instead of the JVM raising a catchable "
         "`OutOfMemoryError`.", "memory_noted"),
        # counter-cases: a quoted span that holds the words; the error raised, not avoided
        ("The docs for `tika` say `the container may be OOMKilled` under load", "memory_noted"),
        ("Our services exit with the message `Exit Code: 137, Exit Message: \"OOM Killed\"`",
         "oom_kill"),
        ("It raised a catchable OutOfMemoryError instead of crashing", "host_alloc_failed"),
    ],
    ids=["tika-oomkilled", "tika-instead-of", "docs-quote", "exit-message", "raised"],
)  # fmt: skip


_reads(
    LINE_READINGS,
    "memory_used_up_a_later_kill_and_a_limits_error_met",
    [
        # wkhtmltopdf's user: the machine's memory and swap used up, then the kill
        ("After it taken up all my memory and swap, it was killed by system...", "node_oom_kill"),
        # docker-selenium's report: the container's kill denied, the process's kill told after
        ("Selenium standalone container is not killed after Java Selenium process is killed by "
         "host due to memory limit settings. ", "limit_oom_kill"),
        # Gotenberg on Cloud Run: the container meets its memory limit's error
        ("We have attempted many configurations, but no matter how much memory we add and how "
         "few concurrent users we allow, the container always eventually encounters a memory "
         "limit error, which results in a failure that impacts any operations on the container.",
         "limit_oom_kill"),
        # counter-cases: supposed, not told; a denial with no kill after it; a guess; a question
        ("If it takes up all my memory and swap, it will be killed", None),
        ("It took up all my memory", "memory_noted"),
        ("processes in containers are not killed when the configured memory limit is reached",
         "memory_noted"),
        ("The pod is not killed after the memory limit is reached", "memory_noted"),
        ("We think the container might hit a memory limit error.", "memory_noted"),
        ("We wonder whether the container gets a memory limit error?", "memory_noted"),
        ("If you hit a memory limit error, raise the limit.", "memory_noted"),
    ],
    ids=["wkhtmltopdf", "selenium", "cloud-run", "if", "no-kill", "denied", "denied-after",
         "might", "whether", "advice"],
)  # fmt: skip


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # Nightwatch's session error, an object as Node.js prints it
        ("Error retrieving a new session from the selenium server\n{ value:\n"
         "   { message: 'Timed out waiting 45 seconds for Firefox to start.\\nBuild info: v\n",
         TriageClass.TIMEOUT),
        # geckodriver on a Selenium grid: a time limit's identifier as the cause
        ("Session was terminated due to BROWSER_TIMEOUT\n", TriageClass.TIMEOUT),
        # counter-cases: a message that says nothing; the identifier as a setting
        ("   { message: 'Connected to the browser.\\nBuild info: v\n", TriageClass.UNKNOWN),
        ("export BROWSER_TIMEOUT=60\n", TriageClass.UNKNOWN),
        ("Set BROWSER_TIMEOUT to avoid this.\n", TriageClass.UNKNOWN),
    ],
    ids=["nightwatch", "geckodriver", "connected", "export", "set"],
)  # fmt: skip
def test_a_printed_objects_message_and_a_timeouts_identifier_are_read(
    tmp_path: Path, text: str, expected: TriageClass
) -> None:
    assert _triage_text(tmp_path, text).triage_class is expected


@pytest.mark.parametrize(
    ("text", "line"),
    [
        # Donut's issue: its title says it, the message pasted below gives the figures
        ("# RuntimeError: CUDA out of memory\nI'm training on a custom dataset.\n"
         "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 14.76 GiB total "
         "capacity; 13.48 GiB already allocated; 6.75 MiB free; 13.50 GiB reserved in total by "
         "PyTorch)\n", 3),
        # counter-case: the head alone is what there is
        ("# RuntimeError: CUDA out of memory\nI'm training on a custom dataset.\n", 1),
    ],
    ids=["donut", "head-only"],
)  # fmt: skip
def test_the_full_cuda_message_decides_over_a_bare_head(
    tmp_path: Path, text: str, line: int
) -> None:
    artifact = tmp_path / "issue.md"
    artifact.write_text(text)
    result = triage(Sources(paths=(artifact,)))
    assert result.triage_class is TriageClass.CUDA_OOM_CAPACITY, result.summary
    assert result.decided_by[0].line == line, result.decided_by


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # Part N31: hummingbird under mpirun --tag-output; a traceback pasted in a Python fence
        # from its frames on (no head), every line led by the rank's stream, a bare MemoryError
        ("```python\n"
         '[1,0]<stderr>:  File "Comm.pyx", line 816, in mpi4py.MPI.Comm.recv\n'
         '[1,0]<stderr>:  File "pickled.pxi", line 111, in mpi4py.MPI._p_Pickle.load\n'
         "[1,0]<stderr>:MemoryError\n```\n", TriageClass.HOST_ALLOC_FAILED),
        # the same behind a quote's lead: the rank's tag is found after it
        ("```python\n"
         '> [1,0]<stderr>:  File "Comm.pyx", line 816, in mpi4py.MPI.Comm.recv\n'
         "> [1,0]<stderr>:MemoryError\n```\n", TriageClass.HOST_ALLOC_FAILED),
        # counter-cases: source in a Python fence (an except clause naming the error); the
        # rank's stream saying nothing of memory
        ("```python\ntry:\n    run()\nexcept MemoryError\n```\n", TriageClass.UNKNOWN),
        ("```\n[1,0]<stdout>:step 10 done\n[1,0]<stderr>:all ranks finished\n```\n",
         TriageClass.UNKNOWN),
    ],
    ids=["hummingbird", "quoted", "except-clause", "no-memory"],
)  # fmt: skip
def test_a_ranks_tagged_traceback_from_its_frames_is_printed_not_source(
    tmp_path: Path, text: str, expected: TriageClass
) -> None:
    assert _triage_text(tmp_path, text).triage_class is expected


_reads(
    LINE_READINGS,
    "a_launchers_error_that_is_the_steps_state_alone_is_its_oom",
    [
        # Part N31: submitit's Slurm job; srun's error, the state alone, no task named
        ("srun: error: Out Of Memory", "slurm_oom"),
        # the build half's form, and tasks as a range
        ("srun: error: tiger-i23g11: task 0: Out Of Memory", "slurm_oom"),
        ("srun: error: node1: tasks 0-3: Out Of Memory", "slurm_oom"),
        # behind a program's lead
        ("worker[4512]: srun: error: Out Of Memory", "slurm_oom"),
        # counter-cases: a person's question about it; srun's error quoted inside prose; another
        # refusal with its own reason first
        ("srun: error: Out Of Memory? how do I fix", "memory_noted"),
        ("I got srun: error: Out Of Memory sometimes", "memory_noted"),
        ("srun: error: Unable to allocate resources: Out Of Memory", "host_alloc_failed"),
    ],
    ids=["submitit", "task", "tasks", "lead", "question", "prose", "resources"],
)  # fmt: skip


_reads(
    LINE_READINGS,
    "a_unit_of_work_timed_out_hyphenated_ran_out_of_time",
    [
        # Part N31: submitit; the job's state written as one hyphenated word
        ("submitit.core.utils.UncompletedJobError: Job not requeued because: timed-out and not "
         "checkpointable.", "timeout"),
        # counter-cases: a request's and a connection's time, not a unit of work's
        ("the request timed-out", None),
        ("the connection timed-out", None),
    ],
    ids=["submitit", "request", "connection"],
)  # fmt: skip


_reads(
    LINE_READINGS,
    "the_shells_killed_named_as_the_error_got_is_a_kill",
    [
        # Part N26: DyGIE++'s training; the shell's status with its pid named the only error
        ('6835 Killed is the only error, then I ran"bash ./scripts/train/train_genia_lightweight'
         '.sh -1", got the same problem.', "shell_killed"),
        ("Killed is the only output", "shell_killed"),
        ('"Killed" was the only message', "shell_killed"),
        # counter-cases: the status denied, or explained (read as before: no shell's status)
        ("Killed is not the error here", "terminated_externally"),
        ("Killed is a signal sent by the kernel", "terminated_externally"),
    ],
    ids=["dygiepp", "output", "quoted", "denied", "explained"],
)  # fmt: skip


_reads(
    LINE_READINGS,
    "what_a_change_lets_a_program_catch_is_no_report",
    [
        # Part N26: caikit's pull request; what the change lets the trainer catch
        ("- Add subprocess exit code handling for training to allow capturing OOM type failures "
         "that kills the subprocess", "memory_noted"),
        ("This change enables detecting out of memory errors in workers", "memory_noted"),
        ("We added a hook to support catching MemoryError", "memory_noted"),
        # counter-cases: an error met while handling something; a kill while capturing
        ("Error while handling request: out of memory", "host_alloc_failed"),
        ("the worker was OOM killed while capturing frames", "oom_kill"),
    ],
    ids=["caikit", "enables", "supports", "while-handling", "while-capturing"],
)  # fmt: skip


_reads(
    LINE_READINGS,
    "a_tests_setup_error_section_is_a_failed_test",
    [
        # Part N31: ipyparallel's CI; pytest's section head for a fixture's error
        ("______________________ ERROR at setup of test_sum_on_dist ______________________",
         "test_failed"),
        ("_____ ERROR at teardown of test_cluster _____", "test_failed"),
        ("ERROR [worker-1] _____ ERROR at setup of test_sum _____", "test_failed"),
        # counter-cases: the words in prose; a collection error (no test ran)
        ("I see ERROR at setup of test_x sometimes", None),
        ("_____ ERROR collecting tests/test_a.py _____", None),
    ],
    ids=["ipyparallel", "teardown", "lead", "prose", "collecting"],
)  # fmt: skip


_reads(
    LINE_READINGS,
    "an_oom_told_as_a_stated_limits_result_is_its_kill",
    [
        # Part N31: enroot under systemd; the limit with its size, the OOM told as its result
        ("We set systemd\u2019s MemoryMax=3G, and this resulted in an OOM during enroot create. "
         "This means enroot create used at least 3 GB.", "limit_oom_kill"),
        ("Lowering the limit to 2G led to an OOM kill of the build", "limit_oom_kill"),
        # counter-cases: foretold; supposed; asked
        ("Setting MemoryMax=3G will result in an OOM", "memory_noted"),
        ("We set MemoryMax=3G; it might have resulted in an OOM", "memory_noted"),
        ("Does a limit of 2G result in an OOM?", "memory_noted"),
    ],
    ids=["enroot", "led-to", "will", "might", "asked"],
)  # fmt: skip


# Parts N32 and N35


_reads(
    LINE_READINGS,
    "a_refusal_with_a_size_among_its_words_is_read",
    [
        # MultiMC's user: the JVM's refusal with the heap's size between its words
        ("Error: Could not reserve enough space for 4188160KB object heap", "host_alloc_failed"),
        ("Error: Could not reserve enough space for object heap", "host_alloc_failed"),
        # counter-cases: advice to reserve it; the JVM's next line, which says no memory
        ("Reserve 4188160KB for the object heap in the settings.", None),
        ("Error occurred during initialization of VM", None),
    ],
    ids=["sized", "unsized", "advice", "init"],
)  # fmt: skip


_reads(
    LINE_READINGS,
    "an_oom_exception_caught_is_handled",
    [
        # tModLoader's request: the OOM exception caught by the game, which goes on
        ("> Sometimes an OutOfMemory exception happens and we catch the exception. It has been "
         "suggested that when this particular exception happens that we crash to desktop and show "
         "a MessageBox explaining how to avoid OutOfMemory exceptions.", "oom_handled"),
        ("We catch the exception when an OutOfMemoryError is thrown.", "oom_handled"),
        # counter-cases: the exception not caught, uncaught, thrown and ending the run
        ("The OutOfMemoryError is not caught and the game crashes.", "host_alloc_failed"),
        ("Uncaught exception: java.lang.OutOfMemoryError: Java heap space", "host_alloc_failed"),
        ("terminate called after throwing an instance of 'std::bad_alloc'", "host_alloc_failed"),
    ],
    ids=["tmodloader", "we-catch", "not-caught", "uncaught", "terminate"],
)  # fmt: skip


_reads(
    LINE_READINGS,
    "the_oom_killers_setting_is_no_kill",
    [
        # Pterodactyl's question: the OOM killer's setting, nothing killed
        ("OOM Killer Disabled", "memory_noted"),
        ("The OOM killer is enabled on this container.", "memory_noted"),
        ("I disabled the OOM killer for this server.", "memory_noted"),
        # counter-cases: the killer acting, in the kernel's words and a person's
        ("Out of memory: Killed process 1234 (java) total-vm:123kB", "kernel_killed"),
        ("The OOM killer was triggered and killed the server.", "oom_kill"),
        ("OOM killer enabled, and then the OOM killer killed the server.", "oom_kill"),
    ],
    ids=["disabled", "enabled", "i-disabled", "kernel", "triggered", "enabled-then-killed"],
)  # fmt: skip


_reads(
    LINE_READINGS,
    "a_size_judged_not_enough_is_a_requirement",
    [
        # a game server's updater: the machine's memory checked against a requirement
        ("Sep 19 09:32:17 supervisord: valheim-updater ERROR - 1.71 GiB is not enough memory - "
         "read https://github.com/lloesche/valheim-server-docker#system-requirements",
         "memory_noted"),
        ("ERROR - 512 MiB of RAM is not enough memory for this server", "memory_noted"),
        # counter-cases: an allocation refused, with its size
        ("2 GiB is not enough memory to allocate the buffer", "host_alloc_failed"),
        ("ERROR: not enough memory to allocate 2 GiB", "host_alloc_failed"),
        ("Not enough memory: 1.71 GiB available, 4 GiB required", "host_alloc_failed"),
    ],
    ids=["valheim", "of-ram", "to-allocate", "not-enough-first", "available"],
)  # fmt: skip


_reads(
    LINE_READINGS,
    "a_kill_on_a_machine_named_with_its_memory_is_the_machines",
    [
        # TensorCircuit's user: the machine named with its memory, its "job" the work it ran
        ("I use a machine with 36 cores and 251GB memory run the script. The backend is set as "
         "tensorflow. But the job is killed because of being out of memory, while the whitepaper "
         "shows that a 40GB GPU is enough for a same job.", "node_oom_kill"),
        # counter-cases: a container named; a job alone; a scheduler named
        ("On my server with 16GB RAM the container is killed because of being out of memory.",
         "limit_oom_kill"),
        ("The job is killed because of being out of memory.", "limit_oom_kill"),
        ("I run it on a node with 64GB memory under Slurm and the job is killed because of being "
         "out of memory.", "memory_noted"),
    ],
    ids=["tensorcircuit", "container", "job", "slurm"],
)  # fmt: skip


_reads(
    LINE_READINGS,
    "errors_spoken_of_as_kinds_are_no_report",
    [
        # Luanti's feature request: errors spoken of as kinds, not one run's error
        ("Minetest completely crashes due to Bad_Alloc and other errors from lack of memory (as "
         "in Ram).", "memory_noted"),
        # counter-cases: one error reported
        ("Minetest crashes with std::bad_alloc after loading the map.", "host_alloc_failed"),
        ("terminate called after throwing an instance of 'std::bad_alloc'", "host_alloc_failed"),
    ],
    ids=["luanti", "one-error", "terminate"],
)  # fmt: skip


_reads(
    LINE_READINGS,
    "an_oom_wished_for_or_denied_is_no_report",
    [
        # tModLoader's issue title under a log's lead: what the game should do, proposed
        ("2025-02-03 04:05:06,789 ERROR [worker-1] # OutOfMemory should crash to desktop "
         "(reopened)", "memory_noted"),
        ("An OutOfMemoryError should be thrown instead of a segfault", "memory_noted"),
        # pytket-cutensornet's issue title under a log's lead: no out of memory errors, none
        ("2025-02-03 04:05:06,789 ERROR [worker-1] # Provide a simulation mode that guarantees "
         "no out of memory errors", "memory_noted"),
        ("The run finished without out of memory errors.", "memory_noted"),
        # counter-cases: the error itself; "should not" after it, then the error; a learner's
        # "no enough memory"; a refusal worded "no memory"
        ("java.lang.OutOfMemoryError: Java heap space", "host_alloc_failed"),
        ("Out of memory error should not happen here but it did: java.lang.OutOfMemoryError: "
         "Java heap space", "host_alloc_failed"),
        ("mmap failed: no memory", "host_alloc_failed"),
        ("Error: Out of memory", "host_alloc_failed"),
    ],
    ids=["tmodloader", "should-be-thrown", "pytket", "without", "thrown", "should-not",
         "no-memory", "error"],
)  # fmt: skip


# Markdown headings (an issue's "# Title"): read without their marks, weaker than the text's lines


@pytest.mark.parametrize(
    ("name", "expected", "line"),
    [
        # MinerU's title holds PyTorch's CPU allocator's message; the config dump after it says
        # nothing: the title decides
        ("host-mineru-defaultcpuallocator-opendatalab-mineru-342.txt",
         TriageClass.HOST_ALLOC_FAILED, 1),
        # MultiMC's title holds the JVM's refusal; the body says only "object heap"
        ("host-multimc-could-not-reserve-object-heap-multimc-launcher-3246.txt",
         TriageClass.HOST_ALLOC_FAILED, 1),
        # olmOCR's title "Out of Memory Error on a 12GB GPU": the body's torch.OutOfMemoryError
        # decides, and is what is cited
        ("gpu-olmocr-vllm-torch-oom-allenai-olmocr-424.txt", TriageClass.CUDA_OOM_CAPACITY, 13),
        # TensorBoard's title asks ("gives `CUDA_ERROR_OUT_OF_MEMORY`?"): the body's traceback
        # decides
        ("gpu-tensorboard-cuda-error-out-of-memory-streamexecutor-tensorflow-tensorboard-1194.txt",
         TriageClass.CUDA_OOM_CAPACITY, 11),
        # gfortran's "### `f951: out of memory allocating ... Killed (program f951)`", a heading
        # in the body: read as written (the compiler's kill), not again without its marks
        ("kill-gfortran-f951-out-of-memory-allocating-then-ice-killed-openfast-openfast-154.txt",
         TriageClass.EXTERNAL_KILL, 3),
    ],
    ids=["mineru", "multimc", "olmocr-body", "tensorboard-asked", "gfortran-heading"],
)  # fmt: skip
def test_a_heading_decides_only_when_the_text_does_not(
    name: str, expected: TriageClass, line: int
) -> None:
    result = triage(Sources(paths=(CORPUS / name,)))
    assert result.triage_class is expected, result.summary
    assert result.decided_by[0].line == line, result.decided_by
    # a heading that decides says so, and is held with low confidence
    titled = line == 1 and name.startswith("host-")
    assert ("as a heading says" in result.summary) is titled, result.summary
    if titled:
        assert result.confidence == "low", result.confidence


def test_a_heading_inside_a_fence_is_code(tmp_path: Path) -> None:
    # MinerU's title, pasted as a comment in a Python fence: source, not a report
    title = (
        "err == 0. DefaultCPUAllocator: can't allocate memory: you tried to allocate 622425648 "
        "bytes. Error code 12 (Cannot allocate memory)"
    )
    fenced = f"Reproduce:\n```python\n# {title}\nmodel = load()\n```\n"
    assert _triage_text(tmp_path, fenced).triage_class is TriageClass.UNKNOWN
    # counter-cases: the same heading outside the fence, and after the fence has closed
    assert _triage_text(tmp_path, f"# {title}\n").triage_class is TriageClass.HOST_ALLOC_FAILED
    closed = f"```python\nmodel = load()\n```\n# {title}\n"
    assert _triage_text(tmp_path, closed).triage_class is TriageClass.HOST_ALLOC_FAILED


def test_a_heading_does_not_outweigh_a_negative_of_the_text(tmp_path: Path) -> None:
    # MultiMC's title naming the JVM's refusal, and a pytest summary that passed: the text
    # decides (PASSED)
    text = (
        "# Could not reserve enough space for 4188160KB object heap\n"
        "Fixed by lowering -Xmx; the suite now runs:\n"
        "============================== 12 passed in 3.41s ==============================\n"
    )
    result = _triage_text(tmp_path, text)
    assert result.triage_class is TriageClass.PASSED, result.summary
    # counter-case: without the summary, the title decides
    alone = _triage_text(tmp_path, text.split("Fixed", maxsplit=1)[0])
    assert alone.triage_class is TriageClass.HOST_ALLOC_FAILED, alone.summary


_reads(
    LINE_READINGS,
    "a_time_limit_stated_crossed_is_a_timeout",
    [
        # a time limit and its crossing said together, as an error's words are: Go's context
        # error as gopls' regression test printed it, and chromedp's title
        ("            err:context deadline exceeded", "timeout"),
        ("Program exits spontanously - context deadline exceeded", "timeout"),
        ("Error: time limit exceeded", "timeout"),
        # counter-cases: what a test compared (Vitess' assertion: the error it got), a network's
        # deadline named before it on the line, a deadline supposed
        ("client_test.go:121: was expecting SQLError 2013 / HY000 / initial packet read failed "
         "but got: context deadline exceeded", None),
        ('Get "https://registry.example.com/v2/": context deadline exceeded', None),
        ("The run may exceed the deadline", None),
    ],
    ids=["gopls", "chromedp", "error", "vitess-got", "network", "may"],
)  # fmt: skip


_reads(
    LINE_READINGS,
    "an_abort_after_a_refusal_on_its_line_is_the_refusal",
    [
        # bitiodine's Rust binary: the allocator's refusal and the shell's abort on one line,
        # glued as the issue shows it and as a terminal shows it with a space between
        ("memory allocation of 23400000000 bytes failedAborted", "host_alloc_failed"),
        ("memory allocation of 23400000000 bytes failed Aborted (core dumped)",
         "host_alloc_failed"),
        # counter-cases: the abort alone; a segfault after words about memory is a crash
        ("Aborted (core dumped)", "shell_crash"),
        ("memory allocation of 23400000000 bytes failed Segmentation fault (core dumped)",
         "shell_crash"),
    ],
    ids=["glued", "spaced", "abort-alone", "segfault"],
)  # fmt: skip


@pytest.mark.parametrize(
    ("line", "words"),
    [
        # a line that is one strong span is read as its words: ESP-IDF's assertion as the issue
        # set it, the shell's status, Rust's refusal in underscores
        ("**assert failed: block_locate_free heap_tlsf.c:447 (block_size(block) >= size)**",
         "assert failed: block_locate_free heap_tlsf.c:447 (block_size(block) >= size)"),
        ("**Killed**", "Killed"),
        ("__memory allocation of 23400000000 bytes failed__",
         "memory allocation of 23400000000 bytes failed"),
        # counter-cases: spans that do not wrap the whole line, a dunder name
        ("**Error:** CUDA out of memory", "**Error:** CUDA out of memory"),
        ("**a** and **b**", "**a** and **b**"),
        ("__init__.py", "__init__.py"),
    ],
    ids=["esp-idf", "killed", "underscores", "lead-only", "two-spans", "dunder"],
)  # fmt: skip
def test_a_line_in_bold_is_read_as_its_words(line: str, words: str) -> None:
    assert unquoted(line) == words


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # go test's failed test and a Jenkins script's killed command, each set in bold
        ("go test ./runtime\n**--- FAIL: TestGcSys (0.06s)**\n", TriageClass.TEST_FAILURE),
        ("python train.py\n**runscripts/jenkins/ecoli-glucose-minimal.sh: line 22: 155269 "
         "Killed**\n", TriageClass.EXTERNAL_KILL),
    ],
    ids=["go-test", "jenkins-killed"],
)  # fmt: skip
def test_a_bold_deciding_line_decides_as_written(
    tmp_path: Path, text: str, expected: TriageClass
) -> None:
    assert _triage_text(tmp_path, text).triage_class is expected


_reads(
    PARTS_READINGS,
    "short_names_and_conditions",
    [
        # Helidon's load test: Java's OutOfMemoryError by its short name
        ("Within 5 minutes OOME on the helidon-se kicks in", "host_alloc_failed"),
        # p4's MCMC: an allocation's error, no memory named (the lines before may name a device)
        (" 55 .........allocation error in pdmatrix 2.", "host_alloc_failed"),
        # counter-cases, Armeria's PR: the error as a condition, "when" or "on" just before it
        ("- Devs get more clue when OOME occurs during tests.", "memory_noted"),
        ("- Added JVM flags that drops heap dump on OOME and exits the JVM", "memory_noted"),
        ("It'd be nice if our build drops heap dump when OOME occurs.", "memory_noted"),
        # and errors spoken of as a kind
        ("Allocation errors are reported through the callback", None),
    ],
    ids=["helidon", "p4", "armeria-when", "armeria-on", "armeria-wish", "plural"],
)  # fmt: skip

_reads(
    PARTS_READINGS,
    "list_items_and_messages_called_wrong",
    [
        # a Markdown list's item is read as its words, as a "- " item is: Helidon's step list,
        # Cellpose's item holding PyTorch's error (the person's "If I run ...": a mention,
        # figures and all)
        ("* Within 5 minutes OOME on the helidon-se kicks in", "host_alloc_failed"),
        ("*  If I run using the argument  --diameter 25, it will crash and output this error : "
         "_RuntimeError: CUDA out of memory. Tried to allocate 196.00 MiB (GPU 0; 7.76 GiB "
         "total capacity; 5.68 GiB already allocated; 64.62 MiB free; 5.93 GiB reserved in "
         "total by PyTorch)", "memory_noted"),
        # counter-case: a C comment's continuation, indented, is code (CP2K's banner)
        (" *   ___       MPI error 471936271 in mpi_cart_sub @ mp_cart_sub : Other MPI   *",
         None),
        # plink's PR item: the message called incorrect just before its words did not happen
        ("* Since `glm_common_init` returns `RET_SUCCESS` to `glm_linear_assoc`/"
         "`glm_logistic_assoc` when it skips, the program shows an incorrect \"Out of memory\" "
         "error message.", "memory_noted"),
    ],
    ids=["helidon", "cellpose", "cp2k-comment", "plink-called-wrong"],
)  # fmt: skip

_reads(
    PARTS_READINGS,
    "oom_as_a_verb_whose_memory_and_risks_lowered",
    [
        # https://github.com/authzed/spicedb-operator/pull/445: OOM as a verb, said of pods,
        # in the person's sentence that reports it: the pods' limit
        ("We've observed spicedb-operator pods OOMthrashing with 250mb of limit, which feels "
         "excessive.", "limit_oom_kill"),
        ("The pods keep OOMing.", "limit_oom_kill"),
        ("Our build container OOM'd twice today.", "limit_oom_kill"),
        # counter-case: the same verb supposed
        ("I think our pods may be OOMing.", "memory_noted"),
        # https://github.com/JanssenProject/jans/issues/468: "throws" reports
        ("After CE installation OpenDJ throws OutOfMemory errors. But the issue disappears "
         "after OpenDJ service restart.", "host_alloc_failed"),
        # https://github.com/goauthentik/authentik/issues/18915: all available memory, with a
        # limit's size on the line, is the limit's
        ("With 42 proxy-mode outposts and 55+ blueprints, workers consistently consume all "
         "available memory (tested up to 16GB limit) and experience OOM kills (Exit Code 137) "
         "every 10-30 minutes.", "limit_oom_kill"),
        # counter-case: Colab's, no limit on the line
        ("Your session crashed after using all available RAM.", "node_oom_kill"),
        # https://github.com/gravitational/teleport/pull/62005: a risk lowered is supposed
        ("Changelog: Tuned `teleport-cluster`, `teleport-kube-agent`, and `teleport-relay` Helm "
         "charts to reduce the probability of Teleport exceeding its memory limits and being "
         "OOM-Killed. `GOMEMLIMIT` defaults to 90% of the configured memory limits.",
         "memory_noted"),
    ],
    ids=["spicedb", "pods-keep", "container-oomd", "supposed", "janssen", "authentik", "colab",
         "teleport"],
)  # fmt: skip

_reads(
    LINE_READINGS,
    "timing_out_and_a_bare_outofmemory_error",
    [
        # https://github.com/openbao/openbao/pull/1208: "timing out" as "timed out"
        ("The Go tests with the race detector were occasionally timing out. Increasing the "
         "timeout to 30 minutes ensures that the tests have sufficient time to complete.",
         "timeout"),
        # counter-cases: a network's; a condition
        ("The connection keeps timing out.", None),
        ("If the upload keeps timing out, raise the limit.", None),
        # https://github.com/dcm4che/dcm4chee-arc-light/issues/4452: a bare "OutOfMemory
        # error" is no TensorRT's, and "may" supposes it
        ("WADO-RS: Retrieve of bulkdata by URL referenced in retrieved metadata may cause "
         "OutOfMemory error, caused by accumulating of attribute values on parsing the dataset "
         "to find the requested bulkdata attribute.", "memory_noted"),
        # counter-case: TensorRT's own (torch2trt's issue 661)
        ("[TensorRT] ERROR: ../rtSafe/WeightsPtr.cpp (92) - OutOfMemory Error in allocate: 0",
         "trt_oom"),
    ],
    ids=["openbao", "network", "condition", "dcm4chee", "tensorrt"],
)  # fmt: skip

_reads(
    PARTS_READINGS,
    "a_kill_by_the_kernel_an_end_of_its_own_memory_grown",
    [
        # https://github.com/opendilab/LightZero/issues/82: the kernel's kill, its reason quoted
        ("The training process gets killed by the kernel. There is a log in `dmesg` stating "
         "that the reason is \"out of memory\".", "oom_kill"),
        # https://github.com/leela-zero/leela-zero/issues/597: OpenBLAS ends itself on an
        # allocation it attempted
        ("`BLAS : Program is Terminated. Because you tried to allocate too many memory "
         "regions.`", "host_alloc_failed"),
        # https://github.com/facebookresearch/dlrm/issues/38: MemoryError, spaced, got
        ("What is the memory requirement for pre processing Criteo Terabyte Dataset? I am "
         "getting Memory Error even after having more than a terabyte memory installed on the "
         "system.", "host_alloc_failed"),
        # https://github.com/PreferredAI/cornac/issues/654: grown to a size, then killed
        ("Memory consumption starts at around 500MB, then quickly grows to ~60GB until, at some "
         "point, the process is killed.", "oom_kill"),
        # counter-cases: the kill foretold; a possibility (Turi Create's issue 225)
        ("Memory grows to 60GB, and the process may get killed.", None),
        ("In Recommenders, there is a possibility of running out of memory.", "memory_noted"),
    ],
    ids=["lightzero", "openblas", "dlrm", "cornac", "foretold", "possibility"],
)  # fmt: skip

_reads(
    PARTS_READINGS,
    "a_refusals_message_and_a_count_of_zero_quoted",
    [
        # https://github.com/microsoft/fabric-toolbox/issues/31: Kusto's low memory condition
        # with C++'s refusal in its message: refused, not the node's kill
        ("OLE DB or ODBC error: [Expression.Error] Query execution lacks memory resources to "
         "complete (80DA0007): Partial query failure: Low memory condition "
         "(E_LOW_MEMORY_CONDITION). (message: 'bad allocation (E_LOW_MEMORY_CONDITION)', "
         "details: '').", "host_alloc_failed"),
        # counter-case: the node's memory said low with no refusal
        ("The node was low on resource: memory. Out of memory.", "node_oom_kill"),
        # https://github.com/lightdash/lightdash/issues/28559: "`oom_kill` 0" as code
        ("with the kernel never involved: `pgscan` and `pgsteal` both 0, `oom_kill` 0, and a "
         "cgroup peak of", "memory_noted"),
    ],
    ids=["kusto", "mysql-node", "oom-kill-zero-quoted"],
)  # fmt: skip

_reads(
    LINE_READINGS,
    "a_reason_after_a_duration_a_links_words_julias_signal_junits_comparison",
    [
        # https://github.com/lightdash/lightdash/issues/28559: the end's reason follows
        ("This is not theoretical. A compile at a large project shape aborted after 167 s with",
         None),
        # counter-case: the duration alone
        ("Build cancelled after 60 minutes", "timeout"),
        # https://github.com/Macaulay2/M2/issues/2267: a link's scheme names no network
        ("I noticed two recent Github Actions builds, one on [autotools](https://github.com/"
         "Macaulay2/M2/runs/3983374880?check_suite_focus=true#step:13:2950) and one on [cmake]"
         "(https://github.com/Macaulay2/M2/runs/3967515919?check_suite_focus=true#step:12:2966), "
         "timed out, so I checked to see what was taking", "timeout"),
        # counter-case: a network's own words
        ("ssh: connect to host 10.0.0.5 port 22: Connection timed out", None),
        # https://github.com/oscar-system/Oscar.jl/issues/2570: Julia's runtime
        ("signal (15): Terminated", "exit_code"),
        # https://github.com/axkr/symja_android_library/issues/826: JUnit's comparison
        ("junit.framework.ComparisonFailure: expected:<[16/3*a+]4*c> but was:<[]4*c>",
         "test_failed"),
        # counter-case: no comparison stated
        ("junit.framework.ComparisonFailure: null", "exception_line"),
    ],
    ids=["lightdash", "duration", "macaulay2", "ssh", "julia", "symja", "no-comparison"],
)  # fmt: skip

_reads(
    LINE_READINGS,
    "a_bare_verb_chinese_words_attempts_left_in_case_and_an_lxc_container",
    [
        # https://github.com/bigcode-project/bigcode-evaluation-harness/issues/235
        ("Hello, when I run the evaluation of the 70b model, I used 8*80G GPUs, but it still "
         "oom. How can I evaluate the the 70b model?", "gpu_oom"),
        # https://github.com/open-compass/VLMEvalKit/issues/382: "an OOM occurred", in Chinese
        ("刚开始的时候\uff0c每块GPU显存在20~70GiB上下疯狂跳动\uff0c"
         "而在第12轮左右便发生了OOM。", "gpu_oom"),
        # https://github.com/OpenHands/benchmarks/issues/346: an attempt with attempts left
        ("Instance django__django-12663 - 2026-01-20 21:56:40,853 - WARNING - [child] Instance "
         "django__django-12663 failed (attempt 2/3): Conversation run failed for id=c53b0c68: "
         "Run timed out after 3600.0 seconds. The conversation may still be running on the "
         "server.", None),
        # counter-case: the last attempt
        ("Instance django__django-12663 failed (attempt 3/3): Run timed out after 3600.0 "
         "seconds.", "timeout"),
        # https://github.com/komoot/photon/issues/837: a kill supposed "in case"
        ("For example, nominatim has (nominatim import --continue indexing) command line in case "
         "the import process was accidentally killed or connection is lost.", None),
        # https://github.com/openstreetmap/mod_tile/issues/181: Proxmox's LXC container
        ("around tile 528 memory consumption jumps to more than 48GB which causes oom_killer "
         "(renderd runs in a proxmox CT) to kill renderd.", "limit_oom_kill"),
        # counter-case: no container named
        ("around tile 528 memory consumption jumps to more than 48GB which causes oom_killer to "
         "kill renderd.", "oom_kill"),
    ],
    ids=["bigcode", "vlmevalkit", "attempt-left", "last-attempt", "photon", "mod-tile",
         "no-container"],
)  # fmt: skip

_reads(
    LINE_READINGS,
    "an_exception_whose_class_names_a_time_out",
    [
        # https://github.com/rigetti/pyquil/issues/935: the compiler's RPC timed out, raised
        ("# TimeoutError: Timeout on client tcp://127.0.0.1:5555, method name "
         "quil_to_native_quil", "timeout"),
        # Java's, whose line holds no "error"
        ("java.util.concurrent.TimeoutException: Waited 30 seconds for task", "timeout"),
        # counter-case: the message supposes its time out: an exception, no time limit reported
        ("asyncio.exceptions.TimeoutError: the lock may be held by another worker",
         "exception_line"),
        # counter-case: a class that names no time out
        ("ConnectionRefusedError: [Errno 111] Connection refused", "exception_line"),
    ],
    ids=["pyquil", "java", "supposed", "refused"],
)  # fmt: skip

_reads(
    LINE_READINGS,
    "a_kill_denied_a_dotted_step_a_killed_output_and_an_escaped_log",
    [
        # https://github.com/google/timesketch/issues/3111: a kill denied by "no" just before it
        ("Using the \"timesketch-cli-client\" or the \"timesketch_importer\", I get the following "
         "error showing in the UI detailing a MemoryError. I have 24GB RAM assigned to this VM, "
         "there is no OOM kill in dmesg, and watching memory consumption shows a reasonable "
         "amount still free:", "host_alloc_failed"),
        # counter-case: the kill told
        ("The process was OOM killed.", "oom_kill"),
        # https://github.com/angr/angr/issues/406: a dotted name's "step" is the code's
        ("In the end, the analysis is killed by system in one of `path.step()`. The reason is it "
         "uses too much memory.", "oom_kill"),
        # counter-case: a scheduler's step bounds the kill to its limit
        ("The step was killed for exceeding memory.", "limit_oom_kill"),
        # https://github.com/angr/angr-doc/issues/107: the shell's status word, output
        ("after has run for about 1h 30m, angr outputs \"killed\".", "terminated_externally"),
        # https://github.com/SpikeInterface/spikeinterface/issues/932: a log escaped into a string
        ("raise self._exception\\nnumpy.core._exceptions._ArrayMemoryError: Unable to allocate "
         "10.2 GiB for an array with shape (42923008, 64) and data type float32\\n\",",
         "host_alloc_failed"),
        # counter-case: a Windows path's backslash before an "n" escapes nothing that reads
        ("Loading C:\\new\\models\\model.bin failed: file not found", None),
    ],
    ids=["timesketch", "told", "angr", "scheduler-step", "angr-doc", "spikeinterface",
         "windows-path"],
)  # fmt: skip

_reads(
    LINE_READINGS,
    "oom_kills_a_malloc_failure_a_shell_after_output_go_ok_and_an_example",
    [
        # https://github.com/omacom-io/omarchy-iso/issues/96: OOM-kill as a verb with its object
        ("- Root cause: archinstall/cryptsetup default Argon2id memory cost is ~1 GiB; the live "
         "environment OOM-kills cryptsetup mid-format", "oom_kill"),
        # https://github.com/prisma/prisma-engines/issues/1483: memory as what a thing exhausts
        ("The query engine gets killed by linux as it exhausts the memory for the system to run "
         "smoothly", "oom_kill"),
        # https://github.com/imrefitos/large-smime-decrypt/issues/1: OpenSSL's error queue
        ("140005062465344:error:07069041:memory buffer routines:BUF_MEM_grow_clean:malloc "
         "failure:crypto/buffer/buffer.c:129:", "host_alloc_failed"),
        # https://github.com/openwall/john/issues/4862: zsh's message after output that left
        # the line
        ("ver 2.0 Test.zip/123.zip PKZIP Encr: cmplen=2810975925, decmplen=2810975913, "
         "crc=388ABCA5 zsh: killed zip2john Test.zip", "shell_killed"),
        # https://github.com/Consensys/gnark/pull/969: go test's passed package
        ("ok      github.com/consensys/gnark/std/recursion/plonk  293.693s", "run_passed"),
        # counter-case: "ok" said, no package and duration
        ("ok it works now", None),
        # https://github.com/Zokrates/ZoKrates/issues/697: an example of a message, wished for
        ("It would improve usability for new users if instead of \"Killed\" it had an "
         "information message, such as \"Out of memory\" or \"malloc() failed\"",
         "memory_noted"),
    ],
    ids=["omarchy", "prisma", "openssl", "john", "gnark", "ok-said", "zokrates"],
)  # fmt: skip

_reads(
    LINE_READINGS,
    "an_end_denied_a_condition_times_out_a_mapping_refused_a_change_and_a_hang_killed",
    [
        # https://github.com/DOMjudge/domjudge/issues/605: an end denied
        ("Apparently, this submission doesn't get terminated due to timeout (I waited 2min and "
         "the time limit is 5 sec), and it hangs the judgehost.", None),
        # counter-case: the end told
        ("The process was terminated due to timeout.", "timeout"),
        # https://github.com/judge0/judge0/issues/298: an exit code in a sentence opened by "if"
        ("if you get status as `Runtime Error (NZEC)` (code=11) and message as `Exited with error "
         "status 137` then u can consider that it is MLE", None),
        # https://github.com/dodona-edu/dodona/pull/1885: "in the case of" a condition
        ("The JS judge exits with SIGABRT in the case of an out of memory error.", "memory_noted"),
        # https://github.com/engineer-man/piston/issues/196: "times out" as a verb
        ("the API does not reply and the command times out.", "timeout"),
        # counter-case: a count
        ("This error occurs 4 times out of 5", None),
        # https://github.com/QingdaoU/OnlineJudge/issues/287: the loader's mapping refused
        ("> error while loading shared libraries: libc.so.6: failed to map segment from shared "
         "object; exit_code = 127", "host_alloc_failed"),
        # counter-case: another reason given (a noexec mount)
        ("error while loading shared libraries: libc.so.6: failed to map segment from shared "
         "object: Operation not permitted", None),
        # https://github.com/deepmodeling/abacus-develop/pull/6995: a change that addresses it
        ("- This PR addresses frequent Out-of-Memory (OOM) errors encountered during "
         "GPU-accelerated RT-TDDFT calculations for large-scale systems (e.g., >1000 Si atoms).",
         "memory_noted"),
        # https://github.com/prisms-center/CASMcode/issues/327: a watchdog's hang, then its kill
        (">  VASP is frozen, killing job", "timeout"),
        # counter-case: no unit of work killed
        ("The UI is frozen, killing it does nothing", None),
    ],
    ids=["domjudge", "told", "judge0", "dodona", "piston", "count", "qingdaou", "noexec",
         "abacus", "casm", "ui"],
)  # fmt: skip

_reads(
    LINE_READINGS,
    "error_codes_growing_until_killed_a_container_reporting_oom_and_a_failure_timed_out",
    [
        # https://github.com/MIT-Lu-Lab/cuPDLPx/issues/42: CUDA's code for a memory allocation
        ("CUDA Error at cuPDLPx/src/solver.cu:1305: cudaErrorMemoryAllocation", "gpu_oom"),
        # https://github.com/odow/SDDP.jl/issues/642: Gurobi's code for out of memory
        ("> ERROR: LoadError: Gurobi Error 10001: ", "host_alloc_failed"),
        # counter-case: another of Gurobi's codes
        ("> ERROR: LoadError: Gurobi Error 10003: ", "exception_line"),
        # https://github.com/google/or-tools/issues/3083: memory increasing until the kill
        ("I saw the script running and consistently increasing memory usage until it was Killed "
         "(linux) or stalled (windows).", "oom_kill"),
        # https://github.com/radondb/radondb-mysql-kubernetes/issues/769: a container reports OOM
        ("the log shows the container of xenon reports OOM", "limit_oom_kill"),
        # counter-case: a container's OOM score, no OOM
        ("the container reports oom_score_adj 1000", None),
        # https://github.com/apecloud/kubeblocks/issues/2955: OOMKilled read as words
        ("# [BUG] mysql cluster config xengine=ON, then do hscale pod OOMKilled", None),
        # https://github.com/cloudnative-pg/cloudnative-pg/issues/4606: Ginkgo's failure, timed out
        ("[FAILED] Timed out after 120.000s.", "timeout"),
        # counter-case: GoogleTest's failure
        ("[  FAILED  ] FooTest.Bar (12 ms)", "test_failed"),
        # https://github.com/zalando/postgres-operator/issues/1725: runit's fields
        ("Dec 14 17:05:17.903 aks-nodepool1-28461340-vmss000001   spilo-13    prod-celanese   "
         "/run/service/patroni: finished with code=-1 signal=9", "terminated_externally"),
    ],
    ids=["cupdlpx", "gurobi", "gurobi-other", "ortools", "radondb", "oom-score", "kubeblocks",
         "ginkgo", "googletest", "patroni"],
)  # fmt: skip

_reads(
    LINE_READINGS,
    "a_dotted_instance_a_signal_field_a_check_for_it_threw_me_and_a_count_in_thousands",
    [
        # https://github.com/grame-cncm/faust2webaudio/issues/20: a dotted name's "Instance"
        ("# Creating ~50 nodes via .getNode() yields \"RangeError: WebAssembly.Instance(): Out of "
         "memory: wasm memory\"", "host_alloc_failed"),
        # counter-case: the node's memory named
        ("The node ran out of memory and the kubelet evicted the pod.", "node_oom_kill"),
        # https://github.com/crucialfelix/supercolliderjs/issues/32: a signal as a field
        ("error  : Server exited. Exit code: null signal: SIGKILL", "terminated_externally"),
        # counter-case: another signal
        ("Process exited with code 1, signal: 15", "exit_code"),
        # https://github.com/grame-cncm/faust/issues/12: a check for it, requested
        ("# Supercollider output: check for mem alloc fail", None),
        # https://github.com/kz26/PyExcelerate/issues/56: the program gave it to the person
        ("I am trying to profile `PyExcelerate` by creating an Excel file with 500k rows and 50 "
         "cols but suddenly it threw me a MemoryError:-", "host_alloc_failed"),
    ],
    ids=["faust", "node", "supercolliderjs", "signal-15", "faust-check", "pyexcelerate"],
)  # fmt: skip


@pytest.mark.parametrize(
    ("text", "sizes"),
    [("500k rows", []), ("cpython-36m-x86_64-linux-gnu.so", []), ("limit 4g", ["4g"]),
     ("used 500M of memory", ["500m"]), ("8G RAM", ["8g"])],
)  # fmt: skip
def test_a_bare_letter_before_a_count_is_no_unit(text: str, sizes: list[str]) -> None:
    """A bare k, m or g is a size's unit, but not before a count's noun or a name's hyphen
    (PyExcelerate's "500k rows", a library's "cpython-36m-x86_64")."""
    from qualify.evidence.oom_parts import _SIZE

    assert [m[0] for m in _SIZE.finditer(text.lower())] == sizes


_reads(
    LINE_READINGS,
    "a_kill_told_with_its_reason_a_code_1455_a_cuda_error_2_previously_and_went_on",
    [
        # https://github.com/jonashaag/klaus/issues/276: a kill told with memory as its reason
        ("I have a very small repo (~1Mb), yet when cloning, git-remote-https gets killed because "
         "the system runs out of memory. It's only this repo, all others work fine.",
         "node_oom_kill"),
        # counter-case: supposed
        ("The worker might get killed because it runs out of memory.", "memory_noted"),
        # https://github.com/microsoft/VFSForGit/issues/49: a person's guess at the cause
        ("After running  \"gvfs unmounts\" and \"gvfs mount -v Verbose -d\" many times, I guess "
         "it is due to timeout value in WaitUntilMounted function.", None),
        # https://github.com/pzfreo/draftwright/issues/1135: a count after "with", no signal
        ("# Sheet.build() does not terminate on a turned part with 9 step declarations "
         "(CADGenBench 109, >1h)", None),
        # counter-case: the signal's number
        ("Process exited with 9 (SIGKILL)", "exit_code"),
        # https://github.com/NVlabs/nvdiffrast/issues/182: CUDA's code 2
        ("RuntimeError: Cuda error: 2[cudaMalloc(&m_gpuPtr, bytes);]", "gpu_oom"),
        # counter-case: another code
        ("CUDA error: 201 invalid context", None),
        # https://github.com/Krande/adapy/pull/209: what used to happen
        ("Builds a kernel-free, lazily-streaming STEP reader and everything on top of it, so "
         "large CAD assemblies that previously OOM-killed the worker (a 778 MB / 7253-solid "
         "assembly needed >7 GB through OpenCASCADE) convert within a worker pod's budget",
         "memory_noted"),
        # counter-case: what happens now
        ("The worker was previously fine, but now it gets OOM-killed.", "oom_kill"),
        # https://github.com/microsoft/VFSForGit/issues/49: the work went on
        ("It is fairly benign - the core issue is that the background process is not opening its "
         "named pipe quickly enough, and the foreground process is timing out, but the mount "
         "still succeeds.", None),
    ],
    ids=["klaus", "supposed", "vfs-guess", "draftwright", "signal-9", "nvdiffrast", "cuda-201",
         "adapy", "now", "vfsforgit"],
)  # fmt: skip


_reads(
    LINE_READINGS,
    "v8s_last_gcs_a_hang_then_its_kill_an_alarms_kill_and_memorys_lack_as_a_kills_reason",
    [
        # https://github.com/istanbuljs/nyc/issues/1263: V8's banner as it dies for its heap
        ("<--- Last few GCs --->", "host_alloc_failed"),
        # counter-case: the banner named in a sentence
        ("The log ends at '<--- Last few GCs --->' and nothing else.", None),
        # https://github.com/SimonKagstrom/kcov/issues/191: a hang, then the kill that ended it
        ("I encounter the same situation then running kcov after  travis build, kcov hang "
         "without output for a long time, and finally killed by travis. For details you can "
         "see: https://travis-ci.org/ishbguy/baux/builds/376708953", "timeout"),
        # counter-case, https://github.com/jj-vcs/jj/issues/4352: stuck in swap, memory's end
        ("Running again on a quiet system, memory use grows and shrinks in cycles -- 10, 11, 12, "
         "13, 14, 11, 12, 13, 15, 12, 13, 14, 16, ... 17, ... 18GB. Now up to 26GB. Gets stuck "
         "in swap and then gets killed.", "terminated_externally"),
        # https://github.com/scikit-hep/coffea/issues/131: a kill by SIGALRM, a timer's signal
        ("The timeout decorator [here](https://github.com/CoffeaTeam/coffea/blob/master/coffea/"
         "processor/parsl/detail.py#L51) is resulting in a SIGALRM being raised which kills the "
         "worker running the task. ", "timeout"),
        # counter-case: supposed
        ("If SIGALRM kills the worker, the task is retried.", None),
        # https://github.com/arminbiere/cadical/issues/23: the shell's status for SIGALRM
        ("Alarm clock", "timeout"),
        # counter-case: a table's cell
        ("| Alarm clock         | Loops the alarm sound until stopped |", None),
        # https://github.com/OpenGATE/Gate/issues/434: memory's lack as the kill's reason
        ("I have been simulating PET acquisitions using GATE. However, my simulation is always "
         "killed by the system due to the limited memory. I use GATE just for my Undergraduate "
         "thesis and I have no intension of buying a new computer. Is there any tricks that can "
         "reduce the GATE memory? (As a price, I can sacrifice some accuracy.)", "oom_kill"),
        # counter-case: supposed
        ("The worker might get killed due to insufficient memory.", "memory_noted"),
    ],
    ids=["nyc", "banner-named", "kcov", "jj-swap", "coffea", "alarm-supposed", "cadical",
         "alarm-table", "gate", "lack-supposed"],
)  # fmt: skip


_reads(
    LINE_READINGS,
    "a_message_after_its_source_location_and_a_feeling_like_one",
    [
        # https://github.com/any1/wayvnc/issues/67: "OOM" alone after the source's location
        ("../subprojects/neatvnc/src/server.c:886: OOM", "host_alloc_failed"),
        # counter-case: the location named in a sentence
        ("See server.c:886: OOM handling is weak there.", None),
        # https://github.com/moonlight-stream/moonlight-ios/issues/528: a guess at its kind
        ("Ever since I've updated to iOS 16, I can't play for more than about 10 minutes without "
         "the app crashing (suddenly exits to the home screen). It feels like an out of memory "
         "error.", "memory_noted"),
        # counter-case: said outright
        ("The app crashes with an out of memory error.", "host_alloc_failed"),
    ],
    ids=["neatvnc", "location-named", "moonlight", "outright"],
)  # fmt: skip


TRUNK_RECORDER = """# Failed to allocate zero-copy buffer
After some period of time (10 hours or so), trunk-recorder starts failing with the following \
error messages and stops decoding:

```
trunk-recorder | Allocating 15 zero-copy buffers
trunk-recorder | Failed to allocate zero-copy buffer for transfer 0
{next}
trunk-recorder | Failed to submit transfer 0
```
"""


@pytest.mark.parametrize(
    ("next_line", "expected"),
    [("trunk-recorder | Falling back to buffers in userspace", TriageClass.UNKNOWN),
     ("trunk-recorder | Giving up", TriageClass.HOST_ALLOC_FAILED)],
    ids=["fell-back", "gave-up"],
)  # fmt: skip
def test_a_refusal_the_next_line_falls_back_from_is_handled(
    tmp_path: Path, next_line: str, expected: TriageClass
) -> None:
    """A refusal whose next line says the program goes on another way is handled, and the
    heading that names it does not decide over the text
    (https://github.com/TrunkRecorder/trunk-recorder/issues/399); without the fallback the
    refusal stands."""
    text = TRUNK_RECORDER.format(next=next_line)
    assert _triage_text(tmp_path, text).triage_class is expected


def test_a_bare_metal_machine_is_no_metal_device() -> None:
    """bladeRF's user "installed on a bare-metal machine" (https://github.com/Nuand/bladeRF/
    issues/979) names no Apple Metal device; "a Metal device" does."""
    from qualify.evidence.oom_parts import _ACCELERATOR, _DEVICE_WORD

    line = "i'm on ubuntu 24.04 lts, installed on a bare-metal machine and kernel version is 6.8"
    assert _ACCELERATOR.search(line) is None and _DEVICE_WORD.search(line) is None
    assert _ACCELERATOR.search("allocation failed on the metal device") is not None


_reads(
    LINE_READINGS,
    "the_oom_killer_as_a_kills_agent_and_running_out_denied_by_what_was_watched",
    [
        # https://github.com/openlink/virtuoso-opensource/issues/149: the killer as the agent
        ("I am trying to create a local Sparql endpoint for Freebase for running some local "
         "experiments. While using virtuoso 7, I regularly see server getting killed due by OOM "
         "killer. I have followed all the required steps as mentioned here. I have also made the "
         "required changes to my virtuso.ini file as mentioned in RDF Performance Tuning.",
         "oom_kill"),
        # counter-case: supposed
        ("If the server gets killed by the OOM killer, raise its memory.", "memory_noted"),
        # https://github.com/android/ndk/issues/1892: running out denied by what was watched
        ("Weird, it looks like it's not crashing on an idle system. I was inspecting `top` while "
         "building AOSP and I didn't see it run out of memory or get close to the max of 128GB. "
         "I'll pay more attention to system resources next time and see if i'm mistaken.",
         "memory_noted"),
        # counter-case: seen
        ("Weird, it looks like it's not crashing on an idle system. I was inspecting `top` while "
         "building AOSP and I saw it run out of memory or get close to the max of 128GB.",
         "host_alloc_failed"),
    ],
    ids=["virtuoso", "supposed", "ndk", "seen"],
)  # fmt: skip


_reads(
    LINE_READINGS,
    "the_shells_status_a_pid_first_and_sqlites_code_14_with_its_message",
    [
        # https://github.com/siconos/siconos/issues/358: the status, the script's prefix left out
        ("7395 Killed OPEN_BLAS_NUM_THREADS=8 OMP_NUM_THREADS=8 python3 chute_con_rocas.py > "
         "chute_con_rocas_freeze.log", "shell_killed"),
        # counter-case: a count
        ("3 Killed in action", None),
        # https://github.com/danvergara/dblab/issues/305: SQLite's code 14 and its message
        ("Error: unable to open database file: out of memory (14)", "memory_noted"),
        # counter-case: SQLite's code 7 (SQLITE_NOMEM)
        ("Error: out of memory (7)", "host_alloc_failed"),
    ],
    ids=["siconos", "count", "dblab", "nomem"],
)  # fmt: skip


DBLAB = """# "out of memory" trying to open a 128K DB with plenty of free RAM.

**Describe the bug**
Installed the latest version. Trying to open a local sqlite DB that is 128KB on a machine with \
64GB RAM (over 50GB free) and getting:

{error}
"""


@pytest.mark.parametrize(
    ("error", "expected"),
    [("Error: unable to open database file: out of memory (14)", TriageClass.UNKNOWN),
     ("The program stopped.", TriageClass.HOST_ALLOC_FAILED)],
    ids=["code-14", "no-code"],
)  # fmt: skip
def test_a_heading_does_not_decide_over_the_failure_its_words_are(
    tmp_path: Path, error: str, expected: TriageClass
) -> None:
    """A heading that quotes "out of memory" does not decide when the text under it shows the
    words another failure's, SQLite's code 14 (https://github.com/danvergara/dblab/issues/305);
    with nothing under it, the heading is read."""
    assert _triage_text(tmp_path, DBLAB.format(error=error)).triage_class is expected


_reads(
    LINE_READINGS,
    "what_a_person_thought_it_was_and_a_limits_error_code",
    [
        # https://github.com/gpodder/gpodder/issues/1787: a belief told as past
        ("Mostly when adding a channel that has too many episodes it throws an error, I thought "
         "it was that I reached the x84 memory limit. I'm considering lowering the number of max "
         "items to load.", "memory_noted"),
        # counter-case: told as what happened
        ("Mostly when adding a channel that has too many episodes it throws an error, I reached "
         "the x84 memory limit.", "limit_oom_kill"),
        # https://github.com/stafftastic/jitsu-chart/issues/66: ClickHouse's code for its limit
        ("\u2502 r overcommit denominator are set to zero. (MEMORY_LIMIT_EXCEEDED), Stack trace "
         "(when copying this message, always include the lines below):", "host_alloc_failed"),
        # counter-case: the limit exceeded in words, no code
        ("\u2502 r overcommit denominator are set to zero. Memory limit exceeded, Stack trace "
         "(when copying this message, always include the lines below):", "limit_oom_kill"),
    ],
    ids=["gpodder", "told", "clickhouse", "words"],
)  # fmt: skip


UMAMI = """# Memory Leak in `client_scanner` Process Inside Umami Container (OOM Killer Triggered)

A process named **`client_scanner`** running inside the **Umami db container** (`umami-db-1`) \
is causing a **memory leak**, leading to **exponential RAM consumption** (up to 2.6 GB). The \
**Linux OOM Killer terminated the process**, but the container itself remained running.

```shell
sudo dmesg -T

[Wed Jan 28 11:42:21 2026] oom-kill:constraint={constraint},nodemask=(null),cpuset=docker-be08\
3fc5db58.scope,mems_allowed=0,{scope},task_memcg=/system.slice/docker-4cf79af550e0.scope,task=\
client_scanner,pid=476884,uid=100
```
"""


@pytest.mark.parametrize(
    ("constraint", "scope", "expected"),
    [("CONSTRAINT_NONE", "global_oom", TriageClass.GLOBAL_OOM),
     ("CONSTRAINT_MEMCG", "oom_memcg=/system.slice/docker-4cf79af550e0.scope",
      TriageClass.CGROUP_OOM)],
    ids=["global", "memcg"],
)  # fmt: skip
def test_the_kernels_own_scope_decides_over_a_persons_container(
    tmp_path: Path, constraint: str, scope: str, expected: TriageClass
) -> None:
    """The kernel's report that scopes the kill to the whole machine decides over a person's
    words that the process ran inside a container (https://github.com/umami-software/umami/
    issues/3988); the same report scoped to a memory cgroup is the cgroup's."""
    text = UMAMI.format(constraint=constraint, scope=scope)
    assert _triage_text(tmp_path, text).triage_class is expected


_reads(
    LINE_READINGS,
    "a_heaps_limit_crossed_a_limit_hit_and_a_condition_with_an_apostrophe",
    [
        # https://github.com/Miragon/bpmn-modeler/pull/960: the heap's limit, active voice
        ("The Theia production build (`theia build --app-target=\"electron\"`) exceeded the "
         "default Node.js heap limit on the macOS runner, causing webpack to abort with "
         "`SIGABRT`.", "host_alloc_failed"),
        # counter-case: stayed under it
        ("The Theia production build (`theia build --app-target=\"electron\"`) stayed under "
         "the default Node.js heap limit on the macOS runner.", None),
        # https://github.com/tldraw/tldraw/issues/8586 (the sentence's last clause): "hits"
        ("spiking until the process hits the memory limit ~1.5gb.", "limit_oom_kill"),
        # counter-case: only near it
        ("spiking until the process nears the memory limit ~1.5gb.", None),
        # https://github.com/killbill/killbill-cloud/issues/137: a condition, "there's" inside
        ("Whenever tomcat crashes (in case there's not enough ram for example), the container "
         "does not exit since the attached process is the tail process for the logs.",
         "memory_noted"),
        # counter-case: no condition
        ("Tomcat crashes (there's not enough ram), the container does not exit since the "
         "attached process is the tail process for the logs.", "host_alloc_failed"),
    ],
    ids=["theia", "under", "tldraw", "nears", "killbill", "no-condition"],
)  # fmt: skip


KIMAI = """# [BUG] Allowed memory size of 134217728 bytes exhausted
**Describe the bug**
docker exec kimai2 /opt/kimai/bin/console kimai:reset-dev exceeds the memory limit

**To Reproduce**
Steps to reproduce the behaviour:
1. ```docker run --rm -ti -p 8001:8001 --name kimai2 --env APP_ENV=dev \
kimai/kimai2:apache-debian-1.8-dev```
2. ```docker exec kimai2 /opt/kimai/bin/console kimai:reset-dev```
{error}
"""


@pytest.mark.parametrize(
    ("error", "expected"),
    [("4. See error ```Allowed memory size of 134217728 bytes exhausted```",
      TriageClass.HOST_ALLOC_FAILED),
     ("4. See the container exit", TriageClass.CGROUP_OOM)],
    ids=["php-refusal", "no-refusal"],
)  # fmt: skip
def test_a_persons_limit_crossed_beside_the_programs_refusal_is_its_limit(
    tmp_path: Path, error: str, expected: TriageClass
) -> None:
    """A person's sentence that a command "exceeds the memory limit", no kill told, beside PHP's
    own refusal at its limit, is that refusal (https://github.com/tobybatch/kimai2/issues/107);
    without the refusal, the limit's kill."""
    assert _triage_text(tmp_path, KIMAI.format(error=error)).triage_class is expected


_reads(
    LINE_READINGS,
    "a_time_limits_message_quoted_as_possible_or_no_longer_logged",
    [
        # https://github.com/mailpoet/mailpoet/pull/4429: what the reader may notice
        ("When you run sending to a larger list (500+) on the trunk branch, you may notice a lot "
         "of \"MailPoet.ERROR: Maximum execution time has been reached.\" errors are logged in "
         "the error log (/wp-admin/admin.php?page=mailpoet-logs).", None),
        # counter-case: what they got
        ("When you run sending to a larger list (500+) on the trunk branch, we got a lot of "
         "\"MailPoet.ERROR: Maximum execution time has been reached.\" errors logged in the "
         "error log (/wp-admin/admin.php?page=mailpoet-logs).", "timeout"),
        # the same pull request: a change that stops logging it
        ("On this branch, the `Maximum execution time has been reached` exception is no longer "
         "logged.", None),
        # counter-case: still logged
        ("On this branch, the `Maximum execution time has been reached` exception is logged.",
         "timeout"),
    ],
    ids=["may-notice", "got", "no-longer-logged", "logged"],
)  # fmt: skip


REACT_EMAIL = """# OOM due to hot reload of shared component

Observed: the preview server renders `Email001.jsx` again, then continues rendering dependent \
templates such as `Email002.jsx`, {told}

```text
FATAL ERROR: Ineffective mark-compacts near heap limit Allocation failed - JavaScript heap out \
of memory
```
"""


@pytest.mark.parametrize(
    ("told", "expected"),
    [("and crashes with:", TriageClass.HOST_ALLOC_FAILED),
     ("and the error would be something like:", TriageClass.UNKNOWN)],
    ids=["crashes-with", "something-like"],
)  # fmt: skip
def test_an_examples_words_introduce_a_paste_only_in_the_colons_clause(
    tmp_path: Path, told: str, expected: TriageClass
) -> None:
    """The words "such as" earlier in the sentence name the templates, not an example of the
    error: the clause before the colon tells the crash (https://github.com/resend/react-email/
    issues/3612); words of an example in that clause make the paste one."""
    assert _triage_text(tmp_path, REACT_EMAIL.format(told=told)).triage_class is expected


_reads(
    LINE_READINGS,
    "ends_by_their_clause_a_quotes_edge_a_level_lead_and_a_timeout_crossed_then_killed",
    [
        # https://github.com/kanboard/kanboard/issues/674: nginx's words after PHP's quote
        ("2015/03/03 09:25:37 [error] 25940#0: *11 FastCGI sent in stderr: \"PHP message: PHP "
         "Fatal error:  Maximum execution time of 30 seconds exceeded in /srv/www/htdocs/"
         "kanboard-test/kanboard/app/Schema/Sqlite.php on line 74\" while reading response head",
         "timeout"),
        # counter-case: the read inside the quote, the message's own
        ("2015/03/03 09:25:37 [error] 25940#0: *11 upstream sent: \"Maximum execution time of "
         "30 seconds exceeded while reading response head\"", None),
        # https://github.com/wekan/wekan/issues/3585: V8's message pasted with a comma after it
        ("> FATAL ERROR: Ineffective mark-compacts near heap limit Allocation failed - JavaScript "
         "heap out of memory,", "host_alloc_failed"),
        # counter-case: a call's source line that ends open
        ("foo(bar: out of memory),", None),
        # https://github.com/wekan/wekan/issues/2150: the process said to run out, not the
        # container
        ("Docker container crash (process out of memory)", "host_alloc_failed"),
        # counter-case: the container ran out
        ("Docker container ran out of memory", "limit_oom_kill"),
        # https://github.com/SecurityRoots/dradispro-tracker/issues/204: Unicorn's master
        ("E, [2014-12-01T15:56:06.244777 #2950] ERROR -- : worker=0 PID:3042 timeout (31s > "
         "30s), killing", "timeout"),
        # counter-case: no kill
        ("E worker=0 PID:3042 timeout (31s > 30s)", None),
        # https://github.com/MarksMakerSpace/filament-profiles/issues/611: it fell back
        ("Fixed and deployed \u2014 the My Spools list was timing out on larger collections and "
         "quietly falling back to an empty list, so the page said you had no spools while the "
         "dashboard, My Locations and My Colors all still showed them.", None),
        # counter-case: no fallback
        ("the My Spools list was timing out on larger collections, so the page said you had no "
         "spools.", "timeout"),
    ],
    ids=["kanboard", "inside-quote", "wekan-v8", "code", "wekan-process", "container",
         "unicorn", "no-kill", "filament", "no-fallback"],
)  # fmt: skip

_reads(
    LINE_READINGS,
    "a_kill_from_out_of_memory",
    [
        # https://github.com/linkchecker/linkchecker/issues/65: the title, as a heading is read
        ("Process being killed from out of memory error on Ubuntu", "oom_kill"),
        # counter-case: killed from a terminal
        ("Process being killed from the terminal on Ubuntu", "terminated_externally"),
    ],
    ids=["linkchecker", "terminal"],
)  # fmt: skip


_reads(
    LINE_READINGS,
    "a_time_limits_issues_now_handled",
    [
        # https://github.com/kitodo/kitodo-presentation/pull/1787: a changelog's item
        ("- Move the measure-building function call to after adding the score \u2192 timeout "
         "issues that occurred with large scores are now properly handled", None),
        # counter-case: what ended
        ("- Move the measure-building function call to after adding the score \u2192 the job "
         "timed out with large scores", "timeout"),
    ],
    ids=["kitodo", "timed-out"],
)  # fmt: skip

_reads(
    LINE_READINGS,
    "a_tests_name_unspelled_unittests_failure_and_an_allocation_over_the_supported_size",
    [
        # https://github.com/fail2ban/fail2ban/issues/1171: a test's name, not a time limit
        ("# openSUSE: Failing testExecuteTimeoutWithNastyChildren", None),
        # counter-case: the same words as a name that is no test's
        ("openSUSE: Failing ExecuteTimeoutWithNastyChildren", "timeout"),
        # the same thread: unittest's failure after OBS's elapsed seconds
        ("[  111s] FAIL: testExecuteTimeoutWithNastyChildren "
         "(fail2ban.tests.actiontestcase.CommandActionTest)", "test_failed"),
        # https://github.com/AcademySoftwareFoundation/OpenImageIO/issues/4553
        ("==660267==ERROR: AddressSanitizer: requested allocation size 0x1fdfffffc04 "
         "(0x1fe00000c08 after adjustments for alignment, red zones etc.) exceeds maximum "
         "supported size of 0x10000000000 (thread T0)", "host_alloc_failed"),
        # counter-case: no maximum crossed
        ("==660267==ERROR: AddressSanitizer: requested allocation size 0x1fdfffffc04 is fine "
         "(thread T0)", None),
        # https://github.com/strukturag/libde265/issues/330: a situation put as a condition
        ("In an out of memory situation, de265_image::alloc_image() may fail to allocate memory "
         "and returns DE265_ERROR_OUT_OF_MEMORY.", "memory_noted"),
        # counter-case: it failed
        ("de265_image::alloc_image() failed to allocate memory and returns "
         "DE265_ERROR_OUT_OF_MEMORY.", "host_alloc_failed"),
        # https://github.com/bunkerity/bunkerweb/issues/3057: a limit only feared
        ("Once I regained control of the server, I limited the container's memory to 4G, and "
         "then it was impossible to load the web UI without worrying about exceeding the memory "
         "consumption limit.", None),
        # counter-case: exceeding it
        ("Once I regained control of the server, I limited the container's memory to 4G, and "
         "then it was impossible to load the web UI, exceeding the memory consumption limit.",
         "host_alloc_failed"),
    ],
    ids=["fail2ban-title", "no-test", "unittest-obs", "asan", "asan-fine", "libde265",
         "failed", "without", "exceeding"],
)  # fmt: skip


BUNKERWEB = """# [BUG] Web UI memory consumption
{cap}

```
[2026-01-13 14:16:13 +0100] [UI] [21] [\u274c] - Worker (pid:25) was sent SIGKILL! Perhaps out \
of memory?
```
"""


@pytest.mark.parametrize(
    ("cap", "expected"),
    [("Once I regained control of the server, I limited the container's memory to 4G.",
      TriageClass.CGROUP_OOM),
     ("Once I regained control of the server, I restarted the container.",
      TriageClass.EXTERNAL_KILL)],
    ids=["limited", "restarted"],
)  # fmt: skip
def test_a_cap_set_on_a_containers_memory_makes_a_plain_kill_its_oom_kill(
    tmp_path: Path, cap: str, expected: TriageClass
) -> None:
    """A person's "I limited the container's memory to 4G" sets a cap on the work, under which
    a worker's SIGKILL is that cap's kill (https://github.com/bunkerity/bunkerweb/issues/3057);
    without the cap, a kill from outside."""
    assert _triage_text(tmp_path, BUNKERWEB.format(cap=cap)).triage_class is expected


_reads(
    LINE_READINGS,
    "the_oom_killer_had_a_duration_then_a_kill_and_a_watchdog_fired",
    [
        # https://github.com/machinekit/machinekit-cnc/issues/13: the OOM killer as hit
        ("We also hit the issue with the OOM killer on a BBB [1] and I did some research on the "
         "subject by instrumenting emc/nml_intf/interpl.cc", "oom_kill"),
        # counter-case: only read about
        ("We also read about the OOM killer on a BBB [1] and I did some research on the subject "
         "by instrumenting emc/nml_intf/interpl.cc", "memory_noted"),
        # https://github.com/machinekit/machinekit/pull/553: a duration, then the kill
        ("Not sure why the BBB tests fail.  They're taking over 30 minutes and get killed.  I "
         "can't tell if they're hanging or if they're taking longer than in the past.  Will "
         "rebuild older PR to test....", "timeout"),
        # counter-case: no kill told
        ("Not sure why the BBB tests fail.  I can't tell if they're hanging or if they're taking "
         "longer than in the past.", None),
        # https://github.com/bdring/FluidNC/issues/1810: ESP-IDF's task watchdog
        ("E (17550) task_wdt: Task watchdog got triggered. The following tasks/users did not "
         "reset the watchdog in time:", "timeout"),
        # counter-case: the watchdog fed
        ("E (17550) task_wdt: Task watchdog was fed in time.", None),
    ],
    ids=["machinekit", "read-about", "took-then-killed", "no-kill", "task-wdt", "fed"],
)  # fmt: skip

_reads(
    LINE_READINGS,
    "a_use_over_a_size_then_killed_the_killer_triggered_an_inner_class_and_a_limit_given",
    [
        # https://github.com/mitodl/open-discussions/issues/3251: a use over a size, then killed
        ("The task eventually consumes over 2 GB memory and is killed.", "oom_kill"),
        # counter-case: no kill
        ("The task eventually consumes over 2 GB memory and is slow.", None),
        # https://github.com/benbusby/whoogle-search/issues/28: what set the OOM killer off
        ("I'm seeing 264MB used by whoogle in my local VM cluster. I tried to deploy this to a "
         "t3a.nano in EC2 (456MB RAM), but triggered OOM killer (the docker daemon uses a lot of "
         "RAM on its own, which leaves that machine with about 250MB of RAM free).", "oom_kill"),
        # counter-case: feared
        ("I tried to deploy this to a t3a.nano in EC2 (456MB RAM), but worried about the OOM "
         "killer.", "memory_noted"),
        # https://github.com/dniHze/maestro-test-action/issues/57: an inner class after "$"
        ("maestro.MaestroDriverStartupException$IOSDriverTimeoutException: Maestro iOS driver "
         "did not start up in time", "timeout"),
        # counter-case: another inner class
        ("maestro.MaestroDriverStartupException$IOSDriverException: Maestro iOS driver did not "
         "start up", None),
        # https://github.com/Flank/flank/issues/353: a time limit given over what is allowed
        ("    \"message\" : \"Given test timeout of 60 min exceeds limit of 30 min.\",", None),
        # counter-case: a test's timeout exceeded
        ("    \"message\" : \"Test timeout of 60 min exceeded.\",", "timeout"),
    ],
    ids=["consumes-then-killed", "slow", "whoogle", "feared", "maestro", "other-class",
         "flank", "exceeded"],
)  # fmt: skip

_reads(
    LINE_READINGS,
    "a_hyphenated_time_out_a_duration_after_it_caused_to_time_out_not_run_in_a_time",
    [
        # https://github.com/streetsidesoftware/cspell/issues/5825: the state hyphenated
        ("Error: Internal error: Atomics.wait() failed: timed-out", "timeout"),
        # counter-case: a request's
        ("Error: request to registry failed: timed-out", None),
        # https://github.com/jsreport/jsreport/issues/770: the plural verb, then its duration
        ("This means that bigger tables timeouts on chrome-page-eval after 10s", "timeout"),
        # counter-case: a setting's noun with a duration
        ("Instead, this PR makes it timeout after 1 hr (they usually finish in under 30 "
         "minutes).", None),
        # https://github.com/GSA-TTS/FAC/issues/2076: what made the work run out of its time
        ("Submitting a non workbook excel spreadsheet with a lot of filled in cells causes the "
         "validation process to timeout. This is likely intended, however could potentially be "
         "confusing if somebody submitting an audit doesn't fully understand what counts as a "
         "workbook or not.", "timeout"),
        # counter-case: a question how to set it
        ("How do I make the validation process timeout after 5 seconds?", None),
        # https://github.com/fcitx5-android/fcitx5-android/issues/76: not run in a stated time
        ("E/CustomActivityOnCrash( 4481): java.lang.RuntimeException: Alive checking failed! The "
         "job didn't get run after 8000 ms!", "timeout"),
        # counter-case: a call that did not answer, and a default taken
        ("W/InputConnectionWrapper( 4481): requestUpdateCursorAnchorInfo() didn't respond in "
         "2000 ms. Returning default: 0", None),
        # counter-case: a default taken after the work did not start
        ("The job did not start within 5 minutes, using the cached result", None),
    ],
    ids=["cspell", "registry", "jsreport", "pr-setting", "fac", "question", "fcitx5",
         "default-returned", "cached"],
)  # fmt: skip

_reads(
    LINE_READINGS,
    "what_used_to_happen_before_a_sentence_of_now",
    [
        # https://github.com/python-excel/xlrd/pull/368: a change's before and after
        ("- xls: `on_demand` with `mmap`ed used to have no effect on `xls` file, whose has "
         "non-contiguous sectors. Last line of  `_locate_stream` caused it to load the whole "
         "data from `mmap`ed  file into the memory, time consuming and `MemoryError` for big "
         "`xls` files (>100MB).  Now the `mmap` part work as in", "memory_noted"),
        # counter-case: the same without its before and after
        ("Last line of `_locate_stream` caused it to load the whole data from `mmap`ed file into "
         "the memory, time consuming and `MemoryError` for big `xls` files (>100MB).",
         "host_alloc_failed"),
        # counter-case: it used to work, the failure is now
        ("It used to work, but now it fails with MemoryError. Now what?", "host_alloc_failed"),
    ],
    ids=["xlrd", "no-before-after", "used-to-work"],
)  # fmt: skip

_reads(
    LINE_READINGS,
    "a_timeout_reached_in_the_present_a_kill_shown_as_a_message_and_an_error_being_got",
    [
        # https://github.com/sider/runners/issues/1458: a time limit reached, in the present
        ("According to the log the execution time of the cppcheck process is too long and "
         "reaches  the timeout of 30m.", "timeout"),
        # counter-case: supposed
        ("The cppcheck process may reach the timeout of 30m.", None),
        # https://github.com/golangci/golangci-lint/issues/710: the shell's word as the message
        ("running golangci-lint run fails with \"Killed\" message after 40 seconds.",
         "shell_killed"),
        # counter-case: killed after a duration, a time limit
        ("running golangci-lint run was killed after 40 seconds.", "timeout"),
        # https://github.com/frappe/crm/issues/1246: an example of what the person is getting
        ("I am trying to get the crm app using `bench get-app crm` on my hetzner server having "
         "`2 vCPU, 4 GB (RAM), 40 GB (Disk)` but I am getting error such as `Out of memory: "
         "killed process <pid> (node)`.", "oom_kill"),
        # counter-case: a kind of message named as an example
        ("It had an information message, such as `Out of memory: killed process <pid> (node)`.",
         "memory_noted"),
    ],
    ids=["cppcheck", "may-reach", "golangci", "killed-after", "frappe", "kind-of-message"],
)  # fmt: skip


def test_the_javascript_package_manager_yarn_is_no_platform_with_a_limit() -> None:
    """Frappe CRM's build log ("$ yarn install --check-files", "yarn install v1.22.22") runs no
    work under Hadoop's YARN; a job submitted to YARN does."""
    js = "$ yarn install --check-files\nyarn install v1.22.22\n$ yarn run build\nyarn.lock\n"
    assert platform_named(js, "issue.md") is None
    assert platform_named("Submitted the job to YARN queue default\n", "issue.md") is not None


STYLELINT = """Avoid heap out of memory with CI coverage job
> Is there anything in the PR that needs further explanation?

{intro}

```
FATAL ERROR: Reached heap limit Allocation failed - JavaScript heap out of memory
```
"""
"""https://github.com/stylelint/stylelint/pull/7100, with its sentence before the paste varied."""


@pytest.mark.parametrize(
    ("intro", "expected"),
    [
        ("This change aims to avoid the following error that sometimes happens with the CI test "
         "coverage job.", TriageClass.UNKNOWN),
        ("I keep getting the following error that sometimes happens with the CI test coverage "
         "job.", TriageClass.HOST_ALLOC_FAILED),
        ("How do I fix the following error that sometimes happens with the CI test coverage "
         "job?", TriageClass.HOST_ALLOC_FAILED),
    ],
    ids=["a-change-avoids-it", "the-persons", "asked-to-fix"],
)  # fmt: skip
def test_a_change_said_to_treat_the_error_that_follows_shows_it(
    tmp_path: Path, intro: str, expected: TriageClass
) -> None:
    assert _triage_text(tmp_path, STYLELINT.format(intro=intro)).triage_class is expected


_reads(
    LINE_READINGS,
    "a_disk_exhausted_an_access_out_of_bounds_an_allocator_structure_not_made",
    [
        # https://github.com/haskell/ghcup-hs/issues/30: a resource exhausted that is a disk
        ("`ghcup install` exhausts /tmp storage (about 2 GB). It ends with the message `resource "
         "exhausted (no space left on device)`", "memory_noted"),
        # counter-case: the resource not said
        ("It ends with the message `resource exhausted`", "host_alloc_failed"),
        # https://github.com/moonrepo/proto/issues/208: wasmtime's trap, an access out of bounds
        ("  \u2502     2: wasm trap: out of bounds memory access", None),
        # counter-case: out of memory
        ("  \u2502     2: wasm trap: out of memory", "memory_noted"),
        # https://github.com/asdf-vm/asdf-erlang/issues/116: Erlang's super carrier not made
        ("erts_mmap: Failed to create super carrier of size 512 MB", "host_alloc_failed"),
        # counter-case: a file not made
        ("Failed to create file of size 512 MB", None),
    ],
    ids=["ghcup", "resource-unsaid", "wasm-bounds", "wasm-oom", "erts-mmap", "file"],
)  # fmt: skip

_reads(
    LINE_READINGS,
    "the_shells_killed_on_macos_and_over_a_progress_line_perls_harness_tests_that_time_out",
    [
        # https://github.com/pyenv/pyenv/issues/2289: macOS's sh adds the signal's number
        ("/bin/sh: line 1: 77877 Killed: 9               CC='clang' LDSHARED='clang -bundle'",
         "shell_killed"),
        # counter-case: another signal
        ("/bin/sh: line 1: 77877 Terminated: 15               CC='clang'", None),
        # https://github.com/postmodern/ruby-install/issues/150: written over rdoc's progress
        ("Killed94/962]  ext/date/date_core.c", "shell_killed"),
        # counter-case: a word that starts so
        ("Killed94 files", None),
        # https://github.com/gugod/App-perlbrew/issues/654: Test::Harness's summary report
        ("../cpan/File-Path/t/Path_root.t                                  (Wstat: 256 Tests: 11 "
         "Failed: 1)", "test_failed"),
        ("Result: FAIL", "test_failed"),
        # counter-cases: no test failed
        ("t/basic.t (Wstat: 0 Tests: 11 Failed: 0)", None),
        ("Result: PASS", None),
        # https://github.com/gfx-rs/wgpu/issues/9705: units of work that time out
        ("Several tests time out in CI", "timeout"),
        # counter-cases: a setting's name; supposed
        ("The tests time out value is 60s", None),
        ("If the jobs time out, they are retried", None),
    ],
    ids=["killed-9", "terminated-15", "progress", "word", "harness-file", "harness-result",
         "none-failed", "pass", "wgpu", "setting", "supposed"],
)  # fmt: skip

ERLANG = """Build Fails on macOS 10.15 Catalina
```
Building Erlang/OTP 20.1 (asdf_20.1), please wait...
Build failed.
make[3]: *** [../ebin/{module}_arch.beam] Error 1
make[3]: *** [../ebin/{module}_mk_switch.beam] Error 1
erts_mmap: Failed to create super carrier of size 512 MB
make[3]: *** [../ebin/{module}_arith_32.beam] Error 1
```
"""
"""https://github.com/asdf-vm/asdf-erlang/issues/116, with the modules' names varied."""


@pytest.mark.parametrize(
    ("module", "expected"),
    [("hipe_rtl", TriageClass.HOST_ALLOC_FAILED), ("hip_rtl", TriageClass.CUDA_OOM_CAPACITY)],
    ids=["erlangs-hipe", "amds-hip"],
)
def test_erlangs_hipe_names_no_accelerator(
    tmp_path: Path, module: str, expected: TriageClass
) -> None:
    """The nearest line that names an accelerator makes an allocation refused without one the
    device's: AMD's HIP does, Erlang's HiPE compiler does not."""
    assert _triage_text(tmp_path, ERLANG.format(module=module)).triage_class is expected


_reads(
    LINE_READINGS,
    "the_kernel_told_as_the_killer_none_of_an_error_and_the_shells_word_before_a_fence",
    [
        # https://github.com/git-cola/git-cola/issues/809: the kernel's own kill
        ("This issue is also reproduced with the Inkscape source repository, the system hangs "
         "over 10min. until the kernel killed the process.", "node_oom_kill"),
        # counter-cases: supposed; killed by a person
        ("If the kernel killed the process we would know.", None),
        ("The process was killed by the user.", "terminated_externally"),
        # https://github.com/SyncYomi/SyncYomi/pull/262: a log that must hold none
        ("- S22 imports the library into Suwayomi under a 1 GB heap, restarts it under 320 MB "
         "and has its first sync push everything to an empty server; the server snapshot must "
         "hold every manga and chapter and the Suwayomi log must contain no `OutOfMemoryError`.",
         "memory_noted"),
        # counter-case: a log that holds one
        ("the Suwayomi log contains `OutOfMemoryError`.", "host_alloc_failed"),
        # https://github.com/Suwayomi/Suwayomi-Server-docker/issues/193: glued to a time stamp,
        # before a fence's end
        ("2025-10-16 19:50:38.827315+00:00Killed```", "shell_killed"),
        # counter-case: a count of what a program killed
        ("2025-10-16 19:50:38.827315+00:00Killed 3 idle connections```", None),
    ],
    ids=["git-cola", "supposed", "by-a-person", "syncyomi", "contains", "suwayomi", "count"],
)  # fmt: skip

EHENTAI = (
    "64G RAM, zip generation stuck\n"
    "ccloli \u00b7 comment \u00b7 2023-11-29\n"
    "{intro}\n"
    "\n"
    "1. \u6d4f\u89c8\u5668\u7684\u5355\u8fdb\u7a0b\u6709\u6700\u5927\u5185\u5b58\u9650"
    "\u5236\uff0c\u5bfc\u81f4\u5185\u5b58\u5206\u914d\u5931\u8d25\u6216 out of memory\n"
    "2. \u6d4f\u89c8\u5668 blob storage \u53ef\u7528\u7a7a\u95f4\u4e0d\u8db3\n"
)
"""https://github.com/ccloli/E-Hentai-Downloader/issues/273, its list's intro varied: "the
browser's single process has a maximum memory limit, so the allocation fails or out of memory"."""


@pytest.mark.parametrize(
    ("intro", "expected"),
    [
        ("\u8fd9\u4e2a\u9519\u8bef\u662f zip \u5e93\u65e0\u6cd5\u6210\u529f\u751f\u6210 zip "
         "\u6587\u4ef6\u5bfc\u81f4\u7684\uff0c\u539f\u56e0\u6709\u53ef\u80fd\u662f\uff1a",
         TriageClass.UNKNOWN),
        ("The reason may be one of these:", TriageClass.UNKNOWN),
        ("\u539f\u56e0\u662f\uff1a", TriageClass.HOST_ALLOC_FAILED),
        ("The reason is this:", TriageClass.HOST_ALLOC_FAILED),
    ],
    ids=["chinese-may-be", "english-may-be", "chinese-is", "english-is"],
)  # fmt: skip
def test_a_list_of_guesses_offers_possibilities(
    tmp_path: Path, intro: str, expected: TriageClass
) -> None:
    assert _triage_text(tmp_path, EHENTAI.format(intro=intro)).triage_class is expected


_reads(
    LINE_READINGS,
    "pythons_subprocess_timeout_whatever_its_command_names",
    [
        # https://github.com/ArchiveBox/ArchiveBox/issues/1125: subprocess.TimeoutExpired
        ("Command '['chromium', '--headless', '--window-size=1440,2000', '--timeout=180000', "
         "'--screenshot', 'https://www.dailymail.co.uk/sport/formulaone/article-11883195/x.html']' "
         "timed out after 180 seconds", "timeout"),
        # counter-case: a request that timed out after a duration, a network's
        ("Request to 'https://www.dailymail.co.uk/x.html' timed out after 180 seconds", None),
    ],
    ids=["archivebox", "request"],
)  # fmt: skip


POOL_FRAGMENTED = [
    # https://github.com/jonathan-laurent/AlphaZero.jl/issues/186: CUDA.jl's OOM, its pool
    # holding 1.7 GiB reserved and not in use for a 146 MiB request
    (
        "ERROR: Out of GPU memory trying to allocate 146.250 MiB\n"
        "Effective GPU memory usage: 99.50% (3.792 GiB/3.810 GiB)\n"
        "Memory pool usage: 960.548 MiB (2.688 GiB reserved)\n",
        TriageClass.CUDA_OOM_FRAGMENTATION,
    ),
    # counter-case: the same message, the pool's unused part smaller than the request
    (
        "ERROR: Out of GPU memory trying to allocate 146.250 MiB\n"
        "Effective GPU memory usage: 99.50% (3.792 GiB/3.810 GiB)\n"
        "Memory pool usage: 2.600 GiB (2.688 GiB reserved)\n",
        TriageClass.CUDA_OOM_CAPACITY,
    ),
]


@pytest.mark.parametrize(("text", "expected"), POOL_FRAGMENTED, ids=["room", "no-room"])
def test_a_pool_reserved_with_room_for_the_request_is_fragmentation(
    text: str, expected: TriageClass, tmp_path: Path
) -> None:
    """An accelerator's OOM whose message goes on to state its allocator's pool, in use and
    reserved: fragmentation when the reserved memory not in use would have held the request,
    cited on the pool's line."""
    log = tmp_path / "train.log"
    log.write_text("epoch 3\n" + text)
    result = triage(Sources(paths=(log,)))
    assert result.triage_class is expected
    if expected is TriageClass.CUDA_OOM_FRAGMENTATION:
        assert 4 in {e.line for e in result.decided_by}
        assert "fragmentation" in result.summary


def test_the_refusal_that_states_its_figures_speaks_for_the_others(tmp_path: Path) -> None:
    """Of several refusals, the one that states the most figures is the summary's and is cited
    first (https://github.com/sleuthkit/autopsy/issues/155: the JVM's bare OutOfMemoryError lines
    before its "Native memory allocation (malloc) failed to allocate 215744 bytes")."""
    log = tmp_path / "hs_err.log"
    log.write_text(
        "java.lang.OutOfMemoryError\n"
        "# java.lang.OutOfMemoryError\n"
        "# There is insufficient memory for the Java Runtime Environment to continue.\n"
        "# Native memory allocation (malloc) failed to allocate 215744 bytes for "
        "Chunk::newException: java.lang.OutOfMemoryError thrown from the UncaughtExceptionHandler "
        'in thread "Timeable Event Queue Watch Dog"\n'
    )
    result = triage(Sources(paths=(log,)))
    assert result.triage_class is TriageClass.HOST_ALLOC_FAILED
    assert result.decided_by[0].line == 4
    assert "requested 211 KiB" in result.summary, result.summary


@pytest.mark.parametrize(
    ("before", "expected"),
    [("srun: error: pcc002: task 0: Out Of Memory\n", TriageClass.CGROUP_OOM),
     ("", TriageClass.TIMEOUT)],
    ids=["after-a-memory-kill", "alone"],
)  # fmt: skip
def test_a_time_limit_just_after_a_memory_kill_is_its_consequence(
    before: str, expected: TriageClass, tmp_path: Path
) -> None:
    """A time limit reported within three lines after a kill for memory in the same log is its
    consequence (https://github.com/deepmodeling/abacus-develop/issues/5369: Slurm's task OOM,
    then Intel MPI's "job ending due to startup timeout"); alone, it is the run's end."""
    log = tmp_path / "slurm.out"
    log.write_text(
        "SCF iteration 7\n" + before
        + "I_MPI_JOB_TIMEOUT = -1 second(s): job ending due to startup timeout\n"
    )  # fmt: skip
    assert triage(Sources(paths=(log,))).triage_class is expected


def _params(table: dict[str, list[tuple[str, str, str | None]]]) -> list[Any]:
    return [
        pytest.param(line, kind, id=f"{mechanism}-{name}")
        for mechanism, cases in table.items()
        for name, line, kind in cases
    ]


@pytest.mark.parametrize(("line", "kind"), _params(LINE_READINGS))
def test_each_mechanism_reads_its_lines(line: str, kind: str | None) -> None:
    found = parse_line(line)
    assert (found.kind if found is not None else None) == kind, found


@pytest.mark.parametrize(("line", "kind"), _params(PARTS_READINGS))
def test_each_mechanism_reads_its_lines_by_their_parts(line: str, kind: str | None) -> None:
    found = parse_oom_parts(line)
    assert (found.kind if found is not None else None) == kind, found
