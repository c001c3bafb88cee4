"""The run's tokenizer exported for benchmark clients, proven identical on reload.

Runs ``qualify tokenizer export`` on the tokenizer of this run's checkpoint (the synthesized one
or ``checkpoint=DIR``) as the ``tokenizer-export`` phase, and copies the export's audit into the
run directory, so that a run on a head commit says whether the tokenizer a benchmark would load
matches the one the model runs with. The export runs in a child process (qualify's own
interpreter, the one ``python`` means under ``qualify run``); its memory is the phase's.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from phi4_engine import checkpoint
from phi4_engine.options import FamilyOptions

import harness
from harness import contract


def test_tokenizer_export() -> None:
    """The export passes every identity check; its audit lands in the run directory."""
    options = FamilyOptions.from_harness()
    scratch_root = checkpoint.cache_root() / "exports"
    scratch_root.mkdir(parents=True, exist_ok=True)
    # On the cache's disk, not /tmp: a tmpfs would charge the export's files to the cap.
    with tempfile.TemporaryDirectory(prefix="run-", dir=scratch_root) as scratch:
        output = Path(scratch) / "tokenizer"
        with harness.phase("tokenizer-export"):
            source = (
                Path(options.checkpoint)
                if options.checkpoint
                else checkpoint.ensure_checkpoint(options.size)
            )
            command = [
                sys.executable, "-m", "qualify", "tokenizer", "export",
                "--model-dir", str(source), "--output-dir", str(output),
            ]  # fmt: skip
            result = subprocess.run(
                command, capture_output=True, text=True, check=False, stdin=subprocess.DEVNULL
            )
        assert result.returncode == 0, result.stderr.strip() or result.stdout
        audit = json.loads((output / contract.TOKENIZER_AUDIT).read_text(encoding="utf-8"))
        _record_in_run_dir(audit)
    assert audit["passed"] is True
    failed = [check["mismatch"] for check in audit["checks"] if not check["passed"]]
    assert failed == []


def _record_in_run_dir(audit: dict[str, object]) -> None:
    """Write the audit into the run directory (atomically); nothing outside a qualify run."""
    run_dir = os.environ.get(contract.ENV_RUN_DIR)
    if not run_dir:
        return
    target = Path(run_dir) / contract.TOKENIZER_AUDIT
    descriptor, temp_name = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            json.dump(audit, handle, indent=1, ensure_ascii=False)
            handle.write("\n")
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temp_name, 0o644)
        os.replace(temp_name, target)
    except BaseException:
        Path(temp_name).unlink(missing_ok=True)
        raise
