"""``qualify submit``: a family x profile matrix handed to the site's scheduler.

``--engine slurm`` submits one ``sbatch --array`` per memory request (the cells of one array
share their allocation's size) and one merge job after them all; ``--engine kubernetes``
writes one Job manifest per cell; ``--engine github`` prints ``qualify matrix``'s
``strategy.matrix``. qualify schedules nothing itself.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from qualify.atomic import write_json_atomic
from qualify.commands._args import (
    Commands,
    command_line,
    count,
    directory,
    families_dir_option,
    format_option,
    printed_record,
)
from qualify.commands.matrix import build_matrix, matrix, split_names
from qualify.commands.merge import merge
from qualify.errors import UsageError
from qualify.plan.commit import CommitInfo, commit_info, record_sha, repo_root
from qualify.plan.families import default_family_dirs
from qualify.plan.output import check_output_dir
from qualify.publish.errorline import error_line
from qualify.records import frozen_record
from qualify.records import replace as replace_record
from qualify.schedule import kubernetes
from qualify.schedule.cells import Cell, parse_cell, parse_overhead, plan_cells
from qualify.schedule.slurm import (
    MERGE_MEM,
    MERGE_TIME,
    SchedulerError,
    Slurm,
    array_script,
    merge_script,
    output_dir,
    slurm_mem,
    slurm_time,
    wait_for,
)
from qualify.schedule.submission import (
    ArrayJob,
    MergeJob,
    RecordCell,
    SubmitRecord,
    find_records,
)
from qualify.sizes import format_bytes, parse_duration, parse_size
from qualify.verdict import EXIT_ERROR, EXIT_USAGE, Verdict

ENGINES = ("slurm", "kubernetes", "github")
DEFAULT_SHM = "64M"


@frozen_record
class SubmitRequest:
    """``qualify submit`` as typed."""

    engine: str = "slurm"
    families: str | None = None
    profiles: str | None = None
    mem: str | None = None
    overhead: str | None = None
    time: str | None = None
    partition: str | None = None
    account: str | None = None
    gpus_per_task: int | None = None
    cpus_per_task: int | None = None
    sbatch_args: Sequence[str] = ()
    out: Path = Path("reports")
    wait: bool = False
    poll: str = "10s"
    retry: str | None = None
    repo: Path | None = None
    families_dirs: Sequence[Path] = ()
    emit: Path | None = None
    image: str | None = None
    shm: str | None = None
    pvc: str | None = None
    command_line: Sequence[str] = ()


_ONLY = {
    "slurm": ("partition", "account", "cpus_per_task", "sbatch_args", "wait", "retry"),
    "kubernetes": ("emit", "image", "shm", "pvc"),
}
_FLAG = {"sbatch_args": "--sbatch-arg", "emit": "--emit DIR", "retry": "--retry CELL"}


def _empty(value: object) -> bool:
    return isinstance(value, list | tuple) and not value


def _check_engine_flags(request: SubmitRequest) -> None:
    if request.engine not in ENGINES:
        raise UsageError(f"--engine {request.engine!r} is not valid (valid: {', '.join(ENGINES)})")
    for engine, fields in _ONLY.items():
        if engine == request.engine:
            continue
        for field in fields:
            value = getattr(request, field)
            if value is not None and value is not False and not _empty(value):
                flag = _FLAG.get(field, "--" + field.replace("_", "-"))
                raise UsageError(f"{flag} is for --engine {engine}, not {request.engine}")
    if request.retry is None and (not request.families or not request.profiles):
        raise UsageError("--families and --profiles are required (or --retry CELL)")
    if request.retry is not None:
        given = [
            flag
            for flag, value in (
                ("--families", request.families),
                ("--profiles", request.profiles),
                ("--mem", request.mem),
                ("--overhead", request.overhead),
                ("--time", request.time),
                ("--gpus-per-task", request.gpus_per_task),
                ("--cpus-per-task", request.cpus_per_task),
                ("--partition", request.partition),
                ("--account", request.account),
                ("--sbatch-arg", request.sbatch_args or None),
                ("--families-dir", request.families_dirs or None),
            )
            if value is not None
        ]
        if given:
            raise UsageError(
                f"--retry submits the cell again exactly as before: drop {', '.join(given)}"
            )


def _iso(seconds: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


def _qualify_argv() -> list[str]:
    return [sys.executable, "-m", "qualify"]


def _aftercare_argv() -> list[str]:
    return [sys.executable, "-m", "qualify.schedule.aftercare"]


def _sbatch_common(request: SubmitRequest) -> list[str]:
    argv = []
    if request.partition:
        argv.append(f"--partition={request.partition}")
    if request.account:
        argv.append(f"--account={request.account}")
    return argv


def _array_argv(
    request: SubmitRequest, head: str, root: Path, slurm_dir: Path, mem: int, gpus: int, time_s: int
) -> list[str]:
    argv = [
        f"--job-name=qualify-{head[:12]}",
        "--ntasks=1",
        f"--mem={slurm_mem(mem)}",
        f"--time={slurm_time(time_s)}",
        f"--output={slurm_dir}/%A_%a.out",
        f"--chdir={root}",
        *_sbatch_common(request),
    ]
    if gpus:
        argv.append(f"--gpus-per-task={gpus}")
    if request.cpus_per_task:
        argv.append(f"--cpus-per-task={request.cpus_per_task}")
    return argv + list(request.sbatch_args)


def _merge_job(
    slurm: Slurm,
    common: Sequence[str],
    head: str,
    head_dir: Path,
    root: Path,
    array_ids: Sequence[str],
    qualify: Sequence[str],
) -> MergeJob:
    dependency = "afterany:" + ":".join(array_ids)
    argv = [
        f"--job-name=qualify-merge-{head[:12]}",
        "--ntasks=1",
        f"--mem={MERGE_MEM}",
        f"--time={MERGE_TIME}",
        f"--dependency={dependency}",
        f"--output={output_dir(head_dir.parent, head)}/merge-%j.out",
        f"--chdir={root}",
        *common,
    ]
    script = merge_script(head=head, head_dir=head_dir, qualify=qualify)
    return MergeJob(slurm.sbatch(argv, script), dependency, argv, script)


def _groups(cells: Sequence[Cell], overhead: int) -> list[tuple[int, int, list[Cell]]]:
    """Cells by (allocation memory, GPUs), in first-seen order: one array each."""
    grouped: dict[tuple[int, int], list[Cell]] = {}
    for cell in cells:
        grouped.setdefault((cell.request_bytes(overhead), cell.gpus), []).append(cell)
    return [(mem, gpus, group) for (mem, gpus), group in grouped.items()]


@frozen_record
class _Head:
    """The commit a submission qualifies."""

    root: Path
    commit: CommitInfo
    head: str


def _head(request: SubmitRequest) -> _Head:
    root = repo_root(request.repo if request.repo is not None else Path.cwd())
    commit = commit_info(root, None, os.environ)
    return _Head(root, commit, record_sha(commit))


@frozen_record
class _Cells:
    """The matrix's cells as every scheduler is handed them."""

    families_dirs: list[Path]
    """``--families-dir``, absolute (each cell's job runs elsewhere)."""
    cells: list[Cell]
    time_s: int
    overhead: int


