"""``qualify run`` as typed (RunRequest) and its validation into a RunSpec (build_spec)."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from qualify import records
from qualify.errors import UsageError
from qualify.plan.commit import CommitInfo, commit_info, record_sha, repo_root
from qualify.plan.families import (
    Family,
    content_hash,
    default_family_dirs,
    find_family,
    missing_modules,
    validate_name,
)
from qualify.plan.limits import DEFAULT_PIDS, Limits
from qualify.plan.output import check_output_dir
from qualify.plan.secret_sources import (
    ScreenedEnv,
    from_environment,
    read_secrets_file,
    refuse_unredactable_passed,
    withhold_secrets,
)
from qualify.plan.spec import (
    MIN_MEMORY,
    RunSpec,
    allocator_policy,
    check_memory,
    merge_options,
    new_run_id,
    resolve_argv,
    sandbox_env,
)
from qualify.records import frozen_record
from qualify.sizes import parse_duration, parse_size

if TYPE_CHECKING:  # loaded when a run asks for a profile, a container, a GPU budget
    from qualify.plan.docker import DockerOptions
    from qualify.plan.mps import GpuBudgetPlan
    from qualify.plan.profiles import Profile

DEFAULT_MEMORY = "4G"
PUBLISH_LEVELS = ("internal", "public")
"""What the sanitized bundle may hold: ``public`` (no raw logs) or ``internal`` (all text)."""


class CommitSource(Protocol):
    """Where ``build_spec`` takes the work tree's top level and the commit from, instead of
    reading them itself (``repo_root``, ``commit_info``) with the same answers."""

    def root(self, path: Path | None) -> Path: ...

    def get(self, root: Path, base_ref: str | None, environ: Mapping[str, str]) -> CommitInfo: ...


@frozen_record
class RunRequest:
    """``qualify run`` as typed: the flags, unvalidated (``build_spec`` validates them)."""

    family_name: str
    mem: str | None = None
    profile_name: str | None = None
    families_dirs: Sequence[Path] = ()
    out: Path = Path("reports")
    timeout: str | None = None
    backend: str = "auto"
    repo: Path | None = None
    sets: Sequence[str] = ()
    sample_interval: str = "50ms"
    base_ref: str | None = None
    command_line: Sequence[str] = ()
    image: str | None = None
    shm: str | None = None
    network: str = "none"
    gpus: str | None = None
    mount_host_python: bool = False
    gpu_mem: str | None = None
    """GPU budget per process (``--gpu-mem``); a profile's ``gpu.budget`` otherwise."""
    gpu_budget_mode: str = "torch"
    """How the budget is enforced: torch (memory fraction), mps (MPS pinned limit) or auto."""
    cuda_history: bool = False
    junit_flavour: str = "xunit2"
    """xunit2 validates against the junit-10 schema; xunit1 adds file/line on testcases."""
    publish: str = "public"
    """Level of the sanitized bundle in public/: public (no raw logs) or internal."""
    secret_env: Sequence[str] = ()
    """``--secret-env``: variables whose values are redacted whatever their names."""
    secrets_file: Path | None = None
    """``--secrets-file``: more values to redact, one per line."""
    pass_env: Sequence[str] = ()
    """``--pass-env``: secret variables the E2E is given all the same."""
    quiet: bool = False
    """``--quiet``: no progress on stderr while the E2E runs."""
    base_run: Path | None = None
    """``--base-run``: a run directory or a directory of runs to compare this run with."""
    commit_prefetch: CommitSource | None = None
    """The commit already being read (``qualify.commands._overlap.CommitPrefetch``, started
    before the run's code is imported); None: read in order."""


GRACE_S = 5.0

_FLAGS = {
    "family_name": "--family",
    "profile_name": "--profile",
    "families_dirs": "--families-dir",
    "sets": "--set",
    "sample_interval": "--interval",
    "command_line": "argument",
}
"""The flag of each RunRequest field whose name is not the flag's."""


