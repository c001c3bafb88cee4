"""The backend decision and the argv the GitHub Action runs, on facts captured on real machines.

No hosted runner is reachable from here: each environment below is built from captured files
(tests/data/samples/ci_runners/ and cgroup_*/, sources in SOURCES.md). Where a fact was not in
any capture it is derived from one in the open, in ``_hosted()`` and friends, and SOURCES.md
says so; nothing here is typed up as if it had been captured.
"""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from qualify.plan.limits import Limits, limit_mismatches
from qualify.sandbox import REASON_ENV, select_sandbox
from qualify.sandbox.cgroup.fs import parse_mountinfo
from qualify.sandbox.choice import (
    ENV,
    SCOPE,
    NoBackend,
    choose,
    decision,
    diagnose,
    run_argv,
    systemd_version,
)
from qualify.sandbox.docker.image import HOST_PYTHON_IMAGE, host_python_rootfs
from qualify.sandbox.hostfacts import CgroupFacts, DockerFacts, HostFacts, SystemdFacts
from tests.conftest import SAMPLES

RUNNERS = SAMPLES / "ci_runners"
HOSTED = RUNNERS / "gha-hosted-ubuntu24-step-env-and-docker-info-awa-app.txt"
RUN_ARGS = ["--family", "tiny", "--out", "reports", "--profile", "small"]
MIB = 2**20


def _read(name: str | Path) -> bytes:
    return (name if isinstance(name, Path) else RUNNERS / name).read_bytes()


def _captured_env(path: Path) -> dict[str, str]:
    """``NAME=value`` lines of a captured step environment."""
    pairs = (line.split("=", 1) for line in path.read_text().splitlines() if "=" in line)
    return {name: value for name, value in pairs if re.fullmatch(r"[A-Za-z_]\w*", name)}


def _docker_info(path: Path, field: str) -> str:
    """A ``Field: value`` line of captured ``docker version`` / ``docker info`` output."""
    match = re.search(rf"^ *{re.escape(field)}: *(.+)$", path.read_text(), re.M)
    assert match, field
    return match.group(1).strip()


def _hosted() -> tuple[HostFacts, dict[str, str]]:
    """ubuntu-latest (Ubuntu 24.04, image 20251014.76.1), as a step of it saw itself.

    From the capture: the user (USER, the uid of XDG_RUNTIME_DIR), the host name, the engine
    (``docker info``, run as that user without sudo), and the step's cgroup: systemd sets
    MEMORY_PRESSURE_WATCH to the memory.pressure file of the unit's own cgroup, which the step's
    processes inherit from Runner.Worker, so /proc/self/cgroup is that path's ``0::`` line.
    The cgroup2 mount line, the unit's cgroup.controllers and ``systemctl --version`` are real
    captures from other pure-v2 systemd hosts (SOURCES.md); GitHub documents passwordless sudo.
    """
    env = _captured_env(HOSTED)
    watch = env["MEMORY_PRESSURE_WATCH"]
    assert watch.startswith("/sys/fs/cgroup/") and watch.endswith("/memory.pressure")
    unit = watch.removeprefix("/sys/fs/cgroup").removesuffix("/memory.pressure")
    facts = HostFacts(
        euid=int(env["XDG_RUNTIME_DIR"].rsplit("/", 1)[1]),
        user=env["USER"],
        hostname=_docker_info(HOSTED, "Hostname"),
        sudo_path="/usr/bin/sudo",
        sudo=True,
        sudo_reason="",
        cgroup=CgroupFacts(
            proc_cgroup=f"0::{unit}\n".encode(),
            mountinfo=_read("pure-v2-systemd-host-mountinfo-cgroup2-line-podman-16412.txt"),
            controllers=_read("root-v2-systemd-session-scope-cgroup.controllers-runc-2298.txt"),
            writable=False,  # a service's cgroup is root's unless the unit delegates it
            owner_uid=0,
        ),
        systemd=SystemdFacts(
            booted="SYSTEMD_EXEC_PID" in env and "INVOCATION_ID" in env,
            version_output=_read("ubuntu2204-jammy-systemctl--version-core-initrd-71.txt"),
            systemd_run="/usr/bin/systemd-run",
        ),
        docker=DockerFacts(
            host="unix:///var/run/docker.sock",
            answered=True,
            version=_docker_info(HOSTED, "Server Version"),
            name=_docker_info(HOSTED, "Name"),
            root_dir=_docker_info(HOSTED, "Docker Root Dir"),
            root_dir_here=True,  # the engine's data root is on the runner VM itself
            cgroup_version=_docker_info(HOSTED, "Cgroup Version"),
            cgroup_driver=_docker_info(HOSTED, "Cgroup Driver"),
            runtimes=tuple(_docker_info(HOSTED, "Runtimes").split()),
        ),
    )
    return facts, env


