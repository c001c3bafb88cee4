"""Bounded logs from a real pipe; a monitor whose own memory does not grow with the run."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

from qualify.run.logs import BoundedLog
from qualify.run.monitor import Monitor


def test_bounded_log_keeps_head_and_tail(tmp_path: Path) -> None:
    script = "import sys\nfor i in range(200000): sys.stdout.write(f'line {i:06d}\\n')\n"
    process = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE)
    assert process.stdout is not None
    log = BoundedLog(process.stdout, tmp_path / "stdout.log", head=64 * 1024, tail=32 * 1024)
    log.start()
    process.wait()
    log.join(timeout=30)
    stats = log.stats()
    text = (tmp_path / "stdout.log").read_text()
    assert stats.bytes_total == 200000 * 12
    assert stats.truncated and stats.bytes_kept == 96 * 1024
    assert text.startswith("line 000000\n")
    assert text.endswith("line 199999\n")
    omitted = stats.bytes_total - 96 * 1024
    assert f"[qualify: {omitted} bytes omitted]" in text


def test_short_log_is_kept_whole(tmp_path: Path) -> None:
    process = subprocess.Popen([sys.executable, "-c", "print('hello')"], stdout=subprocess.PIPE)
    assert process.stdout is not None
    log = BoundedLog(process.stdout, tmp_path / "out.log")
    log.start()
    process.wait()
    log.join(timeout=30)
    assert (tmp_path / "out.log").read_text() == "hello\n"
    assert not log.stats().truncated


class CountingProbe:
    """A seam stand-in for a cgroup: usage rises and falls, one OOM kill appears."""

    def __init__(self) -> None:
        self.reads = 0
        self.peak = 0

    def usage_bytes(self) -> int:
        self.reads += 1
        usage = (self.reads % 100) * 2**20
        self.peak = max(self.peak, usage)
        return usage

    def watermark_bytes(self) -> int:
        return self.peak

    def reset_watermark(self) -> bool:
        self.peak = 0
        return True

    def oom_kills(self) -> int:
        return 1 if self.reads > 50 else 0

    def memory_breakdown(self) -> dict[str, int]:
        return {"anon": 1, "file": 2}

    def pids(self) -> list[int]:
        return []

    def pids_refused(self) -> int:
        return 3

    def limit_hits(self) -> int:
        return 0

    def close(self) -> None:
        pass


def test_monitor_memory_stays_flat_and_timeline_is_incremental(tmp_path: Path) -> None:
    events = tmp_path / "events.jsonl"
    events.write_text("")
    monitor = Monitor(
        CountingProbe(),
        events,
        tmp_path / "ack",
        tmp_path / "timeline.jsonl",
        interval_s=0.0005,
        boundary_poll_s=0.0005,
    )
    tracemalloc.start()
    monitor.start()
    # Let it take a few thousand samples, measure, then a few thousand more.
    while monitor.result().samples < 2000:
        time.sleep(0.01)
    first, _ = tracemalloc.get_traced_memory()
    while monitor.result().samples < 6000:
        time.sleep(0.01)
    second, _ = tracemalloc.get_traced_memory()
    result = monitor.stop()
    tracemalloc.stop()
    assert second - first < 256 * 1024, (first, second)
    lines = (tmp_path / "timeline.jsonl").read_text().splitlines()
    assert len(lines) == result.samples >= 6000
    sample = json.loads(lines[10])
    assert {"t", "mono", "usage", "watermark", "anon", "file", "oom_kill", "phases"} <= set(sample)
    assert result.oom_kills == 1
    assert result.peak_bytes == 99 * 2**20
    assert (result.pids_refused, result.limit_hits) == (3, 0)  # read once, at the end


def test_monitor_charges_segments_to_open_phases(tmp_path: Path) -> None:
    events = tmp_path / "events.jsonl"
    probe = CountingProbe()
    monitor = Monitor(
        probe,
        events,
        tmp_path / "ack",
        tmp_path / "timeline.jsonl",
        interval_s=10,
        boundary_poll_s=0.001,
    )
    monitor.start()
    with events.open("a") as handle:
        for record in (
            {"event": "phase_start", "phase": "a", "pid": 1, "mono": 1.0, "t": 1.0, "sync": "1:1"},
            {"event": "phase_end", "phase": "a", "pid": 1, "mono": 2.0, "t": 2.0, "sync": "1:2"},
        ):
            handle.write(json.dumps(record) + "\n")
    ack = tmp_path / "ack"
    deadline = time.monotonic() + 10
    while not (ack.exists() and "1:2" in ack.read_text()):
        assert time.monotonic() < deadline
        time.sleep(0.005)
    result = monitor.stop()
    assert [w.name for w in result.phases] == ["a"]
    assert result.phases[0].end_mono == 2.0
    assert (tmp_path / "ack").read_text().split() == ["1:1", "1:2"]
