"""The running side of the docker backend: the container as a Popen-like child, its logs, and
a probe over the container's own cgroup (found from its init pid, read from the host)."""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from pathlib import Path
from typing import IO, Any

from qualify.plan.limits import Limits
from qualify.sandbox.base import Probe
from qualify.sandbox.cgroup.fs import read_limits
from qualify.sandbox.cgroup.layout import detect_layout, v2_mount_point
from qualify.sandbox.cgroup.v1 import V1Probe
from qualify.sandbox.cgroup.v2 import V2Probe

PUMP_JOIN_S = 10.0


def container_cgroup(proc_cgroup: bytes, mountinfo: bytes) -> tuple[Path, Path | None, int]:
    """The container's memory cgroup directory, its pids directory and the cgroup version,
    from its init's /proc/<pid>/cgroup and the host's mountinfo (pure)."""
    # b"memory": the engine made this cgroup with the memory controller enabled.
    layout = detect_layout(proc_cgroup, mountinfo, b"memory")
    if layout.version is None or layout.memory_dir is None:
        raise LookupError("no memory cgroup for the container")
    return layout.memory_dir, layout.pids_dir, layout.version


def cgroup_read_back(pid: int) -> tuple[Path, int, Limits] | None:
    """(directory, version, limits in effect) of the container whose init is ``pid``; None
    when it already ended (its cgroup is gone with it)."""
    if pid <= 0:
        return None
    mountinfo = Path("/proc/self/mountinfo").read_bytes()
    try:
        memory, pids, version = container_cgroup(
            Path(f"/proc/{pid}/cgroup").read_bytes(), mountinfo
        )
        limits = read_limits(version, memory, pids, v2_mount_point(mountinfo))
    except (OSError, LookupError):
        return None
    return memory, version, limits


class ContainerChild:
    """A started container seen like a Popen: poll / wait / returncode / kill, and stdout /
    stderr pipes fed from the engine's log stream (bounded by BoundedLog downstream)."""

    def __init__(self, container: Any, run_dir: Path):
        self.container = container
        self.pid = 0
        self.returncode: int | None = None
        self.oom_killed: bool | None = None
        self.stdout: IO[bytes]
        self.stderr: IO[bytes]
        self._pumps: list[threading.Thread] = []
        self._problems: list[str] = []
        """What the pumps and the waiter met, for the audit (appended from their threads)."""
        for stream in ("stdout", "stderr"):
            read_fd, write_fd = os.pipe()
            setattr(self, stream, os.fdopen(read_fd, "rb", buffering=0))
            pump = threading.Thread(
                target=self._pump, args=(stream, write_fd), name=f"qualify-docker-{stream}"
            )
            pump.daemon = True
            pump.start()
            self._pumps.append(pump)
        self._done = threading.Event()
        self._waiter = threading.Thread(target=self._wait, name="qualify-docker-wait", daemon=True)
        self._waiter.start()

    def _pump(self, stream: str, write_fd: int) -> None:
        try:
            chunks = self.container.logs(
                stream=True, follow=True, stdout=stream == "stdout", stderr=stream == "stderr"
            )
            for chunk in chunks:
                os.write(write_fd, chunk)
        except Exception as exc:  # the engine's or the pipe's: the log ends here, and says so
            self._problems.append(
                f"the container's {stream} stopped being copied: {exc!r}; the log may be cut"
            )
        finally:
            os.close(write_fd)

    def _wait(self) -> None:
        code: int | None = None
        try:
            code = int(self.container.wait()["StatusCode"])
            self.container.reload()
            state = self.container.attrs["State"]
            code = int(state.get("ExitCode", code))
            self.oom_killed = bool(state.get("OOMKilled"))
        except Exception as exc:  # removed before we looked: 137 is what docker says of a kill
            self._problems.append(
                f"cannot read the container's end from the engine: {exc!r}; "
                f"its exit code is taken as {137 if code is None else code}"
            )
            code = 137 if code is None else code
        for pump in self._pumps:
            pump.join(timeout=PUMP_JOIN_S)
        self.returncode = code
        self._done.set()

    def poll(self) -> int | None:
        """The exit code once the container ended and its logs were copied."""
        return self.returncode if self._done.is_set() else None

    def wait(self, timeout: float | None = None) -> int | None:
        """Wait for the end; raises subprocess.TimeoutExpired like Popen."""
        import subprocess

        if not self._done.wait(timeout):
            raise subprocess.TimeoutExpired(["container", self.container.id], timeout or 0)
        return self.returncode

    def kill(self) -> None:
        """SIGKILL the container."""
        with contextlib.suppress(Exception):
            self.container.kill()

    def finish(self) -> list[str]:
        """Wait briefly for the log pumps (teardown removes the container next); what the
        pumps and the waiter met."""
        for pump in self._pumps:
            pump.join(timeout=2)
        return list(self._problems)

    @property
    def signal(self) -> str | None:
        """The signal that ended the E2E: docker-init (``--init``, tini) exits with 128 + the
        number of the signal that killed its child, as a shell does; the engine's own SIGKILL
        (``docker kill``, an OOM kill) reads the same way."""
        code = self.returncode
        if code is None or code <= 128:
            return None
        try:
            return signal.Signals(code - 128).name
        except ValueError:
            return f"signal {code - 128}"

    def oom_notes(self, probe: DockerProbe) -> list[str]:
        """Each OOM signal separately, for the audit."""
        counter = probe.last_oom_kills
        return [
            f"oom signal: State.OOMKilled={self.oom_killed}",
            f"oom signal: exit code {self.returncode}"
            + (" (128+SIGKILL)" if self.returncode == 137 else ""),
            "oom signal: cgroup oom_kill counter "
            + (f"= {counter} (last read)" if counter is not None else "not readable"),
        ]


