"""The verdict ladder: the causes a run can end of, most fundamental first, and the one
decision over every signal of a run that climbs it.

``Cause`` is the ladder, in order; ``decide`` reads it for a run qualify ran itself, and
``qualify.triage`` reads the same ladder for any artifacts it is given (each side knows what
evidence proves each rung; neither orders the rungs on its own).
"""

from __future__ import annotations

import enum
from collections.abc import Callable

from qualify.records import frozen_record
from qualify.verdict import Verdict


class Cause(enum.Enum):
    """Why a run ended. Declaration order is the ladder: the first cause with evidence wins."""

    TOOLKIT = "the toolkit or the sandbox failed"
    INTERRUPTED = "qualify itself was interrupted and stopped the E2E"
    TIMEOUT = "the E2E ran past its timeout"
    HOST_OOM = "the memory cap was hit: the kernel OOM-killed a process"
    GPU_OOM = "the E2E ran out of GPU memory"
    SIGNAL = "a process was killed by a signal with no OOM evidence"
    CRASH = "a test process crashed and nothing says why"
    TESTS = "tests failed"
    PARITY = "the parity gate was not met"
    PASSED = "the E2E passed"

    @property
    def verdict(self) -> Verdict:
        """The verdict of a run that ended of this cause."""
        return _VERDICTS[self]


CRASH_SIGNALS = frozenset({"SIGSEGV", "SIGABRT", "SIGBUS", "SIGILL", "SIGFPE", "SIGSYS", "SIGTRAP"})
"""Signals a process raises against itself when it crashes (a fault, an abort, a trap)."""

_VERDICTS = {
    Cause.TOOLKIT: Verdict.ERROR,
    Cause.INTERRUPTED: Verdict.KILLED,
    Cause.TIMEOUT: Verdict.TIMEOUT,
    Cause.HOST_OOM: Verdict.OOM_KILLED,
    Cause.GPU_OOM: Verdict.CUDA_OOM,
    Cause.SIGNAL: Verdict.KILLED,
    Cause.CRASH: Verdict.FAILED,
    Cause.TESTS: Verdict.FAILED,
    Cause.PARITY: Verdict.PARITY_FAILED,
    Cause.PASSED: Verdict.PASSED,
}
LADDER: tuple[Cause, ...] = tuple(Cause)


@frozen_record
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
    signal: str | None = None
    """The signal that ended the E2E's root process (None: it exited with ``returncode``)."""
    incomplete: str | None = None
    """Why pytest's run is not complete (a test was running, collected tests never ran, the
    session never finished), when the plugin saw a collection."""
    cap_reached: bool | None = None
    """Whether usage ever reached the cap (None: unknown); OOM kills without it are the host's."""
    host_memory_bytes: int | None = None
    """The host's memory, when the cap asked for is larger (the cap cannot bind)."""
    pids_refused: int = 0
    """Forks the pids limit refused over the run."""
    pids_max: int | None = None


def _toolkit(found: Signals) -> str | None:
    return found.setup_error


def _interrupted(found: Signals) -> str | None:
    if found.interrupted:
        return f"qualify was interrupted by {found.interrupted}; the E2E was stopped"
    return None


def _timeout(found: Signals) -> str | None:
    return "the E2E exceeded its timeout and was stopped" if found.timed_out else None


def _host_oom(found: Signals) -> str | None:
    if not found.oom_kills:
        return None
    ended = f", the E2E ended by {found.signal}" if found.signal else ""
    if found.cap_reached is False:
        host = (
            f" (the cap is larger than the host's {found.host_memory_bytes} bytes: it cannot bind)"
            if found.host_memory_bytes
            else ""
        )
        return (
            f"the host ran out of memory, not the cap: the kernel's global OOM killer killed "
            f"{found.oom_kills} process(es) of the run{host}{ended}"
        )
    return f"the memory cap was hit: {found.oom_kills} OOM kill(s) in the run's cgroup{ended}"


def _gpu_oom(found: Signals) -> str | None:
    if not (found.cuda_oom and (found.returncode or found.tests_failed)):
        return None
    kind = f" ({found.cuda_oom_kind})" if found.cuda_oom_kind else ""
    return f"the E2E ran out of GPU memory{kind} (torch.OutOfMemoryError)"


def _signal(found: Signals) -> str | None:
    if found.signal is None or found.signal in CRASH_SIGNALS:
        return None
    return f"the E2E was killed by {found.signal} with no OOM kill recorded"


def _crash(found: Signals) -> str | None:
    if found.signal not in CRASH_SIGNALS:
        return None
    return f"the E2E crashed: its root process died of {found.signal} (not a resource death)"


def _tests(found: Signals) -> str | None:
    if found.incomplete:
        code = found.returncode
        return f"pytest did not finish: {found.incomplete}; the E2E exited with code {code}"
    if not (found.returncode or found.tests_failed):
        return None
    code = found.returncode
    if found.tests_failed:
        return f"{found.tests_failed} test(s) failed; the E2E exited with code {code}"
    if found.session_exitstatus == 0:  # a command after pytest, or pytest's own exit, failed
        return f"pytest passed, but the E2E exited with code {code}"
    return f"tests failed; the E2E exited with code {code}"


def _parity(found: Signals) -> str | None:
    if found.parity_passed is not False:
        return None
    return found.parity_reason or "the parity gate was not met"


def _passed(found: Signals) -> str | None:
    return "the E2E passed within its limits"


_RUNGS: dict[Cause, Callable[[Signals], str | None]] = {
    Cause.TOOLKIT: _toolkit,
    Cause.INTERRUPTED: _interrupted,
    Cause.TIMEOUT: _timeout,
    Cause.HOST_OOM: _host_oom,
    Cause.GPU_OOM: _gpu_oom,
    Cause.SIGNAL: _signal,
    Cause.CRASH: _crash,
    Cause.TESTS: _tests,
    Cause.PARITY: _parity,
    Cause.PASSED: _passed,
}


def decide(found: Signals) -> tuple[Verdict, str]:
    """The verdict and its one-line reason: the first rung of the ladder the signals prove."""
    for cause in LADDER:
        reason = _RUNGS[cause](found)
        if reason is not None:
            if found.pids_refused:
                limit = f" ({found.pids_max})" if found.pids_max is not None else ""
                reason += f"; the pids limit{limit} refused {found.pids_refused} fork(s)"
            return cause.verdict, reason
    raise AssertionError("the PASSED rung always decides")  # pragma: no cover, no mutate
