"""RunSpec: everything a run needs, decided and validated before anything is written."""

from __future__ import annotations

import math
import os
import shutil
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import harness
from harness import contract
from harness._options import env_name, parse_like
from qualify.errors import UsageError
from qualify.plan.commit import CommitInfo
from qualify.plan.families import Family, OptionValue
from qualify.plan.limits import Limits
from qualify.plan.option_schema import check_value
from qualify.records import frozen_record

if TYPE_CHECKING:  # loaded when a run asks for a container, a GPU budget
    from qualify.plan.docker import DockerOptions
    from qualify.plan.mps import GpuBudgetPlan

HARNESS_SOURCE = Path(harness.__file__).resolve().parent
"""The installed harness package, copied into each run directory (``stage_harness``)."""
HARNESS_ROOT = HARNESS_SOURCE.parent
# --- GPU: the directory holding harness's sitecustomize (torch hook, see harness/_gpu.py)
HARNESS_SITE = HARNESS_ROOT / "harness" / "_site"
ENV_GPU_BUDGET = contract.ENV_GPU_BUDGET
ENV_GPU_BUDGET_MODE = contract.ENV_GPU_BUDGET_MODE
ENV_CUDA_HISTORY = contract.ENV_CUDA_HISTORY
# --- end GPU
MIN_MEMORY = 1 << 20
ALLOC_VARIABLES = ("PYTORCH_ALLOC_CONF", "PYTORCH_CUDA_ALLOC_CONF")


@frozen_record
class AllocatorPolicy:
    """The PyTorch allocator setting the sandbox gets, and why."""

    variable: str | None = None
    value: str | None = None
    caller_kept: bool = False
    """True when the caller had set one of the variables (then qualify changes nothing)."""


@frozen_record
class RunSpec:
    """A validated run: frozen before the sandbox starts."""

    run_id: str
    family: Family
    profile: str
    """Profile name, or "custom" when only --mem (or the family default) set the cap."""
    backend: str
    limits: Limits
    argv: tuple[str, ...]
    workdir: Path
    env: Mapping[str, str]
    options: Mapping[str, OptionValue]
    timeout_s: float
    grace_s: float
    sample_interval_s: float
    run_dir: Path
    commit: CommitInfo
    repo: Path
    allocator: AllocatorPolicy
    command_line: tuple[str, ...]
    """The qualify command as typed (argv), for the audit and reproduction."""
    junit_flavour: str = "xunit2"
    docker: DockerOptions | None = None
    """The container asked for with ``--image`` (None: no docker)."""
    gpu_budget: GpuBudgetPlan | None = None
    """The GPU budget and how it is enforced (None: no budget)."""
    family_outside_repo: bool = False
    """The family's directory is not part of the qualified repository (``--families-dir``
    elsewhere, or bundled with qualify): its commit does not pin it, its content hash does."""
    family_content_sha256: str | None = None
    env_withheld: tuple[str, ...] = ()
    """Secret variables of qualify's environment kept from the E2E (names only)."""
    env_passed: tuple[str, ...] = ()
    """Secret variables passed to the E2E by name (``pass_env``, ``--pass-env``)."""
    """``content_hash`` of the family's directory when it is outside the repository."""


def harness_root(run_dir: Path) -> Path:
    """The directory the sandbox's PYTHONPATH names: a copy of the harness package and nothing
    else (an installed qualify's own directory is site-packages, whose packages must not
    shadow the family's, least of all inside a container with its own Python)."""
    return run_dir / contract.HARNESS_DIR


def new_run_id() -> str:
    """Sortable and unique: UTC time plus random hex."""
    return time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()) + "-" + os.urandom(3).hex()


def merge_options(family: Family, overrides: Mapping[str, str]) -> dict[str, OptionValue]:
    """Family defaults overridden by ``--set name=value`` (typed like the default)."""
    options: dict[str, OptionValue] = dict(family.options)
    for name, raw in overrides.items():
        if name not in options:
            valid = ", ".join(sorted(options)) or "none"
            raise UsageError(
                f"--set {name}: family {family.name} has no such option (valid: {valid})"
            )
        try:
            options[name] = parse_like(name, raw, options[name])
        except ValueError as exc:
            raise UsageError(f"--set {exc}") from None
        value = options[name]
        if isinstance(value, float) and not math.isfinite(value):
            raise UsageError(f"--set option {name}={raw!r} is not valid: expected a finite number")
        check_value(name, value, family.option_values)
    return options


def resolve_argv(
    command: tuple[str, ...], path: str | None, in_image: bool = False, workdir: Path | None = None
) -> tuple[str, ...]:
    """argv with argv[0] resolved; "python" means the interpreter qualify runs under.

    A command with a ``/`` is a path (relative to ``workdir``, the E2E's working directory):
    it must be an executable file. ``in_image``: the command runs in a container image with
    its own PATH and Python, so it is passed unchanged.
    """
    if in_image:
        return command
    first = command[0]
    if first in ("python", "python3"):
        return (sys.executable, *command[1:])
    if "/" in first:
        _check_executable(first, workdir)
        return command
    resolved = shutil.which(first, path=path)
    if resolved is None:
        raise UsageError(f"family command {first!r} is not on PATH")
    return (resolved, *command[1:])


