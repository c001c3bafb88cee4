"""Resource profiles of real CI hosts (``cgroup_profiles/*.toml``)."""

from __future__ import annotations

from pathlib import Path

from qualify.errors import UsageError
from qualify.plan.data import PROFILES_DIR
from qualify.plan.limits import DEFAULT_PIDS
from qualify.plan.tomlfile import check_keys, get_table, get_typed, load_toml
from qualify.records import frozen_record
from qualify.sizes import parse_size


@frozen_record
class GpuSpec:
    """The GPU a profile stands for."""

    model: str
    """Marketing name as nvidia-smi prints it ("NVIDIA L4")."""
    count: int
    """GPUs per host."""
    memory_bytes: int
    """Usable memory per GPU."""
    budget_bytes: int | None
    """PyTorch memory budget that emulates this GPU on a larger one (None: not emulated)."""


@frozen_record
class Profile:
    """A CI host: its RAM, the cap of the job's container, swap and GPU."""

    name: str
    description: str
    host_memory_bytes: int
    """RAM of the whole host (context for remedies; not enforced)."""
    memory_bytes: int
    """The cap of the job's cgroup or container."""
    swap_bytes: int
    """Swap allowed on top of the cap (0 on every real CI profile)."""
    pids_max: int
    gpu: GpuSpec | None


def _parse_gpu(table: dict[str, object], where: str) -> GpuSpec | None:
    if not table:
        return None
    check_keys(table, ["model", "count", "memory", "budget"], f"{where} [gpu]")
    budget = get_typed(table, "budget", str, where, None)
    return GpuSpec(
        model=get_typed(table, "model", str, where, "unknown"),
        count=get_typed(table, "count", int, where, 1),
        memory_bytes=parse_size(get_typed(table, "memory", str, where, "0"), what="gpu memory"),
        budget_bytes=parse_size(budget, what="gpu budget") if budget else None,
    )


def load_profile(path: Path) -> Profile:
    """Read one profile file; unknown keys and bad sizes are UsageErrors naming the file."""
    data = load_toml(path)
    where = str(path.name)
    check_keys(data, ["name", "description", "host", "limits", "gpu"], where)
    host = get_table(data, "host", where)
    limits = get_table(data, "limits", where)
    check_keys(host, ["memory"], f"{where} [host]")
    check_keys(limits, ["memory", "swap", "pids"], f"{where} [limits]")
    name = get_typed(data, "name", str, where, path.stem)
    if name != path.stem:
        raise UsageError(f"{where}: name = {name!r} must equal the file name {path.stem!r}")
    memory = parse_size(get_typed(limits, "memory", str, where, ""), what=f"{where} memory")
    return Profile(
        name=name,
        description=get_typed(data, "description", str, where, ""),
        host_memory_bytes=parse_size(get_typed(host, "memory", str, where, str(memory))),
        memory_bytes=memory,
        swap_bytes=parse_size(get_typed(limits, "swap", str, where, "0"), allow_zero=True),
        pids_max=get_typed(limits, "pids", int, where, DEFAULT_PIDS),
        gpu=_parse_gpu(get_table(data, "gpu", where), where),
    )


def available_profiles(directory: Path = PROFILES_DIR) -> list[str]:
    """Names of the profiles in ``directory``, sorted."""
    return sorted(path.stem for path in directory.glob("*.toml"))


def find_profile(name: str, directory: Path = PROFILES_DIR) -> Profile:
    """The profile called ``name``; an unknown name lists the valid ones."""
    path = directory / f"{name}.toml"
    if "/" in name or name.startswith(".") or not path.is_file():
        valid = ", ".join(available_profiles(directory)) or "none"
        raise UsageError(f"unknown profile {name!r} (available: {valid})")
    return load_profile(path)
