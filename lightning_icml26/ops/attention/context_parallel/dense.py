"""Dense attention: the single-process reference (torch SDPA), also usable as an all-gather CP backend."""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F

from lightning_icml26.distributed import gather_sequence, shard_sequence
from lightning_icml26.ops.attention.context_parallel._kernels import prepare

__all__ = ["dense_attention"]


def dense_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    *,
    cp: Any = None,
    causal: bool = True,
    scale: float | None = None,
    layout: str = "contiguous",
) -> torch.Tensor:
    """Plain softmax attention with ``torch.nn.functional.scaled_dot_product_attention``.

    With a context-parallel group of size > 1, every rank all-gathers q, k and v (global order), attends over
    the full sequence and keeps its own shard of the output: exact, but with full-sequence memory per rank.

    Args:
        q: ``(batch, seq_local, H, head_dim)``.
        k: ``(batch, seq_local, G, head_dim)``, ``G`` divides ``H``; query head ``h`` uses KV head ``h // (H/G)``.
        v: same shape as ``k``.
        cp: a ``ContextParallelGroup``, ``ProcessGroup`` or ``None`` (single process).
        causal: mask keys after the query position (global positions).
        scale: softmax scale; default ``head_dim ** -0.5``.
        layout: how the sequence is sharded over ``cp`` (``"contiguous"`` or ``"headtail"``).

    Returns:
        ``(batch, seq_local, H, head_dim)``.

    Example:
        >>> q, k = torch.randn(1, 4, 2, 8), torch.randn(1, 4, 1, 8)
        >>> dense_attention(q, k, k).shape
        torch.Size([1, 4, 2, 8])
    """
    group, scale_ = prepare(q, k, v, cp, layout, scale)
    if group.size > 1:
        q, k, v = (gather_sequence(t, group, dim=1, layout=layout) for t in (q, k, v))
    out = F.scaled_dot_product_attention(
        q.transpose(1, 2),
        k.transpose(1, 2),
        v.transpose(1, 2),
        is_causal=causal,
        scale=scale_,
        enable_gqa=k.shape[2] != q.shape[2],
    ).transpose(1, 2)
    if group.size > 1:
        out = shard_sequence(out, group, dim=1, layout=layout)
    return out