def _self_hosted_root_v2() -> HostFacts:
    """A self-hosted runner installed as a root service on a pure cgroup v2 systemd host: the
    unit (User=root, no Delegate=) runs Runner.Listener and Runner.Worker, so its cgroup
    (/system.slice/<unit>) holds processes; the controllers were captured in such a cgroup."""
    unit = "actions-runner.service"
    assert (
        f"/etc/systemd/system/{unit}" in _read("self-hosted-root-runner-unit-homelab.txt").decode()
    )
    return HostFacts(
        euid=0,
        user="root",
        hostname="runner-host",
        sudo_path="/usr/bin/sudo",
        sudo=False,
        sudo_reason="not needed: already root",
        cgroup=CgroupFacts(
            proc_cgroup=f"0::/system.slice/{unit}\n".encode(),
            mountinfo=_read("pure-v2-systemd-host-mountinfo-cgroup2-line-podman-16412.txt"),
            controllers=_read("root-v2-systemd-session-scope-cgroup.controllers-runc-2298.txt"),
            subtree_control=b"",
            writable=True,
            owner_uid=0,
            other_processes=3,  # runsvc.sh, Runner.Listener, Runner.Worker
        ),
        systemd=SystemdFacts(
            booted=True,
            version_output=_read("ubuntu2204-jammy-systemctl--version-core-initrd-71.txt"),
            systemd_run="/usr/bin/systemd-run",
        ),
        docker=DockerFacts("unix:///var/run/docker.sock", False, "no engine answers: refused"),
    )


def _self_hosted_root_v1() -> HostFacts:
    """This repository's own CI machine: root, memory on cgroup v1 (local captures)."""
    v1 = SAMPLES / "cgroup_v1"
    return HostFacts(
        euid=0,
        user="root",
        hostname="ci",
        sudo_path=None,
        sudo=False,
        sudo_reason="not needed: already root",
        cgroup=CgroupFacts(
            proc_cgroup=_read(v1 / "local-k6.18-hybrid-proc-self-cgroup.txt"),
            mountinfo=_read(v1 / "local-k6.18-hybrid-proc-self-mountinfo-cgroup-lines.txt"),
            controllers=_read(
                SAMPLES / "cgroup_v2" / "local-k6.18-hybrid-unified-root-cgroup.controllers.txt"
            ),
            writable=True,
            owner_uid=0,
        ),
        systemd=SystemdFacts(False, _read("local-debian12-systemctl--version.txt"), None),
        docker=DockerFacts(
            "unix:///var/run/docker.sock",
            False,
            "no engine answers: /var/run/docker.sock: No such file or directory",
        ),
    )


