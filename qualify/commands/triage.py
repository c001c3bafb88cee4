"""``qualify triage``: classify a run directory or raw CI artifacts, print the answer."""

from __future__ import annotations

import sys
from pathlib import Path

from rich.console import Console

from harness import contract
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
        sys.stdout.write(render_json(result) + "\n")
    elif output_format == "markdown":
        sys.stdout.write(render_markdown(result))
    else:
        render_terminal(result, Console(highlight=False, soft_wrap=True))
    return result.exit_code
