"""The verdict ladder on the signals each rung reads (the runs behind them are in
test_faults.py and test_run_cgroup.py)."""

from __future__ import annotations

import pytest

from qualify.judge.ladder import LADDER, Cause, Signals, decide
from qualify.verdict import Verdict


def test_the_ladder_is_the_causes_in_declaration_order() -> None:
    assert LADDER[0] is Cause.TOOLKIT and LADDER[-1] is Cause.PASSED
    assert [cause.verdict for cause in LADDER].count(Verdict.KILLED) == 2


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
            Signals(returncode=0, incomplete="the session never finished"),
            Verdict.FAILED,
            "pytest did not finish: the session never finished; the E2E exited with code 0",
        ),
        (
            Signals(returncode=0, pids_refused=7, pids_max=64),
            Verdict.PASSED,
            "the E2E passed within its limits; the pids limit (64) refused 7 fork(s)",
        ),
    ],
)  # fmt: skip
def test_each_rung(found: Signals, verdict: Verdict, reason: str) -> None:
    assert decide(found) == (verdict, reason)
