"""The engine's own Phi-3 networks: one module per plan (``prefill``, ``decode``).

They are written independently of transformers' modeling code, as an engine's networks are,
and compute in the dtype of their weights (bf16 in a plan). The KV cache is an explicit input
and output tensor of shape ``[layers, 1, kv_heads, length, head_dim]`` so that both networks
export as pure functions of their inputs and weights.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch import nn
from torch.nn import functional


@dataclass(frozen=True)
class NetworkShape:
    """The architecture numbers a network needs (read from a Phi-3 config)."""

    vocab_size: int
    hidden_size: int
    layers: int
    heads: int
    kv_heads: int
    rotary_dim: int
    rope_theta: float
    rms_norm_eps: float
    max_positions: int

    @property
    def head_dim(self) -> int:
        """Width of one attention head."""
        return self.hidden_size // self.heads

    @classmethod
    def from_config(cls, config: Any) -> NetworkShape:
        """Read the numbers from a transformers ``Phi3Config``."""
        head_dim = config.hidden_size // config.num_attention_heads
        rope = config.rope_parameters
        return cls(
            vocab_size=config.vocab_size,
            hidden_size=config.hidden_size,
            layers=config.num_hidden_layers,
            heads=config.num_attention_heads,
            kv_heads=config.num_key_value_heads,
            rotary_dim=int(head_dim * rope.get("partial_rotary_factor", 1.0)),
            rope_theta=float(rope["rope_theta"]),
            rms_norm_eps=config.rms_norm_eps,
            max_positions=config.max_position_embeddings,
        )


class _Network(nn.Module):
    """Weights of a Phi-3 decoder, named as in the checkpoint, and the shared layer math."""

    inv_freq: torch.Tensor  # a registered buffer

    def __init__(self, shape: NetworkShape, weights: dict[str, torch.Tensor]) -> None:
        super().__init__()
        self.shape = shape
        # Parameters share storage with ``weights``: building a network copies nothing.
        # Module attribute names may not contain dots; the checkpoint's names do.
        self.weights = nn.ParameterDict(
            {
                name.replace(".", "/"): nn.Parameter(t, requires_grad=False)
                for name, t in weights.items()
            }
        )
        half = shape.rotary_dim // 2
        inv_freq = 1.0 / (shape.rope_theta ** (torch.arange(0, half, dtype=torch.float32) / half))
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    def _weight(self, name: str) -> torch.Tensor:
        weight: torch.Tensor = self.weights[name.replace(".", "/")]
        return weight

    def _rms_norm(self, hidden: torch.Tensor, name: str) -> torch.Tensor:
        # Normalise in fp32 like the reference does; only the scale runs in the plan dtype.
        as_float = hidden.float()
        scale = torch.rsqrt(as_float.pow(2).mean(-1, keepdim=True) + self.shape.rms_norm_eps)
        return self._weight(name) * (as_float * scale).to(hidden.dtype)

    def _rotate(self, states: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        freqs = positions.float()[:, None] * self.inv_freq[None, :]
        angles = torch.cat((freqs, freqs), dim=-1)
        cos, sin = angles.cos().to(states.dtype), angles.sin().to(states.dtype)
        rotary, passthrough = states.split(
            [self.shape.rotary_dim, states.shape[-1] - self.shape.rotary_dim], dim=-1
        )
        first, second = rotary.chunk(2, dim=-1)
        rotated = torch.cat((-second, first), dim=-1)
        return torch.cat((rotary * cos + rotated * sin, passthrough), dim=-1)

    def _attention(
        self,
        hidden: torch.Tensor,
        layer: int,
        positions: torch.Tensor,
        past: tuple[torch.Tensor, torch.Tensor] | None,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        shape = self.shape
        prefix = f"model.layers.{layer}.self_attn."
        qkv = functional.linear(hidden, self._weight(prefix + "qkv_proj.weight"))
        kv_width = shape.kv_heads * shape.head_dim
        query, key, value = qkv.split([shape.hidden_size, kv_width, kv_width], dim=-1)
        length = hidden.shape[1]
        query = query.view(1, length, shape.heads, shape.head_dim).transpose(1, 2)
        key = key.view(1, length, shape.kv_heads, shape.head_dim).transpose(1, 2)
        value = value.view(1, length, shape.kv_heads, shape.head_dim).transpose(1, 2)
        query, key = self._rotate(query, positions), self._rotate(key, positions)
        if past is not None:
            key, value = torch.cat((past[0], key), dim=2), torch.cat((past[1], value), dim=2)
        attended = functional.scaled_dot_product_attention(
            query, key, value, is_causal=past is None, enable_gqa=True
        )
        attended = attended.transpose(1, 2).reshape(1, length, shape.hidden_size)
        return functional.linear(attended, self._weight(prefix + "o_proj.weight")), key, value

    def _mlp(self, hidden: torch.Tensor, layer: int) -> torch.Tensor:
        prefix = f"model.layers.{layer}.mlp."
        gate, up = functional.linear(hidden, self._weight(prefix + "gate_up_proj.weight")).chunk(
            2, dim=-1
        )
        return functional.linear(
            up * functional.silu(gate), self._weight(prefix + "down_proj.weight")
        )

    def _run(
        self,
        input_ids: torch.Tensor,
        positions: torch.Tensor,
        cache: tuple[torch.Tensor, torch.Tensor] | None,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        hidden = functional.embedding(input_ids, self._weight("model.embed_tokens.weight"))
        return self._layers(hidden, positions, cache)

    def _layers(
        self,
        hidden: torch.Tensor,
        positions: torch.Tensor,
        cache: tuple[torch.Tensor, torch.Tensor] | None,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """The decoder layers over embedded ``hidden``: last position's fp32 logits and the
        KV cache (a family that embeds its own way, images merged in, starts here)."""
        keys, values = [], []
        for layer in range(self.shape.layers):
            prefix = f"model.layers.{layer}."
            past = None if cache is None else (cache[0][layer], cache[1][layer])
            normed = self._rms_norm(hidden, prefix + "input_layernorm.weight")
            attended, key, value = self._attention(normed, layer, positions, past)
            hidden = hidden + attended
            normed = self._rms_norm(hidden, prefix + "post_attention_layernorm.weight")
            hidden = hidden + self._mlp(normed, layer)
            keys.append(key)
            values.append(value)
        last = self._rms_norm(hidden[:, -1, :], "model.norm.weight")
        logits = functional.linear(last, self._weight("lm_head.weight")).float()
        return logits, torch.stack(keys), torch.stack(values)


class PrefillNetwork(_Network):
    """Prompt ``[1, length]`` -> last position's fp32 logits ``[1, vocab]`` and the KV cache."""

    def forward(self, input_ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Run the whole prompt with a causal mask."""
        positions = torch.arange(input_ids.shape[1], device=input_ids.device)
        return self._run(input_ids, positions, None)


class DecodeNetwork(_Network):
    """One token ``[1, 1]`` and the cache so far -> next logits and the cache one longer."""

    def forward(
        self, input_ids: torch.Tensor, keys: torch.Tensor, values: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Attend over the cache plus the new token (its position is the cache length)."""
        positions = torch.arange(keys.shape[3], keys.shape[3] + 1, device=input_ids.device)
        return self._run(input_ids, positions, (keys, values))
