"""qualify: run a model family's end-to-end tests under a real memory cap, judge them, explain
out-of-memory deaths, and publish JUnit and an audit tied to the commit.

exit codes: 0 passed; 1 tests or parity failed; 2 bad usage; 3 out of memory, killed or timed
out; 4 qualify could not judge the run, or publication was withheld. "qualify COMMAND --help"
describes each command; docs/cli.md has them all.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from typing import NoReturn

from qualify import __version__
from qualify.commands import _overlap
from qualify.commands._args import Parser
from qualify.verdict import EXIT_PIPE_CLOSED

COMMANDS = (
    "run",
    "compare",
    "diff",
    "profiles",
    "families",
    "triage",
    "report",
    "publish",
    "matrix",
    "merge",
    "submit",
    "doctor",
    "tokenizer",
    "ab",
    "headroom",
    "bisect",
    "completion",
)
"""Every command, in ``--help``'s order; each is ``qualify.commands.<name>``, with its own
``add_parser(commands)`` and ``main(args) -> int``."""


def _module(name: str) -> object:
    return importlib.import_module(f"qualify.commands.{name}")


def build_parser(command: str | None = None) -> Parser:
    """The command line; with ``command`` (one of ``COMMANDS``) only that command's parser under
    the top level, so that a command imports no other command's module."""
    parser = Parser(
        prog="qualify",
        description=__doc__.split("\n\n")[0].replace("\n", " "),
        epilog=__doc__.split("\n\n", 1)[1].strip(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"qualify {__version__}")
    commands = parser.add_subparsers(
        dest="command", required=True, parser_class=Parser, metavar="COMMAND"
    )
    for name in [command] if command in COMMANDS else COMMANDS:
        _module(name).add_parser(commands)  # type: ignore[attr-defined]
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """What the ``qualify`` command does with ``argv`` (the command line's by default);
    returns the exit code."""
    arguments = list(sys.argv[1:] if argv is None else argv)
    args = build_parser(arguments[0] if arguments else None).parse_args(arguments)
    args.argv = arguments
    args.build_parser = build_parser
    code: int = _module(args.command).main(args)  # type: ignore[attr-defined]
    return code


def entry() -> NoReturn:
    """The ``qualify`` console script and ``python -m qualify``: ``main``, and its exit code."""
    try:
        code = main()
    except SystemExit as exc:
        if not (exc.code is None or isinstance(exc.code, int)):
            raise
        code = exc.code or 0
    except BrokenPipeError:  # stdout's reader went away (| head): as a SIGPIPE would end it
        from qualify.console import silence

        silence(sys.stdout)
        code = EXIT_PIPE_CLOSED
    _overlap.exit_now(code)
