"""Read the inputs and build the Triage: class, evidence, attribution, remedies, warnings."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any

from harness import contract
from qualify import records
from qualify.evidence.detect import detect, head_text
from qualify.evidence.docker_state import read_docker_state
from qualify.evidence.headers import messages
from qualify.evidence.pod import (
    memory_capped,
    memory_used_up,
    platform_named,
    pod_memory_limit,
)
from qualify.evidence.pytest_reports import read_junit_outcomes, read_report_log
from qualify.evidence.scan import MAX_LINE_BYTES, ScanResult, scan_log
from qualify.records import frozen_record
from qualify.run.last_gasp import allocation_words
from qualify.rundir import RunDir
from qualify.sizes import format_bytes
from qualify.triage.analysis import read_run_dir
from qualify.triage.classify import LOW, Decision, conflicts, decide, missing_for
from qualify.triage.model import Finding, Triage, TriageClass
from qualify.triage.remedies import (
    attribution,
    cuda_remedies,
    engine_remedies,
    memory_remedies,
)
from qualify.triage.signals import Bag, Inputs, gather
from qualify.triage.sparkline import sparkline
from qualify.untrusted import READ_LIMIT_BYTES, describe_size, kind_of

RUN_LOGS = (contract.STDERR, contract.STDOUT)


@frozen_record
class Sources:
    """What the user pointed triage at (any combination).

    ``paths`` are detected by their content (``qualify.evidence.detect``); the other fields are
    the explicit overrides (--log, --inspect...). ``labels`` names a path in the evidence
    (standard input is read into a temporary file, cited as "<stdin>").
    """

    run_dir: Path | None = None
    logs: tuple[Path, ...] = ()
    inspect: tuple[Path, ...] = ()
    kernel: tuple[Path, ...] = ()
    junit: tuple[Path, ...] = ()
    report_log: tuple[Path, ...] = ()
    paths: tuple[Path, ...] = ()
    labels: tuple[tuple[Path, str], ...] = ()

    def label(self, path: Path) -> str:
        """How evidence from ``path`` names it."""
        return dict(self.labels).get(path, str(path))


def detected(sources: Sources) -> Sources:
    """``sources`` with each of ``paths`` moved to the field its content calls for (a pod
    description is read as a log); a path that cannot be read stays a log (its scan says why)."""
    fields: dict[str, list[Path]] = {
        "logs": list(sources.logs),
        "inspect": list(sources.inspect),
        "kernel": list(sources.kernel),
        "junit": list(sources.junit),
        "report_log": list(sources.report_log),
    }
    run_dir = sources.run_dir
    for path in sources.paths:
        try:
            kind = detect(path)
        except OSError:
            kind = "log"
        owner = run_dir_of(path) if kind in ("junit", "audit", "run_dir") else None
        if owner is not None and run_dir is None:
            run_dir = owner  # qualify's own report, or its public/ copy: the whole run
            continue
        if kind in ("run_dir", "audit") and run_dir is None:
            run_dir = path
            continue
        target = {"pod": "logs", "log": "logs", "run_dir": "logs", "audit": "logs"}.get(kind, kind)
        fields[target].append(path)
    return records.replace(
        sources,
        run_dir=run_dir,
        paths=(),
        logs=tuple(fields["logs"]),
        inspect=tuple(fields["inspect"]),
        kernel=tuple(fields["kernel"]),
        junit=tuple(fields["junit"]),
        report_log=tuple(fields["report_log"]),
    )


def run_dir_of(path: Path) -> Path | None:
    """The qualify run directory ``path`` belongs to: the run directory holding it when it is
    the run's own JUnit file or audit, or when it is the run's ``public/`` copy
    (on the machine that ran it, the whole run is there to read). None otherwise."""
    if path.is_dir() and path.name == contract.PUBLIC_DIR:
        parent = path.absolute().parent
    elif path.name in (contract.JUNIT, contract.AUDIT):
        parent = path.absolute().parent
        if parent.name == contract.PUBLIC_DIR and (parent.parent / contract.AUDIT).is_file():
            parent = parent.parent
    else:
        return None
    if (parent / contract.AUDIT).is_file() and (parent / contract.EVENTS).is_file():
        return parent
    return None


def _scan(path: Path, inputs: Inputs, name: str | None = None, own: bool = False) -> Any:
    scan = scan_log(path, name)
    if scan.error:
        inputs.problems.append(scan.error)
    elif scan.size_bytes == 0 and not own:  # a run's own empty stderr is normal
        inputs.problems.append(f"{scan.source} is empty")
    elif scan.binary:
        inputs.problems.append(f"{scan.source} looks binary (NUL bytes): scanned as text anyway")
    if scan.dropped:
        inputs.problems.append(f"{scan.source}: {scan.dropped} repeated signal lines not kept")
    if scan.long_lines:
        inputs.problems.append(
            f"{scan.source}:{scan.first_long_line}: {scan.long_lines} line(s) longer than "
            f"{MAX_LINE_BYTES >> 10} KiB (progress bars, a JSON blob): read in windows around "
            "the words triage looks for, not whole"
        )
    return scan


def _refused(path: Path) -> str | None:
    """Why a log of the run directory is not scanned: qualify keeps its own logs bounded (head
    and tail), so a larger one, or one that is not a regular file, is the E2E's doing."""
    try:
        status = os.lstat(path)
    except OSError:
        return None
    kind = kind_of(status.st_mode)
    if kind is not None:
        return f"{path.name} is {kind}: not read"
    if status.st_size > READ_LIMIT_BYTES:
        limit = f"over the {READ_LIMIT_BYTES}-byte limit"
        return f"{path.name}: {describe_size(status)}, {limit}: not read"
    return None


