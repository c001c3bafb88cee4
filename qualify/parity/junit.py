"""Parity as JUnit test cases: one per recorded case, plus one for the corpus gate."""

from __future__ import annotations

from qualify.evidence.junit import JUnitCase
from qualify.parity.results import CaseResult, ParityReport

GATE_CASE = "parity-gate"
"""Name of the test case that carries the gate's decision."""


def junit_cases(report: ParityReport, family: str, repro: str) -> list[JUnitCase]:
    """Every case (classname ``<family>.parity``), then the gate's own test case.

    A divergence fails its test case when the gate fails; when the gate tolerates it
    (min_exact below the case count), it is reported as skipped with the same evidence, so
    that a passing run does not publish red test cases yet the divergence stays visible.
    """
    classname = f"{family}.parity"
    cases = [_case_junit(result, classname, report, repro) for result in report.per_case]
    cases.append(_gate_junit(report, classname, repro))
    return cases


def _case_junit(result: CaseResult, classname: str, report: ParityReport, repro: str) -> JUnitCase:
    text = result.failure_message(repro)
    if text is None:
        return JUnitCase(classname, result.case_id, "passed")
    headline = text.splitlines()[0]
    if report.passed:
        message = f"tolerated by the parity gate ({report.reason}): {headline}"
        return JUnitCase(classname, result.case_id, "skipped", 0.0, message, text)
    return JUnitCase(
        classname, result.case_id, "failed", 0.0, headline, text, kind=result.kind.name
    )


def _gate_junit(report: ParityReport, classname: str, repro: str) -> JUnitCase:
    if report.passed:
        return JUnitCase(classname, GATE_CASE, "passed")
    lines = [
        report.reason,
        f"exact {report.exact}, tie {report.tie}, noise {report.within_noise}, near-tie "
        f"{report.near_tie}, wrong {report.wrong}, length/eos {report.length_or_eos}, missing "
        f"{report.missing}; forced continuation drifts in {report.drift}",
        "gate: " + ", ".join(f"{key}={value}" for key, value in report.gate.to_dict().items()),
        *([report.odds_line] if report.odds_line else []),
        *(f"warning: {warning}" for warning in report.warnings),
        f"reproduce: {repro}",
    ]
    return JUnitCase(
        classname,
        GATE_CASE,
        "failed",
        0.0,
        f"parity gate not met: {report.reason}",
        "\n".join(lines),
        kind="PARITY_FAILED",
    )