def _check_no_nul(request: RunRequest) -> None:
    """No flag may hold a NUL byte: no argument, path or environment variable can carry one
    (only a caller of the API can pass one; argv cannot)."""
    for field in records.fields(request):
        value = getattr(request, field.name)
        if isinstance(value, str | Path):
            value = [value]
        if not isinstance(value, list | tuple):
            continue  # None or a flag without a value
        for item in value:
            if isinstance(item, str | Path) and "\0" in str(item):
                flag = _FLAGS.get(field.name, "--" + field.name.replace("_", "-"))
                raise UsageError(
                    f"{flag} {str(item)!r} is not valid: it contains a NUL byte (valid: text "
                    "without NUL bytes)"
                )


def _parse_sets(sets: Sequence[str]) -> dict[str, str]:
    overrides = {}
    for item in sets:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise UsageError(f"--set {item!r} is not valid: expected NAME=VALUE")
        overrides[name.strip()] = value.strip()
    return overrides


def build_spec(request: RunRequest) -> RunSpec:
    """Validate every input and decide the run; raises UsageError before anything is written."""
    _check_no_nul(request)
    validate_name(request.family_name)
    if request.publish not in PUBLISH_LEVELS:
        valid = ", ".join(PUBLISH_LEVELS)
        raise UsageError(f"--publish {request.publish!r} is not valid (valid: {valid})")
    prefetch = request.commit_prefetch
    if prefetch is not None:
        root = prefetch.root(request.repo)
    else:
        root = repo_root(request.repo if request.repo is not None else Path.cwd())
    search = list(request.families_dirs) or default_family_dirs(root)
    family = find_family(request.family_name, search)
    profile = _profile(request.profile_name)
    if request.mem is not None:
        memory = parse_size(request.mem, what="--mem")
    elif profile is not None:
        memory = profile.memory_bytes
    else:
        memory = family.memory_bytes or parse_size(DEFAULT_MEMORY)
    check_memory(memory, "--mem")
    limits = Limits(
        memory_bytes=memory,
        swap_bytes=profile.swap_bytes if profile else 0,
        pids_max=profile.pids_max if profile else DEFAULT_PIDS,
    )
    options = merge_options(family, _parse_sets(request.sets))
    interval = parse_duration(request.sample_interval, what="--interval")
    run_id = new_run_id()
    if prefetch is not None:
        commit = prefetch.get(root, request.base_ref, os.environ)
    else:
        commit = commit_info(root, request.base_ref, os.environ)
    # Keyed by the commit under test: the PR head on pull_request events, not the merge commit.
    profile_label = profile.name if profile else "custom"
    run_dir = request.out / record_sha(commit) / family.name / profile_label / run_id
    check_output_dir(request.out, "--out", below=run_dir.parent)
    allocator = allocator_policy(family, os.environ)
    screened = _screened_env(request, family)
    docker = _docker_options(request)
    gpu_budget = _gpu_plan(request, profile)
    if docker is not None and gpu_budget is not None and gpu_budget.daemon is not None:
        docker = records.replace(docker, mps_pipe_directory=str(gpu_budget.daemon.pipe_directory))
    outside = not family.directory.is_relative_to(root.resolve())
    in_image = docker is not None and not docker.mount_host_python
    argv = resolve_argv(
        family.command, os.environ.get("PATH"), in_image=in_image, workdir=family.workdir
    )
    if not in_image and argv[0] == sys.executable:
        _check_requires(family)
    return RunSpec(
        run_id=run_id,
        family=family,
        profile=profile.name if profile else "custom",
        backend=request.backend,
        limits=limits,
        argv=argv,
        workdir=family.workdir,
        env=sandbox_env(
            base=screened.env,
            family=family,
            options=options,
            run_dir=run_dir.resolve(),
            run_id=run_id,
            allocator=allocator,
            gpu_budget=gpu_budget,
            cuda_history=request.cuda_history,
        ),
        options=options,
        timeout_s=(
            parse_duration(request.timeout, what="--timeout")
            if request.timeout
            else family.timeout_s
        ),
        grace_s=GRACE_S,
        sample_interval_s=interval,
        run_dir=run_dir.resolve(),
        commit=commit,
        repo=root,
        allocator=allocator,
        command_line=tuple(request.command_line),
        junit_flavour=request.junit_flavour,
        docker=docker,
        gpu_budget=gpu_budget,
        family_outside_repo=outside,
        family_content_sha256=content_hash(family.directory) if outside else None,
        env_withheld=screened.withheld,
        env_passed=screened.passed,
    )