def _cells(request: SubmitRequest, root: Path) -> _Cells:
    """Every family and profile name validated (as ``qualify matrix`` does), then the cells."""
    families_dirs = [Path(os.path.abspath(d)) for d in request.families_dirs]
    search = families_dirs or default_family_dirs(root)
    families = split_names(request.families or "", "--families")
    profiles = split_names(request.profiles or "", "--profiles")
    build_matrix(families, profiles, search)
    cells, time_s = plan_cells(
        families,
        profiles,
        search,
        mem=request.mem,
        gpus_per_task=request.gpus_per_task,
        time=request.time,
    )
    return _Cells(families_dirs, cells, time_s, parse_overhead(request.overhead))


def _submit_slurm(request: SubmitRequest, slurm: Slurm) -> tuple[SubmitRecord, Path]:
    at = _head(request)
    root, commit, head = at.root, at.commit, at.head
    out = Path(os.path.abspath(request.out))
    head_dir = out / head
    slurm_dir = output_dir(out, head)
    check_output_dir(out, "--out", below=slurm_dir)
    planned = _cells(request, root)
    families_dirs, cells, time_s = planned.families_dirs, planned.cells, planned.time_s
    overhead = planned.overhead
    if not slurm.available():
        raise SchedulerError(
            "sbatch is not on PATH: submit from a Slurm login node (or use --engine kubernetes "
            "or --engine github)"
        )
    version = slurm.version()
    slurm_dir.mkdir(parents=True, exist_ok=True)
    qualify = _qualify_argv()
    arrays: list[ArrayJob] = []
    for mem, gpus, group in _groups(cells, overhead):
        argv = _array_argv(request, head, root, slurm_dir, mem, gpus, time_s)
        indexed = [
            (index, cell.name, cell.run_args(out, root, families_dirs))
            for index, cell in enumerate(group)
        ]
        script = array_script(
            head=head, repo=root, qualify=qualify, aftercare=_aftercare_argv(), cells=indexed
        )
        span = f"0-{len(group) - 1}"
        try:
            job_id = slurm.sbatch([*argv, f"--array={span}"], script)
        except SchedulerError as exc:
            if not arrays:
                raise
            submitted = ", ".join(array.job_id for array in arrays)
            raise SchedulerError(
                f"{exc} (array job(s) {submitted} were submitted before: scancel them)"
            ) from None
        record_cells = [
            RecordCell(index, cell.family, cell.profile, cell.cap_bytes, cell.timeout_s)
            for index, cell in enumerate(group)
        ]
        arrays.append(ArrayJob(job_id, mem, gpus, argv, span, script, record_cells))
    record = SubmitRecord(
        id=arrays[0].job_id,
        created=_iso(time.time()),
        head=head,
        dirty=commit.dirty,
        repo=str(root),
        out=str(out),
        command=list(request.command_line),
        qualify=qualify,
        slurm_version=version,
        overhead_bytes=overhead,
        time_s=time_s,
        arrays=arrays,
        merge=None,
    )
    # Written before the merge job exists: that job reads it, however soon it starts.
    path = record.write(head_dir)
    try:
        merge_job = _merge_job(
            slurm,
            _sbatch_common(request),
            head,
            head_dir,
            root,
            [array.job_id for array in arrays],
            qualify,
        )
    except SchedulerError as exc:
        raise SchedulerError(
            f"{exc} (the arrays were submitted, {path} records them: merge with qualify merge "
            f"{head_dir} --out {head_dir} --submitted {head_dir} once they are over)"
        ) from None
    record = replace_record(record, merge=merge_job)
    return record, record.write(head_dir)


