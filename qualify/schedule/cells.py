"""The cells of a family x profile matrix and what each one asks of a scheduler.

A cell's cap is what ``qualify run`` enforces inside the allocation (``--mem``, else the
profile's); the allocation itself must also hold qualify (the supervisor, its monitor and
watchdog, the batch shell and ``srun``), which lives outside the cap: the scheduler is asked
for the cap plus :data:`DEFAULT_OVERHEAD`, so the scheduler never kills qualify first and the
cap stays the limit that decides the verdict.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

from qualify.errors import UsageError
from qualify.plan.families import find_family, validate_name
from qualify.plan.profiles import find_profile
from qualify.plan.spec import check_memory
from qualify.records import frozen_record
from qualify.sizes import parse_duration, parse_size

MIB = 1 << 20
DEFAULT_OVERHEAD = 256 * MIB
"""Memory the allocation needs beyond the cap: qualify's own process (its imports are read
from disk and charged to the job), NVML on GPU hosts, and the end of a run (reports of a long
E2E). The Slurm test measures the job cgroup's usage beyond the run cgroup's on every run and
fails when it exceeds this figure."""
RESERVE_S = 120
"""Time of an allocation kept for qualify itself: setup before the E2E, the kill, the
reports and the teardown after it. With ``--time`` shorter than a family's timeout plus
this, the E2E's timeout is shortened so that qualify's TIMEOUT verdict comes before Slurm's."""


@frozen_record
class Cell:
    """One (family, profile) of the matrix, decided."""

    family: str
    profile: str
    cap_bytes: int
    """The cap ``qualify run`` enforces (``--mem``, else the profile's)."""
    gpus: int
    """GPUs the allocation asks for (``--gpus-per-task``, else the profile's count)."""
    timeout_s: float
    """The E2E's timeout in this cell (the family's, shortened to fit the time limit)."""
    shortened: bool
    """True when ``timeout_s`` is shorter than the family's own timeout."""

    @property
    def name(self) -> str:
        """``family/profile``, as the merged JUnit names its suite."""
        return f"{self.family}/{self.profile}"

    def request_bytes(self, overhead_bytes: int) -> int:
        """The allocation's memory: the cap plus qualify's overhead, in whole MiB."""
        return math.ceil((self.cap_bytes + overhead_bytes) / MIB) * MIB

    def run_args(self, out: Path, repo: Path, families_dirs: Sequence[Path]) -> list[str]:
        """Arguments of the ``qualify run`` this cell's task executes."""
        args = ["run", "--family", self.family, "--profile", self.profile]
        args += ["--mem", size_arg(self.cap_bytes), "--out", str(out), "--repo", str(repo)]
        for directory in families_dirs:
            args += ["--families-dir", str(directory)]
        if self.shortened:
            args += ["--timeout", f"{math.floor(self.timeout_s)}s"]
        return args


def size_arg(size: int) -> str:
    """A size as ``qualify run --mem`` reads it back exactly: ``2048M`` or bytes."""
    return f"{size // MIB}M" if size % MIB == 0 else str(size)


def parse_cell(text: str) -> tuple[str, str]:
    """``family/profile`` (or ``family:profile``) -> (family, profile)."""
    for separator in ("/", ":"):
        family, sep, profile = text.partition(separator)
        if sep and family and profile and separator not in profile:
            return validate_name(family.strip()), profile.strip()
    raise UsageError(f"cell {text!r} is not valid: expected family/profile (e.g. tiny/small)")


def parse_overhead(text: str | None) -> int:
    """``--overhead``: a size, 0 allowed (the allocation is then the cap alone)."""
    if text is None:
        return DEFAULT_OVERHEAD
    return parse_size(text, what="--overhead", allow_zero=True)


def parse_time(text: str | None, families_timeout_s: float) -> int:
    """``--time`` in whole seconds; by default the longest family timeout plus the reserve,
    rounded up to a minute (Slurm's granularity)."""
    if text is None:
        return math.ceil((families_timeout_s + RESERVE_S) / 60) * 60
    seconds = math.ceil(parse_duration(text, what="--time"))
    if seconds <= RESERVE_S:
        raise UsageError(
            f"--time {text!r} is not valid: qualify keeps {RESERVE_S}s of the allocation for "
            f"itself, so give more than {RESERVE_S}s (e.g. 15m)"
        )
    return seconds


def plan_cells(
    families: Sequence[str],
    profiles: Sequence[str],
    search: Sequence[Path],
    *,
    mem: str | None,
    gpus_per_task: int | None,
    time: str | None,
) -> tuple[list[Cell], int]:
    """Every (family, profile) cell, families first; and the time limit in seconds."""
    loaded = [find_family(name, search) for name in families]
    read = [find_profile(name) for name in profiles]
    cap = parse_size(mem, what="--mem") if mem is not None else None
    time_s = parse_time(time, max(family.timeout_s for family in loaded))
    cells = []
    for family in loaded:
        for profile in read:
            memory = check_memory(cap if cap is not None else profile.memory_bytes, "--mem")
            gpus = gpus_per_task
            if gpus is None:
                gpus = profile.gpu.count if profile.gpu is not None else 0
            timeout = min(family.timeout_s, float(time_s - RESERVE_S))
            cells.append(
                Cell(
                    family=family.name,
                    profile=profile.name,
                    cap_bytes=memory,
                    gpus=gpus,
                    timeout_s=timeout,
                    shortened=timeout < family.timeout_s,
                )
            )
    return cells, time_s
