"""``qualify completion bash|zsh``: the script, loaded in a real bash and a real zsh, completes
commands, each command's flags, their values and the repository's families."""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path

import pytest

from qualify.cli import build_parser
from tests.conftest import qualify_argv


def _script(shell: str) -> str:
    made = subprocess.run(
        qualify_argv("completion", shell), capture_output=True, text=True, check=True, timeout=60
    )
    return made.stdout


@pytest.fixture(scope="module")
def scripts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    where = tmp_path_factory.mktemp("completion")
    paths = {}
    for shell in ("bash", "zsh"):
        paths[shell] = where / f"qualify.{shell}"
        paths[shell].write_text(_script(shell))
    return paths


def _complete(scripts: dict[str, Path], shell: str, words: list[str], cwd: Path) -> list[str]:
    """What the completion function offers for ``words`` (the last one being completed), as
    the shell's completion system calls it. zsh's bashcompinit calls it with 0-based arrays
    and ``PREFIX`` set to the word, and its ``compgen`` leaves the matching to ``compadd``:
    the candidates are matched against the word here as ``compadd`` does."""
    array = " ".join(shlex.quote(word) for word in words)
    body = (
        f"source {shlex.quote(str(scripts[shell]))}\n"
        f"COMP_WORDS=({array}); COMP_CWORD={len(words) - 1}\n"
        "_qualify\n"
        'printf "%s\\n" "${COMPREPLY[@]}"\n'
    )
    if shell == "zsh":
        body = f"setopt ksharrays; PREFIX={shlex.quote(words[-1])}\n" + body
    done = subprocess.run(
        [shell, "-c", body], cwd=cwd, capture_output=True, text=True, check=False, timeout=60
    )
    assert done.returncode == 0, done.stderr
    offered = [line for line in done.stdout.splitlines() if line]
    return sorted(line for line in offered if line.startswith(words[-1]))


@pytest.mark.parametrize("shell", ["bash", "zsh"])
def test_commands_flags_values_and_families_complete(
    scripts: dict[str, Path], shell: str, repo: Path
) -> None:
    (repo / "reports").mkdir()
    assert _complete(scripts, shell, ["qualify", "he"], repo) == ["headroom"]
    assert _complete(scripts, shell, ["qualify", "run", "--ba"], repo) == [
        "--backend", "--base-ref", "--base-run",
    ]  # fmt: skip
    assert _complete(scripts, shell, ["qualify", "run", "--backend", ""], repo) == [
        "auto", "cgroup", "docker", "none",
    ]  # fmt: skip
    assert _complete(scripts, shell, ["qualify", "ab", "--profile", "s"], repo) == [
        "small", "standard",
    ]  # fmt: skip
    assert _complete(scripts, shell, ["qualify", "run", "--family", ""], repo) == ["hog"]
    assert _complete(scripts, shell, ["qualify", "run", "--out", "rep"], repo) == ["reports"]
    assert _complete(scripts, shell, ["qualify", "triage", "--format", ""], repo) == [
        "json", "markdown", "text",
    ]  # fmt: skip


def test_every_flag_of_every_command_is_in_the_script(scripts: dict[str, Path]) -> None:
    text = scripts["bash"].read_text()
    parser = build_parser()
    (commands,) = [a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction"]
    for name, command in commands.choices.items():
        line = next(line for line in text.splitlines() if line.startswith(f"    {name}) words="))
        offered = line.partition("words=")[2].rstrip(";").strip("'").split()
        for action in command._actions:
            for flag in action.option_strings:
                if flag.startswith("--"):
                    assert flag in offered, (name, flag)
