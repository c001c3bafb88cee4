"""Phase times and memory of the tiny family's E2E, measured at its phase boundaries.

Runs the family's own E2E command in a child process with the harness enabled and answers
every phase boundary as qualify's host does: it reads the child's RSS and RSS high-water mark
from /proc, resets the mark (``clear_refs`` 5) and acknowledges, so the peak reported for a
phase is the peak inside that phase. Between boundaries it samples the child's anonymous RSS
every few milliseconds: unlike file pages (a mapped checkpoint), anonymous memory cannot be
reclaimed under a cgroup cap, so its peak is what decides an OOM kill. Prints per phase: wall
time, RSS at its start and its peak, anonymous RSS at its start and its peak, then the plan
sizes and how many parity cases matched exactly. Not a test.

    .venv/bin/python benchmarks/bench_tiny.py
    .venv/bin/python benchmarks/bench_tiny.py --set size=small --set retain_plans=true
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
FAMILY = ROOT / "families" / "tiny"
MIB = 1 << 20


@dataclass(frozen=True)
class Boundary:
    """One phase start or end as the child reported it, with its memory readings."""

    event: str
    phase: str
    mono: float
    rss_bytes: int
    hwm_bytes: int
    anon_bytes: int
    anon_peak_bytes: int
    """Highest anonymous RSS sampled since the previous boundary."""


def main(argv: list[str] | None = None) -> int:
    """Run the E2E once with ``--set`` options and print its phases."""
    return bench_family(FAMILY, argv, {}, __doc__.splitlines()[0])


def bench_family(
    family: Path, argv: list[str] | None, defaults: dict[str, str], description: str
) -> int:
    """Run ``family``'s E2E once with ``defaults`` and the ``--set`` options of ``argv``, and
    print its phases, its metrics and its parity."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE")
    args = parser.parse_args(argv)
    options = {**defaults, **dict(_pairs(args.set))}
    with tempfile.TemporaryDirectory(prefix=f"bench-{family.name}-") as run_dir:
        started = time.monotonic()
        boundaries, returncode = run_e2e(Path(run_dir), options=options, family=family)
        wall = time.monotonic() - started
        if "size" in options:
            print(f"size {options['size']}")
        durations = print_phases(boundaries)
        print_metrics(Path(run_dir) / "events.jsonl")
        print_parity(Path(run_dir) / "parity.jsonl")
    print(f"E2E wall time {wall:.1f} s, exit code {returncode}")
    print_parity_passes(durations, wall)
    return returncode


PARITY_PASSES = ("reference:noise", "teacher")
"""The phases that only parity's noise floor and forced continuation need (docs/parity.md)."""


def print_parity_passes(durations: dict[str, float], wall: float) -> None:
    """What the noise floor and the teacher-forced continuation cost, against the E2E."""
    spent = [durations.get(name, 0.0) for name in PARITY_PASSES]
    shown = ", ".join(
        f"{name} {seconds:.2f} s" for name, seconds in zip(PARITY_PASSES, spent, strict=True)
    )
    print(f"parity passes: {shown}: {sum(spent) / wall:.1%} of the E2E wall time")


def run_e2e(
    run_dir: Path, *, options: dict[str, str], family: Path = FAMILY
) -> tuple[list[Boundary], int]:
    """Start the family's E2E command and serve its boundaries until it exits."""
    e2e = tomllib.loads((family / "family.toml").read_text())["e2e"]
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
    child = subprocess.Popen(command, cwd=family / e2e.get("workdir", "."), env=env)
    boundaries = serve_boundaries(run_dir, child)
    return boundaries, child.wait()