def _check_executable(command: str, workdir: Path | None) -> None:
    """A command given as a path must name an executable file (checked before the run, so
    a typo is bad input, not an ERROR run)."""
    target = Path(command) if workdir is None else workdir / command
    if not target.exists():
        where = "" if Path(command).is_absolute() or workdir is None else f" (in {workdir})"
        raise UsageError(
            f"family command {command!r} does not exist{where}: [e2e] command must name an "
            "executable file or a program on PATH"
        )
    if not target.is_file() or not os.access(target, os.X_OK):
        raise UsageError(f"family command {command!r} is not an executable file")


def allocator_policy(family: Family, environ: Mapping[str, str]) -> AllocatorPolicy:
    """expandable_segments only when the family asks and the caller set neither variable."""
    for variable in ALLOC_VARIABLES:
        if variable in environ:
            return AllocatorPolicy(variable, environ[variable], caller_kept=True)
    if family.expandable_segments:
        return AllocatorPolicy("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True", False)
    return AllocatorPolicy(None, None, caller_kept=False)


def sandbox_env(
    *,
    base: Mapping[str, str],
    family: Family,
    options: Mapping[str, OptionValue],
    run_dir: Path,
    run_id: str,
    allocator: AllocatorPolicy,
    gpu_budget: GpuBudgetPlan | None = None,
    cuda_history: bool = False,
) -> dict[str, str]:
    """The E2E's environment: the caller's, the family's, and the harness plumbing.

    ``gpu_budget`` (``--gpu-mem``) becomes the per-process budget the harness applies (torch
    mode) or records (mps mode: the MPS limit variable is set here) when CUDA initializes;
    ``cuda_history`` (``--cuda-history``) records the allocator's history and dumps a
    snapshot on a CUDA OOM.
    """
    env = dict(base)
    # A coverage run of qualify itself measures qualify, never the E2E under its cap (the
    # tracer would cost the E2E memory and time the cap and the timeout are not sized for).
    for name in ("COVERAGE_PROCESS_CONFIG", "COVERAGE_PROCESS_START"):
        env.pop(name, None)
    env.update(family.env)
    root = harness_root(run_dir)
    paths = (str(root), str(root / "harness" / "_site"), env.get("PYTHONPATH"))
    env["PYTHONPATH"] = os.pathsep.join(p for p in paths if p)
    env["PYTHONUNBUFFERED"] = "1"
    plugins = [p for p in env.get("PYTEST_PLUGINS", "").split(",") if p]
    if "harness.pytest_plugin" not in plugins:
        plugins.append("harness.pytest_plugin")
    env["PYTEST_PLUGINS"] = ",".join(plugins)
    addopts = "-p no:cacheprovider"  # (no --junitxml: the plugin's events make the JUnit)
    env["PYTEST_ADDOPTS"] = " ".join(p for p in (env.get("PYTEST_ADDOPTS"), addopts) if p)
    env.update(
        {
            contract.ENV_RUN_DIR: str(run_dir),
            contract.ENV_RUN_ID: run_id,
            contract.ENV_FAMILY: family.name,
            contract.ENV_EVENTS: str(run_dir / contract.EVENTS),
            contract.ENV_PARITY: str(run_dir / contract.PARITY),
            contract.ENV_PHASE_ACK: str(run_dir / contract.PHASE_ACK),
        }
    )
    for name, value in options.items():
        env[env_name(name)] = str(value).lower() if isinstance(value, bool) else str(value)
    if allocator.variable and not allocator.caller_kept and allocator.value:
        env[allocator.variable] = allocator.value
    env.update(gpu_env(gpu_budget, cuda_history))
    return env


# --- GPU
def gpu_env(plan: GpuBudgetPlan | None, cuda_history: bool) -> dict[str, str]:
    """The variables the harness's GPU hook reads (nothing set: the hook only observes), and
    in mps mode the MPS limit the driver enforces."""
    env: dict[str, str] = {}
    if plan is not None:
        env[ENV_GPU_BUDGET] = str(plan.budget_bytes)
        env[ENV_GPU_BUDGET_MODE] = plan.mode
        env.update(plan.env)
    if cuda_history:
        env[ENV_CUDA_HISTORY] = "1"
    return env


# --- end GPU


def check_memory(memory_bytes: int, what: str) -> int:
    """A cap below 1 MiB cannot even start an interpreter: refuse it as bad input."""
    if memory_bytes < MIN_MEMORY:
        raise UsageError(f"{what} {memory_bytes} bytes is too small: at least 1MiB")
    return memory_bytes
