"""The command line's shape: ``qualify/cli.py`` is the table of commands and the exit, each
command's parser and work live in its own module, and ``qualify --help`` speaks to users."""

from __future__ import annotations

import ast
import subprocess
import sys

import pytest

from tests.conftest import ROOT

CLI = ROOT / "qualify" / "cli.py"
COMMANDS_DIR = ROOT / "qualify" / "commands"
MAX_CLI_LINES = 150


def _commands() -> tuple[str, ...]:
    from qualify.cli import COMMANDS

    return COMMANDS


def test_the_cli_module_stays_thin() -> None:
    lines = CLI.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= MAX_CLI_LINES, f"qualify/cli.py has {len(lines)} lines"


def test_every_command_module_is_in_the_table() -> None:
    modules = {path.stem for path in COMMANDS_DIR.glob("*.py") if not path.stem.startswith("_")}
    assert modules == set(_commands())


@pytest.mark.parametrize("name", _commands())
def test_every_command_module_has_add_parser_and_main(name: str) -> None:
    tree = ast.parse((COMMANDS_DIR / f"{name}.py").read_text(encoding="utf-8"))
    functions = {
        node.name: node
        for node in tree.body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    }
    for wanted in ("add_parser", "main"):
        assert wanted in functions, f"qualify/commands/{name}.py has no top-level {wanted}()"
        assert len(functions[wanted].args.args) == 1, f"{name}.{wanted} takes one argument"
    returns = functions["main"].returns
    assert isinstance(returns, ast.Name) and returns.id == "int", f"{name}.main -> int"


def _one_line_helps() -> dict[str, str]:
    import argparse

    from qualify.cli import build_parser

    (action,) = [
        action
        for action in build_parser()._actions
        if isinstance(action, argparse._SubParsersAction)
    ]
    return {choice.dest: choice.help or "" for choice in action._choices_actions}


def test_top_level_help_speaks_to_users() -> None:
    import importlib

    done = subprocess.run(
        [sys.executable, "-m", "qualify", "--help"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    text = done.stdout
    assert "memory cap" in text  # what qualify is
    assert "exit codes" in text and "2 bad usage" in text
    flowing = " ".join(text.split())
    for name, line in _one_line_helps().items():
        assert line and "\n" not in line, f"{name} has no one-line help"
        assert f"{name} {line}" in flowing, name
    # No code docstring: none of the modules' own first lines, no reST markup, no design talk.
    for name in ("cli", *(f"commands.{command}" for command in _commands())):
        doc = importlib.import_module(f"qualify.{name}").__doc__ or ""
        first = doc.strip().splitlines()[0] if doc.strip() else ""
        if name != "cli" and first:
            assert first not in text, f"qualify.{name}'s docstring is in --help"
    for code_word in ("``", "dispatch", "parse and", "import"):
        assert code_word not in text, code_word


def test_every_flag_has_help_that_gives_its_default() -> None:
    """``--help`` answers what each flag does and what it is when not given."""
    import argparse

    from qualify.cli import build_parser

    parser = build_parser()
    (commands,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    missing, silent = [], []
    for name, command in commands.choices.items():
        for action in command._actions:
            if not action.option_strings or isinstance(action, argparse._HelpAction):
                continue
            flag = f"{name} {action.option_strings[0]}"
            if not action.help:
                missing.append(flag)
            elif action.default not in (None, False, [], argparse.SUPPRESS) and (
                "default" not in action.help
            ):
                silent.append(flag)
    assert (missing, silent) == ([], [])


def test_run_help_ends_with_three_examples_and_the_exit_codes() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "qualify", "run", "--help"],
        cwd=ROOT, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    tail = done.stdout[done.stdout.index("\nexamples:\n") :].strip().splitlines()
    examples = tail[1 : tail.index("exit codes:")]
    assert [line.split()[:2] for line in examples if line.strip()] == [["qualify", "run"]] * 3
    codes = [line.split()[0] for line in tail[tail.index("exit codes:") + 1 :]]
    assert codes == ["0", "1", "2", "3", "4"]
