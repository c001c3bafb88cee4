"""A real docker engine for the tests, and a test image built without any registry.

The engine: the one DOCKER_HOST (or /var/run/docker.sock) names when it answers; otherwise a
private dockerd on its own socket, data root and exec root (vfs storage, no iptables, no
bridge), started once per session and stopped at its end.

The image: ``docker import`` of a tar holding only empty mount points and the merged-/usr
symlinks (bin, lib, lib64 -> usr/...). Runs use ``--mount-host-python``, which binds the
host's /usr and this interpreter's prefixes read-only, so the container runs the same Python
and pytest as the suite.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

SOCKET = "unix:///run/qualify-dockerd.sock"
DATA_ROOT = Path("/var/lib/qualify-dockerd")
EXEC_ROOT = Path("/run/qualify-dockerd")
IMAGE = "qualify-test-empty:1"
START_TIMEOUT_S = 60.0


def answers(host: str) -> bool:
    """True when an engine answers a ping at ``host``."""
    import docker  # type: ignore[import-untyped]

    if host.startswith("unix://"):
        # docker-py leaks the socket of a failed connect (a ResourceWarning, an error here).
        with socket.socket(socket.AF_UNIX) as probe:
            try:
                probe.connect(host.removeprefix("unix://"))
            except OSError:
                return False
    try:
        client = docker.DockerClient(base_url=host, timeout=5)
    except Exception:
        return False
    try:
        ok = bool(client.ping())
    except Exception:
        ok = False
    finally:
        client.close()
    return ok


def _start_dockerd() -> subprocess.Popen[bytes]:
    dockerd = shutil.which("dockerd")
    if dockerd is None:
        raise RuntimeError("dockerd is not installed (apt-get install docker.io)")
    DATA_ROOT.mkdir(parents=True, exist_ok=True)
    EXEC_ROOT.mkdir(parents=True, exist_ok=True)
    log_path = DATA_ROOT / "dockerd.log"
    argv = [
        dockerd,
        "--storage-driver=vfs",
        "--iptables=false",
        "--ip-masq=false",
        "--bridge=none",
        f"--data-root={DATA_ROOT / 'data'}",
        f"--exec-root={EXEC_ROOT / 'exec'}",
        f"--pidfile={EXEC_ROOT / 'dockerd.pid'}",
        "--containerd-namespace=qualify-tests",
        "--containerd-plugins-namespace=qualify-tests-plugins",
        f"-H={SOCKET}",
    ]
    with log_path.open("ab") as log:
        process = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True
        )
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"dockerd exited with {process.returncode}: see {log_path}")
        if answers(SOCKET):
            return process
        time.sleep(0.2)
    process.terminate()
    raise RuntimeError(f"dockerd did not answer within {START_TIMEOUT_S:.0f}s: see {log_path}")


@contextlib.contextmanager
def engine() -> Iterator[str]:
    """DOCKER_HOST of an answering engine, started here when none answers."""
    for host in (os.environ.get("DOCKER_HOST"), "unix:///var/run/docker.sock", SOCKET):
        if host and answers(host):
            yield host
            return
    process = _start_dockerd()
    try:
        yield SOCKET
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def build_image(host: str) -> str:
    """Import the empty test image (idempotent), the root filesystem of qualify's own
    host-Python image; returns its name."""
    import docker

    from qualify.sandbox.docker.image import host_python_rootfs

    client: Any = docker.DockerClient(base_url=host, timeout=60)
    try:
        repository, tag = IMAGE.split(":")
        client.api.import_image_from_data(host_python_rootfs(), repository=repository, tag=tag)
    finally:
        client.close()
    return IMAGE
