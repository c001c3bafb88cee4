"""``--backend docker``: the E2E in a detached container of ``--image``, capped by the engine.

The container's memory and swap limits are equal (swap off), /dev/shm is sized explicitly (it
is charged to the cap), the network is off unless ``--network`` opts in, every capability is
dropped. Limits are read back twice: from the engine (HostConfig) before start and from the
container's own cgroup files after start; any difference is an ERROR, never an uncapped PASS.
The monitor reads the same cgroup files (V1Probe / V2Probe) as with the cgroup backend.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from qualify import records
from qualify.errors import SandboxError, UsageError
from qualify.plan.docker import DockerOptions, device_requests, host_gpu_count
from qualify.plan.limits import Limits, expected_in_effect, limit_mismatches
from qualify.sandbox.base import SandboxInfo, StopReport
from qualify.sandbox.cgroup.common import KILLED_LISTED, comm_of, remove_dir
from qualify.sandbox.cgroup.layout import current_layout
from qualify.sandbox.cgroup.v1 import V1Probe
from qualify.sandbox.docker.child import ContainerChild, DockerProbe, cgroup_read_back

HARNESS_MOUNT = "/qualify/harness-root"
LABEL_RUN = "qualify.run-id"
LABEL_MANAGED = "qualify.managed"
LABEL_PID = "qualify.pid"


LIMITS_LOCKED = (
    "the E2E cannot change its limits: the container's cgroup filesystem is read-only to it "
    "and every capability is dropped"
)
"""The audit's note on how the limits are protected for the whole run (a test checks the
write is refused from inside a real container)."""


def host_python_dirs() -> list[str]:
    """Host directories a container needs to run this interpreter (``--mount-host-python``)."""
    candidates = [
        "/usr",
        sys.prefix,
        sys.base_prefix,
        os.path.dirname(os.path.realpath(sys.executable)),
    ]
    # On merged-/usr hosts /bin, /lib, /lib64 are symlinks the image provides itself.
    candidates += [
        d for d in ("/bin", "/lib", "/lib64") if os.path.isdir(d) and not os.path.islink(d)
    ]
    chosen: list[str] = []
    for directory in sorted({os.path.realpath(c) for c in candidates}, key=len):
        if not any(directory == c or directory.startswith(c + "/") for c in chosen):
            chosen.append(directory)
    return chosen


def container_env(env: Mapping[str, str], harness_root: Path) -> dict[str, str]:
    """The E2E's environment with host paths below the harness root moved to its mount point
    (the root itself and ``harness/_site``, whose sitecustomize installs the GPU hooks)."""
    inside = dict(env)
    root = str(harness_root)

    def moved(part: str) -> str:
        if part == root or part.startswith(root + os.sep):
            return HARNESS_MOUNT + part[len(root) :]
        return part

    parts = inside.get("PYTHONPATH", "").split(os.pathsep)
    inside["PYTHONPATH"] = os.pathsep.join(moved(part) for part in parts if part)
    return inside


def container_kwargs(
    *,
    options: DockerOptions,
    limits: Limits,
    argv: Sequence[str],
    cwd: Path,
    env: Mapping[str, str],
    run_dir: Path,
    family_dir: Path,
    harness_root: Path,
    run_id: str,
    user: str,
    gpu_requests: list[dict[str, Any]],
    python_dirs: Sequence[str] = (),
    cgroup_parent: str | None = None,
) -> dict[str, Any]:
    """Arguments of ``containers.create`` (pure: tests check them without an engine).

    Host paths are mounted at the same paths inside, so the QUALIFY_* paths stay valid; only
    the harness root moves to HARNESS_MOUNT.
    """
    volumes = {d: {"bind": d, "mode": "ro"} for d in python_dirs}
    volumes[str(family_dir)] = {"bind": str(family_dir), "mode": "ro"}
    volumes[str(harness_root)] = {"bind": HARNESS_MOUNT, "mode": "ro"}
    volumes[str(run_dir)] = {"bind": str(run_dir), "mode": "rw"}
    kwargs: dict[str, Any] = {
        "image": options.image,
        "command": list(argv),
        "working_dir": str(cwd),
        "environment": container_env(env, harness_root),
        "labels": {LABEL_RUN: run_id, LABEL_MANAGED: "1", LABEL_PID: str(os.getpid())},
        "detach": True,
        "init": True,  # docker-init forwards SIGTERM to the E2E (PID 1 ignores it otherwise)
        "user": user,
        "network_mode": options.network,
        "cap_drop": ["ALL"],
        "security_opt": ["no-new-privileges"],
        "shm_size": options.shm_bytes,
        "volumes": volumes,
        "stdin_open": False,
    }
    if limits.memory_bytes is not None:
        kwargs["mem_limit"] = limits.memory_bytes
        kwargs["memswap_limit"] = limits.memory_bytes + (limits.swap_bytes or 0)
    if limits.pids_max is not None:
        kwargs["pids_limit"] = limits.pids_max
    if gpu_requests:
        kwargs["device_requests"] = gpu_requests
    if cgroup_parent is not None:
        kwargs["cgroup_parent"] = cgroup_parent
    if options.mps_pipe_directory is not None:
        pipes = options.mps_pipe_directory
        volumes[pipes] = {"bind": pipes, "mode": "rw"}
        kwargs["ipc_mode"] = "host"  # MPS clients share memory with the server through IPC
        del kwargs["shm_size"]  # /dev/shm is then the host's, not the container's
        kwargs["environment"]["CUDA_MPS_PIPE_DIRECTORY"] = pipes
    return kwargs


def engine_limits(host_config: Mapping[str, Any], swap_total: int) -> Limits:
    """Limits in effect as the engine reports them (HostConfig of ``inspect``)."""
    memory = host_config.get("Memory") or None
    memswap = host_config.get("MemorySwap")
    swap: int | None
    if memory is None or memswap in (None, 0, -1):
        # -1: the engine could not limit swap (no swap accounting); harmless without swap.
        swap = 0 if swap_total == 0 else None
    else:
        swap = int(memswap) - int(memory)
    pids = host_config.get("PidsLimit")
    return Limits(memory, swap, pids if pids and pids > 0 else None)


def connect() -> Any:
    """A client of the engine DOCKER_HOST names; UsageError (one line) when none answers."""
    import docker  # type: ignore[import-untyped]

    try:
        return docker.from_env(timeout=30)
    except docker.errors.DockerException as exc:
        where = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
        raise UsageError(f"no docker engine answers at {where}: {_first_line(exc)}") from None


def check_image(client: Any, image: str) -> None:
    """UsageError when ``image`` is not in the engine (qualify never pulls)."""
    import docker

    try:
        client.images.get(image)
    except docker.errors.ImageNotFound:
        raise UsageError(
            f"--image {image}: no such image in the engine (build or pull it first)"
        ) from None
    except docker.errors.APIError as exc:
        raise UsageError(f"--image {image}: {_first_line(exc)}") from None


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def _pid_alive(label: str | None) -> bool:
    if not label or not label.isdigit():
        return False
    try:
        os.kill(int(label), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def reclaim_orphans(client: Any) -> list[str]:
    """Remove exited/dead qualify containers whose qualify process is gone; their ids."""
    reclaimed = []
    filters = {"label": f"{LABEL_MANAGED}=1", "status": ["exited", "dead", "created"]}
    for container in client.containers.list(all=True, filters=filters):
        if _pid_alive(container.labels.get(LABEL_PID)):
            continue  # a concurrent run's container, between its exit and its removal
        with contextlib.suppress(Exception):
            container.remove(force=True)
            reclaimed.append(container.id)
    return reclaimed


class DockerSandbox:
    """One run's container: created and started by ``start``, removed by ``teardown``."""

    name = "docker"

    def __init__(
        self, client: Any, options: DockerOptions, run_id: str, family_dir: Path, harness_root: Path
    ):
        self.client, self.options, self.run_id = client, options, run_id
        self.family_dir, self.harness_root = family_dir, harness_root
        self.container: Any = None
        self.child: ContainerChild | None = None
        self._probe = DockerProbe()
        self._requested = Limits(None, None, None)
        self._info: SandboxInfo | None = None
        self.reason: str | None = None
        self._parents: list[Path] = []

    def prepare(self, requested: Limits) -> SandboxInfo:
        """Reclaim orphans; limits are read back in ``start`` (the container does not exist yet)."""
        self._requested = requested
        notes = [f"reclaimed orphaned container {cid[:12]}" for cid in reclaim_orphans(self.client)]
        if self.reason:
            notes.insert(0, self.reason)
        parent_note = self._make_parent()
        if parent_note:
            notes.append(parent_note)
        notes += [
            f"image {self.options.image}",
            f"network {self.options.network}",
            f"shm_size {self.options.shm_bytes} bytes (charged to the memory cap)"
            if self.options.mps_pipe_directory is None
            else "ipc host for MPS: /dev/shm is the host's, not charged to the memory cap",
            LIMITS_LOCKED,
        ]
        self._info = SandboxInfo(
            self.name, True, None, expected_in_effect(requested), tuple(notes), limits_locked=True
        )
        return self._info

    @property
    def parent_path(self) -> str:
        """The cgroup the container is created under (cgroupfs driver, cgroup v1)."""
        return f"/qualify-{self.run_id}"

    def _make_parent(self) -> str | None:
        """Create an unlimited parent memory cgroup for the container, so that the run's
        watermark outlives the container (the engine removes the container's cgroup the moment
        it exits, OOM kill included). Only where the engine uses the cgroupfs driver on v1."""
        layout = current_layout()
        if layout.version != 1 or layout.memory_dir is None or layout.memory_path is None:
            return None
        import docker

        try:
            driver = self.client.info().get("CgroupDriver")
        except (docker.errors.DockerException, OSError):  # (requests' errors are OSErrors)
            return None
        if driver != "cgroupfs":
            return None
        root = Path(str(layout.memory_dir)[: -len(layout.memory_path)] or "/")
        parent = root / self.parent_path.lstrip("/")
        try:
            parent.mkdir()
        except OSError:
            return None
        self._parents.append(parent)
        return f"container under cgroup {self.parent_path}, whose watermark outlives it"

    def info(self) -> SandboxInfo | None:
        """The SandboxInfo with the limits read back after start (None before prepare)."""
        return self._info

    def start(
        self, argv: Sequence[str], cwd: Path, env: Mapping[str, str], run_dir: Path
    ) -> ContainerChild:
        """Create the container, check the engine's limits, start it, check its cgroup's."""
        kwargs = container_kwargs(
            options=self.options,
            limits=self._requested,
            argv=argv,
            cwd=cwd,
            env=env,
            run_dir=run_dir,
            family_dir=self.family_dir,
            harness_root=self.harness_root,
            run_id=self.run_id,
            user=f"{os.getuid()}:{os.getgid()}",
            gpu_requests=device_requests(self.options.gpus, host_gpu_count()),
            python_dirs=host_python_dirs() if self.options.mount_host_python else (),
            cgroup_parent=self.parent_path if self._parents else None,
        )
        if self._parents:
            self._probe.parent = V1Probe(self._parents[0])
        try:
            self.container = self.client.containers.create(**kwargs)
        except Exception as exc:
            if self._info is not None:  # nothing was confined: no limit is in effect
                self._info = records.replace(self._info, in_effect=Limits(None, None, None))
            raise SandboxError(f"docker cannot create the container: {_first_line(exc)}") from exc
        self.container.reload()
        engine = engine_limits(self.container.attrs["HostConfig"], _swap_total())
        self._record(engine, f"container {self.container.id[:12]}")
        self.container.start()
        self.child = ContainerChild(self.container, run_dir)
        self.container.reload()
        read_back = cgroup_read_back(self.container.attrs["State"].get("Pid") or 0)
        if read_back is None:
            self._record(engine, "the container ended before its cgroup could be read")
        else:
            directory, version, in_effect = read_back
            self._probe.bind(directory, version)
            self._record(in_effect, f"cgroup v{version} of the container read back")
        self._probe.child = self.child
        return self.child

    def _record(self, in_effect: Limits, note: str) -> None:
        assert self._info is not None
        self._info = records.replace(
            self._info, in_effect=in_effect, notes=(*self._info.notes, note)
        )
        mismatches = limit_mismatches(self._requested, in_effect)
        if mismatches:
            raise SandboxError("limits in effect differ from those asked: " + "; ".join(mismatches))

    def wrap(self, argv: Sequence[str]) -> list[str]:
        """Unused: ``start`` runs the command in the container."""
        return list(argv)

    def attach(self, pid: int) -> None:
        """Unused: ``start`` binds the probe to the container's cgroup."""

    def probe(self) -> DockerProbe:
        """Probe of the container's cgroup (bound once the container runs)."""
        return self._probe

    def kill_all(self, signal_number: int) -> int:
        """Signal the container (docker-init passes it on to the E2E)."""
        if self.container is None:
            return 0
        import docker

        try:
            self.container.kill(signal=signal.Signals(signal_number).name)
        except (docker.errors.DockerException, OSError):
            return 0  # not running any more
        return 1

    def cgroup_dirs(self) -> list[Path]:
        """None: the engine owns the container's cgroup (qualify's parent cgroup, when it made
        one, is removed by qualify)."""
        return []

    def stop(self, group: int | None = None) -> StopReport:
        """SIGKILL the container (the engine kills every process of it) and wait for its end;
        the container and its counters stay until ``teardown``."""
        pids = self._probe.pids() if self.container is not None else []
        killed = tuple((pid, comm_of(pid)) for pid in pids[:KILLED_LISTED])
        problems: list[str] = []
        if self.container is not None and self.child is not None and self.child.poll() is None:
            self.kill_all(signal.SIGKILL)
            try:
                self.child.wait(timeout=10)
            except subprocess.TimeoutExpired:
                problems.append(f"container {self.container.id[:12]} did not end within 10s")
        return StopReport(killed=killed, killed_count=len(pids), problems=tuple(problems))

    def teardown(self) -> list[str]:
        """Remove the container (force: kills it first); never raises."""
        if self.container is None:
            return []
        problems = []
        if self.child is not None:
            problems += self.child.finish()
        try:
            self.container.remove(force=True)
        except Exception as exc:
            if "No such container" not in str(exc):
                problems.append(f"cannot remove container {self.container.id[:12]}: {exc}")
        if self._info is not None and self.child is not None:
            self._info = records.replace(
                self._info, notes=(*self._info.notes, *self.child.oom_notes(self._probe))
            )
        return problems + self._remove_parents()

    def _remove_parents(self) -> list[str]:
        """rmdir the parent in every v1 hierarchy the engine created it in."""
        if not self._parents:
            return []
        problems: list[str] = []
        for hierarchy in self._parents[0].parent.parent.iterdir():
            candidate = hierarchy / self.parent_path.lstrip("/")
            if candidate.is_dir():
                problems += remove_dir(candidate)
        return problems


def _swap_total() -> int:
    from qualify.sandbox.cgroup.fs import host_swap_total

    return host_swap_total(Path("/proc/meminfo").read_bytes())
