"""DeepSpeed-Ulysses attention: one all-to-all of all heads in, local attention, one all-to-all back."""

from __future__ import annotations

from typing import Any

import torch

from lightning_icml26.distributed import all_to_all_head_to_seq, all_to_all_seq_to_head
from lightning_icml26.ops.attention.context_parallel._kernels import kv_replication, local_attention, prepare

__all__ = ["ulysses_attention"]


def ulysses_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    *,
    cp: Any = None,
    causal: bool = True,
    scale: float | None = None,
    layout: str = "contiguous",
) -> torch.Tensor:
    """Ulysses context-parallel attention (all heads exchanged at once).

    Each rank sends its sequence shard of every head and receives the full sequence of ``H/P`` query heads
    and ``G/P`` KV heads, runs flash attention (which saves q, k, v, output and log-sum-exp for backward, as
    FlashAttention does) and sends the output back. When ``G`` is not divisible by ``P`` the KV heads are
    replicated first (as DeepSpeed does for uneven heads); their gradients are summed by autograd.

    Args:
        q: ``(batch, seq_local, H, head_dim)``; ``H`` divisible by the context-parallel size ``P``.
        k: ``(batch, seq_local, G, head_dim)``.
        v: same shape as ``k``.
        cp: a ``ContextParallelGroup``, ``ProcessGroup`` or ``None``.
        causal: causal mask over global positions.
        scale: softmax scale; default ``head_dim ** -0.5``.
        layout: sequence sharding layout of q/k/v and of the output.

    Returns:
        ``(batch, seq_local, H, head_dim)``.

    Example:
        >>> q = torch.randn(1, 4, 2, 8)
        >>> ulysses_attention(q, q, q).shape
        torch.Size([1, 4, 2, 8])
    """
    group, scale_ = prepare(q, k, v, cp, layout, scale)
    if group.size == 1:
        return local_attention(q, k, v, causal, scale_)
    if q.shape[2] % group.size:
        raise ValueError(f"query heads ({q.shape[2]}) must be divisible by the context-parallel size {group.size}")
    rep = kv_replication(q.shape[2], k.shape[2], group.size)
    if rep > 1:
        k, v = k.repeat_interleave(rep, dim=2), v.repeat_interleave(rep, dim=2)
    qh = all_to_all_seq_to_head(q, group, layout=layout)
    kh = all_to_all_seq_to_head(k, group, layout=layout)
    vh = all_to_all_seq_to_head(v, group, layout=layout)
    out = local_attention(qh, kh, vh, causal, scale_)
    return all_to_all_head_to_seq(out, group, layout=layout)
