"""Reading files of a run directory, which the family under test writes: untrusted input.

The E2E may leave anything under a run directory's names: a named pipe (``open`` would wait
for a writer forever), a device, a symbolic link out of the directory, a 64 GiB sparse file.
Every reader of a run-directory file goes through this module: a file is opened only when it
is a regular file (``lstat`` first, then ``O_NONBLOCK | O_NOFOLLOW`` and ``fstat`` on the open
descriptor, so that a name swapped between the two is caught), and every read is bounded in
size. What is refused, and why, is a ``Refusal``; ``survey`` lists them for the audit.
"""

from __future__ import annotations

import errno
import os
import re
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from qualify.records import frozen_record

CHUNK_BYTES = 1 << 20
"""What one read of ``iter_chunks`` asks for."""

READ_LIMIT_BYTES = 256 << 20
"""The most a reader of a run-directory file reads into memory (events, timeline, parity
records, logs, JUnit, the files published): beyond it a file is read in part or withheld."""

_KINDS = (
    (stat.S_ISFIFO, "a named pipe"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISLNK, "a symbolic link"),
)


@frozen_record
class Refusal:
    """A file of the run directory that qualify did not read (whole), and why."""

    name: str
    """The file's name relative to the run directory (undecodable bytes as ``\\xNN``)."""
    reason: str
    """``not_regular`` (a pipe, a device, a link...), ``outside`` (reached through a link out
    of the run directory), ``too_large`` (more than the read limit)."""
    detail: str
    """What the file is (``a named pipe``, ``70368744177664 bytes, 0 of them data``)."""


class UntrustedFile(OSError):
    """A run-directory file qualify does not read: not a regular file, or out of bounds."""

    def __init__(self, path: Path, reason: str, detail: str) -> None:
        super().__init__(errno.EINVAL, f"{printable(str(path))} is {detail}")
        self.path, self.reason, self.detail = path, reason, detail


def printable(text: str) -> str:
    """``text`` with the surrogates that stand for undecodable bytes (``surrogateescape``)
    written ``\\xNN``, and any other lone surrogate ``\\uXXXX``: always encodable as UTF-8."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return _SURROGATE.sub(lambda match: escape_char(match.group()), text)
    return text


_SURROGATE = re.compile("[\ud800-\udfff]")


def escape_char(char: str) -> str:
    """One character written visibly: a surrogate standing for an undecodable byte as that
    byte, ``\\xNN``; another lone surrogate ``\\uXXXX``; any other character ``\\xNN``."""
    code = ord(char)
    if 0xDC80 <= code <= 0xDCFF:
        return f"\\x{code - 0xDC00:02x}"
    if 0xD800 <= code <= 0xDFFF:
        return f"\\u{code:04x}"
    return f"\\x{code:02x}"


def kind_of(mode: int) -> str | None:
    """What a file that is not regular is (None for a regular file)."""
    if stat.S_ISREG(mode):
        return None
    return next((kind for test, kind in _KINDS if test(mode)), "not a regular file")


def open_regular(path: Path, root: Path | None = None) -> BinaryIO:
    """``path`` opened for reading, only when it is a regular file (no pipe is ever opened, no
    link followed); with ``root``, only when it lies inside ``root`` once every link of its
    directories is resolved. Raises ``FileNotFoundError`` when missing, ``UntrustedFile``."""
    return os.fdopen(open_regular_fd(path, root), "rb")


def open_regular_fd(path: Path, root: Path | None = None) -> int:
    """``open_regular``'s descriptor (the caller closes it)."""
    if root is not None:
        _inside(path, root)
    kind = kind_of(os.lstat(path).st_mode)
    if kind is not None:
        raise UntrustedFile(path, "not_regular", kind)
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # a link put there after the lstat
            raise UntrustedFile(path, "not_regular", "a symbolic link") from None
        raise
    kind = kind_of(os.fstat(descriptor).st_mode)
    if kind is not None:  # swapped between the lstat and the open (O_NONBLOCK: no wait)
        os.close(descriptor)
        raise UntrustedFile(path, "not_regular", kind)
    return descriptor


def append_regular(path: Path, data: bytes) -> None:
    """Append ``data`` to ``path`` (created when missing), only when it is a regular file: a
    pipe put there by the E2E is never opened for writing (that would wait for a reader)."""
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        descriptor = os.open(path, flags, 0o644)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENXIO):  # a link; a pipe without a reader
            raise UntrustedFile(path, "not_regular", "not a regular file") from None
        raise
    try:
        kind = kind_of(os.fstat(descriptor).st_mode)
        if kind is not None:
            raise UntrustedFile(path, "not_regular", kind)
        os.write(descriptor, data)
    finally:
        os.close(descriptor)


