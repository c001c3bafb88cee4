"""Streaming scan of a log: memory stays flat whatever its size, long lines are bounded.

The file is read in blocks with ``os.pread``. Candidate lines are those whose ASCII-lowercased
text holds one of ``NEEDLES``; they are located by a few C-speed passes per block and only they
are decoded and given to the line parsers (``qualify.evidence.lines``). The needles are grouped
(``GROUPS``) under an anchor, a literal every needle of the group contains: each group is one
compiled regex that starts with its anchor (``re`` then searches that literal at C speed and
checks the rest of each needle around a hit, lookbehinds included, in C), run over the lowered
block. An anchor that is a single letter rare in the block (measured on a sample) is instead
found with ``bytes.find`` of its two cases (memchr) and each hit checked in place.

Lines up to MAX_LINE_BYTES are given whole. A longer line (progress bars redrawn with ``\\r``, a
JSON blob) is given as windows around each needle it holds, so that nothing in it is ignored.
A CUDA OOM message may be wrapped over several lines: its context is read with ``os.pread``
from just before the hit, wherever in its line the hit is. A big log is split at a line
boundary and its second half scanned by a forked child, so both cores work. A UTF-16 log (a
BOM, or NUL bytes every other byte) is transcoded to UTF-8 first, in blocks.
"""

from __future__ import annotations

import codecs
import os
import pickle
import re
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from qualify import records
from qualify.evidence.cuda_oom import CudaOom, parse_cuda_oom
from qualify.evidence.evidence_line import Evidence
from qualify.evidence.gpu_lines import EXECUTOR_HIT, parse_trtllm_executor
from qualify.evidence.headers import body, message, messages, plain, structured, unquoted
from qualify.evidence.lines import LineSignal, parse_line
from qualify.evidence.oom_parts import (
    CONTEXT_AFTER,
    CONTEXT_BEFORE,
    CONTEXT_KINDS,
    in_context,
    in_fence,
    in_source,
)
from qualify.records import frozen_record
from qualify.untrusted import open_regular

BLOCK_BYTES = 2 << 20
"""Read size: 1-8 MiB scan at the same speed (CPython 3.11, EPYC), 2 MiB keeps RSS low."""
MAX_LINE_BYTES = 64 << 10
"""Longer lines are read in windows around their needles."""
WINDOW_BEFORE = 256
"""Bytes of a long line kept before a needle (a kernel line's "Memory cgroup out of memory: ")."""
WINDOW_AFTER = 4 << 10
"""Bytes of a long line kept from a needle on."""
CUDA_CONTEXT_BYTES = 8 << 10
CUDA_CONTEXT_BEFORE = 512
"""Bytes read before the CUDA OOM hit (the line's "pid=N" and "CUDA" head)."""
MAX_PER_KIND = 200
"""Signals kept per kind (the first ones: later repeats only count)."""
PARALLEL_MIN_BYTES = 64 << 20
"""Logs at least this big may be scanned by two processes (a fork costs ~ms)."""

