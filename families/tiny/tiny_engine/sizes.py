"""The model sizes of the family and the Phi-3 configuration of each.

Every size keeps Phi-4-mini's layout (grouped-query attention, fused qkv and gate/up
projections, partial rotary embedding) and scales only widths and depth. Each bf16 plan
(one per network) weighs ~11 MB at ``tiny``, ~204 MB at ``small`` and ~397 MB at ``medium``.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from harness.kit import sizes as kit_sizes

# Bump when the way the checkpoint is made changes: it is part of the cache key, so an old
# cached checkpoint is never reused by mistake (2: model.safetensors written tensor by tensor,
# in name order, by harness.kit.checkpoint).
CHECKPOINT_VERSION = 2
SEED = 1234


SizeSpec = kit_sizes.DecoderSpec
"""Widths and depth of one size; everything else is shared by all sizes."""


SIZES: dict[str, SizeSpec] = {
    # Wide rather than deep: the head is fitted to the corpus from hidden states, which
    # separate the corpus positions only when the hidden size is not far below their count.
    "tiny": SizeSpec(hidden_size=512, intermediate_size=1024, layers=2, heads=8, kv_heads=4),
    "small": SizeSpec(hidden_size=1024, intermediate_size=3072, layers=8, heads=16, kv_heads=8),
    "medium": SizeSpec(hidden_size=1280, intermediate_size=3840, layers=10, heads=20, kv_heads=10),
}

# Phi-3's own initialisation; the output head is then fitted (see head.py).
INITIALIZER_RANGE = 0.02
MAX_POSITIONS = 512


def size_spec(size: str) -> SizeSpec:
    """The spec of ``size``; an unknown name is a one-line error listing the valid ones."""
    return kit_sizes.pick(SIZES, size)


def config_kwargs(size: str, vocab_size: int, special_ids: dict[str, int]) -> dict[str, Any]:
    """Keyword arguments of ``Phi3Config`` for ``size`` and the trained tokenizer."""
    spec = size_spec(size)
    return {
        "vocab_size": vocab_size,
        "hidden_size": spec.hidden_size,
        "intermediate_size": spec.intermediate_size,
        "num_hidden_layers": spec.layers,
        "num_attention_heads": spec.heads,
        "num_key_value_heads": spec.kv_heads,
        "max_position_embeddings": MAX_POSITIONS,
        "original_max_position_embeddings": MAX_POSITIONS,
        "rope_parameters": {
            "rope_type": "default",
            "rope_theta": 10000.0,
            "partial_rotary_factor": 0.75,
        },
        "initializer_range": INITIALIZER_RANGE,
        "tie_word_embeddings": False,
        "bos_token_id": special_ids["bos"],
        "eos_token_id": special_ids["eos"],
        "pad_token_id": special_ids["pad"],
    }


def cache_key(size: str, content: str = "") -> str:
    """Short hash naming a cached checkpoint: size spec, seed, init, version and ``content``.

    ``content`` stands for whatever else shapes the weights (the corpus and the head fit).
    """
    payload = {
        "content": content,
        "size": size,
        "spec": asdict(size_spec(size)),
        "seed": SEED,
        "initializer_range": INITIALIZER_RANGE,
        "max_positions": MAX_POSITIONS,
        "version": CHECKPOINT_VERSION,
    }
    return kit_sizes.cache_key(size, payload)
