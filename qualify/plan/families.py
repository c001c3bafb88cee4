"""family.toml: the small, stable contract between qualify and any model family.

Unknown keys are errors naming the key: a typo must not silently fall back to a default.
"""

from __future__ import annotations

import importlib.util
import math
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from qualify import records
from qualify.errors import UsageError
from qualify.plan.data import FAMILIES_DIR as BUNDLED_FAMILIES
from qualify.plan.option_schema import OptionRule, load_rules
from qualify.plan.tomlfile import check_keys, get_table, get_typed, load_toml
from qualify.records import frozen_record
from qualify.sizes import parse_duration, parse_size

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
_TOP_KEYS = [
    "name",
    "description",
    "e2e",
    "options",
    "resources",
    "allocator",
    "parity",
    "requires",
    "option_values",
    "ab",
]
_E2E_KEYS = ["command", "workdir", "timeout", "env", "pass_env"]
_RESOURCE_KEYS = ["memory", "gpus"]
_ALLOCATOR_KEYS = ["expandable_segments"]
_REQUIRES_KEYS = ["modules", "install"]
_AB_KEYS = ["coupled"]
FAMILY_FILE = "family.toml"
OptionValue = bool | int | float | str


@frozen_record
class Family:
    """A family adapter as read from its family.toml."""

    name: str
    description: str
    directory: Path
    """Directory holding family.toml (resolved)."""
    command: tuple[str, ...]
    """argv of the E2E, never a shell string."""
    workdir: Path
    """Working directory of the E2E (resolved)."""
    timeout_s: float
    env: Mapping[str, str]
    options: Mapping[str, OptionValue]
    memory_bytes: int | None
    """Cap used when neither --mem nor --profile is given."""
    gpus: int
    expandable_segments: bool
    parity: Mapping[str, Any] | None
    """The [parity] table (validated by qualify.parity.ParityGate), None when absent."""
    requires: tuple[str, ...] = ()
    """Python modules the E2E imports (``[requires] modules``), checked before a run whose
    command runs on qualify's own interpreter."""
    install_hint: str | None = None
    """How to install them (``[requires] install``), named when one is missing."""
    option_values: Mapping[str, OptionRule] = records.field(default_factory=dict)
    pass_env: tuple[str, ...] = ()
    """Secret variables of qualify's environment the E2E is given (``[e2e] pass_env``); every
    other secret-named variable is kept from it."""
    """The allowed values or range per option (``[option_values]``), checked on ``--set``."""
    coupled: tuple[tuple[str, ...], ...] = ()
    """Metrics reported only together (``[ab] coupled``): a latency pair such as TTFT and ITL,
    where a gain in one half bought with the other is a trade, not a win."""

    @property
    def is_pytest(self) -> bool:
        """True when the E2E command runs pytest (events and JUnit come from the plugin)."""
        return any(part == "pytest" or part.endswith("/pytest") for part in self.command[:3])


def validate_name(name: str) -> str:
    """A family name is one path component: no ``/``, no ``..``, no leading dot."""
    if not _NAME.match(name) or ".." in name:
        raise UsageError(
            f"family name {name!r} is not valid: use letters, digits, '_', '-' and '.', "
            "without '/' or '..'"
        )
    return name


def _options(table: Mapping[str, Any], where: str) -> dict[str, OptionValue]:
    for key, value in table.items():
        if "=" in key or "\0" in key:
            # The option reaches the E2E as an environment variable named after it.
            raise UsageError(f"{where}: option name {key!r} must not contain '=' or a NUL byte")
        if not isinstance(value, bool | int | float | str):
            raise UsageError(f"{where}: option {key} = {value!r} must be a bool, number or string")
        if isinstance(value, float) and not math.isfinite(value):
            raise UsageError(f"{where}: option {key} = {value!r} must be a finite number")
        if isinstance(value, str) and "\0" in value:
            raise UsageError(f"{where}: option {key} = {value!r} must not contain a NUL byte")
    return dict(table)