def _job_container() -> HostFacts:
    """A GitHub ``container:`` job: root in a container whose cgroup namespace root is its own
    cgroup, cgroup2 mounted read-only, no systemd, and the runner's engine through the docker
    socket the runner mounts into every job container (a different host name and filesystem:
    the runner maps the work directory to /__w inside)."""
    mounts = _read("actions-runner-job-container-mounts-258d6c8.txt").decode()
    assert '"/var/run/docker.sock"' in mounts and '"/__w"' in mounts
    return HostFacts(
        euid=0,
        user="root",
        hostname="66826257e096",
        sudo_path=None,
        sudo=False,
        sudo_reason="not needed: already root",
        cgroup=CgroupFacts(
            proc_cgroup=_read("gha-job-container-proc-self-cgroup-v2-mock-986.txt"),
            mountinfo=_read(
                SAMPLES
                / "cgroup_v2"
                / "docker-for-mac-container-mountinfo-cgroup2-ro-apm-agent-java-2352.txt"
            ),
            controllers=None,
            writable=False,
        ),
        systemd=SystemdFacts(False, None, None),
        docker=DockerFacts(
            host="unix:///var/run/docker.sock",
            answered=True,
            version=_docker_info(HOSTED, "Server Version"),
            name=_docker_info(HOSTED, "Name"),
            root_dir="/var/lib/docker",
            root_dir_here=False,
            cgroup_version="2",
            cgroup_driver="systemd",
        ),
    )


def test_the_captures_say_what_the_environments_claim() -> None:
    facts, env = _hosted()
    assert (facts.user, facts.euid) == ("runner", 1001)
    assert facts.cgroup.proc_cgroup == b"0::/system.slice/hosted-compute-agent.service\n"
    assert env["RUNNER_ENVIRONMENT"] == "github-hosted" and env["ImageOS"] == "ubuntu24"
    assert facts.docker.cgroup_version == "2" and facts.docker.name == facts.hostname
    assert systemd_version(facts.systemd.version_output) == 249
    assert systemd_version(_read("local-debian12-systemctl--version.txt")) == 252
    # The mountinfo line stands for the hosted runner's mount: same point, type and options
    # as the hosted runner's own `mount` output, but for SELinux's seclabel.
    (mount,) = parse_mountinfo(facts.cgroup.mountinfo)
    hosted = _read("gha-hosted-ubuntu24-mount-cgroup2-line-copilot-agent.txt").decode()
    match = re.fullmatch(r"cgroup2 on (\S+) type (\S+) \((\S+)\)\n", hosted)
    assert match is not None
    point, kind, options = match.groups()
    assert (mount.mount_point, mount.fstype) == (point, kind)
    assert set(mount.options) | (set(mount.super_options) - {"seclabel"}) == set(options.split(","))
    template = _read("actions-runner-service-template-258d6c8.txt").decode()
    assert "Delegate" not in template and "User={{User}}" in template


# --- GitHub-hosted ubuntu-latest: not root, not delegated -> sudo systemd-run scope


def test_hosted_runner_needs_a_delegated_scope_and_gets_one_through_sudo() -> None:
    facts, env = _hosted()
    diagnosis = diagnose(facts)
    direct = diagnosis.route("cgroup", "direct")
    assert not direct.works
    assert direct.reason == (
        "runner (uid 1001) is not root and /system.slice/hosted-compute-agent.service is not "
        "delegated to it (owned by uid 0)"
    )
    assert not diagnosis.route("cgroup", "sudo").works  # that route is for cgroup v1
    scope = diagnosis.route("cgroup", "systemd-scope")
    assert (
        scope.works
        and "systemd 249" in scope.reason
        and "through passwordless sudo" in scope.reason
    )
    assert diagnosis.route("docker").works  # the runner user reaches the engine
    assert diagnosis.cgroup_version == 2 and diagnosis.capped

    chosen = choose(diagnosis, "auto")
    assert (chosen.backend, chosen.via) == ("cgroup", "systemd-scope")
    python = env["pythonLocation"] + "/bin/python"
    argv = run_argv(chosen, facts, RUN_ARGS, backend="auto", executable=python, environ=env)
    reason = f"{REASON_ENV}={decision(chosen, 'auto')}"
    assert argv == [
        "/usr/bin/sudo", "-n", "--preserve-env", "--set-home", "--",
        ENV, f"PATH={env['PATH']}", "LD_LIBRARY_PATH=/opt/hostedtoolcache/Python/3.11.14/x64/lib",
        reason,
        "/usr/bin/systemd-run", "--scope", "--quiet", "--collect", "-p", "Delegate=yes", "--",
        python, "-m", "qualify", "run", *RUN_ARGS, "--backend", "cgroup",
    ]  # fmt: skip
    assert decision(chosen, "auto").startswith(
        "--backend auto chose cgroup in a delegated systemd scope: cgroup v2 under systemd 249: "
        "runner (uid 1001) is not root"
    )


