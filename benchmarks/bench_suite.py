"""Overhead of `qualify run` on a real third-party suite, and its fixed cost per run.

numpy's own test modules (about 3,560 short tests) run in three arms, from a venv this
benchmark builds from the package registry (numpy, pytest and hypothesis, cached between
runs), in rounds (each arm first in turn, so that drift and the other users of the machine hit
every arm alike): bare pytest; bare pytest with `--junitxml` (what qualify replaces: the
cheapest way to get JUnit out of pytest without it); and `qualify run --mem 2G`, whose JUnit
the plugin's events make (it asks pytest for none). Printed: min / median / max of the wall
ratio and of the CPU ratio (user + system of everything each arm ran, qualify included) of
qualify over bare and over `--junitxml`, of `--junitxml` over bare, the E2E's own time under
qualify against bare and qualify's time around it (start, judging, reports, publication), the
monitor's own CPU as a share of one core; then the same for a one-test E2E, whose difference
in seconds is qualify's fixed cost per run; then the monitor's CPU during a fork storm against
the pids limit; then the CPU time a Python process of the E2E pays for the harness's start-up
(``python -c pass``, bare and in a run's environment). Every timed run starts from a warm page
cache (``warm``), and each round prints what its runs still read from the disk. Targets:
qualify over `--junitxml` at most 1.00 (median, wall and CPU), over bare at most 1.03, fixed
cost at most 0.15 s. Nothing is asserted: the figures are printed. `--only instructions` (a
few minutes, needs valgrind) counts the instructions of one module's run instead: bare, with
`--junitxml` and under qualify, figures that the machine's other users do not move; `--only own`
counts those of qualify's own process around a one-test E2E (its fixed cost in instructions).

    .venv/bin/python benchmarks/bench_suite.py [--rounds 5] [--fixed-rounds 10]
        [--storm-runs 3] [--startup-rounds 40] [--venv DIR]
        [--only suite|fixed|storm|startup|instructions] [--from wheel|checkout]
        [--baseline REF]

qualify runs as the GitHub Action installs it: this tree `pip install`ed (a wheel, compiled at
install) into a venv of its own beside the suite's, rebuilt from the tree at every start;
`--baseline REF` adds qualify at that commit, installed the same way, to the suite's, the
one-test and the start-up rounds (both measured side by side). Needs root (a real cgroup cap)
and the registry the first time (`pip install`).
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import os
import resource
import shutil
import stat
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bench_overhead import commit_all

ROOT = Path(__file__).resolve().parent.parent
REQUIREMENTS = ("numpy", "pytest", "hypothesis")
MODULES = tuple(
    f"numpy.lib.tests.{name}"
    for name in (
        "test_function_base",
        "test_twodim_base",
        "test_arraypad",
        "test_shape_base",
        "test_nanfunctions",
        "test_index_tricks",
    )
)
COUNTED = "numpy.lib.tests.test_arraypad"
"""The module whose instructions ``--only instructions`` counts (617 tests of 1.4 ms: the
suite's six modules under callgrind would take ten minutes an arm)."""
ONE_TEST = "def test_one():\n    pass\n"
STORM = """
import subprocess, sys, time
subprocess.Popen(["bash", "-c", "bomb() { bomb | bomb & }; bomb"], stderr=subprocess.DEVNULL)
time.sleep(float(sys.argv[1]))
"""


def default_venv(requirements: Sequence[str]) -> Path:
    """A cache directory keyed by the interpreter and the requirements."""
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    key = hashlib.sha256(f"{sys.version}|{'|'.join(requirements)}".encode()).hexdigest()[:12]
    return cache / "qualify-bench" / f"suite-venv-{key}"


def build_venv(venv: Path, requirements: Sequence[str]) -> Path:
    """The venv's interpreter, the venv created and filled on first use."""
    python = venv / "bin" / "python"
    marker = venv / ".complete"
    if not marker.exists():
        print(f"building {venv} ({' '.join(requirements)})", file=sys.stderr)
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True)
        subprocess.run(
            [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check",
             *requirements],
            check=True,
        )  # fmt: skip
        marker.write_text("\n".join(requirements) + "\n")
    return python


def versions(python: Path) -> str:
    code = "import numpy, pytest, hypothesis as h; print(numpy.__version__, pytest.__version__, "
    code += "h.__version__)"
    numpy, pytest, hypothesis = subprocess.run(
        [str(python), "-c", code], check=True, capture_output=True, text=True
    ).stdout.split()
    return f"numpy {numpy}, pytest {pytest}, hypothesis {hypothesis}"


