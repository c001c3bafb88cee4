"""Read the inputs and build the Triage: class, evidence, attribution, remedies, warnings."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from harness import contract
from qualify.evidence.docker_state import read_docker_state
from qualify.evidence.scan import scan_log
from qualify.evidence.testresults import read_junit_outcomes, read_report_log
from qualify.rundir import RunDir
from qualify.sizes import format_bytes
from qualify.triage.analysis import read_run_dir
from qualify.triage.classify import conflicts, decide, missing_for
from qualify.triage.model import Finding, Triage, TriageClass
from qualify.triage.remedies import attribution, cuda_remedies, memory_remedies, trt_remedies
from qualify.triage.signals import Bag, Inputs, gather
from qualify.triage.sparkline import sparkline

RUN_LOGS = (contract.STDERR, contract.STDOUT)


@dataclasses.dataclass(frozen=True)
class Sources:
    """What the user pointed triage at (any combination)."""

    run_dir: Path | None = None
    logs: tuple[Path, ...] = ()
    inspect: tuple[Path, ...] = ()
    kernel: tuple[Path, ...] = ()
    junit: tuple[Path, ...] = ()
    report_log: tuple[Path, ...] = ()


def _scan(path: Path, inputs: Inputs, name: str | None = None) -> Any:
    scan = scan_log(path, name)
    if scan.error:
        inputs.problems.append(scan.error)
    elif scan.size_bytes == 0 and name is None:  # a run's own empty stderr is normal
        inputs.problems.append(f"{scan.source} is empty")
    elif scan.binary:
        inputs.problems.append(f"{scan.source} looks binary (NUL bytes): scanned as text anyway")
    if scan.dropped:
        inputs.problems.append(f"{scan.source}: {scan.dropped} repeated signal lines not kept")
    return scan


def read_inputs(sources: Sources) -> Inputs:
    """Parse every given input; problems are collected, never raised."""
    inputs = Inputs()
    if sources.run_dir is not None:
        run = read_run_dir(sources.run_dir)
        inputs.run = run
        inputs.problems.extend(run.problems)
        for name in RUN_LOGS:
            if (sources.run_dir / name).exists():
                inputs.logs.append(_scan(sources.run_dir / name, inputs, name))
        junit = RunDir(sources.run_dir).junit_path
        if junit.exists():
            inputs.tests.append(read_junit_outcomes(junit, junit.name))
    inputs.logs.extend(_scan(path, inputs) for path in sources.logs)
    inputs.kernel.extend(_scan(path, inputs) for path in sources.kernel)
    for path in sources.inspect:
        state, problem = read_docker_state(path)
        inputs.docker.append(state)
        if problem:
            inputs.problems.append(problem)
    for path in sources.junit:
        inputs.tests.append(read_junit_outcomes(path))
    for path in sources.report_log:
        inputs.tests.append(read_report_log(path))
    inputs.problems.extend(t.problem for t in inputs.tests if t.problem)
    return inputs


def _remedies(
    triage_class: TriageClass, bag: Bag, inputs: Inputs, section: dict[str, Any]
) -> list[str]:
    if triage_class in (TriageClass.CGROUP_OOM, TriageClass.GLOBAL_OOM):
        return memory_remedies(inputs.run, bag, section)
    if triage_class.name.startswith("CUDA_OOM") and bag.cuda:
        return cuda_remedies(bag.cuda[0][1], triage_class, bag, inputs.run)
    if triage_class is TriageClass.CUDA_OOM_CAPACITY and bag.trt:
        return trt_remedies(bag)
    if triage_class is TriageClass.TIMEOUT and inputs.run is not None and inputs.run.audit:
        limit = inputs.run.audit.timings.timeout_s
        running = inputs.run.audit.tests.running_at_end
        phase = section.get("phase_at_end")
        where = ", ".join(x for x in (f"phase {phase}" if phase else "", running or "") if x)
        return [
            f"the E2E ran past its {limit}s timeout ({where or 'no phase open'}): "
            "raise [e2e] timeout / --timeout, or find what hangs there"
        ]
    if triage_class is TriageClass.EXTERNAL_KILL:
        return [
            "find who sent the signal (a CI cancel, a runner shutdown, a watchdog); "
            "give --kernel dmesg.txt to rule out an OOM kill"
        ]
    return []


def _warnings(inputs: Inputs) -> list[str]:
    warnings = list(inputs.problems)
    audit = inputs.run.audit if inputs.run is not None else None
    if audit is not None and audit.commit.dirty:
        warnings.append(
            f"dirty tree: the run tested uncommitted changes (tree {audit.commit.tree}), not "
            f"head {audit.commit.head}"
        )
    return warnings


def _findings(section: dict[str, Any]) -> list[Finding]:
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
    for culprit in section.get("culprits", [])[:1]:
        findings.append(
            Finding(
                f"largest process at the peak: {culprit.get('name')} (pid {culprit.get('pid')}, "
                f"rss {format_bytes(culprit.get('rss_bytes'))})"
            )
        )
    for victim in section.get("victims", [])[:3]:
        rss = victim.get("anon_rss_bytes")
        findings.append(
            Finding(
                f"killed: {victim.get('comm')} (pid {victim.get('pid')})"
                + (f", anon-rss {format_bytes(rss)}" if rss is not None else "")
                + (f" by {victim['signal']}" if victim.get("signal") else "")
            )
        )
    return findings


def _inputs_record(sources: Sources) -> list[dict[str, Any]]:
    record = []
    if sources.run_dir is not None:
        record.append({"kind": "run_dir", "path": str(sources.run_dir)})
    for kind in ("logs", "inspect", "kernel", "junit", "report_log"):
        record.extend({"kind": kind, "path": str(p)} for p in getattr(sources, kind))
    return record


def triage(sources: Sources) -> Triage:
    """The whole triage of ``sources``."""
    inputs = read_inputs(sources)
    bag = gather(inputs)
    triage_class, summary, decided_by = decide(bag)
    section = attribution(inputs.run, bag)
    return Triage(
        triage_class=triage_class,
        summary=summary,
        decided_by=decided_by,
        findings=tuple(_findings(section)),
        conflicts=tuple(conflicts(bag)),
        warnings=tuple(_warnings(inputs)),
        remedies=tuple(_remedies(triage_class, bag, inputs, section)),
        missing=tuple(missing_for(triage_class, bag, bool(sources.kernel))),
        inputs=tuple(_inputs_record(sources)),
        attribution=section,
        sparkline=sparkline(inputs.run, section.get("cap_bytes")) if inputs.run else None,
    )
