"""What must be the same in every repetition of an experiment, read from each audit.

The repetitions are planned from one command line, so only the named options differ by
construction; what can still drift while they run (the working tree edited, a package
upgraded, a different cap read back) is compared here, and a difference refuses the result.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from qualify.rundir import Audit

IMAGE_NOTE = "image "
"""How the docker backend names its image among the sandbox notes."""


def pins(audit: Audit, *, varied: Iterable[str] = ()) -> dict[str, Any]:
    """Everything about a run that an experiment pins, by the name a refusal prints; the
    family options named in ``varied`` (the arms' and the sweep's) are left out."""
    commit = audit.commit
    left_out = set(varied)
    return {
        "commit": commit.head,
        "tree": commit.tree,
        "dirty diff": commit.diff_sha256 if commit.dirty else None,
        "family": (audit.family.directory, audit.family.content_sha256),
        "e2e command": audit.family.e2e_command,
        "options": {k: v for k, v in audit.family.options.items() if k not in left_out},
        "profile": audit.profile,
        "backend": audit.sandbox.backend,
        "capped": audit.sandbox.capped,
        "image": [note for note in audit.sandbox.notes if note.startswith(IMAGE_NOTE)],
        "environment": audit.environment,
        "allocator": audit.allocator,
        "timeout": audit.timings.timeout_s,
    }


LIMIT_PINS = ("limits asked", "limits in effect")


def limit_pins(audit: Audit) -> dict[str, Any]:
    """The limits asked and those read back (pinned within a sweep level)."""
    return {"limits asked": audit.limits.requested, "limits in effect": audit.limits.in_effect}


def _show(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= 120 else text[:117] + "..."


def differences(first: Mapping[str, Any], later: Mapping[str, Any]) -> list[str]:
    """One line per pin that differs: ``tree: 'abc...' then 'def...'``."""
    lines = []
    for name, before in first.items():
        after = later.get(name)
        if after == before:
            continue
        shown = (before, after)
        if isinstance(before, dict) and isinstance(after, dict):
            keys = sorted(k for k in {*before, *after} if before.get(k) != after.get(k))
            shown = ({k: before.get(k) for k in keys}, {k: after.get(k) for k in keys})
        lines.append(f"{name}: {_show(shown[0])} then {_show(shown[1])}")
    return lines