def make_repo(directory: Path, python: Path) -> dict[str, list[str]]:
    """A git repository with four families (the suite, one test, the counted module, a fork
    storm); returns the pytest families' commands (their bare argv)."""
    commands = {
        "suite": [str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider", "--pyargs",
                  *MODULES],
        "one": [str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_one.py"],
        "counted": [str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider", "--pyargs",
                    COUNTED],
    }  # fmt: skip
    for name, command in commands.items():
        family = directory / "families" / name
        family.mkdir(parents=True)
        (family / "family.toml").write_text(
            f'name = "{name}"\n[e2e]\ncommand = {json.dumps(command)}\ntimeout = "30m"\n'
        )
        (family / "pytest.ini").write_text("[pytest]\n")
    (directory / "families" / "one" / "test_one.py").write_text(ONE_TEST)
    storm = directory / "families" / "storm"
    storm.mkdir()
    (storm / "storm.py").write_text(STORM)
    (storm / "family.toml").write_text(
        'name = "storm"\n[e2e]\ncommand = ["python", "storm.py", "8"]\ntimeout = "60s"\n'
    )
    (directory / ".gitignore").write_text(".hypothesis/\n__pycache__/\n")
    commit_all(directory)
    return commands


def bare_env() -> dict[str, str]:
    """The caller's environment without anything of qualify's."""
    return {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("QUALIFY_", "PYTEST_")) and name != "PYTHONPATH"
    }


@dataclasses.dataclass(frozen=True)
class Measured:
    wall_s: float
    cpu_s: float
    """User + system time of the arm's processes (every process waited for)."""
    read_mb: float = 0.0
    """What the arm's processes read from the disk (``ru_inblock``): zero when the page cache
    held everything, which ``warm`` sees to before each timed run."""
    monitor_cpu_s: float | None = None
    e2e_s: float | None = None
    """Under qualify: the E2E's own wall time (the audit's); the rest is qualify's start and end."""


def timed(
    argv: Sequence[str], cwd: Path, env: dict[str, str], codes: Sequence[int] = (0, 1)
) -> tuple[Measured, str]:
    warm()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    completed = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    wall = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    read_mb = (after.ru_inblock - before.ru_inblock) * 512 / 1e6
    if completed.returncode not in codes:
        raise SystemExit(f"{argv[:4]} failed ({completed.returncode}):\n{completed.stderr}")
    return Measured(wall, cpu, read_mb), completed.stdout


WARM: list[Path] = []
"""What the timed arms read: the interpreter with its standard library, the suite's venv,
qualify's venvs, git, the repository. ``warm`` reads all of it before each timed run, so that
no arm pays for the disk: on the virtual machines this was measured on, a file not read for a
minute is paged out (the kernel's DAMON reclaim), and a bare run of the suite after 100 s idle
read 12 to 15 MB from the disk. What a run still read is printed beside it (``read_mb``)."""


def warm_roots(venv: Path, repo: Path) -> list[Path]:
    """``WARM`` for this run: the standard library (its tests and the base interpreter's own
    site-packages aside: no arm reads them), the interpreter and ``libpython``, the suite's
    venv, each qualify's venv (or this checkout with its venv), git, the repository."""
    base = Path(sys.base_prefix)
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    roots = [p for p in stdlib.iterdir() if p.name not in ("site-packages", "test")]
    roots += [base / "bin", *sorted((base / "lib").glob("libpython*")), venv, repo]
    for qualify in (QUALIFY, BASELINE):
        if qualify and qualify[0] != sys.executable:
            roots.append(Path(qualify[0]).parent.parent)
        elif qualify:
            roots += [Path(sys.prefix), ROOT / "qualify", ROOT / "harness"]
    git = shutil.which("git")
    return roots + ([Path(git)] if git else [])


def warm() -> None:
    """Read every regular file under ``WARM`` into the page cache (a few tenths of a second
    when it is there already)."""
    for root in WARM:
        for directory, _, names in os.walk(root) if root.is_dir() else [("", [], [str(root)])]:
            for name in names:
                path = os.path.join(directory, name)
                try:
                    if not stat.S_ISREG(os.stat(path).st_mode):
                        continue  # (a FIFO would block the read)
                    with open(path, "rb", buffering=0) as handle:
                        while handle.read(1 << 20):
                            pass
                except OSError:
                    continue


def bare(command: Sequence[str], family: Path) -> Measured:
    return timed(command, family, bare_env())[0]


def under_qualify(
    family: str, repo: Path, out: Path, mem: str, qualify: Sequence[str] | None = None
) -> Measured:
    measured, audit = qualify_run(family, repo, out, mem, qualify)
    if audit["verdict"] != "PASSED":
        raise SystemExit(f"qualify run: {audit['verdict']}: {audit['reason']}")
    return measured


