"""Slurm: the cells as a job array, a merge job after it, and Slurm's own verdicts read back.

Each array task runs one ``qualify run`` as a job step (``srun``) inside its allocation, so
qualify's run cgroup nests under the step's and the allocation's memory limit sits above the
cap. When qualify never writes its report (Slurm OOM-killed the allocation, cancelled it, its
time ran out, the node failed), what Slurm recorded is the evidence: the job's state and each
step's, from ``sacct`` when the cluster keeps accounting, else from the job-completion file
(``jobcomp/filetxt``) or ``scontrol`` while slurmctld still knows the job, and always the
lines Slurm itself wrote into the job's output (``slurmstepd: error: Detected 1 oom-kill
event(s) in StepId=...``, ``*** JOB ... CANCELLED AT ... DUE TO TIME LIMIT ***``).
"""

from __future__ import annotations

import calendar
import re
import shlex
import shutil
import subprocess
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from qualify import __version__, cuts, records
from qualify.records import frozen_record
from qualify.schedule.submission import SLURM_DIR, ArrayJob, RecordCell, SubmitRecord
from qualify.sizes import format_bytes
from qualify.subproc import run_capture
from qualify.verdict import Verdict

MISSING = "MISSING"
MERGE_MEM = "512M"
MERGE_TIME = "00:15:00"
MAX_OUTPUT_BYTES = 4 << 20
"""How much of a job's output file is read for Slurm's words (its end: they come last)."""
SIG_OOM = 125
"""Slurm's exit code signal for an OOM-killed step (its SIG_OOM, 253, as a wait status)."""

ACTIVE_STATES = frozenset(
    {
        "PENDING",
        "RUNNING",
        "CONFIGURING",
        "COMPLETING",
        "SUSPENDED",
        "REQUEUED",
        "REQUEUE_FED",
        "REQUEUE_HOLD",
        "RESIZING",
        "SIGNALING",
        "STAGE_OUT",
        "STOPPED",
        "RESV_DEL_HOLD",
    }
)
TIME_STATES = frozenset({"TIMEOUT", "DEADLINE"})
OOM_STATES = frozenset({"OUT_OF_MEMORY"})
KILLED_STATES = frozenset({"CANCELLED", "PREEMPTED", "REVOKED"})
LOST_STATES = frozenset({"NODE_FAIL", "BOOT_FAIL"})
SACCT_FORMAT = "JobID,JobIDRaw,JobName,State,ExitCode,DerivedExitCode,Start,End,NodeList"

_SLURM_LINE = re.compile(r"^(?:slurmstepd(?:-[^:\s]*)?|srun|sbatch|salloc|slurmd)(?:\[\d+\])?: ")
_OOM_EVENTS = re.compile(
    r"Detected (\d+) oom[-_ ]kill events?(?:\(s\))? in StepId=(\d+)(?:_\d+)?\.(\w+)", re.I
)
_CANCELLED = re.compile(
    r"\*\*\* (JOB|STEP) (\S+) ON (\S+) CANCELLED AT (\S+)(?: DUE TO ([A-Z ]+?))?"
    r"(?: \(JobId=\S+\))? \*\*\*"
)
_SRUN_OOM = re.compile(r"^srun: error: \S+: tasks? [\d,\-]+: Out Of Memory")
_CELL_LINE = re.compile(
    r"^qualify-submit: cell (\S+) task (\S+) job (\d+) on (\S+) started (\d+)(?:\s|$)"
)
_KEY = r"[A-Za-z][A-Za-z0-9_:/]*"
_KEY_VALUE = re.compile(rf"(?:^|\s)({_KEY})=(\S*(?:\s+(?!{_KEY}=)\S+)*)")
"""``Key=Value`` pairs; a value runs on over spaces until the next ``Key=``."""


class SchedulerError(Exception):
    """Slurm refused or failed a request; the message is one line, Slurm's own words in it."""


# ---- submitting ------------------------------------------------------------------------------


