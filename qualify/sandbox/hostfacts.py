"""What this machine offers for capping a run, read without changing anything.

The facts come from the kernel (/proc/self/cgroup, mountinfo, the cgroup's own files), systemd
(PID 1 and ``systemctl --version``), sudo (``sudo -n true``), the docker engine (version and
info), NVML and the MPS control daemon. ``gather`` reads them on the running machine; the
decision (``qualify.sandbox.choice``) only ever sees a ``HostFacts``, so it is tested on facts
captured on machines that are not here (tests/data/samples/ci_runners/).
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import socket
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from qualify.records import frozen_record
from qualify.sandbox.cgroup.fs import parse_procs, read_bytes
from qualify.sandbox.cgroup.layout import (
    detect_layout,
    own_v2_controllers,
    own_v2_dir,
)
from qualify.subproc import run_capture

PROBE_TIMEOUT_S = 5.0
"""Each probe (sudo, systemctl, the engine) gets this long; a hung one is reported as such."""


@frozen_record
class CgroupFacts:
    """This process's place in the cgroup hierarchy, as the kernel shows it."""

    proc_cgroup: bytes
    mountinfo: bytes
    controllers: bytes | None = None
    """cgroup.controllers of this process's own v2 cgroup (None: no cgroup2 mount)."""
    subtree_control: bytes | None = None
    """cgroup.subtree_control of the same cgroup (None: not read)."""
    writable: bool = False
    """This process may create a cgroup in its own memory cgroup."""
    owner_uid: int | None = None
    """Owner of its own memory cgroup directory (None: not read)."""
    other_processes: int | None = None
    """Processes in its own v2 cgroup besides itself (None: not read, or cgroup v1)."""


@frozen_record
class SystemdFacts:
    """Whether systemd manages this machine and can create a delegated transient scope."""

    booted: bool
    """/run/systemd/system exists: systemd is PID 1 (sd_booted(3))."""
    version_output: bytes | None
    """stdout of ``systemctl --version`` (None: not installed or it failed)."""
    systemd_run: str | None
    """Path of systemd-run (None: not installed)."""


@frozen_record
class DockerFacts:
    """The engine ``DOCKER_HOST`` names, as it answered (or why it did not)."""

    host: str
    answered: bool
    error: str = ""
    version: str | None = None
    name: str | None = None
    """The engine host's name (``docker info``: Name)."""
    root_dir: str | None = None
    """Its data root (``docker info``: Docker Root Dir)."""
    root_dir_here: bool = False
    """That directory exists on this side: with ``name`` equal to this host's name, the
    engine runs on this host and bind mounts name the paths qualify sees."""
    cgroup_version: str | None = None
    cgroup_driver: str | None = None
    runtimes: tuple[str, ...] = ()


@frozen_record
class GpuFacts:
    """NVIDIA devices as NVML reads them, and the MPS control daemon."""

    device_bytes: tuple[int, ...] = ()
    nvml_reason: str = ""
    """Why NVML reads no device ("" when it does)."""
    mps_daemon: str = ""
    """The daemon found ("" when none)."""
    mps_reason: str = ""


@frozen_record
class HostFacts:
    """Everything the backend decision looks at."""

    euid: int
    user: str
    hostname: str
    sudo_path: str | None
    sudo: bool
    """``sudo -n true`` succeeded (passwordless sudo); False when root or not asked."""
    sudo_reason: str
    cgroup: CgroupFacts
    systemd: SystemdFacts
    docker: DockerFacts
    gpu: GpuFacts = GpuFacts()