QUALIFY: list[str] = [sys.executable, "-m", "qualify"]
"""How qualify is started: the installed console script (``install_qualify``), or this
checkout's package (``--from checkout``)."""
BASELINE: list[str] = []
"""``--baseline REF``: qualify at that commit, installed the same way, one more arm of the
rounds (empty: none)."""


def install_qualify(cache: Path) -> list[str]:
    """This tree installed as the GitHub Action installs it (``pip install`` of the tree: a
    wheel, compiled at install), into a venv of its own, cached by ``pyproject.toml`` (its
    dependencies come from the registry the first time); returns the venv's ``qualify``."""
    digest = hashlib.sha256(sys.version.encode() + (ROOT / "pyproject.toml").read_bytes())
    key = digest.hexdigest()[:12]
    venv = cache / f"qualify-venv-{key}"
    python = venv / "bin" / "python"
    pip = [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    if not (venv / ".complete").exists():
        print(f"building {venv} (qualify and its dependencies)", file=sys.stderr)
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True)
        subprocess.run([*pip, str(ROOT)], check=True)
        (venv / ".complete").write_text("qualify\n")
    else:  # this tree as it is now, its dependencies already there
        subprocess.run([*pip, "--no-deps", "--force-reinstall", str(ROOT)], check=True)
    return [str(venv / "bin" / "qualify")]


def install_baseline(ref: str, current: Sequence[str]) -> list[str]:
    """qualify at ``ref`` installed as this tree is: a copy of this tree's venv (the same
    dependencies) with ``ref``'s tree installed over it; cached by the commit."""
    sha = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--verify", f"{ref}^{{commit}}"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    venv = Path(current[0]).parent.parent.with_name(f"qualify-baseline-{sha[:12]}")
    if not (venv / ".complete").exists():
        print(f"building {venv} (qualify at {ref})", file=sys.stderr)
        shutil.rmtree(venv, ignore_errors=True)
        shutil.copytree(Path(current[0]).parent.parent, venv, symlinks=True)
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", sha], capture_output=True, check=True
        ).stdout
        with tempfile.TemporaryDirectory(prefix="qualify-baseline-") as tree:
            subprocess.run(["tar", "-x", "-C", tree], input=archive, check=True)
            subprocess.run(
                [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--no-deps",
                 "--force-reinstall", "--disable-pip-version-check", tree],
                check=True,
            )  # fmt: skip
        (venv / ".complete").write_text(sha + "\n")
    return [str(venv / "bin" / "qualify")]


def qualify_run(
    family: str, repo: Path, out: Path, mem: str, qualify: Sequence[str] | None = None
) -> tuple[Measured, dict[str, Any]]:
    command = list(qualify or QUALIFY)
    argv = [*command, "run", "--family", family, "--repo", str(repo), "--mem", mem,
            "--out", str(out)]  # fmt: skip
    # The installed qualify gets nothing of this checkout's on its path.
    checkout = command[0] == sys.executable
    env = dict(os.environ, PYTHONPATH=str(ROOT)) if checkout else bare_env()
    measured, stdout = timed(argv, out.parent, env, codes=(0, 1, 3))  # 3: the storm's OOM
    run_dir = out.parent / stdout.strip().splitlines()[-1]  # relative to qualify's cwd
    audit = json.loads((run_dir / "audit.json").read_text())
    monitor, e2e = audit["monitor"]["cpu_s"], audit["timings"]["wall_s"]
    return dataclasses.replace(measured, monitor_cpu_s=monitor, e2e_s=e2e), audit


def rounds(count: int, arms: dict[str, Callable[[], Measured]]) -> list[dict[str, Measured]]:
    """``count`` rounds of every arm, each arm first in turn (drift and the machine's other
    users hit them alike); each round printed as it ends."""
    names = list(arms)
    rows: list[dict[str, Measured]] = []
    for index in range(count):
        turn = names[index % len(names) :] + names[: index % len(names)]
        rows.append({name: arms[name]() for name in turn})
        print(
            f"  round {index + 1}: "
            + " | ".join(
                f"{name} {rows[-1][name].wall_s:.3f} s (cpu {rows[-1][name].cpu_s:.3f}"
                + (f", read {rows[-1][name].read_mb:.1f} MB)" if rows[-1][name].read_mb else ")")
                for name in names
            ),
            file=sys.stderr,
        )
    return rows


def spread(values: Sequence[float], fmt: str) -> str:
    return " / ".join(
        format(value, fmt) for value in (min(values), statistics.median(values), max(values))
    )


