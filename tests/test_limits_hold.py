"""The limits asked hold for the whole run: a test that writes its own cgroup's cap, as root
can, makes the run an ERROR naming the file, its old and new values and when; a cap raised and
lowered again between two readings shows as a peak above the cap asked."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from qualify.sandbox.cgroup.fs import LimitWatch, limit_files
from qualify.sandbox.cgroup.layout import current_layout
from tests.conftest import RunQualify, family_repo, git, path_without

MIB = 2**20

# Finds its own memory cgroup (v1 or v2) from /proc/self/cgroup and /proc/self/mountinfo,
# raises the cap there, allocates past the cap asked, and (``restore``) lowers it again.
RAISER = """
import os, time
import harness

MIB = 2**20


def own_memory_cgroup():
    mounts = {}
    for line in open("/proc/self/mountinfo"):
        fields = line.split()
        fstype, options = fields[fields.index("-") + 1], fields[-1].split(",")
        if fstype == "cgroup2":
            mounts["2"] = fields[4]
        elif fstype == "cgroup" and "memory" in options:
            mounts["memory"] = fields[4]
    for line in open("/proc/self/cgroup"):
        _, controllers, path = line.rstrip("\\n").split(":", 2)
        if "memory" in controllers.split(",") and "memory" in mounts:
            return mounts["memory"] + path, 1
        if controllers == "" and "2" in mounts and "memory" not in mounts:
            return mounts["2"] + path, 2
    raise RuntimeError("no memory cgroup")


def write(path, value):
    with open(path, "w") as handle:
        handle.write(str(value))


def raise_cap(directory, version, limit):
    if version == 1:  # memsw may never be below the limit: raise it first
        write(directory + "/memory.memsw.limit_in_bytes", limit)
        write(directory + "/memory.limit_in_bytes", limit)
    else:
        write(directory + "/memory.max", limit)


def lower_cap(directory, version, limit):
    if version == 1:
        write(directory + "/memory.limit_in_bytes", limit)
        write(directory + "/memory.memsw.limit_in_bytes", limit)
    else:
        write(directory + "/memory.max", limit)


def test_raise_own_cap():
    directory, version = own_memory_cgroup()
    asked = harness.option("asked_mib", 200) * MIB
    with harness.phase("raised"):
        raise_cap(directory, version, 1024 * MIB)
        block = bytearray(harness.option("alloc_mib", 430) * MIB)
        block[::4096] = b"x" * len(block[::4096])
        if not harness.option("restore", False):
            time.sleep(0.3)
        del block
        if harness.option("restore", False):
            lower_cap(directory, version, asked)
"""


@pytest.fixture
def raiser_repo(tmp_path: Path) -> Path:
    toml = """
    description = "a test that writes its own cgroup's memory cap"
    [e2e]
    command = ["python", "-m", "pytest", "test_raiser.py", "-q"]
    timeout = "2m"
    [options]
    asked_mib = 200
    alloc_mib = 430
    restore = false
    """
    return family_repo(tmp_path / "repo", "raiser", toml, {"test_raiser.py": RAISER})


CONTAINED = """
import errno


def test_cannot_raise_own_cap():
    tried = []
    for path in ("/sys/fs/cgroup/memory/memory.limit_in_bytes", "/sys/fs/cgroup/memory.max"):
        try:
            with open(path, "w") as handle:
                handle.write(str(1 << 30))
        except FileNotFoundError:
            continue
        except OSError as exc:
            tried.append(exc.errno)
        else:
            raise AssertionError(path + " took a new limit")
    assert tried and set(tried) <= {errno.EROFS, errno.EACCES, errno.EPERM}, tried
