"""One repetition: a whole ``qualify run`` in its own process, read back from its run directory.

A child process rather than a call: each repetition gets a fresh interpreter (no allocator,
import or signal-handler state carried from the previous one), its own run directory, and is
exactly what a user reproduces by pasting the command line kept in its audit.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harness import contract
from qualify import records
from qualify.errors import UsageError
from qualify.plan.families import Family
from qualify.records import frozen_record
from qualify.rundir import Audit, RunDir
from qualify.verdict import EXIT_USAGE


@frozen_record
class Metric:
    """The samples one run recorded under one name with ``harness.metric``."""

    unit: str
    values: tuple[float, ...]

    def to_dict(self) -> dict[str, Any]:
        """The JSON form."""
        return {"unit": self.unit, "values": list(self.values)}


@frozen_record
class Repetition:
    """One run of the experiment, as its audit and events tell it."""

    arm: str
    """The arm's name (``a``, ``b``) or, for headroom, ``probe``."""
    level: str
    """The sweep level (``850M``, ``size=small``), "" without a sweep."""
    index: int
    """Position in the order the runs were made (0-based)."""
    run_dir: str
    """The run directory, relative to the experiment's directory."""
    run_id: str
    verdict: str
    reason: str
    limit_bytes: int | None
    """The memory cap in effect, as read back from the kernel."""
    peak_bytes: int | None
    """The cgroup's watermark over the run (page cache included: it is charged to the cap)."""
    rss_at_peak_bytes: int | None
    """The resident memory of the run's processes at that peak (what they held themselves)."""
    phase_peaks: dict[str, int]
    """The watermark of each phase by name (the largest when a phase ran more than once)."""
    metrics: dict[str, Metric]
    wall_s: float | None

    @property
    def passed(self) -> bool:
        """True when the run's verdict is PASSED."""
        return self.verdict == "PASSED"

    def metric_value(self, name: str) -> float | None:
        """The run's value of ``name``: the median of its samples (a per-step latency is
        recorded once per step; the run's median is its typical step)."""
        metric = self.metrics.get(name)
        if metric is None or not metric.values:
            return None
        ordered = sorted(metric.values)
        middle = len(ordered) // 2
        if len(ordered) % 2:
            return ordered[middle]
        return (ordered[middle - 1] + ordered[middle]) / 2

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (``ab.json``, ``headroom.json``)."""
        document = records.asdict(self)
        document["metrics"] = {name: m.to_dict() for name, m in sorted(self.metrics.items())}
        return document

    @classmethod
    def from_dict(cls, document: dict[str, Any]) -> Repetition:
        """Read back what ``to_dict`` wrote."""
        fields = {field.name for field in records.fields(cls)}
        values = {key: value for key, value in document.items() if key in fields}
        values["metrics"] = {
            name: Metric(str(m["unit"]), tuple(float(v) for v in m["values"]))
            for name, m in document.get("metrics", {}).items()
        }
        return cls(**values)


def read_metrics(run_dir: RunDir) -> dict[str, Metric]:
    """Every ``harness.metric`` the run recorded, by name, in the order recorded."""
    units: dict[str, str] = {}
    values: dict[str, list[float]] = {}
    for event in run_dir.events():
        if event.get("event") != contract.METRIC:
            continue
        name, value = event.get("name"), event.get("value")
        if not isinstance(name, str) or not isinstance(value, int | float):
            continue
        units.setdefault(name, str(event.get("unit", "")))
        values.setdefault(name, []).append(float(value))
    return {name: Metric(units[name], tuple(samples)) for name, samples in values.items()}


def phase_peaks(audit: Audit) -> dict[str, int]:
    """The largest watermark of each phase name."""
    peaks: dict[str, int] = {}
    for phase in audit.memory.phases:
        if phase.peak_bytes is not None:
            peaks[phase.name] = max(peaks.get(phase.name, 0), phase.peak_bytes)
    return peaks


def from_run_dir(
    run_dir: Path, *, arm: str, level: str, index: int, relative_to: Path
) -> tuple[Repetition, Audit]:
    """The repetition recorded in ``run_dir`` and its audit."""
    directory = RunDir(run_dir)
    read = directory.read_audit()
    if read.audit is None:
        raise UsageError(f"{run_dir} holds no readable audit: {'; '.join(read.problems)}")
    audit = read.audit
    in_effect = audit.limits.in_effect
    rss = [sample.rss_bytes for sample in audit.memory.processes_at_peak]
    repetition = Repetition(
        arm=arm,
        level=level,
        index=index,
        run_dir=run_dir.resolve().relative_to(relative_to.resolve()).as_posix(),
        run_id=audit.run_id,
        verdict=audit.verdict,
        reason=audit.reason,
        limit_bytes=in_effect.memory_bytes if in_effect is not None else None,
        peak_bytes=audit.memory.peak_bytes,
        rss_at_peak_bytes=sum(rss) if rss else None,
        phase_peaks=phase_peaks(audit),
        metrics=read_metrics(directory),
        wall_s=audit.timings.wall_s,
    )
    return repetition, audit


MARGIN_S = 120.0
"""How much longer than a run's own timeout its child ``qualify run`` may take in all (its
start, judging and reports)."""


@frozen_record
class Experiment:
    """Where an experiment of many runs lives and how long each of its runs may take."""

    head: str
    directory: Path
    """``OUT/<head>/<family>/<kind>/<id>``, absolute; not created yet."""
    run_timeout_s: float
    """The child's whole budget: the run's timeout plus :data:`MARGIN_S`."""


def experiment(root: Path, out: Path, family: Family, kind: str, timeout: str | None) -> Experiment:
    """The head commit of ``root``, the directory under ``out`` and the per-run timeout
    (``--timeout`` or the family's). Raises UsageError for a bad timeout or output root."""
    from qualify.plan.commit import commit_info, record_sha
    from qualify.plan.output import check_output_dir
    from qualify.plan.spec import new_run_id
    from qualify.sizes import parse_duration

    timeout_s = parse_duration(timeout, what="--timeout") if timeout else family.timeout_s
    head = record_sha(commit_info(root, None, os.environ))
    directory = (out / head / family.name / kind / new_run_id()).resolve()
    check_output_dir(out, "--out", below=directory)
    return Experiment(head, directory, timeout_s + MARGIN_S)


def run_once(run_args: Sequence[str], *, cwd: Path, timeout_s: float) -> Path:
    """Run ``qualify run RUN_ARGS`` in its own process; the run directory it printed.

    Bad input is the caller's (exit 2 with the child's own line); any other exit code is the
    verdict's, read from the audit by the caller.
    """
    # Its own session: a Ctrl-C reaches the experiment only, which hands it on once and waits,
    # so the run stops its E2E and completes its reports as an interrupted run does.
    with subprocess.Popen(
        [sys.executable, "-m", "qualify", "run", *run_args],
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    ) as process:
        try:
            stdout, stderr = process.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            stdout, stderr = _stop(process, signal.SIGTERM)
        except KeyboardInterrupt:
            _stop(process, signal.SIGINT)
            raise
    if process.returncode == EXIT_USAGE:
        lines = stderr.strip().splitlines() or ["qualify run refused the repetition"]
        raise UsageError(lines[-1].removeprefix("qualify run: error: "))
    printed = stdout.strip().splitlines()
    candidate = cwd / printed[-1] if printed else None
    if candidate is None or not RunDir(candidate).exists():
        tail = (stderr.strip().splitlines() or ["no output"])[-1]
        raise RuntimeError(f"qualify run exited {process.returncode} without a run dir: {tail}")
    return candidate


STOP_GRACE_S = 60.0
"""How long a stopped ``qualify run`` has to stop its E2E and write its reports."""


def _stop(process: subprocess.Popen[str], signal_number: int) -> tuple[str, str]:
    """Ask the run to stop (it writes its reports); kill it if it does not in time."""
    process.send_signal(signal_number)
    try:
        return process.communicate(timeout=STOP_GRACE_S)
    except subprocess.TimeoutExpired:
        process.kill()
        return process.communicate()
