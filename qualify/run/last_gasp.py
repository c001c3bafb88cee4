"""The last gasp: what every process of the run was doing as its memory neared the cap.

When the run's usage crosses a threshold below the cap (``THRESHOLDS``), qualify reads each of
its processes (name, state, RSS, kernel wait channel, command line) and asks each Python
process of the E2E for its stacks: the harness registered ``contract.STACK_SIGNAL`` with
faulthandler, which writes every thread's stack from C as soon as the signal is delivered,
even in the middle of an allocation, so the stack is the allocating line. Each dump goes to the
run's ``STACKS`` file after a header line qualify writes; qualify waits for it (``DUMP_WAIT_S``
at most per process) and parses the frames.

The threshold is a kernel notification where there is one (cgroup v1 ``cgroup.event_control``
on ``memory.usage_in_bytes``, an eventfd a thread blocks on: nothing runs while memory stays
low), so a spike that goes from half the cap to the kill in a tenth of a second is still
caught on its way up; elsewhere (cgroup v2, docker) the monitor's samples call ``observe``.
A threshold captures once on each climb: it is armed again when usage falls ``HYSTERESIS`` of
the cap below it (a run that loads a model near the cap, frees part of it, and dies later in
another phase gets its last climb captured), at most once per ``MIN_INTERVAL_S``; the last
``KEEP`` captures are kept. A signal goes only to a process of the run whose
``SigCgt`` shows the signal caught (the harness's handler is there): never to one it would kill.
"""

from __future__ import annotations

import collections
import contextlib
import functools
import os
import re
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harness import contract
from qualify import cuts, records
from qualify.records import frozen_record
from qualify.untrusted import append_regular, open_regular_fd

THRESHOLDS = (0.85, 0.95, 0.99)
"""Shares of the cap at which a capture is made, on the way up: the last one as near the kill
as a slow climb allows, the first ones early enough for a spike."""
HYSTERESIS = 0.03
"""How far (a share of the cap) usage must fall under a threshold to arm it again."""
MIN_INTERVAL_S = 1.0
"""The shortest time between two captures at one threshold (a run hovering at the cap pays
at most a few milliseconds a second)."""
KEEP = 4
"""Captures kept: the last ones, those nearest the end."""
DUMP_WAIT_S = 0.02
"""How long a process's dump is waited for (a quiet file for ``QUIET_S`` ends the wait):
faulthandler writes it from the signal handler in one burst."""
QUIET_S = 0.001
POLL_S = 0.0002
ALLOCATOR_WAIT_S = 0.05
"""How long the allocator state line of a process that holds a GPU open is waited for after
its stack: faulthandler writes the stack from C at once, while the Python handler that reads
torch's allocator runs only when the allocation in progress returns to the interpreter (a
32 MiB host allocation on an H200 machine returned too late for ``DUMP_WAIT_S``)."""
GPU_DEVICE_FILES = ("/dev/nvidia", "/dev/kfd", "/dev/dri/renderD", "/dev/accel")
"""Open device files of a process with a GPU context (NVIDIA, ROCm, Intel, other accelerators)."""
MAX_FDS = 1024
MAX_PROCESSES = 32
"""Processes read per capture."""
MAX_STACKS = 6
"""Processes asked for their stacks per capture: the largest by RSS (the allocating one is
among them), so that a capture stays within tens of milliseconds whatever the number of
workers."""
MAX_FRAMES = 32
MAX_DUMP_BYTES = 64 << 10


@functools.cache
def _frame() -> re.Pattern[str]:
    return re.compile(r'^\s+File "(.*)", line (\d+) in (.+?)\s*$')


@frozen_record
class Frame:
    """One frame of a Python stack: innermost first."""

    file: str = ""
    line: int = 0
    function: str = ""


@frozen_record
class GaspProcess:
    """One process of the run at the capture."""

    pid: int = 0
    name: str = ""
    state: str = ""
    rss_bytes: int = 0
    wchan: str = ""
    """The kernel function it sleeps in ("" running, "0" none)."""
    cmdline: str = ""
    stack: list[Frame] = records.field(default_factory=list)
    """The thread that was running Python code when the signal came (innermost frame first);
    empty when it is not a Python process of the E2E or did not answer in time."""
    allocator: dict[str, int | None] = records.field(default_factory=dict)
    """The CUDA caching allocator's totals, where torch had CUDA up and answered in time."""