GROUPS: dict[bytes, tuple[bytes, ...]] = {
    # anchor: needles holding it (lowercase). A line is a candidate when it holds a needle.
    b"mem": (
        b"out of memory",  # kernel, CUDA, TensorRT, HIP, Slurm "Out Of Memory", CUDA OOM head
        b"outofmemory",  # TensorRT "Error Code 2: OutOfMemory", torch.OutOfMemoryError, HIP
        b"out_of_memory",  # CUDA_ERROR_OUT_OF_MEMORY, Slurm OUT_OF_MEMORY, mem_cgroup_out_of_memory
        b"out_of_device_memory",  # Level Zero
        b"outofdevicememory",  # Vulkan's ErrorOutOfDeviceMemory
        b"alloc device memory",  # "Failed to alloc DEVICE memory" (Neuron)
        b"memory: usage",  # memcg usage/limit
        b"memory for the cache",  # vLLM "No available memory for the cache blocks"
        b"available memory of",  # ONNX Runtime arena limit
        b"kv cache memory",  # vLLM "available KV cache memory"
        b"memcg",  # try_charge_memcg, charge_memcg (call trace)
        b"mem_cgroup",  # mem_cgroup_oom (call trace)
        b"memory limit",  # a limit crossed (Slurm, Cloud Run, LSF)
        b"memlimit",  # LSF's TERM_MEMLIMIT
        b"low memory",  # earlyoom
        b"low on memory",  # Ray's memory monitor, Kubernetes eviction
        b"memory pressure",  # systemd-oomd, eviction
        b"allocate memory",  # ENOMEM "Cannot allocate memory", "can't allocate memory"
        b"enough memory",  # "not enough memory"
        b"insufficient memory",
        b"little memory",  # "Too little memory given for DLPNO-CCSD Algorithm!" (Psi4)
        b"on resource: memory",  # the kubelet's eviction: "The node was low on resource: memory"
        b"memorypressure",  # the kubelet's "[MemoryPressure]" condition
        b"of gpu memory",  # "Out of GPU memory" (CUDA.jl), "ran out of GPU memory"
        b"of device memory",  # "out of device memory" (OpenCL, Vulkan, SYCL)
        b"of video memory",  # "out of video memory" (Direct3D, Vulkan)
        b"of host memory",  # "out of host memory" (Vulkan, OpenCL)
        b"of jvm memory",  # Gradle: "Daemon will be stopped ... after running out of JVM memory"
        b"bytes of memory",  # a refusal apart from its verb: "Cannot allocate N bytes of memory"
        b"mem usage",  # Moab: "job N exceeded MEM usage hard limit (2528 > 1126)"
        b"due to memory",  # HTCondor: "put on hold by SYSTEM_PERIODIC_HOLD due to memory usage N"
        b"memory quota",  # Heroku: "Error R15 (Memory quota vastly exceeded)"
        # memory refused by other verbs, or needed beyond what there is: Postgres' "could not
        # map anonymous shared memory", Emscripten's "Cannot enlarge memory arrays", Ollama's
        # "requires more system memory", FreeBSD's "failed to reclaim memory"
        b"shared memory",
        b"enlarge memory",
        b"reserve memory",
        b"commit memory",
        b"reclaim memory",
        b"more memory",
        b"system memory",
        b"memory size",
        b"mem limit",  # "exceeded mem limit: ActiveHard 24 MB" (iOS)
        b"memory budget",  # "Worker exceeded 95% memory budget" (Dask's nanny)
        b"memory usage limit",  # "it reached the memory usage limit" (Memgraph)
        b"provide memory",  # memory refused by its verb: "op. sys. refuses to provide memory"
        b"too much memory",  # a reason: "using too much memory and was terminated"
        b"memory shortage",
        b"lack of memory",
        b"shortage of memory",
        b"short of memory",
        b"host memory",  # "System is out of GPU and shared host memory" (Blender)
        b"memory pool",  # "All memory pool allocations are in use" (Godot)
        b"memory issue",  # "Terminated due to memory issue" (Xcode)
        b"out-of-memory",  # "ERROR: libFuzzer: out-of-memory (used: 2613Mb; limit: 2560Mb)"
        b"out of mem",  # "you run out of mem"
        b"no memory",  # "could not write to lua_shared_dict: no memory" (Kong)
        b"no more memory",
        b"_mem_alloc",  # error codes: Suricata's SC_ERR_MEM_ALLOC
        b"_nomem",
        b"enomem",  # Ruby's "Errno::ENOMEM", alone on its line
        b"_no_mem",
        b"allotted memory",  # "could not be executed in the allotted memory" (BigQuery)
        b"assigned memory",
        b"memory is used up",  # "eventually all the memory is used up" (Box2D's user)
        b"memory was used up",
        b"memory exceeded",  # vcpkg's "Restarting Build without parallelism because memory ..."
    ),
    # TAP's failed test ("not ok "); go test's passed package ("ok  \tpkg\t0.1s", its tab
    # expanded when pasted)
    b"k": (
        b"kill",
        b"stack of",
        b"kv cache",
        b"kvcache",
        b"not ok ",
        b"ok  ",
        b"ok\t",
        b"alarm clock",  # the shell's status for SIGALRM: "line 3: 4242 Alarm clock  ./prog"
    ),
    # "overhead limit exceeded": the JVM's "GC overhead limit exceeded" on a line without
    # "error" or "OutOfMemoryError" (a build tool's one-line summary of the failure).
    # "exception (0x": a .NET exception with its HRESULT ("Win32Exception (0x80004005): The
    # paging file is too small ..."), read for its message.
    b"x": (
        b"exit",
        b"execution time",
        b"execution took",
        b"exhausted",
        b"overhead limit exceeded",
        b"exception (0x",
        b"unexpectedly",  # "build daemon disappeared unexpectedly" (Gradle)
        b"exceeded memory",  # memory crossed, no limit named ("exceeding memory")
        b"exceeding memory",
        b"exceeds memory",
        b"expected equality",  # GoogleTest's "Expected equality of these values:"
        b"by the external",  # "terminated by the external system" (Nextflow)
        b"by an external",
        b"by external",
        # a time limit by its length: "max duration reached for the worker. terminating the
        # worker." (Supabase's edge runtime)
        b"max duration",
        b"maximum duration",
    ),
    b"w": (
        b"node down",
        b"shutdown signal",
        b"crashed while",
        b"crashed worker",
        b"with signal",
        b"lost communication with",  # Azure Pipelines: "The agent: X lost communication with"
        b"we stopped hearing",  # Azure Pipelines: "We stopped hearing from agent X"
        b"out of swap",  # FreeBSD: "was killed: out of swap space", "swap_pager: out of swap"
        b"last few gcs",  # V8's banner as it dies for its heap: "<--- Last few GCs --->"
        b"watchdog got",  # a watchdog fired ("Task watchdog got triggered", ESP-IDF's)
        b"watchdog was",
        b"watchdog has",
        b"watchdog triggered",
        b"watchdog fired",
        b"watchdog expired",
        b"what():",  # the C++ runtime's exception after "terminate called" ("  what():  Panic")
    ),
    # the JVM's detail alone, as Gradle prints a failed task's cause ("> Java heap space")
    b"j": (b"java heap space",),
    b"+": (b"out_of_me+",),  # sacct's State column, cut to its width: "OUT_OF_ME+"
    b"q": (b"requested amount", b"requested size"),  # TensorRT: "was N bytes", tactic "of N"
    # "by signal" (a signal death), "not possible" (XLA: "Attempting to reserve 3.95G ... That
    # was not possible"): under a letter they hold, no pass of their own over each block.
    b"b": (
        b"abort",
        b"bad_alloc",
        b"bad alloc",
        b"liveness probe",
        b"by signal",
        b"not possible",
        b"object heap",  # the JVM's "Could not reserve enough space for object heap"
        b"circuitbreaking",  # Elasticsearch's and OpenSearch's CircuitBreakingException
        b"circuit_breaking",
        b"no output has been",  # Travis: "No output has been received in the last 10m0s"
        # a session ended after using the machine's RAM (Colab's "Your session crashed after
        # using all available RAM"), quoted in a person's sentence
        b"all available ram",
        b"all available memory",  # "has gitui quickly consuming all available memory" (gitui's)
    ),
    b"fa": (b"fail", b"fault"),  # FAILED, Failed: Timeout, *_ALLOC_FAILED; Segmentation fault
    b"error": (b"error",),  # XError:, E-lines, "1 error in", "] Error 137", Error Code N
    b"time": (
        b"timeout +",
        b"timeout  ",  # a result's state in a test runner's columns (Meson's "TIMEOUT   30.16s")
        b"  timeout",
        b"time limit",
        b"operation timeout",
        b"timeout expired",
        # a worker's timeout with its pid ("WORKER TIMEOUT (pid:418)") or its length crossed,
        # then killed ("timeout (31s > 30s), killing", Unicorn's master)
        b"timeout (",
        b"***timeout",
        b"[timeout]",  # a runner's state in brackets (Tcl's "*** [TIMEOUT]: name in file")
        # a time limit's identifier given as the cause ("Session was terminated due to
        # BROWSER_TIMEOUT", a Selenium grid's)
        b"_timeout",
        b"timed out",
        b"timed-out",  # a state as one word ("Job not requeued because: timed-out")
        b"time-out",  # the noun hyphenated ("failed with 'time-out'", cspell's users)
        # a unit of work made to run out of its time ("causes the validation process to
        # timeout"), or the verb in the plural ("bigger tables timeouts ... after 10s")
        b"to timeout",
        b"timeouts",
        b" time out",  # units of work in the plural ("Several tests time out in CI"), "to time out"
        b"times out",  # "The test times out after 60 minutes"
        b"time has",  # "Build execution time has reached the maximum allowed time" (AppVeyor)
        b"timeout of",  # "reached its statement or warehouse timeout of 120 second(s)"
        b"timeoutexception",  # an exception's class (Java's "...concurrent.TimeoutException")
        b"wall time",  # "Walltime exceeded", "wall time limit"
        b"walltime",
        b"maximum runtime",  # "task exceeded its maximum runtime of 2h"
        b"max runtime",
        b"due to timeout",  # "SPARQL Queries not working due to timeout" (DBpedia's chatbot)
        b"due to a timeout",
        b"due over time",  # vcpkg's CI: "osx ci is failed lately due over time after 2 days"
        b"due to over time",
        b"due to overtime",
        b"ran overtime",
        b"ran over time",
        b"went overtime",
        b"went over time",
    ),  # pytest-timeout banner, Slurm DUE TO TIME LIMIT, libcheck's and CTest's timeouts
    b"timing": (b"timing out",),  # "The Go tests ... were occasionally timing out"
    # work that did not start or finish in a stated time ("The emulator did not boot within 300
    # seconds")
    b"within": tuple(
        f"{verb} within".encode()
        for verb in ("start", "started", "finish", "finished", "complete", "completed", "boot")
    ),
    b" passed": (b" passed in", b" passed,", b" passed\x1b"),  # a pytest summary (coloured)
    # a run's summary field stating success ("Status: successful", a build farm's summary)
    b"status": (b"status: succ", b"status: pass", b"status:succ", b"status=succ"),
    b"e   ": (b"e   ",),  # pytest's "E   " lines
    b"oom": (b"oom",),  # OOMKilled, oom-kill, docker "container oom", systemd-oomd
    # a deadline passed: Kubernetes' "DeadlineExceeded", "Job was active longer than specified
    # deadline"
    b"deadline": (b"deadline",),
    b"evict": (b"evicted",),  # a pod evicted ("Warning  Evicted  44s  kubelet  The node was ...")
    # a machine taken back by its platform ("Nodes of this job got pre-empted"), both spellings
    b"empted": tuple(
        f"{was} {pre}empted".encode()
        for was in ("was", "were", "got", "been", "get")
        for pre in ("pre", "pre-")
    ),
    # the code of a SIGKILL after a word other than "exit" ("returned a non-zero code: 137")
    b"137": (
        b"code: 137",
        b"code 137",
        b"code=137",
        b"status: 137",
        b"status 137",
        b"status=137",
        b"errno 137",  # npm's "npm ERR! errno 137"
    ),
    b"cancel": (b"canceled", b"cancelled"),  # "The operation was canceled.", "cancelled after"
    # Chinese's passive "bei" (by), UTF-8: a person's "直到被系统杀死" (until killed by the system)
    "\u88ab".encode(): ("\u88ab".encode(),),
    # a death by a signal worded without "kill" (ninja's "job terminated due to signal 9")
    # ... or one received (the Datadog agent's "received signal 15 (terminated)")
    # ... or sent to a process by its number (Android's "Process : Sending signal. PID: 19752
    # SIG: 9"), or the end's own signal in parentheses ("[Process completed (signal 9) - press
    # Enter]", a terminal emulator's)
    b"signal": (
        b"due to signal",
        b"on signal",
        b"from signal",
        b"received signal",
        b"sending signal",
        b"(signal ",
        b"signal (",  # Julia's runtime: "signal (15): Terminated"
        b"signal=9",  # runit's "finished with code=-1 signal=9"
    ),
    # an allocation refused in words no other needle holds ("classify: unable to allocate hash
    # table memory", kraken2)
    # a refusal in French ("Erreur : impossible d'allouer un vecteur de taille 26.8 Go", R)
    b"allouer": (b"d'allouer",),
    b"allocate": (b"to allocate", b"t allocate"),  # "Can't allocate 129499136 bytes on device 0"
    # clauses only (``CLAUSES``): a shortage, a word or two, then memory
    # RAM and VRAM said short ("out of RAM", "not enough VRAM"); Windows' ERROR_NOT_ENOUGH_MEMORY
    # ("Not enough storage is available to process this command")
    b"out of ": (
        b"out of vram",
        b"out of ram",
        b"out of physical ram",
        b"out of system ram",
        b"out of heap",  # "you are out of heap-space" (SDR++), "out of heap space"
    ),
    b"enough ": (b"enough storage is available", b"enough vram", b"enough ram"),
    b"insufficient ": (b"insufficient vram", b"insufficient ram"),
}
_NAMED = (
    b"memory limit", b"memory quota", b"memory pressure", b"memory budget", b"mem limit",
    b"low memory", b"enough memory", b"insufficient memory", b"of host memory",
    b"of gpu memory", b"of video memory", b"time limit", b"timed out", b"out of swap",
)  # fmt: skip
"""Needles that name a state or an error, as identifiers also write them."""


