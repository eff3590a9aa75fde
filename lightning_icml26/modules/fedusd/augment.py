"""Differentiable siamese augmentation: one random transform applied alike to real and synthetic batches."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor

__all__ = ["siamese_augment"]


def siamese_augment(
    *batches: Tensor,
    generator: torch.Generator,
    max_rotation: float = 15.0,
    max_scale: float = 0.2,
    max_shift: float = 0.125,
    max_brightness: float = 0.2,
    max_contrast: float = 0.2,
) -> tuple[Tensor, ...]:
    """Apply one randomly drawn affine warp and brightness / contrast change to every batch.

    The parameters are drawn once per call from ``generator`` and shared by all batches (the "siamese" part:
    real and synthetic images see the same transform), and every operation is differentiable with respect
    to the pixels (bilinear ``grid_sample``).

    Args:
        *batches: ``(n_i, C, H, W)`` tensors of one image shape.
        generator: source of the random parameters.
        max_rotation: largest rotation in degrees.
        max_scale: largest relative zoom in or out.
        max_shift: largest translation as a fraction of the image side.
        max_brightness: largest additive brightness shift.
        max_contrast: largest relative contrast change.

    Returns:
        The augmented batches, in order.

    Example:
        >>> x = torch.randn(3, 1, 8, 8)
        >>> a, b = siamese_augment(x, x[:1], generator=torch.Generator().manual_seed(0))
        >>> torch.allclose(a[:1], b)
        True
    """
    if not batches:
        raise ValueError("siamese_augment needs at least one batch")
    shape = batches[0].shape[1:]
    for i, b in enumerate(batches):
        if b.ndim != 4 or b.shape[1:] != shape:
            raise ValueError(f"batch {i} must have shape (n, {', '.join(map(str, shape))}), got {tuple(b.shape)}")
    u = torch.rand(6, generator=generator, dtype=torch.float64) * 2 - 1
    angle = math.radians(max_rotation) * float(u[0])
    scale = 1.0 + max_scale * float(u[1])
    tx, ty = 2 * max_shift * float(u[2]), 2 * max_shift * float(u[3])
    brightness, contrast = max_brightness * float(u[4]), 1.0 + max_contrast * float(u[5])
    cos, sin = math.cos(angle) / scale, math.sin(angle) / scale
    out = []
    for b in batches:
        theta = torch.tensor([[cos, -sin, tx], [sin, cos, ty]], dtype=b.dtype, device=b.device)
        grid = F.affine_grid(theta.expand(b.shape[0], 2, 3), list(b.shape), align_corners=False)
        warped = F.grid_sample(b, grid, mode="bilinear", padding_mode="border", align_corners=False)
        out.append(warped * contrast + brightness)
    return tuple(out)