def read_inputs(sources: Sources) -> Inputs:
    """Parse every given input; problems are collected, never raised."""
    sources = detected(sources)
    inputs = Inputs()
    if sources.run_dir is not None:
        run = read_run_dir(sources.run_dir)
        inputs.run = run
        inputs.problems.extend(run.problems)
        for name in RUN_LOGS if sources.run_dir.is_dir() else ():
            refused = _refused(sources.run_dir / name)
            if refused:
                inputs.problems.append(refused)
            elif (sources.run_dir / name).exists():
                inputs.logs.append(_scan(sources.run_dir / name, inputs, name, own=True))
        junit = RunDir(sources.run_dir).junit_path
        if sources.run_dir.is_dir() and junit.exists():
            inputs.tests.append(read_junit_outcomes(junit, junit.name))
    inputs.logs.extend(_scan(path, inputs, sources.label(path)) for path in sources.logs)
    for path in (*sources.logs, *sources.kernel):  # a kernel report pasted with its story
        with contextlib.suppress(OSError):
            head = messages(head_text(path))  # (read as its lines' messages: headers.py)
            limit = pod_memory_limit(head, sources.label(path))
            if limit is not None:
                inputs.limits.append(limit)
            if path in sources.logs:  # (a host's dmesg names docker0 and its veths: no platform)
                inputs.platform = inputs.platform or platform_named(head, sources.label(path))
            inputs.used_up = inputs.used_up or memory_used_up(head, sources.label(path))
            inputs.capped = inputs.capped or memory_capped(head, sources.label(path))
    inputs.kernel.extend(_scan(path, inputs, sources.label(path)) for path in sources.kernel)
    for path in sources.inspect:
        state, problem = read_docker_state(path, sources.label(path))
        inputs.docker.append(state)
        if problem:
            inputs.problems.append(problem)
        if state.empty:  # JSON that names OOMKilled as a value (a structured log): its lines
            inputs.logs.append(_scan(path, inputs, sources.label(path)))
    for path in sources.junit:
        inputs.tests.append(read_junit_outcomes(path, sources.label(path)))
    for path in sources.report_log:
        inputs.tests.append(read_report_log(path, sources.label(path)))
    inputs.problems.extend(t.problem for t in inputs.tests if t.problem)
    return inputs


def _remedies(decision: Decision, bag: Bag, inputs: Inputs, section: dict[str, Any]) -> list[str]:
    triage_class = decision.triage_class
    if triage_class in (TriageClass.CGROUP_OOM, TriageClass.GLOBAL_OOM):
        return memory_remedies(inputs.run, bag, section)
    if triage_class.name.startswith("CUDA_OOM") and bag.gpu:
        first = bag.gpu[0]
        if first.oom is not None:
            return cuda_remedies(first.oom, triage_class, bag, inputs.run)
        return engine_remedies(first)
    if triage_class is TriageClass.TIMEOUT:
        return _timeout_remedies(bag, inputs, section)
    if triage_class is TriageClass.EXTERNAL_KILL:
        return _kill_remedies(bag)
    return []


