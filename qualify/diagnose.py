"""One decision over every signal of a run: the verdict and the one-line reason for it."""

from __future__ import annotations

import dataclasses
import signal

from qualify.verdict import Verdict


@dataclasses.dataclass(frozen=True)
class Signals:
    """Everything the verdict depends on, gathered after the run."""

    setup_error: str | None = None
    """The toolkit or sandbox failed before or around the E2E (never blamed on the family)."""
    interrupted: str | None = None
    """Signal name qualify itself received (SIGINT, SIGTERM)."""
    timed_out: bool = False
    returncode: int | None = None
    oom_kills: int | None = None
    cuda_oom: bool = False
    cuda_oom_kind: str | None = None
    """CUDA OOM sub-kind: "capacity", "fragmentation" or "budget" (qualify.cuda_oom), when known."""
    tests_failed: int = 0
    session_exitstatus: int | None = None
    parity_passed: bool | None = None
    """None when the family has no parity gate."""
    parity_reason: str | None = None


def signal_name(returncode: int | None) -> str | None:
    """ "SIGKILL" for -9 (Popen) and for 137 (a shell's 128+9); None for a normal exit."""
    if returncode is None:
        return None
    number = -returncode if returncode < 0 else returncode - 128 if returncode > 128 else 0
    if number <= 0:
        return None
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def decide(found: Signals) -> tuple[Verdict, str]:
    """The verdict, most fundamental cause first: toolkit, interruption, time, memory, tests."""
    killed_by = signal_name(found.returncode)
    if found.setup_error:
        return Verdict.ERROR, found.setup_error
    if found.interrupted:
        return (
            Verdict.KILLED,
            f"qualify was interrupted by {found.interrupted}; the E2E was stopped",
        )
    if found.timed_out:
        return Verdict.TIMEOUT, "the E2E exceeded its timeout and was stopped"
    if found.oom_kills:
        return Verdict.OOM_KILLED, (
            f"the memory cap was hit: {found.oom_kills} OOM kill(s) in the run's cgroup"
            + (f", the E2E ended by {killed_by}" if killed_by else "")
        )
    if found.cuda_oom and (found.returncode or found.tests_failed):
        kind = f" ({found.cuda_oom_kind})" if found.cuda_oom_kind else ""
        return Verdict.CUDA_OOM, f"the E2E ran out of GPU memory{kind} (torch.OutOfMemoryError)"
    if killed_by:
        return Verdict.KILLED, f"the E2E was killed by {killed_by} with no OOM kill recorded"
    if found.returncode or found.tests_failed:
        detail = f"{found.tests_failed} test(s) failed" if found.tests_failed else "tests failed"
        return Verdict.FAILED, f"{detail}; the E2E exited with code {found.returncode}"
    if found.parity_passed is False:
        return Verdict.PARITY_FAILED, found.parity_reason or "the parity gate was not met"
    return Verdict.PASSED, "the E2E passed within its limits"
