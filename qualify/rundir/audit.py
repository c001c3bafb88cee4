"""The audit: the typed, versioned record of one run, written and read only through here.

``Audit`` is the document; its JSON Schema (``audit.schema.json`` beside this module, draft
2020-12) is generated from the same dataclasses (``python -m qualify.rundir.schema``), so the
writer and the published schema cannot disagree. Every key is always present (``null`` when
not known): the provisional audit written before the E2E starts has the same shape as the
final one. ``schema_version`` changes when a key changes meaning or goes away; new keys may be
added within a version.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from harness import contract
from qualify import records
from qualify.atomic import write_bytes_atomic
from qualify.plan.commit import CommitInfo, record_sha
from qualify.plan.limits import Limits
from qualify.plan.parity_gate import ParityGate
from qualify.plan.spec import AllocatorPolicy
from qualify.records import frozen_record
from qualify.run.last_gasp import LastGaspRecord
from qualify.run.logs import LogStats
from qualify.run.processes import ProcessSample
from qualify.rundir.typed_json import from_json, to_json
from qualify.untrusted import escape_char, open_regular
from qualify.verdict import Verdict

SCHEMA_VERSION = 1
FLAKY_LISTED = 50
"""How many of the tests that passed only on a rerun the audit names."""
MAX_AUDIT_BYTES = 16 << 20
"""Readers refuse bigger files (an audit is tens of KiB; a bigger one is not ours)."""


@frozen_record
class FamilyRecord:
    """The family as run: its name, description, E2E command and the options in effect."""

    name: str = ""
    description: str = ""
    e2e_command: list[str] = records.field(default_factory=list)
    options: dict[str, bool | int | float | str] = records.field(default_factory=dict)
    """Defaults of family.toml overridden by ``--set``."""
    directory: str | None = None
    """Where the family was taken from: relative to the repository when inside it."""
    outside_repo: bool = False
    """True when the repository's commit does not pin the family (see ``content_sha256``)."""
    content_sha256: str | None = None
    """sha256 over the family directory's files, when it is outside the repository."""


@frozen_record
class SandboxRecord:
    """How the run was confined, as read back after setup."""

    backend: str | None = None
    """cgroup-v1, cgroup-v2, docker or none."""
    capped: bool | None = None
    """False only for ``--backend none``."""
    cgroup: str | None = None
    notes: list[str] = records.field(default_factory=list)
    inside: dict[str, Any] | None = None
    """The limits the family's first Python process read from inside the sandbox."""
    env_withheld: list[str] = records.field(default_factory=list)
    """Secret variables of qualify's environment kept from the E2E (names, never values)."""
    env_passed: list[str] = records.field(default_factory=list)
    """Secret variables given to the E2E by name (``pass_env``, ``--pass-env``)."""


@frozen_record
class LimitsRecord:
    """The limits asked for and those the kernel or engine reported in effect."""

    requested: Limits = records.field(default_factory=Limits)
    in_effect: Limits | None = None
    host_memory_bytes: int | None = None
    """The host's RAM: a cap above it cannot bind (the host runs out first)."""
    cap_binds: bool | None = None
    """False when the cap is larger than the host's memory."""


@frozen_record
class PhaseRecord:
    """One execution of a ``harness.phase`` (times in seconds from the run's start)."""

    name: str = ""
    pid: int = 0
    start: float | None = None
    end: float | None = None
    peak_bytes: int | None = None
    """The kernel watermark over the phase's segments."""
    gpu_peak_bytes: int | None = None
    error: str | None = None
    """The exception type that left the phase, or "unfinished"."""


@frozen_record
class MemoryRecord:
    """What memory did: the run's peak, each phase's peak, the processes at the peak."""

    peak_bytes: int | None = None
    peak_source: str | None = None
    """"kernel" (cgroup watermark) or "samples"."""
    sampled_peak_bytes: int | None = None
    sampled_peak_at: float | None = None
    phases: list[PhaseRecord] = records.field(default_factory=list)
    phases_dropped: int = 0
    processes_at_peak: list[ProcessSample] = records.field(default_factory=list)
    phase_at_end: str | None = None
    """The innermost phase still open when the E2E ended (null when it ended cleanly)."""
    last_gasp: list[LastGaspRecord] = records.field(default_factory=list)
    """What every process was doing as usage crossed 85%, 95% and 99% of the cap: each Python
    process's stack (innermost frame first) and allocator state, each other's wait channel."""


@frozen_record
class OomRecord:
    """OOM kills counted by the run's cgroup over the run."""

    kills: int | None = None


