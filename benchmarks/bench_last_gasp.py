"""The last-gasp capture's cost: nothing while memory stays low, a bounded capture near the cap.

Three figures, each measured side by side in one run (nothing is asserted):

1. **start-up**: what registering the stack signal adds to every Python process of an E2E
   (the hook's step, timed in a fresh interpreter, as a share of ``python -c pass``'s CPU);
2. **capture**: how long a capture takes with 1, 4 and 16 Python processes waiting in a
   function (``LastGasp.observe`` at the threshold: the processes read, each signalled, its
   dump waited for and parsed), against the 100 ms budget;
3. **spike**: in a real cgroup v1 memory cap of 200 MiB, a process allocating 400 MiB in one
   ``bytearray``: in how many of the rounds the kernel threshold's capture got its stack before
   the OOM kill (slow climbs always do: the next step's allocation is the line).

While memory stays low nothing runs: the kernel notifies the thresholds on an eventfd a thread
blocks on, and the monitor's samples compare one number.

    .venv/bin/python benchmarks/bench_last_gasp.py [--rounds 20]

Needs root and a writable cgroup v1 memory controller for the third figure.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from harness import contract  # noqa: E402
from qualify.run.last_gasp import MAX_STACKS, LastGasp  # noqa: E402

SITE = ROOT / "harness" / "_site"
WAITING = "import time\ndef wait_here():\n    time.sleep(60)\nwait_here()\n"
STEP = (
    "import os, time\n"
    "from harness import _startup\n"
    "t = time.process_time_ns(); _startup._dump_stacks_on_signal(); "
    "print(time.process_time_ns() - t)\n"
)


def _env(events: Path) -> dict[str, str]:
    env = dict(os.environ, PYTHONPATH=f"{SITE}{os.pathsep}{ROOT}")
    env[contract.ENV_EVENTS] = str(events)
    return env


def _cpu_ms(argv: list[str], env: dict[str, str]) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(argv, env=env, check=True, stdout=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000


def startup(rounds: int, scratch: Path) -> None:
    events = scratch / contract.EVENTS
    events.touch()
    bare = [_cpu_ms([sys.executable, "-c", "pass"], dict(os.environ)) for _ in range(rounds)]
    step_env = dict(os.environ, PYTHONPATH=str(ROOT), **{contract.ENV_EVENTS: str(events)})
    steps = []
    for _ in range(rounds):
        out = subprocess.run(
            [sys.executable, "-c", STEP], env=step_env, check=True, capture_output=True, text=True
        )
        steps.append(int(out.stdout.strip()) / 1e6)
    base, step = statistics.median(bare), statistics.median(steps)
    print(
        f"start-up: python -c pass {base:.2f} ms CPU (median of {rounds}); the stack signal's "
        f"registration {step:.3f} ms = {step / base:.4f}x of it"
    )


def _waiting(count: int, events: Path) -> list[subprocess.Popen[bytes]]:
    children = [
        subprocess.Popen([sys.executable, "-c", WAITING], env=_env(events)) for _ in range(count)
    ]
    for child in children:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            status = Path(f"/proc/{child.pid}/status").read_text()
            mask = next(x for x in status.splitlines() if x.startswith("SigCgt")).split()[1]
            if int(mask, 16) >> (contract.STACK_SIGNAL - 1) & 1:
                break
            time.sleep(0.01)
    return children


def capture(rounds: int, scratch: Path) -> None:
    for count in (1, 4, 16):
        run_dir = scratch / f"capture-{count}"
        run_dir.mkdir()
        events = run_dir / contract.EVENTS
        events.touch()
        children = _waiting(count, events)
        times, dumped = [], 0
        try:
            for _ in range(rounds):
                pids = [c.pid for c in children]
                gasp = LastGasp(run_dir, lambda pids=pids: pids, limit_bytes=100)
                gasp.observe(99)
                (record,) = gasp.close()
                times.append(record.elapsed_ms)
                dumped += sum(1 for p in record.processes if p.stack)
        finally:
            for child in children:
                child.kill()
                child.wait()
        asked = min(count, MAX_STACKS)
        print(
            f"capture of {count:2d} Python processes (stacks of the {asked} largest): "
            f"{min(times):.1f} / "
            f"{statistics.median(times):.1f} / {max(times):.1f} ms (min / median / max of "
            f"{rounds}), {dumped}/{rounds * asked} stacks; budget 100 ms: "
            f"{statistics.median(times) / 100:.3f}x"
        )


SPIKE = "import time\ndef load_weights():\n    return bytearray(400 << 20)\nload_weights()\n"


def spike(rounds: int, scratch: Path) -> None:
    line = next(
        (x for x in Path("/proc/self/cgroup").read_text().splitlines() if ":memory:" in x), None
    )
    if line is None or not Path("/sys/fs/cgroup/memory").is_dir():
        print("spike: skipped (no cgroup v1 memory controller)")
        return
    parent = Path("/sys/fs/cgroup/memory" + line.split(":", 2)[2].strip())
    caught = 0
    for index in range(rounds):
        cgroup = parent / f"bench-last-gasp-{os.getpid()}-{index}"
        cgroup.mkdir()
        try:
            for name in ("memory.limit_in_bytes", "memory.memsw.limit_in_bytes"):
                (cgroup / name).write_text(str(200 << 20))
            run_dir = scratch / f"spike-{index}"
            run_dir.mkdir()
            events = run_dir / contract.EVENTS
            events.touch()
            procs = cgroup / "cgroup.procs"

            def members(procs: Path = procs) -> list[int]:
                return [int(p) for p in procs.read_text().split()]

            def enter(procs: Path = procs) -> None:
                procs.write_text(str(os.getpid()))

            gasp = LastGasp(run_dir, members, 200 << 20, cgroup)
            child = subprocess.Popen(
                [sys.executable, "-c", SPIKE],
                env=_env(events),
                preexec_fn=enter,  # noqa: PLW1509
            )
            child.wait()
            records = gasp.close()
            stacks = [f.function for r in records for p in r.processes for f in p.stack]
            caught += "load_weights" in stacks
        finally:
            time.sleep(0.05)
            cgroup.rmdir()
    print(f"spike to twice the cap in one allocation: the stack caught in {caught}/{rounds} runs")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        startup(args.rounds, Path(scratch))
        capture(args.rounds, Path(scratch))
        spike(args.rounds, Path(scratch))


if __name__ == "__main__":
    main()
