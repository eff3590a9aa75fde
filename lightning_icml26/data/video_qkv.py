"""Seeded video-like attention inputs for in-context editing: ``[target ‖ context]`` q, k, v on an (f, h, w) grid.

Tokens sit on a ``frames x height x width`` grid (flattened frame-major, as a video DiT patchifies). Each head has
a smooth latent field, a sum of low-frequency random cosines over the grid, projected to q, k and v, so
neighbouring tokens are similar (what makes block means representative). Queries carry a smooth positive gain
that varies over the clip, so some regions attend more sharply than others. Queries and keys are then rotated by
a 3-axis rotary embedding of their (f, h, w) position.

The context clip (the reference an editor looks at) is a noisy, redundant copy of the target field: the same
latent field plus noise, its keys shrunk by ``context_gain`` (< 1), so it receives less attention than the
target by construction. Context positions follow the target's in time (frames ``frames .. 2 frames - 1``).
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

__all__ = ["video_qkv"]


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


def _check_int(name: str, value: object, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
    return value


def video_qkv(
    frames: int,
    height: int,
    width: int,
    *,
    heads: int = 4,
    head_dim: int = 64,
    batch: int = 1,
    modes: int = 12,
    temperature: float = 2.0,
    context_noise: float = 0.5,
    context_gain: float = 0.6,
    rotary_base: float = 100.0,
    rotary_step: float = 0.2,
    gain_spread: float = 1.0,
    cycles_per_token: float = 0.03,
    tile: tuple[int, int, int] | None = (4, 4, 4),
    context_offset: int = 0,
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
        modes: random cosine modes of the latent field.
        temperature: overall logit scale (larger: sharper attention).
        context_noise: standard deviation of the noise added to the context field (relative to the field's).
        context_gain: factor on the context keys, in ``(0, 1]`` (smaller: less salient context).
        rotary_base: base of the rotary frequencies (small: positions matter over short distances).
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
        ("head_dim", head_dim, 2), ("batch", batch, 1), ("modes", modes, 1),
    ):  # fmt: skip
        _check_int(name, value, low)
    if head_dim % 2:
        raise ValueError(f"head_dim must be even (rotary pairs), got {head_dim}")
    for name, val in (("temperature", temperature), ("rotary_base", rotary_base)):
        if not isinstance(val, int | float) or not val > 0:
            raise ValueError(f"{name} must be a positive number, got {val!r}")
    if not isinstance(context_noise, int | float) or context_noise < 0:
        raise ValueError(f"context_noise must be a non-negative number, got {context_noise!r}")
    if not isinstance(context_gain, int | float) or not 0 < context_gain <= 1:
        raise ValueError(f"context_gain must be in (0, 1], got {context_gain!r}")
    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        raise TypeError(f"dtype must be a floating torch.dtype, got {dtype!r}")
    g = torch.Generator().manual_seed(seed)
    f_, h_, w_ = torch.meshgrid(torch.arange(frames), torch.arange(height), torch.arange(width), indexing="ij")
    grid = torch.stack([f_, h_, w_], dim=-1).reshape(-1, 3)
    if tile is not None:  # tokens ordered tile by tile, so that a block of consecutive tokens is a compact cube
        t = torch.tensor(tile)
        outer, inner = grid // t, grid % t
        n_outer = -(-torch.tensor([frames, height, width]) // t)
        key = ((outer[:, 0] * n_outer[1] + outer[:, 1]) * n_outer[2] + outer[:, 2]) * int(t.prod())
        key = key + (inner[:, 0] * t[1] + inner[:, 1]) * t[2] + inner[:, 2]
        grid = grid[key.argsort()]
    grid = grid.to(torch.float64)
    n = grid.shape[0]
    pos_c = grid + torch.tensor([context_offset, 0.0, 0.0], dtype=torch.float64)
    qs, ks, vs = [], [], []
    for _ in range(batch):
        omega = cycles_per_token * (2 * torch.rand(heads, modes, 3, generator=g, dtype=torch.float64) - 1)
        phase = 2 * math.pi * torch.rand(heads, modes, generator=g, dtype=torch.float64)
        field = torch.cos(2 * math.pi * torch.einsum("nc,hmc->nhm", grid, omega) + phase) / math.sqrt(modes)
        noise = torch.randn(n, heads, modes, generator=g, dtype=torch.float64) * context_noise / math.sqrt(modes)
        proj = torch.randn(3, heads, modes, head_dim, generator=g, dtype=torch.float64)
        proj[1] = proj[0] + 0.5 * proj[1]  # keys resemble queries: similar fields score high
        gain_w = torch.randn(heads, modes, generator=g, dtype=torch.float64)
        gain = torch.exp(gain_spread * (field * gain_w).sum(-1, keepdim=True))  # (N, H, 1), smooth and positive
        scale = math.sqrt(temperature) * head_dim**-0.25  # q.k / sqrt(D) of order temperature

        def project(latent: Tensor, which: int) -> Tensor:
            return torch.einsum("nhm,hmd->nhd", latent, proj[which])

        q_t = _rotary(scale * gain * project(field, 0), rotary_step * grid, rotary_base)
        k_t = _rotary(scale * project(field, 1), rotary_step * grid, rotary_base)
        v_t = project(field, 2)
        ctx = field + noise
        q_c = _rotary(scale * gain * project(ctx, 0), rotary_step * pos_c, rotary_base)
        k_c = _rotary(context_gain * scale * project(ctx, 1), rotary_step * pos_c, rotary_base)
        v_c = project(ctx, 2)
        qs.append(torch.cat([q_t, q_c]))
        ks.append(torch.cat([k_t, k_c]))
        vs.append(torch.cat([v_t, v_c]))
    q, k, v = (torch.stack(t).to(dtype) for t in (qs, ks, vs))
    return q, k, v, n
