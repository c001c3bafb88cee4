"""Model sizes by name, and the hash that names a size's cached checkpoint."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

_Spec = TypeVar("_Spec")


@dataclass(frozen=True)
class DecoderSpec:
    """Widths and depth of a decoder-only transformer at one size (a family's spec may add
    fields: its vision or audio encoder's)."""

    hidden_size: int
    intermediate_size: int
    layers: int
    heads: int
    kv_heads: int


def pick(sizes: Mapping[str, _Spec], size: str) -> _Spec:
    """The spec of ``size``; an unknown name is a one-line error listing the valid ones."""
    try:
        return sizes[size]
    except KeyError:
        raise ValueError(f"size {size!r} is not one of {', '.join(sizes)}") from None


def cache_key(label: str, payload: Mapping[str, Any]) -> str:
    """``<label>-<16 hex digits>``: a short hash of ``payload`` (everything that shapes the
    weights: spec, seed, version, content), so that a changed recipe never reuses an old
    checkpoint."""
    digest = hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()
    return f"{label}-{digest[:16]}"
