"""A run's secret sources: what was given (``--secret-env`` names, ``--secrets-file`` paths),
recorded in the run directory, and only ever added to.

``qualify run --secret-env X`` and every later ``qualify publish``, ``report`` or ``triage`` of
that run redact the same secrets whatever flags they are given: each publication reads the
recorded sources, adds its own, and records the union once (``secret-sources.json``, mode 0600,
never published). Names and paths are recorded, never values: a value is read again from the
environment or the file at each publication. A recorded secrets file that is gone is bad input
(one line, exit 2): publishing without the values it held could leak them.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harness import contract
from qualify.atomic import write_bytes_atomic
from qualify.errors import UsageError
from qualify.plan.secret_sources import KnownSecret, read_secrets_file
from qualify.records import frozen_record

_MAX_RECORD_BYTES = 1 << 20
"""A record is a few hundred bytes; a bigger file is not one qualify wrote."""


@frozen_record
class SecretSources:
    """Where a run's known secrets come from beyond the secret-named variables."""

    secret_env: tuple[str, ...] = ()
    """Names given with ``--secret-env``."""
    secrets_files: tuple[Path, ...] = ()
    """Files given with ``--secrets-file`` (absolute: a later publication may run elsewhere)."""

    @classmethod
    def given(cls, secret_env: Sequence[str], secrets_file: Path | None) -> SecretSources:
        """The sources one command line gave."""
        files = (secrets_file.absolute(),) if secrets_file is not None else ()
        return cls(tuple(secret_env), files)

    def known(self) -> list[KnownSecret]:
        """The values of every secrets file (UsageError, one line, when one cannot be read)."""
        found = []
        for path in self.secrets_files:
            if not path.is_file():
                raise UsageError(
                    f"the run's recorded --secrets-file {str(path)!r} is gone (valid: the file "
                    "as it was given, restored at that path: its values are redacted at every "
                    "publication of the run)"
                )
            found += read_secrets_file(path)
        return found

    def union(self, other: SecretSources) -> SecretSources:
        """Every source of both, in the order first given."""
        return SecretSources(
            tuple(dict.fromkeys((*self.secret_env, *other.secret_env))),
            tuple(dict.fromkeys((*self.secrets_files, *other.secrets_files))),
        )


def _names(value: Any) -> tuple[str, ...]:
    return tuple(str(item) for item in value) if isinstance(value, list) else ()


def recorded_sources(run_dir: Path) -> SecretSources:
    """The sources recorded for the run (and those an older qualify kept in its sanitize map)."""
    found = SecretSources()
    for name in (contract.SANITIZE_MAP, contract.SECRET_SOURCES):
        path = run_dir / name
        try:
            if path.is_symlink() or path.stat().st_size > _MAX_RECORD_BYTES:
                continue
            document = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError, RecursionError):
            continue
        if not isinstance(document, dict):
            continue
        files = _names(document.get("secrets_files"))
        old_file = document.get("secrets_file")
        if isinstance(old_file, str) and old_file:
            files = (*files, old_file)
        recorded = SecretSources(_names(document.get("secret_env")), tuple(map(Path, files)))
        found = found.union(recorded)
    return found


def record_sources(run_dir: Path, sources: SecretSources) -> None:
    """``sources`` recorded for the run (owner-only: the paths say where secrets are kept)."""
    document = {
        "secret_env": list(sources.secret_env),
        "secrets_files": [str(path) for path in sources.secrets_files],
    }
    data = (json.dumps(document, indent=2, sort_keys=True) + "\n").encode()
    write_bytes_atomic(run_dir / contract.SECRET_SOURCES, data, private=True)
