"""public/: the sanitized bundle of a run directory, published all at once or not at all.

Every file is written through the sanitizer into a temporary directory beside ``public/``; a
second scan of that directory with every rule enabled must find nothing, and only then is it
renamed to ``public/``. Otherwise the publication fails closed: no ``public/``, the reason in
the run's publication record (internal), exit code 4 for the caller; the verdict of the
run is not touched.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import tempfile
import xml.etree.ElementTree as ET
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

from junitparser import JUnitXml, SystemErr, SystemOut

from harness import contract
from qualify.atomic import write_bytes_atomic, write_json_atomic
from qualify.errors import UsageError
from qualify.plan.request import PUBLISH_LEVELS
from qualify.publish.sanitize import Identities, Sanitizer
from qualify.report.junit import serialize
from qualify.rundir.audit import PublicationRecord, parse_audit
from qualify.verdict import EXIT_ERROR, EXIT_PASSED

LEVELS = PUBLISH_LEVELS
PUBLIC_FILES = (contract.JUNIT, contract.REPORT_HTML, contract.AUDIT)
"""What the ``public`` level publishes (no raw logs); the audit last, to carry the counts."""


@dataclasses.dataclass(frozen=True)
class PublishResult:
    """How the publication of one run directory went."""

    ok: bool
    level: str
    public_dir: Path | None
    """``RUN_DIR/public`` when published, None when it failed."""
    reason: str | None
    """Why it failed (sanitized; rule names and file names, never a value)."""
    rule_counts: Mapping[str, int]
    """What each rule replaced while writing public/."""
    files: tuple[str, ...]
    """Files in public/ (sanitized names)."""
    skipped: tuple[str, ...]
    """Files left out: binary, or not readable as the level requires."""

    def __bool__(self) -> bool:
        return self.ok

    @property
    def exit_code(self) -> int:
        """0 when published, 4 (ERROR) when the publication failed closed."""
        return EXIT_PASSED if self.ok else EXIT_ERROR

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (the run's publication record)."""
        return {
            "status": "published" if self.ok else "failed",
            "level": self.level,
            "public_dir": contract.PUBLIC_DIR if self.ok else None,
            "reason": self.reason,
            "rule_counts": dict(sorted(self.rule_counts.items())),
            "files": list(self.files),
            "skipped": list(self.skipped),
        }


class PublicationLeak(Exception):
    """The second scan found something, or sanitizing broke a file's format."""


def _sources(run_dir: Path, level: str, include: Sequence[str]) -> list[Path]:
    """Relative paths to publish, the audit last."""
    if level == "public":
        names = [Path(name) for name in (*PUBLIC_FILES[:-1], *include, PUBLIC_FILES[-1])]
        return [name for name in dict.fromkeys(names) if (run_dir / name).is_file()]
    found = [
        path.relative_to(run_dir)
        for path in sorted(run_dir.rglob("*"))
        if path.is_file() and not path.is_symlink()
    ]
    found = [
        path
        for path in found
        if path.parts[0] not in contract.INTERNAL_FILES
        and not any(part.startswith(".") for part in path.parts)
    ]
    found += [Path(name) for name in include if (run_dir / name).is_file()]
    audit = [path for path in found if path == Path(contract.AUDIT)]
    return [path for path in dict.fromkeys(found) if path not in audit] + audit


def _as_text(data: bytes) -> str | None:
    if b"\0" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _strip_streams(text: str) -> str:
    """JUnit without captured output (system-out/err are raw logs)."""
    document = JUnitXml.fromstring(text.encode())
    for suite in document:
        for holder in (suite, *suite):
            for stream in (SystemOut, SystemErr):
                for child in list(holder.iterchildren(stream)):
                    holder.remove(child)
    return serialize(document).decode()


def _check_format(name: str, text: str) -> None:
    """A sanitized JSON or XML file must still parse (a replacement must never break it).

    XML is checked for well-formedness only (any XML file of the run at the internal level,
    not only JUnit), which the standard library's parser does without junitparser.
    """
    try:
        if name.endswith(".json"):
            json.loads(text)
        elif name.endswith(".xml"):
            ET.fromstring(text.encode())
    except (ValueError, ET.ParseError) as exc:
        raise PublicationLeak(f"sanitizing {name} broke its format: {exc}") from None