@frozen_record
class ExitRecord:
    """How the E2E's root process ended."""

    code: int | None = None
    signal: str | None = None
    pid: int | None = None
    timed_out: bool = False


@frozen_record
class TestsRecord:
    """The tests of the run (parity cases not included)."""

    collected: int = 0
    passed: int = 0
    failed: int = 0
    errors: int = 0
    skipped: int = 0
    running_at_end: str | None = None
    running_when: str | None = None
    not_run: int = 0
    pytest_exitstatus: int | None = None
    junit_disagreements: list[str] = records.field(default_factory=list)
    """Where pytest's own JUnit and the streamed events disagreed (the events won)."""
    reruns: int = 0
    """Failed attempts that were run again (pytest-rerunfailures); only a test's last attempt
    is counted above."""
    flaky: list[str] = records.field(default_factory=list)
    """Tests (nodeids) that passed only on a rerun, the first ``FLAKY_LISTED``."""
    flaky_count: int = 0
    """How many tests passed only on a rerun (``flaky`` names at most ``FLAKY_LISTED``)."""

    def reruns_said(self) -> str:
        """``rerun_words`` of these tests."""
        return rerun_words(self.reruns, self.flaky, self.flaky_count)


def rerun_words(
    reruns: int, flaky: list[str] | tuple[str, ...], flaky_count: int, named: int = 3
) -> str:
    """The reruns, for the end of a line of test counts: "; 3 reruns, passed only on a rerun:
    t.py::a" (the first ``named`` of the ``flaky_count`` tests); "" without reruns."""
    if not reruns:
        return ""
    said = f"; {reruns} rerun{'s' if reruns != 1 else ''}"
    if flaky:
        more = f" and {flaky_count - named} more" if flaky_count > named else ""
        said += ", passed only on a rerun: " + ", ".join(flaky[:named]) + more
    return said


@frozen_record
class ProcessRecord:
    """A process of the run, by pid and name."""

    pid: int = 0
    name: str = ""


@frozen_record
class EscapeRecord:
    """A process of the run found alive outside its confinement (then killed)."""

    pid: int = 0
    name: str = ""
    cgroup: str = ""
    """Where it went (its /proc/<pid>/cgroup)."""


@frozen_record
class ProcessesRecord:
    """The run's processes beyond its root: what outlived it, what left, what was refused."""

    killed_at_end: list[ProcessRecord] = records.field(default_factory=list)
    """Still running when the run ended, killed by qualify (the first few)."""
    killed_at_end_count: int = 0
    escaped: list[EscapeRecord] = records.field(default_factory=list)
    pids_refused: int | None = None
    """Forks the pids limit refused over the run (None: no pids controller)."""


@frozen_record
class ParityGateRecord(ParityGate):
    """The gate's ``[parity]`` keys and its odds under the reference's own noise floor."""

    false_fail_probability: float | None = None
    """The chance an engine as noisy as the reference's low-precision run fails the gate."""
    suggested_min_exact: int | None = None
    """When that chance is over 1%: the ``min_exact`` that brings it to 1% or less."""

    def gate(self) -> ParityGate:
        """The gate itself, without its odds."""
        return ParityGate(**{field.name: getattr(self, field.name) for field in _GATE_FIELDS})


_GATE_FIELDS = records.fields(ParityGate)


@frozen_record
class ParityRecord:
    """The parity gate over the recorded cases (``qualify.parity.ParityReport.to_dict``)."""

    cases: int = 0
    reference_cases: int = 0
    exact: int = 0
    tie: int = 0
    within_noise: int = 0
    near_tie: int = 0
    wrong: int = 0
    length_or_eos: int = 0
    missing: int = 0
    drift: int = 0
    acceptable: int = 0
    required: int = 0
    gate: ParityGateRecord = records.field(default_factory=ParityGateRecord)
    noise: dict[str, Any] | None = None
    """The reference's own precision noise (``qualify.parity.noise.NoiseFloor.to_dict``)."""
    passed: bool = False
    reason: str = ""
    warnings: list[str] = records.field(default_factory=list)
    per_case: list[dict[str, Any]] = records.field(default_factory=list)


@frozen_record
class CudaOomRecord:
    """CUDA out-of-memory errors seen by the harness or found in the E2E's stderr."""

    seen: bool = False
    kind: str | None = None
    """capacity, fragmentation or budget."""
    events: list[dict[str, Any]] = records.field(default_factory=list)
    message: dict[str, Any] | None = None
    from_log: bool = False