def test_hosted_runner_with_backend_docker_or_an_image() -> None:
    facts, env = _hosted()
    diagnosis = diagnose(facts)
    for backend, image in (("docker", None), ("auto", "ghcr.io/example/family:1")):
        chosen = choose(diagnosis, backend, image)
        assert (chosen.backend, chosen.via) == ("docker", "engine")
        argv = run_argv(
            chosen, facts, RUN_ARGS, backend=backend, executable="py", environ=env, image=image
        )
        assert argv[0] == ENV and argv[1].startswith(f"{REASON_ENV}=--backend {backend} ")
        tail = ["--backend", "docker", "--image", image or HOST_PYTHON_IMAGE]
        assert argv[2:] == ["py", "-m", "qualify", "run", *RUN_ARGS, *tail] + (
            ["--mount-host-python"] if image is None else []
        )
    none = choose(diagnosis, "none")
    assert run_argv(none, facts, [], backend="none", executable="py", environ=env)[-2:] == [
        "--backend",
        "none",
    ]


def test_hosted_runner_without_sudo_says_why_nothing_caps() -> None:
    facts, _ = _hosted()
    no_sudo = dataclasses.replace(
        facts, sudo=False, sudo_reason="sudo -n true: a password is required"
    )
    no_docker = dataclasses.replace(
        no_sudo,
        docker=DockerFacts(
            "unix:///var/run/docker.sock", False, "no engine answers: permission denied"
        ),
    )
    diagnosis = diagnose(no_docker)
    assert not diagnosis.capped
    with pytest.raises(NoBackend) as raised:
        choose(diagnosis, "auto")
    message = str(raised.value)
    assert (
        "is not root and has no passwordless sudo (sudo -n true: a password is required)" in message
    )
    assert "docker: no engine answers: permission denied" in message
    assert message.endswith("backend none runs uncapped, and every report says so")


# --- self-hosted root runners


def test_self_hosted_root_runner_on_cgroup_v1_runs_directly() -> None:
    facts = _self_hosted_root_v1()
    diagnosis = diagnose(facts)
    chosen = choose(diagnosis)
    assert (chosen.backend, chosen.via, diagnosis.cgroup_version) == ("cgroup", "direct", 1)
    assert chosen.reason == (
        "cgroup v1: root (uid 0) may create cgroups under /process_api/<redacted-id>"
    )
    assert diagnosis.route("cgroup", "systemd-scope").reason == (
        "only for cgroup v2 (memory is on cgroup v1 here)"
    )
    argv = run_argv(
        chosen, facts, RUN_ARGS, backend="auto", executable="/usr/bin/python3", environ={}
    )
    assert argv == [
        ENV,
        f"{REASON_ENV}={decision(chosen, 'auto')}",
        "/usr/bin/python3", "-m", "qualify", "run", *RUN_ARGS, "--backend", "cgroup",
    ]  # fmt: skip


def test_self_hosted_root_runner_on_cgroup_v2_needs_a_scope_but_no_sudo() -> None:
    facts = _self_hosted_root_v2()
    diagnosis = diagnose(facts)
    direct = diagnosis.route("cgroup", "direct")
    assert not direct.works
    assert direct.reason.startswith(
        "/system.slice/actions-runner.service holds 3 other process(es): cgroup v2 enables memory "
        "for a child only in a cgroup that holds no process itself"
    )
    chosen = choose(diagnosis, "cgroup")
    assert (chosen.backend, chosen.via) == ("cgroup", "systemd-scope")
    assert "as root, systemd-run --scope -p Delegate=yes" in chosen.reason
    argv = run_argv(
        chosen,
        facts,
        RUN_ARGS,
        backend="cgroup",
        executable="/usr/bin/python3",
        environ={"PATH": "/usr/bin"},
    )
    assert argv == [
        ENV,
        f"{REASON_ENV}={decision(chosen, 'cgroup')}",
        "/usr/bin/systemd-run", *SCOPE,
        "/usr/bin/python3", "-m", "qualify", "run", *RUN_ARGS, "--backend", "cgroup",
    ]  # fmt: skip
    assert decision(chosen, "cgroup").startswith("--backend cgroup runs cgroup in a delegated")
    # Alone in its cgroup (started with exec, or by a unit of its own) it needs no scope.
    alone = dataclasses.replace(facts, cgroup=dataclasses.replace(facts.cgroup, other_processes=0))
    assert choose(diagnose(alone)).via == "direct"