def _command(e2e: Mapping[str, Any], where: str) -> tuple[str, ...]:
    command = e2e.get("command")
    if (
        not isinstance(command, list)
        or not command
        or not all(isinstance(part, str) and part for part in command)
    ):
        raise UsageError(f"{where}: [e2e] command must be a non-empty list of strings (argv)")
    for part in command:
        if "\0" in part:
            raise UsageError(
                f"{where}: [e2e] command argument {part!r} must not contain a NUL byte"
            )
    return tuple(command)


def _env(e2e: Mapping[str, Any], where: str) -> dict[str, str]:
    env = get_typed(e2e, "env", dict, where, {})
    for key, value in env.items():
        if not key or "=" in key or "\0" in key:
            raise UsageError(
                f"{where}: [e2e] env name {key!r} must not be empty or contain '=' or a NUL byte"
            )
        if not isinstance(value, str):
            raise UsageError(f"{where}: [e2e] env {key} = {value!r} must be a string")
        if "\0" in value:
            raise UsageError(f"{where}: [e2e] env {key} = {value!r} must not contain a NUL byte")
    return dict(env)


_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _pass_env(e2e: Mapping[str, Any], where: str) -> tuple[str, ...]:
    names = get_typed(e2e, "pass_env", list, where, [])
    for name in names:
        if not isinstance(name, str) or not _ENV_NAME.fullmatch(name):
            raise UsageError(
                f"{where}: [e2e] pass_env item {name!r} is not valid (valid: an environment "
                "variable name, [A-Za-z_][A-Za-z0-9_]*)"
            )
    return tuple(names)


def load_family(directory: Path) -> Family:
    """Read ``directory/family.toml``; every problem is one UsageError line naming the file."""
    path = directory / FAMILY_FILE
    where = str(path)
    data = load_toml(path)
    check_keys(data, _TOP_KEYS, where)
    e2e = get_table(data, "e2e", where)
    resources = get_table(data, "resources", where)
    allocator = get_table(data, "allocator", where)
    requires = get_table(data, "requires", where)
    check_keys(e2e, _E2E_KEYS, f"{where} [e2e]")
    check_keys(resources, _RESOURCE_KEYS, f"{where} [resources]")
    check_keys(allocator, _ALLOCATOR_KEYS, f"{where} [allocator]")
    check_keys(requires, _REQUIRES_KEYS, f"{where} [requires]")
    name = get_typed(data, "name", str, where, "")
    if name != directory.name:
        raise UsageError(f"{where}: name = {name!r} must equal the directory name")
    relative_workdir = get_typed(e2e, "workdir", str, where, ".")
    if "\0" in relative_workdir:
        raise UsageError(f"{where}: [e2e] workdir {relative_workdir!r} must not contain a NUL byte")
    workdir = (directory / relative_workdir).resolve()
    if not workdir.is_dir():
        raise UsageError(f"{where}: [e2e] workdir {workdir.name!r} is not a directory")
    memory = get_typed(resources, "memory", str, where, None)
    options = _options(get_table(data, "options", where), f"{where} [options]")
    option_values = load_rules(
        get_table(data, "option_values", where), options, f"{where} [option_values]"
    )
    parity = data.get("parity")
    if parity is not None:
        parity = _check_parity(parity, where)
    return Family(
        name=name,
        description=get_typed(data, "description", str, where, ""),
        directory=directory.resolve(),
        command=_command(e2e, where),
        workdir=workdir,
        timeout_s=parse_duration(get_typed(e2e, "timeout", str, where, "30m"), what="timeout"),
        env=_env(e2e, where),
        pass_env=_pass_env(e2e, where),
        options=options,
        option_values=option_values,
        memory_bytes=parse_size(memory, what=f"{where} memory") if memory else None,
        gpus=get_typed(resources, "gpus", int, where, 0),
        expandable_segments=get_typed(allocator, "expandable_segments", bool, where, False),
        parity=parity,
        requires=_modules(requires, where),
        install_hint=get_typed(requires, "install", str, where, None),
        coupled=_coupled(get_table(data, "ab", where), where),
    )