def _joined(needles: tuple[bytes, ...]) -> tuple[bytes, ...]:
    """``needles``, and each of ``_NAMED`` also joined by underscores and by nothing, as an
    identifier writes it once lowered (``MemoryLimitExceeded``, ``ERR_INSUFFICIENT_MEMORY``,
    ``VK_ERROR_OUT_OF_HOST_MEMORY``): the parser reads such a line with its identifiers spelled
    (:mod:`qualify.evidence.structure`)."""
    out = list(needles)
    for needle in needles:
        if needle in _NAMED:
            out += [
                j for j in (needle.replace(b" ", b"_"), needle.replace(b" ", b"")) if j not in out
            ]
    return tuple(out)


for _anchor in (b"mem", b"time", b"w"):
    GROUPS[_anchor] = _joined(GROUPS[_anchor])
NEEDLES: tuple[bytes, ...] = tuple(n for needles in GROUPS.values() for n in needles)
_CUDA_HIT = b"out of memory. Tried to allocate"
_SAMPLE_BYTES = 16 << 10
_HITS_PER_MIB = 1 << 9
"""Anchor hits per MiB (a Python loop turn each) that cost about as much as one regex pass
over the MiB (``benchmarks/bench_triage.py --log dense``)."""
_NUL_SHARE = 0.3