def slurm_time(seconds: int) -> str:
    """``D-HH:MM:SS`` (``HH:MM:SS`` under a day), as ``--time`` reads it."""
    days, rest = divmod(max(int(seconds), 1), 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    clock = f"{hours:02d}:{minutes:02d}:{secs:02d}"
    return f"{days}-{clock}" if days else clock


def slurm_mem(size: int) -> str:
    """Whole MiB with Slurm's ``M`` suffix (Slurm's M is 2**20 bytes)."""
    return f"{-(-size // (1 << 20))}M"


def output_dir(out: Path, head: str) -> Path:
    """``<out>/<head>/slurm``: where the jobs write their output."""
    return out / head / SLURM_DIR


def task_output(record: SubmitRecord, array: ArrayJob, cell: RecordCell) -> Path:
    """The output file Slurm writes for one task (``%A_%a.out``)."""
    return output_dir(Path(record.out), record.head) / f"{array.job_id}_{cell.index}.out"


def array_script(
    *,
    head: str,
    repo: Path,
    qualify: Sequence[str],
    aftercare: Sequence[str],
    cells: Sequence[tuple[int, str, Sequence[str]]],
) -> str:
    """The batch script of one array: the task's index picks its cell; the cell's ``qualify
    run`` is one job step, after a check that the repository is still at the submitted head;
    then ``aftercare`` cleans up after a qualify that was killed with its step."""
    quote = shlex.quote
    branches = "".join(
        f"  {index}) cell={quote(name)}; run=({shlex.join([*qualify, *args])}) ;;\n"
        for index, name, args in cells
    )
    return (
        "#!/bin/bash\n"
        f"# qualify {__version__} submit: one (family, profile) cell per array task.\n"
        f"# Head {head}; the record is submit-<array job id>.json next to the runs.\n"
        "set -u\n"
        'case "${SLURM_ARRAY_TASK_ID:-}" in\n'
        f"{branches}"
        '  *) echo "qualify-submit: error: array index ${SLURM_ARRAY_TASK_ID:-none} is not a '
        'cell of this submission" >&2; exit 2 ;;\n'
        "esac\n"
        'echo "qualify-submit: cell $cell task ${SLURM_ARRAY_JOB_ID}_${SLURM_ARRAY_TASK_ID}'
        ' job $SLURM_JOB_ID on ${SLURMD_NODENAME:-$HOSTNAME} started $(date +%s)"\n'
        f"cd {quote(str(repo))} || exit 2\n"
        "head=$(git rev-parse HEAD) || exit 2\n"
        f'if [ "$head" != {quote(head)} ]; then\n'
        f'  echo "qualify-submit: error: $PWD is at $head, not at the submitted head {head}:'
        ' not run" >&2\n'
        "  exit 2\n"
        "fi\n"
        'srun --ntasks=1 --job-name="qualify:$cell" "${run[@]}"\n'
        "status=$?\n"
        'echo "qualify-submit: qualify run of $cell exited with $status"\n'
        f"{shlex.join(aftercare)}\n"
        'exit "$status"\n'
    )


def merge_script(*, head: str, head_dir: Path, qualify: Sequence[str]) -> str:
    """The merge job's script: every run directory of the head and every submission's Slurm
    evidence into ``<head_dir>/index.json`` and a combined JUnit."""
    directory = str(head_dir)
    merge = [*qualify, "merge", directory, "--out", directory, "--submitted", directory]
    return (
        "#!/bin/bash\n"
        f"# qualify {__version__} submit: merge head {head} once its arrays are over.\n"
        "set -u\n"
        f"{shlex.join(merge)}\n"
        "status=$?\n"
        'echo "qualify-submit: qualify merge exited with $status (0: every cell passed)"\n'
        'exit "$status"\n'
    )


class Slurm:
    """The Slurm commands qualify uses, each bounded in time; SchedulerError when one fails."""

    def __init__(self, timeout_s: float = 60.0):
        self.timeout_s = timeout_s

    def available(self) -> bool:
        """True when ``sbatch`` is on PATH."""
        return shutil.which("sbatch") is not None

    def _run(self, argv: Sequence[str], script: str | None = None) -> str:
        try:
            result = run_capture(
                argv,
                timeout_s=self.timeout_s,
                input_bytes=None if script is None else script.encode(),
            )
        except FileNotFoundError:
            raise SchedulerError(f"{argv[0]} is not installed (not on PATH)") from None
        except OSError as exc:
            raise SchedulerError(f"{argv[0]} could not be started: {exc}") from None
        except subprocess.TimeoutExpired:
            raise SchedulerError(f"{argv[0]} did not answer within {self.timeout_s:.0f}s") from None
        if result.returncode != 0:
            words = result.stderr.decode(errors="replace").strip().splitlines()
            said = words[-1] if words else f"exit code {result.returncode}"
            raise SchedulerError(f"{shlex.join(argv[:2])}: {said}")
        return result.stdout.decode(errors="replace")

    def version(self) -> str:
        """``sbatch --version`` (``slurm 23.11.4``, ``slurm-wlm 22.05.8``)."""
        return self._run(["sbatch", "--version"]).strip()

    def config(self) -> dict[str, str]:
        """``scontrol show config`` as a mapping."""
        return parse_config(self._run(["scontrol", "show", "config"]))

    def sbatch(self, argv: Sequence[str], script: str) -> str:
        """Submit ``script`` (on sbatch's stdin); the job id."""
        said = self._run(["sbatch", "--parsable", *argv], script).strip()
        job_id = said.splitlines()[-1].split(";")[0] if said else ""
        if not job_id.isdigit():
            raise SchedulerError(f"sbatch --parsable printed {said!r}, not a job id")
        return job_id

    def active(self, job_id: str) -> str | None:
        """The job's state while slurmctld still lists it in the queue, else None."""
        try:
            said = self._run(["squeue", "--noheader", "--jobs", job_id, "--format", "%T"])
        except SchedulerError as exc:
            if "Invalid job id" in str(exc):
                return None
            raise
        states = said.split()
        return states[0] if states else None

    def states(self, job_id: str) -> list[str]:
        """The state of each of the job's entries slurmctld still lists (an array's pending
        tasks as one entry, each running task as its own); [] once none is listed."""
        try:
            said = self._run(["squeue", "--noheader", "--jobs", job_id, "--format", "%T"])
        except SchedulerError as exc:
            if "Invalid job id" in str(exc):
                return []
            raise
        return said.split()

    def sacct(self, job_ids: Sequence[str]) -> str:
        """Every job, array task and step of ``job_ids`` (``--parsable2``, no header)."""
        return self._run(
            ["sacct", "--noheader", "--parsable2", "--duplicates", "--jobs", ",".join(job_ids),
             "--format", SACCT_FORMAT]
        )  # fmt: skip

    def scontrol_jobs(self, job_id: str) -> str:
        """``scontrol --oneliner show job`` of an array (every task slurmctld still knows)."""
        try:
            return self._run(["scontrol", "--oneliner", "show", "job", job_id])
        except SchedulerError as exc:
            if "Invalid job id" in str(exc):
                return ""
            raise


SAID_EVERY_S = 60.0
"""``wait_for``'s progress: a line when the states change, and at least this often."""


def wait_for(
    slurm: Slurm,
    job_id: str,
    poll_s: float,
    sleep: Any = time.sleep,
    arrays: Sequence[str] = (),
    say: Any = None,
) -> None:
    """Until ``job_id`` has left the queue; with ``say``, a line as the states of ``arrays``
    (their tasks, counted by state) and of the job change, and at least every
    ``SAID_EVERY_S``."""
    said, said_at = "", 0.0
    while True:
        state = slurm.active(job_id)
        if state is None:
            return
        if say is not None:
            parts = []
            for array in arrays:
                counts: dict[str, int] = {}
                for task in slurm.states(array):
                    counts[task] = counts.get(task, 0) + 1
                done = ", ".join(f"{n} {name}" for name, n in sorted(counts.items()))
                parts.append(f"array {array}: {done or 'over'}")
            line = "; ".join([*parts, f"merge job {job_id} {state}"])
            now = time.monotonic()
            if line != said or now - said_at >= SAID_EVERY_S:
                say(line)
                said, said_at = line, now
        sleep(poll_s)


# ---- reading Slurm's records ---------------------------------------------------------------


def parse_config(text: str) -> dict[str, str]:
    """``Key = Value`` lines of ``scontrol show config``."""
    config = {}
    for line in text.splitlines():
        key, sep, value = line.partition(" = ")
        if sep and key.strip() and " " not in key.strip():
            config[key.strip()] = value.strip()
    return config


def parse_key_values(line: str) -> dict[str, str]:
    """``JobId=13 JobState=FAILED ...``: a jobcomp/filetxt line or ``scontrol -o`` output."""
    return {match.group(1): match.group(2) for match in _KEY_VALUE.finditer(line.strip())}


def _base_state(state: str | None) -> str | None:
    """``CANCELLED by 0`` -> ``CANCELLED``; ``OUT_OF_MEMORY`` as is."""
    if not state:
        return None
    return state.split()[0].rstrip("+").upper()


def _signal(exit_code: str | None) -> int | None:
    """The signal of Slurm's ``exit:signal`` pair."""
    if not exit_code or ":" not in exit_code:
        return None
    try:
        return int(exit_code.split(":", 1)[1])
    except ValueError:
        return None


@frozen_record
class StepState:
    """One job step as Slurm recorded it."""

    step: str
    """``13.0``, ``13.batch``, ``13.extern`` (the task's own job id)."""
    state: str
    exit_code: str | None
    source: str
    """``sacct`` or ``output`` (a line Slurm wrote into the job's output)."""


@frozen_record
class JobState:
    """The array task's own job record."""

    job_id: str
    state: str | None
    exit_code: str | None
    derived_exit_code: str | None
    reason: str | None
    source: str
    """``sacct``, ``jobcomp`` or ``scontrol``."""
    started: bool | None = None
    """Whether it ever started (a start time); None when the record does not say."""


def _started(value: str | None) -> bool | None:
    if value is None:
        return None
    return value.strip() not in ("", "None", "Unknown")


def array_indices(spec: str) -> list[int]:
    """``0-3``, ``1,3,5-7``, ``0-15%4``, ``0-10:2`` -> the indices (pending tasks are listed
    as one record over a range); [] when ``spec`` is not one."""
    indices: list[int] = []
    for part in spec.split("%", maxsplit=1)[0].strip("[]").split(","):
        match = re.fullmatch(r"(\d+)(?:-(\d+)(?::(\d+))?)?", part.strip())
        if match is None:
            return []
        first = int(match.group(1))
        last = int(match.group(2)) if match.group(2) else first
        indices += range(first, min(last, first + 100_000) + 1, int(match.group(3) or 1) or 1)
    return indices


def jobs_from_sacct(
    text: str, array_id: str
) -> tuple[dict[str, JobState], dict[str, list[StepState]]]:
    """Per array task (``<array>_<index>``): its job and its steps, from ``sacct -P``."""
    jobs: dict[str, JobState] = {}
    steps: dict[str, list[StepState]] = {}
    for line in text.splitlines():
        fields = line.split("|")
        if len(fields) < 6:
            continue
        job_id, raw, _name, state, exit_code, derived = fields[:6]
        started = _started(fields[6]) if len(fields) > 6 else None
        task, dot, step = job_id.partition(".")
        if not task.startswith(f"{array_id}_"):
            continue
        raw_job = raw.partition(".")[0]
        if dot:
            steps.setdefault(task, []).append(
                StepState(f"{raw_job}.{step}", _base_state(state) or "", exit_code or None, "sacct")
            )
            continue
        record = JobState(
            raw_job, _base_state(state), exit_code or None, derived or None, None, "sacct", started
        )
        for index in array_indices(task.removeprefix(f"{array_id}_")):
            jobs.setdefault(f"{array_id}_{index}", record)
    return jobs, steps


def jobs_from_key_values(lines: Iterable[str], array_id: str, source: str) -> dict[str, JobState]:
    """Per array task: its job, from jobcomp/filetxt lines or ``scontrol -o show job``. A later
    line for the same task (a requeued job) replaces an earlier one."""
    jobs: dict[str, JobState] = {}
    for line in lines:
        if f"ArrayJobId={array_id} " not in f"{line} ":
            continue
        fields = parse_key_values(line)
        if fields.get("ArrayJobId") != array_id:
            continue
        record = JobState(
            job_id=fields.get("JobId", ""),
            state=_base_state(fields.get("JobState")),
            exit_code=fields.get("ExitCode") or None,
            derived_exit_code=fields.get("DerivedExitCode") or None,
            reason=fields.get("Reason") if fields.get("Reason") not in (None, "None") else None,
            source=source,
            started=_started(fields.get("StartTime")),
        )
        for index in array_indices(fields.get("ArrayTaskId", "")):
            jobs[f"{array_id}_{index}"] = record
    return jobs


@frozen_record
class OutputWords:
    """What a task's output file says: Slurm's own lines, and the script's and qualify's."""

    lines: tuple[str, ...]
    """Slurm's words (slurmstepd, srun, sbatch lines), in order."""
    steps: tuple[StepState, ...]
    job_state: str | None
    """A job-level state Slurm wrote (``*** JOB 13 ... CANCELLED AT ... ***``)."""
    job_id: str | None
    started: float | None
    """When the script started the cell (its own ``qualify-submit: cell`` line)."""
    printed: tuple[str, ...]
    """Every other line: qualify's run directory is among them."""


def _cancelled_state(due: str | None) -> str:
    due = (due or "").strip().upper()
    if due == "TIME LIMIT":
        return "TIMEOUT"
    if due == "PREEMPTION":
        return "PREEMPTED"
    if due == "NODE FAILURE":
        return "NODE_FAIL"
    return "CANCELLED"


def read_output(text: str) -> OutputWords:
    """Parse a job's output file."""
    lines: list[str] = []
    steps: dict[str, StepState] = {}
    job_state: str | None = None
    job_id: str | None = None
    started: float | None = None
    printed: list[str] = []
    for raw in text.splitlines():
        line = raw.rstrip()
        cell = _CELL_LINE.match(line)
        if cell:
            job_id, started = cell.group(3), float(cell.group(5))
            continue
        if not _SLURM_LINE.match(line):
            printed.append(line)
            continue
        lines.append(line)
        oom = _OOM_EVENTS.search(line)
        if oom:
            step = f"{oom.group(2)}.{oom.group(3)}"
            steps[step] = StepState(step, "OUT_OF_MEMORY", None, "output")
        cancelled = _CANCELLED.search(line)
        if cancelled:
            state = _cancelled_state(cancelled.group(5))
            if cancelled.group(1) == "STEP":
                steps.setdefault(
                    cancelled.group(2), StepState(cancelled.group(2), state, None, "output")
                )
            else:
                job_state = state
    return OutputWords(
        tuple(lines), tuple(steps.values()), job_state, job_id, started, tuple(printed)
    )


def read_tail(path: Path, limit: int = MAX_OUTPUT_BYTES) -> str | None:
    """The last ``limit`` bytes of a file as text; None when it cannot be read."""
    try:
        with path.open("rb") as handle:
            handle.seek(0, 2)
            size = handle.tell()
            handle.seek(max(0, size - limit))
            data = handle.read()
    except OSError:
        return None
    return data.decode(errors="replace")


# ---- one task's evidence and its verdict ---------------------------------------------------


@frozen_record
class TaskEvidence:
    """Everything Slurm says about one array task."""

    submission: str
    task: str
    """``<array job id>_<index>``."""
    family: str
    profile: str
    mem_bytes: int
    cap_bytes: int
    job: JobState | None
    steps: tuple[StepState, ...]
    words: OutputWords | None
    output: str
    ended: float | None
    """The output file's last write (when the task was last heard of)."""
    problems: tuple[str, ...] = ()
    """Slurm commands that failed while the evidence was gathered."""

    @property
    def sources(self) -> list[str]:
        """Where the evidence came from."""
        found = [self.job.source] if self.job is not None else []
        found += sorted({step.source for step in self.steps} - set(found))
        if self.words is not None:
            found.append("output")
        return list(dict.fromkeys(found))

    def states(self) -> list[str]:
        """The job's state, then each step's."""
        found = [self.job.state] if self.job is not None and self.job.state else []
        if self.words is not None and self.words.job_state:
            found.append(self.words.job_state)
        return found + [step.state for step in self.steps]

    def oom(self) -> bool:
        """An OOM kill anywhere in the allocation (a state, an exit signal or Slurm's line)."""
        codes = [self.job.exit_code, self.job.derived_exit_code] if self.job is not None else []
        codes += [step.exit_code for step in self.steps]
        return bool(OOM_STATES & set(self.states())) or SIG_OOM in map(_signal, codes)

    def verdict(self) -> tuple[str, str]:
        """(verdict, reason) of a task whose qualify wrote no report."""
        states = set(self.states())
        said = self._said()
        if states & TIME_STATES:
            return Verdict.TIMEOUT.value, f"Slurm ended the allocation at its time limit: {said}"
        if self.oom():
            headroom = self.mem_bytes - self.cap_bytes
            return Verdict.KILLED.value, (
                f"Slurm OOM-killed the allocation before qualify wrote its report: {said}; the "
                f"allocation had {format_bytes(self.mem_bytes)} for a "
                f"{format_bytes(self.cap_bytes)} cap, {format_bytes(headroom)} for qualify "
                "itself (raise --overhead)"
            )
        if states & KILLED_STATES:
            if self.job is not None and self.job.started is False and self.words is None:
                return MISSING, f"cancelled before it started: {said}"
            return Verdict.KILLED.value, f"Slurm killed the allocation: {said}"
        if states & LOST_STATES:
            return MISSING, f"the allocation was lost (node failure): {said}"
        job_state = self.job.state if self.job is not None else None
        if job_state in ACTIVE_STATES:
            return MISSING, f"not run yet: Slurm says {said}"
        if self.job is None and not self.steps and self.words is None:
            return MISSING, (
                f"no report and nothing recorded by Slurm for task {self.task} (no accounting, "
                f"no job-completion record, no output file {self.output})"
            )
        return MISSING, f"qualify wrote no report: {said}{self._last_words()}"

    def _said(self) -> str:
        parts = []
        if self.job is not None:
            job = f"job {self.job.job_id} {self.job.state or 'unknown'}"
            if self.job.exit_code:
                job += f" exit {self.job.exit_code}"
            if self.job.derived_exit_code and self.job.derived_exit_code != "0:0":
                job += f" derived {self.job.derived_exit_code}"
            if self.job.reason:
                job += f" reason {self.job.reason}"
            parts.append(f"{job} ({self.job.source})")
        elif self.words is not None and self.words.job_state:
            parts.append(f"job {self.words.job_id or self.task} {self.words.job_state} (output)")
        for step in self.steps:
            exit_code = f" exit {step.exit_code}" if step.exit_code else ""
            parts.append(f"step {step.step} {step.state}{exit_code} ({step.source})")
        words = [line for line in (self.words.lines if self.words else ()) if "error" in line]
        if words:
            parts.append(f"'{words[0]}'")
        return "; ".join(parts) or f"task {self.task}, state unknown"

    def _last_words(self) -> str:
        printed = [line for line in (self.words.printed if self.words else ()) if line.strip()]
        return f"; its output ends: '{cuts.head(printed[-1].strip(), 300)}'" if printed else ""

    def to_dict(self) -> dict[str, Any]:
        """The index's ``slurm`` entry."""
        job = self.job
        return {
            "submission": self.submission,
            "task": self.task,
            "job_id": job.job_id if job else (self.words.job_id if self.words else None),
            "state": job.state if job else (self.words.job_state if self.words else None),
            "exit_code": job.exit_code if job else None,
            "derived_exit_code": job.derived_exit_code if job else None,
            "steps": [records.asdict(step) for step in self.steps],
            "sources": self.sources,
            "lines": list(self.words.lines) if self.words else [],
            "output": self.output,
            "mem_bytes": self.mem_bytes,
            "problems": list(self.problems),
        }


def _merge_steps(*groups: Iterable[StepState]) -> tuple[StepState, ...]:
    """Steps by id, the first source (sacct) winning over Slurm's lines for the same step."""
    merged: dict[str, StepState] = {}
    for group in groups:
        for step in group:
            merged.setdefault(step.step, step)
    return tuple(merged.values())


def _jobcomp_lines(config: Mapping[str, str], array_ids: Sequence[str]) -> list[str]:
    if config.get("JobCompType") != "jobcomp/filetxt" or not config.get("JobCompLoc"):
        return []
    text = read_tail(Path(config["JobCompLoc"]), 64 << 20)
    if text is None:
        return []
    needles = tuple(f"ArrayJobId={job_id} " for job_id in array_ids)
    return [line for line in text.splitlines() if any(n in f"{line} " for n in needles)]


def accounting(config: Mapping[str, str]) -> bool:
    """True when the cluster keeps accounting (``sacct`` answers)."""
    storage = config.get("AccountingStorageType", "accounting_storage/none")
    return storage not in ("", "accounting_storage/none", "(null)")


def gather(record: SubmitRecord, slurm: Slurm | None) -> dict[str, TaskEvidence]:
    """Evidence for every task of ``record`` (by task name). Without ``slurm`` (no Slurm
    commands where the merge runs), the output files alone."""
    config: dict[str, str] = {}
    problems: list[str] = []
    if slurm is not None:
        try:
            config = slurm.config()
        except SchedulerError as exc:
            problems.append(str(exc))
    array_ids = [array.job_id for array in record.arrays]
    jobs: dict[str, JobState] = {}
    steps: dict[str, list[StepState]] = {}
    if slurm is not None and config:
        if accounting(config):
            try:
                text = slurm.sacct(array_ids)
            except SchedulerError as exc:
                problems.append(str(exc))
            else:
                for array_id in array_ids:
                    found_jobs, found_steps = jobs_from_sacct(text, array_id)
                    jobs.update(found_jobs)
                    steps.update(found_steps)
        comp = _jobcomp_lines(config, array_ids)
        for array_id in array_ids:
            for task, job in jobs_from_key_values(comp, array_id, "jobcomp").items():
                jobs.setdefault(task, job)
            try:
                listed = slurm.scontrol_jobs(array_id).splitlines()
            except SchedulerError as exc:
                problems.append(str(exc))
                listed = []
            for task, job in jobs_from_key_values(listed, array_id, "scontrol").items():
                jobs.setdefault(task, job)
    evidence = {}
    for array, cell in record.tasks():
        task = array.task(cell)
        output = task_output(record, array, cell)
        tail = read_tail(output)
        words = read_output(tail) if tail is not None else None
        try:
            ended: float | None = output.stat().st_mtime
        except OSError:
            ended = None
        evidence[task] = TaskEvidence(
            submission=record.id,
            task=task,
            family=cell.family,
            profile=cell.profile,
            mem_bytes=array.mem_bytes,
            cap_bytes=cell.cap_bytes,
            job=jobs.get(task),
            steps=_merge_steps(steps.get(task, ()), words.steps if words else ()),
            words=words,
            output=str(output),
            ended=ended,
            problems=tuple(problems),
        )
    return evidence


def iso_to_epoch(text: str | None) -> float | None:
    """An audit's ``2025-01-01T00:00:00.000Z`` as seconds since the epoch."""
    if not text:
        return None
    try:
        parsed = time.strptime(text.split(".")[0].rstrip("Z"), "%Y-%m-%dT%H:%M:%S")
    except ValueError:
        return None
    return float(calendar.timegm(parsed))
