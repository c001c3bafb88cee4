"""``qualify run``: a family's E2E under a real memory cap, judged and reported."""

from __future__ import annotations

import dataclasses
import os
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from qualify.errors import UsageError
from qualify.execute import Interrupts, execute
from qualify.families import default_family_dirs, find_family, validate_name
from qualify.gitinfo import commit_info, record_sha, repo_root
from qualify.gpu import device_totals
from qualify.judge import display_path, judge
from qualify.mps import GpuBudgetPlan, plan_budget
from qualify.profiles import DEFAULT_PIDS, Profile, find_profile
from qualify.report.atomic import write_json_atomic
from qualify.report.audit import build_audit, iso, provisional_audit
from qualify.report.github import publish_github
from qualify.report.html import write_html_report
from qualify.report.junit import write_junit
from qualify.report.publish import LEVELS, PublishResult, publish_run, run_sanitizer
from qualify.report.summary import print_summary
from qualify.result import Execution, RunResult
from qualify.sandbox import Limits, select_sandbox
from qualify.sandbox.docker import DEFAULT_SHM, DockerOptions, device_requests, host_gpu_count
from qualify.sandbox.layout import current_layout
from qualify.sizes import parse_duration, parse_size
from qualify.spec import (
    MIN_MEMORY,
    RunSpec,
    allocator_policy,
    check_memory,
    merge_options,
    new_run_id,
    resolve_argv,
    sandbox_env,
)
from qualify.testcases import JUnitCase
from qualify.verdict import EXIT_USAGE

DEFAULT_MEMORY = "4G"


@dataclasses.dataclass(frozen=True)
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


