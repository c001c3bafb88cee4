"""Triage of a 1 GB console log with a CUDA OOM message near the end: time and peak RSS.

    .venv/bin/python benchmarks/bench_triage.py [--size-mb 1024] [--keep PATH]

Target (issue 5): under 10 s on the 2-core development machine, memory flat (the scan reads
8 MiB blocks; peak RSS must not grow with the log).
"""

from __future__ import annotations

import argparse
import resource
import tempfile
import time
from pathlib import Path

from qualify.triage import Sources, triage

ROOT = Path(__file__).resolve().parent.parent
OOM = ROOT / "tests/data/samples/cuda_oom/vllm-worker-rank1-gpu1-multiproc-executor-vllm-17835.txt"
FILLER = [
    b"2024-04-14T21:49:58.7397481Z    Compiling mail-server v0.7.1 (/home/runner/crates)\n",
    b"2024-04-14T21:49:59.1200000Z test_models.py::test_generate[phi4-case-017] PASSED [ 41%]\n",
    b"2024-04-14T21:49:59.5000000Z INFO 04-14 21:49:59 engine.py:267] Added request cmpl-8\n",
]


def write_log(path: Path, size_bytes: int) -> None:
    """``size_bytes`` of CI-like lines, the OOM message 1 MiB before the end."""
    block = b"".join(FILLER * 4000)
    with path.open("wb") as handle:
        written = 0
        while written < size_bytes - (1 << 20):
            handle.write(block)
            written += len(block)
        handle.write(OOM.read_bytes())
        handle.write(block[: 1 << 20])
        handle.write(b"Error: Process completed with exit code 1.\n")


def main() -> None:
    """Generate, triage, print the numbers."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--size-mb", type=int, default=1024)
    parser.add_argument("--keep", type=Path)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = args.keep or Path(tmp) / "console.log"
        write_log(path, args.size_mb << 20)
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        started = time.perf_counter()
        result = triage(Sources(logs=(path,)))
        elapsed = time.perf_counter() - started
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    size = path.stat().st_size if args.keep else args.size_mb << 20
    print(f"log: {size / (1 << 20):.0f} MiB, class {result.triage_class.value}")
    print(f"evidence: {result.decided_by[0].cite()[:100]}")
    print(f"time: {elapsed:.2f} s ({size / (1 << 20) / elapsed:.0f} MiB/s)")
    print(f"peak RSS: {peak / 1024:.1f} MiB (before the scan {before / 1024:.1f} MiB)")


if __name__ == "__main__":
    main()
