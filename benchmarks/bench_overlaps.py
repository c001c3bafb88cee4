"""What each overlap of ``qualify run`` saves (``qualify/commands/_overlap.py``), side by side.

A one-test E2E (0.1 s of work) run bare under pytest and under ``qualify run --mem 2G``, with
every overlap on and with each switched off by its variable, the arms in one round in turn
(each round starts with another arm). Prints per arm the whole process's wall time (min /
median / max), the fixed cost (qualify with everything on, over bare pytest), and each
overlap's saving as the median of its paired differences, in seconds and as a share of the
fixed cost. An overlap that saves under 1% of the fixed cost is not worth its code.

    .venv/bin/python benchmarks/bench_overlaps.py [--rounds 9]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_overhead import ROOT, make_repo

SWITCHES = {
    "commit prefetch": "QUALIFY_NO_PREFETCH",
    "end-of-run imports": "QUALIFY_NO_PRELOAD",
    "exit without teardown": "QUALIFY_NO_EXIT_NOW",
    "/dev/shm trial": "QUALIFY_NO_SHM_TRIAL",
}
SECONDS = 0.1
KEEP_SHARE = 0.01
"""An overlap that saves less than this share of the fixed cost is not worth its code."""


def _timed(command: list[str], cwd: Path, env: dict[str, str]) -> float:
    started = time.monotonic()
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    elapsed = time.monotonic() - started
    if done.returncode != 0:
        raise SystemExit(f"{command[:4]} failed ({done.returncode}):\n{done.stdout}{done.stderr}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=9, help="rounds of every arm (default 9)")
    args = parser.parse_args()
    base = {k: v for k, v in os.environ.items() if k not in SWITCHES.values()}
    with tempfile.TemporaryDirectory(prefix="qualify-bench-") as scratch:
        repo = Path(scratch) / "repo"
        family = make_repo(repo, SECONDS)
        qualify = [sys.executable, "-m", "qualify", "run", "--family", "bench"]
        qualify += ["--repo", str(repo), "--mem", "2G", "--out", str(Path(scratch) / "out")]
        bare = [sys.executable, "-m", "pytest", "test_bench.py", "-q", "-p", "no:cacheprovider"]
        bare_env = dict(base, PYTHONPATH=str(ROOT), QUALIFY_OPT_SECONDS=str(SECONDS))
        arms: dict[str, tuple[list[str], Path, dict[str, str]]] = {
            "bare pytest": (bare, family, bare_env),
            "qualify": (qualify, repo, base),
        }
        for name, variable in SWITCHES.items():
            arms[f"qualify, no {name}"] = (qualify, repo, dict(base, **{variable: "1"}))
        times: dict[str, list[float]] = {name: [] for name in arms}
        names = list(arms)
        _timed(*arms["qualify"])  # warm the page cache and the bytecode
        for round_ in range(args.rounds):
            for name in names[round_ % len(names) :] + names[: round_ % len(names)]:
                times[name].append(_timed(*arms[name]))
    for name, values in times.items():
        low, mid, high = min(values), statistics.median(values), max(values)
        print(f"{name:40} {low:6.3f} / {mid:6.3f} / {high:6.3f} s")
    fixed = [q - b for q, b in zip(times["qualify"], times["bare pytest"], strict=True)]
    fixed_cost = statistics.median(fixed)
    print(f"fixed cost (qualify - bare pytest, median of pairs): {fixed_cost:.3f} s")
    for name in SWITCHES:
        pairs = [o - q for o, q in zip(times[f"qualify, no {name}"], times["qualify"], strict=True)]
        saving = statistics.median(pairs)
        share = saving / fixed_cost if fixed_cost > 0 else float("nan")
        kept = "kept" if share >= KEEP_SHARE else "under 1%: remove it"
        print(f"saving of {name:32} {saving:+.3f} s ({share:+.1%} of the fixed cost): {kept}")


if __name__ == "__main__":
    main()
