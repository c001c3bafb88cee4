"""The limits read from inside the sandbox (harness/_limits.py) on real captured cgroup files,
and the verdict when they differ from those asked. Real runs check the same reading end to end
(tests/test_run_cgroup.py, tests/test_run_docker.py: ``audit["sandbox"]["inside"]``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from harness import _limits
from qualify.judge.judgement import inside_limits, inside_limits_error
from qualify.plan.limits import Limits
from qualify.plan.spec import HARNESS_ROOT, HARNESS_SITE

SAMPLES = Path(__file__).resolve().parent / "data" / "samples"
V1, V2 = SAMPLES / "cgroup_v1", SAMPLES / "cgroup_v2"
MIB = 1 << 20


def text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def test_v1_memory_directory_on_the_hybrid_host() -> None:
    found = _limits.cgroup_dirs(
        text(V1 / "local-k6.18-hybrid-proc-self-cgroup.txt"),
        text(V1 / "local-k6.18-hybrid-proc-self-mountinfo-cgroup-lines.txt"),
    )
    assert found == (
        1,
        "/sys/fs/cgroup/memory/process_api/<redacted-id>",
        "/process_api/<redacted-id>",
    )


def test_v1_wins_on_ubuntu_1804_hybrid() -> None:
    # memory is bound to v1 there; the unified line (0::) is not where the limit lives.
    found = _limits.cgroup_dirs(
        text(V2 / "elastic-ubuntu1804-hybrid-proc-pid-cgroup.txt"),
        text(V2 / "elastic-ubuntu1804-hybrid-mountinfo-cgroup-lines.txt"),
    )
    assert found is not None and found[0] == 1
    assert found[1].endswith("/system.slice/networkd-dispatcher.service")


def test_v2_inside_a_container_namespace() -> None:
    # Docker for Mac mounts the container's cgroup2 (read-only) at /sys/fs/cgroup; with a
    # private cgroup namespace the process sees itself at the root, "0::/".
    mountinfo = text(V2 / "docker-for-mac-container-mountinfo-cgroup2-ro-apm-agent-java-2352.txt")
    assert _limits.cgroup_dirs("0::/\n", mountinfo) == (2, "/sys/fs/cgroup", "/")
    # A process outside this namespace's root has no directory here.
    outside = text(V2 / "elastic-docker2-proc-pid-cgroup-pure-v2-nsrelative.txt")
    assert _limits.cgroup_dirs(outside, mountinfo) is None


def _reader(files: dict[str, Path]) -> Any:
    return lambda path: text(files[path]) if path in files else None


def test_v1_limits_from_the_eks_capture() -> None:
    # EKS pod: memory.limit_in_bytes 2147483648 and the same hierarchical memsw limit in
    # memory.stat, so swap is 0 even without a memsw file of its own.
    files = {
        "/cg/memory.limit_in_bytes": V1 / "elastic-amzn2-eks-memory.limit_in_bytes.txt",
        "/cg/memory.stat": V1 / "elastic-amzn2-eks-memory.stat-hierarchical-memsw.txt",
    }
    assert _limits.limits_from(1, "/cg", _reader(files)) == {
        "memory_bytes": 2 << 30,
        "swap_bytes": 0,
        "swap_accounted": False,
    }


def test_v2_limits_take_the_smallest_up_to_the_mount() -> None:
    # hechaoli's /sys/fs/cgroup/test: memory.max 104857600; Elastic's session scope above it
    # with memory.max and memory.swap.max "max" (no limit).
    files = {
        "/sys/fs/cgroup/a/test/memory.max": V2 / "hechaoli-2020-memory.max-number-100MiB.txt",
        "/sys/fs/cgroup/a/memory.max": V2 / "elastic-docker2-memory.max-max.txt",
        "/sys/fs/cgroup/a/memory.swap.max": V2 / "elastic-docker2-memory.swap.max-max.txt",
    }
    got = _limits.limits_from(2, "/sys/fs/cgroup/a/test", _reader(files), stop="/sys/fs/cgroup")
    assert got == {"memory_bytes": 100 * MIB, "swap_bytes": None}
    unlimited = _limits.limits_from(2, "/sys/fs/cgroup/a", _reader(files), stop="/sys/fs/cgroup")
    assert unlimited == {"memory_bytes": None, "swap_bytes": None}


def test_only_the_first_process_of_a_run_records(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("QUALIFY_")}
    env.update(
        PYTHONPATH=os.pathsep.join([str(HARNESS_ROOT), str(HARNESS_SITE)]),
        QUALIFY_EVENTS=str(tmp_path / "events.jsonl"),
        QUALIFY_RUN_DIR=str(tmp_path),
    )
    code = "import subprocess, sys; subprocess.run([sys.executable, '-c', 'pass'], check=True)"
    subprocess.run([sys.executable, "-c", code], env=env, check=True, timeout=60)
    events = [json.loads(line) for line in (tmp_path / "events.jsonl").read_text().splitlines()]
    assert [e["event"] for e in events] == ["sandbox_limits"]
    own = _limits.read_own()  # this test process sits in the same cgroup as its children
    assert {k: events[0][k] for k in own} == own


def _run(asked: Limits, capped: bool = True) -> tuple[Any, Any]:
    spec = SimpleNamespace(limits=asked)
    execution = SimpleNamespace(sandbox=SimpleNamespace(capped=capped))
    return spec, execution


def test_a_difference_inside_is_an_error() -> None:
    spec, execution = _run(Limits(256 * MIB, 0, 64))
    same = inside_limits([{"event": "sandbox_limits", "memory_bytes": 256 * MIB, "swap_bytes": 0}])
    assert inside_limits_error(spec, execution, same) is None
    swap = {"memory_bytes": 256 * MIB, "swap_bytes": None}
    error = inside_limits_error(spec, execution, swap)
    assert error == (
        "limits read inside the sandbox differ from those asked: "
        "swap_bytes: asked 0, in effect None"
    )
    bigger = {"memory_bytes": 512 * MIB, "swap_bytes": 0}
    assert "memory_bytes: asked 268435456, in effect 536870912" in str(
        inside_limits_error(spec, execution, bigger)
    )
    assert inside_limits_error(spec, execution, {"error": "no memory cgroup visible"}) is None
    assert inside_limits_error(spec, execution, None) is None  # a family without Python
    assert inside_limits_error(*_run(Limits(None, None, None), capped=False), bigger) is None
