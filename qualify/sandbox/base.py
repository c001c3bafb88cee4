"""What every sandbox backend provides: limits asked and in effect, a probe, a teardown."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from qualify.plan.limits import Limits
from qualify.records import frozen_record

if TYPE_CHECKING:  # loaded when a run asks for a container
    from qualify.plan.docker import DockerOptions


@frozen_record
class SandboxInfo:
    """How the run is confined, as read back from the kernel after setup."""

    backend: str
    """"cgroup-v1", "cgroup-v2", "docker" or "none"."""
    capped: bool
    """False only for ``--backend none``: every report says the run was uncapped."""
    cgroup: str | None
    """The run's cgroup path inside the hierarchy (not a host path)."""
    in_effect: Limits
    notes: tuple[str, ...] = ()
    limits_locked: bool = False
    """The E2E cannot write its limits (a container's read-only cgroup file system; on a cgroup
    backend, cgroup file systems remounted read-only in the E2E's mount namespace)."""


@frozen_record
class StopReport:
    """What stopping a sandbox found and did."""

    killed: tuple[tuple[int, str], ...] = ()
    """(pid, name) of processes still running when the stop began, the first few."""
    killed_count: int = 0
    """How many processes were still running when the stop began (all were killed)."""
    problems: tuple[str, ...] = ()


@frozen_record
class SandboxRequest:
    """What a backend's ``create`` needs to build its sandbox for one run."""

    run_id: str
    docker: DockerOptions | None = None
    """The container asked for (docker backend)."""
    family_dir: Path | None = None
    harness_root: Path | None = None
    """The directory holding the harness copy the sandbox imports."""
    reason: str | None = None
    """Why ``--backend auto`` chose this backend (recorded in the audit's notes)."""


class Probe(Protocol):
    """Cheap readings of the confined processes, called from the monitor thread."""

    def usage_bytes(self) -> int | None:
        """Memory charged now."""

    def watermark_bytes(self) -> int | None:
        """The kernel's high-water mark since the last reset (None: not available)."""

    def reset_watermark(self) -> bool:
        """Reset the high-water mark to current usage; False when the kernel cannot."""

    def oom_kills(self) -> int | None:
        """OOM kills charged to the sandbox so far (None: no counter)."""

    def memory_breakdown(self) -> dict[str, int]:
        """anon and file bytes of the sandbox."""

    def pids(self) -> list[int]:
        """Processes in the sandbox."""

    def pids_refused(self) -> int | None:
        """Forks the pids limit refused so far (None: no pids controller to ask)."""

    def limit_hits(self) -> int | None:
        """How often usage reached the memory cap so far (None: unknown)."""

    def close(self) -> None:
        """Release descriptors held for readings."""


class Sandbox(Protocol):
    """One backend: set up limits, wrap the command, observe, and always tear down."""

    name: str

    def prepare(self, requested: Limits) -> SandboxInfo:
        """Create the confinement and read the limits back; raises SandboxError."""

    def wrap(self, argv: Sequence[str]) -> list[str]:
        """argv that enters the confinement before executing ``argv``."""

    def attach(self, pid: int) -> None:
        """Called with the child's pid right after it was started."""

    def probe(self) -> Probe:
        """The probe for this run's processes."""

    def kill_all(self, signal_number: int) -> int:
        """Send a signal to every process in the sandbox; returns how many were signalled."""

    def cgroup_dirs(self) -> list[Path]:
        """The run's cgroup directories on the host (empty: none qualify manages itself)."""

    def stop(self, group: int | None = None) -> StopReport:
        """Send every process of the sandbox SIGKILL (``group``: a process group to kill first,
        in one call) without waiting for the kernel to tear them down (``teardown`` waits); the
        confinement stays, so its counters can still be read. Never raises."""

    def teardown(self) -> list[str]:
        """Kill anything left and remove the confinement; returns problems, never raises."""


class Child(Protocol):
    """The started E2E as execute() sees it: a Popen, or a container that behaves like one."""

    @property
    def returncode(self) -> int | None:
        """Exit code once ended (negative signal for a Popen, 128+signal for a container)."""

    def poll(self) -> int | None:
        """The exit code, or None while running."""

    def wait(self, timeout: float | None = None) -> int | None:
        """Wait for the end; raises subprocess.TimeoutExpired after ``timeout``."""

    def kill(self) -> None:
        """SIGKILL the child."""


@runtime_checkable
class StartsItself(Protocol):
    """A backend that starts the E2E itself (docker) instead of Popen of ``wrap(argv)``.

    Its confinement exists only once the E2E starts, so ``start`` reads the limits back and
    raises SandboxError on a mismatch; ``info()`` is the SandboxInfo read back so far.
    """

    def start(self, argv: Sequence[str], cwd: Path, env: Mapping[str, str], run_dir: Path) -> Any:
        """Start the E2E; returns a Child whose ``stdout`` / ``stderr`` are byte pipes."""

    def info(self) -> SandboxInfo | None:
        """The SandboxInfo with what was read back after start."""
