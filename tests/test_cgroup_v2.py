"""cgroup v2 backend logic on a directory tree seeded with real captured v2 files.

The kernel is not here (this host's memory controller is on v1), so the files the backend
reads are real captures and the files it writes are checked for exactly what it wrote.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from qualify.errors import SandboxError
from qualify.plan.limits import Limits, limit_mismatches
from qualify.sandbox.cgroup.v2 import CgroupV2Sandbox, V2Probe
from tests.conftest import SAMPLES

V2 = SAMPLES / "cgroup_v2"
MIB = 2**20
OOM_EVENTS = "hechaoli-2020-memory.events-after-oom-kill-pre-5.17-no-oom_group_kill.txt"


def seed(directory: Path, files: dict[str, str]) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    for name, sample_name in files.items():
        shutil.copy(V2 / sample_name, directory / name)


@pytest.fixture
def tree(tmp_path: Path) -> tuple[Path, Path]:
    mount = tmp_path / "cgroup2"
    parent = mount / "runner.slice"
    seed(mount, {"cgroup.controllers": "elastic-docker2-cgroup.controllers.txt"})
    seed(
        parent,
        {
            "cgroup.controllers": "elastic-docker2-cgroup.controllers.txt",
            "cgroup.subtree_control": "elastic-docker2-cgroup.subtree_control-empty.txt",
            "memory.max": "elastic-docker2-memory.max-max.txt",
            "memory.swap.max": "elastic-docker2-memory.swap.max-max.txt",
        },
    )
    return mount, parent


def test_prepare_writes_exact_limits_and_reads_them_back(tree: tuple[Path, Path]) -> None:
    mount, parent = tree
    sandbox = CgroupV2Sandbox(parent, "/runner.slice", "r1", mount)
    info = sandbox.prepare(Limits(256 * MIB, 0, 512))
    child = parent / "qualify-r1"
    assert (parent / "cgroup.subtree_control").read_text() == "+memory +pids"
    assert (child / "memory.max").read_text() == str(256 * MIB)
    assert (child / "memory.swap.max").read_text() == "0"
    assert (child / "memory.oom.group").read_text() == "1"
    assert (child / "pids.max").read_text() == "512"
    assert info.in_effect == Limits(256 * MIB, 0, 512)
    assert info.cgroup == "/runner.slice/qualify-r1"
    assert any("memory.peak is missing" in note for note in info.notes)
    assert limit_mismatches(Limits(256 * MIB, 0, 512), info.in_effect) == []
    argv = sandbox.wrap(["python", "-c", "pass"])
    assert str(child / "cgroup.procs") in argv and argv[-3:] == ["python", "-c", "pass"]


def test_smaller_ancestor_cap_is_what_is_in_effect(tree: tuple[Path, Path]) -> None:
    mount, parent = tree
    seed(parent, {"memory.max": "hechaoli-2020-memory.max-number-100MiB.txt"})
    info = CgroupV2Sandbox(parent, "/runner.slice", "r2", mount).prepare(Limits(256 * MIB, 0, 64))
    assert info.in_effect.memory_bytes == 100 * MIB
    assert limit_mismatches(Limits(256 * MIB, 0, 64), info.in_effect) == [
        f"memory_bytes: asked {256 * MIB}, in effect {100 * MIB}"
    ]


def test_controllers_that_cannot_be_enabled_say_what_to_do(tree: tuple[Path, Path]) -> None:
    mount, parent = tree
    control = parent / "cgroup.subtree_control"
    control.unlink()
    # A file that reads fine but refuses writes even to root, as the kernel refuses
    # "+memory" (EBUSY) for a cgroup that holds processes.
    control.symlink_to("/proc/version")
    with pytest.raises(SandboxError, match=r"delegated cgroup.*--backend docker"):
        CgroupV2Sandbox(parent, "/runner.slice", "r3", mount).prepare(Limits(MIB, 0, 8))


def test_probe_reads_real_v2_files(tmp_path: Path) -> None:
    seed(
        tmp_path,
        {
            "memory.current": "elastic-docker2-memory.current.txt",
            "memory.peak": "elastic-docker2-memory.peak.txt",
            "memory.events": OOM_EVENTS,
            "memory.stat": "elastic-docker2-memory.stat.txt",
        },
    )
    (tmp_path / "cgroup.procs").write_text("")
    probe = V2Probe(tmp_path)
    try:
        assert probe.usage_bytes() == int((V2 / "elastic-docker2-memory.current.txt").read_text())
        assert probe.watermark_bytes() == 18772946944
        assert probe.oom_kills() == 1
        assert probe.memory_breakdown() == {"anon": 1411100672, "file": 8621432832}
        assert probe.pids() == []
        assert probe.reset_watermark() is True
    finally:
        probe.close()


def test_self_delegation_only_when_alone() -> None:
    from qualify.sandbox.cgroup.v2 import can_self_delegate

    assert can_self_delegate([4242], 4242)
    assert not can_self_delegate([17, 4242], 4242)
    assert not can_self_delegate([], 4242)
    assert can_self_delegate([4242, 4250], 4242, [4250, 4251])  # its watchdog beside it
    assert not can_self_delegate([4242, 4250, 17], 4242, [4250])
    assert not can_self_delegate([4250], 4242, [4250])
