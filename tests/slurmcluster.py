"""A real single-node Slurm cluster for the tests, started and stopped by the test session.

Debian's ``slurm-wlm`` and ``munge``: a private ``munged`` (its own key, socket and pid file),
``slurmctld`` and ``slurmd -N localhost`` in the foreground as children of the test process,
every file of theirs (config, state, spool, logs, the job-completion file) in one directory of
the session. The cluster constrains memory the way GPU CI clusters do: ``proctrack/cgroup``,
``task/cgroup``, ``select/cons_tres`` with ``CR_Core_Memory``, ``ConstrainRAMSpace`` and
``ConstrainSwapSpace`` with no swap allowed; no accounting database, ``jobcomp/filetxt``.
Client commands find it through ``SLURM_CONF``.

Stopping cancels every job, waits for them to end, stops the daemons, kills whatever is left
in the cluster's cgroups, removes the ``slurm_<node>`` cgroup directories depth-first (stopped
daemons leave them), and reports anything that survived.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

NODE = "localhost"
CGROUP_ROOT = Path("/sys/fs/cgroup")
START_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 30.0
PROGRAMS = ("munged", "mungekey", "slurmctld", "slurmd", "sbatch", "sinfo", "squeue", "scancel")


def missing_programs() -> list[str]:
    """The programs the cluster needs that are not installed."""
    return [name for name in PROGRAMS if shutil.which(name) is None]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def cgroup_dirs(node: str = NODE) -> list[Path]:
    """The cluster's top cgroup directory in every v1 hierarchy (``slurm_<node>``)."""
    return sorted(CGROUP_ROOT.glob(f"*/slurm_{node}"))


def _cgroup_pids(directories: list[Path]) -> set[int]:
    pids: set[int] = set()
    for top in directories:
        for procs in top.rglob("cgroup.procs"):
            with contextlib.suppress(OSError, ValueError):
                pids |= {int(line) for line in procs.read_text().split()}
    return pids


def remove_cgroups(node: str = NODE) -> list[str]:
    """Kill what is left in the cluster's cgroups, then remove them deepest first; returns
    what could not be removed."""
    tops = cgroup_dirs(node)
    for _ in range(50):
        pids = _cgroup_pids(tops)
        if not pids:
            break
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.1)
    problems = []
    for top in tops:
        for directory in sorted(
            (path for path in top.rglob("*") if path.is_dir()),
            key=lambda path: len(path.parts),
            reverse=True,
        ):
            with contextlib.suppress(FileNotFoundError):
                try:
                    directory.rmdir()
                except OSError as exc:
                    problems.append(f"cgroup {directory}: {exc.strerror}")
        with contextlib.suppress(FileNotFoundError):
            try:
                top.rmdir()
            except OSError as exc:
                problems.append(f"cgroup {top}: {exc.strerror}")
    return problems


def _cgroup_plugin() -> str:
    if (CGROUP_ROOT / "memory" / "memory.limit_in_bytes").exists():
        return "cgroup/v1"
    return "autodetect"