def suite(args: argparse.Namespace, command: list[str], repo: Path, out: Path) -> None:
    family = repo / "families" / "suite"
    bare(command, family)  # one untimed run first: the page cache, numpy's bytecode
    # What qualify replaces: pytest's own --junitxml, run without qualify.
    junit = [*command, f"--junitxml={out.parent / 'bare-junit.xml'}"]
    arms: dict[str, Callable[[], Measured]] = {
        "bare": lambda: bare(command, family),
        "junitxml": lambda: bare(junit, family),
        "qualify": lambda: under_qualify("suite", repo, out, args.mem),
    }
    if BASELINE:
        arms["baseline"] = lambda: under_qualify("suite", repo, out, args.mem, BASELINE)
    rows = rounds(args.rounds, arms)
    b = [row["bare"] for row in rows]
    j = [row["junitxml"] for row in rows]
    q = [row["qualify"] for row in rows]
    walls = [x.wall_s / y.wall_s for x, y in zip(q, b, strict=True)]
    cpus = [x.cpu_s / y.cpu_s for x, y in zip(q, b, strict=True)]
    floor = [x.wall_s / y.wall_s for x, y in zip(j, b, strict=True)]
    floor_cpu = [x.cpu_s / y.cpu_s for x, y in zip(j, b, strict=True)]
    over_junit = [x.wall_s / y.wall_s for x, y in zip(q, j, strict=True)]
    over_junit_cpu = [x.cpu_s / y.cpu_s for x, y in zip(q, j, strict=True)]
    monitor = [100 * (x.monitor_cpu_s or 0.0) / (x.e2e_s or x.wall_s) for x in q]
    inside = [(x.e2e_s or x.wall_s) / y.wall_s for x, y in zip(q, b, strict=True)]
    outside = [x.wall_s - (x.e2e_s or x.wall_s) for x in q]
    print(f"numpy suite ({len(MODULES)} modules), {len(rows)} rounds, min / median / max:")
    print(f"  bare wall        {spread([x.wall_s for x in b], '.2f')} s")
    print(f"  --junitxml wall  {spread([x.wall_s for x in j], '.2f')} s")
    print(f"  qualify wall     {spread([x.wall_s for x in q], '.2f')} s")
    print("  qualify / bare pytest:")
    print(f"    wall ratio     {spread(walls, '.3f')}  (target: median <= 1.03)")
    print(f"    cpu ratio      {spread(cpus, '.3f')}  (target: median <= 1.03)")
    print("  qualify / bare pytest --junitxml (what it replaces):")
    print(f"    wall ratio     {spread(over_junit, '.3f')}  (target: median <= 1.00)")
    print(f"    cpu ratio      {spread(over_junit_cpu, '.3f')}  (target: median <= 1.00)")
    print("  bare pytest --junitxml / bare pytest:")
    print(f"    wall ratio     {spread(floor, '.3f')}")
    print(f"    cpu ratio      {spread(floor_cpu, '.3f')}")
    print(f"  E2E ratio        {spread(inside, '.3f')}  (the E2E under qualify / bare)")
    print(f"  outside E2E      {spread(outside, '.2f')} s  (qualify's start and end)")
    print(f"  monitor cpu      {spread(monitor, '.2f')} % of one core (target < 1%)")
    if BASELINE:
        a = [row["baseline"] for row in rows]
        print(f"  qualify at {args.baseline}:")
        ratios = [x.wall_s / y.wall_s for x, y in zip(a, b, strict=True)]
        cpu_ratios = [x.cpu_s / y.cpu_s for x, y in zip(a, b, strict=True)]
        print(f"    wall ratio   {spread(ratios, '.3f')}")
        print(f"    cpu ratio    {spread(cpu_ratios, '.3f')}")
        print(f"    outside E2E  {spread([x.wall_s - (x.e2e_s or x.wall_s) for x in a], '.2f')} s")