def _screened_env(request: RunRequest, family: Family) -> ScreenedEnv:
    """qualify's environment without the secrets the E2E was not given by name; the explicit
    sources are read (and a value that cannot be a secret refused) before anything runs."""
    from_environment(os.environ, request.secret_env)
    refuse_unredactable_passed(os.environ, by_caller=request.pass_env, by_family=family.pass_env)
    file_values = read_secrets_file(request.secrets_file) if request.secrets_file else []
    return withhold_secrets(
        os.environ,
        secret_names=set(request.secret_env),
        secret_values={secret.value for secret in file_values},
        pass_env={*family.pass_env, *request.pass_env},
    )


def _profile(name: str | None) -> Profile | None:
    """``--profile NAME`` read (None without one)."""
    if not name:
        return None
    from qualify.plan.profiles import find_profile

    return find_profile(name)


def _check_requires(family: Family) -> None:
    """The family's ``[requires] modules`` must import in qualify's interpreter, which runs it."""
    missing = missing_modules(family)
    if missing:
        hint = family.install_hint or "install them into this Python environment"
        raise UsageError(
            f"family {family.name} needs the Python modules {', '.join(missing)}, which "
            f"{sys.executable} cannot import: {hint}"
        )


def _docker_options(request: RunRequest) -> DockerOptions | None:
    """The docker flags, validated; None when no container was asked for."""
    image, backend, network = request.image, request.backend, request.network
    if image is None:
        if backend == "docker":
            raise UsageError("--backend docker needs --image IMAGE (an image in the engine)")
        given = [
            flag for flag, value in (("--shm", request.shm), ("--gpus", request.gpus)) if value
        ]
        given += ["--mount-host-python"] if request.mount_host_python else []
        given += ["--network"] if network != "none" else []
        if given:
            raise UsageError(f"{', '.join(given)} only apply with --image IMAGE")
        return None
    if backend not in ("auto", "docker"):
        raise UsageError(f"--image only applies to --backend docker or auto, not {backend}")
    if not network:
        raise UsageError("--network '' is not valid: name a docker network (bridge, host)")
    from qualify.plan.docker import DEFAULT_SHM, DockerOptions, device_requests, host_gpu_count

    device_requests(request.gpus, host_gpu_count())
    return DockerOptions(
        image=image,
        shm_bytes=parse_size(request.shm, what="--shm") if request.shm else DEFAULT_SHM,
        network=network,
        gpus=request.gpus,
        mount_host_python=request.mount_host_python,
    )


def _gpu_budget(gpu_mem: str | None, profile: Profile | None) -> tuple[int | None, str]:
    """--gpu-mem, else the profile's emulation budget (l4-budget), else none; and its source."""
    if gpu_mem is not None:
        return parse_size(gpu_mem, what="--gpu-mem"), f"--gpu-mem {gpu_mem}"
    if profile is not None and profile.gpu is not None and profile.gpu.budget_bytes:
        return profile.gpu.budget_bytes, f"profile {profile.name} gpu.budget"
    return None, ""


def _gpu_plan(
    request: RunRequest, profile: Profile | None, nvml: Any = None
) -> GpuBudgetPlan | None:
    """The GPU budget and its mode, checked against the host's devices where NVML reads them."""
    budget, source = _gpu_budget(request.gpu_mem, profile)
    mode = request.gpu_budget_mode
    if budget is None:
        if mode != "torch":
            raise UsageError(
                f"--gpu-budget-mode {mode} needs a GPU budget: --gpu-mem SIZE or a profile "
                "with gpu.budget"
            )
        return None
    if budget < MIN_MEMORY:
        raise UsageError(f"{source} ({budget} bytes) is too small: at least 1MiB")
    from qualify.nvml import device_totals
    from qualify.plan.mps import plan_budget

    totals, _ = device_totals(nvml)
    for index, total in enumerate(totals):
        if budget > total:
            raise UsageError(
                f"{source} ({budget} bytes) is larger than GPU {index} ({total} bytes as NVML "
                f"reads it): valid is at most {total} bytes"
            )
    return plan_budget(mode, budget, os.environ, len(totals) or None)