"""


@pytest.mark.privileged
@pytest.mark.slow
def test_a_container_cannot_raise_its_own_cap(
    raiser_repo: Path, run_qualify: RunQualify, docker_engine: tuple[str, str]
) -> None:
    """The docker backend prevents the write instead of watching for it: a root test inside
    the container is refused, and the audit says which protection was in place."""
    from qualify.sandbox.docker.backend import LIMITS_LOCKED

    _, image = docker_engine
    family = raiser_repo / "families" / "raiser"
    (family / "test_raiser.py").write_text(CONTAINED)
    git(raiser_repo, "commit", "-q", "-am", "inside a container")
    result = run_qualify(
        "run", "--family", "raiser", "--repo", str(raiser_repo), "--mem", "200M",
        "--backend", "docker", "--mount-host-python", "--image", image,
    )  # fmt: skip
    audit = result.audit()
    assert (result.returncode, audit["verdict"]) == (0, "PASSED"), result.stdout + result.stderr
    assert LIMITS_LOCKED in audit["sandbox"]["notes"]


# Every way root inside the run could reach its own memory cgroup's cap: the file itself, the
# same file through another process's root (``/proc/PID/root``: that process's mount
# namespace, where the cgroup file system is writable), remounting it writable, and a mount
# namespace of its own.
LOCKED = (
    RAISER.partition("def test_raise_own_cap")[0]
    + """
import errno, subprocess


def test_every_way_to_the_cap_is_refused():
    directory, version = own_memory_cgroup()
    name = "/memory.limit_in_bytes" if version == 1 else "/memory.max"
    targets = [directory + name]
    pids = [pid for pid in os.listdir("/proc") if pid.isdigit()]
    targets += [f"/proc/{pid}/root{directory}{name}" for pid in pids]
    tried = 0
    for target in targets:
        try:
            write(target, 1 << 30)
        except FileNotFoundError:
            continue
        except OSError as exc:
            assert exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM), (target, exc)
            tried += 1
        else:
            raise AssertionError(target + " took a new cap")
    assert tried >= 1
    for argv in (
        ["mount", "-o", "remount,rw", "/sys/fs/cgroup" + ("/memory" if version == 1 else "")],
        ["unshare", "--mount", "true"],
    ):
        assert subprocess.run(argv, capture_output=True).returncode != 0, argv
"""
)


@pytest.mark.privileged
@pytest.mark.slow
def test_a_test_cannot_raise_its_own_cap_on_the_cgroup_backend(
    raiser_repo: Path, run_qualify: RunQualify
) -> None:
    """As a container does, the cgroup backend locks the limits: read-only cgroup file systems
    in the E2E's mount namespace, CAP_SYS_ADMIN and CAP_SYS_PTRACE dropped. Root inside the
    run is refused every way, and the audit says which protection was in place."""
    from qualify.sandbox.cgroup.common import LIMITS_LOCKED

    family = raiser_repo / "families" / "raiser"
    (family / "test_raiser.py").write_text(LOCKED)
    git(raiser_repo, "commit", "-q", "-am", "every way to the cap")
    result = run_qualify(
        "run", "--family", "raiser", "--repo", str(raiser_repo), "--mem", "200M",
        "--backend", "cgroup",
    )  # fmt: skip
    audit = result.audit()
    assert (result.returncode, audit["verdict"]) == (0, "PASSED"), result.stdout + result.stderr
    notes = audit["sandbox"]["notes"]
    assert LIMITS_LOCKED in notes
    assert any(note.startswith("the limits are also watched:") for note in notes), notes


@pytest.mark.privileged
@pytest.mark.slow
def test_a_cap_raised_and_lowered_again_is_an_error(
    raiser_repo: Path, run_qualify: RunQualify, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where the limits cannot be locked (no ``setpriv`` to drop the capabilities), they are
    watched: the file holds the cap asked again at every reading the monitor may miss; the
    kernel's watermark still shows the 430 MiB used meanwhile."""
    monkeypatch.setenv("PATH", path_without(tmp_path, "setpriv"))
    result = run_qualify(
        "run", "--family", "raiser", "--repo", str(raiser_repo), "--mem", "200M",
        "--set", "restore=true",
    )  # fmt: skip
    assert any(
        note.startswith("the limits are watched, not locked")
        for note in result.audit()["sandbox"]["notes"]
    )
    audit = result.audit()
    assert (result.returncode, audit["verdict"]) == (4, "ERROR"), result.stdout + result.stderr
    reason = audit["reason"]
    assert "the run's limits changed while it ran" in reason or (
        f"above the cap of {200 * MIB} bytes asked" in reason
    ), reason


