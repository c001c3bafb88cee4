"""File-backed engine bundle writer: stage each plan as it is built, publish atomically.

A bundle is a directory ``<name>/`` holding one ``<network>.pt2`` plan per network and an
``engine.json`` manifest. It is assembled in a hidden sibling directory and renamed into
place only once every plan and the manifest are on disk, so a reader (or a build that died
half-way) never leaves a bundle that looks complete but is not.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

from harness.kit.durable import fsync_dir

MANIFEST = "engine.json"
FORMAT = "tiny-engine/1"


@dataclass(frozen=True)
class StagedPlan:
    """One plan on disk: its network, file name, size and content hash."""

    network: str
    file: str
    size_bytes: int
    sha256: str


class BundleWriter:
    """Stages plans into a hidden directory next to ``target``; ``publish`` renames it in.

    Used as a context manager: leaving the block without ``publish`` (an exception mid-build)
    removes everything staged so far.
    """

    def __init__(self, target: Path) -> None:
        self.target = target
        self.staged: list[StagedPlan] = []
        target.parent.mkdir(parents=True, exist_ok=True)
        self._staging: Path | None = Path(
            tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".partial", dir=target.parent)
        )

    def __enter__(self) -> BundleWriter:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.abort()

    def stage(self, network: str, plan: memoryview | bytes) -> StagedPlan:
        """Write one plan durably and drop it from the page cache; return its record."""
        staging = self._require_staging()
        name = f"{network}.pt2"
        fd = os.open(staging / name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
        try:
            _write_all(fd, plan)
            os.fsync(fd)
            # The host charges page cache to the cgroup; a plan already on disk need not stay
            # cached, or the staged plans would look like the retention bug they are not.
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)
        record = StagedPlan(network, name, len(plan), hashlib.sha256(plan).hexdigest())
        self.staged.append(record)
        return record

    def publish(self, metadata: dict[str, Any]) -> Path:
        """Write the manifest, make everything durable and rename the bundle into place."""
        staging = self._require_staging()
        manifest = {**metadata, "format": FORMAT, "plans": [asdict(p) for p in self.staged]}
        with (staging / MANIFEST).open("x", encoding="utf-8") as handle:
            json.dump(manifest, handle, indent=2, sort_keys=True)
            handle.flush()
            os.fsync(handle.fileno())
        fsync_dir(staging)
        staging.rename(self.target)
        self._staging = None
        fsync_dir(self.target.parent)
        return self.target

    def abort(self) -> None:
        """Remove whatever was staged; a no-op after ``publish``."""
        if self._staging is not None:
            shutil.rmtree(self._staging, ignore_errors=True)
            self._staging = None

    def _require_staging(self) -> Path:
        if self._staging is None:
            raise RuntimeError(f"bundle {self.target} was already published or aborted")
        return self._staging


def read_manifest(bundle: Path) -> dict[str, Any]:
    """The ``engine.json`` of a published bundle."""
    with (bundle / MANIFEST).open(encoding="utf-8") as handle:
        manifest: dict[str, Any] = json.load(handle)
    if manifest.get("format") != FORMAT:
        raise ValueError(f"{bundle / MANIFEST}: format {manifest.get('format')!r} is not {FORMAT}")
    return manifest


def _write_all(fd: int, data: memoryview | bytes) -> None:
    view = memoryview(data).cast("B")
    written = 0
    while written < len(view):
        written += os.write(fd, view[written:])