@frozen_record
class GpuRecord:
    """The GPU budget, the allocator each process saw, CUDA OOMs and NVML's peaks."""

    budget_mode: str | None = None
    budget_scope: str | None = None
    budget_plan: dict[str, Any] | None = None
    budget_note: str | None = None
    budgets: list[dict[str, Any]] = records.field(default_factory=list)
    budget_error: str | None = None
    allocator_seen: list[dict[str, Any]] = records.field(default_factory=list)
    cuda_oom: CudaOomRecord = records.field(default_factory=CudaOomRecord)
    hook_errors: list[dict[str, Any]] = records.field(default_factory=list)
    nvml: dict[str, Any] = records.field(default_factory=dict)


@frozen_record
class TimingsRecord:
    """Wall-clock times (UTC ISO-8601) and the timeout the E2E ran under."""

    started: str | None = None
    ended: str | None = None
    wall_s: float | None = None
    started_mono: float | None = None
    timeout_s: float | None = None


@frozen_record
class MonitorRecord:
    """The host monitor's own figures."""

    interval_s: float | None = None
    samples: int = 0
    ack_timeouts: int = 0
    cpu_s: float | None = None


@frozen_record
class PublicationRecord:
    """Only in the public bundle's audit: what the sanitizer did to it (counts, no values)."""

    level: str = ""
    rule_counts: dict[str, int] = records.field(default_factory=dict)
    files: list[str] = records.field(default_factory=list)
    skipped: list[str] = records.field(default_factory=list)
    withheld: dict[str, str] = records.field(default_factory=dict)
    """Files not read at all (not a regular file, over the size limit), by name: why."""


@frozen_record
class RefusedFile:
    """A file of the run directory qualify did not read whole (``qualify.untrusted``): the run
    directory is written by the family under test, so a pipe, a link or a huge file there is
    left alone and recorded."""

    name: str = ""
    """Relative to the run directory (undecodable bytes written ``\\xNN``)."""
    reason: str = records.field(
        default="not_regular",
        metadata={"schema": {"enum": ["not_regular", "outside", "too_large"]}},
    )
    """``not_regular``: a pipe, socket, device or link, never opened; ``outside``: reached
    through a link out of the run directory; ``too_large``: over the read limit, read in part
    or not at all, and never published."""
    detail: str = ""
    """What it is: ``a named pipe``, ``68719476736 bytes, 0 of them data, over the ...``."""


_VERDICTS = {"enum": [verdict.value for verdict in Verdict]}


@frozen_record
class BasePhaseRecord:
    """A phase of this run or of its base run: its peak and time in each (None: absent)."""

    name: str = ""
    base_peak_bytes: int | None = None
    peak_bytes: int | None = None
    delta_bytes: int | None = None
    base_seconds: float | None = None
    seconds: float | None = None


@frozen_record
class BaseRunRecord:
    """This run against its base run (``--base-run``; ``qualify.report.base_run``)."""

    given: str = ""
    """The directory given (a run directory, or a directory of runs)."""
    run_dir: str | None = None
    """The base run's directory, relative to ``given`` ("." for the directory itself)."""
    run_id: str | None = None
    head: str | None = None
    matched_by: str | None = None
    """How the base was chosen: the run given, at this run's merge-base, or the latest."""
    problem: str | None = None
    """Why there is no base (no run of the family and profile, an unreadable audit)."""
    verdict: list[str] | None = None
    """[the base's, this run's]."""
    peak_bytes: list[int | None] | None = None
    """[the base's, this run's]."""
    phases: list[BasePhaseRecord] = records.field(default_factory=list)
    changed_tests: list[list[str]] = records.field(default_factory=list)
    """[test, outcome in the base, outcome here] of the first tests whose outcome changed."""
    changed_tests_count: int = 0
    summary: str = ""
    """The one line the terminal and the step summary print."""


@frozen_record
class CompletedByRecord:
    """Who completed the reports of a run whose qualify died: the next run on the machine
    that took it over (``qualify.report.abandoned``)."""

    host: str = ""
    """The machine's name (both runs were on it: the registry is per machine)."""
    pid: int = 0
    """The pid of the qualify that completed the reports."""
    time: str = ""
    """When, ISO 8601 (UTC)."""
    by_run: str = ""
    """The run (or scheduled job step) that took this one over."""
    dead_pid: int | None = None
    """The pid of this run's own qualify, found dead: no process held its registry lock."""