def fixed(args: argparse.Namespace, command: list[str], repo: Path, out: Path) -> None:
    family = repo / "families" / "one"
    bare(command, family)
    arms: dict[str, Callable[[], Measured]] = {
        "bare": lambda: bare(command, family),
        "qualify": lambda: under_qualify("one", repo, out, args.mem),
    }
    if BASELINE:
        arms["baseline"] = lambda: under_qualify("one", repo, out, args.mem, BASELINE)
    names = list(arms)
    rows = rounds(args.fixed_rounds, arms)
    print(f"one-test E2E, {len(rows)} rounds, min / median / max:")
    print(f"  bare wall      {spread([row['bare'].wall_s for row in rows], '.3f')} s")
    for name in names[1:]:
        label = "qualify" if name == "qualify" else f"qualify at {args.baseline}"
        extra = [row[name].wall_s - row["bare"].wall_s for row in rows]
        inside = [(row[name].e2e_s or row[name].wall_s) - row["bare"].wall_s for row in rows]
        added = [row[name].cpu_s - row["bare"].cpu_s for row in rows]
        outside = [row[name].wall_s - (row[name].e2e_s or row[name].wall_s) for row in rows]
        print(f"  {label}:")
        print(f"    wall         {spread([row[name].wall_s for row in rows], '.3f')} s")
        print(f"    fixed cost   {spread(extra, '.3f')} s  (target: median <= 0.15 s)")
        print(f"    of it in E2E {spread(inside, '.3f')} s  (sandbox, harness, junit)")
        print(f"    outside E2E  {spread(outside, '.3f')} s  (qualify's start and end)")
        print(f"    cpu added    {spread(added, '.3f')} s")
    if BASELINE:
        paired = [row["qualify"].wall_s - row["baseline"].wall_s for row in rows]
        print(f"  qualify - qualify at {args.baseline}, round by round:")
        print(f"    wall         {spread(paired, '.3f')} s")


def storm(args: argparse.Namespace, repo: Path, out: Path) -> None:
    shares, refused, killed = [], [], []
    for _ in range(args.storm_runs):
        _, audit = qualify_run("storm", repo, out, args.mem)
        shares.append(100 * audit["monitor"]["cpu_s"] / audit["timings"]["wall_s"])
        refused.append(audit["processes"]["pids_refused"] or 0)
        killed.append(audit["processes"]["killed_at_end_count"] or 0)
    print(f"fork storm (bash fork bomb against the pids limit, 8 s), {len(shares)} runs:")
    print(f"  forks refused  {spread(refused, '.0f')}")
    print(f"  left to kill   {spread(killed, '.0f')} processes at the end")
    print(f"  monitor cpu    {spread(shares, '.2f')} % of one core (target < 1%)")


def callgrind(argv: Sequence[str], cwd: Path, env: dict[str, str], out: Path) -> dict[str, int]:
    """``argv`` and every process it starts run under callgrind: the instructions each
    executed, by the command line of its last image (an ``exec`` replaces the file of the
    image before it, so the launch shim's ``sh`` is counted as the E2E it becomes)."""
    out.mkdir()
    vg = ["valgrind", "--tool=callgrind", "--trace-children=yes",
          f"--callgrind-out-file={out}/cg.%p"]  # fmt: skip
    completed = subprocess.run(
        [*vg, *argv], cwd=cwd, env=env, capture_output=True, text=True, check=False
    )
    if completed.returncode not in (0, 1):
        raise SystemExit(f"{argv[:4]} under callgrind failed ({completed.returncode}):\n"
                         f"{completed.stderr[-2000:]}")  # fmt: skip
    counts: dict[str, int] = {}
    for path in sorted(out.glob("cg.*")):
        cmd, total = "", 0
        for line in path.read_text(errors="replace").splitlines():
            if line.startswith("cmd:"):
                cmd = line[4:].strip()
            elif line.startswith("summary:"):
                total = int(line.split()[1])
        counts[f"{cmd} [{path.suffix[1:]}]"] = total
    return counts


