"""Streaming scan of a log: memory stays flat whatever its size, long lines are bounded.

The file is read in blocks with ``os.pread``; C-speed ``bytes.find`` passes locate the few
candidate lines (those holding a ``PREFILTERS`` needle, ASCII case-insensitively), and only
those are decoded and given to the regex parsers. A CUDA OOM message may be wrapped over
several lines: its context is read with ``os.pread`` after the hit. A big log is split at a
line boundary and its second half scanned by a forked child, so both cores work.
"""

from __future__ import annotations

import dataclasses
import os
import pickle
from collections.abc import Iterator
from pathlib import Path

from qualify.evidence.cuda_oom import CudaOom, parse_cuda_oom
from qualify.evidence.lines import LineSignal, parse_line
from qualify.evidence.model import Evidence

BLOCK_BYTES = 2 << 20
"""Read size: 1-8 MiB scan at the same speed (CPython 3.11, EPYC), 2 MiB keeps RSS low."""
MAX_LINE_BYTES = 64 << 10
CUDA_CONTEXT_BYTES = 8 << 10
MAX_PER_KIND = 200
"""Signals kept per kind (the first ones: later repeats only count)."""
PARALLEL_MIN_BYTES = 64 << 20
"""Logs at least this big may be scanned by two processes (a fork costs ~ms)."""

PREFILTERS = (
    # A line is a candidate when its ASCII-lowercased text holds one of these; they are few
    # and each covers several parsers.
    b"emory",  # out of memory, OutOfMemory, Memory cgroup, insufficient memory, memory: usage
    b"kill",  # invoked oom-killer, oom-kill:, Killed process, Kill process, Task in ... killed
    b"failed",  # FAILED nodeid, "1 failed", Failed: Timeout, failed with exit code
    b"exit code",
    b"crashed",  # worker crashed while running, replacing crashed worker
    b"node down",
    b"canceled",
    b"shutdown signal",
    b"timeout",
)
_CUDA_HIT = b"out of memory. Tried to allocate"
_SAMPLE_BYTES = 16 << 10
_HITS_PER_MIB = 1 << 10
"""Anchor hits per MiB (a Python loop turn each, ~0.4 us) that cost as much as one ``find``
pass (~0.55 ms per MiB, CPython 3.11)."""


@dataclasses.dataclass(frozen=True)
class Signal:
    """A recognised line and where it was."""

    evidence: Evidence
    signal: LineSignal


@dataclasses.dataclass
class ScanResult:
    """Everything a log yielded."""

    source: str
    signals: list[Signal] = dataclasses.field(default_factory=list)
    cuda_ooms: list[tuple[Evidence, CudaOom]] = dataclasses.field(default_factory=list)
    size_bytes: int = 0
    lines: int = 0
    binary: bool = False
    dropped: int = 0
    error: str | None = None

    def of_kind(self, *kinds: str) -> list[Signal]:
        """The signals of these kinds, in file order."""
        return [s for s in self.signals if s.signal.kind in kinds]


@dataclasses.dataclass
class _Part:
    """What one process found in its line-aligned byte range; line numbers are relative."""

    lines: int = 0
    """Newlines in the range (a final line without one is not counted, as before)."""
    seen: dict[str, int] = dataclasses.field(default_factory=dict)
    """Parsed signals per kind, kept or not."""
    signals: list[tuple[int, str, LineSignal]] = dataclasses.field(default_factory=list)
    """(line, text, signal): the first MAX_PER_KIND of each kind."""
    cuda_hits: int = 0
    """Lines holding ``_CUDA_HIT``, parsed or not."""
    cuda: list[tuple[int, int, str, CudaOom]] = dataclasses.field(default_factory=list)
    """(hit index, line, text, parsed): the first MAX_PER_KIND parsed."""


def _looks_binary(head: bytes) -> bool:
    return b"\x00" in head[:8192]