@frozen_record
class Audit:
    """The record of one qualify run."""

    schema_version: int = records.field(default=SCHEMA_VERSION, metadata={"schema": {"const": 1}})
    run_id: str = ""
    verdict: str = records.field(default=Verdict.ERROR.value, metadata={"schema": _VERDICTS})
    reason: str = ""
    interrupted: str | None = None
    family: FamilyRecord = records.field(default_factory=FamilyRecord)
    profile: str = ""
    commit: CommitInfo = records.field(default_factory=CommitInfo)
    sandbox: SandboxRecord = records.field(default_factory=SandboxRecord)
    limits: LimitsRecord = records.field(default_factory=LimitsRecord)
    memory: MemoryRecord = records.field(default_factory=MemoryRecord)
    oom: OomRecord = records.field(default_factory=OomRecord)
    exit: ExitRecord = records.field(default_factory=ExitRecord)
    processes: ProcessesRecord = records.field(default_factory=ProcessesRecord)
    tests: TestsRecord = records.field(default_factory=TestsRecord)
    parity: ParityRecord | None = None
    parity_error: str | None = None
    allocator: AllocatorPolicy = records.field(default_factory=AllocatorPolicy)
    gpu: GpuRecord = records.field(default_factory=GpuRecord)
    timings: TimingsRecord = records.field(default_factory=TimingsRecord)
    monitor: MonitorRecord = records.field(default_factory=MonitorRecord)
    command: list[str] = records.field(default_factory=list)
    logs: dict[str, LogStats] = records.field(default_factory=dict)
    environment: dict[str, Any] = records.field(default_factory=dict)
    problems: list[str] = records.field(default_factory=list)
    refused_files: list[RefusedFile] = records.field(default_factory=list)
    publication: PublicationRecord | None = None
    completed_by: CompletedByRecord | None = None
    """Set when another run completed these reports after this run's qualify died."""
    base: BaseRunRecord | None = None
    """This run against its base run, when ``--base-run`` was given."""

    @property
    def head(self) -> str | None:
        """The SHA the run is recorded under: the PR head in a pull_request run (where
        ``commit.head`` is GitHub's merge commit), else HEAD."""
        return record_sha(self.commit) or None

    def to_dict(self) -> dict[str, Any]:
        """The JSON document."""
        document: dict[str, Any] = to_json(self)
        return document

    def to_bytes(self) -> bytes:
        """Pretty, key-sorted JSON, as written to disk."""
        text = json.dumps(self.to_dict(), indent=2, sort_keys=True, ensure_ascii=False)
        # Names are the family's bytes: a lone surrogate (an undecodable byte kept by
        # surrogateescape, or a test id's own) becomes the visible text \xNN, not an error.
        # Surrogates only ever stand inside JSON strings, where the backslash is escaped.
        return (_SURROGATE.sub(_json_escaped, text) + "\n").encode()


_SURROGATE = re.compile("[\ud800-\udfff]")


def _json_escaped(match: re.Match[str]) -> str:
    return "\\" + escape_char(match.group())  # (\xNN in the string: \\xNN in JSON)


@frozen_record
class AuditRead:
    """An audit as read from disk: the document, or why there is none, and what did not fit."""

    audit: Audit | None
    problems: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return self.audit is not None


def parse_audit(data: bytes | str, name: str = contract.AUDIT) -> AuditRead:
    """Read an audit from its bytes; never raises on content."""
    try:
        document = json.loads(data)
    except (ValueError, RecursionError) as exc:  # (RecursionError: nested too deep)
        return AuditRead(None, (f"{name} is not valid JSON ({type(exc).__name__})",))
    if not isinstance(document, dict):
        return AuditRead(None, (f"{name} is not a JSON object",))
    audit, problems = from_json(Audit, document, "audit")
    return AuditRead(audit, tuple(problems))


def read_audit(path: Path) -> AuditRead:
    """Read ``path``: a missing, unreadable, oversized or malformed file is a problem line."""
    try:
        with open_regular(path) as handle:
            data = handle.read(MAX_AUDIT_BYTES + 1)
    except FileNotFoundError:
        return AuditRead(None, (f"{path.name} is missing",))
    except OSError as exc:
        return AuditRead(None, (f"{path.name} cannot be read ({exc.strerror})",))
    if len(data) > MAX_AUDIT_BYTES:
        return AuditRead(None, (f"{path.name} is larger than {MAX_AUDIT_BYTES} bytes",))
    return parse_audit(data, path.name)


def write_audit(path: Path, audit: Audit) -> None:
    """Write ``audit`` to ``path`` atomically."""
    write_bytes_atomic(path, audit.to_bytes())