class _Writer:
    """Writes sanitized files into the staging directory."""

    def __init__(self, run_dir: Path, staging: Path, sanitizer: Sanitizer, level: str):
        self.run_dir, self.staging, self.sanitizer, self.level = run_dir, staging, sanitizer, level
        self.files: list[str] = []
        self.skipped: list[str] = []

    def _target(self, relative: Path) -> Path:
        parts = [self.sanitizer.clean_name(part) or "_" for part in relative.parts]
        target = self.staging.joinpath(*parts)
        stem, number = target, 2
        while target.exists():
            target = stem.with_name(f"{stem.stem}-{number}{stem.suffix}")
            number += 1
        return target

    def _text(self, relative: Path) -> str | None:
        text = _as_text((self.run_dir / relative).read_bytes())
        if text is not None and self.level == "public" and relative.suffix == ".xml":
            text = _strip_streams(text)
        return text

    def write(self, relative: Path) -> None:
        text = self._text(relative)
        target = self._target(relative)
        name = str(target.relative_to(self.staging))
        if text is None:
            self.skipped.append(name)
            return
        cleaned = self.sanitizer.clean(text)
        if relative == Path(contract.AUDIT):
            cleaned = self._audit(cleaned)
        _check_format(name, cleaned)
        target.parent.mkdir(parents=True, exist_ok=True)
        write_bytes_atomic(target, cleaned.encode("utf-8"))
        self.files.append(name)

    def _audit(self, cleaned: str) -> str:
        """The public audit carries what each rule did (counts, never values)."""
        read = parse_audit(cleaned)
        if read.audit is None:
            return cleaned  # not an audit of ours: published as sanitized, unchanged
        publication = PublicationRecord(
            level=self.level,
            rule_counts=dict(sorted(self.sanitizer.counts.items())),
            files=sorted([*self.files, contract.AUDIT]),
            skipped=sorted(self.skipped),
        )
        return dataclasses.replace(read.audit, publication=publication).to_bytes().decode()


def second_scan(directory: Path, verifier: Sanitizer) -> list[str]:
    """Every finding of every rule in ``directory`` (names and contents), as 'file: rule xN'."""
    leaks = []
    for path in sorted(directory.rglob("*")):
        relative = str(path.relative_to(directory))
        found = verifier.findings(relative)
        if path.is_file():
            found += verifier.findings(path.read_bytes().decode("utf-8", errors="replace"))
        where = verifier.clean_name(relative)
        leaks += [f"{where}: {rule} x{count}" for rule, count in sorted(found.items())]
    return leaks


def _load_map(run_dir: Path) -> dict[str, str]:
    try:
        document = json.loads((run_dir / contract.SANITIZE_MAP).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    pseudonyms = document.get("pseudonyms") if isinstance(document, dict) else None
    return dict(pseudonyms) if isinstance(pseudonyms, dict) else {}


def _swap_in(staging: Path, public: Path) -> None:
    """Replace public/ by the staging directory (rename; the old one removed first)."""
    if public.exists():
        old = Path(tempfile.mkdtemp(prefix=".public.old-", dir=public.parent))
        public.rename(old / contract.PUBLIC_DIR)
        shutil.rmtree(old)
    staging.chmod(0o755)
    staging.rename(public)
    directory = os.open(public.parent, os.O_RDONLY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)


def publish_run(
    run_dir: Path,
    level: str,
    environ: Mapping[str, str],
    *,
    include: Sequence[str] = (),
    identities: Identities | None = None,
    disabled_rules: Collection[str] = (),
) -> PublishResult:
    """Write ``run_dir/public`` at ``level`` (internal: every text file; public: no raw logs).

    ``environ``: whose secret-looking variables are redacted (pass the run's environment).
    ``include``: more files (relative to ``run_dir``) to publish at the public level.
    ``disabled_rules``: rules skipped while writing (tests force a leak with it); the second
    scan always runs every rule.
    """
    if level not in LEVELS:
        raise UsageError(f"publish level {level!r} is not valid (valid: {', '.join(LEVELS)})")
    identities = identities if identities is not None else Identities.current(environ)
    sanitizer = Sanitizer(environ, identities, disabled_rules, pseudonyms=_load_map(run_dir))
    verifier = Sanitizer(environ, identities)
    public = run_dir / contract.PUBLIC_DIR
    staging = Path(tempfile.mkdtemp(prefix=".public.tmp-", dir=run_dir))
    writer = _Writer(run_dir, staging, sanitizer, level)
    reason = None
    try:
        for relative in _sources(run_dir, level, include):
            writer.write(relative)
        write_json_atomic(run_dir / contract.SANITIZE_MAP, {"pseudonyms": sanitizer.pseudonyms})
        verifier.pseudonyms = dict(sanitizer.pseudonyms)
        leaks = second_scan(staging, verifier)
        if leaks:
            raise PublicationLeak("the second scan of public/ found: " + "; ".join(leaks[:20]))
        _swap_in(staging, public)
    except Exception as exc:
        reason = verifier.clean(str(exc) if isinstance(exc, PublicationLeak) else repr(exc))
        shutil.rmtree(staging, ignore_errors=True)
        shutil.rmtree(public, ignore_errors=True)
    result = PublishResult(
        ok=reason is None,
        level=level,
        public_dir=public if reason is None else None,
        reason=reason,
        rule_counts=dict(sanitizer.counts),
        files=tuple(writer.files) if reason is None else (),
        skipped=tuple(writer.skipped),
    )
    write_json_atomic(run_dir / contract.PUBLICATION, result.to_dict())
    return result


def run_sanitizer(run_dir: Path, environ: Mapping[str, str]) -> Sanitizer:
    """A sanitizer with the run's pseudonym map, for text published outside public/ (the
    GitHub step summary and annotations)."""
    return Sanitizer(environ, Identities.current(environ), pseudonyms=_load_map(run_dir))