def _coupled(ab: Mapping[str, Any], where: str) -> tuple[tuple[str, ...], ...]:
    """``[ab] coupled``: groups of two or more metric names, each name in one group only."""
    check_keys(ab, _AB_KEYS, f"{where} [ab]")
    groups = get_typed(ab, "coupled", list, where, [])
    seen: set[str] = set()
    for group in groups:
        if (
            not isinstance(group, list)
            or len(group) < 2
            or not all(isinstance(name, str) and name for name in group)
            or seen & set(group)
            or len(set(group)) != len(group)
        ):
            raise UsageError(
                f"{where}: [ab] coupled: {group!r} is not valid (valid: a list of two or more "
                "metric names, each name in one group only)"
            )
        seen.update(group)
    return tuple(tuple(group) for group in groups)


def _modules(requires: Mapping[str, Any], where: str) -> tuple[str, ...]:
    modules = get_typed(requires, "modules", list, where, [])
    for module in modules:
        if not isinstance(module, str) or not re.fullmatch(r"[A-Za-z_][\w.]*", module):
            raise UsageError(f"{where}: [requires] modules: {module!r} is not a module name")
    return tuple(modules)


def _check_parity(table: Any, where: str) -> dict[str, Any]:
    from qualify.plan.parity_gate import ParityConfigError, ParityGate

    if not isinstance(table, dict):
        raise UsageError(f"{where}: [parity] must be a table")
    try:
        ParityGate.from_table(table)
    except ParityConfigError as exc:
        raise UsageError(f"{where} [parity]: {exc}") from None
    return table


@frozen_record
class FamilyDir:
    """A directory families are searched in, and why it is searched."""

    path: Path
    origin: str
    """"--families-dir", "repository" (the qualified repo's ``families/``) or "bundled"."""


def search_path(families_dirs: Sequence[Path], repo: Path | None) -> list[FamilyDir]:
    """Where ``qualify run`` looks for a family, first match wins: every ``--families-dir``
    when given; otherwise the qualified repository's ``families/``, then qualify's own."""
    if families_dirs:
        candidates = [FamilyDir(path, "--families-dir") for path in families_dirs]
    else:
        candidates = [FamilyDir(repo / "families", "repository")] if repo is not None else []
        candidates.append(FamilyDir(BUNDLED_FAMILIES, "bundled"))
    unique: list[FamilyDir] = []
    for candidate in candidates:
        resolved = candidate.path.resolve()
        if resolved.is_dir() and resolved not in [seen.path for seen in unique]:
            unique.append(FamilyDir(resolved, candidate.origin))
    return unique


def default_family_dirs(repo: Path | None) -> list[Path]:
    """The qualified repo's ``families/`` first, then the families shipped with qualify."""
    return [entry.path for entry in search_path((), repo)]


def available_families(search: Sequence[Path]) -> list[str]:
    """Names of the families found in ``search`` (directories holding a family.toml)."""
    names = {
        path.parent.name for directory in search for path in directory.glob(f"*/{FAMILY_FILE}")
    }
    return sorted(names)


def find_family(name: str, search: Sequence[Path]) -> Family:
    """The first family called ``name`` in ``search``; unknown names list the available ones."""
    validate_name(name)
    for directory in search:
        if (directory / name / FAMILY_FILE).exists():
            return load_family(directory / name)
    valid = ", ".join(available_families(search)) or "none"
    raise UsageError(f"unknown family {name!r} (available: {valid})")


SKIPPED_IN_HASH = frozenset({"__pycache__", ".pytest_cache", ".mypy_cache", ".git"})


def content_hash(directory: Path) -> str:
    """sha256 over every file of a family directory (relative path and bytes, in path order;
    caches skipped): what was run, when it is not in the repository's commit."""
    import hashlib  # (loaded for a family outside the repository only)

    digest = hashlib.sha256()
    files = sorted(
        path
        for path in directory.rglob("*")
        if path.is_file() and not SKIPPED_IN_HASH.intersection(path.relative_to(directory).parts)
    )
    for path in files:
        # The name's own bytes (a file name need not be UTF-8: os.fsencode gives it back).
        digest.update(os.fsencode(path.relative_to(directory).as_posix()) + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def missing_modules(family: Family) -> list[str]:
    """``[requires] modules`` that this interpreter cannot import (not imported, only found)."""
    missing = []
    for module in family.requires:
        try:
            found = importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            missing.append(module)
    return missing
