"""A Llama-style decoder layer at a given shape on :class:`~lightning_icml26.ops.attention.UPipeAttention`.

:class:`DecoderLayer` is pre-norm attention and a SwiGLU MLP with residuals, the layer whose memory the UPipe
benchmarks account (:mod:`lightning_icml26.strategies.upipe_memory`); :class:`DecoderStack` holds such layers in
an ``nn.ModuleList`` (so :class:`~lightning_icml26.strategies.UPipeStrategy`'s activation checkpointing and MLP
tiling find them) and can run its forward under ``saved_tensors_hooks``. :class:`RowTiledRMSNorm` is RMSNorm
computed in tiles of rows, without the full-size fp32 temporaries of PyTorch's CPU / ``meta`` composite.
"""

from __future__ import annotations

from contextlib import nullcontext
from typing import Any

import torch
from torch import Tensor, nn

from lightning_icml26.ops.attention import UPipeAttention

__all__ = ["DecoderLayer", "DecoderStack", "RowTiledRMSNorm", "SwiGLU", "swiglu_width"]


def swiglu_width(hidden: int) -> int:
    """Llama's MLP width for ``hidden``: 3.5 x hidden rounded down to a multiple of 256 (at least 256).

    Raises:
        ValueError: if ``hidden < 1``.

    Example:
        >>> swiglu_width(4096), swiglu_width(64)
        (14336, 256)
    """
    if isinstance(hidden, bool) or not isinstance(hidden, int) or hidden < 1:
        raise ValueError(f"hidden={hidden!r} must be a positive integer")
    return int(3.5 * hidden) // 256 * 256 or 256


class SwiGLU(nn.Module):
    """Llama's MLP ``down(silu(gate(h)) * up(h))`` without biases.

    Args:
        hidden: model width.
        width: intermediate width (default :func:`swiglu_width`).

    Example:
        >>> SwiGLU(8, width=16)(torch.zeros(2, 3, 8)).shape
        torch.Size([2, 3, 8])
    """

    def __init__(self, hidden: int, width: int | None = None) -> None:
        super().__init__()
        width = swiglu_width(hidden) if width is None else width
        if isinstance(width, bool) or not isinstance(width, int) or width < 1:
            raise ValueError(f"width={width!r} must be a positive integer")
        self.gate = nn.Linear(hidden, width, bias=False)
        self.up = nn.Linear(hidden, width, bias=False)
        self.down = nn.Linear(width, hidden, bias=False)

    def forward(self, h: Tensor) -> Tensor:
        """``down(silu(gate(h)) * up(h))``."""
        return self.down(nn.functional.silu(self.gate(h)) * self.up(h))


class _RowTiledRMSNormFn(torch.autograd.Function):
    """RMSNorm over the last dimension in tiles of rows; saves the input, the weight and one ``rstd`` per row."""

    @staticmethod
    def forward(ctx: Any, x: Tensor, weight: Tensor, eps: float, rows: int) -> Tensor:  # type: ignore[override]
        acc = torch.promote_types(x.dtype, torch.float32)
        x2 = x.reshape(-1, x.shape[-1])
        out = torch.empty_like(x2)
        rstd = torch.empty(x2.shape[0], 1, dtype=acc, device=x.device)
        for s in range(0, x2.shape[0], rows):
            xt = x2[s : s + rows].to(acc)
            r = torch.rsqrt(xt.pow(2).mean(-1, keepdim=True) + eps)
            rstd[s : s + rows] = r
            out[s : s + rows] = (xt * r * weight.to(acc)).to(x.dtype)
        ctx.save_for_backward(x, weight, rstd)
        ctx.rows = rows
        return out.view_as(x)

    @staticmethod
    def backward(ctx: Any, dy: Tensor) -> tuple[Tensor | None, ...]:  # type: ignore[override]
        x, weight, rstd = ctx.saved_tensors
        rows = ctx.rows
        x2, dy2 = x.reshape(-1, x.shape[-1]), dy.reshape(-1, x.shape[-1])
        acc = rstd.dtype
        dx = torch.empty_like(x2)
        dw = torch.zeros(x.shape[-1], dtype=acc, device=x.device)
        for s in range(0, x2.shape[0], rows):
            n = x2[s : s + rows].to(acc) * rstd[s : s + rows]
            dyt = dy2[s : s + rows].to(acc)
            g = dyt * weight.to(acc)
            dx[s : s + rows] = (rstd[s : s + rows] * (g - n * (g * n).mean(-1, keepdim=True))).to(x.dtype)
            dw += (dyt * n).sum(0)
        return dx.view_as(x), dw.to(weight.dtype), None, None