def _retry_slurm(request: SubmitRequest, slurm: Slurm) -> tuple[SubmitRecord, Path]:
    assert request.retry is not None
    family, profile = parse_cell(request.retry)
    head = _head(request).head
    head_dir = Path(os.path.abspath(request.out)) / head
    records = find_records([head_dir]) if head_dir.is_dir() else []
    found = [
        (record, array, cell)
        for record in records
        for array, cell in record.tasks()
        if (cell.family, cell.profile) == (family, profile)
    ]
    if not found:
        raise UsageError(
            f"--retry {request.retry}: no submission of head {head} under {head_dir} holds "
            "that cell (submit it first)"
        )
    previous, array, cell = found[-1]
    if not slurm.available():
        raise SchedulerError("sbatch is not on PATH: retry from a Slurm login node")
    version = slurm.version()
    job_id = slurm.sbatch([*array.sbatch, f"--array={cell.index}"], array.script)
    retried = ArrayJob(
        job_id, array.mem_bytes, array.gpus, array.sbatch, str(cell.index), array.script, [cell]
    )
    record = replace_record(
        previous,
        id=job_id,
        created=_iso(time.time()),
        command=list(request.command_line),
        slurm_version=version,
        arrays=[retried],
        merge=None,
        retry_of=previous.id,
    )
    record.write(head_dir)
    common = [
        arg
        for arg in (previous.merge.sbatch if previous.merge else [])
        if arg.startswith(("--partition=", "--account="))
    ]
    merge_job = _merge_job(
        slurm, common, head, head_dir, Path(previous.repo), [job_id], previous.qualify
    )
    record = replace_record(record, merge=merge_job)
    return record, record.write(head_dir)


