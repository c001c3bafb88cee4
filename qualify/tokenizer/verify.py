"""Verify an export inside the benchmark client's own environment, through its own loader.

The client's interpreter runs ``observe.py`` (standard library only) on the export directory;
its record is compared with the source's, which the export stored. The loader is run twice:
with the offline variables removed (the environment that works) and with ``HF_HUB_OFFLINE=1``,
because AIPerf 0.13.0 refuses a local tokenizer path in offline mode: it treats any non-empty
``HF_HUB_OFFLINE`` or ``TRANSFORMERS_OFFLINE`` (even ``0``) as offline and then resolves the
name with ``huggingface_hub.snapshot_download(..., local_files_only=True)``, which rejects a path
as a repo id (aiperf/common/tokenizer.py, ``_load_from_hub`` -> ``_from_pretrained_local``).
transformers' own ``AutoTokenizer.from_pretrained`` (4.57.6 as 5.24) loads a local path with
``HF_HUB_OFFLINE=1``; the second load shows it for every client.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from harness import contract
from qualify import records
from qualify.errors import UsageError
from qualify.records import frozen_record
from qualify.tokenizer import checks
from qualify.tokenizer.checks import Check, Probes
from qualify.tokenizer.clientenv import Client
from qualify.tokenizer.export import EXPECTED_FILE

OFFLINE_VARIABLES = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")
OBSERVE_SCRIPT = Path(__file__).resolve().parent / "observe.py"


@frozen_record
class VerifyResult:
    """Every check run in the client's environment, and what the offline trap did."""

    client: str
    checks: list[Check]
    versions: dict[str, Any] = records.field(default_factory=dict)
    """Package versions inside the client's environment."""
    offline_error: str | None = None
    """How the client failed with HF_HUB_OFFLINE=1 (None: it loaded)."""
    load_error: str | None = None
    """How the client failed without the offline variables (None: it loaded)."""

    def __bool__(self) -> bool:
        return all(self.checks)

    @property
    def name(self) -> str:
        """The client's name, without its version."""
        return self.client.partition("==")[0]