def instructions(args: argparse.Namespace, command: list[str], repo: Path, out: Path) -> None:
    """The instructions each arm executes, counted by callgrind: the same for every run of the
    same code and data (``PYTHONHASHSEED=0``), where the wall and CPU times of this shared
    machine vary by a tenth between rounds. Arms: bare pytest, bare pytest with
    ``--junitxml``, and ``qualify run`` of the same module (its E2E, qualify's own process,
    and the helpers it starts: git, the watchdog), with ``--baseline``'s qualify as one more.
    The E2E's count is a cost per test; qualify's own is not of the same kind, as its monitor
    samples by the clock and valgrind makes the E2E some 50 times slower. Counts are not
    exactly repeatable: the same arm twice differs by a few tenths of a percent (the module's
    own randomness, the interpreter's memory layout), hence rounds."""
    if shutil.which("valgrind") is None:
        raise SystemExit(
            "--only instructions: valgrind not found (Debian: apt-get install valgrind)"
        )
    family = repo / "families" / "counted"
    env = dict(bare_env(), PYTHONHASHSEED="0")
    scratch = out.parent / "callgrind"
    scratch.mkdir(exist_ok=True)
    bare(command, family)  # the page cache, numpy's bytecode
    junit = [*command, f"--junitxml={out.parent / 'counted-junit.xml'}"]
    installs = {"qualify": QUALIFY}
    if BASELINE:
        installs[f"qualify at {args.baseline}"] = BASELINE

    def pytest_arm(argv: list[str]) -> Callable[[Path], dict[str, int]]:
        return lambda where: {"e2e": sum(callgrind(argv, family, env, where).values())}

    def qualify_arm(name: str, qualify: Sequence[str]) -> Callable[[Path], dict[str, int]]:
        python = str(Path(qualify[0]).with_name("python"))
        argv = [python, "-m", "qualify", "run", "--family", "counted", "--repo", str(repo),
                "--mem", args.mem, "--out", str(out)]  # fmt: skip

        def arm(where: Path) -> dict[str, int]:
            counts = callgrind(argv, out.parent, env, where)
            own = {k: v for k, v in counts.items() if "-m qualify run" in k}
            e2e = {k: v for k, v in counts.items() if "-m pytest" in k and k not in own}
            rest = {k: v for k, v in counts.items() if k not in own and k not in e2e}
            if len(own) != 1 or len(e2e) != 1:
                raise SystemExit(f"{name}: expected one qualify and one E2E process: {counts}")
            # qualify's own process again with the E2E at full speed: its monitor samples as
            # often as without valgrind (the traced run's own count is stretched by it)
            alone = _own_count(qualify, "counted", repo, out, args.mem, where / "alone", env)
            return {"e2e": sum(e2e.values()), "own": sum(own.values()), "alone": alone,
                    "rest": sum(rest.values()), "helpers": len(rest)}  # fmt: skip

        return arm

    arms = {"bare": pytest_arm(command), "junitxml": pytest_arm(junit)}
    arms.update({name: qualify_arm(name, qualify) for name, qualify in installs.items()})
    names = list(arms)
    runs: dict[str, list[dict[str, int]]] = {name: [] for name in names}
    for index in range(args.count_rounds):
        for name in names[index % len(names) :] + names[: index % len(names)]:
            where = scratch / f"{index + 1}-{name.replace(' ', '-')}"
            runs[name].append(arms[name](where))
        row = " | ".join(f"{name} {runs[name][-1]['e2e'] / 1e6:.1f} M" for name in names)
        print(f"  round {index + 1}: {row}", file=sys.stderr)
    tests = _tests_in(out.parent / "counted-junit.xml")

    def median(name: str, part: str = "e2e") -> float:
        return statistics.median(run[part] for run in runs[name])

    def millions(name: str, part: str = "e2e") -> str:
        return spread([run[part] / 1e6 for run in runs[name]], ".1f")

    base, floor = median("bare"), median("junitxml")
    print(f"instructions (callgrind, {COUNTED}, {tests} tests, PYTHONHASHSEED=0), "
          f"{args.count_rounds} rounds, millions, min / median / max:")  # fmt: skip
    print(f"  bare pytest        {millions('bare')}")
    added = f"{(floor - base) / tests / 1e3:+.1f} k a test"
    print(f"  with --junitxml    {millions('junitxml')}  ({floor / base:.4f} x bare; {added})")
    for name in installs:
        e2e = median(name)
        over = f"{(e2e - floor) / tests / 1e3:+.1f} k a test over it"
        print(f"  {name}:")
        print(f"    the E2E          {millions(name)}  ({e2e / base:.4f} x bare, "
              f"{e2e / floor:.4f} x with --junitxml; {over})")  # fmt: skip
        print(f"    qualify itself   {millions(name, 'own')}  (its monitor stretched by valgrind)")
        helpers = runs[name][0]["helpers"]
        print(f"    {helpers} helpers        {millions(name, 'rest')}  (git, the watchdog)")
    print("  (ratios and k a test: of the medians)")
    _budget(installs, runs, base, floor, tests)


def _budget(
    installs: dict[str, Sequence[str]], runs: dict[str, list[dict[str, int]]], base: float,
    floor: float, tests: int,
) -> None:  # fmt: skip
    """What the targets leave in instructions (1.03 x bare; 1.00 x ``--junitxml``) for all that
    qualify adds, against what each qualify adds: its harness inside the E2E, its own process
    (counted with the E2E not traced) and its helpers (git, the watchdog)."""
    print(f"  the targets in instructions, everything each arm ran ({tests} tests):")
    print(f"    1.03 x bare leaves {0.03 * base / 1e6:.1f} M for all qualify adds; 1.00 x "
          f"--junitxml leaves {(floor - base) / 1e6:.1f} M")  # fmt: skip
    for name in installs:
        plugin, alone, rest = (
            statistics.median(run[part] for run in runs[name]) for part in ("e2e", "alone", "rest")
        )
        plugin -= base
        total = base + plugin + alone + rest
        print(f"    {name}: {total / base:.4f} x bare, {total / floor:.4f} x --junitxml: the "
              f"E2E's harness {plugin / 1e6:+.1f} M, qualify's own process {alone / 1e6:.1f} M "
              f"(E2E not traced), helpers {rest / 1e6:.1f} M")  # fmt: skip


