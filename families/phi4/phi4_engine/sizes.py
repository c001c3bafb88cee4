"""Phi-4-multimodal's configuration at each size, every key set explicitly.

transformers' ``Phi4MultimodalConfig`` defaults differ from the published model (32 attention
heads instead of 24, untied embeddings, no LongRoPE factors), so nothing here relies on them.
``full`` is microsoft/Phi-4-multimodal-instruct's ``config.json``; ``ci`` keeps its vocabulary,
head width (128), key-value grouping (3 query heads per key-value head), partial rotary factor,
LongRoPE factors, tied embeddings and image geometry (448-pixel crops of 14-pixel patches) and
shrinks only depth and widths, so that the whole E2E runs in minutes on two CPU cores.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from harness.kit import sizes as kit_sizes

# Bump when the way the checkpoint is made changes: it is part of the cache key (2: the fit
# runs each image chat's image prefix without gradients).
CHECKPOINT_VERSION = 2
SEED = 1234
VOCAB_SIZE = 200064
IMAGE_TOKEN_ID = 200010
AUDIO_TOKEN_ID = 200011
ENDOFTEXT_ID = 199999
END_ID = 200020
ORIGINAL_MAX_POSITIONS = 4096
MAX_POSITIONS = 131072

# microsoft/Phi-4-multimodal-instruct config.json, "rope_scaling" (type "longrope"), 48 factors
# each (= 128 * 0.75 / 2). Copied from the published config as reproduced in NVIDIA/TensorRT-LLM
# tests/unittest/_torch/modeling/test_modeling_phi4mm.py (PHI4MM_CONFIG); Phi-4-mini-instruct
# publishes the same factors.
LONG_FACTOR = [
    1.0, 1.118320672, 1.250641126, 1.398617824, 1.564103225, 1.74916897, 1.956131817,
    2.187582649, 2.446418898, 2.735880826, 3.059592084, 3.421605075, 3.826451687, 4.279200023,
    4.785517845, 5.351743533, 5.984965424, 6.693110555, 7.485043894, 8.370679318, 9.36110372,
    10.4687158, 11.70738129, 13.09260651, 14.64173252, 16.37415215, 18.31155283, 20.47818807,
    22.90118105, 25.61086418, 28.64115884, 32.03, 32.1, 32.13, 32.23, 32.6, 32.61, 32.64, 32.66,
    32.7, 32.71, 32.93, 32.97, 33.28, 33.49, 33.5, 44.16, 47.77,
]  # fmt: skip
SHORT_FACTOR = [1.0] * 48


@dataclass(frozen=True)
class SizeSpec(kit_sizes.DecoderSpec):
    """Depth and widths of one size (the text decoder's, then the encoders'); everything else
    is the published model's."""

    vision_hidden_size: int
    vision_intermediate_size: int
    vision_layers: int
    vision_heads: int
    audio_hidden_size: int
    audio_intermediate_size: int
    audio_blocks: int
    audio_heads: int
    audio_channels: int


SIZES: dict[str, SizeSpec] = {
    # head_dim stays 128 (hidden / heads) so the 48 published rotary factors apply unchanged.
    "ci": SizeSpec(
        hidden_size=768, intermediate_size=2048, layers=2, heads=6, kv_heads=2,
        vision_hidden_size=256, vision_intermediate_size=512, vision_layers=2, vision_heads=4,
        audio_hidden_size=64, audio_intermediate_size=128, audio_blocks=1, audio_heads=4,
        audio_channels=64,
    ),
    "full": SizeSpec(
        hidden_size=3072, intermediate_size=8192, layers=32, heads=24, kv_heads=8,
        vision_hidden_size=1152, vision_intermediate_size=4304, vision_layers=27, vision_heads=16,
        audio_hidden_size=1024, audio_intermediate_size=1536, audio_blocks=24, audio_heads=16,
        audio_channels=1024,
    ),
}  # fmt: skip


def size_spec(size: str) -> SizeSpec:
    """The spec of ``size``; an unknown name is a one-line error listing the valid ones."""
    return kit_sizes.pick(SIZES, size)


MODELS = ("multimodal", "mini")
"""Phi-4-multimodal (``phi4_multimodal``) and Phi-4-mini (``phi3``, its text decoder alone)."""


