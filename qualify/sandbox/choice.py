"""Which backend can cap a run on a machine, why the others cannot, and the argv that runs it.

Pure: everything here reads a ``HostFacts`` (``qualify.sandbox.hostfacts``) and nothing else,
so every decision is tested on facts captured on real machines (GitHub-hosted runners, a
self-hosted root runner, a docker-in-docker job: tests/data/samples/ci_runners/).

The routes, in the order ``--backend auto`` tries them (docker first when an image is given):

- ``cgroup`` directly: root on cgroup v1, or a cgroup v2 subtree delegated to this user in
  which qualify will be alone (it moves itself into a leaf and enables memory and pids);
- ``cgroup`` through ``sudo`` (cgroup v1, not root): root may create a cgroup anywhere;
- ``cgroup`` in a transient scope (cgroup v2 under systemd, root or passwordless sudo):
  ``systemd-run --scope -p Delegate=yes`` gives qualify a cgroup of its own, delegated, in
  which the run's cgroup is created (a GitHub-hosted runner's steps share the runner
  service's cgroup, which is neither delegated nor empty);
- ``docker`` on an engine running on this host (its bind mounts name the paths qualify sees),
  with ``--image`` or the host-Python image the action imports;
- ``none``: uncapped, only when asked for.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from qualify.errors import UsageError
from qualify.records import frozen_record
from qualify.sandbox import CHOICES, REASON_ENV
from qualify.sandbox.cgroup.fs import Mount, parse_mountinfo, parse_proc_cgroup
from qualify.sandbox.cgroup.layout import CgroupLayout, detect_layout
from qualify.sandbox.docker.image import HOST_PYTHON_IMAGE
from qualify.sandbox.hostfacts import HostFacts

ENV = "/usr/bin/env"
"""Sets the variables of the run after sudo (which drops them) and execs the rest."""
SUDO_DROPS = ("PATH", "LD_LIBRARY_PATH", "PYTHONPATH", "PYTHONHOME")
"""Variables sudo resets or removes even with --preserve-env (secure_path, its list of unsafe
variables) that qualify's interpreter needs: actions/setup-python's build finds its libpython
through LD_LIBRARY_PATH."""
SCOPE = ("--scope", "--quiet", "--collect", "-p", "Delegate=yes", "--")
NEEDED = ("memory", "pids")


class NoBackend(UsageError):
    """No route can run the backend asked for here; the message names every reason."""


@frozen_record
class Route:
    """One way to run ``qualify run`` here, and whether it works."""

    backend: str
    """What ``qualify run --backend`` gets: cgroup, docker or none."""
    via: str
    """direct, sudo, systemd-scope, engine or uncapped."""
    works: bool
    reason: str

    @property
    def label(self) -> str:
        """How the text output names the route."""
        return {
            "sudo": "cgroup via sudo",
            "systemd-scope": "cgroup in a systemd scope",
        }.get(self.via, self.backend)


@frozen_record
class Diagnosis:
    """What works on a machine and why the rest does not."""

    facts: HostFacts
    cgroup_version: int | None
    cgroup_path: str | None
    routes: tuple[Route, ...]
    """Every route, in the order ``--backend auto`` tries them."""
    topics: tuple[tuple[str, str], ...]
    """(topic, finding): user, cgroup, delegation, systemd, docker, gpu (NVML), mps."""

    def route(self, backend: str, via: str | None = None) -> Route:
        """The first route of ``backend`` (and ``via``)."""
        for route in self.routes:
            if route.backend == backend and (via is None or route.via == via):
                return route
        raise KeyError((backend, via))

    @property
    def capped(self) -> bool:
        """Some route caps memory here."""
        return any(route.works for route in self.routes if route.backend != "none")


def _user(facts: HostFacts) -> str:
    return f"{facts.user} (uid {facts.euid})"


def _words(data: bytes | None) -> list[str]:
    return data.decode(errors="replace").split() if data is not None else []


def systemd_version(output: bytes | None) -> int | None:
    """The version number of ``systemctl --version`` ("systemd 255 (255.4-1ubuntu8)")."""
    words = _words(output)[:2]
    if len(words) == 2 and words[0] == "systemd":
        number = words[1].removeprefix("v").split(".")[0]
        if number.isdigit():
            return int(number)
    return None


def _v2_mount(mounts: list[Mount]) -> Mount | None:
    return next((mount for mount in mounts if mount.fstype == "cgroup2"), None)


def _unified_path(proc_cgroup: bytes) -> str | None:
    entries = [e for e in parse_proc_cgroup(proc_cgroup) if e.hierarchy_id == 0]
    return entries[0].path if entries else None


def _no_layout(facts: HostFacts, mounts: list[Mount]) -> str:
    v2 = _v2_mount(mounts)
    path = _unified_path(facts.cgroup.proc_cgroup)
    if not mounts:
        return "no cgroup filesystem is mounted"
    if v2 is None:
        return "no cgroup hierarchy holds the memory controller"
    if path is None:
        return f"cgroup2 is mounted at {v2.mount_point} but /proc/self/cgroup has no 0:: line"
    if "/.." in path:
        return f"this process's cgroup ({path}) is outside its cgroup namespace's root"
    listed = " ".join(_words(facts.cgroup.controllers)) or "none"
    return f"cgroup v2 at {v2.mount_point}: no memory controller for {path} (controllers: {listed})"


def _direct(facts: HostFacts, layout: CgroupLayout, mounts: list[Mount]) -> Route:
    def no(reason: str) -> Route:
        return Route("cgroup", "direct", False, reason)

    cgroup = facts.cgroup
    v2 = _v2_mount(mounts)
    path = layout.memory_path
    read_only = layout.read_only
    if layout.version is None:
        # The most fundamental reason first: a read-only mount or a foreign cgroup says more
        # than the missing controller a container's unreadable files imply.
        path = _unified_path(cgroup.proc_cgroup)
        if v2 is None or path is None or "/.." in path:
            return no(_no_layout(facts, mounts))
        read_only = v2.read_only
    if read_only:
        where = f"at {v2.mount_point}" if layout.version != 1 and v2 else f"holding {path}"
        return no(
            f"the cgroup filesystem {where} is mounted read-only "
            "(a container that may not manage its cgroups)"
        )
    if not cgroup.writable:
        owner = f"owned by uid {cgroup.owner_uid}" if cgroup.owner_uid is not None else "its owner"
        if facts.euid != 0:
            return no(f"{_user(facts)} is not root and {path} is not delegated to it ({owner})")
        return no(f"{path} is not writable, even for root ({owner})")
    if layout.version is None:
        return no(_no_layout(facts, mounts))
    if layout.version == 1:
        return Route(
            "cgroup", "direct", True, f"cgroup v1: {_user(facts)} may create cgroups under {path}"
        )
    enabled = set(_words(cgroup.subtree_control))
    if cgroup.other_processes == 0:
        return Route(
            "cgroup",
            "direct",
            True,
            f"cgroup v2: {path} is writable and qualify is alone in it: it moves itself into a "
            "leaf and enables memory and pids for the run's cgroup",
        )
    if enabled >= set(NEEDED):
        return Route(
            "cgroup", "direct", True, f"cgroup v2: {path} already hands memory and pids to children"
        )
    others = cgroup.other_processes
    count = "other processes" if others is None else f"{others} other process(es)"
    return no(
        f"{path} holds {count}: cgroup v2 enables memory for a child only in a cgroup that "
        "holds no process itself, so qualify needs a delegated cgroup of its own"
    )


def _privilege(facts: HostFacts) -> str:
    """Empty when this process can act as root, else why not."""
    if facts.euid == 0 or facts.sudo:
        return ""
    return f"{_user(facts)} is not root and has no passwordless sudo ({facts.sudo_reason})"


def _as_root(facts: HostFacts) -> str:
    return "as root" if facts.euid == 0 else "through passwordless sudo"


def _sudo(facts: HostFacts, layout: CgroupLayout, direct: Route) -> Route:
    def no(reason: str) -> Route:
        return Route("cgroup", "sudo", False, reason)

    if layout.version != 1:
        return no("only for cgroup v1 (on cgroup v2 a scope of its own is needed)")
    if layout.read_only:
        return no("the cgroup filesystem is mounted read-only")
    if direct.works or facts.euid == 0:
        return no("not needed: the cgroup route works directly")
    denied = _privilege(facts)
    if denied:
        return no(denied)
    return Route(
        "cgroup",
        "sudo",
        True,
        f"cgroup v1: {_user(facts)} is not root and {layout.memory_path} is not delegated to "
        "it; as root (passwordless sudo) qualify creates the run's cgroup there",
    )


def _scope(facts: HostFacts, layout: CgroupLayout, mounts: list[Mount], direct: Route) -> Route:
    def no(reason: str) -> Route:
        return Route("cgroup", "systemd-scope", False, reason)

    v2 = _v2_mount(mounts)
    systemd = facts.systemd
    version = systemd_version(systemd.version_output)
    if layout.version == 1:
        return no("only for cgroup v2 (memory is on cgroup v1 here)")
    if v2 is None:
        return no("no cgroup2 hierarchy is mounted")
    if v2.read_only:
        return no(f"the cgroup filesystem at {v2.mount_point} is mounted read-only")
    if layout.version is None:
        return no(_no_layout(facts, mounts))
    if not systemd.booted:
        return no("systemd is not PID 1 here (/run/systemd/system does not exist)")
    if systemd.systemd_run is None:
        return no("systemd-run is not installed")
    if version is None:
        return no("systemctl --version does not answer")
    if direct.works:
        return no("not needed: the cgroup route works directly")
    denied = _privilege(facts)
    if denied:
        return no(denied)
    return Route(
        "cgroup",
        "systemd-scope",
        True,
        f"cgroup v2 under systemd {version}: {direct.reason}; {_as_root(facts)}, "
        "systemd-run --scope -p Delegate=yes gives qualify a delegated cgroup of its own, "
        "and the run's cgroup is created inside it",
    )


def _docker(facts: HostFacts) -> Route:
    engine = facts.docker
    if not engine.answered:
        return Route("docker", "engine", False, engine.error or f"no engine at {engine.host}")
    local = engine.name == facts.hostname and engine.root_dir_here
    if not local:
        return Route(
            "docker",
            "engine",
            False,
            f"the engine at {engine.host} runs on another host or in another container (its "
            "host name or data root is not this machine's): qualify's bind mounts of the family "
            "and the run directory would name paths over there",
        )
    cgroup = f"cgroup v{engine.cgroup_version}" if engine.cgroup_version else "cgroup"
    return Route(
        "docker",
        "engine",
        True,
        f"engine {engine.version or '?'} at {engine.host} on this host ({cgroup}, "
        f"{engine.cgroup_driver or '?'} driver); a run needs an image: --image, or the "
        f"host-Python image {HOST_PYTHON_IMAGE} with --mount-host-python",
    )


def _topics(facts: HostFacts, layout: CgroupLayout, mounts: list[Mount]) -> list[tuple[str, str]]:
    cgroup = facts.cgroup
    user = _user(facts)
    if facts.euid == 0:
        pass
    elif facts.sudo:
        user += ", not root, passwordless sudo"
    else:
        user += f", not root, no sudo: {facts.sudo_reason}"
    if layout.version == 1:
        hierarchy = f"v1, memory cgroup {layout.memory_path}"
    elif layout.version == 2:
        v2 = _v2_mount(mounts)
        where = v2.mount_point if v2 else "?"
        hierarchy = f"v2 at {where}, cgroup {layout.memory_path}"
        hierarchy += f" (controllers: {' '.join(_words(cgroup.controllers)) or 'none'}"
        hierarchy += f"; subtree_control: {' '.join(_words(cgroup.subtree_control)) or 'empty'}"
        if cgroup.other_processes is not None:
            hierarchy += f"; {cgroup.other_processes} other process(es)"
        hierarchy += ")"
    else:
        hierarchy = f"none usable: {_no_layout(facts, mounts)}"
    v2_mount = _v2_mount(mounts)
    if layout.read_only or (layout.version is None and v2_mount is not None and v2_mount.read_only):
        hierarchy += "; mounted read-only"
    owner = f"owner uid {cgroup.owner_uid}" if cgroup.owner_uid is not None else "owner unknown"
    delegation = f"{'writable' if cgroup.writable else 'not writable'} by {facts.user} ({owner})"
    systemd = facts.systemd
    version = _words(systemd.version_output)[:3]
    said = " ".join(version) if version else "systemctl does not answer"
    systemd_text = f"{'PID 1' if systemd.booted else 'not PID 1'}; {said}"
    if systemd.systemd_run is None:
        systemd_text += "; no systemd-run"
    engine = facts.docker
    if engine.answered:
        docker_text = (
            f"{engine.version or '?'} at {engine.host}, cgroup v{engine.cgroup_version or '?'}, "
            f"{engine.cgroup_driver or '?'} driver, runtimes: {', '.join(engine.runtimes) or '?'}"
        )
    else:
        docker_text = engine.error or "no engine"
    gpu = facts.gpu
    if gpu.device_bytes:
        sizes = ", ".join(f"{size / 2**30:.1f} GiB" for size in gpu.device_bytes)
        gpu_text = f"{len(gpu.device_bytes)} device(s): {sizes}"
    else:
        gpu_text = f"no device: {gpu.nvml_reason or 'NVML reads none'}"
    mps_text = gpu.mps_daemon or gpu.mps_reason or "no MPS control daemon"
    return [
        ("user", user),
        ("cgroup", hierarchy),
        ("delegation", delegation),
        ("systemd", systemd_text),
        ("docker", docker_text),
        ("gpu", gpu_text),
        ("mps", mps_text),
    ]


def diagnose(facts: HostFacts) -> Diagnosis:
    """Every route on this machine with its reason, in the order auto tries them."""
    mounts = parse_mountinfo(facts.cgroup.mountinfo)
    layout = detect_layout(
        facts.cgroup.proc_cgroup, facts.cgroup.mountinfo, facts.cgroup.controllers
    )
    direct = _direct(facts, layout, mounts)
    routes = (
        direct,
        _sudo(facts, layout, direct),
        _scope(facts, layout, mounts, direct),
        _docker(facts),
        Route("none", "uncapped", True, "uncapped: nothing is enforced and every report says so"),
    )
    return Diagnosis(
        facts=facts,
        cgroup_version=layout.version,
        cgroup_path=layout.memory_path,
        routes=routes,
        topics=tuple(_topics(facts, layout, mounts)),
    )


def choose(diagnosis: Diagnosis, backend: str = "auto", image: str | None = None) -> Route:
    """The route ``--backend backend`` takes here; NoBackend (every reason) when none works."""
    if backend not in CHOICES:
        raise UsageError(f"--backend {backend!r} is not valid (valid: {', '.join(CHOICES)})")
    if backend == "none":
        return diagnosis.route("none")
    docker = diagnosis.route("docker")
    if backend == "docker" or (backend == "auto" and image):
        if docker.works:
            return docker
        raise NoBackend(f"--backend {backend} cannot run docker here: {docker.reason}")
    cgroups = [route for route in diagnosis.routes if route.backend == "cgroup"]
    for route in cgroups:
        if route.works:
            return route
    if backend == "auto" and docker.works:
        return docker
    tried = cgroups + ([docker] if backend == "auto" else [])
    reasons = "; ".join(f"{route.label}: {route.reason}" for route in tried)
    raise NoBackend(
        f"--backend {backend} cannot cap memory here ({reasons}); "
        "backend none runs uncapped, and every report says so"
    )


def decision(route: Route, backend: str) -> str:
    """One line: what was chosen and why (the first note of the run's audit)."""
    how = {
        "direct": "",
        "sudo": " as root through sudo",
        "systemd-scope": " in a delegated systemd scope",
        "engine": "",
        "uncapped": "",
    }[route.via]
    verb = "chose" if backend == "auto" else "runs"
    return f"--backend {backend} {verb} {route.backend}{how}: {route.reason}"


def run_argv(
    route: Route,
    facts: HostFacts,
    run_args: Sequence[str],
    *,
    backend: str,
    executable: str,
    environ: Mapping[str, str],
    image: str | None = None,
) -> list[str]:
    """The argv that runs ``qualify run RUN_ARGS`` on ``route`` (what the action executes).

    The decision travels in REASON_ENV, set by ``env`` (after sudo, which would drop it) so
    that the run's audit records it.
    """
    base = [executable, "-m", "qualify", "run", *run_args, "--backend", route.backend]
    if route.backend == "docker":
        base += ["--image", image or HOST_PYTHON_IMAGE]
        if image is None:
            base.append("--mount-host-python")
    reason = f"{REASON_ENV}={decision(route, backend)}"
    if route.via in ("direct", "engine", "uncapped"):
        return [ENV, reason, *base]
    sudo: list[str] = []
    kept: list[str] = []
    if facts.euid != 0:
        sudo = [facts.sudo_path or "sudo", "-n", "--preserve-env", "--set-home", "--"]
        kept = [f"{name}={environ[name]}" for name in SUDO_DROPS if name in environ]
    if route.via == "sudo":
        return [*sudo, ENV, *kept, reason, *base]
    systemd_run = facts.systemd.systemd_run or "systemd-run"
    return [*sudo, ENV, *kept, reason, systemd_run, *SCOPE, *base]
