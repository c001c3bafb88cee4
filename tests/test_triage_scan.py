"""The streaming scanner finds exactly the lines a plain line-by-line scan finds.

The reference below is the definition: a line (split on b"\\n", CR kept) is a candidate when
its ASCII-lowercased bytes hold one of ``NEEDLES`` or match one of ``CLAUSES``; the scanner
gives it whole when it is at most MAX_LINE_BYTES long, else in windows that together hold every
needle of the line. Checked
on every real sample and artifact and on generated logs built to hit the scanner's edges: block
boundaries, both search paths (rare-letter anchors, regex passes over the lowered block), an
anchor budget running out mid-block, CRLF, long lines, no final newline, binary junk, UTF-16;
and the two-process scan gives the same result as one process. Every line a parser recognises
holds a needle (else the scanner would never show it to the parser).
"""

from __future__ import annotations

import os
import random
import re
from pathlib import Path

import pytest

from qualify.evidence import scan
from qualify.evidence.lines import parse_line
from qualify.evidence.scan import CLAUSES, MAX_LINE_BYTES, MAX_PER_KIND, NEEDLES, iter_candidates
from tests.conftest import SAMPLES

TRIAGE = SAMPLES.parent / "triage"
SAMPLE_FILES = sorted(
    p for d in (SAMPLES, TRIAGE) for p in d.rglob("*") if p.is_file() and p.suffix != ".md"
)
CUDA_SAMPLE = SAMPLES / "cuda_oom/vllm-worker-rank1-gpu1-multiproc-executor-vllm-17835.txt"
BLOCK_SIZES = [997, 4096, 65536, scan.BLOCK_BYTES]
RARE_FILLER = [b"0042 [+] 13:37:01.5", b"==== 7/9 ====", b"#", b"$$ 3 > 2"]
WORDY_FILLER = [
    b"Compiling mail-server (/home/work/crates)",
    b"test_models.py PASSED [ 41%]",
    b"INFO worker.py:267] Added request cmpl-8 to block max=4 (json)",
]


CLAUSE_REGEXES = [
    re.compile(re.escape(anchor) + b"(?:" + clause + b")") for anchor, clause in CLAUSES.items()
]


def needle_at(low: bytes) -> list[int]:
    """Where each needle occurrence, and each clause's match, starts in a lowercased line."""
    found = []
    for needle in NEEDLES:
        at = low.find(needle)
        while at >= 0:
            found.append(at)
            at = low.find(needle, at + 1)
    for regex in CLAUSE_REGEXES:
        found.extend(match.start() for match in regex.finditer(low))
    return sorted(found)


def reference(data: bytes) -> list[tuple[int, bytes | None]]:
    """(1-based line number, the line, or None for a long one) of each candidate line."""
    lines = data.split(b"\n")
    if lines[-1] == b"":
        lines.pop()
    return [
        (number, line if len(line) <= MAX_LINE_BYTES else None)
        for number, line in enumerate(lines, 1)
        if needle_at(line.lower())
    ]


