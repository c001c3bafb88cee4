"""``qualify report RUN_DIR``: the report page of a run and, inside GitHub Actions, its summary,
annotations and outputs (sanitized, written once per run directory)."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TextIO

from harness import contract
from qualify.commands._args import (
    Commands,
    format_option,
    github_option,
    secret_options,
    sources,
)
from qualify.commands.publish import (
    failed_run_triage,
    github_json,
    terminal_json,
    terminal_text,
    wants_github,
    write_report,
)
from qualify.errors import UsageError
from qualify.publish.bundle import run_sanitizer
from qualify.publish.errorline import error_line
from qualify.publish.github import publish_github
from qualify.publish.sources import SecretSources
from qualify.rundir import RunDir
from qualify.verdict import EXIT_ERROR, EXIT_USAGE


def report(
    run_dir: Path,
    github: bool | None = None,
    environ: Mapping[str, str] | None = None,
    stdout: TextIO = sys.stdout,
    stderr: TextIO = sys.stderr,
    sources: SecretSources | None = None,
    output_format: str = "text",
) -> int:
    """Write the report page; publish to GitHub when ``github`` (None: when GITHUB_ACTIONS=true).
    With ``output_format`` json, stdout is one JSON document: the page's path and what the
    GitHub channels did (their annotations go to stderr instead)."""
    environ = os.environ if environ is None else environ
    directory = RunDir(run_dir)
    if not directory.exists():
        message = f"{str(run_dir)!r} is not a run directory (it holds no audit)"
        stderr.write(error_line("qualify report", message))
        return EXIT_USAGE
    findings = failed_run_triage(directory)  # the page's and the step summary's
    path = write_report(directory, findings)
    try:
        sanitizer = run_sanitizer(run_dir, environ, sources)
    except UsageError as exc:  # a recorded secrets file that is gone, or a bad one given
        stderr.write(error_line("qualify report", exc))
        return EXIT_USAGE
    code = 0
    written = None
    if wants_github(github, environ):
        annotations = stderr if output_format == "json" else stdout
        result = publish_github(directory, environ, annotations, sanitizer, findings)
        written = github_json(result)
        for reason in result.withheld.values():
            stderr.write(f"qualify report: publication failed: {reason}\n")
        code = 0 if result.ok else EXIT_ERROR
    if path is None:
        stderr.write("qualify report: error: the report page could not be written (debug log)\n")
        code = EXIT_ERROR
    if output_format == "json":
        document = {
            "run_dir": str(run_dir),
            "report": None if path is None else str(path),
            "github": written,
        }
        stdout.write(terminal_json(document, sanitizer, environ))
    elif path is not None:
        stdout.write(terminal_text(f"{path}\n", sanitizer, environ))
    return code


def add_parser(commands: Commands) -> None:
    report = commands.add_parser("report", help=f"write {contract.REPORT_HTML} of a run directory")
    report.add_argument("run_dir", type=Path, help="reports/<sha>/<family>/<profile>/<run-id>")
    github_option(report)
    secret_options(report)
    format_option(report, "the page's path and what the GitHub channels did")


def main(args: argparse.Namespace) -> int:
    return report(
        run_dir=args.run_dir,
        github=args.github,
        sources=sources(args),
        output_format=args.output_format,
    )
