"""The audit's published JSON Schema: generated from ``qualify.rundir.audit.Audit``.

``audit.schema.json`` beside this module is the published copy (shipped in the wheel); the
test suite checks that it equals what this module generates and that every audit the suite
writes validates against it. Regenerate it after changing the audit's dataclasses::

    python -m qualify.rundir.schema > qualify/rundir/audit.schema.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from qualify.rundir.audit import SCHEMA_VERSION, Audit
from qualify.rundir.typed_json import document_schema

SCHEMA_ID = f"urn:qualify:audit:{SCHEMA_VERSION}"
PUBLISHED = Path(__file__).with_name("audit.schema.json")


def audit_schema() -> dict[str, Any]:
    """The JSON Schema of the audit, as generated from the dataclasses."""
    return document_schema(Audit, SCHEMA_ID, f"qualify audit, schema version {SCHEMA_VERSION}")


def render() -> str:
    """The schema as the published file holds it."""
    return json.dumps(audit_schema(), indent=2) + "\n"


def published() -> dict[str, Any]:
    """The published schema file."""
    document: dict[str, Any] = json.loads(PUBLISHED.read_text(encoding="utf-8"))
    return document


if __name__ == "__main__":
    sys.stdout.write(render())