def _print_submitted(record: SubmitRecord, path: Path, stdout: TextIO) -> None:
    dirty = " (dirty tree: the audits say so)" if record.dirty else ""
    retry = f", a retry of {record.retry_of}" if record.retry_of else ""
    stdout.write(f"head {record.head}{dirty}: {record.slurm_version}{retry}\n")
    for array in record.arrays:
        tasks = ", ".join(f"{cell.name}={array.task(cell)}" for cell in array.cells)
        gpus = f", {array.gpus} GPU(s) per task" if array.gpus else ""
        stdout.write(
            f"array job {array.job_id}: {tasks} (--mem {slurm_mem(array.mem_bytes)} = cap + "
            f"{format_bytes(record.overhead_bytes)} for qualify, --time "
            f"{slurm_time(record.time_s)}{gpus})\n"
        )
    if record.merge is not None:
        stdout.write(
            f"merge job {record.merge.job_id}: --dependency={record.merge.dependency} -> "
            f"{Path(record.out) / record.head / 'index.json'}\n"
        )
    stdout.write(f"{path}\n")


def _rows_of(index: dict[str, Any], record: SubmitRecord) -> dict[str, dict[str, Any]]:
    """This submission's row of each task (by task name)."""
    rows: dict[str, dict[str, Any]] = {}
    for row in index.get("runs", []):
        slurm = row.get("slurm") or {}
        if slurm.get("submission") == record.id and slurm.get("task"):
            rows.setdefault(slurm["task"], row)
    return rows


def _read_index(path: Path) -> dict[str, Any] | None:
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return None
    return document if isinstance(document, dict) else None


def _finish(
    record: SubmitRecord, slurm: Slurm, poll_s: float, stdout: TextIO, stderr: TextIO
) -> int:
    """Wait for the merge job, then print the matrix of this submission's verdicts."""
    assert record.merge is not None and record.merge.job_id is not None
    wait_for(
        slurm,
        record.merge.job_id,
        poll_s,
        arrays=[array.job_id for array in record.arrays],
        say=lambda line: stderr.write(f"qualify submit: {line}\n"),
    )
    head_dir = Path(record.out) / record.head
    index = _read_index(head_dir / "index.json")
    if index is None or record.id not in index.get("submissions", []):
        stderr.write(
            f"qualify submit: the merge job {record.merge.job_id} did not write "
            f"{head_dir / 'index.json'} (see {output_dir(Path(record.out), record.head)}/"
            f"merge-{record.merge.job_id}.out): merging here\n"
        )
        merge(
            inputs=[head_dir],
            out=head_dir,
            submitted=[head_dir],
            slurm=slurm,
            stdout=io.StringIO(),
            stderr=stderr,
        )
        index = _read_index(head_dir / "index.json") or {}
    rows = _rows_of(index, record)
    return print_matrix(record, rows, stdout, head_dir / "index.json")


