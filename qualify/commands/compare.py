"""``qualify compare``: token parity of recorded cases, native against reference."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TextIO

from harness import contract
from qualify.commands._args import Commands, count, format_option, nats
from qualify.parity import (
    CaseResult,
    ParityConfigError,
    ParityGate,
    ParityInputError,
    ParityReport,
    compare_files,
)
from qualify.parity.failure_text import show_token
from qualify.publish.errorline import error_line
from qualify.rundir import RunDir

FORMATS = ("text", "json")
_TOKEN_WIDTH = 24


def compare(
    *,
    native: Path,
    reference: Path | None,
    gate: ParityGate | Mapping[str, object],
    output_format: str = "text",
    stdout: TextIO = sys.stdout,
    stderr: TextIO = sys.stderr,
) -> int:
    """Compare and print the result; 0 when the gate passes, 1 when not, 2 on bad input.

    ``gate``: the gate, or the fields its flags set (``--min-exact``...), validated here: a bad
    value or combination (a tie above the near-tie threshold) is bad input."""
    if output_format not in FORMATS:
        return _usage_error(stderr, f"--format {output_format!r} is not one of {FORMATS}")
    if reference is not None and (native.is_dir() or reference.is_dir()):
        return _usage_error(
            stderr,
            f"{str(native if native.is_dir() else reference)!r} is a directory (valid: one "
            "run directory, or two parity files: native and reference); what changed from one "
            "run to another: qualify diff RUN_A RUN_B",
        )
    run_gate = _run_gate(native) if native.is_dir() and reference is None else None
    if not isinstance(gate, ParityGate):
        try:
            gate = ParityGate.from_table({**(run_gate or {}), **gate})
        except ParityConfigError as exc:
            return _usage_error(stderr, f"the parity gate is not valid: {exc}")
    if native.is_dir():  # a run directory: its recorded cases
        native = RunDir(native).parity_path
    try:
        report = compare_files(native, reference, gate)
    except ParityInputError as exc:
        return _usage_error(stderr, str(exc))
    for warning in report.warnings:
        print(f"qualify compare: warning: {warning}", file=stderr)
    if output_format == "json":
        json.dump(report.to_dict(), stdout, indent=2)
        stdout.write("\n")
    else:
        stdout.write(render_table(report))
    return 0 if report.passed else 1


def _run_gate(run_dir: Path) -> dict[str, object] | None:
    """The gate a run directory's audit records (the family's, with the run's options): what
    ``qualify run`` judged by, so that compare judges the same cases the same way."""
    audit = RunDir(run_dir).read_audit().audit
    if audit is None or audit.parity is None:
        return None
    return audit.parity.gate.gate().to_dict()


def render_table(report: ParityReport) -> str:
    """One row per case (case, kind, first divergence, both tokens), then the gate line."""
    rows = [("case", "kind", "diverges at", "native", "reference", "fed the reference's tokens")]
    rows.extend(_row(result) for result in report.per_case)
    widths = [max(len(row[column]) for row in rows) for column in range(len(rows[0]))]
    lines = [
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in rows
    ]
    lines.append(_gate_line(report))
    if report.odds_line is not None:
        lines.append(report.odds_line)
    return "\n".join(lines) + "\n"


def _row(result: CaseResult) -> tuple[str, str, str, str, str, str]:
    if result.first_divergence is None:
        # EXACT, or MISSING: say which side has no record.
        native = "(no record)" if result.native is None else ""
        reference = "(no record)" if result.reference is None else ""
        return (result.case_id, result.kind.value, "-", native, reference, "")
    forced = result.teacher_forced
    return (
        result.case_id,
        result.kind.value,
        str(result.first_divergence),
        _clip(show_token(result.native_token, result.native)),
        _clip(show_token(result.reference_token, result.reference)),
        "-" if forced is None else forced.describe(),
    )


def _clip(text: str) -> str:
    return text if len(text) <= _TOKEN_WIDTH else text[: _TOKEN_WIDTH - 3] + "..."


def _gate_line(report: ParityReport) -> str:
    counts = (
        f"exact {report.exact}, tie {report.tie}, noise {report.within_noise}, near-tie "
        f"{report.near_tie}, wrong {report.wrong}, length/eos {report.length_or_eos}, missing "
        f"{report.missing}, drift {report.drift}"
    )
    verdict = "PASSED" if report.passed else "FAILED"
    return f"parity {verdict}: {report.reason}; {counts}"


def _usage_error(stderr: TextIO, message: str) -> int:
    stderr.write(error_line("qualify compare", message))
    return 2


def add_parser(commands: Commands) -> None:
    compare = commands.add_parser("compare", help="token-by-token parity of recorded cases")
    compare.add_argument(
        "native",
        type=Path,
        help=f"a run directory, its {contract.PARITY} (both sides), or the native side",
    )
    compare.add_argument("reference", type=Path, nargs="?", help="the reference side")
    compare.add_argument(
        "--min-exact",
        type=count,
        help="cases that must match exactly (default: a run directory's recorded gate, else all)",
    )
    compare.add_argument("--near-tie-nats", type=nats, help="near-tie threshold in nats")
    compare.add_argument("--tie-nats", type=nats, help="tie threshold (float rounding) in nats")
    compare.add_argument(
        "--count-near-ties",
        action="store_true",
        default=None,
        help="near-ties count as exact toward --min-exact (default: the family's, else no)",
    )
    format_option(compare, "the comparison")


def main(args: argparse.Namespace) -> int:
    overrides = {
        key: value
        for key, value in (
            ("min_exact", args.min_exact),
            ("near_tie_nats", args.near_tie_nats),
            ("tie_nats", args.tie_nats),
            ("count_near_ties", args.count_near_ties),
        )
        if value is not None
    }
    return compare(
        native=args.native,
        reference=args.reference,
        gate=overrides,
        output_format=args.output_format,
    )