@frozen_record
class LastGaspRecord:
    """One capture."""

    trigger: str = ""
    """"kernel threshold" (a cgroup notification) or "sample" (the monitor's reading)."""
    at_s: float = 0.0
    """Seconds since the run's monitor started."""
    usage_bytes: int | None = None
    limit_bytes: int | None = None
    elapsed_ms: float = 0.0
    """How long the capture took."""
    processes: list[GaspProcess] = records.field(default_factory=list)


def _proc(pid: int, name: str, limit: int = 4096) -> str:
    try:
        with open(f"/proc/{pid}/{name}", "rb") as handle:
            return handle.read(limit).decode("utf-8", "replace")
    except OSError:
        return ""


def _status(pid: int) -> dict[str, str]:
    fields = {}
    for line in _proc(pid, "status", 8192).splitlines():
        key, _, value = line.partition(":")
        fields[key] = value.strip()
    return fields


def _catches(status: dict[str, str], signal_number: int) -> bool:
    try:
        return bool(int(status.get("SigCgt", "0"), 16) >> (signal_number - 1) & 1)
    except ValueError:
        return False


def _rss(status: dict[str, str]) -> int:
    value = status.get("VmRSS", "0 kB").split()
    return int(value[0]) * 1024 if value and value[0].isdigit() else 0


def parse_dump(text: str) -> tuple[list[Frame], dict[str, int | None]]:
    """The frames of the thread that ran the handler ("Current thread"; else the first
    thread's), innermost first, and the allocator state line, from one process's dump."""
    threads: list[tuple[bool, list[Frame]]] = []
    allocator: dict[str, int | None] = {}
    for line in text.splitlines():
        if line.startswith(("Current thread", "Thread 0x", "Stack (most recent call first)")):
            threads.append((not line.startswith("Thread 0x"), []))  # one thread's own: "Stack"
        elif (match := _frame().match(line)) and threads and len(threads[-1][1]) < MAX_FRAMES:
            threads[-1][1].append(
                Frame(cuts.tail(match[1], 300), int(match[2]), cuts.head(match[3], 200))
            )
        elif line.startswith(contract.TORCH_STATE):
            allocator = _allocator(line[len(contract.TORCH_STATE) :])
    return _allocating_thread(threads), allocator


_WAITING_FILES = ("/threading.py", "/queue.py", "/selectors.py", "/socket.py", "/subprocess.py",
                  "/connection.py", "/synchronize.py", "/selector_events.py")  # fmt: skip
"""The standard library's waits: a thread whose innermost frame is in one is not allocating."""


def _waiting(frames: list[Frame]) -> bool:
    return bool(frames) and frames[0].file.endswith(_WAITING_FILES)


def _allocating_thread(threads: list[tuple[bool, list[Frame]]]) -> list[Frame]:
    """The thread that was allocating: the one that ran the handler (the kernel delivers the
    signal to a thread that is running, in preference) unless it was waiting (a main thread
    joining the worker that allocates), else the first thread not waiting."""
    ordered = sorted(threads, key=lambda thread: not thread[0])  # the current one first
    busy = [frames for _, frames in ordered if frames and not _waiting(frames)]
    if busy:
        return busy[0]
    return ordered[0][1] if ordered else []


def _threads_to_ask(pid: int) -> list[int]:
    """The main thread alone. A thread that takes the signal dumps its own stack; a thread
    other than the main one may be ending as it does (its state freed under the dump: a
    SIGSEGV, seen once in 1,000 captures of a process whose threads come and go), and the main
    thread does not end while the process runs. A worker thread's allocation is then seen as
    the main thread waiting for it (``allocation_point`` names no line)."""
    return [pid]


