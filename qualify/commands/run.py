"""``qualify run``: a family's E2E under a real memory cap, judged and reported."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from qualify.errors import UsageError
from qualify.execute import Interrupts, execute
from qualify.families import default_family_dirs, find_family, validate_name
from qualify.gitinfo import commit_info, repo_root
from qualify.judge import judge
from qualify.profiles import DEFAULT_PIDS, find_profile
from qualify.report.atomic import write_json_atomic
from qualify.report.audit import build_audit, iso, provisional_audit
from qualify.report.junit import write_junit
from qualify.report.summary import print_summary
from qualify.result import RunResult
from qualify.sandbox import Limits, select_sandbox
from qualify.sandbox.layout import current_layout
from qualify.sizes import parse_duration, parse_size
from qualify.spec import (
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
GRACE_S = 5.0


def _parse_sets(sets: Sequence[str]) -> dict[str, str]:
    overrides = {}
    for item in sets:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise UsageError(f"--set {item!r} is not valid: expected NAME=VALUE")
        overrides[name.strip()] = value.strip()
    return overrides


def build_spec(
    *,
    family_name: str,
    mem: str | None,
    profile_name: str | None,
    families_dirs: Sequence[Path],
    out: Path,
    timeout: str | None,
    backend: str,
    repo: Path | None,
    sets: Sequence[str],
    sample_interval: str,
    base_ref: str | None,
    command_line: Sequence[str],
) -> RunSpec:
    """Validate every input and decide the run; raises UsageError before anything is written."""
    validate_name(family_name)
    root = repo_root(repo if repo is not None else Path.cwd())
    search = list(families_dirs) or default_family_dirs(root)
    family = find_family(family_name, search)
    profile = find_profile(profile_name) if profile_name else None
    if mem is not None:
        memory = parse_size(mem, what="--mem")
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
    options = merge_options(family, _parse_sets(sets))
    interval = parse_duration(sample_interval, what="--interval")
    run_id = new_run_id()
    commit = commit_info(root, base_ref)
    run_dir = out / commit.head / family.name / (profile.name if profile else "custom") / run_id
    allocator = allocator_policy(family, os.environ)
    return RunSpec(
        run_id=run_id,
        family=family,
        profile=profile.name if profile else "custom",
        backend=backend,
        limits=limits,
        argv=resolve_argv(family.command, os.environ.get("PATH")),
        workdir=family.workdir,
        env=sandbox_env(
            base=os.environ,
            family=family,
            options=options,
            run_dir=run_dir.resolve(),
            run_id=run_id,
            allocator=allocator,
        ),
        options=options,
        timeout_s=parse_duration(timeout, what="--timeout") if timeout else family.timeout_s,
        grace_s=GRACE_S,
        sample_interval_s=interval,
        run_dir=run_dir.resolve(),
        commit=commit,
        repo=root,
        allocator=allocator,
        command_line=tuple(command_line),
    )


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
    )
    write_json_atomic(spec.run_dir / "audit.json", build_audit(result))


def _write_provisional(spec: RunSpec) -> None:
    message = "qualify did not finish (it was killed before it could write its report)"
    case = JUnitCase("qualify", "run", "error", 0.0, message, message, kind="ERROR")
    write_junit(spec.run_dir / "junit.xml", spec.family.name, [case], {}, "")
    write_json_atomic(
        spec.run_dir / "audit.json",
        provisional_audit(spec.run_id, spec.family.name, spec.profile, spec.commit.head),
    )


def _display(path: Path) -> str:
    """``path`` relative to the working directory when it lies below it."""
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def run(
    *,
    family_name: str,
    mem: str | None,
    profile_name: str | None,
    families_dirs: Sequence[Path],
    out: Path,
    timeout: str | None,
    backend: str,
    repo: Path | None,
    sets: Sequence[str],
    sample_interval: str,
    base_ref: str | None,
    command_line: Sequence[str],
    stdout: TextIO = sys.stdout,
    stderr: TextIO = sys.stderr,
) -> int:
    """Run one family once; returns the verdict's exit code (2 for bad input)."""
    try:
        spec = build_spec(
            family_name=family_name,
            mem=mem,
            profile_name=profile_name,
            families_dirs=families_dirs,
            out=out,
            timeout=timeout,
            backend=backend,
            repo=repo,
            sets=sets,
            sample_interval=sample_interval,
            base_ref=base_ref,
            command_line=command_line,
        )
        sandbox = select_sandbox(spec.backend, spec.run_id)
    except UsageError as exc:
        stderr.write(f"qualify run: error: {exc}\n")
        return EXIT_USAGE
    interrupts = Interrupts()
    with interrupts.installed():
        spec.run_dir.mkdir(parents=True, exist_ok=False)
        _write_provisional(spec)
        execution = execute(spec, sandbox, interrupts)
        result = judge(spec, execution, current_layout().version)
        write_reports(result)
    print_summary(result, stdout)
    stdout.write(f"{_display(spec.run_dir)}\n")
    stdout.flush()
    return result.verdict.exit_code
