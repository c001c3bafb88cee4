"""Streaming scan of a log: memory stays flat whatever its size, long lines are bounded.

The file is read in blocks; a handful of cheap ``bytes.find`` prefilters (C speed) locate the
few candidate lines, and only those are decoded and given to the regex parsers. A CUDA OOM
message may be wrapped over several lines: its context is read with ``os.pread`` after the hit.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

from qualify.cuda_oom import CudaOom, parse_cuda_oom
from qualify.triage.lines import LineSignal, parse_line
from qualify.triage.model import Evidence

BLOCK_BYTES = 8 << 20
MAX_LINE_BYTES = 64 << 10
CUDA_CONTEXT_BYTES = 8 << 10
MAX_PER_KIND = 200
"""Signals kept per kind (the first ones: later repeats only count)."""

PREFILTERS = (
    # Matched in the block lowercased once (bytes.lower keeps offsets): each needle is one
    # C-speed pass, ~8 ms per 8 MiB block here, so they are few and cover several parsers.
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


def _looks_binary(head: bytes) -> bool:
    return b"\x00" in head[:8192]


def scan_log(path: Path, source: str | None = None) -> ScanResult:
    """Scan ``path``; never raises on content (an unreadable file sets ``error``)."""
    result = ScanResult(source or str(path))
    try:
        with path.open("rb") as handle:
            _scan_handle(handle.fileno(), result)
    except OSError as exc:
        result.error = f"cannot read {path}: {exc.strerror or exc}"
    return result


def _scan_handle(fd: int, result: ScanResult) -> None:
    offset, line_no, carry = 0, 1, b""
    counts: dict[str, int] = {}
    first = True
    while True:
        chunk = os.read(fd, BLOCK_BYTES)
        if first:
            result.binary = _looks_binary(chunk)
            first = False
        if not chunk and not carry:
            break
        block = carry + chunk
        base = offset - len(carry)
        end = block.rfind(b"\n") + 1 if chunk else len(block)
        if end == 0:  # no newline in a whole block: one (bounded) over-long line
            end = len(block)
        _scan_block(fd, block[:end], base, line_no, result, counts)
        line_no += block.count(b"\n", 0, end)
        carry = block[end:]
        offset += len(chunk)
        if not chunk:
            break
    result.size_bytes = offset
    result.lines = line_no - 1 + (1 if carry else 0)


def _candidate_starts(block: bytes) -> list[int]:
    starts: set[int] = set()
    block = block.lower()
    for needle in PREFILTERS:
        at = block.find(needle)
        while at >= 0:
            line_start = block.rfind(b"\n", 0, at) + 1
            starts.add(line_start)
            line_end = block.find(b"\n", at)
            if line_end < 0:
                break
            at = block.find(needle, line_end)
    return sorted(starts)


def _scan_block(
    fd: int, block: bytes, base: int, line_no: int, result: ScanResult, counts: dict[str, int]
) -> None:
    counted_to, current = 0, line_no
    for start in _candidate_starts(block):
        current += block.count(b"\n", counted_to, start)
        counted_to = start
        stop = block.find(b"\n", start)
        stop = len(block) if stop < 0 else stop
        raw = block[start : min(stop, start + MAX_LINE_BYTES)]
        text = raw.decode("utf-8", errors="replace")
        if _CUDA_HIT in raw:
            _cuda(fd, base + start, current, text, result)
            continue
        found = parse_line(text)
        if found is None:
            continue
        seen = counts.get(found.kind, 0)
        counts[found.kind] = seen + 1
        if seen >= MAX_PER_KIND:
            result.dropped += 1
            continue
        evidence = Evidence.of(result.source, current, text, found.kind)
        result.signals.append(Signal(evidence, found))


def _cuda(fd: int, at: int, line_no: int, text: str, result: ScanResult) -> None:
    if len(result.cuda_ooms) >= MAX_PER_KIND:
        result.dropped += 1
        return
    context = os.pread(fd, CUDA_CONTEXT_BYTES, at).decode("utf-8", errors="replace")
    parsed = parse_cuda_oom(context)
    if parsed is not None:
        result.cuda_ooms.append((Evidence.of(result.source, line_no, text, "cuda_oom"), parsed))