def test_cgroup_v1_without_root_goes_through_sudo() -> None:
    facts = _self_hosted_root_v1()
    user = dataclasses.replace(
        facts,
        euid=1001,
        user="runner",
        sudo=True,
        sudo_path="/usr/bin/sudo",
        sudo_reason="",
        cgroup=dataclasses.replace(facts.cgroup, writable=False),
    )
    chosen = choose(diagnose(user))
    assert (chosen.backend, chosen.via) == ("cgroup", "sudo")
    argv = run_argv(
        chosen,
        user,
        RUN_ARGS,
        backend="auto",
        executable="/py",
        environ={"PATH": "/bin", "HOME": "/h"},
    )
    assert argv[:7] == [
        "/usr/bin/sudo",
        "-n",
        "--preserve-env",
        "--set-home",
        "--",
        ENV,
        "PATH=/bin",
    ]
    assert argv[8:] == ["/py", "-m", "qualify", "run", *RUN_ARGS, "--backend", "cgroup"]


# --- a docker-in-docker job (a container job with the runner's docker socket)


def test_job_container_refuses_with_every_reason() -> None:
    facts = _job_container()
    diagnosis = diagnose(facts)
    reasons = {route.label: route.reason for route in diagnosis.routes}
    assert reasons["cgroup"] == (
        "the cgroup filesystem at /sys/fs/cgroup is mounted read-only "
        "(a container that may not manage its cgroups)"
    )
    assert reasons["cgroup in a systemd scope"] == (
        "the cgroup filesystem at /sys/fs/cgroup is mounted read-only"
    )
    assert reasons["docker"].startswith(
        "the engine at unix:///var/run/docker.sock runs on another host or in another container"
    )
    assert not diagnosis.capped
    for backend in ("auto", "cgroup", "docker"):
        with pytest.raises(NoBackend):
            choose(diagnosis, backend)
    with pytest.raises(NoBackend, match="cannot run docker here"):
        choose(diagnosis, "auto", "python:3.11")
    uncapped = choose(diagnosis, "none")
    assert (
        run_argv(uncapped, facts, RUN_ARGS, backend="none", executable="py", environ={})[-1]
        == "none"
    )


def test_a_privileged_job_container_is_still_not_a_delegated_cgroup() -> None:
    """The same job started --privileged: cgroup2 writable, but the namespace root holds the
    job's own processes and no systemd runs in the container to delegate a scope."""
    facts = _job_container()
    mountinfo = facts.cgroup.mountinfo.replace(
        b"/sys/fs/cgroup ro,nosuid,nodev,noexec,relatime - cgroup2 cgroup rw",
        b"/sys/fs/cgroup rw,nosuid,nodev,noexec,relatime - cgroup2 cgroup rw",
    )
    assert mountinfo != facts.cgroup.mountinfo
    privileged = dataclasses.replace(
        facts,
        cgroup=CgroupFacts(
            facts.cgroup.proc_cgroup,
            mountinfo,
            b"cpuset cpu io memory hugetlb pids\n",
            b"",
            True,
            0,
            2,
        ),
    )
    diagnosis = diagnose(privileged)
    assert diagnosis.route("cgroup").reason.startswith("/ holds 2 other process(es)")
    assert diagnosis.route("cgroup", "systemd-scope").reason == (
        "systemd is not PID 1 here (/run/systemd/system does not exist)"
    )
    with pytest.raises(NoBackend):
        choose(diagnosis)


# --- inside the scope: the run's cgroup, its limits and the audit's notes


