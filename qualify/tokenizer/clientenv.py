"""The benchmark client's own environment: a separate venv with the pip-installed client.

Never the family's or qualify's environment: AIPerf 0.13.0 requires ``huggingface-hub<2.0``
(its wheel's metadata) while the family stack may run huggingface-hub 2.x (transformers 5.24
accepts ``>=1.31,<3``); one pip install into the other would downgrade a library under the
model. Likewise the ``transformers`` client (plain ``AutoTokenizer.from_pretrained``, as a
serving or benchmark stack still pinned to transformers 4 loads the directory) cannot share a
venv with the family's transformers 5. The venv is created on first use under the user's cache
directory and reused; a ``.qualify-ready`` marker, written last under an flock, tells a finished
venv from a broken one.
"""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from qualify.errors import UsageError
from qualify.records import frozen_record

CLIENTS = {"aiperf": "0.13.0", "transformers": "4.57.6"}
"""Supported clients and the version a bare ``--client NAME`` means."""
COMPANIONS = {"transformers": ("jinja2",)}
"""What a client's loader needs beside the client: transformers does not require jinja2, and
without it ``apply_chat_template`` fails."""
ENV_CACHE_DIR = "QUALIFY_CACHE_DIR"
READY_MARKER = ".qualify-ready"


@frozen_record
class Client:
    """A benchmark client pinned to one version."""

    name: str
    version: str

    @property
    def requirement(self) -> str:
        """The pip requirement that installs it."""
        return f"{self.name}=={self.version}"

    @property
    def requirements(self) -> list[str]:
        """Everything pip installs into the client's venv."""
        return [self.requirement, *COMPANIONS.get(self.name, ())]


def parse_client(text: str) -> Client:
    """``aiperf``, ``aiperf==0.13.0``, ``transformers==4.57.6``...; anything else is a usage
    error."""
    match = re.fullmatch(r"([a-z0-9_-]+)(?:==([0-9][0-9A-Za-z.+-]*))?", text.strip())
    if match is None or match.group(1) not in CLIENTS:
        valid = ", ".join(f"{name}[==VERSION]" for name in CLIENTS)
        raise UsageError(f"--client {text!r} is not valid (valid: {valid})")
    name = match.group(1)
    return Client(name, match.group(2) or CLIENTS[name])


def cache_root() -> Path:
    """``$QUALIFY_CACHE_DIR``, else ``$XDG_CACHE_HOME/qualify``, else ``~/.cache/qualify``."""
    configured = os.environ.get(ENV_CACHE_DIR)
    if configured:
        return Path(configured)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "qualify"


def venv_dir(client: Client, root: Path | None = None) -> Path:
    """Where ``client``'s venv lives (whether it exists yet or not)."""
    tag = f"py{sys.version_info.major}{sys.version_info.minor}"
    return (
        (cache_root() if root is None else root)
        / "clients"
        / f"{client.name}-{client.version}-{tag}"
    )


def is_ready(client: Client, root: Path | None = None) -> bool:
    """True when ``client``'s venv was completed earlier."""
    return (venv_dir(client, root) / READY_MARKER).is_file()


def ensure_venv(client: Client, root: Path | None = None) -> Path:
    """The Python of ``client``'s venv, created and pip-installed first when needed."""
    directory = venv_dir(client, root)
    python = directory / "bin" / "python"
    if (directory / READY_MARKER).is_file():
        return python
    directory.parent.mkdir(parents=True, exist_ok=True)
    lock = os.open(directory.parent / f".{directory.name}.lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (directory / READY_MARKER).is_file():  # another process finished it meanwhile
            return python
        shutil.rmtree(directory, ignore_errors=True)
        _run([_base_python(), "-m", "venv", str(directory)], "create the venv")
        _run(
            [str(python), "-m", "pip", "install", "--quiet", *client.requirements],
            f"pip install {' '.join(client.requirements)}",
        )
        freeze = _run([str(python), "-m", "pip", "freeze"], "list the venv")
        (directory / READY_MARKER).write_text(freeze, encoding="utf-8")
        return python
    finally:
        os.close(lock)


def _base_python() -> str:
    # venv from inside a venv bases the new one on the same interpreter, not on this venv.
    return sys.executable


def _run(command: list[str], what: str) -> str:
    result = subprocess.run(
        command, capture_output=True, text=True, check=False, stdin=subprocess.DEVNULL
    )
    if result.returncode != 0:
        tail = (result.stderr.strip().splitlines() or ["no output"])[-1]
        raise UsageError(
            f"cannot {what} ({' '.join(command[:4])} ...): {tail}; "
            "or give a client environment with --python"
        )
    return result.stdout