def _timeout_remedies(bag: Bag, inputs: Inputs, section: dict[str, Any]) -> list[str]:
    if inputs.run is not None and inputs.run.audit:
        limit = inputs.run.audit.timings.timeout_s
        running = inputs.run.audit.tests.running_at_end
        phase = section.get("phase_at_end")
        where = ", ".join(x for x in (f"phase {phase}" if phase else "", running or "") if x)
        return [
            f"the E2E ran past its {limit}s timeout ({where or 'no phase open'}): "
            "raise [e2e] timeout / --timeout, or find what hangs there"
        ]
    texts = " ".join(e.text for e in bag.timeouts).lower()
    if "stack of" in texts or "+ timeout +" in texts or "failed: timeout" in texts:
        return [
            "a test ran past pytest-timeout's limit: the stack dump after the Timeout banner "
            "shows where it waited; fix the hang, or raise --timeout / @pytest.mark.timeout "
            "if the test is only slow"
        ]
    if "due to time limit" in texts:  # Slurm's own words
        return ["the Slurm job ran past its time limit: raise --time, or make the job faster"]
    if "job killed: walltime" in texts or "job killed: cput" in texts:
        return [
            "the batch server killed the job at the walltime or CPU time it was given (the line "
            "states both figures): request more (-l walltime=, -l cput=), or make the job faster"
        ]
    # The limit's name where the evidence shows whose it is; else no system is named.
    where = ""
    if "maximum execution time" in texts:
        where = " (timeout-minutes, on GitHub Actions)"
    elif "execution took longer than" in texts:
        where = " (the job's timeout, on GitLab CI)"
    return [
        f"the job ran past its time limit{where}: find the step that hangs, or raise the "
        "limit if the job is only slow"
    ]


def _kill_remedies(bag: Bag) -> list[str]:
    kinds = {e.kind for e in bag.kills}
    texts = " ".join(e.text for e in bag.kills).lower()
    remedies = []
    if "killed signal terminated program" in texts:
        remedies.append(
            "the compiler was SIGKILLed: on CI almost always the machine or container running "
            "out of memory during a parallel build; lower the build's parallelism (make -j, "
            "CMAKE_BUILD_PARALLEL_LEVEL, MAX_JOBS) or give the job more memory"
        )
    if "agent_lost" in kinds:
        agent = "the Buildkite agent" if "(agent lost)" in texts else "the CI agent"
        remedies.append(
            f"{agent} stopped reporting (its host was terminated, starved or cut off: "
            "preemption, a host OOM, a crash): look at the agent host's own logs"
        )
    if "runner_shutdown" in kinds:
        remedies.append(
            "the GitHub runner was shut down under the job (a lost hosted runner is often one "
            "that ran out of memory, or was preempted): rerun, and watch the job's memory"
        )
    if bag.kill_signal == "SIGKILL":
        remedies.append(
            'exit 137 / "Killed" is SIGKILL, which is also what an OOM kill looks like: the '
            "kernel log (dmesg), kubectl describe pod or docker inspect says whether it was "
            "one; else find who sent it (a CI cancel, a watchdog)"
        )
    elif not remedies:
        remedies.append(
            "find who stopped the job (a CI cancel, a newer push, a runner shutdown, a "
            "watchdog); give a kernel log to rule out an OOM kill"
        )
    return remedies


def _warnings(inputs: Inputs) -> list[str]:
    warnings = list(inputs.problems)
    audit = inputs.run.audit if inputs.run is not None else None
    if audit is not None and audit.commit.dirty:
        warnings.append(
            f"dirty tree: the run tested uncommitted changes (tree {audit.commit.tree}), not "
            f"head {audit.commit.head}"
        )
    return warnings


def _findings(section: dict[str, Any], bag: Bag, decision: Decision) -> list[Finding]:
    findings = []
    for retained in section.get("retention", []):
        findings.append(
            Finding(
                f"{retained['phase']} left {format_bytes(retained['retained_bytes'])} resident "
                f"while {retained['next_phase']} ran"
            )
        )
    if section.get("phase_at_peak"):
        peak = format_bytes(section.get("peak_bytes"))
        findings.append(Finding(f"peak {peak} in phase {section['phase_at_peak']}"))
    site = section.get("allocating")
    if site:
        findings.append(Finding(allocation_words(site)))
    for culprit in section.get("culprits", [])[:1]:
        test = culprit.get("test")
        running = f", running {test} ({culprit.get('test_phase')})" if test else ""
        when = " (read at the cap)" if culprit.get("read") == "at the cap" else ""
        findings.append(
            Finding(
                f"largest process at the peak{when}: {culprit.get('name')} "
                f"(pid {culprit.get('pid')}, rss {format_bytes(culprit.get('rss_bytes'))}){running}"
            )
        )
    for victim in section.get("victims", [])[:3]:
        findings.append(Finding(_killed_title(victim)))
    if bag.gpu_handled:
        findings.append(
            Finding(
                "GPU out-of-memory handled by the program (it retried, or a passing summary "
                "followed): not what ended the run",
                tuple(bag.gpu_handled[:3]),
            )
        )
    for hit in bag.gpu[:1]:
        own = hit.oom.self_process() if hit.oom is not None else None
        if own is not None and decision.triage_class.name.startswith("CUDA_OOM"):
            findings.append(
                Finding(
                    f'"Process {own[0]} has {format_bytes(own[1])}" is the failing process '
                    "itself (PyTorch names it by its host pid from inside a container), not "
                    "another process",
                    (hit.evidence,),
                )
            )
    if bag.trt_warnings and not decision.triage_class.name.startswith("CUDA_OOM"):
        findings.append(
            Finding(
                "TensorRT skipped tactics for lack of memory (warnings: the build went on)",
                tuple(bag.trt_warnings[:2]),
            )
        )
    return findings


