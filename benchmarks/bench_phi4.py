"""Phase times and memory of the phi4 family's E2E at size ``ci``, measured at its phase
boundaries.

The phi4 E2E (``families/phi4``: checkpoint, the vision/prefill/decode plan builds, native,
reference, tokenizer export) runs in a child process with the harness enabled; every phase
boundary is answered the way qualify's host does, with the measuring of
``benchmarks/bench_tiny.py`` (RSS and its high-water mark from /proc, reset per phase; the
anonymous RSS sampled in between, the memory a cgroup cap cannot reclaim). Prints per phase:
wall time, RSS at its start and its peak, anonymous RSS at its start and its peak; then the plan
sizes and how many parity cases matched exactly. Not a test. The checkpoint is created first if
it is not cached (its phase then includes the fit).

    .venv/bin/python benchmarks/bench_phi4.py
    .venv/bin/python benchmarks/bench_phi4.py --set retain_plans=true
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path

from bench_tiny import Boundary, _pairs, print_metrics, print_parity, print_phases, serve_boundaries

ROOT = Path(__file__).resolve().parent.parent
FAMILY = ROOT / "families" / "phi4"


def main(argv: list[str] | None = None) -> int:
    """Run the E2E once at size ``ci`` (or as ``--set`` says) and print its phases."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE")
    args = parser.parse_args(argv)
    options = {"size": "ci", **dict(_pairs(args.set))}
    with tempfile.TemporaryDirectory(prefix="bench-phi4-") as run_dir:
        started = time.monotonic()
        boundaries, returncode = run_e2e(Path(run_dir), options=options)
        wall = time.monotonic() - started
        print(f"size {options['size']}")
        print_phases(boundaries)
        print_metrics(Path(run_dir) / "events.jsonl")
        print_parity(Path(run_dir) / "parity.jsonl")
    print(f"E2E wall time {wall:.1f} s, exit code {returncode}")
    return returncode


def run_e2e(run_dir: Path, *, options: dict[str, str]) -> tuple[list[Boundary], int]:
    """Start the family's own E2E command and serve its boundaries until it exits."""
    e2e = tomllib.loads((FAMILY / "family.toml").read_text())["e2e"]
    command = [sys.executable if arg == "python" else arg for arg in e2e["command"]]
    env = dict(os.environ, **e2e.get("env", {}))
    env.update({f"QUALIFY_OPT_{name.upper()}": value for name, value in options.items()})
    env.update(
        QUALIFY_RUN_DIR=str(run_dir),
        QUALIFY_EVENTS=str(run_dir / "events.jsonl"),
        QUALIFY_PARITY=str(run_dir / "parity.jsonl"),
        QUALIFY_PHASE_ACK=str(run_dir / "ack"),
        PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")])),
    )
    (run_dir / "events.jsonl").touch()
    child = subprocess.Popen(command, cwd=FAMILY / e2e.get("workdir", "."), env=env)
    boundaries = serve_boundaries(run_dir, child)
    return boundaries, child.wait()


if __name__ == "__main__":
    sys.exit(main())
