"""Engine build: one bf16 plan per network (prefill, decode and, for Phi-4-multimodal, vision),
each staged to disk as soon as it is built.

A plan is the ``torch.export`` archive of one network with its own copy of the bf16 weights,
held in memory as one buffer while it is built, like a TensorRT engine plan. Each is written
by the family kit's staged build (``harness.kit.build``: write, fsync, drop from the page cache)
and released before the next network is built; the bundle is published atomically. With
``retain_plans`` the buffers stay alive until the build ends, as the original builder kept
them: the prefill plan while decode builds, both while vision builds.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from tiny_engine.build import perturb
from tiny_engine.network import NetworkShape
from torch.export import Dim

import harness
from harness.kit.build import export_decode, serialize, stage_networks
from harness.kit.bundle import StagedPlan
from harness.kit.checkpoint import stop_token_ids
from phi4_engine import checkpoint
from phi4_engine.engine import TORCH, EngineChoice
from phi4_engine.images import CROP
from phi4_engine.network import (
    DecodeNetwork,
    LongRope,
    PrefillNetwork,
    VisionNetwork,
    VisionShape,
    text_weights,
    vision_weights,
)

NETWORKS = ("prefill", "decode", "vision")
TEXT_NETWORKS = ("prefill", "decode")
"""Phi-4-mini's: it has no vision encoder."""
PLAN_DTYPE = torch.bfloat16
# Crops per image: the global one plus up to 36 (the processor's dynamic_hd).
MAX_CROPS = 37


class PlanInputs:
    """What every network's export needs from the checkpoint, in the plan dtype."""

    def __init__(self, config: Any, weights: dict[str, torch.Tensor]) -> None:
        self.shape = NetworkShape.from_config(config)
        self.rope = LongRope.from_config(config)
        has_vision = getattr(config, "vision_config", None) is not None
        self.vision = VisionShape.from_config(config) if has_vision else None
        self.networks = NETWORKS if has_vision else TEXT_NETWORKS
        self.weights = weights


def build_engine(
    checkpoint_dir: Path,
    bundle_dir: Path,
    *,
    engine: EngineChoice,
    retain_plans: bool = False,
    trust_remote_code: bool = False,
    perturb_native: float = 0.0,
    on_staged: Callable[[StagedPlan], None] | None = None,
) -> Path:
    """Build every network's plan and publish the bundle at ``bundle_dir``.

    The build runs in ``harness.phase("build")``, each network in ``build:<network>``; an
    exception anywhere leaves no bundle behind.
    """
    if engine.name != TORCH:
        raise NotImplementedError(f"the {engine.name} builder is not part of this family")
    with harness.phase("build"):
        inputs = load_plan_inputs(checkpoint_dir, trust_remote_code, perturb_native)
        return stage_networks(
            bundle_dir,
            inputs.networks,
            lambda network: build_plan(network, inputs),
            {
                "dtype": str(PLAN_DTYPE).removeprefix("torch."),
                "engine": engine.name,
                "engine_reason": engine.reason,
                "hidden_size": inputs.shape.hidden_size,
                "stop_token_ids": stop_token_ids(checkpoint_dir),
                "retain_plans": retain_plans,
                "perturb_native": perturb_native,
            },
            retain_plans=retain_plans,
            on_staged=on_staged,
        )


def load_plan_inputs(
    checkpoint_dir: Path, trust_remote_code: bool, perturb_native: float = 0.0
) -> PlanInputs:
    """The checkpoint loaded in the plan dtype (no fp32 copy stays alive) and its numbers;
    ``perturb_native`` adds seeded noise of that std to every weight (a broken engine, as
    tiny's option of the same name)."""
    model = checkpoint.load_model(checkpoint_dir, PLAN_DTYPE, trust_remote_code=trust_remote_code)
    weights = {name: tensor.detach() for name, tensor in model.state_dict().items()}
    if perturb_native:
        perturb(weights, perturb_native)
    return PlanInputs(model.config, weights)


def build_plan(network: str, inputs: PlanInputs) -> io.BytesIO:
    """Export ``network`` and serialize it into one in-memory buffer."""
    return serialize(export_network(network, inputs))


def export_network(network: str, inputs: PlanInputs) -> Any:
    """``torch.export`` of one network with its sequence, cache or crop count dynamic."""
    exporters = {"prefill": _export_prefill, "decode": _export_decode, "vision": _export_vision}
    if network not in inputs.networks:
        raise ValueError(f"network {network!r} is not one of {', '.join(inputs.networks)}")
    with torch.no_grad():
        return exporters[network](inputs)


def _export_prefill(inputs: PlanInputs) -> Any:
    shape = inputs.shape
    prompt = torch.zeros((1, 8), dtype=torch.long)
    features = torch.zeros((1, 8, shape.hidden_size), dtype=PLAN_DTYPE)
    mask = torch.zeros((1, 8), dtype=torch.bool)
    length = Dim("length", min=2, max=shape.max_positions)
    return torch.export.export(
        PrefillNetwork(shape, inputs.rope, text_weights(inputs.weights)),
        (prompt, features, mask),
        dynamic_shapes={
            "input_ids": {1: length},
            "image_features": {1: length},
            "image_mask": {1: length},
        },
        strict=False,
    )


def _export_decode(inputs: PlanInputs) -> Any:
    network = DecodeNetwork(inputs.shape, inputs.rope, text_weights(inputs.weights))
    return export_decode(network, inputs.shape, PLAN_DTYPE)


def _export_vision(inputs: PlanInputs) -> Any:
    assert inputs.vision is not None, "only a checkpoint with a vision encoder has this network"
    crops = torch.zeros((2, 3, CROP, CROP), dtype=torch.float32)
    count = Dim("crops", min=2, max=MAX_CROPS)
    return torch.export.export(
        VisionNetwork(inputs.vision, vision_weights(inputs.weights)),
        (crops,),
        dynamic_shapes={"pixel_values": {0: count}},
        strict=False,
    )