_ONE_OR_TWO_WORDS = rb"(?:[a-z0-9_-]{1,12} ){1,2}memory\b"
CLAUSES: dict[bytes, bytes] = {
    # a shortage, one or two words, then memory: "not enough GPU memory", "insufficient device
    # memory", "Out of sort memory" (with no word between, they are needles)
    b"out of ": _ONE_OR_TWO_WORDS,
    b"enough ": _ONE_OR_TWO_WORDS,
    b"insufficient ": _ONE_OR_TWO_WORDS,
}
"""Clauses that make a line a candidate besides the needles: memory said to run short with a word
or two between that no needle can list (the device, the pool, the purpose). Each is the regex of
its anchor's group, a pass of its own (``benchmarks/README.md`` has their cost). The parser reads
the same clauses (:data:`qualify.evidence.oom_parts._CLAUSE`)."""


def _group_regex(anchor: bytes, needles: tuple[bytes, ...]) -> re.Pattern[bytes]:
    """``anchor`` then what follows it in each needle, as one trie of those tails (a tail shared
    by many needles is tried once per hit, not once per needle: ``ory limit``, ``ory_limit``,
    ``orylimit``), each needle's part before the anchor checked at its tail's end as a lookbehind
    of the whole needle; then the anchor's clause (``CLAUSES``)."""
    if anchor in needles:
        return re.compile(re.escape(anchor))
    trie: dict[Any, Any] = {}
    for needle in needles:
        at = needle.index(anchor)
        node = trie
        for byte in needle[at + len(anchor) :]:
            node = node.setdefault(byte, {})
        node.setdefault(None, []).append(f"(?<={re.escape(needle).decode()})" if at else "")
    branches = [CLAUSES[anchor].decode()] if anchor in CLAUSES else []
    if trie:
        branches.append(_trie_pattern(trie))
    return re.compile(f"{re.escape(anchor).decode()}(?:{'|'.join(branches)})".encode())