def candidates(path: Path, block_bytes: int = scan.BLOCK_BYTES) -> list[tuple[int, int, bytes]]:
    with path.open("rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        return list(iter_candidates(handle.fileno(), 0, size, block_bytes=block_bytes))


def random_case(rng: random.Random, word: bytes) -> bytes:
    return bytes(c ^ 0x20 if chr(c).isalpha() and rng.random() < 0.5 else c for c in word)


def generated_log(rng: random.Random, filler: list[bytes], lines: int, eol: bytes) -> bytes:
    """Filler lines of random length, one in ~7 holding a needle in random case."""
    out = []
    for _ in range(lines):
        parts = [rng.choice(filler) for _ in range(rng.randrange(0, 30))]
        if rng.random() < 0.15:
            parts.insert(rng.randrange(len(parts) + 1), random_case(rng, rng.choice(NEEDLES)))
        out.append(b" ".join(parts) + eol)
    return b"".join(out)


def line_offsets(data: bytes) -> list[int]:
    starts = [0]
    at = data.find(b"\n")
    while at >= 0:
        starts.append(at + 1)
        at = data.find(b"\n", at + 1)
    return starts


def same_as_reference(data: bytes, found: list[tuple[int, int, bytes]]) -> None:
    """Short lines given whole; each long one in windows that cover all its needles."""
    expected = reference(data)
    assert sorted({n for n, _, _ in found}) == [n for n, _ in expected]
    whole = [(n, raw) for n, _, raw in found if len(raw) and n in dict(expected)]
    short = [(n, line) for n, line in expected if line is not None]
    assert [(n, raw) for n, raw in whole if dict(expected)[n] is not None] == short
    starts = line_offsets(data)
    for number, line in expected:
        if line is not None:
            continue
        windows = [(offset, offset + len(raw)) for n, offset, raw in found if n == number]
        text = data[starts[number - 1] :].split(b"\n", 1)[0]
        for at in needle_at(text.lower()):
            absolute = starts[number - 1] + at
            assert any(lo <= absolute < hi for lo, hi in windows), (number, at)
        assert all(hi - lo <= scan.WINDOW_BEFORE + scan.WINDOW_AFTER for lo, hi in windows)


def check(path: Path, block_sizes: list[int] = BLOCK_SIZES) -> None:
    """Same candidates for each block size that holds the longest line (a longer line is cut
    into block-sized pieces, each scanned as a line: a documented limit)."""
    data = path.read_bytes()
    longest = max(len(line) + 1 for line in data.split(b"\n"))
    assert any(size >= longest for size in block_sizes)
    for block_bytes in [size for size in block_sizes if size >= longest]:
        same_as_reference(data, candidates(path, block_bytes))


@pytest.mark.parametrize("path", SAMPLE_FILES, ids=[p.name[:50] for p in SAMPLE_FILES])
def test_every_sample(path: Path) -> None:
    check(path)


@pytest.mark.parametrize("path", SAMPLE_FILES, ids=[p.name[:50] for p in SAMPLE_FILES])
def test_every_recognised_line_holds_a_needle(path: Path) -> None:
    for number, line in enumerate(path.read_bytes().split(b"\n"), 1):
        if parse_line(line.decode("utf-8", "replace")) is not None:
            assert needle_at(line.lower()), (number, line[:120])


@pytest.mark.parametrize("filler", [RARE_FILLER, WORDY_FILLER], ids=["anchors", "lowered"])
@pytest.mark.parametrize("eol", [b"\n", b"\r\n"], ids=["lf", "crlf"])
@pytest.mark.parametrize("seed", range(3))
def test_generated(tmp_path: Path, filler: list[bytes], eol: bytes, seed: int) -> None:
    rng = random.Random(seed)
    data = generated_log(rng, filler, 3000, eol)
    path = tmp_path / "console.log"
    path.write_bytes(data + random_case(rng, b"last line, no newline: Killed"))
    check(path)


def test_both_search_paths_are_taken() -> None:
    rare = scan._rare_letters(generated_log(random.Random(1), RARE_FILLER, 500, b"\n"))
    wordy = scan._rare_letters(generated_log(random.Random(1), WORDY_FILLER, 500, b"\n"))
    letters = {a for a in scan.GROUPS if len(a) == 1 and a.isalpha()}
    assert rare & letters == letters
    assert wordy & letters == set()  # every one-letter anchor is common there: regex passes only
    assert b"+" in wordy and b"+" not in rare  # sacct's cut state: the one-byte anchor "+"


def test_anchor_budget_runs_out_mid_block(tmp_path: Path) -> None:
    # The sample (first 16 KiB) has no "k": "kill" is found from "k", which then turns up
    # on every line; the block must fall back to the regex pass, losing nothing.
    head = b"".join(b" ".join(RARE_FILLER[: i % 4 + 1]) + b"\n" for i in range(2000))
    assert b"k" not in head.lower()
    tail = b"".join(b"kkk KILLED %d\n" % i if i % 3 else b"ok kik\n" for i in range(5000))
    path = tmp_path / "console.log"
    path.write_bytes(head + tail)
    assert b"k" in scan._rare_letters(head[: 16 << 10])
    check(path, [65536, scan.BLOCK_BYTES])


def test_long_lines_are_read_in_windows(tmp_path: Path) -> None:
    long_hit = b"x" * (MAX_LINE_BYTES + 5000) + b" Timeout +++ " + b"y" * 9000 + b" killed"
    long_miss = b"y" * (3 * MAX_LINE_BYTES)
    path = tmp_path / "console.log"
    path.write_bytes(b"a\n" + long_hit + b"\nb\n" + long_miss + b"\nFAILED a::b\n" + long_hit)
    found = candidates(path)
    assert [n for n, _, _ in found] == [2, 2, 5, 6, 6]
    assert [raw[-7:] for n, _, raw in found if n == 2] == [b"y" * 7, b" killed"]
    check(path, [4 * MAX_LINE_BYTES, scan.BLOCK_BYTES])
    result = scan.scan_log(path)
    assert (result.long_lines, result.first_long_line) == (2, 2)


def test_progress_bar_carriage_returns_bound_a_window(tmp_path: Path) -> None:
    bar = b"".join(b"\r%3d%%|####| %d/100 [00:01<00:00]" % (i % 100, i) for i in range(4000))
    line = bar + b"\rRuntimeError: CUDA error: out of memory\r" + bar
    path = tmp_path / "console.log"
    path.write_bytes(b"start\n" + line + b"\n")
    [(number, _, raw)] = candidates(path)
    assert (number, raw) == (2, b"RuntimeError: CUDA error: out of memory")
    assert scan.scan_log(path).of_kind("gpu_oom")[0].evidence.line == 2


@pytest.mark.parametrize("seed", range(3))
def test_binary_junk(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    chunks = [rng.randbytes(rng.randrange(1, 3000)) for _ in range(300)]
    for i in range(0, len(chunks), 4):
        chunks[i] += random_case(rng, rng.choice(NEEDLES))
    path = tmp_path / "core.bin"
    path.write_bytes(b"\x01\x00" + b"".join(chunks))
    check(path)
    assert scan.scan_log(path).binary


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le", "utf-16-be"])
def test_utf16_is_transcoded_not_binary(tmp_path: Path, encoding: str) -> None:
    # A Windows console (PowerShell's Out-File / Tee-Object write UTF-16 LE with a BOM).
    original = (
        TRIAGE
        / "pytest-timeout-thread-method-windows-path-stack-of-mainthread-pytest-timeout-68.txt"
    )
    text = original.read_text(encoding="utf-8", errors="replace")
    path = tmp_path / "console.log"
    path.write_bytes(text.encode(encoding))
    utf16, utf8 = scan.scan_log(path), scan.scan_log(original)
    assert not utf16.binary and utf16.encoding in ("utf-16-le", "utf-16-be")
    assert [s.signal for s in utf16.signals] == [s.signal for s in utf8.signals]
    assert [s.evidence.line for s in utf16.signals] == [s.evidence.line for s in utf8.signals]
    assert [s.signal.kind for s in utf16.signals].count("timeout") >= 1


def test_empty_file(tmp_path: Path) -> None:
    path = tmp_path / "empty.log"
    path.write_bytes(b"")
    assert candidates(path) == []
    assert scan.scan_log(path).lines == 0


def parallel_log(path: Path) -> None:
    """Signals past MAX_PER_KIND and CUDA OOMs in both halves, so the merge is exercised."""
    rng = random.Random(7)
    oom = CUDA_SAMPLE.read_bytes()
    parts = []
    for i in range(600):
        parts.append(generated_log(rng, WORDY_FILLER, 20, b"\n"))
        parts.append(b"FAILED tests/test_a.py::test_%d\n" % i)
        if i % 2 == 0:
            parts.append(oom)
        if i % 50 == 0:
            parts.append(b"Error: Process completed with exit code %d.\n" % i)
    path.write_bytes(b"".join(parts))


def test_two_processes_equal_one(tmp_path: Path) -> None:
    path = tmp_path / "console.log"
    parallel_log(path)
    one, two = scan.scan_log(path, workers=1), scan.scan_log(path, workers=2)
    assert one.dropped > 0 and len(one.cuda_ooms) == MAX_PER_KIND
    assert len(one.of_kind("test_failed")) == MAX_PER_KIND
    assert one.of_kind("exit_code")[-1].evidence.line > one.lines // 2
    assert two == one


def test_split_is_at_a_line_boundary(tmp_path: Path) -> None:
    path = tmp_path / "one-line.log"
    path.write_bytes(b"out of memory " * 1000)
    with path.open("rb") as handle:
        assert scan._line_boundary(handle.fileno(), 10, 14000) == 14000
    assert scan.scan_log(path, workers=2) == scan.scan_log(path, workers=1)


# urllib3's warning of a read retried, as a retry loop repeats it under a new timestamp
_RETRIED = (
    "WARNING:urllib3.connectionpool:Retrying (Retry(total=4, connect=None, read=None, "
    "redirect=None, status=None)) after connection broken by 'ReadTimeoutError(\"HTTPSConnection"
    "Pool(host='huggingface.co', port=443): Read timed out. (read timeout=10)\")': /api/models\n"
)


def test_a_repeated_message_is_read_once_and_each_line_gets_its_own_reading(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    reads: list[str] = []

    def counted(line: str) -> object:
        reads.append(line)
        return parse_line(line)

    monkeypatch.setattr(scan, "parse_line", counted)
    lines = [f"2024-04-14T21:50:{second:02d}.0100000Z Killed\n" for second in range(6)] + [
        f"2024-04-14T21:51:{second:02d}.0100000Z {_RETRIED}" for second in range(6)
    ]
    log = tmp_path / "console.log"
    log.write_text("".join(lines))
    result = scan.scan_log(log, workers=1)
    # every line is cited with its own number and its reading, and no two share one
    killed = [s for s in result.signals if s.evidence.line <= 6]
    assert [s.evidence.line for s in killed] == [1, 2, 3, 4, 5, 6]
    assert len({id(s.signal) for s in result.signals}) == len(result.signals)
    # each distinct message was read once, whatever its timestamp
    assert reads.count("Killed") == 1, reads
    assert len(reads) == len(set(reads))


def test_the_readings_kept_are_bounded_and_every_message_is_still_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(scan, "_READ_MEMO", 2)
    log = tmp_path / "console.log"
    log.write_text("".join(f"step {n}: process {n} Killed\n" for n in range(7)) * 2)
    bounded = scan.scan_log(log, workers=1)
    monkeypatch.setattr(scan, "_READ_MEMO", 1 << 20)
    kept = scan.scan_log(log, workers=1)
    assert [(s.evidence.line, s.signal) for s in bounded.signals] == [
        (s.evidence.line, s.signal) for s in kept.signals
    ]
    assert len(bounded.signals) == 14