def _signal_thread(pid: int, tid: int, signal_number: int) -> None:
    """``tgkill``: the signal to that thread of ``pid`` alone. Without it (a libc older than
    glibc 2.30) nothing is sent: the kernel would pick any thread for ``kill``."""
    tgkill = _tgkill()
    if tgkill is None:
        raise ProcessLookupError(pid)
    if tgkill(pid, tid, signal_number) != 0:
        raise ProcessLookupError(pid)


_TGKILL: list[Any] = []


def _tgkill() -> Any:
    if not _TGKILL:
        import ctypes

        function = getattr(ctypes.CDLL(None, use_errno=True), "tgkill", None)  # glibc 2.30+
        if function is not None:
            function.argtypes = (ctypes.c_int, ctypes.c_int, ctypes.c_int)
        _TGKILL.append(function)
    return _TGKILL[0]


def _allocator(text: str) -> dict[str, int | None]:
    import json

    try:
        document = json.loads(text[:4096])
        cuda = document.get("cuda", {}) if isinstance(document, dict) else {}
    except ValueError:
        return {}
    if not isinstance(cuda, dict):
        return {}
    return {str(k)[:64]: v if isinstance(v, int) else None for k, v in list(cuda.items())[:8]}


def holds_gpu(pid: int) -> bool:
    """Whether ``pid`` has a GPU device file open (its first ``MAX_FDS`` descriptors)."""
    try:
        names = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return False
    for name in names[:MAX_FDS]:
        try:
            target = os.readlink(f"/proc/{pid}/fd/{name}")
        except OSError:
            continue
        if target.startswith(GPU_DEVICE_FILES):
            return True
    return False


