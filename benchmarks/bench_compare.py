"""Benchmark ``qualify.parity.compare_files`` on a corpus the size of a large family's.

Generates parity.jsonl files in the harness's own format (compact JSON, all native records
then all reference records) in a temporary directory, then times each comparison in a fresh
child process so that its peak RSS (ru_maxrss) is its own:

    python benchmarks/bench_compare.py                 # 1,000 cases x 2,000 tokens, top-5
    python benchmarks/bench_compare.py --all-divergent # worst case: every case diverges

It also compares 100 cases against 1,000 to show that memory does not grow with cases.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import shutil
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

_POOL_STEPS = 4096
_VOCAB = 32_000


def _float32(value: float) -> float:
    # Engines hand logprobs over as float32 converted to Python floats: ~18-digit reprs.
    return float(struct.unpack("f", struct.pack("f", value))[0])


class _StepPool:
    """Pre-rendered top-k steps: a case is a random walk over them (fast to write)."""

    def __init__(self, rng: random.Random, topk: int, with_text: bool) -> None:
        self.top1: list[int] = []
        self.runner_up: list[int] = []
        self.json: list[str] = []
        for _ in range(_POOL_STEPS):
            ids = rng.sample(range(_VOCAB), topk)
            logprobs = sorted((_float32(-rng.expovariate(0.7)) for _ in ids), reverse=True)
            entries: list[list[object]] = [
                [tid, lp, f" w{tid}"] if with_text else [tid, lp]
                for tid, lp in zip(ids, logprobs, strict=True)
            ]
            self.top1.append(ids[0])
            self.runner_up.append(ids[1])
            self.json.append(json.dumps(entries, separators=(",", ":")))


def _line(case_id: str, side: str, ids: list[int], steps: list[str], eos: bool) -> str:
    texts = [f" w{tid}" for tid in ids]
    head = json.dumps(
        {
            "event": "case",
            "case_id": case_id,
            "side": side,
            "prompt": f"prompt of {case_id}",
            "token_ids": ids,
            "token_texts": texts,
            "text": "".join(texts),
        },
        separators=(",", ":"),
    )
    tail = json.dumps({"eos": eos, "t": time.time(), "mono": time.monotonic(), "pid": 4242})
    return f'{head[:-1]},"top_logprobs":[{",".join(steps)}],{tail[1:]}\n'


def _case_lines(index: int, pool: _StepPool, tokens: int, all_divergent: bool) -> tuple[str, str]:
    """(native line, reference line) of one case; a few cases diverge in known ways."""
    rng = random.Random(index)
    picks = [rng.randrange(_POOL_STEPS) for _ in range(tokens)]
    ids = [pool.top1[pick] for pick in picks]
    steps = [pool.json[pick] for pick in picks]
    native_ids, reference_ids, reference_steps = list(ids), ids, steps
    reference_eos = True
    at = tokens // 2
    if all_divergent or index % 100 == 42:  # WRONG: a token outside the reference top-k
        native_ids[at] = _VOCAB + 1
    elif index % 100 == 7:  # the reference's runner-up: a (near) tie
        native_ids[at] = pool.runner_up[picks[at]]
    elif index % 250 == 3:  # the reference stops early at EOS, native goes on
        reference_ids, reference_steps = ids[: tokens - 10], steps[: tokens - 10]
    case_id = f"case-{index:04d}"
    return (
        _line(case_id, "native", native_ids, steps, eos=True),
        _line(case_id, "reference", reference_ids, reference_steps, reference_eos),
    )


def generate(path: Path, cases: int, tokens: int, topk: int, **options: bool) -> None:
    """Write ``cases`` native records, then their reference records, to ``path``."""
    pool = _StepPool(random.Random(0), topk, options["with_text"])
    later = path.with_suffix(".reference")
    with path.open("w") as native, later.open("w") as reference:
        for native_line, reference_line in _lines(pool, cases, tokens, options["all_divergent"]):
            native.write(native_line)
            reference.write(reference_line)
    with path.open("a") as native, later.open() as reference:
        shutil.copyfileobj(reference, native)
    later.unlink()


def _lines(
    pool: _StepPool, cases: int, tokens: int, all_divergent: bool
) -> Iterator[tuple[str, str]]:
    for index in range(cases):
        yield _case_lines(index, pool, tokens, all_divergent)


def measure(path: Path) -> dict[str, object]:
    """Run in a child: time compare_files on ``path``; peak RSS before and after."""
    from qualify.parity import ParityGate, compare_files

    baseline_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    started = time.perf_counter()
    report = compare_files(path, None, ParityGate(min_exact=0))
    wall_s = time.perf_counter() - started
    return {
        "wall_s": round(wall_s, 2),
        "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "baseline_rss_mib": round(baseline_kib / 1024, 1),
        "cases": report.cases,
        "kinds": {
            "exact": report.exact,
            "tie": report.tie,
            "near_tie": report.near_tie,
            "wrong": report.wrong,
            "length_or_eos": report.length_or_eos,
        },
    }


def _measure_in_child(path: Path) -> dict[str, object]:
    output = subprocess.run(
        [sys.executable, __file__, "--measure", str(path)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    result: dict[str, object] = json.loads(output)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument("--tokens", type=int, default=2000)
    parser.add_argument("--topk", type=int, default=5)
    parser.add_argument("--topk-text", action="store_true", help="[id, logprob, text] entries")
    parser.add_argument("--all-divergent", action="store_true", help="every case WRONG")
    parser.add_argument("--measure", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.measure is not None:
        print(json.dumps(measure(args.measure)))
        return 0
    options = {"with_text": args.topk_text, "all_divergent": args.all_divergent}
    with tempfile.TemporaryDirectory(prefix="bench-compare-") as scratch:
        for cases in (args.cases, max(1, args.cases // 10)):
            path = Path(scratch) / f"parity-{cases}.jsonl"
            started = time.perf_counter()
            generate(path, cases, args.tokens, args.topk, **options)
            generated_s = time.perf_counter() - started
            result = _measure_in_child(path)
            size_mib = path.stat().st_size / 2**20
            print(
                f"{cases} cases x {args.tokens} tokens, top-{args.topk}: "
                f"file {size_mib:.0f} MiB (generated in {generated_s:.0f} s); "
                f"compare {result['wall_s']} s, peak RSS {result['peak_rss_mib']} MiB "
                f"(interpreter + imports {result['baseline_rss_mib']} MiB); {result['kinds']}"
            )
            path.unlink()
    return 0


if __name__ == "__main__":
    sys.exit(main())
