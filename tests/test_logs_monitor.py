"""Bounded logs from a real pipe; a monitor whose own memory does not grow with the run."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path
from typing import Any

import pytest

from harness import contract
from qualify import cuts
from qualify.run.logs import BoundedLog
from qualify.run.monitor import Monitor
from qualify.run.processes import ProcessReader
from qualify.run.tail import JsonlTail
from qualify.run.timeline import TimelineSample


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
    # Cut at line ends: 65,536 and 32,768 are not multiples of 12; the partial lines go too.
    assert stats.truncated and stats.bytes_kept == 65532 + 32760
    assert text.startswith("line 000000\n")
    assert text.endswith("line 199999\n")
    omitted = stats.bytes_total - stats.bytes_kept
    head, marker, tail = text.partition(f"\n[qualify: {omitted} bytes omitted]\n")
    assert marker
    assert all(re.fullmatch(r"line \d{6}", line) for line in (head + tail).splitlines())


@pytest.mark.parametrize("separator", [b"\n", b" ", b""])
def test_a_cut_never_leaves_a_word_in_pieces(tmp_path: Path, separator: bytes) -> None:
    """Values of 26 characters, written end to end (with line ends, spaces or nothing between
    them): the head's end and the tail's start are moved to a boundary, or by 256 bytes where
    there is none, so no value is kept in part."""
    word = b"Qx7" + b"k" * 22 + b"Z"
    script = f"import sys\nsys.stdout.buffer.write({word + separator!r} * 20000)\n"
    process = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE)
    assert process.stdout is not None
    log = BoundedLog(process.stdout, tmp_path / "stdout.log", head=4000, tail=3000)
    log.start()
    process.wait()
    log.join(timeout=30)
    stats = log.stats()
    head, marker, tail = (tmp_path / "stdout.log").read_bytes().partition(b"\n[qualify: ")
    tail = tail.partition(b" bytes omitted]\n")[2]
    assert marker and tail
    assert len(head) + len(tail) == stats.bytes_kept
    if separator:
        assert head.endswith(separator) and tail.startswith(word)
        assert set(head.split(separator)[:-1]) == {word}
        assert set(tail.split(separator)[:-1]) == {word}
    else:  # no boundary: 256 bytes more left out on either side
        assert len(head) == 4000 - 256 and len(tail) == 3000 - 256


def test_short_log_is_kept_whole(tmp_path: Path) -> None:
    process = subprocess.Popen([sys.executable, "-c", "print('hello')"], stdout=subprocess.PIPE)
    assert process.stdout is not None
    log = BoundedLog(process.stdout, tmp_path / "out.log")
    log.start()
    process.wait()
    log.join(timeout=30)
    assert (tmp_path / "out.log").read_text() == "hello\n"
    assert not log.stats().truncated


def test_progress_written_a_character_at_a_time_is_read_in_batches(tmp_path: Path) -> None:
    """pytest's progress under ``PYTHONUNBUFFERED``: one write of one character per test. The
    pump reads what gathered, not each write; the log holds every character in order."""
    script = (
        "import os, time\n"
        "for i in range(2000):\n"
        "    os.write(1, b'.')\n"
        "    time.sleep(0.0002)\n"
        "os.write(1, b'\\n')\n"
    )
    process = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE)
    assert process.stdout is not None
    log = BoundedLog(process.stdout, tmp_path / "out.log")
    log.start()
    process.wait()
    log.join(timeout=30)
    assert (tmp_path / "out.log").read_bytes() == b"." * 2000 + b"\n"
    assert log.reads < 200, log.reads  # 2,000 writes over at least 0.4 s: about 20 reads


def test_killed_writers_end_the_pause_at_once(tmp_path: Path) -> None:
    """The pause between short reads never delays the end: once the writers are killed the
    pump drains what is left and stops, without waiting for the end-of-file."""
    read_end, write_end = os.pipe()
    os.write(write_end, b"last words\n")
    log = BoundedLog(os.fdopen(read_end, "rb"), tmp_path / "out.log")
    log.start()
    while log.reads == 0:
        time.sleep(0.001)
    os.write(write_end, b"in flight\n")
    log.writers_killed()
    log.join(timeout=5)
    assert not log.is_alive()  # the write end is still open: no end-of-file ever came
    assert (tmp_path / "out.log").read_bytes() == b"last words\nin flight\n"
    os.close(write_end)


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


@pytest.mark.parametrize(
    "sample",
    [
        TimelineSample(t=1796055357.79916, mono=None),
        TimelineSample(
            t=1796055357.799166,
            mono=7039.66613729,
            usage=123 << 20,
            watermark=0,
            anon=5,
            file=None,
            oom_kill=2,
            phases=("build", 'w\u00e9ird "phase"'),
            test='t.py::test_x["\\n\u2603"]',
            procs=((12, "python3", 4096), (13, 'sh "x"', 0)),
            gpu={"available": True, "devices": [[0, 1, 2, 3]]},
        ),
    ],
)
def test_timeline_line_is_plain_json(sample: TimelineSample) -> None:
    """The hand-built line is byte for byte what the JSON encoder writes, and reads back."""
    record: dict[str, Any] = {
        "t": round(sample.t, 4),
        "mono": None if sample.mono is None else round(sample.mono, 4),
        "usage": sample.usage,
        "watermark": sample.watermark,
        "anon": sample.anon,
        "file": sample.file,
        "oom_kill": sample.oom_kill,
        "phases": list(sample.phases),
        "test": sample.test,
    }
    if sample.procs is not None:
        record["procs"] = [list(process) for process in sample.procs]
    if sample.gpu is not None:
        record["gpu"] = sample.gpu
    assert sample.to_line() == json.dumps(record, separators=(",", ":")) + "\n"
    assert TimelineSample.from_record(json.loads(sample.to_line())) == dataclasses.replace(
        sample, t=round(sample.t, 4), mono=None if sample.mono is None else round(sample.mono, 4)
    )


def test_monitor_decodes_only_what_it_needs_of_a_busy_events_file(tmp_path: Path) -> None:
    """Thousands of test lines between two boundaries: the boundaries are acknowledged, and the
    timeline names the test running at the end (the last start without an end)."""
    events = tmp_path / "events.jsonl"
    lines = []
    for index in range(3000):
        nodeid = f"t.py::test_{index}"
        lines += [
            contract.encode_test_start(when, nodeid, (1.0, 1.0, 7), None)
            for when in ("setup", "call", "teardown")
        ]
        end = {"event": "test_phase", "state": "end", "when": "teardown", "nodeid": nodeid}
        lines.append(contract.encode_line({**end, "outcome": "passed", "duration": 0.1}))
        if index == 1500:
            boundary = {"event": "phase_start", "phase": "p", "pid": 7, "mono": 1.0, "t": 1.0}
            lines.append(contract.encode_line({**boundary, "sync": "7:1"}))
    lines.append(contract.encode_test_start("call", "t.py::test_last", (1.0, 1.0, 7), None))
    events.write_bytes(b"".join(lines) + b'{"event":"phase_end","phase":"p","pi')  # cut short
    monitor = Monitor(
        CountingProbe(), events, tmp_path / "ack", tmp_path / "timeline.jsonl", interval_s=10
    )
    monitor.start()
    deadline = time.monotonic() + 10
    while not ((tmp_path / "ack").exists() and "7:1" in (tmp_path / "ack").read_text()):
        assert time.monotonic() < deadline
        time.sleep(0.005)
    result = monitor.stop()
    assert [(w.name, w.end_mono) for w in result.phases] == [("p", result.phases[0].end_mono)]
    assert result.phases[0].error == "unfinished"  # its end was never written whole
    last = json.loads((tmp_path / "timeline.jsonl").read_text().splitlines()[-1])
    assert last["test"] == "t.py::test_last" and last["phases"] == ["p"]


def test_tail_returns_whole_lines_however_much_was_appended(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    tail = JsonlTail(path)
    assert tail.read() == b""  # not there yet
    big = b"".join(b'{"n":%d}\n' % index for index in range(300_000))  # over 1 MiB
    path.write_bytes(big + b'{"n":')
    assert tail.read() == big
    with path.open("ab") as handle:
        handle.write(b"1}\n")
    assert tail.poll() == [{"n": 1}]
    assert tail.read() == b""
    tail.close()


def test_process_reader_stays_within_its_share_of_a_core() -> None:
    """A round that costs 20 ms of CPU (a storm) is followed by a pause 1/share times as long."""

    def costly() -> list[int]:
        started = time.thread_time()
        while time.thread_time() - started < 0.02:
            pass
        return []

    reader = ProcessReader(costly, interval_s=0.01, cpu_share=0.02)
    reader.start()
    deadline = time.monotonic() + 60
    while reader.cpu_s < 0.02:  # the first round, however loaded the machine
        assert time.monotonic() < deadline
        time.sleep(0.01)
    time.sleep(0.5)
    reader.stop()
    # 20 ms of CPU, then a pause of 1 s (20 ms / 2%), not of 10 ms: no second round yet.
    assert reader.cpu_s < 0.03


class SlowProbe(CountingProbe):
    """Every usage read costs 5 ms of CPU (cgroup files read during a fork storm)."""

    def usage_bytes(self) -> int:
        started = time.thread_time()
        while time.thread_time() - started < 0.005:
            pass
        return super().usage_bytes()


@pytest.mark.parametrize("share", [None, 1.0])
def test_the_sampler_stays_within_its_share_of_a_core(tmp_path: Path, share: float | None) -> None:
    """At the default interval, samples that cost 5 ms of CPU each (10% of a core at 20 a
    second) come less often: over 3 s the sampler stays near its 0.55%; allowed a whole core,
    it takes them all."""
    events = tmp_path / "events.jsonl"
    events.write_text("")
    monitor = Monitor(
        SlowProbe(), events, tmp_path / "ack", tmp_path / "timeline.jsonl", cpu_share=share
    )
    started = time.monotonic()
    monitor.start()
    time.sleep(3)
    result = monitor.stop()
    wall = time.monotonic() - started
    usage_reads = result.samples  # one usage read a sample (and one more at the end)
    if share is None:
        # 0.05 s start, then a pause of 5 ms / 0.55% = 0.91 s after each sample (it follows
        # the sample one wake-up late): 6 at most, and the one at the end.
        assert usage_reads <= 7, usage_reads
        assert result.cpu_seconds - monitor.processes.cpu_s < 0.015 * wall
    else:
        assert usage_reads >= 30, usage_reads


@pytest.mark.parametrize("separator", ["\n", " ", "\t", "\r", ""])
def test_a_quote_of_a_text_never_leaves_a_word_in_pieces(separator: str) -> None:
    """qualify's own quotes of a log (the end of stderr a testcase quotes, a message it
    shortens) cut like the log itself: at a boundary, or 256 characters further."""
    word = "Qx7" + "k" * 22 + "Z"
    text = (word + separator) * 400
    for limit in (4000, 3001, 500, 300):
        tail, head = cuts.tail(text, limit), cuts.head(text, limit)
        assert len(tail) <= limit and len(head) <= limit
        if separator:
            assert tail.startswith(word) and head.endswith(separator)
            assert set(tail.split(separator)[:-1]) == {word}
            assert set(head.split(separator)[:-1]) == {word}
        else:
            assert len(tail) == limit - 256 and len(head) == limit - 256
