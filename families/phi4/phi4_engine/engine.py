"""Which engine builds and runs the plans: bf16 ``torch.export`` plans or TensorRT engines.

``auto`` takes TensorRT only where it can be built and run: a CUDA device, an importable
``tensorrt`` package and a TensorRT builder in this family (there is none: the plans are
``torch.export`` programs, so every host runs ``torch`` and the choice records why). Deciding
never imports TensorRT (``importlib.util.find_spec`` only looks), so the CPU path does not load
it at all.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass

import torch

TORCH = "torch"
TENSORRT = "tensorrt"
TENSORRT_BUILDER = False
"""Whether ``phi4_engine.build`` can build TensorRT engines."""


@dataclass(frozen=True)
class EngineChoice:
    """The engine that builds and runs the plans, and why it was chosen."""

    name: str
    reason: str


class EngineUnavailableError(RuntimeError):
    """The engine asked for cannot run here: one line saying what is missing."""


def tensorrt_missing() -> str | None:
    """Why TensorRT cannot run here, or None when it can."""
    if not torch.cuda.is_available():
        return "no CUDA device"
    if importlib.util.find_spec("tensorrt") is None:
        return "the tensorrt package is not installed"
    if not TENSORRT_BUILDER:
        return "this family builds no TensorRT engines"
    return None


def choose_engine(requested: str) -> EngineChoice:
    """The engine for ``engine=requested`` (``auto``, ``torch`` or ``tensorrt``)."""
    if requested == TORCH:
        return EngineChoice(TORCH, "engine=torch asked for")
    missing = tensorrt_missing()
    if requested == TENSORRT:
        if missing is not None:
            raise EngineUnavailableError(f"engine=tensorrt cannot run here: {missing}")
        return EngineChoice(TENSORRT, "engine=tensorrt asked for")
    if requested != "auto":
        raise ValueError(f"engine={requested!r} is not one of auto, torch, tensorrt")
    if missing is not None:
        return EngineChoice(TORCH, f"engine=auto: {missing}, bf16 torch.export plans")
    return EngineChoice(TENSORRT, "engine=auto: CUDA device and tensorrt package present")
