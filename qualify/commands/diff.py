"""``qualify diff RUN_A RUN_B``: what changed from one run to another (verdict, peak, each
phase's peak and duration, parity, tests)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TextIO

from qualify.commands._args import Commands
from qualify.publish.errorline import error_line
from qualify.report.run_diff import diff_runs, render_diff
from qualify.rundir import Audit, RunDir
from qualify.verdict import EXIT_PASSED, EXIT_USAGE


def _read(path: Path) -> tuple[RunDir, Audit] | str:
    """The run directory and its audit, or why ``path`` is not one (a bundle's ``public/``
    is one too: it holds the audit and the JUnit file)."""
    run_dir = RunDir(path)
    if not path.is_dir():
        return f"{str(path)!r} is not a run directory (valid: a directory holding an audit)"
    read = run_dir.read_audit()
    if read.audit is None:
        why = "; ".join(read.problems[:2]) or "no audit"
        return f"{str(path)!r} is not a run directory ({why})"
    return run_dir, read.audit


def diff(
    run_a: Path,
    run_b: Path,
    output_format: str = "text",
    stdout: TextIO = sys.stdout,
    stderr: TextIO = sys.stderr,
) -> int:
    """Print the change from ``run_a`` to ``run_b``; 0, or 2 when either is not a run."""
    read_a, read_b = _read(run_a), _read(run_b)
    if isinstance(read_a, str) or isinstance(read_b, str):
        stderr.write(error_line("qualify diff", read_a if isinstance(read_a, str) else read_b))
        return EXIT_USAGE
    (dir_a, audit_a), (dir_b, audit_b) = read_a, read_b
    result = diff_runs(dir_a, audit_a, dir_b, audit_b)
    if output_format == "json":
        json.dump(result.to_dict(), stdout, indent=2)
        stdout.write("\n")
    else:
        stdout.write(render_diff(result))
    return EXIT_PASSED


def add_parser(commands: Commands) -> None:
    parser = commands.add_parser(
        "diff", help="what changed from one run to another (peaks per phase, verdict, tests)"
    )
    parser.add_argument("run_a", type=Path, help="the earlier run directory (e.g. main's)")
    parser.add_argument("run_b", type=Path, help="the later run directory (e.g. the head's)")
    parser.add_argument(
        "--format", dest="output_format", choices=("text", "json"), default="text",
        help="text (default) or json",
    )  # fmt: skip


def main(args: argparse.Namespace) -> int:
    return diff(args.run_a, args.run_b, args.output_format)
