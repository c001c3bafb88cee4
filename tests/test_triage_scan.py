"""The streaming scanner finds exactly the lines a plain line-by-line scan finds.

The reference below is the definition: a line (split on b"\\n", CR kept) is a candidate when
its ASCII-lowercased bytes hold one of ``PREFILTERS``; the scanner gives it bounded to
MAX_LINE_BYTES. Checked on every real sample and on generated logs built to hit the scanner's
edges: block boundaries, both search paths (rare-letter anchors, lowered block), an anchor
budget running out mid-block, CRLF, long lines, no final newline, binary junk; and the
two-process scan gives the same result as one process.
"""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

from qualify.evidence import scan
from qualify.evidence.scan import MAX_LINE_BYTES, MAX_PER_KIND, PREFILTERS, iter_candidates
from tests.conftest import SAMPLES

SAMPLE_FILES = sorted(p for p in SAMPLES.rglob("*") if p.is_file())
CUDA_SAMPLE = SAMPLES / "cuda_oom/vllm-worker-rank1-gpu1-multiproc-executor-vllm-17835.txt"
BLOCK_SIZES = [997, 4096, 65536, scan.BLOCK_BYTES]
RARE_FILLER = [b"0042 [+] 13:37:01.5", b"==== 7/9 ====", b"#", b"$$ 3 > 2"]
WORDY_FILLER = [b"Compiling mail-server", b"test_models.py PASSED", b"INFO engine.py:267]"]


def reference(data: bytes) -> list[tuple[int, bytes]]:
    """(1-based line number, line bounded to MAX_LINE_BYTES) of each candidate line."""
    lines = data.split(b"\n")
    if lines[-1] == b"":
        lines.pop()
    return [
        (number, line[:MAX_LINE_BYTES])
        for number, line in enumerate(lines, 1)
        if any(needle in line.lower() for needle in PREFILTERS)
    ]


def candidates(path: Path, block_bytes: int = scan.BLOCK_BYTES) -> list[tuple[int, bytes]]:
    with path.open("rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        found = iter_candidates(handle.fileno(), 0, size, block_bytes=block_bytes)
        return [(line, raw) for line, _, raw in found]


def random_case(rng: random.Random, word: bytes) -> bytes:
    return bytes(c ^ 0x20 if chr(c).isalpha() and rng.random() < 0.5 else c for c in word)


def generated_log(rng: random.Random, filler: list[bytes], lines: int, eol: bytes) -> bytes:
    """Filler lines of random length, one in ~7 holding a needle in random case."""
    out = []
    for _ in range(lines):
        parts = [rng.choice(filler) for _ in range(rng.randrange(0, 30))]
        if rng.random() < 0.15:
            parts.insert(rng.randrange(len(parts) + 1), random_case(rng, rng.choice(PREFILTERS)))
        out.append(b" ".join(parts) + eol)
    return b"".join(out)


def check(path: Path, block_sizes: list[int] = BLOCK_SIZES) -> None:
    """Same candidates for each block size that holds the longest line (a longer line is cut
    into block-sized pieces, each scanned as a line: a documented limit)."""
    data = path.read_bytes()
    expected = reference(data)
    longest = max(len(line) + 1 for line in data.split(b"\n"))
    assert any(size >= longest for size in block_sizes)
    for block_bytes in [size for size in block_sizes if size >= longest]:
        assert candidates(path, block_bytes) == expected, f"block_bytes={block_bytes}"


@pytest.mark.parametrize("path", SAMPLE_FILES, ids=[p.name[:50] for p in SAMPLE_FILES])
def test_every_sample(path: Path) -> None:
    check(path)


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
    rare = scan._plan(generated_log(random.Random(1), RARE_FILLER, 500, b"\n"))
    wordy = scan._plan(generated_log(random.Random(1), WORDY_FILLER, 500, b"\n"))
    assert b"" not in rare
    assert set(wordy[b""]) >= {b"emory", b"failed"}


def test_anchor_budget_runs_out_mid_block(tmp_path: Path) -> None:
    # The sample (first 16 KiB) has no "k": "kill" is planned on "k", which then turns up
    # on every line; the block must fall back to the lowered search, losing nothing.
    head = b"".join(b" ".join(RARE_FILLER[: i % 4 + 1]) + b"\n" for i in range(2000))
    assert b"k" not in head.lower()
    tail = b"".join(b"kkk KILLED %d\n" % i if i % 3 else b"ok kik\n" for i in range(5000))
    path = tmp_path / "console.log"
    path.write_bytes(head + tail)
    assert scan._plan(head[: 16 << 10]).get(b"k") == [b"kill"]
    check(path, [65536, scan.BLOCK_BYTES])


def test_long_lines_are_bounded(tmp_path: Path) -> None:
    long_hit = b"x" * (MAX_LINE_BYTES + 5000) + b" Timeout"
    long_miss = b"y" * (3 * MAX_LINE_BYTES)
    path = tmp_path / "console.log"
    path.write_bytes(b"a\n" + long_hit + b"\nb\n" + long_miss + b"\nFAILED a::b\n" + long_hit)
    found = candidates(path)
    assert [(n, len(raw)) for n, raw in found] == [
        (2, MAX_LINE_BYTES),
        (5, 11),
        (6, MAX_LINE_BYTES),
    ]
    check(path, [4 * MAX_LINE_BYTES, scan.BLOCK_BYTES])


@pytest.mark.parametrize("seed", range(3))
def test_binary_junk(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    chunks = [rng.randbytes(rng.randrange(1, 3000)) for _ in range(300)]
    for i in range(0, len(chunks), 4):
        chunks[i] += random_case(rng, rng.choice(PREFILTERS))
    path = tmp_path / "core.bin"
    path.write_bytes(b"\x00" + b"".join(chunks))
    check(path)
    assert scan.scan_log(path).binary


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