@dataclasses.dataclass
class Cluster:
    """A running cluster: its directory, config and daemons."""

    root: Path
    conf: Path
    jobcomp: Path
    processes: dict[str, subprocess.Popen[bytes]] = dataclasses.field(default_factory=dict)

    @property
    def env(self) -> dict[str, str]:
        """The environment of a Slurm client command (and of the jobs it submits)."""
        return dict(os.environ, SLURM_CONF=str(self.conf))

    def run(self, *argv: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
        """A Slurm client command against this cluster."""
        return subprocess.run(
            list(argv), env=self.env, capture_output=True, text=True, timeout=timeout, check=False
        )

    def log(self, name: str, lines: int = 20) -> str:
        """The last lines of a daemon's log."""
        path = self.root / "log" / f"{name}.log"
        try:
            return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return f"(no {path})"

    def survivors(self) -> list[str]:
        """Live processes (zombies aside) whose command line or environment names this
        cluster's directory: its daemons and every slurmstepd they started."""
        marker = str(self.root).encode()
        found = []
        for proc in Path("/proc").iterdir():
            if not proc.name.isdigit() or int(proc.name) == os.getpid():
                continue
            try:
                status = (proc / "stat").read_bytes()
                if status[status.rindex(b")") + 2 : status.rindex(b")") + 3] == b"Z":
                    continue
                if marker in (proc / "cmdline").read_bytes() + (proc / "environ").read_bytes():
                    found.append(f"{proc.name} {(proc / 'comm').read_text().strip()}")
            except (OSError, ValueError):
                continue
        return found

    def jobs(self) -> list[str]:
        """Job ids slurmctld still has in its queue."""
        said = self.run("squeue", "--noheader", "--format", "%i")
        return said.stdout.split() if said.returncode == 0 else []

    def _daemon(self, name: str, argv: list[str]) -> None:
        log = (self.root / "log" / f"{name}.out").open("ab")
        with log:
            self.processes[name] = subprocess.Popen(
                argv,
                env=self.env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                start_new_session=True,
            )

    def _wait(self, what: str, ready: Callable[[], bool]) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            for name, process in self.processes.items():
                if process.poll() is not None:
                    raise RuntimeError(
                        f"{name} exited with {process.returncode} while waiting for {what}:\n"
                        f"{self.log(name)}"
                    )
            if ready():
                return
            time.sleep(0.05)
        raise RuntimeError(f"Slurm: no {what} within {START_TIMEOUT_S:.0f}s:\n{self.log('slurmd')}")

    def start(self) -> None:
        """munged, slurmctld, slurmd; returns when the node is idle."""
        leftover = _cgroup_pids(cgroup_dirs())
        if leftover:
            raise RuntimeError(f"a Slurm node {NODE!r} already runs here (pids {leftover})")
        remove_cgroups()  # empty ones a crashed session left
        munge = self.root / "munge"
        key, sock = munge / "munge.key", munge / "munge.socket"
        subprocess.run(["mungekey", "--create", f"--keyfile={key}"], check=True)
        self._daemon(
            "munged",
            ["munged", "--foreground", "--force", f"--socket={sock}", f"--key-file={key}",
             f"--pid-file={munge / 'munged.pid'}", f"--log-file={self.root / 'log/munged.log'}",
             f"--seed-file={munge / 'munged.seed'}"],
        )  # fmt: skip
        self._wait("munge socket", sock.exists)
        self._daemon("slurmctld", ["slurmctld", "-D", "-i"])
        self._daemon("slurmd", ["slurmd", "-D", "-N", NODE])
        self._wait("idle node", self._idle)

    def _idle(self) -> bool:
        said = self.run("sinfo", "--noheader", "--format", "%T", timeout=10)
        return said.returncode == 0 and said.stdout.split() == ["idle"]

    def stop(self) -> list[str]:
        """Everything stopped and removed; what survived (empty when nothing did)."""
        problems: list[str] = []
        if "slurmctld" in self.processes and self.processes["slurmctld"].poll() is None:
            jobs = self.jobs()
            if jobs:
                self.run("scancel", *jobs)
            deadline = time.monotonic() + STOP_TIMEOUT_S
            while self.jobs() and time.monotonic() < deadline:
                time.sleep(0.2)
            if self.jobs():
                problems.append(f"jobs still in the queue after scancel: {self.jobs()}")
        for name in ("slurmd", "slurmctld", "munged"):
            process = self.processes.get(name)
            if process is None or process.poll() is not None:
                continue
            process.terminate()
            try:
                process.wait(timeout=STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                problems.append(f"{name} ignored SIGTERM for {STOP_TIMEOUT_S:.0f}s")
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        stray = _cgroup_pids(cgroup_dirs())
        if stray:
            problems.append(f"processes left in the cluster's cgroups: {sorted(stray)}")
        deadline = time.monotonic() + STOP_TIMEOUT_S
        while self.survivors() and time.monotonic() < deadline:
            time.sleep(0.1)
        if self.survivors():
            problems.append(f"processes of the cluster still alive: {self.survivors()}")
        problems += remove_cgroups()
        problems += [f"cgroup {path} still exists" for path in cgroup_dirs()]
        return problems


def write_config(root: Path) -> tuple[Path, Path]:
    """slurm.conf, cgroup.conf and an empty plugstack.conf in ``root/etc``; (conf, jobcomp)."""
    for sub in ("etc", "munge", "spool/ctld", "spool/d", "log", "run"):
        (root / sub).mkdir(parents=True, exist_ok=True)
    (root / "munge").chmod(0o755)  # munged wants its socket's directory reachable by all
    etc, jobcomp = root / "etc", root / "log" / "jobcomp.txt"
    memory_mib = max(1024, (os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") >> 20) - 2048)
    (etc / "slurm.conf").write_text(
        f"""ClusterName=qualifytest
SlurmctldHost={NODE}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket={root / "munge" / "munge.socket"}
CredType=cred/munge
SlurmctldPort={_free_port()}
SlurmdPort={_free_port()}
StateSaveLocation={root / "spool" / "ctld"}
SlurmdSpoolDir={root / "spool" / "d"}
SlurmctldPidFile={root / "run" / "slurmctld.pid"}
SlurmdPidFile={root / "run" / "slurmd.pid"}
SlurmctldLogFile={root / "log" / "slurmctld.log"}
SlurmdLogFile={root / "log" / "slurmd.log"}
PlugStackConfig={etc / "plugstack.conf"}
ProctrackType=proctrack/cgroup
TaskPlugin=task/cgroup
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
JobCompType=jobcomp/filetxt
JobCompLoc={jobcomp}
JobAcctGatherType=jobacct_gather/cgroup
AccountingStorageType=accounting_storage/none
MpiDefault=none
ReturnToService=2
KillWait=5
MinJobAge=300
NodeName={NODE} CPUs={os.cpu_count() or 1} RealMemory={memory_mib} State=UNKNOWN
PartitionName=debug Nodes={NODE} Default=YES MaxTime=INFINITE State=UP
"""
    )
    (etc / "cgroup.conf").write_text(
        f"CgroupPlugin={_cgroup_plugin()}\n"
        "ConstrainRAMSpace=yes\nConstrainSwapSpace=yes\nAllowedSwapSpace=0\n"
    )
    (etc / "plugstack.conf").write_text("")
    return etc / "slurm.conf", jobcomp


@contextlib.contextmanager
def cluster(root: Path) -> Iterator[Cluster]:
    """A started cluster in ``root``; stopped at the end, RuntimeError naming what survived."""
    conf, jobcomp = write_config(root)
    running = Cluster(root, conf, jobcomp)
    try:
        running.start()
        yield running
    finally:
        problems = running.stop()
        if problems:
            raise RuntimeError("the Slurm cluster left things behind: " + "; ".join(problems))