def _trie_pattern(node: dict[Any, Any]) -> str:
    """The regex of a trie of bytes: a chain of single children as one literal."""
    options = []
    ends = node.get(None)
    for byte, node_child in node.items():
        if byte is None:
            continue
        chain, child = bytes([byte]), node_child
        while len(child) == 1 and None not in child:
            ((next_byte, child),) = child.items()
            chain += bytes([next_byte])
        options.append(re.escape(chain).decode() + _trie_pattern(child))
    if ends is not None:
        if "" in ends and not options:
            return ""  # a needle ends here, whatever precedes it
        options.append("" if "" in ends else "|".join(ends))
    if not options:
        return ""
    return options[0] if len(options) == 1 and ends is None else f"(?:{'|'.join(options)})"


_REGEXES = {anchor: _group_regex(anchor, needles) for anchor, needles in GROUPS.items()}
_REACH = {
    anchor: (
        max((n.index(anchor) for n in needles), default=0),
        max((len(n) - n.index(anchor) for n in needles), default=len(anchor)),
    )
    for anchor, needles in GROUPS.items()
}
"""Per anchor: how far a needle reaches before and after it."""


@frozen_record
class Signal:
    """A recognised line and where it was."""

    evidence: Evidence
    signal: LineSignal


@records.record
class ScanResult:
    """Everything a log yielded."""

    source: str
    signals: list[Signal] = records.field(default_factory=list)
    cuda_ooms: list[tuple[Evidence, CudaOom]] = records.field(default_factory=list)
    size_bytes: int = 0
    lines: int = 0
    binary: bool = False
    encoding: str = "utf-8"
    """The file's encoding as read ("utf-16-le", "utf-16-be" when transcoded)."""
    dropped: int = 0
    long_lines: int = 0
    """Lines over MAX_LINE_BYTES that held a needle (read in windows around them)."""
    first_long_line: int | None = None
    error: str | None = None
    headings: list[Signal] = records.field(default_factory=list)
    """What Markdown headings outside a fence say (an issue's ``# Title``), read without their
    ``#`` marks where the line as written gave nothing: weaker than the text's own lines, read
    only when those decide nothing (``qualify.triage.core.triage``)."""

    def of_kind(self, *kinds: str) -> list[Signal]:
        """The signals of these kinds, in file order."""
        return [s for s in self.signals if s.signal.kind in kinds]


@records.record
class _Part:
    """What one process found in its line-aligned byte range; line numbers are relative."""

    lines: int = 0
    """Newlines in the range (a final line without one is not counted, as before)."""
    seen: dict[str, int] = records.field(default_factory=dict)
    """Parsed signals per kind, kept or not."""
    signals: list[tuple[int, str, LineSignal]] = records.field(default_factory=list)
    """(line, text, signal): the first MAX_PER_KIND of each kind."""
    cuda_hits: int = 0
    """Lines holding ``_CUDA_HIT`` that PyTorch's parser read, and every one after the first
    MAX_PER_KIND of those (not read: dropped). One it cannot read is read by its parts."""
    cuda: list[tuple[int, int, str, CudaOom]] = records.field(default_factory=list)
    """(hit index, line, text, parsed): the first MAX_PER_KIND parsed."""
    long_lines: list[int] = records.field(default_factory=list)
    """Line numbers of the long lines read in windows."""
    headings: list[tuple[int, str, LineSignal]] = records.field(default_factory=list)
    """(line, text, signal) of headings read without their marks (``ScanResult.headings``)."""


def _looks_binary(head: bytes) -> bool:
    return b"\x00" in head[:8192]