def own_instructions(args: argparse.Namespace, repo: Path, out: Path) -> None:
    """qualify's own process for a one-test E2E (``--own-family``: another), counted by
    callgrind with the E2E left out (``--trace-children=no``: the E2E and every helper run at
    full speed, so qualify's monitor samples as often as it does without valgrind): the
    instructions of qualify's start and end, which the machine's other users do not move, side
    by side with ``--baseline``'s."""
    if shutil.which("valgrind") is None:
        raise SystemExit("--only own: valgrind not found (Debian: apt-get install valgrind)")
    env = dict(bare_env(), PYTHONHASHSEED="0")
    installs = {"qualify": QUALIFY}
    if BASELINE:
        installs[f"qualify at {args.baseline}"] = BASELINE
    counts: dict[str, list[int]] = {name: [] for name in installs}
    scratch = out.parent / "own"
    scratch.mkdir(exist_ok=True)
    for index in range(args.count_rounds):
        names = list(installs)
        for name in names[index % len(names) :] + names[: index % len(names)]:
            target = scratch / f"{index}-{len(counts[name])}-{name.replace(' ', '-')}"
            own = _own_count(installs[name], args.own_family, repo, out, args.mem, target, env)
            counts[name].append(own)
        row = " | ".join(f"{name} {values[-1] / 1e6:.1f} M" for name, values in counts.items())
        print(f"  round {index + 1}: {row}", file=sys.stderr)
    print(f"qualify's own process, E2E {args.own_family!r} (callgrind, E2E not traced, "
          f"PYTHONHASHSEED=0), "
          f"{args.count_rounds} rounds, millions of instructions, min / median / max:")  # fmt: skip
    for name, values in counts.items():
        print(f"  {name:<24} {spread([v / 1e6 for v in values], '.1f')}")
    if BASELINE:
        ours, theirs = counts["qualify"], counts[f"qualify at {args.baseline}"]
        ratio = statistics.median(ours) / statistics.median(theirs)
        print(f"  qualify / qualify at {args.baseline}: {ratio:.3f} (of the medians)")


