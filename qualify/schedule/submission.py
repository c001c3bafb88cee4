"""What a submission decided, kept as ``reports/<head>/submit-<id>.json``.

The scripts, the sbatch command lines, the array index of every cell, the job ids and the
Slurm version: enough to read Slurm's verdicts back for every cell (``qualify merge
--submitted``) and to submit one cell again exactly as before (``qualify submit --retry``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from qualify import records
from qualify.atomic import write_json_atomic
from qualify.errors import UsageError
from qualify.records import frozen_record

RECORD_SCHEMA_VERSION = 1
RECORD_GLOB = "submit-*.json"
SLURM_DIR = "slurm"
"""Below ``reports/<head>/``: the job output files (``<array>_<index>.out``, ``merge-<id>.out``)."""


@frozen_record
class RecordCell:
    """One array task: the cell it runs."""

    index: int
    family: str
    profile: str
    cap_bytes: int
    timeout_s: float

    @property
    def name(self) -> str:
        """``family/profile``."""
        return f"{self.family}/{self.profile}"


@frozen_record
class ArrayJob:
    """One ``sbatch --array``: the cells that share one memory request and GPU count."""

    job_id: str
    mem_bytes: int
    gpus: int
    sbatch: list[str]
    """The sbatch command line, without ``--array`` (the script goes on its stdin)."""
    array: str
    """The ``--array`` it was submitted with (``0-2``, or one index for a retry)."""
    script: str
    cells: list[RecordCell]

    def task(self, cell: RecordCell) -> str:
        """``<array job id>_<index>``, as Slurm names the task."""
        return f"{self.job_id}_{cell.index}"


@frozen_record
class MergeJob:
    """The job that merges the head's run directories once every array is over."""

    job_id: str | None
    dependency: str
    sbatch: list[str]
    script: str


@frozen_record
class SubmitRecord:
    """One ``qualify submit --engine slurm``."""

    id: str
    created: str
    head: str
    dirty: bool
    repo: str
    out: str
    command: list[str]
    qualify: list[str]
    """How the tasks start qualify (this interpreter, which must exist on the nodes too)."""
    slurm_version: str
    overhead_bytes: int
    time_s: int
    arrays: list[ArrayJob]
    merge: MergeJob | None
    retry_of: str | None = None
    schema_version: int = RECORD_SCHEMA_VERSION

    def tasks(self) -> list[tuple[ArrayJob, RecordCell]]:
        """Every (array, cell) of the submission, in submission order."""
        return [(array, cell) for array in self.arrays for cell in array.cells]

    def to_dict(self) -> dict[str, Any]:
        """The JSON document."""
        return records.asdict(self)

    def path(self, head_dir: Path) -> Path:
        """``<head_dir>/submit-<id>.json``."""
        return head_dir / f"submit-{self.id}.json"

    def write(self, head_dir: Path) -> Path:
        """Written atomically; returns its path."""
        path = self.path(head_dir)
        write_json_atomic(path, self.to_dict())
        return path


def _cell(item: dict[str, Any]) -> RecordCell:
    return RecordCell(
        index=int(item["index"]),
        family=str(item["family"]),
        profile=str(item["profile"]),
        cap_bytes=int(item["cap_bytes"]),
        timeout_s=float(item["timeout_s"]),
    )


def _array(item: dict[str, Any]) -> ArrayJob:
    return ArrayJob(
        job_id=str(item["job_id"]),
        mem_bytes=int(item["mem_bytes"]),
        gpus=int(item["gpus"]),
        sbatch=[str(arg) for arg in item["sbatch"]],
        array=str(item["array"]),
        script=str(item["script"]),
        cells=[_cell(cell) for cell in item["cells"]],
    )


def parse_record(document: Any) -> SubmitRecord:
    """A record from its JSON document; KeyError, TypeError or ValueError when malformed."""
    if not isinstance(document, dict):
        raise TypeError("not a JSON object")
    if document.get("schema_version") != RECORD_SCHEMA_VERSION:
        raise ValueError(f"schema_version {document.get('schema_version')!r} is not supported")
    merge = document["merge"]
    return SubmitRecord(
        id=str(document["id"]),
        created=str(document["created"]),
        head=str(document["head"]),
        dirty=bool(document["dirty"]),
        repo=str(document["repo"]),
        out=str(document["out"]),
        command=[str(arg) for arg in document["command"]],
        qualify=[str(arg) for arg in document["qualify"]],
        slurm_version=str(document["slurm_version"]),
        overhead_bytes=int(document["overhead_bytes"]),
        time_s=int(document["time_s"]),
        arrays=[_array(item) for item in document["arrays"]],
        merge=None
        if merge is None
        else MergeJob(
            job_id=None if merge["job_id"] is None else str(merge["job_id"]),
            dependency=str(merge["dependency"]),
            sbatch=[str(arg) for arg in merge["sbatch"]],
            script=str(merge["script"]),
        ),
        retry_of=None if document.get("retry_of") is None else str(document["retry_of"]),
    )


def read_record(path: Path) -> SubmitRecord:
    """The record in ``path``; UsageError naming the file when it is not one."""
    try:
        return parse_record(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, KeyError, TypeError, RecursionError) as exc:
        raise UsageError(f"{path} is not a qualify submit record: {exc!r}") from None


def find_records(paths: Sequence[Path]) -> list[SubmitRecord]:
    """Records named, or found in directories named (``submit-*.json``), oldest first."""
    found: dict[str, SubmitRecord] = {}
    for path in paths:
        files = sorted(path.glob(RECORD_GLOB)) if path.is_dir() else [path]
        if not path.exists():
            raise UsageError(f"--submitted {str(path)!r} does not exist")
        for file in files:
            record = read_record(file)
            found.setdefault(record.id, record)
    return sorted(found.values(), key=lambda record: (record.created, _numeric(record.id)))


def _numeric(job_id: str) -> tuple[int, str]:
    return (int(job_id), job_id) if job_id.isdigit() else (0, job_id)
