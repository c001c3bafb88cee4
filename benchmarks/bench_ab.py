"""Wall time of ``qualify ab --n 8`` on the tiny family: 16 full runs, and what the A/B adds.

Runs the real command line in a temporary directory, against a snapshot of this repository's
families committed to a repository of its own (work going on in the checkout meanwhile would
otherwise change the tree the runs are pinned to, and the experiment would be refused).
Prints the wall time of the whole A/B, the sum of its runs' own wall times, the difference
(qualify starting, judging and reporting each run, and the A/B reading them back), and the
availability of each arm. Needs root and a writable cgroup memory controller. Not a test.

    .venv/bin/python benchmarks/bench_ab.py                           # size tiny, cap 1G
    .venv/bin/python benchmarks/bench_ab.py --n 8 -- --set size=small --mem 850M
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _snapshot(root: Path) -> None:
    shutil.copytree(
        ROOT / "families", root / "families", ignore=shutil.ignore_patterns("__pycache__")
    )
    (root / ".gitignore").write_text("__pycache__/\n")  # the runs' bytecode: not the tree's
    identity = ["-c", "user.name=bench", "-c", "user.email=bench@example.invalid"]
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "families"]):
        subprocess.run(["git", *identity, "-C", str(root), *args], check=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=8, help="runs per arm (default 8)")
    parser.add_argument("extra", nargs="*", help="more qualify ab arguments, after --")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-ab-") as temporary:
        work = Path(temporary)
        _snapshot(work / "repo")
        command = [
            sys.executable, "-m", "qualify", "ab", "--family", "tiny", "--repo", "repo",
            "--a", "retain_plans=true", "--b", "retain_plans=false", "--n", str(args.n),
            *args.extra,
        ]  # fmt: skip
        started = time.monotonic()
        process = subprocess.run(command, cwd=work, capture_output=True, text=True, check=False)
        wall = time.monotonic() - started
        if process.returncode != 0:
            sys.stderr.write(process.stdout + process.stderr)
            return process.returncode
        directory = work / process.stdout.strip().splitlines()[-1]
        record = json.loads((directory / "ab.json").read_text())
    runs = record["repetitions"]
    inside = sum(run["wall_s"] or 0.0 for run in runs)
    print(f"qualify ab --n {args.n} on tiny ({' '.join(args.extra) or 'defaults'}):")
    print(f"  wall time            {wall:8.1f} s for {len(runs)} runs")
    print(f"  runs' own wall times {inside:8.1f} s (E2E start to end, as each audit has it)")
    print(
        f"  around the runs      {wall - inside:8.1f} s ({(wall - inside) / len(runs):.2f} s a run)"
    )
    for arm in ("a", "b"):
        mine = [run for run in runs if run["arm"] == arm]
        walls = sorted(run["wall_s"] or 0.0 for run in mine)
        passed = sum(run["verdict"] == "PASSED" for run in mine)
        print(
            f"  arm {arm} {record['arms'][arm]}: {passed}/{len(mine)} passed, run wall "
            f"min {walls[0]:.1f} s, median {statistics.median(walls):.1f} s, max {walls[-1]:.1f} s"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
