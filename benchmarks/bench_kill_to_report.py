"""Kill-to-report: from the kernel's OOM kill of the E2E to qualify's exit, reports written.

The E2E writes its pid to a file as it starts; this benchmark opens a pidfd on it and takes
the moment the pidfd becomes readable (the process is dead: the OOM killer's SIGKILL has been
delivered and the exit processed) as the kill. qualify's exit is when its process ends: by then
the JUnit file, the audit, the report page and public/ are written.

Two E2Es, each under a real 512 MiB cgroup cap: a plain memory hog, and a fork storm (a bash
fork bomb against the pids limit) followed by a memory storm, the case where teardown used to
wait on the monitor. Target: under 0.5 s at the maximum. Needs root (cgroups).

    .venv/bin/python benchmarks/bench_kill_to_report.py [--runs 10]
"""

from __future__ import annotations

import argparse
import json
import os
import select
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PID_FILE = """
import os
with open(os.environ["QUALIFY_OPT_PID_FILE"] + ".tmp", "w") as handle:
    handle.write(str(os.getpid()))
os.rename(os.environ["QUALIFY_OPT_PID_FILE"] + ".tmp", os.environ["QUALIFY_OPT_PID_FILE"])
"""
HOG = (
    PID_FILE
    + """
chunks = []
while True:
    chunks.append(bytearray(b"x" * (16 << 20)))
"""
)
STORM = (
    PID_FILE
    + """
import subprocess, time
subprocess.Popen(["bash", "-c", "bomb() { bomb | bomb & }; bomb"])
time.sleep(1.0)
chunks = []
while True:
    chunks.append(bytearray(b"x" * (16 << 20)))
"""
)


def make_repo(directory: Path) -> None:
    for name, source in (("hog", HOG), ("storm", STORM)):
        family = directory / "families" / name
        family.mkdir(parents=True)
        (family / "family.toml").write_text(
            f'name = "{name}"\n[e2e]\ncommand = ["python", "{name}.py"]\ntimeout = "60s"\n'
            '[options]\npid_file = ""\n'
        )
        (family / f"{name}.py").write_text(source)
    for args in (
        ["init", "-q"],
        ["add", "-A"],
        ["-c", "user.name=b", "-c", "user.email=b@x", "commit", "-q", "-m", "bench"],
    ):
        subprocess.run(["git", "-C", str(directory), *args], check=True)


def _death(pid_file: Path, timeout_s: float = 60.0) -> float:
    """The monotonic time at which the process named in ``pid_file`` died."""
    deadline = time.monotonic() + timeout_s
    while not pid_file.exists():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{pid_file} never appeared")
        time.sleep(0.001)
    fd = os.pidfd_open(int(pid_file.read_text()))
    try:
        select.select([fd], [], [], timeout_s)
        return time.monotonic()
    finally:
        os.close(fd)


def one_run(repo: Path, family: str, out: Path) -> float:
    """Seconds from the death of the OOM-killed E2E to qualify's exit."""
    pid_file = out.parent / f"{family}-{time.time_ns()}.pid"
    process = subprocess.Popen(
        [sys.executable, "-m", "qualify", "run", "--family", family, "--mem", "512M",
         "--out", str(out), "--set", f"pid_file={pid_file}"],
        cwd=repo, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    died = _death(pid_file)
    stdout, stderr = process.communicate()
    exited = time.monotonic()
    run_dir = Path(stdout.strip().splitlines()[-1])
    audit = json.loads((run_dir / "audit.json").read_text())
    assert audit["verdict"] == "OOM_KILLED", (audit["reason"], stderr)
    return exited - died


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="qualify-bench-") as scratch:
        repo = Path(scratch) / "repo"
        make_repo(repo)
        for family in ("hog", "storm"):
            measured = [one_run(repo, family, Path(scratch) / "out") for _ in range(args.runs)]
            seconds = [value for value in measured if value is not None]
            lost = len(measured) - len(seconds)
            print(
                f"{family:6} kill-to-report over {len(seconds)} runs: min {min(seconds):.3f} s, "
                f"median {statistics.median(seconds):.3f} s, max {max(seconds):.3f} s "
                f"(target: under 0.5 s)"
                + (f"; {lost} run(s) lost the kernel's record" if lost else "")
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
