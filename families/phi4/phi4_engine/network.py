"""The engine's own Phi-4-multimodal networks: ``vision``, ``prefill`` and ``decode``.

Written independently of transformers' modeling code, as an engine's networks are, and run in
the dtype of their weights (bf16 in a plan). The decoder reuses the embedded family's Phi-3
layer math (``tiny_engine.network``: fused qkv and gate/up projections, grouped-query
attention, partial rotary embedding, an explicit KV cache tensor) and adds what Phi-4 has on
top: LongRoPE (short factors up to ``original_max_position_embeddings``, long factors beyond,
cos/sin scaled by the attention factor) and image features merged at the placeholder positions.
The vision network is the SigLIP encoder up to the feature layer, the 2x2 average pool and
the image projection, per crop; the HD layout (separators between rows, global crop last) is
plain indexing, done by the runtime (``phi4_engine.native``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import torch
from tiny_engine.network import DecodeNetwork as TinyDecodeNetwork
from tiny_engine.network import NetworkShape, _Network
from torch import nn
from torch.nn import functional

TEXT_PREFIXES = ("model.layers.", "model.embed_tokens.", "model.norm.", "lm_head.")
VISION_PREFIX = "model.embed_tokens_extend.image_embed."


def text_weights(weights: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The decoder's weights (the vision and audio encoders' are not part of its plans)."""
    return {name: t for name, t in weights.items() if name.startswith(TEXT_PREFIXES)}


