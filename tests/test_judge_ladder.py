"""The verdict ladder on the signals each rung reads (the runs behind them are in
test_faults.py and test_run_cgroup.py)."""

from __future__ import annotations

import pytest

from qualify.judge.ladder import LADDER, Cause, Signals, decide
from qualify.verdict import Verdict


def test_the_ladder_is_the_causes_in_declaration_order() -> None:
    assert LADDER[0] is Cause.TOOLKIT and LADDER[-1] is Cause.PASSED
    assert [cause.verdict for cause in LADDER].count(Verdict.KILLED) == 2


def test_judge_and_triage_each_prove_every_rung_of_the_one_ladder() -> None:
    """One ladder, two readers of evidence: a rung either reader lacks fails here (a lookup
    that skips a missing rung would hide it)."""
    from qualify.judge import ladder
    from qualify.triage import classify

    assert list(ladder._RUNGS) == list(LADDER)
    assert list(classify._RUNGS) == list(LADDER)


@pytest.mark.parametrize(
    ("found", "verdict", "reason"),
    [
        (
            Signals(returncode=-9, signal="SIGKILL", oom_kills=2, cap_reached=True),
            Verdict.OOM_KILLED,
            "the memory cap was hit: 2 OOM kill(s) in the run's cgroup, the E2E ended by SIGKILL",
        ),
        (
            Signals(
                returncode=-9, signal="SIGKILL", oom_kills=1, cap_reached=False,
                host_memory_bytes=25 << 30,
            ),
            Verdict.OOM_KILLED,
            "the host ran out of memory, not the cap: the kernel's global OOM killer killed 1 "
            "process(es) of the run (the cap is larger than the host's 26843545600 bytes: it "
            "cannot bind), the E2E ended by SIGKILL",
        ),
        (
            Signals(returncode=-9, signal="SIGKILL"),
            Verdict.KILLED,
            "the E2E was killed by SIGKILL with no OOM kill recorded",
        ),
        (
            Signals(returncode=-11, signal="SIGSEGV"),
            Verdict.FAILED,
            "the E2E crashed: its root process died of SIGSEGV (not a resource death)",
        ),
        (
            Signals(returncode=137),
            Verdict.FAILED,
            "tests failed; the E2E exited with code 137",
        ),
        (
            Signals(returncode=3, session_exitstatus=0),
            Verdict.FAILED,
            "pytest passed, but the E2E exited with code 3",
        ),
        (
            Signals(returncode=0, incomplete="the session never finished"),
            Verdict.FAILED,
            "pytest did not finish: the session never finished; the E2E exited with code 0",
        ),
        (
            Signals(returncode=0, pids_refused=7, pids_max=64),
            Verdict.PASSED,
            "the E2E passed within its limits; the pids limit (64) refused 7 fork(s)",
        ),
        (
            Signals(returncode=0, pids_refused=3),
            Verdict.PASSED,
            "the E2E passed within its limits; the pids limit refused 3 fork(s)",
        ),
        (Signals(returncode=0), Verdict.PASSED, "the E2E passed within its limits"),
        (
            Signals(setup_error="cannot create the cgroup", returncode=-9, signal="SIGKILL",
                    oom_kills=1, timed_out=True, interrupted="SIGTERM"),
            Verdict.ERROR,
            "cannot create the cgroup",
        ),
        (
            Signals(interrupted="SIGTERM", timed_out=True, returncode=-9, signal="SIGKILL"),
            Verdict.KILLED,
            "qualify was interrupted by SIGTERM; the E2E was stopped",
        ),
        (
            Signals(timed_out=True, returncode=-9, signal="SIGKILL", oom_kills=1),
            Verdict.TIMEOUT,
            "the E2E exceeded its timeout and was stopped",
        ),
        (
            Signals(returncode=137, oom_kills=1, cap_reached=True),
            Verdict.OOM_KILLED,
            "the memory cap was hit: 1 OOM kill(s) in the run's cgroup",
        ),
        (
            Signals(returncode=1, oom_kills=2, cap_reached=False),
            Verdict.OOM_KILLED,
            "the host ran out of memory, not the cap: the kernel's global OOM killer killed 2 "
            "process(es) of the run",
        ),
        (
            Signals(returncode=1, tests_failed=1, cuda_oom=True, cuda_oom_kind="fragmentation"),
            Verdict.CUDA_OOM,
            "the E2E ran out of GPU memory (fragmentation) (torch.OutOfMemoryError)",
        ),
        (
            Signals(returncode=0, tests_failed=1, cuda_oom=True),
            Verdict.CUDA_OOM,
            "the E2E ran out of GPU memory (torch.OutOfMemoryError)",
        ),
        # A CUDA OOM the E2E handled (it passed) is not what the run died of.
        (Signals(returncode=0, cuda_oom=True), Verdict.PASSED, "the E2E passed within its limits"),
        (
            Signals(returncode=1, tests_failed=3),
            Verdict.FAILED,
            "3 test(s) failed; the E2E exited with code 1",
        ),
        (
            Signals(returncode=0, parity_passed=False, parity_reason="7/10 exact, 9 required"),
            Verdict.PARITY_FAILED,
            "7/10 exact, 9 required",
        ),
        (
            Signals(returncode=0, parity_passed=False),
            Verdict.PARITY_FAILED,
            "the parity gate was not met",
        ),
        (
            Signals(returncode=0, parity_passed=True, parity_reason="10/10 exact"),
            Verdict.PASSED,
            "the E2E passed within its limits",
        ),
    ],
)  # fmt: skip
def test_each_rung(found: Signals, verdict: Verdict, reason: str) -> None:
    assert decide(found) == (verdict, reason)


