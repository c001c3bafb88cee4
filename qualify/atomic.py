"""Atomic writes: a reader sees the old file or the new one, never half of one."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any


def _umask() -> int:
    # Read, not set-and-restore: os.umask(0) would briefly affect every thread's new files.
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("Umask:"):
            return int(line.split()[1], 8)
    return 0o022


def write_bytes_atomic(
    path: Path, data: bytes, *, durable: bool = True, private: bool = False
) -> None:
    """Write to a temp file in the same directory and rename it over ``path``: a reader sees the
    old file or the new one, whole, even if the writer is killed (the page cache belongs to the
    kernel). ``durable`` also fsyncs the file and the directory, so that the new file survives
    a crash of the machine: for the run's own records, not for what is derived from them.
    ``private``: readable by the owner only (mode 0600)."""
    descriptor, temp_name = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        # mkstemp creates 0600; reports are meant to be read like any other file.
        os.fchmod(descriptor, 0o600 if private else 0o644 & ~_umask())
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(data)
            handle.flush()
            if durable:
                os.fsync(handle.fileno())
        os.replace(temp_name, path)
    except BaseException:
        Path(temp_name).unlink(missing_ok=True)
        raise
    if durable:
        fsync_directory(path.parent)


def fsync_directory(path: Path) -> None:
    """fsync a directory: the renames and creations inside it survive a crash of the machine."""
    directory = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)


def write_json_atomic(path: Path, document: Any, *, if_changed: bool = False) -> None:
    """Pretty, stable JSON (sorted keys), written atomically; ``if_changed``: not written again
    when the file already holds exactly these bytes."""
    text = json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False, default=str)
    data = (text + "\n").encode()
    if if_changed:
        try:
            if path.read_bytes() == data:
                return
        except OSError:
            pass
    write_bytes_atomic(path, data)
