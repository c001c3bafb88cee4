"""Append-only event and parity writers shared by every harness entry point.

One ``os.write`` per event on an ``O_APPEND`` descriptor: lines from several processes of the
same run (pytest-xdist workers, subprocesses) never interleave, and after a SIGKILL at most the
last line is truncated, which the host tolerates. A completed ``write()`` survives the SIGKILL
of its writer (the data is in the kernel's page cache, which the host reads), so events are
not fsynced by default: only the few whose loss in a machine crash would matter (a session's
collection and end, phase boundaries, recorded cases) pass ``durable=True``; the per-test
events of the pytest plugin never do.
"""

from __future__ import annotations

import _thread
import errno
import os
import time

from harness import contract
from harness.contract import ENV_EVENTS

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

_lock = _thread.allocate_lock()
"""(``threading.Lock`` itself: this module loads in processes that never import threading.)"""
_fds: dict[tuple[int, str], int] = {}
_seq = [0]
_pid = [os.getpid()]
"""This process's id, renewed in a forked child: ``os.getpid()`` is a system call, and the
pytest plugin stamps four lines a test."""


def _renew_pid() -> None:
    _pid[0] = os.getpid()


os.register_at_fork(after_in_child=_renew_pid)


def _fd_for(pid: int, path: str) -> int:
    # Re-open after fork: a descriptor inherited from the parent is shared, which is fine
    # for O_APPEND, but the cache is keyed per process to keep ownership obvious.
    fd = _fds.get((pid, path))
    if fd is None:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)
        _fds[(pid, path)] = fd
    return fd


_STORAGE_ERRORS = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO)


def _append(path: str, record: dict[str, Any], durable: bool) -> None:
    pid = _pid[0]
    record.setdefault("t", time.time())
    record.setdefault("mono", time.monotonic())
    record.setdefault("pid", pid)
    _write(path, pid, contract.encode_line(record), durable)


def _write(path: str, pid: int, line: bytes, durable: bool) -> None:
    with _lock:
        try:
            fd = _fd_for(pid, path)
            os.write(fd, line)
            if durable:
                os.fsync(fd)
        except OSError as exc:
            # A full disk is qualify's problem, not the family's: the host's own writes fail
            # too and the run is judged ERROR; the E2E must not fail because of it.
            if exc.errno not in _STORAGE_ERRORS:
                raise


def emit(record: dict[str, Any], durable: bool = False) -> None:
    """Append one event to the run's events file; no-op outside a qualify run.

    ``durable``: fsync it too (for the rare events a machine crash must not lose; an fsync
    can cost more than a test of a large suite).
    """
    path = os.environ.get(ENV_EVENTS)
    if path:
        _append(path, record, durable)


def emit_to(path: str, record: dict[str, Any], durable: bool = False) -> None:
    """``emit`` to an events file the caller looked up once (the pytest plugin's hot path)."""
    _append(path, record, durable)


def emit_test_start(
    path: str, when: str, nodeid: str, location: tuple[str, int | None] | None = None
) -> None:
    """``emit_to`` of a test phase's start line (``contract.encode_test_start``)."""
    pid = _pid[0]
    line = contract.encode_test_start(when, nodeid, (time.time(), time.monotonic(), pid), location)
    _write(path, pid, line, False)


def emit_test_end(path: str, when: str, nodeid: str, outcome: str, duration: float) -> None:
    """``emit_to`` of a test's end line without failure text (``contract.encode_test_end``)."""
    pid = _pid[0]
    line = contract.encode_test_end(
        when, nodeid, outcome, duration, (time.time(), time.monotonic(), pid)
    )
    _write(path, pid, line, False)


def sync_point(record: dict[str, Any]) -> None:
    """Emit a durable boundary event and wait until the host has taken its measurement.

    The host reads and resets the cgroup's memory watermark at every boundary, then writes the
    boundary's sequence number to the ack file. Waiting for it makes per-phase peaks exact for
    this process: nothing it allocates after the boundary is charged to the earlier phase.
    """
    path = os.environ.get(ENV_EVENTS)
    if not path:
        return
    with _lock:
        _seq[0] += 1
        seq = _seq[0]
    token = f"{_pid[0]}:{seq}"
    record["sync"] = token
    _append(path, record, durable=True)
    ack = os.environ.get(contract.ENV_PHASE_ACK)
    if ack:
        _wait_for_ack(ack, token, float(os.environ.get(contract.ENV_PHASE_ACK_TIMEOUT, "5")))


def _wait_for_ack(ack_path: str, token: str, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    delay = 0.001
    while time.monotonic() < deadline:
        try:
            with open(ack_path, encoding="utf-8") as handle:
                if token in handle.read().split():
                    return
        except FileNotFoundError:
            pass
        time.sleep(delay)
        delay = min(delay * 2, 0.01)
    emit({"event": contract.ACK_TIMEOUT, "sync": token})


def record_case(
    case_id: str,
    *,
    side: str,
    token_ids: Sequence[int],
    text: str,
    top_logprobs: Sequence[Sequence[Sequence[Any]]],
    token_texts: Sequence[str] | None = None,
    prompt: str | None = None,
    eos: bool = False,
) -> None:
    """Append one recorded generation to the run's parity file (compared on the host after the run).

    ``top_logprobs`` holds, per generated step, the top-k ``(token_id, logprob[, text])``
    entries best first; ``token_texts`` the decoded text of each generated token.
    """
    if side not in ("native", "reference"):
        raise ValueError(f"side must be 'native' or 'reference', not {side!r}")
    path = os.environ.get(contract.ENV_PARITY)
    if not path:
        return
    record: dict[str, Any] = {
        "event": contract.CASE,
        "case_id": str(case_id),
        "side": side,
        "prompt": prompt,
        "token_ids": [int(token) for token in token_ids],
        "token_texts": list(token_texts) if token_texts is not None else None,
        "text": text,
        "top_logprobs": [[list(entry) for entry in step] for step in top_logprobs],
        "eos": bool(eos),
    }
    _append(path, record, durable=True)
    emit({"event": contract.CASE, "case_id": str(case_id), "side": side, "tokens": len(token_ids)})


def record_forced(
    case_id: str,
    *,
    role: str,
    forced_ids: Sequence[int],
    top_logprobs: Sequence[Sequence[Sequence[Any]]],
    logit_noise: Sequence[float] | None = None,
) -> None:
    """Append one teacher-forced view of a case to the run's parity file.

    ``forced_ids`` are the reference's generated tokens the runtime was fed; ``top_logprobs``
    holds, per position, the runtime's top-k ``(token_id, logprob)`` before the token at that
    position was fed. ``role`` is ``teacher`` (the engine) or ``noise`` (the reference in the
    engine's precision); ``logit_noise`` (noise only) the spread, per position, of its
    log-probabilities minus the FP32 reference's over the vocabulary.
    """
    if role not in contract.FORCED_ROLES:
        raise ValueError(f"role must be one of {contract.FORCED_ROLES}, not {role!r}")
    path = os.environ.get(contract.ENV_PARITY)
    if not path:
        return
    record: dict[str, Any] = {
        "event": contract.FORCED,
        "case_id": str(case_id),
        "role": role,
        "forced_ids": [int(token) for token in forced_ids],
        "top_logprobs": [[list(entry) for entry in step] for step in top_logprobs],
        "logit_noise": None if logit_noise is None else [float(value) for value in logit_noise],
    }
    _append(path, record, durable=True)
