"""``qualify report RUN_DIR``: report.html of a run and, inside GitHub Actions, its summary."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TextIO

from qualify.report.github import publish_github
from qualify.report.html import write_html_report
from qualify.verdict import EXIT_USAGE


def report(
    run_dir: Path,
    github: bool | None = None,
    environ: Mapping[str, str] | None = None,
    stdout: TextIO = sys.stdout,
    stderr: TextIO = sys.stderr,
) -> int:
    """Write report.html; publish to GitHub when ``github`` (None: when GITHUB_ACTIONS=true)."""
    environ = os.environ if environ is None else environ
    if not (run_dir / "audit.json").is_file():
        stderr.write(
            f"qualify report: error: {str(run_dir)!r} is not a run directory (no audit.json)\n"
        )
        return EXIT_USAGE
    path = write_html_report(run_dir)
    if github or (github is None and environ.get("GITHUB_ACTIONS") == "true"):
        publish_github(run_dir, environ, stdout)
    stdout.write(f"{path}\n")
    return 0