def vision_weights(weights: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The image embedding's weights, named relative to it."""
    prefix = len(VISION_PREFIX)
    return {name[prefix:]: t for name, t in weights.items() if name.startswith(VISION_PREFIX)}


@dataclass(frozen=True)
class LongRope:
    """Phi-4's LongRoPE numbers, read from the config."""

    short_factor: tuple[float, ...]
    long_factor: tuple[float, ...]
    original_max_positions: int
    attention_factor: float

    @classmethod
    def from_config(cls, config: Any) -> LongRope:
        """From ``rope_parameters`` (``rope_type`` ``longrope``)."""
        rope = config.rope_parameters
        original = int(
            rope.get("original_max_position_embeddings") or config.max_position_embeddings
        )
        factor = rope.get("factor") or config.max_position_embeddings / original
        attention = rope.get("attention_factor")
        if attention is None:
            attention = (
                1.0 if factor <= 1.0 else math.sqrt(1 + math.log(factor) / math.log(original))
            )
        return cls(tuple(rope["short_factor"]), tuple(rope["long_factor"]), original, attention)


class _Phi4Network(_Network):
    """The Phi-3 decoder of ``tiny_engine`` with LongRoPE and image features at placeholders."""

    short_inv_freq: torch.Tensor  # registered buffers
    long_inv_freq: torch.Tensor

    def __init__(
        self, shape: NetworkShape, rope: LongRope, weights: dict[str, torch.Tensor]
    ) -> None:
        super().__init__(shape, weights)
        self.rope = rope
        half = shape.rotary_dim // 2
        exponents = torch.arange(0, half, dtype=torch.float32) / half
        base = shape.rope_theta**exponents
        short = 1.0 / (torch.tensor(rope.short_factor, dtype=torch.float32) * base)
        long = 1.0 / (torch.tensor(rope.long_factor, dtype=torch.float32) * base)
        self.register_buffer("short_inv_freq", short, persistent=False)
        self.register_buffer("long_inv_freq", long, persistent=False)

    def _rotate(self, states: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        # transformers switches to the long factors once the sequence is longer than the
        # original context (modeling_rope_utils.longrope_frequency_update).
        is_long = positions.max() + 1 > self.rope.original_max_positions
        inv_freq = torch.where(is_long, self.long_inv_freq, self.short_inv_freq)
        freqs = positions.float()[:, None] * inv_freq[None, :]
        angles = torch.cat((freqs, freqs), dim=-1)
        scale = self.rope.attention_factor
        cos = (angles.cos() * scale).to(states.dtype)
        sin = (angles.sin() * scale).to(states.dtype)
        rotary, passthrough = states.split(
            [self.shape.rotary_dim, states.shape[-1] - self.shape.rotary_dim], dim=-1
        )
        first, second = rotary.chunk(2, dim=-1)
        rotated = torch.cat((-second, first), dim=-1)
        return torch.cat((rotary * cos + rotated * sin, passthrough), dim=-1)


class PrefillNetwork(_Phi4Network):
    """Prompt ``[1, length]`` and image features ``[1, length, hidden]`` (used where
    ``image_mask`` is set) -> last position's fp32 logits and the KV cache."""

    def forward(
        self, input_ids: torch.Tensor, image_features: torch.Tensor, image_mask: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Run the whole prompt with a causal mask."""
        hidden = functional.embedding(input_ids, self._weight("model.embed_tokens.weight"))
        hidden = torch.where(image_mask[..., None], image_features.to(hidden.dtype), hidden)
        positions = torch.arange(input_ids.shape[1], device=input_ids.device)
        return self._layers(hidden, positions, None)


class DecodeNetwork(_Phi4Network, TinyDecodeNetwork):
    """One token ``[1, 1]`` and the cache so far -> next logits and the cache one longer:
    ``tiny_engine``'s decode step, rotated with LongRoPE."""


@dataclass(frozen=True)
class VisionShape:
    """The vision encoder's numbers (from ``vision_config``) and the layers actually used."""

    hidden_size: int
    heads: int
    patch_size: int
    patches_per_side: int
    used_layers: int
    layer_norm_eps: float

    @classmethod
    def from_config(cls, config: Any) -> VisionShape:
        """``feature_layer`` -2 takes the hidden states after all but the last layer."""
        vision = config.vision_config
        layers = vision.num_hidden_layers
        feature = vision.feature_layer
        used = feature + layers + 1 if feature < 0 else feature
        return cls(
            hidden_size=vision.hidden_size,
            heads=vision.num_attention_heads,
            patch_size=vision.patch_size,
            patches_per_side=vision.image_size // vision.patch_size,
            used_layers=used,
            layer_norm_eps=vision.layer_norm_eps,
        )


class VisionNetwork(nn.Module):
    """Crops ``[crops, 3, 448, 448]`` -> projected features ``[crops, 16, 16, hidden]`` and the
    two projected separators ``[2, hidden]`` (row end, then global)."""

    def __init__(self, shape: VisionShape, weights: dict[str, torch.Tensor]) -> None:
        super().__init__()
        self.shape = shape
        self.weights = nn.ParameterDict(
            {
                name.replace(".", "/"): nn.Parameter(t, requires_grad=False)
                for name, t in weights.items()
            }
        )

    def _weight(self, name: str) -> torch.Tensor:
        weight: torch.Tensor = self.weights[name.replace(".", "/")]
        return weight

    def _linear(self, hidden: torch.Tensor, name: str) -> torch.Tensor:
        return functional.linear(
            hidden, self._weight(name + ".weight"), self._weight(name + ".bias")
        )

    def _layer_norm(self, hidden: torch.Tensor, name: str) -> torch.Tensor:
        return functional.layer_norm(
            hidden.float(),
            (self.shape.hidden_size,),
            self._weight(name + ".weight").float(),
            self._weight(name + ".bias").float(),
            self.shape.layer_norm_eps,
        ).to(hidden.dtype)

    def _encoder_layer(self, hidden: torch.Tensor, index: int) -> torch.Tensor:
        prefix = f"img_processor.encoder.layers.{index}."
        crops, length, width = hidden.shape
        heads = self.shape.heads
        normed = self._layer_norm(hidden, prefix + "layer_norm1")
        query, key, value = (
            self._linear(normed, prefix + f"self_attn.{p}_proj")
            .view(crops, length, heads, width // heads)
            .transpose(1, 2)
            for p in ("q", "k", "v")
        )
        attended = functional.scaled_dot_product_attention(query, key, value)
        attended = attended.transpose(1, 2).reshape(crops, length, width)
        hidden = hidden + self._linear(attended, prefix + "self_attn.out_proj")
        normed = self._layer_norm(hidden, prefix + "layer_norm2")
        inner = functional.gelu(self._linear(normed, prefix + "mlp.fc1"), approximate="tanh")
        return hidden + self._linear(inner, prefix + "mlp.fc2")

    def _project(self, features: torch.Tensor) -> torch.Tensor:
        up = functional.gelu(self._linear(features, "img_projection_up"))
        return self._linear(up, "img_projection_down")

    def forward(self, pixel_values: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Encode every crop (no padded patches: each crop's positions are 0..1023)."""
        dtype = self._weight("img_processor.embeddings.patch_embedding.weight").dtype
        patches = functional.conv2d(
            pixel_values.to(dtype),
            self._weight("img_processor.embeddings.patch_embedding.weight"),
            self._weight("img_processor.embeddings.patch_embedding.bias"),
            stride=self.shape.patch_size,
        )
        hidden = patches.flatten(2).transpose(1, 2)
        hidden = hidden + self._weight("img_processor.embeddings.position_embedding.weight")
        for index in range(self.shape.used_layers):
            hidden = self._encoder_layer(hidden, index)
        side = self.shape.patches_per_side
        grid = hidden.view(-1, side, side, self.shape.hidden_size).permute(0, 3, 1, 2)
        pooled = functional.avg_pool2d(grid, kernel_size=2, stride=2).permute(0, 2, 3, 1)
        separators = torch.cat(
            [
                self._weight("sub_img_feature_extensor").reshape(1, -1),
                self._weight("global_img_feature_extensor").reshape(1, -1),
            ]
        )
        return self._project(pooled), self._project(separators)


def hd_layout(
    crop_features: torch.Tensor, separators: torch.Tensor, rows: int, columns: int
) -> torch.Tensor:
    """Phi-4-multimodal's image token order from per-crop features: the grid crops as one
    image with a row-end separator after each row, the global separator, then the global crop
    the same way. ``crop_features`` is ``[1 + rows * columns, side, side, hidden]``."""
    side, hidden = crop_features.shape[1], crop_features.shape[-1]
    row_end, global_separator = separators[0], separators[1]
    grid = (
        crop_features[1:]
        .reshape(rows, columns, side, side, hidden)
        .transpose(1, 2)
        .reshape(rows * side, columns * side, hidden)
    )
    parts = [_with_row_ends(grid, row_end), global_separator[None]]
    parts.append(_with_row_ends(crop_features[0], row_end))
    return torch.cat(parts)


def _with_row_ends(grid: torch.Tensor, row_end: torch.Tensor) -> torch.Tensor:
    ends = row_end.expand(grid.shape[0], 1, grid.shape[-1])
    return torch.cat([grid, ends], dim=1).reshape(-1, grid.shape[-1])