class LastGasp:
    """Captures of one run (thread-safe: the notification thread and the monitor both call
    ``capture``)."""

    def __init__(
        self,
        run_dir: Path,
        pids: Callable[[], list[int]],
        limit_bytes: int,
        memory_cgroup: Path | None = None,
        origin_mono: float | None = None,
        find_cgroup: Callable[[], Path | None] | None = None,
    ):
        self.run_dir = run_dir
        self.pids = pids
        self.limit_bytes = limit_bytes
        self.captures: collections.deque[LastGaspRecord] = collections.deque(maxlen=KEEP)
        self.taken = 0
        """Captures made over the run (the last ``KEEP`` are kept)."""
        self.problems: list[str] = []
        self._origin = origin_mono if origin_mono is not None else time.monotonic()
        self._lock = threading.Lock()
        self._fired: set[float] = set()
        self._last_at: dict[float, float] = {}
        self._eventfd: int | None = None
        self._usage_fd: int | None = None
        self._thread: threading.Thread | None = None
        self._armed = threading.Event()
        self._closed = False
        self._find_cgroup = find_cgroup
        """Where the memory cgroup is known only once the E2E runs (a container's): armed at
        the first sample that finds it."""
        if memory_cgroup is not None:
            self._find_cgroup = None
            self._arm(memory_cgroup)

    def _arm(self, cgroup: Path) -> None:
        """Kernel notifications at each threshold (cgroup v1), registered by the thread that
        waits for them: each registration waits for an RCU grace period of the kernel (about
        10 ms of wall time, no CPU), which the run's start does not wait for. The monitor's
        samples stand in where they cannot be had."""
        control = cgroup / "cgroup.event_control"
        usage = cgroup / "memory.usage_in_bytes"
        if not (control.exists() and usage.exists()):
            return
        self._thread = threading.Thread(
            target=self._arm_and_wait, args=(control, usage), name="qualify-last-gasp",
            daemon=True,
        )  # fmt: skip
        self._thread.start()

    def _arm_and_wait(self, control: Path, usage: Path) -> None:
        try:
            self._eventfd = os.eventfd(0, os.EFD_CLOEXEC)
            self._usage_fd = os.open(usage, os.O_RDONLY | os.O_CLOEXEC)
            for share in THRESHOLDS:
                with open(control, "w") as handle:
                    handle.write(
                        f"{self._eventfd} {self._usage_fd} {int(self.limit_bytes * share)}"
                    )
        except OSError as exc:
            self.problems.append(f"last-gasp thresholds not armed ({exc}): samples stand in")
            self._close_fds()
            return
        self._armed.set()
        self._wait()

    def _wait(self) -> None:
        while not self._closed:
            try:
                os.read(self._eventfd, 8)  # type: ignore[arg-type]
            except OSError:
                return
            if self._closed or self._usage_fd is None:
                return
            try:
                usage = int(os.pread(self._usage_fd, 32, 0))
            except (OSError, ValueError):
                continue
            self.observe(usage, "kernel threshold")

    @property
    def armed(self) -> bool:
        """True when the kernel notifies the thresholds."""
        return self._armed.is_set()

    def observe(self, usage: int | None, trigger: str = "sample") -> None:
        """A capture when ``usage`` has crossed a threshold not yet captured (on the way up)."""
        if self._find_cgroup is not None and not self._closed:
            found = self._find_cgroup()
            if found is not None:
                self._find_cgroup = None
                with self._lock:
                    self._arm(found)
        if usage is None or self.limit_bytes <= 0:
            return
        fallen = {s for s in self._fired if usage < (s - HYSTERESIS) * self.limit_bytes}
        if fallen:
            with self._lock:
                self._fired -= fallen
        crossed = [share for share in THRESHOLDS if usage >= share * self.limit_bytes]
        if not crossed or crossed[-1] in self._fired:
            return
        with self._lock:
            top = crossed[-1]
            now = time.monotonic()
            if top in self._fired or now - self._last_at.get(top, -MIN_INTERVAL_S) < MIN_INTERVAL_S:
                return
            self._fired.update(crossed)
            self._last_at[top] = now
            self._capture(usage, trigger)

    def _capture(self, usage: int, trigger: str) -> None:
        started = time.monotonic()
        self.taken += 1
        readings = []
        for pid in self.pids()[: MAX_PROCESSES * 4]:
            status = _status(pid)
            if status:
                readings.append((pid, status))
        readings.sort(key=lambda item: _rss(item[1]), reverse=True)
        processes = []
        asked = 0
        for pid, status in readings[:MAX_PROCESSES]:
            stack: list[Frame] = []
            allocator: dict[str, int | None] = {}
            if asked < MAX_STACKS and _catches(status, contract.STACK_SIGNAL):
                asked += 1
                stack, allocator = self._dump(pid)
            processes.append(
                GaspProcess(
                    pid=pid,
                    name=status.get("Name", "")[:64],
                    state=status.get("State", "")[:32],
                    rss_bytes=_rss(status),
                    wchan=_proc(pid, "wchan", 128).strip(),
                    cmdline=cuts.head(_proc(pid, "cmdline").replace("\0", " ").strip(), 1000),
                    stack=stack,
                    allocator=allocator,
                )
            )
        elapsed = (time.monotonic() - started) * 1000
        self.captures.append(
            LastGaspRecord(
                trigger=trigger,
                at_s=round(started - self._origin, 4),
                usage_bytes=usage,
                limit_bytes=self.limit_bytes,
                elapsed_ms=round(elapsed, 2),
                processes=processes,
            )
        )

    def _dump(self, pid: int) -> tuple[list[Frame], dict[str, int | None]]:
        """Ask ``pid``'s busiest threads for their own stacks, one after the other (each
        dumps the thread it runs on: dumping the others, faulthandler's ``all_threads``, reads
        their frames unlocked and crashes a process whose threads are being torn down); the
        thread that was allocating among them (``_allocating_thread``)."""
        path = self.run_dir / contract.STACKS
        texts = []
        try:
            first = path.stat().st_size
        except OSError:
            first = None
        for tid in _threads_to_ask(pid):
            header = f"{contract.STACKS_HEADER} {self.taken} pid {pid} tid {tid} ===\n"
            text = self._ask(path, header, pid, tid)
            if text is not None:  # (None: that thread ended meanwhile, or the file is gone)
                texts.append(text)
        threads: list[tuple[bool, list[Frame]]] = []
        allocator: dict[str, int | None] = {}
        for text in texts:
            frames, state = parse_dump(text)
            threads.append((True, frames))
            allocator = allocator or state
        if not allocator and texts and first is not None and holds_gpu(pid):
            allocator = self._allocator_line(path, first, pid)
        return _allocating_thread(threads), allocator

    def _allocator_line(self, path: Path, start: int, pid: int) -> dict[str, int | None]:
        """``pid``'s allocator state line written after ``start`` in the stacks file, waited
        for up to ``ALLOCATOR_WAIT_S``; empty when it does not come."""
        marker = f'{contract.TORCH_STATE}{{"pid": {pid},'.encode()
        try:
            descriptor = open_regular_fd(path)
        except OSError:
            return {}
        try:
            deadline = time.monotonic() + ALLOCATOR_WAIT_S
            while True:
                size = os.fstat(descriptor).st_size
                data = os.pread(descriptor, min(max(size - start, 0), MAX_DUMP_BYTES), start)
                at = data.find(marker)
                if at >= 0 and data.find(b"\n", at) >= 0:
                    line = data[at : data.index(b"\n", at)].decode("utf-8", "replace")
                    return _allocator(line[len(contract.TORCH_STATE) :])
                if time.monotonic() >= deadline:
                    return {}
                time.sleep(POLL_S * 5)
        except OSError:
            return {}
        finally:
            os.close(descriptor)

    def _ask(self, path: Path, header: str, pid: int, tid: int) -> str | None:
        """What thread ``tid`` of ``pid`` wrote after our header within DUMP_WAIT_S; None when
        the file or the process is gone."""
        try:
            append_regular(path, header.encode())
            descriptor = open_regular_fd(path)
        except OSError:
            return None
        try:
            start = size = os.fstat(descriptor).st_size
            _signal_thread(pid, tid, contract.STACK_SIGNAL)
            deadline = changed = time.monotonic()
            deadline += DUMP_WAIT_S
            while time.monotonic() < deadline:
                time.sleep(POLL_S)
                now = os.fstat(descriptor).st_size
                if now != size:
                    size, changed = now, time.monotonic()
                elif size > start and time.monotonic() - changed >= QUIET_S:
                    break
            data = os.pread(descriptor, min(max(size - start, 0), MAX_DUMP_BYTES), start)
        except OSError:
            return None
        finally:
            os.close(descriptor)
        return data.decode("utf-8", "replace").split(contract.STACKS_HEADER, 1)[0]

    def close(self) -> list[LastGaspRecord]:
        """Stop listening; the captures made."""
        self._closed = True
        if self._eventfd is not None:
            with contextlib.suppress(OSError):
                os.eventfd_write(self._eventfd, 1)  # wakes the thread, which sees closed
        if self._thread is not None:
            self._thread.join(timeout=1.0)
        self._close_fds()
        with self._lock:
            return list(self.captures)

    def _close_fds(self) -> None:
        for fd in (self._eventfd, self._usage_fd):
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self._eventfd = self._usage_fd = None

    def to_dicts(self) -> list[dict[str, Any]]:
        """The captures as JSON."""
        return [records.asdict(capture) for capture in self.captures]