def _killed_title(victim: dict[str, Any]) -> str:
    """ "killed: cc1plus (pid 12), anon-rss 1.2 GiB by SIGKILL", leaving out what is unknown."""
    who = victim.get("comm") or "a process"
    pid = f" (pid {victim['pid']})" if victim.get("pid") is not None else ""
    rss = victim.get("anon_rss_bytes")
    return (
        f"killed: {who}{pid}"
        + (f", anon-rss {format_bytes(rss)}" if rss is not None else "")
        + (f" by {victim['signal']}" if victim.get("signal") else "")
    )


def _inputs_record(sources: Sources, given: Sources) -> list[dict[str, Any]]:
    """Each input with the kind it was read as (``detected``: from its content, not a flag)."""
    auto = set(given.paths)
    record = []
    if sources.run_dir is not None:
        entry = {"kind": "run_dir", "path": str(sources.run_dir)}
        record.append({**entry, "detected": sources.run_dir in auto})
    for kind in ("logs", "inspect", "kernel", "junit", "report_log"):
        record.extend(
            {"kind": kind, "path": sources.label(p), "detected": p in auto}
            for p in getattr(sources, kind)
        )
    return record


def _with_headings(scan: ScanResult) -> ScanResult:
    """``scan`` with its headings' signals among its lines' (``ScanResult.headings``)."""
    if not scan.headings:
        return scan
    signals = sorted(scan.signals + scan.headings, key=lambda s: s.evidence.line or 0)
    return records.replace(scan, signals=signals, headings=[])


_HANDLED_KINDS = frozenset({"oom_handled", "gpu_oom_handled"})


def _answered_under(logs: list[ScanResult]) -> bool:
    """Whether a log's text shows an OOM handled (trunk-recorder's "Failed to allocate
    zero-copy buffer", then "Falling back to buffers in userspace", under a heading that names
    the refusal) or memory's words another failure's (dblab's heading '"out of memory" trying to
    open a 128K DB', over go-sqlite3's "unable to open database file: out of memory (14)")."""
    return any(
        s.signal.kind in _HANDLED_KINDS
        or (s.signal.kind == "memory_noted" and s.signal.fields.get("other_error"))
        for scan in logs
        for s in scan.signals
    )


def triage(sources: Sources) -> Triage:
    """The whole triage of ``sources`` (paths detected by content first)."""
    given, sources = sources, detected(sources)
    inputs = read_inputs(sources)
    bag = gather(inputs)
    decision = decide(bag)
    if (
        decision.triage_class is TriageClass.UNKNOWN
        and any(s.headings for s in inputs.logs)
        and not _answered_under(inputs.logs)
    ):
        # Nothing in the text decided: its headings (an issue's title) are read as well, unless
        # the text shows an OOM handled or the words another failure's (the heading names the
        # event the text shows survived, or names it by the words the text explains).
        titled = records.replace(inputs, logs=[_with_headings(scan) for scan in inputs.logs])
        bag_titled = gather(titled)
        decided = decide(bag_titled)
        if decided.triage_class is not TriageClass.UNKNOWN:
            said = f"{decided.summary} (as a heading says; nothing in the text under it decides)"
            decided = records.replace(decided, summary=said, confidence=LOW)
            inputs, bag, decision = titled, bag_titled, decided
    section = attribution(inputs.run, bag)
    missing = [f"not in the message: {gap}" for gap in decision.gaps]
    missing += missing_for(decision.triage_class, bag, bool(sources.kernel))
    summary = decision.summary
    site = section.get("allocating")
    if site and decision.triage_class in (TriageClass.CGROUP_OOM, TriageClass.GLOBAL_OOM):
        summary += f": {allocation_words(site)}"
    return Triage(
        triage_class=decision.triage_class,
        summary=summary,
        decided_by=decision.evidence,
        confidence=decision.confidence,
        findings=tuple(_findings(section, bag, decision)),
        conflicts=tuple(conflicts(bag)),
        warnings=tuple(_warnings(inputs)),
        remedies=tuple(_remedies(decision, bag, inputs, section)),
        missing=tuple(missing),
        inputs=tuple(_inputs_record(sources, given)),
        attribution=section,
        sparkline=sparkline(inputs.run, section.get("cap_bytes")) if inputs.run else None,
    )
