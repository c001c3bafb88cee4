"""The tokenizer to export: a directory checked before anything loads it, or a family's own.

Refused with one line each (exit 2): a directory with no tokenizer, a slow-only tokenizer (no
``tokenizer.json``: the client would rebuild it with whatever converter it has), and one that
needs the model's remote code (``auto_map``: a benchmark client loads without it).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from qualify.errors import UsageError

FAST_FILE = "tokenizer.json"
CONFIG_FILE = "tokenizer_config.json"
SLOW_FILES = ("tokenizer.model", "vocab.json", "merges.txt", "vocab.txt", "spiece.model")

# How each family that has a tokenizer produces it: a module run with the family directory on
# PYTHONPATH whose last line of output is the directory (created on first use, cached).
FAMILY_TOKENIZERS: dict[str, list[str]] = {
    "tiny": ["-m", "tiny_engine.checkpoint", "tiny"],
    "phi4": ["-m", "phi4_engine.tokenizer"],
}


def check_source(directory: Path) -> None:
    """Raise :class:`UsageError` unless ``directory`` holds a fast tokenizer needing no remote
    code."""
    if not directory.is_dir():
        raise UsageError(f"--model-dir {directory}: not a directory")
    auto_map = _auto_map(directory)
    if auto_map is not None:
        raise UsageError(
            f"--model-dir {directory}: the tokenizer needs the model's remote code "
            f"(auto_map AutoTokenizer = {auto_map}); a client loads it without: export a "
            "tokenizer that transformers can load on its own"
        )
    if not (directory / FAST_FILE).is_file():
        slow = [name for name in SLOW_FILES if (directory / name).is_file()]
        if slow:
            raise UsageError(
                f"--model-dir {directory}: only a slow tokenizer ({', '.join(slow)}), no "
                f"{FAST_FILE}; convert it to a fast tokenizer first (valid: a directory with "
                f"{FAST_FILE})"
            )
        raise UsageError(
            f"--model-dir {directory}: no tokenizer (valid: a directory with {FAST_FILE})"
        )


def family_tokenizer(name: str, search: list[Path]) -> Path:
    """The tokenizer directory of family ``name`` (built into its cache on first use)."""
    if name not in FAMILY_TOKENIZERS:
        valid = ", ".join(sorted(FAMILY_TOKENIZERS))
        raise UsageError(f"--family {name!r} has no tokenizer recipe (valid: {valid})")
    directory = next((root / name for root in search if (root / name).is_dir()), None)
    if directory is None:
        raise UsageError(f"--family {name!r}: not found in {', '.join(map(str, search))}")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(directory), env.get("PYTHONPATH")]))
    command = [sys.executable, *FAMILY_TOKENIZERS[name]]
    result = subprocess.run(
        command, cwd=directory, env=env, capture_output=True, text=True, check=False
    )
    lines = result.stdout.strip().splitlines()
    if result.returncode == 2:
        reason = (result.stderr.strip().splitlines() or ["no reason given"])[-1]
        raise UsageError(f"--family {name}: {reason}")
    if result.returncode != 0 or not lines:
        raise RuntimeError(f"{' '.join(command)} failed ({result.returncode}):\n{result.stderr}")
    return Path(lines[-1])


def _auto_map(directory: Path) -> Any:
    for name in (CONFIG_FILE, "config.json"):
        path = directory / name
        if not path.is_file():
            continue
        try:
            document = json.loads(path.read_text(encoding="utf-8"))
        except (ValueError, UnicodeDecodeError, RecursionError) as exc:
            raise UsageError(f"--model-dir {directory}: {name} is not valid JSON ({exc})") from None
        auto_map = document.get("auto_map") if isinstance(document, dict) else None
        if isinstance(auto_map, dict) and "AutoTokenizer" in auto_map:
            return auto_map["AutoTokenizer"]
    return None
