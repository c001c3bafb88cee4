"""Publishing a run directory that holds a real 5 GiB file and a 64 GiB sparse file: qualify's own
peak RSS and time, against reading those bytes once.

    .venv/bin/python benchmarks/bench_bounded_reads.py [--run-dir RUN_DIR] [--real-gib 5]
                                                        [--sparse-gib 64] [--keep]

The run directory is a real one: ``qualify run --family tiny --backend none`` (unless
``--run-dir`` names one). The E2E of a family may leave anything there; these two files are
what a test dumping a tensor or a core file leaves. ``qualify publish RUN_DIR --level internal``
runs as its own process; its peak RSS is its ``ru_maxrss`` (``RUSAGE_CHILDREN`` of a wrapper that
starts only it). The same files are then read once, side by side: ``cat FILES > /dev/null`` and a
Python read loop of 1 MiB blocks.

Target: qualify's peak under 256 MiB, and publishing no slower than reading the bytes once.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GIB = 1 << 30
LINE = b"2026-12-03T10:00:00.000Z worker[3] step 1234 loss 2.3456 tokens/s 81234.5 ok\n"
PEAK_OF_CHILD = (
    "import resource, subprocess, sys\n"
    "code = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL).returncode\n"
    "print(code, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024)\n"
)
READ_LOOP = (
    "import sys\n"
    "for name in sys.argv[1:]:\n"
    "    with open(name, 'rb', buffering=0) as handle:\n"
    "        while handle.read(1 << 20):\n"
    "            pass\n"
)


def make_run_dir(workdir: Path) -> Path:
    """A real run directory of the tiny family."""
    command = [sys.executable, "-m", "qualify", "run", "--family", "tiny", "--backend", "none"]
    done = subprocess.run(
        [*command, "--repo", str(ROOT)], cwd=workdir, capture_output=True, text=True, check=False
    )
    return workdir / done.stdout.strip().splitlines()[-1]


def write_files(run_dir: Path, real_gib: int, sparse_gib: int) -> list[Path]:
    """A real file of ``real_gib`` (log lines, every byte written) and a sparse one."""
    real, sparse = run_dir / "dump.log", run_dir / "core.img"
    block = LINE * ((4 << 20) // len(LINE))
    with real.open("wb") as handle:
        for _ in range(real_gib * GIB // len(block)):
            handle.write(block)
    with sparse.open("wb") as handle:
        handle.truncate(sparse_gib * GIB)
    return [real, sparse]


def timed(command: list[str]) -> tuple[float, str]:
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    return time.perf_counter() - started, done.stdout


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run-dir", type=Path)
    parser.add_argument("--real-gib", type=int, default=5)
    parser.add_argument("--sparse-gib", type=int, default=64)
    parser.add_argument("--keep", action="store_true", help="leave the two files in place")
    args = parser.parse_args()
    run_dir = args.run_dir or make_run_dir(Path.cwd())
    files = write_files(run_dir, args.real_gib, args.sparse_gib)
    try:
        publish = [sys.executable, "-m", "qualify", "publish", str(run_dir), "--level", "internal"]
        publish_s, out = timed([sys.executable, "-c", PEAK_OF_CHILD, *publish])
        code, peak_bytes = map(int, out.split())
        cat_s, _ = timed(["sh", "-c", 'cat "$@" > /dev/null', "cat", *map(str, files)])
        loop_s, _ = timed([sys.executable, "-c", READ_LOOP, *map(str, files)])
    finally:
        if not args.keep:
            for path in files:
                path.unlink()
    print(f"run directory: {run_dir}")
    print(f"files: {args.real_gib} GiB real, {args.sparse_gib} GiB sparse")
    print(f"qualify publish      exit {code}  {publish_s:8.2f} s  peak RSS {peak_bytes >> 20} MiB")
    print(f"cat > /dev/null                {cat_s:8.2f} s")
    print(f"python read loop (1 MiB)       {loop_s:8.2f} s")
    print(f"publish / cat: {publish_s / cat_s:.3f}   publish / read loop: {publish_s / loop_s:.3f}")
    print(f"peak RSS / 256 MiB target: {peak_bytes / (256 << 20):.2f}")
    return 0 if code == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
