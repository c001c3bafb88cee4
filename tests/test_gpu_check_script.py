"""scripts/gpu-check.sh on a machine without a GPU: it imports what it checks (a module renamed
under it fails here, not on the rare machine that has a GPU), names every check as skipped,
and says which exit code means what."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
import textwrap
import types
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "gpu-check.sh"


def _script() -> types.ModuleType:
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        return importlib.import_module("gpu_check")
    finally:
        sys.path.remove(str(ROOT / "scripts"))


def test_without_a_gpu_every_check_is_skipped_with_exit_3() -> None:
    pytest.importorskip("torch")
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU: run scripts/gpu-check.sh itself")
    env = dict(os.environ, PYTHON=sys.executable)
    proc = subprocess.run(
        ["bash", str(SCRIPT)], check=False, env=env, capture_output=True, text=True
    )
    assert proc.returncode == 3, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert [line.split()[0] for line in lines] == list(_script().CHECKS)
    assert all(line.split()[1] == "SKIP" for line in lines)


def test_a_python_without_torch_is_exit_4(tmp_path: Path) -> None:
    bare = tmp_path / "python"
    bare.write_text(f'#!/bin/sh\nexec {sys.executable} -S -I -c "import sys; sys.exit(1)"\n')
    bare.chmod(0o755)
    env = dict(os.environ, PYTHON=str(bare))
    proc = subprocess.run(
        ["bash", str(SCRIPT)], check=False, env=env, capture_output=True, text=True
    )
    assert proc.returncode == 4
    assert "no python with torch" in proc.stdout


def test_the_code_each_check_runs_in_its_own_process_compiles() -> None:
    gpu_check = _script()
    for name in ("IN_PROCESS", "CAPACITY", "MPS", "GPUHOG", "HOSTHOG"):
        compile(textwrap.dedent(getattr(gpu_check, name)), name, "exec")