def utf16_encoding(head: bytes) -> str | None:
    """ "utf-16" (with a BOM), "utf-16-le" or "-be" (NUL bytes on one side of most pairs:
    ASCII text in UTF-16), else None."""
    if head[:2] in (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE):
        return "utf-16"
    sample = head[: len(head) // 2 * 2]
    if len(sample) < 4:
        return None
    pairs = len(sample) // 2
    if sample[1::2].count(0) > pairs * _NUL_SHARE and sample[0::2].count(0) == 0:
        return "utf-16-le"
    if sample[0::2].count(0) > pairs * _NUL_SHARE and sample[1::2].count(0) == 0:
        return "utf-16-be"
    return None


def _transcode(fd: int, encoding: str, out: int) -> None:
    """UTF-16 from ``fd`` to UTF-8 into ``out``, block by block."""
    decoder = codecs.getincrementaldecoder(encoding)(errors="replace")
    at = 0
    while block := os.pread(fd, BLOCK_BYTES, at):
        at += len(block)
        os.write(out, decoder.decode(block).encode("utf-8"))
    os.write(out, decoder.decode(b"", final=True).encode("utf-8"))


def scan_log(path: Path, source: str | None = None, workers: int | None = None) -> ScanResult:
    """Scan ``path``; never raises on content (an unreadable file sets ``error``).

    ``workers``: 1 or 2 processes (default: see ``_default_workers``).
    """
    result = ScanResult(source or str(path))
    try:
        with open_regular(path) as handle:
            fd = handle.fileno()
            result.size_bytes = os.fstat(fd).st_size
            head = os.pread(fd, 8192, 0)
            encoding = utf16_encoding(head)
            if encoding is None:
                result.binary = _looks_binary(head)
                _scan_fd(fd, result, workers)
                return result
            with tempfile.TemporaryFile(prefix="qualify-utf8-") as utf8:
                _transcode(fd, encoding, utf8.fileno())
                result.encoding = encoding if encoding != "utf-16" else _bom_name(head)
                _scan_fd(utf8.fileno(), result, workers)
    except OSError as exc:
        result.error = f"cannot read {path}: {exc.strerror or exc}"
    return result


def _bom_name(head: bytes) -> str:
    return "utf-16-le" if head[:2] == codecs.BOM_UTF16_LE else "utf-16-be"


def _scan_fd(fd: int, result: ScanResult, workers: int | None) -> None:
    size = os.fstat(fd).st_size
    workers = _default_workers(size) if workers is None else workers
    split = _line_boundary(fd, size // 2, size) if workers > 1 else size
    parts = _scan_two(fd, split, size) if split < size else [_scan_range(fd, 0, size)]
    _merge(parts, result)


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
    long_lines: list[int] = []
    for part in parts:
        for line, text, found in part.signals:
            if counts.get(found.kind, 0) < MAX_PER_KIND:
                counts[found.kind] = counts.get(found.kind, 0) + 1
                kept += 1
                evidence = Evidence.of(result.source, line_base + line, text, found.kind)
                result.signals.append(Signal(evidence, found))
        seen += sum(part.seen.values())
        cuda += [(hit_base + h, line_base + n, text, oom) for h, n, text, oom in part.cuda]
        long_lines += [line_base + n for n in part.long_lines]
        for line, text, found in part.headings[: MAX_PER_KIND - len(result.headings)]:
            evidence = Evidence.of(result.source, line_base + line, text, found.kind)
            result.headings.append(Signal(evidence, found))
        line_base += part.lines
        hit_base += part.cuda_hits
    result.lines = line_base
    result.dropped = seen - kept
    result.long_lines = len(long_lines)
    result.first_long_line = long_lines[0] if long_lines else None
    for _, line, text, oom in cuda[:MAX_PER_KIND]:
        result.cuda_ooms.append((Evidence.of(result.source, line, text, "cuda_oom"), oom))
    if len(cuda) >= MAX_PER_KIND:  # every hit after the last kept one was dropped
        result.dropped += hit_base - cuda[MAX_PER_KIND - 1][0] - 1


def _keep(part: _Part, line: int, text: str, found: LineSignal) -> None:
    part.seen[found.kind] = part.seen.get(found.kind, 0) + 1
    if part.seen[found.kind] <= MAX_PER_KIND:
        part.signals.append((line, text, found))


_READ_MEMO = 4096
"""Distinct messages whose reading a scan keeps: a retry loop's line, its header stripped,
is read once ("read timed out, retrying" on every other line of a 1 GB log)."""


def _read(memo: dict[str, LineSignal | None], said: str) -> LineSignal | None:
    """``parse_line`` of ``said`` without its quoting, once per distinct text (a copy of the
    reading, so that no two lines share one)."""
    if said in memo:
        found = memo[said]
        return None if found is None else LineSignal(found.kind, dict(found.fields))
    if len(memo) >= _READ_MEMO:
        memo.clear()
    found = memo[said] = parse_line(unquoted(said))
    return None if found is None else LineSignal(found.kind, dict(found.fields))


def _scan_range(fd: int, start: int, stop: int) -> _Part:
    part = _Part()
    memo: dict[str, LineSignal | None] = {}
    for line, offset, raw in iter_candidates(fd, start, stop, part):
        text = raw.decode("utf-8", errors="replace")
        hit = raw.find(_CUDA_HIT)
        if hit >= 0 and len(part.cuda) >= MAX_PER_KIND:
            part.cuda_hits += 1
            continue
        if hit >= 0:
            before = 0 if hit <= 2 * CUDA_CONTEXT_BEFORE else hit - CUDA_CONTEXT_BEFORE
            context = os.pread(fd, CUDA_CONTEXT_BYTES, offset + before)
            parsed = parse_cuda_oom(messages(context.decode("utf-8", errors="replace")))
            if parsed is not None:
                part.cuda_hits += 1
                part.cuda.append((part.cuda_hits - 1, line, plain(text), parsed))
                continue
            # Not PyTorch's message as its parser knows it (another allocator's words, a cut
            # copy): read by its parts, as any other line.
        hit = raw.find(EXECUTOR_HIT)
        if hit >= 0:
            context = os.pread(fd, 4 << 10, offset + hit)
            _keep(part, line, text, parse_trtllm_executor(context.decode("utf-8", "replace")))
            continue
        # Read as what the program said (``qualify.evidence.headers``: no colour codes, no
        # CI or syslog header; once more without its lead when that says nothing), cited as
        # the line was written, less its colour codes.
        said = message(text)
        record, said = said, structured(said) or said  # (a structured log's message first)
        first = said
        found, led = _read(memo, said), False
        for reading in (body(said), record if record is not said else None):
            if reading is not None and (found is None or found.kind == "memory_noted"):
                again = _read(memo, reading)
                if again is not None and (found is None or again.kind != "memory_noted"):
                    found, said, led = again, reading, reading is not record
        text = plain(text)
        if (found is None or found.kind == "memory_noted") and _HEADING.match(first):
            _heading(fd, offset, raw, line, text, first, part)
        if found is not None and found.kind in CONTEXT_KINDS:
            found, at, cited = _in_context(fd, offset, raw, line, said, found, led)
            _keep(part, at, text if at == line else cited, found)
        elif found is not None and not _in_source(fd, offset, said):
            _keep(part, line, text, found)
    return part


_HEADING = re.compile(r"^[\s>]*#{1,6}\s+(?=\S)")
"""A Markdown heading's marks (``# Title``, ``### Error``), in a quote too (``> # Title``);
BuildKit's ``#5 0.123`` is none."""


def _heading(
    fd: int, offset: int, raw: bytes, line: int, text: str, said: str, part: _Part
) -> None:
    """A heading outside a fence, read without its marks (``ScanResult.headings``): as written,
    ``# ...`` is read as a comment in code, which it is only inside a fence."""
    start = max(0, offset - CONTEXT_BEFORE)
    before = os.pread(fd, offset - start, start)
    if (b"```" in before or b"~~~" in before) and in_fence(
        messages(before.decode("utf-8", errors="replace"))
    ):
        return
    said = _HEADING.sub("", said, count=1)
    found = parse_line(unquoted(said))
    if found is None or found.kind == "memory_noted":
        return
    if found.kind in CONTEXT_KINDS:
        found, at, cited = _in_context(fd, offset, raw, line, said, found, False)
        text = text if at == line else cited
        line = at
    if found.kind != "memory_noted" and len(part.headings) < MAX_PER_KIND:
        part.headings.append((line, text, found))


def _in_source(fd: int, offset: int, text: str) -> bool:
    """Whether the line at ``offset`` is inside a fence opened for a programming language's
    source (``qualify.evidence.oom_parts.in_source``), from at most CONTEXT_BEFORE bytes before
    it."""
    start = max(0, offset - CONTEXT_BEFORE)
    before = os.pread(fd, offset - start, start)
    if b"```" not in before and b"~~~" not in before:
        return False
    return in_source(messages(before.decode("utf-8", errors="replace")), text)


def _in_context(
    fd: int, offset: int, raw: bytes, line: int, text: str, found: LineSignal, led: bool
) -> tuple[LineSignal, int, str]:
    """``found`` read with the lines around it (``qualify.evidence.oom_parts.in_context``):
    at most CONTEXT_BEFORE + CONTEXT_AFTER bytes, read only for such a line; with ``led`` (the
    line read without its lead), the lines around it without theirs."""
    start = max(0, offset - CONTEXT_BEFORE)
    before = os.pread(fd, offset - start, start).decode("utf-8", errors="replace")
    after = os.pread(fd, CONTEXT_AFTER, offset + len(raw) + 1).decode("utf-8", errors="replace")
    before, after = messages(before, led), messages(after, led)
    found, delta, said = in_context(found, text, before, after)
    return found, line + delta, said


def iter_candidates(
    fd: int, start: int, stop: int, part: _Part | None = None, block_bytes: int = BLOCK_BYTES
) -> Iterator[tuple[int, int, bytes]]:
    """(line number from 1, file offset, bytes) of each candidate line, or of each window of a
    candidate line longer than MAX_LINE_BYTES (see ``_windows``).

    ``start`` must be a line start. Lines are whole inside a block unless longer than one
    (then cut into block-sized pieces, each scanned as a line). Sets ``part.lines`` and
    ``part.long_lines``.
    """
    line_no, at = 1, start
    while at < stop:
        block = os.pread(fd, min(block_bytes, stop - at), at)
        if not block:
            break
        end = block.rfind(b"\n") + 1
        if end == 0 or at + len(block) == stop:  # over-long line, or the range's last block
            end = len(block)
        counted_to, line_start, line_stop, window_stop, long = 0, 0, -1, -1, False
        for hit in _needle_hits(block, end):
            if hit >= line_stop:  # the first hit of a line
                line_start = block.rfind(b"\n", 0, hit) + 1
                line_no += block.count(b"\n", counted_to, line_start)
                counted_to = line_start
                line_stop = block.find(b"\n", hit, end)
                line_stop = end if line_stop < 0 else line_stop
                long = line_stop - line_start > MAX_LINE_BYTES
                if not long:
                    yield line_no, at + line_start, block[line_start:line_stop]
                    continue
                if part is not None and line_no not in part.long_lines[-1:]:
                    part.long_lines.append(line_no)
                window_stop = -1
            if not long or hit < window_stop:
                continue  # a short line already given, or a needle inside the last window
            window_start, window_stop = _window(block, hit, line_start, line_stop)
            yield line_no, at + window_start, block[window_start:window_stop]
        line_no += block.count(b"\n", counted_to, end)
        at += end
    if part is not None:
        part.lines = line_no - 1


def _window(block: bytes, hit: int, line_start: int, line_stop: int) -> tuple[int, int]:
    """The piece of a long line read around the needle at ``hit``: WINDOW_BEFORE before it,
    WINDOW_AFTER from it, never across a carriage return (a redrawn progress bar)."""
    start = max(line_start, hit - WINDOW_BEFORE)
    start = max(start, block.rfind(b"\r", start, hit) + 1)
    stop = min(line_stop, hit + WINDOW_AFTER)
    carriage = block.find(b"\r", hit, stop)
    return start, stop if carriage < 0 else carriage


def _needle_hits(block: bytes, end: int) -> list[int]:
    """Sorted offsets in ``block[:end]`` of the anchors of needles found (at least one per
    candidate line, and one per WINDOW_AFTER of a long line).

    ``block.lower()`` and one regex pass per group each cost a pass over the block. A group whose
    anchor is a letter rare enough in a sample of the block is instead found from that
    letter's two cases (``find`` of one byte is memchr), each hit checked in place.
    """
    hits: list[int] = []
    lowered: bytes | None = None
    rare = _rare_letters(block[:_SAMPLE_BYTES])
    for anchor, regex in _REGEXES.items():
        budget = max(64, _HITS_PER_MIB * end >> 20)
        if anchor in rare and _anchored(block, end, anchor, budget, hits):
            continue
        lowered = block[:end].lower() if lowered is None else lowered
        _searched(lowered, end, regex, hits)
    return sorted(set(hits))


def _rare_letters(sample: bytes) -> set[bytes]:
    """The one-letter anchors that occur (either case) in under ~0.05% of ``sample``."""
    limit = len(sample) // 2000
    return {
        anchor
        for anchor in _REGEXES
        if len(anchor) == 1 and sample.count(anchor) + sample.count(anchor.upper()) <= limit
    }


def _searched(lowered: bytes, end: int, regex: re.Pattern[bytes], hits: list[int]) -> None:
    at = 0
    search = regex.search
    while (match := search(lowered, at, end)) is not None:
        hit = match.start()
        hits.append(hit)
        at = _next_from(lowered, hit, end)


def _next_from(data: bytes, hit: int, end: int) -> int:
    """Where to look for the next needle after one at ``hit``: the end of its line, or of its
    window in a long line."""
    stop = min(hit + WINDOW_AFTER, end)
    line_stop = data.find(b"\n", hit, stop)
    stop = stop if line_stop < 0 else line_stop
    carriage = data.find(b"\r", hit, stop)
    return stop if carriage < 0 else carriage


def _anchored(block: bytes, end: int, anchor: bytes, budget: int, hits: list[int]) -> bool:
    """Add the needle hits of ``anchor``'s group found from the letter; False (partial: the
    caller searches the whole block) past ``budget`` letters."""
    regex = _REGEXES[anchor]
    reach_before, reach_after = _REACH[anchor]
    found: list[int] = []
    for variant in (anchor, anchor.upper()):
        at = block.find(variant, 0, end)
        while at >= 0:
            budget -= 1
            if budget < 0:
                return False
            start = max(0, at - reach_before)
            piece = block[start : at + reach_after].lower()
            if regex.match(piece, at - start) is not None:
                found.append(at)
                at = _next_from(block, at, end) - 1
            at = block.find(variant, at + 1, end)
    hits.extend(found)
    return True
