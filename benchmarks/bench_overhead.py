"""Overhead of `qualify run`: the same E2E bare and under qualify, side by side in one run.

Prints the wall-time ratio (target <= 1.05 for a 10 s E2E), the monitor thread's CPU as a
share of one core (target < 1% at the default 50 ms interval) and qualify's own peak RSS.

    .venv/bin/python benchmarks/bench_overhead.py [--seconds 10] [--rounds 2]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parent.parent
E2E = """
import time
import harness

def test_work():
    deadline = time.monotonic() + harness.option("seconds", 10.0)
    chunks = []
    with harness.phase("work"):
        while time.monotonic() < deadline:
            chunks.append(bytearray(1 << 20))
            if len(chunks) > 64:
                chunks.clear()
            sum(range(20000))
"""


def make_repo(directory: Path, seconds: float) -> Path:
    family = directory / "families" / "bench"
    family.mkdir(parents=True)
    (family / "family.toml").write_text(
        'name = "bench"\n[e2e]\ncommand = ["python", "-m", "pytest", "test_bench.py", "-q"]\n'
        f"[options]\nseconds = {seconds}\n"
    )
    (family / "test_bench.py").write_text(E2E)
    (family / "pytest.ini").write_text("[pytest]\n")
    commit_all(directory)
    return family


def commit_all(directory: Path) -> None:
    """A git repository at ``directory`` with everything in it committed (qualify records the
    head commit of what it runs)."""
    for args in (
        ["init", "-q"],
        ["add", "-A"],
        ["-c", "user.name=b", "-c", "user.email=b@x", "commit", "-q", "-m", "bench"],
    ):
        subprocess.run(["git", "-C", str(directory), *args], check=True)


def bare(family: Path, seconds: float) -> float:
    env = dict(os.environ, PYTHONPATH=str(ROOT), QUALIFY_OPT_SECONDS=str(seconds))
    started = time.monotonic()
    subprocess.run(
        [sys.executable, "-m", "pytest", "test_bench.py", "-q", "-p", "no:cacheprovider"],
        cwd=family,
        env=env,
        check=True,
        capture_output=True,
    )
    return time.monotonic() - started


def under_qualify(repo: Path, out: Path) -> tuple[float, int, dict[str, object]]:
    started = time.monotonic()
    process = psutil.Popen(
        [
            sys.executable,
            "-m",
            "qualify",
            "run",
            "--family",
            "bench",
            "--repo",
            str(repo),
            "--mem",
            "2G",
            "--out",
            str(out),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    peak_rss = 0
    while process.poll() is None:
        with contextlib.suppress(psutil.Error):
            peak_rss = max(peak_rss, process.memory_info().rss)
        time.sleep(0.1)
    wall = time.monotonic() - started
    stdout = process.stdout.read() if process.stdout else ""
    if process.returncode != 0:
        raise SystemExit(f"qualify run failed ({process.returncode}):\n{stdout}")
    run_dir = Path(stdout.strip().splitlines()[-1])
    audit = json.loads((run_dir / "audit.json").read_text())
    return wall, peak_rss, audit


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="qualify-bench-") as scratch:
        repo = Path(scratch) / "repo"
        family = make_repo(repo, args.seconds)
        rows = []
        for _ in range(args.rounds):  # alternate, so drift hits both sides alike
            bare_s = bare(family, args.seconds)
            wall, rss, audit = under_qualify(repo, Path(scratch) / "reports")
            monitor = audit["monitor"]
            rows.append((bare_s, wall, rss, monitor["cpu_s"], monitor["samples"]))
    print(f"{'bare s':>8} {'qualify s':>10} {'ratio':>6} {'monitor cpu':>12}", end="")
    print(f" {'samples':>8} {'qualify rss':>12}")
    for bare_s, wall, rss, cpu, samples in rows:
        print(
            f"{bare_s:8.2f} {wall:10.2f} {wall / bare_s:6.3f} {100 * cpu / wall:11.2f}% "
            f"{samples:8d} {rss / 2**20:9.1f} MiB"
        )
    ratio = sum(r[1] for r in rows) / sum(r[0] for r in rows)
    print(
        f"mean wall ratio {ratio:.3f} (target <= 1.05); "
        f"monitor {100 * sum(r[3] for r in rows) / sum(r[1] for r in rows):.2f}% of one core "
        "(target < 1%)"
    )


if __name__ == "__main__":
    main()