def test_limit_files_are_the_cgroups_and_their_ancestors_up_to_the_root(tmp_path: Path) -> None:
    """A captured v2 tree's shape: the run's cgroup and each ancestor with limit files, up to
    the root cgroup, which has none."""
    root = tmp_path / "sys-fs-cgroup"
    run = root / "system.slice" / "runner.service" / "qualify-1"
    run.mkdir(parents=True)
    (root / "cgroup.procs").write_text("")
    for directory, names in (
        (run, ("memory.max", "memory.swap.max", "pids.max")),
        (run.parent, ("memory.max", "memory.swap.max", "pids.max")),
        (run.parent.parent, ("memory.max", "pids.max")),
    ):
        for name in names:
            (directory / name).write_text("max\n")
    found = limit_files([run])
    assert [path.relative_to(root).as_posix() for path in found] == [
        "system.slice/runner.service/qualify-1/memory.max",
        "system.slice/runner.service/qualify-1/memory.swap.max",
        "system.slice/runner.service/qualify-1/pids.max",
        "system.slice/runner.service/memory.max",
        "system.slice/runner.service/memory.swap.max",
        "system.slice/runner.service/pids.max",
        "system.slice/memory.max",
        "system.slice/pids.max",
    ]


@pytest.mark.privileged
def test_the_watch_sees_a_real_limit_written_and_stops_at_a_removed_cgroup() -> None:
    layout = current_layout()
    if layout.version != 1 or layout.memory_dir is None:
        pytest.skip("needs a writable cgroup v1 memory controller")
    directory = layout.memory_dir / f"qualify-test-watch-{os.getpid()}"
    directory.mkdir()
    try:
        (directory / "memory.limit_in_bytes").write_text(str(64 * MIB))
        watch = LimitWatch(limit_files([directory]))
        assert directory / "memory.limit_in_bytes" in watch.files
        assert layout.memory_dir / "memory.limit_in_bytes" in watch.files  # an ancestor
        assert watch.check() == []
        (directory / "memory.limit_in_bytes").write_text(str(128 * MIB))
        (change,) = watch.check()
        assert (change.path.name, change.before, change.after) == (
            "memory.limit_in_bytes",
            str(64 * MIB),
            str(128 * MIB),
        )
        assert watch.check() == []  # recorded once per new value
    finally:
        directory.rmdir()
    assert watch.check() == []  # its files gone: no longer watched, no error
    assert directory / "memory.limit_in_bytes" not in watch.files
    watch.close()


def test_a_peak_above_the_cap_asked_is_judged_only_from_the_kernels_watermark() -> None:
    """What the judge makes of a run whose limit files read as asked at every reading: a
    watermark far above the cap means the cap was lifted meanwhile; one a little above it is
    the kernel charging a dying task past its limit; a peak summed from process samples (shared
    pages counted twice) or a run without a cap proves nothing."""
    from types import SimpleNamespace
    from typing import Any

    from qualify.judge.judgement import limits_held_error

    def judged(peak: int, source: str = "kernel", capped: bool = True) -> str | None:
        spec: Any = SimpleNamespace(limits=SimpleNamespace(memory_bytes=200 * MIB))
        monitor = SimpleNamespace(limit_changes=(), peak_bytes=peak, peak_source=source)
        execution: Any = SimpleNamespace(monitor=monitor, sandbox=SimpleNamespace(capped=capped))
        return limits_held_error(spec, execution)

    assert judged(430 * MIB) == (
        f"the run's peak of {430 * MIB} bytes (the kernel's watermark) is above the cap of "
        f"{200 * MIB} bytes asked: the cap was not in force for the whole run"
    )
    assert judged(201 * MIB) is None
    assert judged(430 * MIB, source="samples") is None
    assert judged(430 * MIB, capped=False) is None