GRACE_S = 5.0


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
    validate_name(request.family_name)
    if request.publish not in LEVELS:
        raise UsageError(f"--publish {request.publish!r} is not valid (valid: {', '.join(LEVELS)})")
    root = repo_root(request.repo if request.repo is not None else Path.cwd())
    search = list(request.families_dirs) or default_family_dirs(root)
    family = find_family(request.family_name, search)
    profile = find_profile(request.profile_name) if request.profile_name else None
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
    commit = commit_info(root, request.base_ref, os.environ)
    # Keyed by the commit under test: the PR head on pull_request events, not the merge commit.
    profile_label = profile.name if profile else "custom"
    run_dir = request.out / record_sha(commit) / family.name / profile_label / run_id
    allocator = allocator_policy(family, os.environ)
    docker = _docker_options(request)
    gpu_budget = _gpu_plan(request, profile)
    if docker is not None and gpu_budget is not None and gpu_budget.daemon is not None:
        docker = dataclasses.replace(
            docker, mps_pipe_directory=str(gpu_budget.daemon.pipe_directory)
        )
    return RunSpec(
        run_id=run_id,
        family=family,
        profile=profile.name if profile else "custom",
        backend=request.backend,
        limits=limits,
        argv=resolve_argv(
            family.command,
            os.environ.get("PATH"),
            in_image=docker is not None and not docker.mount_host_python,
        ),
        workdir=family.workdir,
        env=sandbox_env(
            base=os.environ,
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
    totals, _ = device_totals(nvml)
    for index, total in enumerate(totals):
        if budget > total:
            raise UsageError(
                f"{source} ({budget} bytes) is larger than GPU {index} ({total} bytes as NVML "
                f"reads it): valid is at most {total} bytes"
            )
    return plan_budget(mode, budget, os.environ, len(totals) or None)


def _properties(result: RunResult) -> dict[str, str]:
    spec, sandbox = result.spec, result.execution.sandbox
    in_effect = sandbox.in_effect.memory_bytes if sandbox else None
    return {
        "qualify.verdict": result.verdict.value,
        "qualify.reason": result.reason,
        "qualify.family": spec.family.name,
        "qualify.profile": spec.profile,
        "qualify.commit.head": spec.commit.head,
        "qualify.commit.dirty": str(spec.commit.dirty).lower(),
        "qualify.backend": sandbox.backend if sandbox else spec.backend,
        "qualify.capped": str(bool(sandbox and sandbox.capped)).lower(),
        "qualify.limit.memory_bytes": str(in_effect),
        "qualify.run_id": spec.run_id,
    }


def write_reports(result: RunResult) -> None:
    """junit.xml and audit.json, each atomically."""
    spec = result.spec
    write_junit(
        spec.run_dir / "junit.xml",
        spec.family.name,
        result.testcases,
        _properties(result),
        iso(result.execution.started_wall) or "",
        with_location=spec.junit_flavour == "xunit1",
    )
    write_json_atomic(spec.run_dir / "audit.json", build_audit(result))


def _publish(spec: RunSpec, level: str, stdout: TextIO) -> PublishResult:
    """report.html, then the sanitized public/ bundle, then (in Actions) summary and outputs."""
    try:
        write_html_report(spec.run_dir)
    except Exception:  # the page is a convenience: its failure must not cost the reports
        (spec.run_dir / "debug.log").write_text(traceback.format_exc(), encoding="utf-8")
    environ = {**os.environ, **spec.env}
    publication = publish_run(spec.run_dir, level, environ)
    if os.environ.get("GITHUB_ACTIONS") == "true":
        clean = run_sanitizer(spec.run_dir, environ).clean
        publish_github(spec.run_dir, os.environ, stdout, clean=clean)
    return publication


def _judge_or_error(spec: RunSpec, execution: Execution) -> RunResult:
    """The judged result; a bug in judging still yields reports (ERROR, traceback in debug.log)."""
    try:
        return judge(spec, execution, current_layout().version)
    except Exception as exc:
        (spec.run_dir / "debug.log").write_text(traceback.format_exc(), encoding="utf-8")
        failed = dataclasses.replace(
            execution, setup_error=f"qualify failed while judging the run: {exc!r} (see debug.log)"
        )
        return judge(spec, failed, None)


def _write_provisional(spec: RunSpec) -> None:
    message = "qualify did not finish (it was killed before it could write its report)"
    case = JUnitCase("qualify", "run", "error", 0.0, message, message, kind="ERROR")
    write_junit(spec.run_dir / "junit.xml", spec.family.name, [case], {}, "")
    write_json_atomic(
        spec.run_dir / "audit.json",
        provisional_audit(spec.run_id, spec.family.name, spec.profile, spec.commit.head),
    )


def run(request: RunRequest, stdout: TextIO = sys.stdout, stderr: TextIO = sys.stderr) -> int:
    """Run one family once; returns the verdict's exit code (2 for bad input)."""
    try:
        spec = build_spec(request)
        sandbox = select_sandbox(
            spec.backend, spec.run_id, docker=spec.docker, family_dir=spec.family.directory
        )
    except UsageError as exc:
        stderr.write(f"qualify run: error: {exc}\n")
        return EXIT_USAGE
    interrupts = Interrupts()
    with interrupts.installed():
        spec.run_dir.mkdir(parents=True, exist_ok=False)
        _write_provisional(spec)
        execution = execute(spec, sandbox, interrupts)
        if spec.backend == "auto" and execution.sandbox and spec.docker is None:
            why = f"--backend auto chose {execution.sandbox.backend}: no --image was given"
            info = dataclasses.replace(execution.sandbox, notes=(why, *execution.sandbox.notes))
            execution = dataclasses.replace(execution, sandbox=info)
        result = _judge_or_error(spec, execution)
        write_reports(result)
        publication = _publish(spec, request.publish, stdout)
    print_summary(result, stdout)
    if not publication:
        stderr.write(f"qualify run: publication failed: {publication.reason}\n")
    stdout.write(f"{display_path(spec.run_dir)}\n")
    stdout.flush()
    # A failed publication exits 4 (fail closed); the verdict itself is unchanged.
    return max(result.verdict.exit_code, publication.exit_code)
