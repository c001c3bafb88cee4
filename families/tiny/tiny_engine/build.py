"""Engine build: one bf16 plan per network, each staged to disk as soon as it is built.

A plan is the ``torch.export`` archive of one network: its serialized program and its own
copy of the bf16 weights, held in memory as one buffer while it is built, like a TensorRT
engine plan. Built plans are written out and released before the next network is built,
unless ``retain_plans`` is set: that keeps every plan buffer alive until the end of the build,
the bug class where the prefill plan is still resident while decode builds.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch.export import Dim

import harness
from harness.kit.build import export_decode, serialize, stage_networks
from harness.kit.bundle import StagedPlan
from tiny_engine import checkpoint
from tiny_engine.network import DecodeNetwork, NetworkShape, PrefillNetwork

NETWORKS = ("prefill", "decode")
PLAN_DTYPE = torch.bfloat16
PERTURB_SEED = 4321

# What the build holds (benchmarks/bench_tiny.py prints it per phase): the libraries and the
# bf16 weights, one plan being exported with its export and serialization transients, and with
# retain_plans=true every plan built before it. At size small the plans are about 195 MiB each,
# so retaining the prefill plan while the decode plan is built needs about that much more: the
# README's "see it fail" cap sits between the two peaks.


def build_engine(
    checkpoint_dir: Path,
    bundle_dir: Path,
    *,
    retain_plans: bool = False,
    perturb_native: float = 0.0,
    on_staged: Callable[[StagedPlan], None] | None = None,
) -> Path:
    """Build every network's plan from the checkpoint and publish the bundle at ``bundle_dir``.

    The build runs in ``harness.phase("build")``, each network in ``build:<network>``.
    ``on_staged`` is called after each plan is on disk; an exception from it, or from
    anything else, aborts the build and leaves no bundle behind.
    """
    with harness.phase("build"):
        shape, weights = load_plan_weights(checkpoint_dir, perturb_native)
        return stage_networks(
            bundle_dir,
            NETWORKS,
            lambda network: build_plan(network, shape, weights),
            {
                "dtype": str(PLAN_DTYPE).removeprefix("torch."),
                "stop_token_ids": checkpoint.stop_token_ids(checkpoint_dir),
                "perturb_native": perturb_native,
            },
            retain_plans=retain_plans,
            on_staged=on_staged,
        )


def load_plan_weights(
    checkpoint_dir: Path, perturb_native: float
) -> tuple[NetworkShape, dict[str, torch.Tensor]]:
    """The checkpoint's weights in the plan dtype (loaded as such: no fp32 copy stays alive)."""
    model = checkpoint.load_model(checkpoint_dir, PLAN_DTYPE)
    shape = NetworkShape.from_config(model.config)
    weights = {name: tensor.detach() for name, tensor in model.state_dict().items()}
    if perturb_native:
        perturb(weights, perturb_native)
    return shape, weights


def build_plan(network: str, shape: NetworkShape, weights: dict[str, torch.Tensor]) -> io.BytesIO:
    """Export ``network`` over ``weights`` and serialize it into one in-memory buffer."""
    return serialize(export_network(network, shape, weights))


def export_network(network: str, shape: NetworkShape, weights: dict[str, torch.Tensor]) -> Any:
    """``torch.export`` of one network, with its sequence (prefill) or cache (decode) dynamic."""
    exporters = {"prefill": _export_prefill, "decode": _export_decode}
    if network not in exporters:
        raise ValueError(f"network {network!r} is not one of {', '.join(NETWORKS)}")
    with torch.no_grad():
        return exporters[network](shape, weights)


def _export_prefill(shape: NetworkShape, weights: dict[str, torch.Tensor]) -> Any:
    prompt = torch.zeros((1, 8), dtype=torch.long)
    length = Dim("length", min=2, max=shape.max_positions)
    return torch.export.export(
        PrefillNetwork(shape, weights),
        (prompt,),
        dynamic_shapes={"input_ids": {1: length}},
        strict=False,
    )


def _export_decode(shape: NetworkShape, weights: dict[str, torch.Tensor]) -> Any:
    return export_decode(DecodeNetwork(shape, weights), shape, PLAN_DTYPE)


def perturb(weights: dict[str, torch.Tensor], std: float) -> None:
    """Add seeded Gaussian noise of ``std`` to every weight in place (a broken engine)."""
    generator = torch.Generator().manual_seed(PERTURB_SEED)
    for name in sorted(weights):
        tensor = weights[name]
        noise = torch.randn(tensor.shape, generator=generator, dtype=torch.float32) * std
        tensor.add_(noise.to(tensor.dtype))
