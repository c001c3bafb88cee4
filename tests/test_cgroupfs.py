"""cgroup and proc readers on real captured files (tests/data/samples/SOURCES.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from qualify.plan.limits import Limits, limit_mismatches
from qualify.sandbox.cgroup.fs import (
    host_swap_total,
    parse_flat_keyed,
    parse_int,
    parse_limit,
    parse_mountinfo,
    parse_proc_cgroup,
    pick_keyed,
    v1_limits_in_effect,
    v2_limits_in_effect,
)
from qualify.sandbox.cgroup.layout import detect_layout
from tests.conftest import SAMPLES

V1, V2 = SAMPLES / "cgroup_v1", SAMPLES / "cgroup_v2"


def sample(path: Path) -> bytes:
    return path.read_bytes()


@pytest.mark.parametrize(
    ("name", "key", "value"),
    [
        (
            V2 / "hechaoli-2020-memory.events-after-oom-kill-pre-5.17-no-oom_group_kill.txt",
            "oom_kill",
            1,
        ),
        (
            V2 / "hechaoli-2020-memory.events-after-oom-kill-pre-5.17-no-oom_group_kill.txt",
            "max",
            12,
        ),
        (V2 / "elastic-docker2-memory.events-with-oom_group_kill.txt", "oom_group_kill", 0),
        (V2 / "elastic-docker2-memory.stat.txt", "anon", 1411100672),
        (V2 / "elastic-docker2-memory.stat.txt", "file", 8621432832),
        (V1 / "local-k6.18-memory.oom_control-after-oom-kill.txt", "oom_kill", 1),
        (V1 / "elastic-amzn2-eks-memory.oom_control.txt", "oom_kill", 0),
        (V1 / "elastic-amzn2-eks-memory.stat-hierarchical-memsw.txt", "total_rss", 1119465472),
        (V1 / "local-k6.18-memory.stat-after-oom-kill.txt", "hierarchical_memsw_limit", 67108864),
    ],
)
def test_flat_keyed(name: Path, key: str, value: int) -> None:
    assert parse_flat_keyed(sample(name))[key] == value


@pytest.mark.parametrize(
    ("name", "value"),
    [
        (V2 / "elastic-docker2-memory.max-max.txt", None),
        (V2 / "elastic-docker2-memory.swap.max-max.txt", None),
        (V2 / "elastic-docker2-pids.max-max.txt", None),
        (V2 / "hechaoli-2020-memory.max-number-100MiB.txt", 100 * 2**20),
        (V1 / "elastic-amzn2-eks-memory.limit_in_bytes.txt", 2 * 2**30),
    ],
)
def test_limits(name: Path, value: int | None) -> None:
    assert parse_limit(sample(name)) == value


@pytest.mark.parametrize(
    ("name", "value"),
    [
        (V2 / "elastic-docker2-memory.peak.txt", 18772946944),
        (V1 / "local-k6.18-memory.max_usage_in_bytes-after-oom-kill.txt", 67108864),
    ],
)
def test_single_integers(name: Path, value: int) -> None:
    assert parse_int(sample(name)) == value


def test_v1_no_limit_is_none() -> None:
    stat = parse_flat_keyed(sample(V1 / "elastic-ubuntu1804-memory.stat-no-memsw.txt"))
    assert parse_limit(str(stat["hierarchical_memory_limit"]).encode()) is None


@pytest.mark.parametrize(
    ("cgroup", "mountinfo", "controllers", "version", "directory"),
    [
        (
            V1 / "local-k6.18-hybrid-proc-self-cgroup.txt",
            V1 / "local-k6.18-hybrid-proc-self-mountinfo-cgroup-lines.txt",
            V2 / "local-k6.18-hybrid-unified-root-cgroup.controllers.txt",
            1,
            "/sys/fs/cgroup/memory/process_api/<redacted-id>",
        ),
        (
            V2 / "elastic-ubuntu1804-hybrid-proc-pid-cgroup.txt",
            V2 / "elastic-ubuntu1804-hybrid-mountinfo-cgroup-lines.txt",
            None,
            1,
            "/sys/fs/cgroup/memory/system.slice/networkd-dispatcher.service",
        ),
        (
            V2 / "hechaoli-2020-proc-self-cgroup-pure-v2-custom-test-cgroup.txt",
            V2 / "docker-for-mac-container-mountinfo-cgroup2-ro-apm-agent-java-2352.txt",
            V2 / "elastic-docker2-cgroup.controllers.txt",
            2,
            "/sys/fs/cgroup/test",
        ),
        (
            V2 / "elastic-docker2-proc-pid-cgroup-pure-v2-nsrelative.txt",
            V2 / "docker-for-mac-container-mountinfo-cgroup2-ro-apm-agent-java-2352.txt",
            V2 / "elastic-docker2-cgroup.controllers.txt",
            None,
            None,
        ),
        (
            V2 / "hechaoli-2020-proc-self-cgroup-pure-v2-custom-test-cgroup.txt",
            V2 / "docker-for-mac-container-mountinfo-cgroup2-ro-apm-agent-java-2352.txt",
            V2 / "local-k6.18-hybrid-unified-root-cgroup.controllers.txt",
            None,
            None,
        ),
    ],
)
def test_detect_layout(
    cgroup: Path,
    mountinfo: Path,
    controllers: Path | None,
    version: int | None,
    directory: str | None,
) -> None:
    layout = detect_layout(
        sample(cgroup), sample(mountinfo), sample(controllers) if controllers else None
    )
    assert layout.version == version
    assert (str(layout.memory_dir) if layout.memory_dir else None) == directory


def test_proc_cgroup_and_mountinfo_shapes() -> None:
    entries = parse_proc_cgroup(sample(V2 / "elastic-ubuntu1804-hybrid-proc-pid-cgroup.txt"))
    assert entries[0].controllers == ("pids",)
    assert entries[-1].hierarchy_id == 0 and entries[-1].controllers == ()
    mounts = parse_mountinfo(sample(V2 / "elastic-ubuntu1804-hybrid-mountinfo-cgroup-lines.txt"))
    assert [m.fstype for m in mounts].count("cgroup2") == 1
    assert any(m.mount_point == "/sys/fs/cgroup/net_cls,net_prio" for m in mounts)


def test_v1_limits_in_effect_real_oomed_cgroup() -> None:
    limits = v1_limits_in_effect(
        limit=b"67108864\n",
        memsw_limit=b"67108864\n",
        stat=sample(V1 / "local-k6.18-memory.stat-after-oom-kill.txt"),
        pids_max=b"max\n",
        swap_total=0,
    )
    assert limits == Limits(memory_bytes=64 * 2**20, swap_bytes=0, pids_max=None)


def test_v1_ancestor_cap_wins() -> None:
    """An EKS pod cgroup capped at 2 GiB above a child asking for 4 GiB: 2 GiB is in effect."""
    limits = v1_limits_in_effect(
        limit=str(4 * 2**30).encode(),
        memsw_limit=str(4 * 2**30).encode(),
        stat=sample(V1 / "elastic-amzn2-eks-memory.stat-hierarchical-memsw.txt"),
        pids_max=None,
        swap_total=2**30,
    )
    assert limits.memory_bytes == 2 * 2**30
    problems = limit_mismatches(Limits(4 * 2**30, 0, None), limits)
    assert problems == [f"memory_bytes: asked {4 * 2**30}, in effect {2 * 2**30}"]


def test_v1_without_memsw_on_a_host_with_swap_cannot_cap_swap() -> None:
    stat = sample(V1 / "elastic-ubuntu1804-memory.stat-no-memsw.txt")
    with_swap = v1_limits_in_effect(b"268435456", None, stat, None, swap_total=2**30)
    without = v1_limits_in_effect(b"268435456", None, stat, None, swap_total=0)
    assert with_swap.swap_bytes is None and without.swap_bytes == 0


def test_v2_limits_in_effect_chain() -> None:
    own = b"536870912\n"
    parent = sample(V2 / "hechaoli-2020-memory.max-number-100MiB.txt")
    root_like = sample(V2 / "elastic-docker2-memory.max-max.txt")
    limits = v2_limits_in_effect(
        [own, parent, root_like],
        [b"0\n", sample(V2 / "elastic-docker2-memory.swap.max-max.txt")],
        b"4096\n",
    )
    assert limits == Limits(memory_bytes=100 * 2**20, swap_bytes=0, pids_max=4096)


def test_page_rounding_is_not_a_mismatch() -> None:
    asked = Limits(10**9, 0, 64)
    assert limit_mismatches(asked, Limits(10**9 // 4096 * 4096, 0, 64)) == []
    assert limit_mismatches(asked, Limits(10**9 // 4096 * 4096, None, 64)) == [
        "swap_bytes: asked 0, in effect None"
    ]


def test_meminfo_swap_total() -> None:
    assert host_swap_total(b"MemTotal: 1 kB\nSwapTotal:  2048 kB\n") == 2 * 2**20
    # This host's own file, against its SwapTotal line read independently.
    meminfo = Path("/proc/meminfo").read_text()
    line = next(line for line in meminfo.splitlines() if line.startswith("SwapTotal:"))
    assert host_swap_total(meminfo.encode()) == int(line.split()[1]) * 1024


@pytest.mark.parametrize(
    ("name", "keys"),
    [
        (V2 / "elastic-docker2-memory.stat.txt", (b"anon", b"file", b"pgfault")),
        (V1 / "local-k6.18-memory.stat-after-oom-kill.txt", (b"total_rss", b"total_cache")),
        (V1 / "elastic-amzn2-eks-memory.stat-hierarchical-memsw.txt", (b"total_rss", b"rss")),
        (V1 / "elastic-ubuntu1804-memory.stat-no-memsw.txt", (b"total_cache", b"absent_key")),
    ],
)
def test_pick_keyed_agrees_with_the_full_parse(name: Path, keys: tuple[bytes, ...]) -> None:
    data = sample(name)
    full = parse_flat_keyed(data)
    expected = {k.decode(): full[k.decode()] for k in keys if k.decode() in full}
    assert pick_keyed(data, keys) == expected
    # "rss" must not match inside "total_rss": keys match whole line starts only.
    if b"rss" in keys:
        assert pick_keyed(data, (b"rss",))["rss"] == full["rss"]