_LIBRARY = ("/site-packages/", "/dist-packages/", "/lib/python3", "/lib64/python3", "<frozen ",
            "/harness/", "/_pytest/", "/pluggy/", "<string>")  # fmt: skip
"""Frames of the interpreter, installed packages and the test runner: not the family's code."""


def _family_frame(frame: Frame) -> bool:
    return not any(part in frame.file for part in _LIBRARY)


_MEMORY_WAITS = ("mem", "oom", "charge", "reclaim", "page", "folio", "throttle", "compact",
                 "swap", "alloc", "balance_dirty")  # fmt: skip
"""Parts of the kernel functions a task sleeps in while it waits for memory."""


def _sleeping_by_choice(process: GaspProcess) -> bool:
    """Asleep in an interruptible wait that is not for memory (a timer, a futex, a poll, a
    pipe): the process was not allocating at the capture."""
    wchan = process.wchan.lower()
    return process.state.startswith("S") and not any(part in wchan for part in _MEMORY_WAITS)


def _largest_with_stack(capture: LastGaspRecord) -> GaspProcess | None:
    with_stack = [p for p in capture.processes if p.stack]
    return max(with_stack, key=lambda p: p.rss_bytes) if with_stack else None


def allocation_point(captures: list[LastGaspRecord]) -> dict[str, Any] | None:
    """Where the run was allocating as it neared its cap, from the last capture with a stack:
    the largest process that gave one, its innermost frame in the family's own code (with the
    library frame it was in, when deeper) and the test that called it; None without one."""
    chosen: list[tuple[LastGaspRecord, GaspProcess]] = []
    for capture in reversed(captures):
        process = _largest_with_stack(capture)
        if process is not None:
            chosen.append((capture, process))
    # A capture comes just after usage crossed a threshold; the process may have gone on to a
    # sleep of its own choosing by then (a test that allocates, then sleeps): its stack is the
    # sleep, not the allocation. The last capture that found it running (or waiting for
    # memory) is the one that shows the allocating line.
    at_work = [(c, p) for c, p in chosen if not _sleeping_by_choice(p)]
    for capture, process in (at_work or chosen)[:1]:
        if _waiting(process.stack):
            waited = process.stack[0]
            test = next((f for f in process.stack if f.function.startswith("test")), None)
            return {
                "waiting": f"{waited.function} ({waited.file.rsplit('/', 1)[-1]}:{waited.line})",
                "function": waited.function, "file": waited.file, "line": waited.line,
                "test": test.function if test else None, "pid": process.pid,
                "process": process.name, "rss_bytes": process.rss_bytes,
                "usage_bytes": capture.usage_bytes, "limit_bytes": capture.limit_bytes,
                "at_s": capture.at_s,
            }  # fmt: skip
        own = [frame for frame in process.stack if _family_frame(frame)]
        site = own[0] if own else process.stack[0]
        test = next((f for f in process.stack if f.function.startswith("test")), None)
        found: dict[str, Any] = {
            "function": site.function,
            "file": site.file,
            "line": site.line,
            "pid": process.pid,
            "process": process.name,
            "rss_bytes": process.rss_bytes,
            "usage_bytes": capture.usage_bytes,
            "limit_bytes": capture.limit_bytes,
            "at_s": capture.at_s,
        }
        inner = process.stack[0]
        if inner is not site:
            found["inside"] = f"{inner.function} ({inner.file.rsplit('/', 1)[-1]}:{inner.line})"
        if test is not None and test is not site:
            found["test"] = test.function
        if process.allocator:
            found["allocator"] = dict(process.allocator)
        return found
    return None


