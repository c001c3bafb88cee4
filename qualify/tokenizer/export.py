"""Export a tokenizer as a standalone fast-tokenizer directory, proven identical on reload.

The source is loaded with transformers (no remote code) and recorded (``observe``); it is saved
into a temporary sibling of the output directory, loaded back from there and recorded again;
the two records must match check for check. Only then are the expected record and the audit
written and the directory renamed into place, so a failed export leaves nothing behind.

The directory is written for the clients' transformers releases too, not only this one's:
transformers 5 names its tokenizers-backed class ``TokenizersBackend`` in
``tokenizer_config.json``, a name transformers 4 cannot resolve (``Tokenizer class
TokenizersBackend does not exist or is not currently imported``), so the export writes
``PreTrainedTokenizerFast``, the same class in 5 and its equivalent in 4; and tokenizers >= 0.20
writes each BPE merge as a pair, which tokenizers 0.19 (transformers < 4.45) cannot parse, so
merges are written as ``"a b"`` strings when no merged part holds a space (every release reads
those). The reload check runs on the rewritten files.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from harness import contract
from qualify import records
from qualify.errors import UsageError
from qualify.records import frozen_record
from qualify.tokenizer import checks, observe, probes
from qualify.tokenizer.checks import Check, Probes
from qualify.tokenizer.source import CONFIG_FILE, FAST_FILE

EXPECTED_FILE = "tokenizer-expected.json"
SPECIAL_TOKENS_MAP = "special_tokens_map.json"
PORTABLE_CLASSES = {"TokenizersBackend": "PreTrainedTokenizerFast"}
"""transformers 5 class names that transformers 4 cannot resolve, and the name both resolve."""
AUDIT_VERSION = 1


@frozen_record
class ExportResult:
    """What an export did: every check, and the directory when all passed."""

    checks: list[Check]
    output_dir: Path | None = None
    """The published directory; None when a check failed (nothing was published)."""
    audit: dict[str, Any] = records.field(default_factory=dict)
    """The audit written into the directory (empty on failure)."""

    def __bool__(self) -> bool:
        return self.output_dir is not None

    @property
    def first_mismatch(self) -> str | None:
        """The first failed check's one line."""
        return next((check.mismatch for check in self.checks if not check), None)


def export_tokenizer(source_dir: Path, output_dir: Path) -> ExportResult:
    """Export ``source_dir``'s tokenizer into ``output_dir`` (which must not exist yet)."""
    from transformers import AutoTokenizer

    try:
        source = AutoTokenizer.from_pretrained(source_dir, trust_remote_code=False)
    except (OSError, ValueError) as exc:
        reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise UsageError(
            f"--model-dir {source_dir}: transformers cannot load it: {reason}"
        ) from None
    if not getattr(source, "is_fast", False):
        raise UsageError(
            f"--model-dir {source_dir}: loads as a slow tokenizer ({type(source).__name__}); "
            "valid: a fast tokenizer"
        )
    probe_set = probe_set_for(source)
    expected = observe.observe(source, probe_set.texts, probe_set.chats)
    output_dir.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{output_dir.name}.", dir=output_dir.parent))
    try:
        save(source, staging)
        reloaded = AutoTokenizer.from_pretrained(staging, trust_remote_code=False)
        observed = observe.observe(reloaded, probe_set.texts, probe_set.chats)
        results = checks.compare(expected, observed, probe_set)
        if not all(results):
            return ExportResult(results)
        document = {"probes": probe_set.to_dict(), "record": expected}
        _write_json(staging / EXPECTED_FILE, document)
        audit = build_audit(source_dir, staging, results, expected)
        _write_json(staging / contract.TOKENIZER_AUDIT, audit)
        _publish(staging, output_dir)
        return ExportResult(results, output_dir, audit)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def probe_set_for(tokenizer: Any) -> Probes:
    """The probes, with this tokenizer's own special tokens placed inside text."""
    specials = [token for token in tokenizer.all_special_tokens if isinstance(token, str)]
    added = [str(token) for token in tokenizer.get_added_vocab()]
    embedded = list(dict.fromkeys([*specials, *added]))
    return Probes(
        text_names=probes.names(),
        texts=probes.texts(embedded),
        chat_names=[name for name, _ in probes.CHATS],
        chats=[messages for _, messages in probes.CHATS],
    )


def save(tokenizer: Any, directory: Path) -> None:
    """``save_pretrained`` with the chat template inside ``tokenizer_config.json`` (where every
    transformers release reads it) and a ``special_tokens_map.json``, in the forms transformers 4
    reads as well (see the module's docstring)."""
    tokenizer.save_pretrained(directory, save_jinja_files=False)
    if not (directory / SPECIAL_TOKENS_MAP).exists():
        # transformers 5 no longer writes it; clients and older releases still read it.
        roles = {key: value for key, value in tokenizer.special_tokens_map.items() if value}
        _write_json(directory / SPECIAL_TOKENS_MAP, roles)
    portable_class(directory / CONFIG_FILE)
    legacy_merges(directory / FAST_FILE)


def portable_class(config_path: Path) -> None:
    """Name the tokenizer class so that transformers 4 resolves it as well as 5 does."""
    config = json.loads(config_path.read_text(encoding="utf-8"))
    name = config.get("tokenizer_class")
    if name in PORTABLE_CLASSES:
        config["tokenizer_class"] = PORTABLE_CLASSES[name]
        _write_json(config_path, config)


def legacy_merges(tokenizer_path: Path) -> None:
    """Write BPE merges as ``"a b"`` strings, the form tokenizers 0.19 also reads; left as
    pairs when a part holds a space (the string form cannot express it)."""
    document = json.loads(tokenizer_path.read_text(encoding="utf-8"))
    model = document.get("model") or {}
    merges = model.get("merges") or []
    pairs = [merge for merge in merges if isinstance(merge, list)]
    if not pairs or any(" " in part for merge in pairs for part in merge):
        return
    model["merges"] = [" ".join(merge) if isinstance(merge, list) else merge for merge in merges]
    tokenizer_path.write_text(
        json.dumps(document, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
    )


def build_audit(
    source_dir: Path, directory: Path, results: list[Check], expected: dict[str, Any]
) -> dict[str, Any]:
    """Versions, the hash of every file written, and each check with its count."""
    return {
        "audit_version": AUDIT_VERSION,
        "source": str(source_dir),
        "tokenizer_class": expected["tokenizer_class"],
        "vocabulary": {"entries": len(expected["vocab"]), "length": expected["length"]},
        "versions": expected["versions"],
        "files": {
            path.name: {"sha256": _sha256(path), "bytes": path.stat().st_size}
            for path in sorted(directory.iterdir())
            if path.is_file()
        },
        "checks": [check.to_dict() for check in results],
        "passed": all(results),
    }


def _publish(staging: Path, output_dir: Path) -> None:
    staging.chmod(0o755)  # mkdtemp's 0700 would hide the export from its other readers
    _fsync_tree(staging)
    staging.rename(output_dir)


def _fsync_tree(directory: Path) -> None:
    for path in [*sorted(directory.iterdir()), directory]:
        descriptor = os.open(path, os.O_RDONLY)
        try:
            os.fsync(descriptor)
        finally:
            os.close(descriptor)


def _write_json(path: Path, document: Any) -> None:
    path.write_text(json.dumps(document, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()
