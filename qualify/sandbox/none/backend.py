"""``--backend none``: no cap at all, labelled uncapped in every report.

Usage is the summed RSS of the child's process tree (psutil); there is no kernel watermark
and no OOM counter, so peaks come from samples.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from pathlib import Path

import psutil

from qualify.plan.limits import Limits
from qualify.sandbox.base import SandboxInfo, StopReport


class TreeProbe:
    """Readings of a process tree instead of a cgroup."""

    def __init__(self) -> None:
        self.root: psutil.Process | None = None

    def _tree(self) -> list[psutil.Process]:
        if self.root is None:
            return []
        try:
            return [self.root, *self.root.children(recursive=True)]
        except psutil.Error:
            return []

    def usage_bytes(self) -> int | None:
        """Summed RSS of the tree."""
        total = 0
        for process in self._tree():
            with contextlib.suppress(psutil.Error):
                total += process.memory_info().rss
        return total

    def watermark_bytes(self) -> int | None:
        """No kernel watermark without a cgroup."""
        return None

    def reset_watermark(self) -> bool:
        """Nothing to reset."""
        return False

    def oom_kills(self) -> int | None:
        """No OOM counter without a cgroup."""
        return None

    def memory_breakdown(self) -> dict[str, int]:
        """Not available per tree."""
        return {}

    def limit_hits(self) -> int | None:
        """No cap."""
        return None

    def pids_refused(self) -> int | None:
        """No pids controller without a cgroup."""
        return None

    def pids(self) -> list[int]:
        """Pids of the tree."""
        return [process.pid for process in self._tree()]

    def close(self) -> None:
        """Nothing held open."""


class NoSandbox:
    """Runs the E2E uncapped, as the user explicitly asked."""

    name = "none"

    def __init__(self) -> None:
        self._probe = TreeProbe()
        self.reason: str | None = None
        """Why this backend was chosen (the action's decision), the first note of the audit."""

    def prepare(self, requested: Limits) -> SandboxInfo:
        """Nothing is enforced; the report says so."""
        return SandboxInfo(
            backend=self.name,
            capped=False,
            cgroup=None,
            in_effect=Limits(None, None, None),
            notes=(
                *([self.reason] if self.reason else []),
                "UNCAPPED: --backend none enforces no memory limit",
            ),
        )

    def wrap(self, argv: Sequence[str]) -> list[str]:
        """argv unchanged."""
        return list(argv)

    def attach(self, pid: int) -> None:
        """Follow the child's process tree."""
        with contextlib.suppress(psutil.Error):
            self._probe.root = psutil.Process(pid)

    def probe(self) -> TreeProbe:
        """The tree probe."""
        return self._probe

    def kill_all(self, signal_number: int) -> int:
        """Signal the whole tree."""
        sent = 0
        for process in self._probe._tree():
            with contextlib.suppress(psutil.Error):
                process.send_signal(signal_number)
                sent += 1
        return sent

    def cgroup_dirs(self) -> list[Path]:
        """None: nothing is confined."""
        return []

    def stop(self, group: int | None = None) -> StopReport:
        """SIGKILL the tree (what is left of it; a process that left it is not seen)."""
        tree = self._probe._tree()
        killed = []
        for process in tree:
            with contextlib.suppress(psutil.Error):
                killed.append((process.pid, process.name()))
                process.kill()
        return StopReport(killed=tuple(killed[:50]), killed_count=len(killed))

    def teardown(self) -> list[str]:
        """SIGKILL whatever of the tree is left."""
        for process in self._probe._tree():
            with contextlib.suppress(psutil.Error):
                process.kill()
        return []