def _own_count(
    qualify: Sequence[str], family: str, repo: Path, out: Path, mem: str, target: Path,
    env: dict[str, str],
) -> int:  # fmt: skip
    """The instructions of qualify's own process in one ``qualify run`` of ``family``, under
    callgrind with the E2E and every helper left out (``--trace-children=no``: they run at full
    speed, so that qualify's monitor samples as often as it does without valgrind)."""
    python = str(Path(qualify[0]).with_name("python"))
    completed = subprocess.run(
        ["valgrind", "--tool=callgrind", "--trace-children=no",
         f"--callgrind-out-file={target}", python, "-m", "qualify", "run", "--family", family,
         "--repo", str(repo), "--mem", mem, "--out", str(out)],
        cwd=out.parent, env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    if completed.returncode != 0:
        raise SystemExit(f"{qualify[0]} under callgrind: exit {completed.returncode}:\n"
                         f"{completed.stderr[-2000:]}")  # fmt: skip
    summary = [line for line in target.read_text().splitlines() if line.startswith("summary:")]
    return int(summary[0].split()[1])


def _tests_in(junit: Path) -> int:
    import xml.etree.ElementTree as ET

    return sum(1 for _ in ET.parse(junit).getroot().iter("testcase"))


STAGE = (
    "import sys; from pathlib import Path; from qualify.run.execute import stage_harness; "
    "print(stage_harness(Path(sys.argv[1])).parent)"
)


def staged_harness(qualify: Sequence[str], run_dir: Path) -> Path:
    """The harness of the qualify at ``qualify`` (its console script) staged into ``run_dir``
    as a run stages it; returns the directory the E2E's PYTHONPATH names."""
    python = Path(qualify[0]).with_name("python")
    done = subprocess.run(
        [str(python), "-c", STAGE, str(run_dir)], capture_output=True, text=True, check=True
    )
    return Path(done.stdout.strip())


def startup(args: argparse.Namespace, python: Path, scratch: Path) -> None:
    """What every Python process of an E2E pays for the harness (qualify's ``sitecustomize``
    runs in each): ``python -c pass`` from the suite's venv, bare and with a run's environment
    (the harness staged as a run stages it, the run's variables set, the limits already
    recorded by an earlier process), CPU time per process, in rounds."""
    installs = {"qualify": QUALIFY}
    if BASELINE:
        installs[f"qualify at {args.baseline}"] = BASELINE
    arms: dict[str, dict[str, str]] = {"bare": bare_env()}
    for name, qualify in installs.items():
        run_dir = scratch / f"startup-{len(arms)}"
        run_dir.mkdir()
        (run_dir / ".sandbox-limits").touch()  # the first process of the run recorded them
        root = staged_harness(qualify, run_dir)
        arms[name] = dict(
            bare_env(),
            PYTHONPATH=os.pathsep.join([str(root), str(root / "harness" / "_site")]),
            QUALIFY_EVENTS=str(run_dir / "events.jsonl"),
            QUALIFY_RUN_DIR=str(run_dir),
        )
    cpu: dict[str, list[float]] = {name: [] for name in arms}
    names = list(arms)
    for index in range(args.startup_rounds):
        for name in names[index % len(names) :] + names[: index % len(names)]:
            measured, _ = timed([str(python), "-c", "pass"], scratch, arms[name])
            cpu[name].append(measured.cpu_s * 1000)
    print(f"a Python process of the E2E (python -c pass), {args.startup_rounds} rounds, CPU ms:")
    print(f"  bare           {spread(cpu['bare'], '.1f')}")
    for name in names[1:]:
        added = [x - y for x, y in zip(cpu[name], cpu["bare"], strict=True)]
        print(f"  {name}: {spread(cpu[name], '.1f')}, added {spread(added, '.1f')}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="suite rounds (default 5)")
    parser.add_argument("--fixed-rounds", type=int, default=10, help="one-test rounds")
    parser.add_argument("--storm-runs", type=int, default=3, help="fork storms (8 s each)")
    parser.add_argument("--venv", type=Path, default=None, help="the suite's venv (cached)")
    parser.add_argument("--mem", default="2G")
    parser.add_argument("--startup-rounds", type=int, default=40, help="python -c pass rounds")
    parser.add_argument(
        "--own-family", choices=("one", "counted", "suite"), default="one",
        help="--only own: the E2E qualify's process is counted around (default one: one test; "
        "counted: test_arraypad; suite: the six modules)",
    )  # fmt: skip
    parser.add_argument(
        "--count-rounds", type=int, default=3, help="instruction-count rounds (default 3)"
    )
    parser.add_argument(
        "--only",
        choices=("suite", "fixed", "storm", "startup", "instructions", "own"),
        default=None,
        help="one part; instructions and own (callgrind, minutes) run only when named",
    )
    parser.add_argument(
        "--baseline",
        metavar="REF",
        default=None,
        help="also time qualify at this commit (installed like this tree) in the same rounds",
    )
    parser.add_argument(
        "--from",
        dest="source",
        choices=("wheel", "checkout"),
        default="wheel",
        help="run qualify installed from this tree's wheel (default) or from the checkout",
    )
    args = parser.parse_args()
    if args.baseline and args.source != "wheel":
        parser.error("--baseline needs --from wheel (the baseline is installed like this tree)")
    venv = args.venv or default_venv(REQUIREMENTS)
    python = build_venv(venv, REQUIREMENTS)
    if args.source == "wheel":
        QUALIFY[:] = install_qualify(venv.parent)
        if args.baseline:
            BASELINE[:] = install_baseline(args.baseline, QUALIFY)
    else:
        # Compiled first, as an installed wheel is, so that no run pays for compiling it
        # (PYTHONDONTWRITEBYTECODE or not); the editable install's finder still loads.
        subprocess.run(
            [sys.executable, "-m", "compileall", "-q", str(ROOT / "qualify"),
             str(ROOT / "harness")],
            check=True,
            stdout=subprocess.DEVNULL,
        )  # fmt: skip
    source = "its wheel, installed" if args.source == "wheel" else "this checkout"
    print(f"{os.cpu_count()} cores, Linux {os.uname().release}; {versions(python)}; "
          f"qualify from {source}")  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="qualify-bench-") as scratch:
        repo = Path(scratch) / "repo"
        commands = make_repo(repo, python)
        WARM[:] = warm_roots(venv, repo)
        out = Path(scratch) / "reports"
        if args.only in (None, "suite"):
            suite(args, commands["suite"], repo, out)
        if args.only in (None, "fixed"):
            fixed(args, commands["one"], repo, out)
        if args.only in (None, "storm"):
            storm(args, repo, out)
        if args.only in (None, "startup") and args.source == "wheel":
            startup(args, python, Path(scratch))
        if args.only == "instructions":
            instructions(args, commands["counted"], repo, out)
        if args.only == "own":
            own_instructions(args, repo, out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
