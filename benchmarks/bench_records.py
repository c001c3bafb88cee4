"""What a frozen record costs to define: ``@dataclasses.dataclass(frozen=True)`` against
``qualify.records.frozen_record``, side by side in one run (nothing is asserted).

A run of qualify defines about a hundred record classes at import (audit, evidence, parity,
triage, reports); dataclasses generates each method's source and compiles it, class by class.
This defines the same 100 classes of 8 fields, like the audit's, in a fresh interpreter per
round (each way first in turn), and prints the CPU time per class of each way and their ratio;
then what a comparison and a hash of a three-field record take each way (the price of sharing).

    .venv/bin/python benchmarks/bench_records.py [--rounds 20] [--classes 100]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

DEFINE = """
import dataclasses, sys, time
sys.path.insert(0, {root!r})
from qualify.records import frozen_record
way = {way!r}
decorate = dataclasses.dataclass(frozen=True) if way == "dataclass" else frozen_record
source = "\\n".join(
    f"class R{{i}}:\\n" + "".join(f"    f{{j}}: int | None = None\\n" for j in range(8))
    for i in range({classes})
)
namespace = {{}}
exec(compile(source, "records", "exec"), namespace)
started = time.process_time()
for i in range({classes}):
    decorate(namespace[f"R{{i}}"])
print(time.process_time() - started)
"""


def one(way: str, classes: int) -> float:
    code = DEFINE.format(root=str(ROOT), way=way, classes=classes)
    out = subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True
    ).stdout
    return float(out) * 1000 / classes


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--classes", type=int, default=100)
    args = parser.parse_args()
    times: dict[str, list[float]] = {"dataclass": [], "frozen_record": []}
    for number in range(args.rounds):
        ways = list(times) if number % 2 == 0 else list(reversed(times))
        for way in ways:
            times[way].append(one(way, args.classes))
    for way, values in times.items():
        print(
            f"{way:>14}: {statistics.median(values):.3f} ms a class (median of {args.rounds}; "
            f"min {min(values):.3f}, max {max(values):.3f})"
        )
    ratios = [a / b for a, b in zip(times["frozen_record"], times["dataclass"], strict=True)]
    print(
        f"frozen_record / dataclass: median {statistics.median(ratios):.2f} "
        f"(min {min(ratios):.2f}, max {max(ratios):.2f}); for {args.classes} classes "
        f"{statistics.median(times['dataclass']) * args.classes:.1f} ms -> "
        f"{statistics.median(times['frozen_record']) * args.classes:.1f} ms"
    )
    per_call(args.rounds)
    init_tiers(args.rounds)
    return 0


def per_call(rounds: int) -> None:
    import dataclasses
    import functools
    import timeit

    sys.path.insert(0, str(ROOT))
    from qualify.records import frozen_record

    made = {}
    for way, decorate in (("dataclass", dataclasses.dataclass(frozen=True)),
                          ("frozen_record", frozen_record)):  # fmt: skip
        cls = decorate(type("Token", (), {"__annotations__": {"a": int, "b": float, "c": str}}))
        made[way] = (cls(1, 0.5, "x"), cls(1, 0.5, "x"))
    for what, call in (("==", lambda x, y: x == y), ("hash", lambda x, _: hash(x))):
        cost = {}
        for way, (x, y) in made.items():
            once = functools.partial(call, x, y)
            runs = [timeit.timeit(once, number=100_000) for _ in range(rounds)]
            cost[way] = statistics.median(runs) / 100_000 * 1e9
        print(f"{what:>4} of a 3-field record: dataclass {cost['dataclass']:.0f} ns, "
              f"frozen_record {cost['frozen_record']:.0f} ns")  # fmt: skip


def init_tiers(rounds: int) -> None:
    """What ``_COMPILE_AFTER`` weighs: compiling one ``__init__`` (a shape of 8 fields, names
    of its own) against an instance made by the generic ``__init__`` and by the compiled one
    (3 arguments given, 5 defaults); the break-even is the first over the difference."""
    import timeit

    sys.path.insert(0, str(ROOT))
    from qualify import records

    def shape(number: int) -> type:
        names = {f"f{j}_{number}": int | None for j in range(8)}
        made = type(f"R{number}", (), {"__annotations__": names, **dict.fromkeys(names)})
        return records.frozen_record(made)

    compile_us, generic_us, compiled_us = [], [], []
    for number in range(rounds):
        fresh = [shape(number * 100 + i) for i in range(50)]
        started = timeit.default_timer()
        for cls in fresh:
            records._init(cls, cls.__record_fields__, True)  # type: ignore[attr-defined]
        compile_us.append((timeit.default_timer() - started) / 50 * 1e6)
        cls = shape(10_000 + number)
        generic = cls.__dict__["__init__"]
        generic.made = -(10**9)  # (kept generic for the timing)
        generic_us.append(timeit.timeit(lambda cls=cls: cls(1, 2, 3), number=20_000) / 20e3 * 1e6)
        cls.__init__  # noqa: B018 - read off the class: compiled
        compiled_us.append(timeit.timeit(lambda cls=cls: cls(1, 2, 3), number=20_000) / 20e3 * 1e6)
    cost, generic_cost, compiled_cost = (
        statistics.median(values) for values in (compile_us, generic_us, compiled_us)
    )
    print(
        f"a record's __init__ ({rounds} rounds, medians): compiling one {cost:.1f} us; an "
        f"instance by the generic one {generic_cost:.2f} us, by the compiled one "
        f"{compiled_cost:.2f} us; break-even {cost / (generic_cost - compiled_cost):.0f} "
        f"instances (_COMPILE_AFTER = {records._COMPILE_AFTER})"
    )


if __name__ == "__main__":
    sys.exit(main())
