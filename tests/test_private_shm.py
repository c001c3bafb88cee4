"""Nothing of the run outlives it in /dev/shm: on the cgroup backend the E2E gets a tmpfs of
its own there, charged to the cap; where no mount namespace can be made, what appeared in the
host's /dev/shm during the run is listed in the audit."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from qualify.sandbox.cgroup import common
from tests.conftest import RunQualify, family_repo

MIB = 2**20

SHM_WRITER = """
import os
import harness

MIB = 2**20


def test_write_to_dev_shm():
    mounts = [line.split()[:3] for line in open("/proc/self/mounts")]
    assert ["qualify-shm", "/dev/shm", "tmpfs"] in mounts
    name = "/dev/shm/" + harness.option("name", "")
    with harness.phase("shm"):
        with open(name, "wb") as handle:
            for _ in range(harness.option("mib", 0)):
                handle.write(b"x" * MIB)
    assert os.path.getsize(name) == harness.option("mib", 0) * MIB
"""


@pytest.fixture
def shm_repo(tmp_path: Path) -> Path:
    toml = """
    description = "writes a file into /dev/shm and leaves it there"
    [e2e]
    command = ["python", "-m", "pytest", "test_shm.py", "-q"]
    timeout = "2m"
    [options]
    name = ""
    mib = 0
    """
    return family_repo(tmp_path / "repo", "shm", toml, {"test_shm.py": SHM_WRITER})


@pytest.mark.privileged
@pytest.mark.slow
def test_what_a_test_leaves_in_dev_shm_is_gone_with_the_run(
    shm_repo: Path, run_qualify: RunQualify
) -> None:
    name = f"qualify-test-left-{os.getpid()}"
    result = run_qualify(
        "run", "--family", "shm", "--repo", str(shm_repo), "--mem", "512M",
        "--set", f"name={name}", "--set", "mib=120",
    )  # fmt: skip
    audit = result.audit()
    assert (result.returncode, audit["verdict"]) == (0, "PASSED"), result.stdout + result.stderr
    assert not (Path("/dev/shm") / name).exists()
    notes = audit["sandbox"]["notes"]
    assert f"the E2E has a private /dev/shm (tmpfs of {512 * MIB} bytes, charged to the cap)" in (
        notes
    )
    shm_phase = next(phase for phase in audit["memory"]["phases"] if phase["name"] == "shm")
    assert shm_phase["peak_bytes"] >= 120 * MIB  # the tmpfs pages are the run's


@pytest.mark.privileged
@pytest.mark.slow
def test_dev_shm_is_charged_to_the_cap(shm_repo: Path, run_qualify: RunQualify) -> None:
    """300 MiB written to /dev/shm under a 128 MiB cap: the cgroup is full before the tmpfs
    (as large as the cap) is, and tmpfs pages cannot be reclaimed without swap."""
    result = run_qualify(
        "run", "--family", "shm", "--repo", str(shm_repo), "--mem", "128M",
        "--set", f"name=qualify-test-cap-{os.getpid()}", "--set", "mib=300",
    )  # fmt: skip
    audit = result.audit()
    assert (result.returncode, audit["verdict"]) == (3, "OOM_KILLED"), result.stdout
    assert audit["oom"]["kills"] >= 1


def test_without_a_namespace_what_appeared_in_dev_shm_is_listed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(common.shutil, "which", lambda name: None)
    shm = common.PrivateShm()
    (note,) = shm.prepare(64 * MIB)
    assert note == (
        "the E2E shares the host's /dev/shm (util-linux's unshare is not installed): "
        "what is left there is listed"
    )
    assert shm.prefix == [] and shm.leftovers() == []
    left = Path("/dev/shm") / f"qualify-test-fallback-{os.getpid()}"
    left.write_bytes(b"x" * 4096)
    try:
        assert shm.leftovers() == [
            "left in /dev/shm after the run (by the E2E, or another process meanwhile): "
            f"{left.name!r} (4096 bytes)"
        ]
    finally:
        left.unlink()