class DockerProbe:
    """V1Probe / V2Probe over the container's cgroup once it runs; the engine's OOMKilled
    flag counts as one OOM kill when the counter was gone before it could be read."""

    def __init__(self) -> None:
        self.inner: Probe | None = None
        self.parent: Probe | None = None
        """The container's parent cgroup, when qualify made one: it holds the same charge and
        its watermark survives the container's cgroup."""
        self.child: ContainerChild | None = None
        self.last_oom_kills: int | None = None

    def bind(self, directory: Path, version: int) -> None:
        """Read the container's cgroup ``directory`` from now on."""
        self.inner = V1Probe(directory) if version == 1 else V2Probe(directory)

    def _memory(self) -> Probe | None:
        return self.parent or self.inner

    def memory_directory(self) -> Path | None:
        """The memory cgroup read (the parent's when there is one), once the container runs."""
        memory = self._memory()
        return getattr(memory, "directory", None) if memory is not None else None

    def usage_bytes(self) -> int | None:
        """memory usage of the container (through its parent cgroup when there is one)."""
        memory = self._memory()
        return memory.usage_bytes() if memory else None

    def watermark_bytes(self) -> int | None:
        """The container's watermark (the parent's outlives the container)."""
        memory = self._memory()
        return memory.watermark_bytes() if memory else None

    def reset_watermark(self) -> bool:
        """Reset the watermark."""
        memory = self._memory()
        return memory.reset_watermark() if memory else False

    def oom_kills(self) -> int | None:
        """The cgroup's counter; at least 1 once the engine says OOMKilled."""
        with contextlib.suppress(OSError, ValueError):
            if self.inner is not None:
                self.last_oom_kills = self.inner.oom_kills()
        flagged = self.child is not None and self.child.oom_killed
        if flagged:
            return max(self.last_oom_kills or 0, 1)
        return self.last_oom_kills

    def memory_breakdown(self) -> dict[str, int]:
        """anon / file of the container's cgroup."""
        return self.inner.memory_breakdown() if self.inner else {}

    def pids(self) -> list[int]:
        """Host pids of the container's processes."""
        return self.inner.pids() if self.inner else []

    def limit_hits(self) -> int | None:
        """How often the container's usage reached its cap."""
        return self.inner.limit_hits() if self.inner else None

    def pids_refused(self) -> int | None:
        """Forks the container's pids limit refused."""
        return self.inner.pids_refused() if self.inner else None

    def close(self) -> None:
        """Release descriptors."""
        for probe in (self.inner, self.parent):
            if probe is not None:
                probe.close()
