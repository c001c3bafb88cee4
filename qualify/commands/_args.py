"""What the commands' parsers share: the parser class, argument types and option groups."""

from __future__ import annotations

import argparse
import io
import json
import math
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO, TypeAlias

from qualify.sandbox import CHOICES as BACKENDS
from qualify.verdict import EXIT_USAGE

if TYPE_CHECKING:
    from qualify.publish.sources import SecretSources


class Parser(argparse.ArgumentParser):
    """argparse that reports bad usage as one line and exit code 2 (no usage dump)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        from qualify.publish.errorline import error_line

        sys.stderr.write(error_line(self.prog, message))
        raise SystemExit(EXIT_USAGE)


Commands: TypeAlias = "argparse._SubParsersAction[Parser]"
"""The ``add_subparsers`` action each command adds its parser to."""


def directory(text: str) -> Path:
    """An output directory: '' is not valid (``Path('')`` would silently be the current one)."""
    if not text:
        raise argparse.ArgumentTypeError(
            "'' is not valid (valid: a directory path; '.' for the current directory)"
        )
    return Path(text)


def count(text: str) -> int:
    """A whole number >= 0."""
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not valid (valid: a whole number >= 0)")
    return value


def positive(text: str) -> int:
    """A whole number >= 1."""
    value = count(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not valid (valid: a whole number >= 1)")
    return value


def nats(text: str) -> float:
    """A finite number of nats >= 0 (not nan, not inf)."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not valid (valid: a finite number of nats >= 0)"
        )
    return value


def env_name(text: str) -> str:
    """An environment variable name (letters, digits, ``_``; not starting with a digit)."""
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", text):
        raise argparse.ArgumentTypeError(
            f"{text!r} is not valid (valid: an environment variable name, [A-Za-z_][A-Za-z0-9_]*)"
        )
    return text


def secret_options(parser: argparse.ArgumentParser) -> None:
    """``--secret-env`` and ``--secrets-file``: values redacted from everything published."""
    parser.add_argument(
        "--secret-env",
        dest="secret_env",
        action="append",
        type=env_name,
        default=[],
        metavar="NAME",
        help="redact this environment variable's value too, whatever its name (repeatable)",
    )
    parser.add_argument(
        "--secrets-file",
        dest="secrets_file",
        type=Path,
        metavar="FILE",
        help="more values to redact, one per line (for CI systems that mask their own)",
    )


def pass_env_option(parser: argparse.ArgumentParser) -> None:
    """``--pass-env``: a secret variable the E2E is given all the same (every other one is
    kept from it)."""
    parser.add_argument(
        "--pass-env",
        dest="pass_env",
        action="append",
        type=env_name,
        default=[],
        metavar="NAME",
        help="give the E2E this secret variable (kept from it otherwise; repeatable)",
    )


def sources(args: argparse.Namespace) -> SecretSources:
    """The secret sources ``secret_options`` parsed."""
    from qualify.publish.sources import SecretSources

    return SecretSources.given(args.secret_env, args.secrets_file)


def github_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--github",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="step summary, annotations, outputs (default: when GITHUB_ACTIONS=true)",
    )


def family_search_options(parser: argparse.ArgumentParser) -> None:
    """``--families-dir`` and ``--repo``: where a command looks for families."""
    families_dir_option(parser)
    parser.add_argument("--repo", type=Path, help="repo whose families/ is searched (default: .)")


def experiment_options(parser: argparse.ArgumentParser) -> None:
    """What every run of an experiment is given alike (as ``qualify run`` takes it)."""
    parser.add_argument(
        "--family", required=True, help="family name (a directory with family.toml)"
    )
    parser.add_argument(
        "--set",
        dest="sets",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a family option given to every run (repeatable)",
    )
    families_dir_option(parser)
    parser.add_argument("--repo", type=Path, help="the repo whose head is qualified (default: .)")
    parser.add_argument(
        "--out", type=directory, default=Path("reports"), help="output root (default reports)"
    )
    parser.add_argument("--timeout", help="E2E timeout of each run (default: the family's)")
    parser.add_argument(
        "--backend",
        default="auto",
        choices=BACKENDS,
        help="how each run's cap is enforced, as for qualify run (default auto)",
    )
    parser.add_argument("--image", help="docker image every run uses (default: none)")
    format_option(parser, "the record (the file written beside the runs)")


def families_dir_option(parser: argparse.ArgumentParser) -> None:
    """``--families-dir DIR`` (repeatable): where a command looks for families."""
    parser.add_argument(
        "--families-dir",
        action="append",
        type=Path,
        default=[],
        help="where families live (repeatable; default: the repo's families/ and qualify's)",
    )


def format_option(parser: argparse.ArgumentParser, what: str) -> None:
    """``--format text|json``: json prints ``what`` as JSON on stdout instead of the text."""
    parser.add_argument(
        "--format",
        dest="output_format",
        choices=("text", "json"),
        default="text",
        help=f"text (default), or json: {what} on stdout",
    )


def printed_record(
    command: Callable[[TextIO], int], record: str, output_format: str, stdout: TextIO
) -> int:
    """Run ``command`` (given where to print); with json, print the JSON file its text's last
    line names (or the file ``record`` of the directory it names) instead of that text.
    Returns its exit code."""
    if output_format != "json":
        return command(stdout)
    captured = io.StringIO()
    code = command(captured)
    lines = captured.getvalue().splitlines()
    path = Path(lines[-1]) if lines else None
    if path is not None and path.is_dir():
        path = path / record
    if path is not None and path.is_file():
        stdout.write(path.read_text(encoding="utf-8").rstrip("\n") + "\n")
    return code


def experiment_common(args: argparse.Namespace) -> dict[str, Any]:
    """The fields of ``experiment_options`` as the experiments' requests take them."""
    return {
        "family_name": args.family,
        "sets": args.sets,
        "families_dirs": args.families_dir,
        "repo": args.repo,
        "out": args.out,
        "timeout": args.timeout,
        "backend": args.backend,
        "image": args.image,
    }


def command_line(args: argparse.Namespace) -> list[str]:
    """The command line as typed (``cli`` keeps it on ``args.argv``), for the records."""
    return ["qualify", *getattr(args, "argv", [])]


def print_json(document: object, stdout: TextIO) -> None:
    """``document`` as the one JSON document on stdout (``--format json``)."""
    stdout.write(json.dumps(document, indent=2) + "\n")
