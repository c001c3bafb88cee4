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

import sys
from pathlib import Path

from bench_tiny import bench_family

FAMILY = Path(__file__).resolve().parent.parent / "families" / "phi4"


def main(argv: list[str] | None = None) -> int:
    """Run the E2E once at size ``ci`` (or as ``--set`` says) and print its phases."""
    return bench_family(FAMILY, argv, {"size": "ci"}, __doc__.splitlines()[0])


if __name__ == "__main__":
    sys.exit(main())