def serve_boundaries(run_dir: Path, child: subprocess.Popen[bytes]) -> list[Boundary]:
    """Tail the event log; measure, reset and acknowledge each boundary as it arrives."""
    boundaries: list[Boundary] = []
    anon_peak = 0
    with (run_dir / "events.jsonl").open(encoding="utf-8") as events:
        pending = ""
        while True:
            anon_peak = max(anon_peak, _status(child.pid).get("RssAnon", 0))
            chunk = events.readline()
            if not chunk:
                if child.poll() is not None:
                    return boundaries
                time.sleep(0.002)
                continue
            pending += chunk
            if not pending.endswith("\n"):
                continue
            record, pending = json.loads(pending), ""
            if "sync" in record:
                boundaries.append(_measure(record, anon_peak))
                anon_peak = 0
                with (run_dir / "ack").open("a", encoding="utf-8") as ack:
                    ack.write(record["sync"] + "\n")


def _measure(record: dict[str, Any], anon_peak: int) -> Boundary:
    status = _status(record["pid"])
    # Resetting the high-water mark makes the next reading the peak since this boundary.
    (Path("/proc") / str(record["pid"]) / "clear_refs").write_text("5")
    return Boundary(
        event=record["event"],
        phase=record.get("phase", ""),
        mono=record["mono"],
        rss_bytes=status["VmRSS"],
        hwm_bytes=status["VmHWM"],
        anon_bytes=status["RssAnon"],
        anon_peak_bytes=max(anon_peak, status["RssAnon"]),
    )


def _status(pid: int) -> dict[str, int]:
    """The kB fields of /proc/<pid>/status in bytes (empty once the process is gone)."""
    try:
        text = (Path("/proc") / str(pid) / "status").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return {}
    fields = {}
    for line in text.splitlines():
        name, _, value = line.partition(":")
        if value.strip().endswith("kB"):
            fields[name] = int(value.split()[0]) * 1024
    return fields


def print_phases(boundaries: list[Boundary]) -> dict[str, float]:
    """One line per phase: duration, then RSS and anonymous RSS at its start and their peaks;
    returns each phase's summed duration."""
    durations: dict[str, float] = {}
    print(f"{'phase':<16}{'seconds':>9}{'RSS':>7}{'peak':>7}{'anon':>7}{'peak':>7}  (MiB)")
    for index, start in enumerate(boundaries):
        if start.event != "phase_start":
            continue
        inside = boundaries[index + 1 :]
        end = next(b for b in inside if b.event == "phase_end" and b.phase == start.phase)
        window = inside[: inside.index(end) + 1]
        peak = max(b.hwm_bytes for b in window)
        anon = max(b.anon_peak_bytes for b in window)
        print(
            f"{start.phase:<16}{end.mono - start.mono:>9.2f}{start.rss_bytes / MIB:>7.0f}"
            f"{peak / MIB:>7.0f}{start.anon_bytes / MIB:>7.0f}{anon / MIB:>7.0f}"
        )
        durations[start.phase] = durations.get(start.phase, 0.0) + end.mono - start.mono
    return durations


def print_metrics(events_path: Path) -> None:
    """The E2E's own metrics (plan sizes, tokens per second)."""
    for line in events_path.read_text().splitlines():
        record = json.loads(line)
        if record.get("event") == "metric":
            print(f"{record['name']:<26}{record['value']:>16.1f} {record['unit']}")


def print_parity(parity_path: Path) -> None:
    """How many cases the native side reproduced exactly."""
    if not parity_path.exists():
        print("no parity cases recorded")
        return
    sides: dict[str, dict[str, list[int]]] = {"native": {}, "reference": {}}
    for line in parity_path.read_text().splitlines():
        case = json.loads(line)
        if case.get("event") == "case":  # not the teacher-forced views
            sides[case["side"]][case["case_id"]] = case["token_ids"]
    exact = sum(ids == sides["reference"].get(cid) for cid, ids in sides["native"].items())
    print(f"parity: {exact} of {len(sides['reference'])} cases exact")


def _pairs(assignments: list[str]) -> list[tuple[str, str]]:
    pairs = []
    for assignment in assignments:
        name, sep, value = assignment.partition("=")
        if not sep or not name:
            raise SystemExit(f"--set {assignment!r}: expected NAME=VALUE")
        pairs.append((name, value))
    return pairs


if __name__ == "__main__":
    sys.exit(main())