def scan_log(path: Path, source: str | None = None, workers: int | None = None) -> ScanResult:
    """Scan ``path``; never raises on content (an unreadable file sets ``error``).

    ``workers``: 1 or 2 processes (default: see ``_default_workers``).
    """
    result = ScanResult(source or str(path))
    try:
        with path.open("rb") as handle:
            fd = handle.fileno()
            size = os.fstat(fd).st_size
            result.binary = _looks_binary(os.pread(fd, 8192, 0))
            workers = _default_workers(size) if workers is None else workers
            split = _line_boundary(fd, size // 2, size) if workers > 1 else size
            parts = _scan_two(fd, split, size) if split < size else [_scan_range(fd, 0, size)]
            _merge(parts, result)
            result.size_bytes = size
    except OSError as exc:
        result.error = f"cannot read {path}: {exc.strerror or exc}"
    return result


def _default_workers(size_bytes: int) -> int:
    """2 when the log is big and two CPUs are ours. With the other core busy (shared machine)
    the two processes only time-slice: measured no slower and no more CPU than one."""
    return 2 if size_bytes >= PARALLEL_MIN_BYTES and len(os.sched_getaffinity(0)) > 1 else 1


def _line_boundary(fd: int, at: int, size: int) -> int:
    """The offset just after the first newline at or after ``at`` (``size`` when none)."""
    while at < size:
        chunk = os.pread(fd, 1 << 16, at)
        if not chunk:
            break
        newline = chunk.find(b"\n")
        if newline >= 0:
            return at + newline + 1
        at += len(chunk)
    return size


def _scan_two(fd: int, split: int, size: int) -> list[_Part]:
    """[0, split) here and [split, size) in a forked child, whose _Part comes back pickled.

    The child shares ``fd``, hence pread only (no shared file offset). If it fails, its
    range is scanned here: the answer is the same, only slower.
    """
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: never returns into the caller's code
        os.close(read_end)
        status = 1
        try:
            with os.fdopen(write_end, "wb") as pipe:
                pickle.dump(_scan_range(fd, split, size), pipe)
            status = 0
        finally:
            os._exit(status)
    os.close(write_end)
    first = _scan_range(fd, 0, split)
    with os.fdopen(read_end, "rb") as pipe:
        payload = pipe.read()
    _, status = os.waitpid(pid, 0)
    second = pickle.loads(payload) if status == 0 and payload else _scan_range(fd, split, size)
    return [first, second]


def _merge(parts: list[_Part], result: ScanResult) -> None:
    """Concatenate in file order, keeping the first MAX_PER_KIND of each kind overall."""
    line_base, hit_base, seen, kept = 0, 0, 0, 0
    cuda: list[tuple[int, int, str, CudaOom]] = []
    counts: dict[str, int] = {}
    for part in parts:
        for line, text, found in part.signals:
            if counts.get(found.kind, 0) < MAX_PER_KIND:
                counts[found.kind] = counts.get(found.kind, 0) + 1
                kept += 1
                evidence = Evidence.of(result.source, line_base + line, text, found.kind)
                result.signals.append(Signal(evidence, found))
        seen += sum(part.seen.values())
        cuda += [(hit_base + h, line_base + n, text, oom) for h, n, text, oom in part.cuda]
        line_base += part.lines
        hit_base += part.cuda_hits
    result.lines = line_base
    result.dropped = seen - kept
    for _, line, text, oom in cuda[:MAX_PER_KIND]:
        result.cuda_ooms.append((Evidence.of(result.source, line, text, "cuda_oom"), oom))
    if len(cuda) >= MAX_PER_KIND:  # every hit after the last kept one was dropped
        result.dropped += hit_base - cuda[MAX_PER_KIND - 1][0] - 1


def _scan_range(fd: int, start: int, stop: int) -> _Part:
    part = _Part()
    for line, offset, raw in iter_candidates(fd, start, stop, part):
        text = raw.decode("utf-8", errors="replace")
        if _CUDA_HIT in raw:
            part.cuda_hits += 1
            if len(part.cuda) < MAX_PER_KIND:
                context = os.pread(fd, CUDA_CONTEXT_BYTES, offset)
                parsed = parse_cuda_oom(context.decode("utf-8", errors="replace"))
                if parsed is not None:
                    part.cuda.append((part.cuda_hits - 1, line, text, parsed))
            continue
        found = parse_line(text)
        if found is not None:
            part.seen[found.kind] = part.seen.get(found.kind, 0) + 1
            if part.seen[found.kind] <= MAX_PER_KIND:
                part.signals.append((line, text, found))
    return part


def iter_candidates(
    fd: int, start: int, stop: int, part: _Part | None = None, block_bytes: int = BLOCK_BYTES
) -> Iterator[tuple[int, int, bytes]]:
    """(line number from 1, file offset, line bounded to MAX_LINE_BYTES) of each candidate.

    ``start`` must be a line start. Lines are whole inside a block unless longer than one
    (then cut into block-sized pieces, each scanned as a line). Sets ``part.lines``.
    """
    line_no, at = 1, start
    while at < stop:
        block = os.pread(fd, min(block_bytes, stop - at), at)
        if not block:
            break
        end = block.rfind(b"\n") + 1
        if end == 0 or at + len(block) == stop:  # over-long line, or the range's last block
            end = len(block)
        counted_to = 0
        for line_start in _candidate_starts(block, end):
            line_no += block.count(b"\n", counted_to, line_start)
            counted_to = line_start
            line_stop = block.find(b"\n", line_start, end)
            line_stop = end if line_stop < 0 else line_stop
            raw = block[line_start : min(line_stop, line_start + MAX_LINE_BYTES)]
            yield line_no, at + line_start, raw
        line_no += block.count(b"\n", counted_to, end)
        at += end
    if part is not None:
        part.lines = line_no - 1


def _candidate_starts(block: bytes, end: int) -> list[int]:
    """Starts of the lines in ``block[:end]`` that hold a needle, in order.

    ``block.lower()`` and one ``find`` per needle cost ~5 ms per 8 MiB each. A needle whose
    rarest letter (measured on a sample) is rare enough is instead found from that letter's
    two cases (``find`` of one byte is memchr: ~0.2 ms per 8 MiB), each hit checked in place.
    """
    starts: set[int] = set()
    lowered: bytes | None = None
    for letter, needles in _plan(block[:_SAMPLE_BYTES]).items():
        budget = max(64, len(needles) * _HITS_PER_MIB * end >> 20)
        if letter and _anchored(block, end, letter, needles, budget, starts):
            continue
        lowered = block[:end].lower() if lowered is None else lowered
        for needle in needles:
            _find_all(lowered, needle, starts)
    return sorted(starts)


def _plan(sample: bytes) -> dict[bytes, list[bytes]]:
    """Needles grouped by their rarest letter in ``sample``; b"" groups the common ones."""
    plan: dict[bytes, list[bytes]] = {}
    limit = len(sample) // 2000  # > ~0.05% of bytes: cheaper to lower and find
    letters = {bytes([c]) for needle in PREFILTERS for c in needle if chr(c).isalpha()}
    counts = {c: sample.count(c) + sample.count(c.upper()) for c in letters}
    for needle in PREFILTERS:
        letter = min((bytes([c]) for c in needle if chr(c).isalpha()), key=counts.__getitem__)
        plan.setdefault(letter if counts[letter] <= limit else b"", []).append(needle)
    return plan


def _anchored(
    block: bytes, end: int, letter: bytes, needles: list[bytes], budget: int, starts: set[int]
) -> bool:
    """Add the lines holding ``needles`` via ``letter``; False (partial) past ``budget`` hits."""
    offsets = [(needle, [i for i, c in enumerate(needle) if c == letter[0]]) for needle in needles]
    for variant in (letter, letter.upper()):
        at = block.find(variant, 0, end)
        while at >= 0:
            budget -= 1
            if budget < 0:
                return False
            if _matches_at(block, at, offsets):
                line_end = block.find(b"\n", at, end)
                starts.add(block.rfind(b"\n", 0, at) + 1)
                if line_end < 0:
                    break
                at = line_end
            at = block.find(variant, at + 1, end)
    return True


def _matches_at(block: bytes, at: int, offsets: list[tuple[bytes, list[int]]]) -> bool:
    for needle, positions in offsets:
        for i in positions:
            if at >= i and block[at - i : at - i + len(needle)].lower() == needle:
                return True
    return False


def _find_all(lowered: bytes, needle: bytes, starts: set[int]) -> None:
    at = lowered.find(needle)
    while at >= 0:
        starts.add(lowered.rfind(b"\n", 0, at) + 1)
        line_end = lowered.find(b"\n", at)
        if line_end < 0:
            break
        at = lowered.find(needle, line_end)
