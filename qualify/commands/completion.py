"""``qualify completion bash|zsh``: a shell completion script, made from the command line's
own parsers (every command, each one's flags, the choices of those that have them, the
profiles qualify knows), so that it never drifts from them.

    source <(qualify completion bash)                         # ~/.bashrc
    source <(qualify completion zsh)                          # ~/.zshrc (bashcompinit)

``--family`` completes the families of the current repository (``families/*/family.toml``);
flags that take a path complete file names; a command's other words complete file names.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from typing import TextIO

from qualify.commands._args import Commands

SHELLS = ("bash", "zsh")

_PATHS = {"--out", "--repo", "--families-dir", "--secrets-file", "--matrix", "--submitted",
          "--base-run", "--venv"}  # fmt: skip
"""Flags whose value is a path: their values complete file names."""

_ZSH_HEAD = """#compdef qualify
autoload -U +X compinit && compinit
autoload -U +X bashcompinit && bashcompinit
"""


def _commands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _words(words: list[str]) -> str:
    return " ".join(shlex.quote(word) for word in words)


def bash_script(parser: argparse.ArgumentParser) -> str:
    """The bash completion function ``_qualify`` and its ``complete`` line, for the command
    line ``parser`` (``qualify.cli.build_parser``'s, with every command)."""
    from qualify.plan.profiles import available_profiles

    commands = _commands(parser)
    options: list[str] = []
    values: list[str] = []
    for name, command in commands.items():
        flags: list[str] = []
        for action in command._actions:
            flags += [flag for flag in action.option_strings if flag.startswith("--")]
            for flag in action.option_strings:
                if action.choices is not None and not isinstance(action.choices, dict):
                    choices = _words([str(choice) for choice in action.choices])
                    values.append(f'    "{name} {flag}") words={shlex.quote(choices)};;')
                elif flag == "--profile":
                    profiles = _words(sorted(available_profiles()))
                    values.append(f'    "{name} {flag}") words={shlex.quote(profiles)};;')
        options.append(f"    {name}) words={shlex.quote(_words(sorted(set(flags))))};;")
    paths = "|".join(f'*" {flag}"' for flag in sorted(_PATHS))
    return "\n".join(
        [
            "# qualify completion for bash: source <(qualify completion bash)",
            "_qualify() {",
            '  local cur="${COMP_WORDS[COMP_CWORD]}" prev="${COMP_WORDS[COMP_CWORD-1]}" words',
            '  if [ "$COMP_CWORD" -le 1 ]; then',
            f"    COMPREPLY=($(compgen -W {shlex.quote(_words([*commands, '--help', '--version']))}"
            ' -- "$cur")); return 0',
            "  fi",
            '  local command="${COMP_WORDS[1]}"',
            '  case "$command $prev" in',
            *values,
            '    *" --family") words=""',
            "      local toml",
            "      for toml in families/*/family.toml; do",
            '        [ -e "$toml" ] && { toml="${toml#families/}"; words="$words ${toml%%/*}"; }',
            "      done;;",
            f'    {paths}) COMPREPLY=($(compgen -f -- "$cur")); return 0;;',
            '    *) words="";;',
            "  esac",
            '  if [ -n "$words" ] || [ "$prev" = "--family" ]; then',
            '    COMPREPLY=($(compgen -W "$words" -- "$cur")); return 0',
            "  fi",
            '  case "$command" in',
            *options,
            '    *) words="";;',
            "  esac",
            '  if [[ "$cur" == -* ]]; then',
            '    COMPREPLY=($(compgen -W "$words" -- "$cur"))',
            "  else",
            '    COMPREPLY=($(compgen -f -- "$cur"))',
            "  fi",
            "}",
            "complete -F _qualify qualify",
            "",
        ]
    )


def completion(shell: str, parser: argparse.ArgumentParser, stdout: TextIO = sys.stdout) -> int:
    """Print the script for ``shell``."""
    script = bash_script(parser)
    stdout.write(_ZSH_HEAD + script if shell == "zsh" else script)
    return 0


def add_parser(commands: Commands) -> None:
    parser = commands.add_parser(
        "completion",
        help="print a shell completion script (bash, zsh)",
        description="Print a completion script for qualify's commands, flags and their "
        "values: source <(qualify completion bash), or zsh in ~/.zshrc.",
    )
    parser.add_argument("shell", choices=SHELLS, help="the shell: bash or zsh")


def main(args: argparse.Namespace) -> int:
    # The whole command line, as ``qualify.cli`` builds it (passed down: commands sit below it).
    return completion(args.shell, args.build_parser())