def _inside(path: Path, root: Path) -> None:
    real_root = os.path.realpath(root)
    parent = os.path.realpath(path.parent)
    if parent != real_root and not parent.startswith(real_root.rstrip(os.sep) + os.sep):
        raise UntrustedFile(path, "outside", "reached through a link out of the run directory")


def data_bytes(status: os.stat_result) -> int:
    """The bytes a file really holds on disk (a sparse file's holes are not)."""
    return min(status.st_size, status.st_blocks * 512)


def describe_size(status: os.stat_result) -> str:
    """``N bytes`` and, for a sparse file, how many of them are data."""
    data = data_bytes(status)
    sparse = f", {data} of them data" if data < status.st_size else ""
    return f"{status.st_size} bytes{sparse}"


def read_bounded(path: Path, limit: int = READ_LIMIT_BYTES, root: Path | None = None) -> bytes:
    """The whole of a regular file no larger than ``limit``; ``UntrustedFile`` (too_large)
    without reading anything when it is larger (see ``open_regular`` for the other refusals)."""
    return read_bounded_status(path, limit, root)[0]


def read_bounded_status(
    path: Path, limit: int = READ_LIMIT_BYTES, root: Path | None = None
) -> tuple[bytes, os.stat_result | None]:
    """``read_bounded``, and the file's status when it was the same before and after it was
    read and all of it was read (else None)."""
    with open_regular(path, root) as handle:
        status = os.fstat(handle.fileno())
        if status.st_size > limit:
            raise UntrustedFile(
                path, "too_large", f"{describe_size(status)}, over the {limit}-byte read limit"
            )
        data = handle.read(status.st_size + 1)  # (read(n) allocates n bytes at once)
        after = os.fstat(handle.fileno())
    if len(data) > limit:  # grew while read
        raise UntrustedFile(path, "too_large", f"over the {limit}-byte read limit")
    same = len(data) == status.st_size and (
        after.st_size,
        after.st_mtime_ns,
        after.st_ctime_ns,
        after.st_ino,
    ) == (status.st_size, status.st_mtime_ns, status.st_ctime_ns, status.st_ino)
    return data, status if same else None


def read_head(path: Path, limit: int = READ_LIMIT_BYTES) -> bytes:
    """At most the first ``limit`` bytes of a regular file."""
    with open_regular(path) as handle:
        return handle.read(limit)


def read_tail(path: Path, limit: int) -> bytes:
    """At most the last ``limit`` bytes of a regular file."""
    with open_regular(path) as handle:
        size = os.fstat(handle.fileno()).st_size
        handle.seek(max(0, size - limit))
        return handle.read(limit)


def iter_chunks(handle: BinaryIO, chunk_bytes: int = CHUNK_BYTES) -> Iterator[tuple[int, bytes]]:
    """(offset, bytes) of every data region of an open file, in order, ``chunk_bytes`` at a
    time; the holes of a sparse file (zeros never written) are skipped, not read
    (``SEEK_DATA``/``SEEK_HOLE``, Linux 3.1; where the file system lacks them the whole file
    is one data region)."""
    descriptor = handle.fileno()
    size = os.fstat(descriptor).st_size
    offset = 0
    while offset < size:
        try:
            start = os.lseek(descriptor, offset, os.SEEK_DATA)
            end = os.lseek(descriptor, start, os.SEEK_HOLE)
        except OSError as exc:
            if exc.errno == errno.ENXIO:  # only a hole from here to the end
                return
            start, end = offset, size
        while start < end:
            data = os.pread(descriptor, min(chunk_bytes, end - start), start)
            if not data:
                return
            yield start, data
            start += len(data)
        offset = end


def survey(root: Path, limit: int = READ_LIMIT_BYTES, skip: tuple[str, ...] = ()) -> list[Refusal]:
    """Every entry of a run directory that qualify refuses to read whole: not a regular file
    (a link, a pipe, a device; a link is not followed), or larger than ``limit``. Top-level
    names in ``skip`` are not looked into (qualify's own directories)."""
    refusals: list[Refusal] = []
    pending = [root]
    while pending:
        directory = pending.pop()
        try:
            entries = sorted(os.scandir(directory), key=lambda entry: entry.name)
        except OSError:
            continue
        for entry in entries:
            relative = os.path.relpath(entry.path, root)
            if directory == root and entry.name in skip:
                continue
            try:
                status = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            name = printable(relative)
            if stat.S_ISDIR(status.st_mode):
                pending.append(Path(entry.path))
            elif not stat.S_ISREG(status.st_mode):
                refusals.append(Refusal(name, "not_regular", kind_of(status.st_mode) or ""))
            elif status.st_size > limit:
                detail = f"{describe_size(status)}, over the {limit}-byte read limit"
                refusals.append(Refusal(name, "too_large", detail))
    return sorted(refusals, key=lambda refusal: refusal.name)
