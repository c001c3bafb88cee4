"""``qualify triage``: classify a run directory or raw CI artifacts, print the answer."""

from __future__ import annotations

import io
import json
import os
import sys
from pathlib import Path

from rich.console import Console

from harness import contract
from qualify.commands.publish import in_ci, terminal_text
from qualify.publish.bundle import learn_from_run
from qualify.publish.sanitize import Identities, Sanitizer
from qualify.publish.scan import TERMINAL, describe, final_scan
from qualify.triage import Sources
from qualify.triage import triage as run_triage
from qualify.triage.render import render_json, render_markdown, render_terminal
from qualify.verdict import EXIT_USAGE

FORMATS = ("text", "markdown", "json")


def _usage(message: str) -> int:
    sys.stderr.write(f"qualify triage: error: {message}\n")
    return EXIT_USAGE


def triage(
    *,
    run_dir: Path | None,
    logs: list[Path],
    inspect: list[Path],
    kernel: list[Path],
    junit: list[Path],
    report_log: list[Path],
    output_format: str = "text",
) -> int:
    """Print the triage; the exit code is the class family (0, 1, 3, 4; 2 bad usage)."""
    if output_format not in FORMATS:
        return _usage(f"--format {output_format!r} is not one of {', '.join(FORMATS)}")
    if run_dir is None and not (logs or inspect or kernel or junit or report_log):
        return _usage(
            "give a run directory or at least one of --log/--inspect/--kernel/--junit/--report-log"
        )
    if run_dir is not None and not run_dir.is_dir():
        return _usage(f"{run_dir} is not a directory (a run directory holds {contract.AUDIT})")
    for path in [*logs, *inspect, *kernel, *junit, *report_log]:
        if not path.is_file():
            return _usage(f"{path} is not a file")
    result = run_triage(
        Sources(
            run_dir=run_dir,
            logs=tuple(logs),
            inspect=tuple(inspect),
            kernel=tuple(kernel),
            junit=tuple(junit),
            report_log=tuple(report_log),
        )
    )
    if output_format == "json":
        text = render_json(result) + "\n"
    elif output_format == "markdown":
        text = render_markdown(result)
    else:
        color = sys.stdout.isatty() and "NO_COLOR" not in os.environ
        buffer = io.StringIO()
        render_terminal(
            result,
            Console(file=buffer, highlight=False, soft_wrap=True, force_terminal=color),
        )
        text = buffer.getvalue()
    if in_ci(os.environ):
        text = _sanitized(text, output_format, run_dir)
    sys.stdout.write(text)
    return result.exit_code


def _sanitized(text: str, output_format: str, run_dir: Path | None) -> str:
    """In CI the output is a public log: the same sanitizer as a run's publication (without
    writing anything into the run directory)."""
    sanitizer = Sanitizer(os.environ, Identities.current(os.environ))
    if run_dir is not None:
        learn_from_run(run_dir, sanitizer)
    if output_format == "json":
        cleaned = json.dumps(sanitizer.clean_json(json.loads(text)), indent=2) + "\n"
        leaks = final_scan(cleaned.encode(), sanitizer.index, TERMINAL, "")
        return cleaned if not leaks else json.dumps({"withheld": describe(leaks)}) + "\n"
    return terminal_text(text, sanitizer, os.environ)