EXCEPTIONS = {
    "a plain raise": (
        "import pytest\nraise FileNotFoundError(2, 'No such file or directory', '/proc/x')",
        "FileNotFoundError: [Errno 2] No such file or directory: '/proc/x'",
    ),
    "a chained one": (
        "try:\n    {}['k']\nexcept KeyError:\n    raise RuntimeError('while handling')",
        "RuntimeError: while handling",
    ),
    "a message of two lines": ("raise ValueError('first\\nsecond')", "ValueError: first"),
    "a syntax error": ("exec('1 +')", "SyntaxError: invalid syntax"),
    "more output after it": (
        "import traceback, sys\ntry:\n    1 / 0\nexcept ZeroDivisionError:\n"
        "    traceback.print_exc()\nfor n in range(8):\n    print('later', n, file=sys.stderr)\n"
        "sys.exit(1)",
        None,
    ),
    "an exit without one": ("import sys; print('bye', file=sys.stderr); sys.exit(3)", None),
    "an exception group": ("raise ExceptionGroup('two', [ValueError('a'), KeyError('b')])", None),
}


@pytest.mark.parametrize("case", sorted(EXCEPTIONS))
def test_the_exception_a_python_process_ended_with_is_read_from_its_stderr(case: str) -> None:
    """From what a real interpreter wrote to stderr: the last traceback's exception line when
    the output ends with it; nothing when more followed, when there is no traceback, or for an
    exception group (whose lines are all indented)."""
    import subprocess
    import sys

    from qualify.judge.judgement import exception_at_end

    source, expected = EXCEPTIONS[case]
    process = subprocess.run(
        [sys.executable, "-c", source], capture_output=True, text=True, check=False, timeout=60
    )
    assert process.returncode != 0
    assert exception_at_end(process.stderr) == expected


def test_the_exception_is_read_from_a_tail_that_lost_the_tracebacks_first_line() -> None:
    """A deep traceback (pytest's end of session through pluggy's wrappers is one) is longer
    than the tail of stderr the judge reads: its frames still say what it is. A tail with
    indented lines that are not frames says nothing."""
    import subprocess
    import sys

    from qualify.judge.judgement import exception_at_end

    source = (
        "def down(n):\n    if n == 0:\n        raise OSError(30, 'Read-only file system', '/x')\n"
        "    down(n - 1)\ndown(80)"
    )
    process = subprocess.run(
        [sys.executable, "-c", source], capture_output=True, text=True, check=False, timeout=60
    )
    tail = process.stderr.split("\n", 3)[3]  # cut inside the frames, as a tail of a log is
    assert "Traceback" not in tail and tail.startswith("  File ")
    assert exception_at_end(tail) == "OSError: [Errno 30] Read-only file system: '/x'"
    assert exception_at_end("collected 3 items\n    indented output\nDone: 3 passed\n") is None
