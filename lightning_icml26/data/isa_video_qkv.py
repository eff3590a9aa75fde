"""Seeded video-like attention inputs for in-context editing: ``[target ‖ context]`` q, k, v on an (f, h, w) grid.

Tokens sit on a ``frames x height x width`` grid (flattened frame-major, as a video DiT patchifies). Each head has
a smooth latent field, a sum of low-frequency random cosines over the grid, projected to q, k and v, so
neighbouring tokens are similar (what makes block means representative). Queries carry a smooth positive gain
that varies over the clip, so some regions attend more sharply than others. Queries and keys are then rotated by
a 3-axis rotary embedding of their (f, h, w) position.

The context clip (the reference an editor looks at) is a noisy, redundant copy of the target field: the same
latent field plus noise, its keys shrunk by ``context_gain`` (< 1), so it receives less attention than the
target by construction. The context shares the target's rotary positions (it is aligned with the target, frame
for frame).
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from lightning_icml26._checks import check_int

__all__ = ["video_qkv"]

_MODES = 12  # random cosine modes of each head's latent field
_CYCLES_PER_TOKEN = 0.03  # largest spatial frequency of the field (smooth over a 4 x 4 x 4 block)
_ROTARY_STEP, _ROTARY_BASE = 0.2, 100.0  # rotary angle per grid step at the top frequency; frequency base


def _rotary(x: Tensor, pos: Tensor, base: float) -> Tensor:
    """Rotate consecutive pairs of ``x`` (``(N, H, D)``) by angles from 3-axis positions ``pos`` (``(N, 3)``)."""
    n, h, d = x.shape
    pairs = d // 2
    axis = torch.arange(pairs) % 3  # pair i rotates with axis i mod 3
    rank = torch.arange(pairs) // 3
    freq = base ** (-rank.to(x.dtype) / max(1, (pairs + 2) // 3))
    angle = pos[:, axis].to(x.dtype) * freq  # (N, pairs)
    cos, sin = angle.cos()[:, None, :], angle.sin()[:, None, :]
    x1, x2 = x[..., 0::2], x[..., 1::2]
    out = torch.stack([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1)
    return out.reshape(n, h, d)


def _tile_order(frames: int, height: int, width: int, tile: tuple[int, int, int] | None) -> Tensor:
    """(f, h, w) of every token, frame-major, or tile by tile (compact cubes of consecutive tokens)."""
    f_, h_, w_ = torch.meshgrid(torch.arange(frames), torch.arange(height), torch.arange(width), indexing="ij")
    grid = torch.stack([f_, h_, w_], dim=-1).reshape(-1, 3)
    if tile is None:
        return grid
    t = torch.tensor(tile)
    outer, inner = grid // t, grid % t
    n_outer = -(-torch.tensor([frames, height, width]) // t)
    key = ((outer[:, 0] * n_outer[1] + outer[:, 1]) * n_outer[2] + outer[:, 2]) * int(t.prod())
    key = key + (inner[:, 0] * t[1] + inner[:, 1]) * t[2] + inner[:, 2]
    return grid[key.argsort()]


def _sample(
    grid: Tensor, heads: int, head_dim: int, temperature: float, noise_std: float, context_gain: float,
    g: torch.Generator,
) -> tuple[Tensor, Tensor, Tensor]:  # fmt: skip
    n, f64 = grid.shape[0], torch.float64
    omega = _CYCLES_PER_TOKEN * (2 * torch.rand(heads, _MODES, 3, generator=g, dtype=f64) - 1)
    phase = 2 * math.pi * torch.rand(heads, _MODES, generator=g, dtype=f64)
    field = torch.cos(2 * math.pi * torch.einsum("nc,hmc->nhm", grid, omega) + phase) / math.sqrt(_MODES)
    noise = torch.randn(n, heads, _MODES, generator=g, dtype=f64) * noise_std / math.sqrt(_MODES)
    proj = torch.randn(3, heads, _MODES, head_dim, generator=g, dtype=f64)
    proj[1] = proj[0] + 0.5 * proj[1]  # keys resemble queries: similar fields score high
    gain = torch.exp((field * torch.randn(heads, _MODES, generator=g, dtype=f64)).sum(-1, keepdim=True))
    scale = math.sqrt(temperature) * head_dim**-0.25  # q.k / sqrt(D) of order temperature
    pos = _ROTARY_STEP * grid
    out: list[list[Tensor]] = [[], [], []]
    for latent, key_gain in ((field, 1.0), (field + noise, context_gain)):
        out[0].append(_rotary(scale * gain * torch.einsum("nhm,hmd->nhd", latent, proj[0]), pos, _ROTARY_BASE))
        out[1].append(_rotary(key_gain * scale * torch.einsum("nhm,hmd->nhd", latent, proj[1]), pos, _ROTARY_BASE))
        out[2].append(torch.einsum("nhm,hmd->nhd", latent, proj[2]))
    q, k, v = (torch.cat(parts) for parts in out)
    return q, k, v


def video_qkv(
    frames: int,
    height: int,
    width: int,
    *,
    heads: int = 4,
    head_dim: int = 64,
    batch: int = 1,
    temperature: float = 2.0,
    context_noise: float = 0.5,
    context_gain: float = 0.6,
    tile: tuple[int, int, int] | None = (4, 4, 4),
    seed: int = 0,
    dtype: torch.dtype = torch.float32,
) -> tuple[Tensor, Tensor, Tensor, int]:
    """Generate q, k, v of a target clip followed by its context clip (same grid size).

    Args:
        frames: frames per clip.
        height: tokens per column.
        width: tokens per row.
        heads: attention heads.
        head_dim: per-head width (even).
        batch: independent samples.
        temperature: overall logit scale (larger: sharper attention).
        context_noise: standard deviation of the noise added to the context field (relative to the field's).
        context_gain: factor on the context keys, in ``(0, 1]`` (smaller: less salient context).
        tile: token order; ``(tf, th, tw)`` lists the tokens tile by tile (each tile frame-major inside), so
            that ``tf * th * tw`` consecutive tokens form a compact cube; ``None`` for plain frame-major order.
        seed: random seed; the same arguments give the same tensors.
        dtype: floating dtype of the outputs.

    Returns:
        ``(q, k, v, target_len)`` with q, k, v of shape ``(batch, 2 * frames * height * width, heads, head_dim)``
        and ``target_len = frames * height * width``.

    Example:
        >>> q, k, v, n_t = video_qkv(2, 4, 4, heads=2, head_dim=8)
        >>> q.shape, n_t
        (torch.Size([1, 64, 2, 8]), 32)
    """
    for name, value, low in (
        ("frames", frames, 1), ("height", height, 1), ("width", width, 1), ("heads", heads, 1),
        ("head_dim", head_dim, 2), ("batch", batch, 1),
    ):  # fmt: skip
        check_int(name, value, low)
    if head_dim % 2:
        raise ValueError(f"head_dim must be even (rotary pairs), got {head_dim}")
    if isinstance(temperature, bool) or not isinstance(temperature, int | float) or not temperature > 0:
        raise ValueError(f"temperature must be a positive number, got {temperature!r}")
    if not isinstance(context_noise, int | float) or context_noise < 0:
        raise ValueError(f"context_noise must be a non-negative number, got {context_noise!r}")
    if not isinstance(context_gain, int | float) or not 0 < context_gain <= 1:
        raise ValueError(f"context_gain must be in (0, 1], got {context_gain!r}")
    if tile is not None and (
        not isinstance(tile, tuple)
        or len(tile) != 3
        or any(isinstance(t, bool) or not isinstance(t, int) or t < 1 for t in tile)
    ):
        raise ValueError(f"tile must be None or a tuple of three positive integers, got {tile!r}")
    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        raise TypeError(f"dtype must be a floating torch.dtype, got {dtype!r}")
    g = torch.Generator().manual_seed(seed)
    grid = _tile_order(frames, height, width, tile).to(torch.float64)
    samples = [_sample(grid, heads, head_dim, temperature, context_noise, context_gain, g) for _ in range(batch)]
    q, k, v = (torch.stack(parts).to(dtype) for parts in zip(*samples, strict=True))
    return q, k, v, grid.shape[0]
