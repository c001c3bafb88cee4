"""The staged engine build: one plan per network, each staged to disk as soon as it is built.

A plan is one network's engine (a ``torch.export`` archive with its own copy of the weights, or
any serialized engine), held in memory as one buffer while it is built. Each is written
through the bundle writer (write, fsync, drop from the page cache) and released before the next
network is built; the bundle is published atomically. With ``retain_plans`` the buffers stay
alive until the build ends: the bug class where the prefill plan is still resident while decode
builds, which qualify's memory cap and triage exist to catch.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import harness
from harness.kit.bundle import BundleWriter, StagedPlan

if TYPE_CHECKING:
    import torch


def stage_networks(
    bundle_dir: Path,
    networks: Sequence[str],
    build_plan: Callable[[str], io.BytesIO],
    metadata: dict[str, Any],
    *,
    retain_plans: bool = False,
    on_staged: Callable[[StagedPlan], None] | None = None,
) -> Path:
    """Build, stage and (unless retained) release each network's plan in
    ``harness.phase("build:<network>")``, then publish the bundle at ``bundle_dir`` with
    ``metadata`` (and ``networks``) in its manifest.

    ``on_staged`` is called after each plan is on disk; an exception from it, or from anything
    else, aborts the build and leaves no bundle behind.
    """
    with BundleWriter(bundle_dir) as writer:
        retained: list[io.BytesIO] = []
        for network in networks:
            with harness.phase(f"build:{network}"):
                plan = build_plan(network)
                with plan.getbuffer() as view:
                    staged = writer.stage(network, view)
                if retain_plans:
                    retained.append(plan)
                # Unless retained, this was the buffer's last reference: it is freed here,
                # before the next network builds.
                del plan
            if on_staged is not None:
                on_staged(staged)
        published = writer.publish({"networks": list(networks), **metadata})
        del retained
    return published


def serialize(exported: Any) -> io.BytesIO:
    """``torch.export.save`` of an exported program into one in-memory buffer: the plan."""
    import torch

    plan = io.BytesIO()
    torch.export.save(exported, plan)
    return plan


class CacheShape(Protocol):
    """What the decode example needs of a network's shape."""

    @property
    def layers(self) -> int: ...
    @property
    def kv_heads(self) -> int: ...
    @property
    def head_dim(self) -> int: ...
    @property
    def max_positions(self) -> int: ...


def export_decode(network: Any, shape: CacheShape, dtype: torch.dtype) -> Any:
    """``torch.export`` of a decode network ``(input_ids [1, 1], keys, values)`` whose KV cache
    (``[layers, 1, kv_heads, past, head_dim]`` each) is dynamic in its past length."""
    import torch
    from torch.export import Dim

    token = torch.zeros((1, 1), dtype=torch.long)
    cache_shape = (shape.layers, 1, shape.kv_heads, 8, shape.head_dim)
    # Two distinct tensors: export treats one tensor passed twice as an alias and would
    # trace the keys as the values.
    keys = torch.zeros(cache_shape, dtype=dtype)
    values = torch.zeros(cache_shape, dtype=dtype)
    past = Dim("past", min=1, max=shape.max_positions - 1)
    return torch.export.export(
        network,
        (token, keys, values),
        dynamic_shapes={"input_ids": None, "keys": {3: past}, "values": {3: past}},
        strict=False,
    )