def test_the_runs_cgroup_lives_inside_the_delegated_scope(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> None:
    """What qualify does once systemd-run put it in run-r1.scope (Delegate=yes): the scope's
    cgroup.controllers and empty subtree_control are a real systemd scope's (elastic docker2
    capture); the kernel's EBUSY for "+memory" while a process is in the scope is simulated.
    qualify is not alone there: its watchdog (a child it starts before any cgroup exists) is
    too, as a real cgroup v2 machine showed (EBUSY until the watchdog moved as well)."""
    from qualify.sandbox.cgroup import common
    from qualify.sandbox.cgroup.v2 import SUPERVISOR_LEAF, CgroupV2Sandbox

    v2 = SAMPLES / "cgroup_v2"
    mount = tmp_path / "cgroup2"
    slice_dir = mount / "system.slice"
    scope = slice_dir / "run-r1.scope"
    slice_dir.mkdir(parents=True)
    shutil.copy(v2 / "elastic-docker2-memory.max-max.txt", slice_dir / "memory.max")
    scope.mkdir(parents=True)
    for name, sample in (
        ("cgroup.controllers", "elastic-docker2-cgroup.controllers.txt"),
        ("cgroup.subtree_control", "elastic-docker2-cgroup.subtree_control-empty.txt"),
        ("memory.max", "elastic-docker2-memory.max-max.txt"),
        ("memory.swap.max", "elastic-docker2-memory.swap.max-max.txt"),
    ):
        shutil.copy(v2 / sample, scope / name)
    watchdog = subprocess.Popen(["sleep", "60"])
    request.addfinalizer(lambda: (watchdog.kill(), watchdog.wait()))
    (scope / "cgroup.procs").write_text(f"{os.getpid()}\n{watchdog.pid}\n")

    real_write = common.write_file
    refused: list[str] = []

    def kernel(path: Path, value: str) -> None:
        # cgroup v2's "no internal processes": +memory is refused while qualify is in the scope.
        if path.name == "cgroup.subtree_control" and (scope / "cgroup.procs").read_text().strip():
            refused.append(value)
            raise common.SandboxError(
                f"cannot write {value!r} to {path.name}: Device or resource busy"
            )
        if path.name == "cgroup.procs" and path.parent.name == SUPERVISOR_LEAF:
            # the process moves out of the scope into the leaf
            left = (scope / "cgroup.procs").read_text().split()
            (scope / "cgroup.procs").write_text("".join(f"{p}\n" for p in left if p != value))
            moved = path.read_text().split() if path.exists() else []
            path.write_text("".join(f"{p}\n" for p in [*moved, value]))
            return
        real_write(path, value)

    monkeypatch.setattr(common, "write_file", kernel)
    why = (
        "--backend auto chose cgroup in a delegated systemd scope: cgroup v2 under systemd 255: ..."
    )
    sandbox = CgroupV2Sandbox(scope, "/system.slice/run-r1.scope", "r1", mount, reason=why)
    requested = Limits(512 * MIB, 0, 4096)
    info = sandbox.prepare(requested)
    run = scope / "qualify-r1"
    assert refused == ["+memory +pids"]
    assert (scope / SUPERVISOR_LEAF / "cgroup.procs").read_text().split() == [
        str(os.getpid()),
        str(watchdog.pid),
    ]
    assert (scope / "cgroup.subtree_control").read_text() == "+memory +pids"
    assert (run / "memory.max").read_text() == str(512 * MIB)
    assert (run / "memory.swap.max").read_text() == "0"
    assert (run / "memory.oom.group").read_text() == "1"
    assert info.cgroup == "/system.slice/run-r1.scope/qualify-r1"
    assert info.in_effect == requested and limit_mismatches(requested, info.in_effect) == []
    assert info.notes[0] == why
    assert info.notes[1] == (
        "qualify moved itself and its own child processes into "
        "/system.slice/run-r1.scope/qualify-supervisor so that "
        "/system.slice/run-r1.scope could enable memory and pids for the run's cgroup"
    )
    # Read back up the tree: a slice capped below the ask (as the kernel shows a number written
    # to it) is what is in effect.
    shutil.copy(v2 / "hechaoli-2020-memory.max-number-100MiB.txt", slice_dir / "memory.max")
    assert sandbox._read_back().memory_bytes == 100 * MIB


def test_the_callers_decision_is_the_first_note_of_the_audit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(REASON_ENV, "--backend none runs none: asked for")
    info = select_sandbox("none", "r1").prepare(Limits(None, None, None))
    assert info.notes[0] == "--backend none runs none: asked for"
    assert any("UNCAPPED" in note for note in info.notes)


def test_the_host_python_image_is_mount_points_and_usr_links() -> None:
    import io
    import tarfile

    with tarfile.open(fileobj=io.BytesIO(host_python_rootfs())) as tar:
        members = {member.name: member for member in tar.getmembers()}
    assert {name for name, m in members.items() if m.issym()} == {"bin", "lib", "lib64"}
    assert all(members[name].linkname == f"usr/{name}" for name in ("bin", "lib", "lib64"))
    assert members["tmp"].mode == 0o1777 and members["sbin"].isdir()


def test_every_capture_has_its_source() -> None:
    sources = (SAMPLES / "SOURCES.md").read_text(encoding="utf-8")
    section = sources.split("\n## ci_runners\n", 1)[1]
    for path in sorted(RUNNERS.iterdir()):
        assert f"| {path.name} |" in section, path.name


def test_doctor_reads_the_hosted_runner_out_loud() -> None:
    from qualify.commands.doctor import as_json, as_text

    facts, _ = _hosted()
    text = as_text(diagnose(facts), "auto", None)
    assert re.search(
        r"^  cgroup in a systemd scope +works  cgroup v2 under systemd 249: ", text, re.M
    )
    assert re.search(r"^  user +runner \(uid 1001\), not root, passwordless sudo$", text, re.M)
    assert text.splitlines()[-1].startswith(
        "qualify run --backend auto chose cgroup in a delegated systemd scope: "
    )
    report = as_json(diagnose(facts), "auto", None)
    assert report["choice"]["via"] == "systemd-scope" and report["cgroup_version"] == 2
    refused = as_json(diagnose(_job_container()), "auto", None)
    assert refused["capped"] is False and refused["choice"]["backend"] is None
    assert refused["choice"]["decision"].startswith("--backend auto cannot cap memory here (")


def test_a_cgroup_whose_parent_hands_down_memory_alone_is_named_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A VM's per-command cgroup (captured on a Firecracker GPU machine, Linux 6.18) may use
    memory but not pids: the kernel answers "+memory +pids" with ENOENT, which said nothing of
    why. The error names what is missing and what the cgroup has."""
    from qualify.sandbox.cgroup import common
    from qualify.sandbox.cgroup.v2 import CgroupV2Sandbox

    capture = (SAMPLES / "cgroup_v2" / "firecracker-k6.18-process-api-cgroup-files.txt").read_text()
    sections = dict(re.findall(r"== (\S+)\n(.*?)(?=\n==|\Z)", capture, re.S))
    path = next(p for p in sections if p.endswith("/cgroup.controllers") and p.count("/") > 2)
    own = path.rsplit("/", 1)[0]
    assert sections[path].split() == ["memory"]
    mount = tmp_path / "cgroup2"
    directory = mount / own.lstrip("/")
    directory.mkdir(parents=True)
    (directory / "cgroup.controllers").write_text(sections[path] + "\n")
    (directory / "cgroup.subtree_control").write_text("")
    (directory / "cgroup.procs").write_text("4242\n")  # not qualify alone: no leaf move

    def kernel(target: Path, value: str) -> None:
        raise common.SandboxError(
            f"cannot write {value!r} to {target.name}: No such file or directory"
        )

    monkeypatch.setattr(common, "write_file", kernel)
    sandbox = CgroupV2Sandbox(directory, own, "r1", mount)
    with pytest.raises(common.SandboxError) as raised:
        sandbox.prepare(Limits(512 * MIB, 0, 4096))
    assert f"pids not delegated to {own} (its cgroup.controllers: memory)" in str(raised.value)
