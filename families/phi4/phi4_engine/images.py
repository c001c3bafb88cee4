"""Deterministic test images and Phi-4-multimodal's HD crop layout for them.

The images are drawn from a seed (a background, shapes, a gradient), so every run sees the same
pixels. Preprocessing follows transformers' ``Phi4MultimodalImageProcessor`` for images whose
sides are multiples of the crop size (no resize or padding of the crops is needed): pixels
scaled to [-1, 1], one global crop (the whole image resized to one crop, bicubic without
antialias) followed by the grid of crops in row order, a patch mask of ones, and the number of
image tokens the model expects. That processor itself needs torchvision, which the family does
not install; both runtimes take their inputs from here, so they see the same tensors.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch.nn import functional

CROP = 448
PATCH = 14
MASK_SIZE = CROP // PATCH
# Compressed (2x2 average-pooled) features per crop side.
FEATURE_SIDE = MASK_SIZE // 2


@dataclass(frozen=True)
class ImageSpec:
    """One generated image: its name, size in crops and the colours it is drawn with."""

    name: str
    rows: int
    columns: int
    background: tuple[int, int, int]
    shape: tuple[int, int, int]
    seed: int


IMAGES = (
    ImageSpec("red-square", 1, 1, (250, 250, 245), (220, 30, 30), 11),
    ImageSpec("blue-stripes", 1, 2, (20, 20, 60), (60, 120, 240), 12),
    ImageSpec("green-disc", 2, 1, (240, 235, 200), (30, 160, 60), 13),
)


@dataclass(frozen=True)
class ImageInputs:
    """What the model takes for one image (batch of one)."""

    pixel_values: torch.Tensor
    """``[1, crops, 3, 448, 448]`` float32 in [-1, 1]: the global crop, then the grid."""
    image_sizes: torch.Tensor
    """``[1, 2]`` (height, width) in pixels."""
    attention_mask: torch.Tensor
    """``[1, crops, 32, 32]`` patch mask (all ones: nothing is padded)."""
    num_tokens: int
    """Image placeholder tokens the prompt must hold for this image."""


def draw(spec: ImageSpec) -> torch.Tensor:
    """The image as ``[3, H, W]`` uint8: background, a seeded gradient and the shape."""
    height, width = spec.rows * CROP, spec.columns * CROP
    generator = torch.Generator().manual_seed(spec.seed)
    canvas = torch.tensor(spec.background, dtype=torch.float32)[:, None, None].expand(
        3, height, width
    )
    rows = torch.linspace(0.0, 1.0, height)[:, None]
    columns = torch.linspace(0.0, 1.0, width)[None, :]
    gradient = (rows * 40.0 + columns * 25.0)[None]
    noise = torch.rand((3, height, width), generator=generator) * 12.0
    image = canvas + gradient + noise
    colour = torch.tensor(spec.shape, dtype=torch.float32)[:, None, None]
    image = torch.where(_shape_mask(spec, rows, columns)[None], colour + noise, image)
    return image.clamp(0, 255).round().to(torch.uint8)


def _shape_mask(spec: ImageSpec, rows: torch.Tensor, columns: torch.Tensor) -> torch.Tensor:
    if spec.name.endswith("square"):
        return ((rows - 0.5).abs() < 0.25) & ((columns - 0.5).abs() < 0.25)
    if spec.name.endswith("stripes"):
        return ((columns * 12).floor() % 2) == 0
    return ((rows - 0.5) ** 2 + (columns - 0.5) ** 2) < 0.1


def preprocess(image: torch.Tensor) -> ImageInputs:
    """Global crop plus grid crops of ``image`` (``[3, H, W]`` uint8, sides multiples of 448)."""
    _, height, width = image.shape
    if height % CROP or width % CROP:
        raise ValueError(f"image of {width}x{height} pixels: sides must be multiples of {CROP}")
    rows, columns = height // CROP, width // CROP
    scaled = (image.float() / 255.0 - 0.5) / 0.5
    global_crop = functional.interpolate(
        scaled[None], size=(CROP, CROP), mode="bicubic", align_corners=False, antialias=False
    )
    grid = (
        scaled.reshape(3, rows, CROP, columns, CROP)
        .permute(1, 3, 0, 2, 4)
        .reshape(-1, 3, CROP, CROP)
    )
    crops = torch.cat([global_crop, grid])
    mask = torch.ones((1, crops.shape[0], MASK_SIZE, MASK_SIZE))
    return ImageInputs(
        pixel_values=crops[None],
        image_sizes=torch.tensor([[height, width]]),
        attention_mask=mask,
        num_tokens=num_image_tokens(rows, columns),
    )


def num_image_tokens(rows: int, columns: int) -> int:
    """Tokens of an unpadded image of ``rows`` x ``columns`` crops (the processor's formula):
    the global features with a separator column, one global separator, the grid's features with
    a separator column."""
    side = FEATURE_SIDE
    return side * (side + 1) + 1 + rows * side * (columns * side + 1)
