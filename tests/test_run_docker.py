"""qualify run --backend docker: pure kwargs/limits checks, bad input, and a real engine
running real containers (OOM kill, pass, timeout, SIGTERM, orphan reclaim)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from qualify.errors import UsageError
from qualify.plan.docker import DockerOptions, device_requests
from qualify.plan.limits import Limits
from qualify.sandbox.docker.backend import HARNESS_MOUNT, container_kwargs, engine_limits
from qualify.sandbox.docker.child import container_cgroup
from tests.conftest import ROOT, Completed, RunQualify, qualify_argv

MIB = 2**20
DockerEngine = tuple[str, str]

# Captured (tests/data/samples/SOURCES.md, docker_cgroup): a container's init on this cgroup v1
# host, and the host's cgroup mounts.
CAPTURED = ROOT / "tests" / "data" / "samples" / "docker_cgroup"
CONTAINER_CGROUP_V1 = (CAPTURED / "v1-container-init.proc-cgroup.txt").read_bytes()
HOST_MOUNTINFO_V1 = (CAPTURED / "v1-host.mountinfo-cgroup-lines.txt").read_bytes()
CONTAINER_ID = "62a040fd762a7424a6d68fcb8f9528a7adf82f977b258cc0952afa3990df43ea"
# Composed, not captured (no cgroup v2 host here): the unified line of cgroups(7) with the
# scope systemd gives a docker container, as systemd-cgls shows it in moby/moby#4450.
SCOPE = "docker-d6b15f04feb95083acea4b9caa6e59f8ebe67e3e3cf9cb8c59fad543490ee3ef.scope"
CONTAINER_CGROUP_V2 = f"0::/system.slice/{SCOPE}\n".encode()
HOST_MOUNTINFO_V2 = b"35 24 0:30 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n"


def kwargs(**overrides: Any) -> dict[str, Any]:
    arguments: dict[str, Any] = {
        "options": DockerOptions(image="img:1"),
        "limits": Limits(256 * MIB, 0, 512),
        "argv": ["python", "-m", "pytest"],
        "cwd": Path("/fam/hog"),
        "env": {"PYTHONPATH": "/src/qualify:/extra", "QUALIFY_RUN_DIR": "/runs/r1"},
        "run_dir": Path("/runs/r1"),
        "family_dir": Path("/fam/hog"),
        "harness_root": Path("/src/qualify"),
        "run_id": "r1",
        "user": "0:0",
        "gpu_requests": [],
    }
    arguments.update(overrides)
    return container_kwargs(**arguments)


def test_kwargs_limits_and_confinement() -> None:
    built = kwargs()
    assert built["mem_limit"] == built["memswap_limit"] == 256 * MIB
    assert built["pids_limit"] == 512
    assert built["shm_size"] == 64 * MIB
    assert built["network_mode"] == "none"
    assert built["cap_drop"] == ["ALL"]
    assert built["security_opt"] == ["no-new-privileges"]
    assert built["labels"]["qualify.run-id"] == "r1"
    assert built["labels"]["qualify.managed"] == "1"
    assert built["detach"] is True and "auto_remove" not in built
    assert "device_requests" not in built
    assert built["volumes"] == {
        "/fam/hog": {"bind": "/fam/hog", "mode": "ro"},
        "/src/qualify": {"bind": HARNESS_MOUNT, "mode": "ro"},
        "/runs/r1": {"bind": "/runs/r1", "mode": "rw"},
    }
    assert built["environment"]["PYTHONPATH"] == f"{HARNESS_MOUNT}:/extra"
    assert built["environment"]["QUALIFY_RUN_DIR"] == "/runs/r1"
    assert built["working_dir"] == "/fam/hog"


def test_kwargs_options() -> None:
    options = DockerOptions(image="img:1", shm_bytes=1 << 30, network="bridge")
    built = kwargs(
        options=options,
        limits=Limits(MIB * 512, MIB * 128, None),
        python_dirs=["/usr", "/opt/py"],
        gpu_requests=device_requests("all", 1),
        cgroup_parent="/qualify-r1",
    )
    assert built["cgroup_parent"] == "/qualify-r1"
    assert "cgroup_parent" not in kwargs(options=options, limits=Limits(MIB, 0, None))
    assert built["memswap_limit"] - built["mem_limit"] == 128 * MIB
    assert "pids_limit" not in built
    assert built["shm_size"] == 1 << 30 and built["network_mode"] == "bridge"
    assert built["volumes"]["/usr"] == {"bind": "/usr", "mode": "ro"}
    assert built["volumes"]["/opt/py"] == {"bind": "/opt/py", "mode": "ro"}
    assert built["device_requests"][0]["count"] == -1


@pytest.mark.parametrize(
    ("gpus", "expected"),
    [
        ("all", {"count": -1}),
        ("2", {"count": 2}),
        ("0,1", {"device_ids": ["0", "1"]}),
        ("GPU-abc", {"device_ids": ["GPU-abc"]}),
    ],
)
def test_device_requests(gpus: str, expected: dict[str, Any]) -> None:
    (request,) = device_requests(gpus, available=2)
    assert request["capabilities"] == [["gpu"]]
    assert {k: v for k, v in request.items() if k in ("count", "device_ids")} == expected


@pytest.mark.parametrize(("gpus", "available"), [("all", 0), ("3", 2), ("0", 2), ("0,,1", 2)])
def test_device_requests_bad(gpus: str, available: int) -> None:
    with pytest.raises(UsageError, match="--gpus"):
        device_requests(gpus, available)


@pytest.mark.parametrize(
    ("host_config", "swap_total", "expected"),
    [
        ({"Memory": 256 * MIB, "MemorySwap": 256 * MIB, "PidsLimit": 64}, 0, (256 * MIB, 0, 64)),
        ({"Memory": 256 * MIB, "MemorySwap": -1, "PidsLimit": None}, 0, (256 * MIB, 0, None)),
        ({"Memory": 256 * MIB, "MemorySwap": -1, "PidsLimit": 0}, 1 << 30, (256 * MIB, None, None)),
        ({"Memory": 0, "MemorySwap": 0, "PidsLimit": -1}, 0, (None, 0, None)),
        ({"Memory": MIB, "MemorySwap": 3 * MIB, "PidsLimit": 9}, 1 << 30, (MIB, 2 * MIB, 9)),
    ],
)
def test_engine_limits(host_config: dict[str, Any], swap_total: int, expected: tuple[Any]) -> None:
    assert engine_limits(host_config, swap_total) == Limits(*expected)


def test_container_cgroup_v1_and_v2() -> None:
    memory, pids, version = container_cgroup(CONTAINER_CGROUP_V1, HOST_MOUNTINFO_V1)
    assert (version, memory) == (1, Path(f"/sys/fs/cgroup/memory/docker/{CONTAINER_ID}"))
    assert pids == Path(f"/sys/fs/cgroup/pids/docker/{CONTAINER_ID}")
    memory, _, version = container_cgroup(CONTAINER_CGROUP_V2, HOST_MOUNTINFO_V2)
    assert (version, memory) == (2, Path(f"/sys/fs/cgroup/system.slice/{SCOPE}"))


def _hog(*extra: str) -> list[str]:
    return ["run", "--family", "hog", "--backend", "docker", "--mount-host-python", *extra]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ([], "--backend docker needs --image"),
        (["--image", "img:1", "--gpus", "all"], "--gpus all: this host has no GPU"),
    ],
)
def test_bad_input_before_any_engine(
    repo: Path, run_qualify: RunQualify, extra: list[str], message: str
) -> None:
    result = run_qualify(*_hog("--repo", str(repo), *extra))
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stderr.count("\n") == 1 and message in result.stderr
    assert not (repo.parent / "reports").exists()


def test_engine_not_running(repo: Path, tmp_path: Path) -> None:
    process = subprocess.run(
        qualify_argv(*_hog("--repo", str(repo), "--image", "img:1")),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env={**_environ(), "DOCKER_HOST": f"unix://{tmp_path}/dead.sock"},
        check=False,
    )
    assert process.returncode == 2, process.stdout + process.stderr
    assert process.stderr.count("\n") == 1
    assert "no docker engine answers" in process.stderr
    assert not (tmp_path / "reports").exists()


def _environ() -> dict[str, str]:
    import os

    return dict(os.environ)


def containers_of_qualify(host: str) -> list[str]:
    """Every container with the qualify label (none may be left after any run)."""
    import docker  # type: ignore[import-untyped]

    client = docker.DockerClient(base_url=host)
    try:
        return [
            c.id for c in client.containers.list(all=True, filters={"label": "qualify.managed"})
        ]
    finally:
        client.close()


@pytest.mark.privileged
@pytest.mark.slow
def test_unknown_image(repo: Path, run_qualify: RunQualify, docker_engine: DockerEngine) -> None:
    result = run_qualify(*_hog("--repo", str(repo), "--image", "no-such-image:0"))
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stderr.count("\n") == 1 and "no-such-image:0" in result.stderr
    assert result.run_dir is None


@pytest.mark.privileged
@pytest.mark.slow
def test_docker_oom_killed(
    repo: Path, run_qualify: RunQualify, docker_engine: DockerEngine
) -> None:
    host, image = docker_engine
    result = run_qualify(
        *_hog("--repo", str(repo), "--image", image, "--mem", "256M", "--set", "second_mib=400")
    )
    assert result.returncode == 3, result.stdout + result.stderr
    audit = result.audit()
    assert audit["verdict"] == "OOM_KILLED"
    assert audit["sandbox"]["backend"] == "docker"
    assert audit["oom"]["kills"] >= 1
    assert {k: audit["exit"][k] for k in ("code", "signal", "timed_out")} == {
        "code": 137,
        "signal": "SIGKILL",
        "timed_out": False,
    }
    assert audit["limits"]["in_effect"] == {
        "memory_bytes": 256 * MIB,
        "swap_bytes": 0,
        "pids_max": audit["limits"]["requested"]["pids_max"],
    }
    inside = audit["sandbox"]["inside"]  # read by the family's Python inside the container
    assert (inside["memory_bytes"], inside["swap_bytes"]) == (256 * MIB, 0), inside
    notes = audit["sandbox"]["notes"]
    assert "oom signal: State.OOMKilled=True" in notes
    assert "oom signal: exit code 137 (128+SIGKILL)" in notes
    assert any(n.startswith("oom signal: cgroup oom_kill counter") for n in notes)
    assert "cgroup v1 of the container read back" in notes or any("cgroup v2" in n for n in notes)
    assert audit["memory"]["phase_at_end"] == "second"
    # Read from the parent cgroup qualify made for the container: its watermark outlives the
    # container's cgroup, and holds a few hundred KiB the engine charged while setting it up.
    assert 0.97 * 256 * 2**20 <= audit["memory"]["peak_bytes"] <= 1.01 * 256 * 2**20
    assert any("whose watermark outlives it" in note for note in notes)
    root = ET.parse(result.run_dir / "junit.xml").getroot()
    errors = [e.get("type") for e in root.iter("error")]
    assert "OOM_KILLED" in errors
    assert containers_of_qualify(host) == []


@pytest.mark.privileged
@pytest.mark.slow
def test_docker_passes_with_phases(
    repo: Path, run_qualify: RunQualify, docker_engine: DockerEngine
) -> None:
    host, image = docker_engine
    result = run_qualify(*_hog("--repo", str(repo), "--image", image, "--mem", "768M"))
    assert result.returncode == 0, result.stdout + result.stderr
    audit = result.audit()
    assert audit["verdict"] == "PASSED"
    assert audit["oom"]["kills"] == 0
    phases = {p["name"]: p for p in audit["memory"]["phases"]}
    second = phases["second"]["peak_bytes"] - phases["sleep"]["peak_bytes"]
    assert abs(second - 160 * MIB) < 8 * MIB, second / MIB
    assert "3 passed" in (result.run_dir / "stdout.log").read_text()
    assert f"image {image}" in audit["sandbox"]["notes"]
    assert containers_of_qualify(host) == []


@pytest.mark.privileged
@pytest.mark.slow
def test_docker_timeout(repo: Path, run_qualify: RunQualify, docker_engine: DockerEngine) -> None:
    host, image = docker_engine
    started = time.monotonic()
    result = run_qualify(
        *_hog("--repo", str(repo), "--image", image, "--mem", "512M"),
        "--set",
        "sleep_s=60",
        "--timeout",
        "3s",
    )
    assert result.returncode == 3, result.stdout + result.stderr
    assert time.monotonic() - started < 30
    audit = result.audit()
    assert audit["verdict"] == "TIMEOUT"
    assert audit["memory"]["phase_at_end"] == "sleep"
    assert containers_of_qualify(host) == []


def _wait_for_phase(tmp_path: Path, name: str, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for events in tmp_path.glob("reports/*/hog/*/*/events.jsonl"):
            if f'"phase":"{name}"' in events.read_text():
                return
        time.sleep(0.1)
    raise AssertionError(f"phase {name} never started")


@pytest.mark.privileged
@pytest.mark.slow
def test_docker_sigterm_to_qualify(repo: Path, tmp_path: Path, docker_engine: DockerEngine) -> None:
    host, image = docker_engine
    argv = qualify_argv(*_hog("--repo", str(repo), "--image", image, "--mem", "512M"))
    process = subprocess.Popen(
        [*argv, "--set", "sleep_s=60"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    _wait_for_phase(tmp_path, "sleep")
    process.send_signal(signal.SIGTERM)
    stdout, stderr = process.communicate(timeout=30)
    result = Completed(
        subprocess.CompletedProcess([], process.returncode, stdout, stderr), tmp_path
    )
    assert result.returncode == 3, stdout + stderr
    audit = result.audit()
    assert audit["verdict"] == "KILLED" and audit["interrupted"] == "SIGTERM"
    ET.parse(result.run_dir / "junit.xml")
    assert containers_of_qualify(host) == []


@pytest.mark.privileged
@pytest.mark.slow
def test_docker_reclaims_orphans_and_auto(
    repo: Path, run_qualify: RunQualify, docker_engine: DockerEngine
) -> None:
    """An exited container of a killed earlier qualify is removed by the next run."""
    import docker

    host, image = docker_engine
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    client = docker.DockerClient(base_url=host)
    labels = {"qualify.managed": "1", "qualify.run-id": "old", "qualify.pid": str(dead.pid)}
    orphan = client.containers.create(image, ["/sbin/none"], labels=labels)
    client.close()
    result = run_qualify(
        "run", "--family", "hog", "--repo", str(repo), "--image", image, "--mount-host-python",
        "--mem", "512M", "--set", "second_mib=1",
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    audit = result.audit()
    assert audit["sandbox"]["backend"] == "docker"
    assert audit["sandbox"]["notes"][0].startswith("--backend auto chose docker")
    assert f"reclaimed orphaned container {orphan.id[:12]}" in audit["sandbox"]["notes"]
    assert containers_of_qualify(host) == []
