"""Ring attention: K/V blocks travel around the ring; partial results merge with an online softmax.

Runs on CPU (gloo point-to-point) with the CPU flash kernels. With the ``"headtail"`` layout every rank holds
two chunks (``r`` and ``2P-1-r``) and the causal work is balanced (zigzag ring attention); with
``"contiguous"`` it is plain ring attention.
"""

from __future__ import annotations

from typing import Any

import torch

from lightning_icml26.distributed import ContextParallelGroup, ring_shift
from lightning_icml26.ops.attention.context_parallel._kernels import (
    acc_dtype,
    attention_backward,
    attention_forward,
    prepare,
)

__all__ = ["ring_attention"]


def _chunk_ids(rank: int, size: int, layout: str) -> list[int]:
    """Global chunk indices held by ``rank`` (chunks of equal length)."""
    if layout == "contiguous":
        return [rank]
    return [rank, 2 * size - 1 - rank]


def _block_mode(q_id: int, k_id: int, causal: bool) -> str | None:
    """``"full"``, ``"causal"`` (diagonal block) or ``None`` (fully masked) for a pair of chunks."""
    if not causal:
        return "full"
    if k_id < q_id:
        return "full"
    if k_id == q_id:
        return "causal"
    return None


def _merge(out_acc: torch.Tensor, lse_acc: torch.Tensor, out: torch.Tensor, lse: torch.Tensor) -> None:
    """In-place online-softmax merge of a block result into the fp32 accumulators (B, H, s, D) / (B, H, s)."""
    new_lse = torch.logaddexp(lse_acc, lse)
    out_acc.mul_(torch.exp(lse_acc - new_lse).unsqueeze(-1))
    out_acc.add_(out.to(out_acc.dtype) * torch.exp(lse - new_lse).unsqueeze(-1))
    lse_acc.copy_(new_lse)


class _RingAttention(torch.autograd.Function):
    @staticmethod
    def forward(
        ctx: Any,
        q: torch.Tensor,
        k: torch.Tensor,
        v: torch.Tensor,
        cp: ContextParallelGroup,
        causal: bool,
        scale: float,
        layout: str,
    ) -> torch.Tensor:
        p, rank = cp.size, cp.rank
        qt = q.transpose(1, 2)  # (B, H, s, D)
        n = 1 if layout == "contiguous" else 2
        c = q.shape[1] // n
        acc = acc_dtype(q.dtype)
        out_acc = torch.zeros(qt.shape, dtype=acc, device=q.device)
        lse_acc = torch.full(qt.shape[:3], float("-inf"), dtype=acc, device=q.device)
        kv = torch.stack([k, v])  # (2, B, s, G, D)
        q_ids = _chunk_ids(rank, p, layout)
        for step in range(p):
            src = (rank - step) % p
            for qi, q_id in enumerate(q_ids):
                for ki, k_id in enumerate(_chunk_ids(src, p, layout)):
                    mode = _block_mode(q_id, k_id, causal)
                    if mode is None:
                        continue
                    kb = kv[0, :, ki * c : (ki + 1) * c].transpose(1, 2)
                    vb = kv[1, :, ki * c : (ki + 1) * c].transpose(1, 2)
                    o, lse = attention_forward(qt[:, :, qi * c : (qi + 1) * c], kb, vb, mode == "causal", scale)
                    _merge(out_acc[:, :, qi * c : (qi + 1) * c], lse_acc[:, :, qi * c : (qi + 1) * c], o, lse)
                    del o, lse
            if step < p - 1:
                kv = ring_shift(kv, cp)
        del kv
        out = out_acc.to(q.dtype).transpose(1, 2)
        del out_acc
        ctx.save_for_backward(q, k, v, out, lse_acc)
        ctx.cp, ctx.causal, ctx.scale, ctx.layout = cp, causal, scale, layout
        return out

    @staticmethod
    def backward(ctx: Any, dout: torch.Tensor) -> Any:
        q, k, v, out, lse = ctx.saved_tensors
        cp, causal, scale, layout = ctx.cp, ctx.causal, ctx.scale, ctx.layout
        p, rank = cp.size, cp.rank
        n = 1 if layout == "contiguous" else 2
        c = q.shape[1] // n
        qt, ot, dot = q.transpose(1, 2), out.transpose(1, 2), dout.transpose(1, 2)
        acc = acc_dtype(q.dtype)
        dq = torch.zeros(qt.shape, dtype=acc, device=q.device)
        kv = torch.stack([k, v])
        dkv = torch.zeros(kv.shape, dtype=acc, device=q.device)  # travels with kv
        q_ids = _chunk_ids(rank, p, layout)
        for step in range(p):
            src = (rank - step) % p
            for qi, q_id in enumerate(q_ids):
                qs = slice(qi * c, (qi + 1) * c)
                for ki, k_id in enumerate(_chunk_ids(src, p, layout)):
                    mode = _block_mode(q_id, k_id, causal)
                    if mode is None:
                        continue
                    ks = slice(ki * c, (ki + 1) * c)
                    dqb, dkb, dvb = attention_backward(
                        dot[:, :, qs],
                        qt[:, :, qs],
                        kv[0, :, ks].transpose(1, 2),
                        kv[1, :, ks].transpose(1, 2),
                        ot[:, :, qs],
                        lse[:, :, qs],
                        mode == "causal",
                        scale,
                    )
                    dq[:, :, qs] += dqb
                    dkv[0, :, ks] += dkb.transpose(1, 2)
                    dkv[1, :, ks] += dvb.transpose(1, 2)
                    del dqb, dkb, dvb
            if step < p - 1:
                kv = ring_shift(kv, cp)
                dkv = ring_shift(dkv, cp)
        del kv
        if p > 1:
            dkv = ring_shift(dkv, cp)  # the block held after the loop is rank + 1's: one more hop home
        dq_ = dq.to(q.dtype).transpose(1, 2)
        return dq_, dkv[0].to(k.dtype), dkv[1].to(v.dtype), None, None, None, None


def ring_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    *,
    cp: Any = None,
    causal: bool = True,
    scale: float | None = None,
    layout: str = "contiguous",
) -> torch.Tensor:
    """Ring attention over the context-parallel group (exact; online-softmax merge in fp32).

    The local queries stay put; the local K/V block is passed around the ring ``P - 1`` times and each
    visiting block's attention is merged into fp32 accumulators by its log-sum-exp. Blocks that a causal
    mask hides entirely are skipped; with ``layout="headtail"`` every rank skips the same amount. The backward
    pass sends K/V around again together with their gradient accumulators, which take one extra hop home.
    Saves q, k, v, output and the fp32 log-sum-exp.

    Args:
        q: ``(batch, seq_local, H, head_dim)``.
        k: ``(batch, seq_local, G, head_dim)`` (GQA handled by the kernel; KV is sent with G heads).
        v: same shape as ``k``.
        cp: a ``ContextParallelGroup``, ``ProcessGroup`` or ``None``.
        causal: causal mask over global positions.
        scale: softmax scale; default ``head_dim ** -0.5``.
        layout: ``"contiguous"`` or ``"headtail"`` (zigzag, load-balanced).

    Returns:
        ``(batch, seq_local, H, head_dim)``.

    Example:
        >>> q = torch.randn(1, 4, 2, 8)
        >>> ring_attention(q, q, q, layout="headtail").shape
        torch.Size([1, 4, 2, 8])
    """
    group, scale_ = prepare(q, k, v, cp, layout, scale)
    return _RingAttention.apply(q, k, v, group, causal, scale_, layout)
