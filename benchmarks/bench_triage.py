"""Triage of a 1 GB console log with a CUDA OOM message near the end: time and peak RSS.

    .venv/bin/python benchmarks/bench_triage.py [--size-mb 1024] [--keep PATH]
        [--log plain|dense|retry|distinct]

Three logs: ``plain`` (build, test and server lines that name no memory or timeout), ``dense``
(every third line mentions memory or a timeout without reporting a failure: a vLLM server's
memory profiling, a retrying HTTP client, pytest-timeout's header; the lines a scanner cannot
drop on a cheap word test) and ``retry`` (every other line urllib3's warning of a read that
timed out and is retried: a line the scanner must read, the same message under a new
timestamp each time) and ``distinct`` (the same warning for a new URL each time, a crawler's: no
two messages alike, so each is read). All end with the same OOM message 1 MiB before the end.

Target: under 10 s on the 2-core development machine, memory flat (the scan reads
2 MiB blocks; peak RSS must not grow with the log). The machine is shared, so the CPU time of
the triage (this process and the forked scanner child) is printed next to the wall time.
"""

from __future__ import annotations

import argparse
import os
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


DENSE = [
    b"2024-04-14T21:49:59.6000000Z INFO 04-14 21:49:59 worker.py:267] Memory profiling takes "
    b"4.52 seconds; total_gpu_memory (79.14GiB) x gpu_memory_utilization (0.90) = 71.22GiB\n",
    FILLER[1],
    FILLER[0],
    b"2024-04-14T21:50:00.0100000Z DEBUG urllib3.connectionpool: Starting new HTTPS connection "
    b"(1): huggingface.co:443 (timeout=10); read timeout, retrying (Retry(total=4))\n",
    FILLER[2],
    FILLER[1],
    b"2024-04-14T21:50:00.2000000Z timeout: 300.0s; timeout method: signal; memory usage: "
    b"rss=1.21 GiB, peak=1.52 GiB, cuda max_memory_allocated=11.20 GiB\n",
    FILLER[0],
    FILLER[2],
]
RETRY = [
    b"2024-04-14T21:50:00.0100000Z WARNING:urllib3.connectionpool:Retrying (Retry(total=4, "
    b"connect=None, read=None, redirect=None, status=None)) after connection broken by "
    b"'ReadTimeoutError(\"HTTPSConnectionPool(host='huggingface.co', port=443): Read timed out. "
    b"(read timeout=10)\")': /api/models/microsoft/phi-4\n",
    FILLER[1],
]
LOGS = {"plain": FILLER, "dense": DENSE, "retry": RETRY, "distinct": RETRY}


def write_log(
    path: Path, size_bytes: int, lines: list[bytes] = FILLER, *, distinct: bool = False
) -> None:
    """``size_bytes`` of CI-like lines, the OOM message 1 MiB before the end; ``distinct``: each
    block's lines end in a path of their own."""
    block = b"".join(lines * (12000 // len(lines)))
    with path.open("wb") as handle:
        written = 0
        while written < size_bytes - (1 << 20):
            if distinct:
                block = b"".join(
                    line.replace(b"/phi-4\n", b"/page-%d\n" % (written + at))
                    for at, line in enumerate(lines * (12000 // len(lines)))
                )
            handle.write(block)
            written += len(block)
        handle.write(OOM.read_bytes())
        handle.write(block[: 1 << 20])
        handle.write(b"Error: Process completed with exit code 1.\n")


def cpu_seconds() -> tuple[float, float]:
    """User and system CPU seconds so far of this process plus its waited-for children."""
    usages = [resource.getrusage(who) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)]
    return sum(u.ru_utime for u in usages), sum(u.ru_stime for u in usages)


def main() -> None:
    """Generate, triage, print the numbers."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--size-mb", type=int, default=1024)
    parser.add_argument("--keep", type=Path)
    parser.add_argument("--log", choices=sorted(LOGS), default="plain")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = args.keep or Path(tmp) / "console.log"
        write_log(path, args.size_mb << 20, LOGS[args.log], distinct=args.log == "distinct")
        load = os.getloadavg()[0]
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        user_before, system_before = cpu_seconds()
        started = time.perf_counter()
        result = triage(Sources(logs=(path,)))
        elapsed = time.perf_counter() - started
        user, system = cpu_seconds()
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        child_peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    size = path.stat().st_size if args.keep else args.size_mb << 20
    print(f"log: {args.log}, {size / (1 << 20):.0f} MiB, class {result.triage_class.value}")
    print(f"evidence: {result.decided_by[0].cite()[:100]}")
    print(f"time: {elapsed:.2f} s ({size / (1 << 20) / elapsed:.0f} MiB/s)")
    print(f"load average before: {load:.2f} on {len(os.sched_getaffinity(0))} CPUs")
    print(f"cpu: user {user - user_before:.2f} s, system {system - system_before:.2f} s")
    print(f"peak RSS: {peak / 1024:.1f} MiB (before the scan {before / 1024:.1f} MiB)", end="")
    print(f", scanner child {child_peak / 1024:.1f} MiB" if child_peak else "")


if __name__ == "__main__":
    main()