class RowTiledRMSNorm(nn.RMSNorm):
    """``nn.RMSNorm`` (same parameters and results) computed in tiles of ``rows`` rows.

    PyTorch's CPU (and ``meta``) ``rms_norm`` is a composite of fp32 operators whose backward holds several
    full-size fp32 temporaries; CUDA runs a fused kernel without them. This module keeps only the input, the
    per-row ``rstd``, the output and ``dx`` at full size, like the fused kernel, so that bytes counted on meta
    tensors model the GPU path.

    Args:
        hidden: normalised width.
        rows: rows per tile.

    Example:
        >>> torch.manual_seed(0) and None
        >>> norm, ref = RowTiledRMSNorm(8, rows=3).double(), nn.RMSNorm(8).double()
        >>> x = torch.randn(2, 5, 8, dtype=torch.float64)
        >>> torch.allclose(norm(x), ref(x))
        True
    """

    def __init__(self, hidden: int, rows: int = 1024) -> None:
        super().__init__(hidden)
        if isinstance(rows, bool) or not isinstance(rows, int) or rows < 1:
            raise ValueError(f"rows={rows!r} must be a positive integer")
        self.rows = rows

    def forward(self, x: Tensor) -> Tensor:
        """The normalised ``x`` times the weight."""
        eps = self.eps if self.eps is not None else torch.finfo(x.dtype).eps
        out: Tensor = _RowTiledRMSNormFn.apply(x, self.weight, eps, self.rows)
        return out


class DecoderLayer(nn.Module):
    """A Llama decoder layer: ``x + attn(norm1(x))``, then ``+ mlp(norm2(.))`` with a SwiGLU ``mlp``.

    Args:
        hidden: model width.
        heads: query heads.
        kv_heads: KV heads.
        head_dim: per-head width.
        backend: the attention backend of :class:`~lightning_icml26.ops.attention.UPipeAttention`
            (``"dense"``, ``"ulysses"``, ``"ring"``, ``"upipe"``).
        cp: the context-parallel group (``None``: one rank).
        lean_norm: :class:`RowTiledRMSNorm` instead of ``nn.RMSNorm``.

    Example:
        >>> layer = DecoderLayer(hidden=16, heads=4, kv_heads=2, head_dim=4)
        >>> layer(torch.zeros(1, 5, 16)).shape
        torch.Size([1, 5, 16])
    """

    def __init__(
        self,
        hidden: int,
        heads: int,
        kv_heads: int,
        head_dim: int,
        backend: str = "dense",
        cp: Any = None,
        lean_norm: bool = False,
    ) -> None:
        super().__init__()
        norm = RowTiledRMSNorm if lean_norm else nn.RMSNorm
        self.norm1, self.norm2 = norm(hidden), norm(hidden)
        self.attn = UPipeAttention(hidden, heads, kv_heads, head_dim, backend=backend, cp=cp, layout="contiguous")
        self.mlp = SwiGLU(hidden)

    def forward(self, x: Tensor) -> Tensor:
        """The layer's output, the same shape as ``x``."""
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class DecoderStack(nn.Module):
    """Layers applied in turn, held in ``layers`` (an ``nn.ModuleList``), optionally under saved-tensor hooks.

    Args:
        layers: the layers.
        hooks: a factory of a ``saved_tensors_hooks`` context (e.g. ``OffloadByteModel().hooks``) that the
            forward runs under, or ``None``.

    Example:
        >>> stack = DecoderStack([nn.Linear(4, 4), nn.Linear(4, 4)])
        >>> stack(torch.zeros(2, 4)).shape
        torch.Size([2, 4])
    """

    def __init__(self, layers: list[nn.Module], hooks: Any = None) -> None:
        super().__init__()
        self.layers = nn.ModuleList(layers)
        self.hooks = hooks

    def forward(self, x: Tensor) -> Tensor:
        """``x`` through every layer."""
        with self.hooks() if self.hooks is not None else nullcontext():
            for layer in self.layers:
                x = layer(x)
        return x
