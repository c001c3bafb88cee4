"""``qualify triage``: classify a run directory or raw CI artifacts, print the answer.

``qualify triage PATH...`` reads each path's kind from its content (run directory, docker
inspect, kernel log, JUnit, pytest report log, pod description, console log); ``-`` is standard
input, copied to a temporary file first (the scan reads files by offset). ``--log``,
``--inspect``, ``--kernel``, ``--junit`` and ``--report-log`` force a kind.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from rich.console import Console

from qualify.commands._args import Commands, secret_options, sources
from qualify.commands.publish import in_ci, terminal_text
from qualify.errors import UsageError
from qualify.publish.bundle import learn_from_run
from qualify.publish.errorline import error_line
from qualify.publish.final_scan import TERMINAL, describe, final_scan
from qualify.publish.sanitize import Identities, Sanitizer
from qualify.publish.sources import SecretSources, recorded_sources
from qualify.triage import Sources
from qualify.triage import triage as run_triage
from qualify.triage.render import render_json, render_markdown, render_terminal
from qualify.verdict import EXIT_USAGE

FORMATS = ("text", "markdown", "json")


def _usage(message: str) -> int:
    sys.stderr.write(error_line("qualify triage", message))
    return EXIT_USAGE


STDIN = Path("-")
STDIN_LABEL = "<stdin>"


@contextmanager
def _stdin_file(paths: list[Path]) -> Iterator[dict[Path, Path]]:
    """``-`` read into a temporary file (removed afterwards): {Path("-"): that file}."""
    if STDIN not in paths:
        yield {}
        return
    with tempfile.NamedTemporaryFile(prefix="qualify-triage-stdin-") as copy:
        shutil.copyfileobj(sys.stdin.buffer, copy, 1 << 20)
        copy.flush()
        yield {STDIN: Path(copy.name)}


def triage(
    *,
    run_dir: Path | None = None,
    paths: list[Path] | None = None,
    logs: list[Path],
    inspect: list[Path],
    kernel: list[Path],
    junit: list[Path],
    report_log: list[Path],
    output_format: str = "text",
    sources: SecretSources | None = None,
) -> int:
    """Print the triage; the exit code is the class family (0, 1, 3, 4; 2 bad usage).

    In CI (a public log) the output is sanitized with the secrets of the run's recorded sources
    and of ``sources`` (``--secret-env``, ``--secrets-file``)."""
    if output_format not in FORMATS:
        return _usage(f"--format {output_format!r} is not one of {', '.join(FORMATS)}")
    paths = list(paths or [])
    if run_dir is not None:
        paths.insert(0, run_dir)
    flagged = [*logs, *inspect, *kernel, *junit, *report_log]
    if not (paths or flagged):
        return _usage(
            "give what the run left: a run directory, a console log, a kernel log, docker "
            "inspect output, JUnit XML... (their kinds are read from the content; - is standard "
            "input), or force a kind with --log/--inspect/--kernel/--junit/--report-log"
        )
    if [*paths, *flagged].count(STDIN) > 1:
        return _usage("standard input (-) can be given once")
    for path in paths:
        if path != STDIN and not (path.is_dir() or path.is_file()):
            return _usage(f"{path}: no such file or directory")
    for path in flagged:
        if path != STDIN and not path.is_file():
            return _usage(f"{path} is not a file")
    with _stdin_file([*paths, *flagged]) as stdin:

        def real(items: list[Path]) -> tuple[Path, ...]:
            return tuple(stdin.get(path, path) for path in items)

        result = run_triage(
            Sources(
                paths=real(paths),
                logs=real(logs),
                inspect=real(inspect),
                kernel=real(kernel),
                junit=real(junit),
                report_log=real(report_log),
                labels=tuple((copy, STDIN_LABEL) for copy in stdin.values()),
            )
        )
    run_dir = next((Path(i["path"]) for i in result.inputs if i["kind"] == "run_dir"), None)
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
        try:
            text = _sanitized(text, output_format, run_dir, sources or SecretSources())
        except UsageError as exc:  # a secrets file that is gone or holds ordinary words
            return _usage(str(exc))
    sys.stdout.write(text)
    return result.exit_code


def _sanitized(text: str, output_format: str, run_dir: Path | None, sources: SecretSources) -> str:
    """In CI the output is a public log: the same sanitizer as a run's publication, with the
    run's recorded secret sources (without writing anything into the run directory)."""
    if run_dir is not None:
        sources = recorded_sources(run_dir).union(sources)
    sanitizer = Sanitizer(
        os.environ,
        Identities.current(os.environ),
        known=sources.known(),
        secret_env=sources.secret_env,
    )
    if run_dir is not None:
        learn_from_run(run_dir, sanitizer)
    if output_format == "json":
        cleaned = json.dumps(sanitizer.clean_json(json.loads(text)), indent=2) + "\n"
        leaks = final_scan(cleaned.encode(), sanitizer.index, TERMINAL, "")
        return cleaned if not leaks else json.dumps({"withheld": describe(leaks)}) + "\n"
    return terminal_text(text, sanitizer, os.environ)


def add_parser(commands: Commands) -> None:
    parser = commands.add_parser("triage", help="why a run died and what to change")
    parser.add_argument(
        "paths",
        type=Path,
        nargs="*",
        metavar="PATH",
        help="run directory, console log, kernel log, docker inspect, JUnit... (kind read from "
        "the content; - is standard input)",
    )
    kinds = {
        "log": "a console log",
        "inspect": "docker inspect output",
        "kernel": "a kernel log (dmesg, journalctl -k)",
        "junit": "a JUnit file",
        "report-log": "a pytest-reportlog file",
    }
    for flag, what in kinds.items():
        parser.add_argument(
            f"--{flag}",
            action="append",
            type=Path,
            default=[],
            metavar="PATH",
            help=f"{what}, its kind given rather than read from the content (repeatable)",
        )
    parser.add_argument(
        "--format",
        dest="output_format",
        choices=("text", "markdown", "json"),
        default="text",
        help="text (default), markdown (a PR comment) or json (stable keys)",
    )
    secret_options(parser)


def main(args: argparse.Namespace) -> int:
    return triage(
        paths=args.paths,
        logs=args.log,
        inspect=args.inspect,
        kernel=args.kernel,
        junit=args.junit,
        report_log=args.report_log,
        output_format=args.output_format,
        sources=sources(args),
    )
