"""The one Verdict enum and the exit code each verdict maps to."""

from __future__ import annotations

import enum


class Verdict(enum.Enum):
    """How a run ended; decided once, from every signal, by ``qualify.diagnose``."""

    PASSED = "PASSED"
    FAILED = "FAILED"
    PARITY_FAILED = "PARITY_FAILED"
    OOM_KILLED = "OOM_KILLED"
    CUDA_OOM = "CUDA_OOM"
    KILLED = "KILLED"
    TIMEOUT = "TIMEOUT"
    ERROR = "ERROR"

    @property
    def exit_code(self) -> int:
        """0 passed, 1 tests or parity failed, 3 resources or a signal, 4 toolkit error."""
        return _EXIT_CODES[self]

    @property
    def is_resource(self) -> bool:
        """True when the run died of memory, time or a signal rather than a test result."""
        return self.exit_code == EXIT_RESOURCE


EXIT_PASSED = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_RESOURCE = 3
EXIT_ERROR = 4
EXIT_PIPE_CLOSED = 141
"""stdout's reader went away before a command other than ``run`` had printed everything (128 +
SIGPIPE, what a process the signal ends gives); ``run`` still exits with its verdict's code."""

_EXIT_CODES = {
    Verdict.PASSED: EXIT_PASSED,
    Verdict.FAILED: EXIT_FAILED,
    Verdict.PARITY_FAILED: EXIT_FAILED,
    Verdict.OOM_KILLED: EXIT_RESOURCE,
    Verdict.CUDA_OOM: EXIT_RESOURCE,
    Verdict.KILLED: EXIT_RESOURCE,
    Verdict.TIMEOUT: EXIT_RESOURCE,
    Verdict.ERROR: EXIT_ERROR,
}

PROVISIONAL_REASON = "qualify did not finish (it was killed before it could write its report)"
"""The reason in the reports written before the E2E ends: what remains when qualify dies."""