def print_matrix(
    record: SubmitRecord, rows: dict[str, dict[str, Any]], stdout: TextIO, index_path: Path
) -> int:
    """Families down, profiles across, one verdict per cell; the reasons of the cells that did
    not pass; exit 0 only when every cell passed (else the worst class code)."""
    verdicts: dict[tuple[str, str], str] = {}
    reasons: list[str] = []
    worst = 0
    for array, cell in record.tasks():
        row = rows.get(array.task(cell))
        verdict = row["verdict"] if row else "MISSING"
        verdicts[(cell.family, cell.profile)] = verdict
        try:
            code = Verdict(verdict).exit_code
        except ValueError:
            code = EXIT_ERROR
        worst = max(worst, code)
        if verdict != Verdict.PASSED.value:
            reason = (row or {}).get("reason") or "no row in the merged index"
            reasons.append(f"{cell.name} ({array.task(cell)}): {verdict}: {reason}")
    families = list(dict.fromkeys(family for family, _ in verdicts))
    profiles = list(dict.fromkeys(profile for _, profile in verdicts))
    header = ["family", *profiles]
    table = [header] + [
        [family, *(verdicts.get((family, profile), "-") for profile in profiles)]
        for family in families
    ]
    widths = [max(len(line[column]) for line in table) for column in range(len(header))]
    for line in table:
        stdout.write(
            "  ".join(text.ljust(width) for text, width in zip(line, widths, strict=True)).rstrip()
        )
        stdout.write("\n")
    for reason in reasons:
        stdout.write(f"{reason}\n")
    stdout.write(f"{index_path}\n")
    return worst


def _kubernetes(request: SubmitRequest, stdout: TextIO) -> int:
    if request.emit is None or not request.image:
        raise UsageError("--engine kubernetes needs --emit DIR and --image IMAGE")
    at = _head(request)
    head = at.head
    planned = _cells(request, at.root)
    cells, time_s, overhead = planned.cells, planned.time_s, planned.overhead
    shm = parse_size(request.shm or DEFAULT_SHM, what="--shm")
    check_output_dir(request.emit, "--emit", below=request.emit / kubernetes.JOBS_DIR)
    written = kubernetes.manifests(
        cells=cells,
        head=head,
        image=request.image,
        overhead_bytes=overhead,
        shm_bytes=shm,
        deadline_s=time_s,
        pvc=request.pvc,
    )
    (request.emit / kubernetes.JOBS_DIR).mkdir(parents=True, exist_ok=True)
    for path, manifest in written:
        write_json_atomic(request.emit / path, manifest)
        stdout.write(f"{request.emit / path}\n")
    document = kubernetes.index(
        head=head,
        image=request.image,
        cells=cells,
        written=written,
        overhead_bytes=overhead,
        deadline_s=time_s,
        pvc=request.pvc,
    )
    write_json_atomic(request.emit / "index.json", document)
    stdout.write(f"{request.emit / 'index.json'}\n")
    return 0


def submit(
    request: SubmitRequest,
    *,
    slurm: Slurm | None = None,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
    output_format: str = "text",
) -> int:
    """Submit (or emit, or print); exit 0 when submitted, or with ``--wait`` when every cell
    passed; 2 for bad input, 4 when the scheduler refused, else the worst cell's class code.

    With ``output_format`` json, stdout is the record last written instead of the text: with
    ``--wait`` the merged index (the matrix's rows), else the submission record (Kubernetes:
    the manifests' index); the GitHub matrix is JSON already."""
    stdout, stderr = stdout or sys.stdout, stderr or sys.stderr
    slurm = slurm or Slurm()
    if output_format == "json" and request.engine != "github":
        return printed_record(
            lambda out: submit(request, slurm=slurm, stdout=out, stderr=stderr),
            "index.json",
            output_format,
            stdout,
        )
    try:
        _check_engine_flags(request)
        if request.engine == "github":
            return matrix(
                families=request.families or "",
                profiles=request.profiles or "",
                families_dirs=request.families_dirs,
                repo=request.repo,
                stdout=stdout,
                stderr=stderr,
            )
        if request.engine == "kubernetes":
            return _kubernetes(request, stdout)
        poll_s = parse_duration(request.poll, what="--poll")
        if request.retry is not None:
            record, path = _retry_slurm(request, slurm)
        else:
            record, path = _submit_slurm(request, slurm)
    except UsageError as exc:
        stderr.write(error_line("qualify submit", exc))
        return EXIT_USAGE
    except SchedulerError as exc:
        stderr.write(error_line("qualify submit", f"Slurm refused: {exc}"))
        return EXIT_ERROR
    _print_submitted(record, path, stdout)
    stdout.flush()
    if not request.wait:
        return 0
    try:
        return _finish(record, slurm, poll_s, stdout, stderr)
    except SchedulerError as exc:
        stderr.write(error_line("qualify submit", f"cannot wait for the merge job: {exc}"))
        return EXIT_ERROR
    except KeyboardInterrupt:
        stderr.write("qualify submit: stopped waiting; the jobs go on (scancel to stop them)\n")
        return 130