def _user(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"uid {uid}"


def _first_line(text: str | bytes) -> str:
    if isinstance(text, bytes):
        text = text.decode(errors="replace")
    return (text.strip().splitlines() or [""])[0]


def gather_cgroup(proc_cgroup: bytes, mountinfo: bytes) -> CgroupFacts:
    """Read this process's cgroup files (the parts the decision needs)."""
    controllers = own_v2_controllers(proc_cgroup, mountinfo)
    layout = detect_layout(proc_cgroup, mountinfo, controllers)
    own_v2 = own_v2_dir(proc_cgroup, mountinfo)
    subtree: bytes | None = None
    others: int | None = None
    if own_v2 is not None:
        with contextlib.suppress(OSError):
            subtree = read_bytes(own_v2 / "cgroup.subtree_control")
        with contextlib.suppress(OSError, ValueError):
            procs = parse_procs(read_bytes(own_v2 / "cgroup.procs"))
            others = len([pid for pid in procs if pid != os.getpid()])
    directory = layout.memory_dir or own_v2
    writable, owner = False, None
    if directory is not None:
        writable = os.access(directory, os.W_OK)
        with contextlib.suppress(OSError):
            owner = directory.stat().st_uid
    return CgroupFacts(proc_cgroup, mountinfo, controllers, subtree, writable, owner, others)


def gather_sudo(euid: int) -> tuple[str | None, bool, str]:
    """(path, works, why not) of passwordless sudo; root needs none."""
    path = shutil.which("sudo")
    if euid == 0:
        return path, False, "not needed: already root"
    if path is None:
        return None, False, "sudo is not installed"
    try:
        done = run_capture([path, "-n", "true"], timeout_s=PROBE_TIMEOUT_S)
    except OSError as exc:
        return path, False, f"sudo -n true: {exc.strerror}"
    except subprocess.TimeoutExpired:
        return path, False, f"sudo -n true did not answer within {PROBE_TIMEOUT_S:.0f}s"
    if done.returncode != 0:
        why = _first_line(done.stderr) or f"exit code {done.returncode}"
        return path, False, f"sudo -n true: {why}"
    return path, True, ""


def gather_systemd() -> SystemdFacts:
    """Is systemd PID 1, which version, and is systemd-run there."""
    booted = Path("/run/systemd/system").is_dir()
    output: bytes | None = None
    systemctl = shutil.which("systemctl")
    if systemctl is not None:
        with contextlib.suppress(OSError, subprocess.TimeoutExpired):
            done = run_capture([systemctl, "--version"], timeout_s=PROBE_TIMEOUT_S)
            if done.returncode == 0:
                output = done.stdout
    return SystemdFacts(booted, output, shutil.which("systemd-run"))


def _unix_socket_answers(path: str) -> str:
    """Empty when something accepts on the socket, else why not (asked before the SDK: a
    refused connect in docker-py leaks its socket, a ResourceWarning)."""
    with socket.socket(socket.AF_UNIX) as probe:
        probe.settimeout(PROBE_TIMEOUT_S)
        try:
            probe.connect(path)
        except OSError as exc:
            return f"{path}: {exc.strerror or exc}"
    return ""


def gather_docker(environ: Mapping[str, str]) -> DockerFacts:
    """Ask the engine DOCKER_HOST names (default the local socket) who and where it is."""
    host = environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock"
    if host.startswith("unix://"):
        why = _unix_socket_answers(host.removeprefix("unix://"))
        if why:
            return DockerFacts(host, False, f"no engine answers: {why}")
    try:
        import docker  # type: ignore[import-untyped]
    except ImportError as exc:  # a dependency of qualify; only a broken install lacks it
        return DockerFacts(host, False, f"the docker SDK is missing: {exc}")
    try:
        client = docker.DockerClient(base_url=host, timeout=PROBE_TIMEOUT_S)
    except docker.errors.DockerException as exc:
        return DockerFacts(host, False, f"no engine answers: {_first_line(str(exc))}")
    try:
        version: dict[str, Any] = client.version()
        info: dict[str, Any] = client.info()
    except Exception as exc:  # connection refused, permission denied on the socket, timeout
        return DockerFacts(host, False, f"no engine answers: {_first_line(str(exc))}")
    finally:
        client.close()
    root_dir = info.get("DockerRootDir")
    return DockerFacts(
        host=host,
        answered=True,
        version=version.get("Version"),
        name=info.get("Name"),
        root_dir=root_dir,
        root_dir_here=bool(root_dir) and os.path.isdir(str(root_dir)),
        cgroup_version=str(info.get("CgroupVersion") or "") or None,
        cgroup_driver=info.get("CgroupDriver"),
        runtimes=tuple(sorted(info.get("Runtimes") or {})),
    )


def gather_gpu(environ: Mapping[str, str]) -> GpuFacts:
    """NVML's devices and the MPS daemon clients would reach."""
    from qualify.nvml import device_totals
    from qualify.plan.mps import find_daemon

    totals, nvml_reason = device_totals()
    daemon, mps_reason = find_daemon(environ)
    described = ""
    if daemon is not None:
        described = f"{daemon.control} at {daemon.pipe_directory} (pid {daemon.pid})"
    return GpuFacts(tuple(totals), nvml_reason, described, mps_reason)


def gather(environ: Mapping[str, str]) -> HostFacts:
    """The facts of the running machine."""
    euid = os.geteuid()
    hostname = socket.gethostname()
    sudo_path, sudo, sudo_reason = gather_sudo(euid)
    return HostFacts(
        euid=euid,
        user=_user(euid),
        hostname=hostname,
        sudo_path=sudo_path,
        sudo=sudo,
        sudo_reason=sudo_reason,
        cgroup=gather_cgroup(
            Path("/proc/self/cgroup").read_bytes(), Path("/proc/self/mountinfo").read_bytes()
        ),
        systemd=gather_systemd(),
        docker=gather_docker(environ),
        gpu=gather_gpu(environ),
    )