def load_export(directory: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the audit, the expected record) of an export directory; exit 2 when it is not one."""
    audit_path = directory / contract.TOKENIZER_AUDIT
    expected_path = directory / EXPECTED_FILE
    if not audit_path.is_file() or not expected_path.is_file():
        raise UsageError(
            f"{directory}: not a tokenizer export (no {contract.TOKENIZER_AUDIT} and "
            f"{EXPECTED_FILE}; make one with `qualify tokenizer export`)"
        )
    audit, expected = _object(audit_path), _object(expected_path)
    listed = audit.get("files", {})
    if not isinstance(listed, dict) or not all(
        isinstance(entry, dict) and isinstance(entry.get("sha256"), str)
        for entry in listed.values()
    ):
        raise UsageError(f"{audit_path}: its files are not as an export lists them; {_MAKE_AGAIN}")
    record, probes = expected.get("record"), expected.get("probes")
    if not isinstance(record, dict) or not isinstance(probes, dict):
        raise UsageError(f"{expected_path}: no record and probes in it; {_MAKE_AGAIN}")
    try:
        probe_set = Probes.from_dict(probes)
    except KeyError as exc:
        raise UsageError(f"{expected_path}: the probes have no {exc}; {_MAKE_AGAIN}") from None
    try:  # the record against itself: every field a check reads, read as the checks read it
        checks.compare(record, record, probe_set)
    except (KeyError, TypeError, AttributeError, IndexError, ValueError) as exc:
        what = f"{type(exc).__name__}: {exc}".splitlines()[0][:200]
        raise UsageError(
            f"{expected_path}: the record is not as an export writes it ({what}); {_MAKE_AGAIN}"
        ) from None
    return audit, expected


_MAKE_AGAIN = "make the export again with `qualify tokenizer export`"


def _object(path: Path) -> dict[str, Any]:
    """The JSON object in ``path``; UsageError naming the file when it holds none."""
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as exc:  # (RecursionError: nested too deep)
        raise UsageError(f"{path}: not valid JSON ({type(exc).__name__}); {_MAKE_AGAIN}") from None
    if not isinstance(document, dict):
        raise UsageError(f"{path}: not a JSON object; {_MAKE_AGAIN}")
    return document


def verify_export(
    directory: Path,
    client: Client,
    python: Path,
    loaded: tuple[dict[str, Any], dict[str, Any]] | None = None,
) -> VerifyResult:
    """Run the checks of ``directory`` with ``python`` (the client's interpreter); ``loaded``:
    what ``load_export`` already read of it (read here otherwise)."""
    audit, expected = loaded or load_export(directory)
    probe_set = Probes.from_dict(expected["probes"])
    file_check = files(directory, audit)
    working = working_environment()
    observed = run_observer(python, client.name, directory, probe_set, working)
    results = [file_check, *checks.compare(expected["record"], observed, probe_set)]
    offline = run_observer(
        python, client.name, directory, probe_set, {**working, "HF_HUB_OFFLINE": "1"}
    )
    return VerifyResult(
        client=client.requirement,
        checks=results,
        versions=observed.get("versions", {}),
        offline_error=offline.get("load_error"),
        load_error=observed.get("load_error"),
    )


def files(directory: Path, audit: dict[str, Any]) -> Check:
    """Every file the audit lists, with the sha256 it recorded."""
    listed: dict[str, dict[str, Any]] = audit.get("files", {})
    for name, entry in sorted(listed.items()):
        path = directory / name
        if not path.is_file():
            return Check("files", len(listed), f"files: {name} is missing")
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        if digest != entry["sha256"]:
            return Check(
                "files", len(listed), f"files: {name} has sha256 {digest[:16]}..., not the audit's"
            )
    return Check("files", len(listed))


def working_environment() -> dict[str, str]:
    """This environment without the offline variables that make AIPerf refuse a local path
    (a local path needs no network with any client)."""
    return {key: value for key, value in os.environ.items() if key not in OFFLINE_VARIABLES}


def run_observer(
    python: Path, loader: str, directory: Path, probe_set: Probes, env: dict[str, str]
) -> dict[str, Any]:
    """``observe.py`` under ``python`` with ``env``; its record (a load error is recorded)."""
    with tempfile.TemporaryDirectory(prefix="qualify-tokenizer-") as scratch:
        probes_path = Path(scratch) / "probes.json"
        output = Path(scratch) / "record.json"
        probes_path.write_text(json.dumps(probe_set.to_dict()), encoding="utf-8")
        # absolute(), not resolve(): a venv's python is a symlink whose target is not the venv;
        # absolute because the observer runs in the scratch directory.
        command = [
            str(python.absolute()), str(OBSERVE_SCRIPT), "--loader", loader,
            "--probes", str(probes_path), "--output", str(output), str(directory.resolve()),
        ]  # fmt: skip
        result = subprocess.run(
            command, env=env, capture_output=True, text=True, check=False,
            stdin=subprocess.DEVNULL, cwd=scratch,
        )  # fmt: skip
        if result.returncode != 0 or not output.is_file():
            tail = (result.stderr.strip().splitlines() or [f"exit {result.returncode}"])[-1]
            return {"load_error": f"the client's interpreter failed: {tail}", "versions": {}}
        record: dict[str, Any] = json.loads(output.read_text(encoding="utf-8"))
        return record


def offline_note(result: VerifyResult, directory: Path) -> str:
    """What the offline trap did, and the command line that works."""
    if result.offline_error is None:
        return f"offline: {result.client} loads the export with HF_HUB_OFFLINE=1 too"
    reason = _first_line(result.offline_error)
    if result.load_error is not None:
        return f"offline: {result.client} fails with HF_HUB_OFFLINE=1 as well ({reason})"
    if result.name != "aiperf":
        return (
            f"offline: {result.client} fails to load the export when HF_HUB_OFFLINE=1 is set "
            f"({reason}); the checks above ran with HF_HUB_OFFLINE and TRANSFORMERS_OFFLINE unset"
        )
    works = (
        f"env -u HF_HUB_OFFLINE -u TRANSFORMERS_OFFLINE aiperf profile --tokenizer "
        f"{directory.resolve()} ..."
    )
    return (
        f"offline: {result.client} refuses a local tokenizer path when HF_HUB_OFFLINE=1 "
        f"(or TRANSFORMERS_OFFLINE, any non-empty value) is set ({reason}); the checks above "
        f"ran without them, which needs no network for a local path: {works}"
    )


def _first_line(text: str) -> str:
    line = text.strip().splitlines()[0] if text.strip() else text
    return line if len(line) <= 200 else line[:200] + "..."