def add_parser(commands: Commands) -> None:
    submit = commands.add_parser(
        "submit", help="hand a family x profile matrix to Slurm (or emit Kubernetes Jobs)"
    )
    submit.add_argument(
        "--engine",
        choices=("slurm", "kubernetes", "github"),
        default="slurm",
        help="slurm (submit), kubernetes (emit Jobs) or github (print a workflow matrix); "
        "default slurm",
    )
    submit.add_argument("--families", help="comma-separated family names")
    submit.add_argument("--profiles", help="comma-separated profile names")
    submit.add_argument("--mem", help="the cap of every cell (default: each profile's)")
    submit.add_argument(
        "--overhead", help="memory qualify needs beyond the cap (default 256M, measured)"
    )
    submit.add_argument("--time", help="time limit per cell: 2h, 45m (default: family's + 2m)")
    submit.add_argument("--partition", help="slurm: partition")
    submit.add_argument("--account", help="slurm: account")
    submit.add_argument(
        "--gpus-per-task", type=count, help="GPUs per cell (default: the profile's)"
    )
    submit.add_argument("--cpus-per-task", type=count, help="slurm: CPUs per cell")
    submit.add_argument(
        "--sbatch-arg",
        dest="sbatch_args",
        action="append",
        default=[],
        metavar="ARG",
        help="slurm: one more sbatch option for the arrays, e.g. --sbatch-arg=--qos=ci",
    )
    submit.add_argument(
        "--out",
        type=directory,
        default=Path("reports"),
        help="output root, shared with the nodes (default reports)",
    )
    submit.add_argument("--wait", action="store_true", help="slurm: wait, print the verdicts")
    submit.add_argument(
        "--poll", default="10s", help="slurm: --wait's polling interval (default 10s)"
    )
    submit.add_argument("--retry", metavar="CELL", help="slurm: submit family/profile again")
    submit.add_argument("--repo", type=Path, help="the repo whose head is qualified (default: .)")
    families_dir_option(submit)
    submit.add_argument("--emit", type=directory, help="kubernetes: write the manifests here")
    submit.add_argument("--image", help="kubernetes: image holding qualify and the repository")
    submit.add_argument("--shm", help="kubernetes: memory-backed /dev/shm size (default 64M)")
    submit.add_argument("--pvc", help="kubernetes: claim mounted at /reports for the reports")
    format_option(
        submit,
        "the record written (with --wait the merged index.json, else the submission record; "
        "kubernetes: the manifests' index.json)",
    )


def main(args: argparse.Namespace) -> int:
    return submit(
        SubmitRequest(
            engine=args.engine,
            families=args.families,
            profiles=args.profiles,
            mem=args.mem,
            overhead=args.overhead,
            time=args.time,
            partition=args.partition,
            account=args.account,
            gpus_per_task=args.gpus_per_task,
            cpus_per_task=args.cpus_per_task,
            sbatch_args=args.sbatch_args,
            out=args.out,
            wait=args.wait,
            poll=args.poll,
            retry=args.retry,
            repo=args.repo,
            families_dirs=args.families_dir,
            emit=args.emit,
            image=args.image,
            shm=args.shm,
            pvc=args.pvc,
            command_line=command_line(args),
        ),
        output_format=args.output_format,
    )