def allocation_words(site: dict[str, Any]) -> str:
    """ "while `grow_kv_cache` (engine_core.py:11) was allocating, called from test_decode,
    in phase build:decode, at 380 MiB of the 400 MiB cap" (from ``allocation_point``)."""
    where = f"`{site['function']}` ({str(site['file']).rsplit('/', 1)[-1]}:{site['line']})"
    words = f"while {where} was allocating"
    if site.get("waiting"):
        words = (
            f"while the main thread of {site['process']} (pid {site['pid']}) waited in "
            f"`{site['waiting']}`: another of its threads was allocating (only the main "
            "thread is asked for its stack)"
        )
    if site.get("inside"):
        words += f" (in {site['inside']})"
    if site.get("test"):
        words += f", called from {site['test']}"
    if site.get("phase"):
        words += f", in phase {site['phase']}"
    from qualify.sizes import format_bytes

    usage, limit = site.get("usage_bytes"), site.get("limit_bytes")
    if usage and limit:
        words += f", at {format_bytes(usage)} of the {format_bytes(limit)} cap"
    allocator = site.get("allocator") or {}
    allocated = allocator.get("allocated_bytes.all.current")
    reserved = allocator.get("reserved_bytes.all.current")
    if isinstance(allocated, int) and isinstance(reserved, int):
        words += (
            f"; its CUDA caching allocator held {format_bytes(allocated)} allocated "
            f"({format_bytes(reserved)} reserved) on the device"
        )
    return words


def phase_at(windows: Any, mono: float) -> str | None:
    """The innermost phase (``PhaseWindow``) open at ``mono``: the latest started."""
    open_then = [
        w for w in windows if w.start_mono <= mono and (w.end_mono is None or w.end_mono >= mono)
    ]
    return max(open_then, key=lambda w: w.start_mono).name if open_then else None