def config_kwargs(size: str, model: str = "multimodal") -> dict[str, Any]:
    """Keyword arguments of ``Phi4MultimodalConfig`` (``model="multimodal"``) or of
    ``Phi3Config`` (``"mini"``: Phi-4-mini-instruct's ``config.json`` is the multimodal
    model's text keys, with no vision or audio encoder) for ``size``: every key explicit."""
    spec = size_spec(size)
    if model not in MODELS:
        raise ValueError(f"model {model!r} is not one of {', '.join(MODELS)}")
    text = _text_config(spec)
    if model == "mini":
        return text
    return {**text, "vision_config": _vision_config(spec), "audio_config": _audio_config(spec)}


def _text_config(spec: SizeSpec) -> dict[str, Any]:
    return {
        "vocab_size": VOCAB_SIZE,
        "hidden_size": spec.hidden_size,
        "intermediate_size": spec.intermediate_size,
        "num_hidden_layers": spec.layers,
        "num_attention_heads": spec.heads,
        "num_key_value_heads": spec.kv_heads,
        "resid_pdrop": 0.0,
        "embd_pdrop": 0.0,
        "attention_dropout": 0.0,
        "hidden_act": "silu",
        "max_position_embeddings": MAX_POSITIONS,
        "original_max_position_embeddings": ORIGINAL_MAX_POSITIONS,
        "initializer_range": 0.02,
        "rms_norm_eps": 1e-5,
        "use_cache": True,
        "tie_word_embeddings": True,
        "rope_parameters": {
            "rope_type": "longrope",
            "rope_theta": 10000.0,
            "partial_rotary_factor": 0.75,
            "original_max_position_embeddings": ORIGINAL_MAX_POSITIONS,
            # What transformers derives from the two lengths when absent (131072 / 4096).
            "factor": MAX_POSITIONS / ORIGINAL_MAX_POSITIONS,
            "long_factor": list(LONG_FACTOR),
            "short_factor": list(SHORT_FACTOR),
        },
        "bos_token_id": ENDOFTEXT_ID,
        "eos_token_id": [ENDOFTEXT_ID, END_ID],
        "pad_token_id": ENDOFTEXT_ID,
        # As published: a window longer than any sequence, so attention is plain causal.
        "sliding_window": 262144,
    }


def _vision_config(spec: SizeSpec) -> dict[str, Any]:
    return {
        "hidden_size": spec.vision_hidden_size,
        "intermediate_size": spec.vision_intermediate_size,
        "num_hidden_layers": spec.vision_layers,
        "num_attention_heads": spec.vision_heads,
        "num_channels": 3,
        "image_size": 448,
        "patch_size": 14,
        "hidden_act": "gelu_pytorch_tanh",
        "layer_norm_eps": 1e-6,
        "attention_dropout": 0.0,
        "crop_size": 448,
        "image_token_id": IMAGE_TOKEN_ID,
        "feature_layer": -2,
    }


def _audio_config(spec: SizeSpec) -> dict[str, Any]:
    return {
        "hidden_size": spec.audio_hidden_size,
        "intermediate_size": spec.audio_intermediate_size,
        "num_blocks": spec.audio_blocks,
        "num_attention_heads": spec.audio_heads,
        "activation": "swish",
        "chunk_size": -1,
        "left_chunk": 18,
        "dropout_rate": 0.0,
        "ext_pw_out_channel": spec.audio_hidden_size,
        "depthwise_separable_out_channel": spec.audio_hidden_size,
        "depthwise_multiplier": 1,
        "kernel_size": 3,
        "conv_activation": "swish",
        "input_size": 80,
        "conv_glu_type": "swish",
        "time_reduction": 8,
        "bias_max_distance": 500,
        "bias_symmetric": False,
        "nemo_activation": "relu",
        "nemo_conv_channels": spec.audio_channels,
        "downsample_rate": 1,
        "initializer_range": 0.02,
        "audio_token_id": AUDIO_TOKEN_ID,
        "feature_layer": -2,
    }


def cache_key(size: str, content: str = "", model: str = "multimodal") -> str:
    """Short hash naming a cached checkpoint: the full config, seed, version and ``content``;
    a Phi-4-mini checkpoint's name says so (``ci-mini-...``)."""
    payload = {
        "content": content,
        "size": size,
        "spec": asdict(size_spec(size)),
        "config": config_kwargs(size, model),
        "seed": SEED,
        "version": CHECKPOINT_VERSION,
    }
    return kit_sizes.cache_key(size if model == "multimodal" else f"{size}-{model}", payload)
