"""UPipe ("Untied Ulysses"): Ulysses attention processed in stages of a few heads, recomputed in backward.

Two entry points share one stage schedule:

* :func:`~lightning_icml26.ops.attention.context_parallel.upipe_fused.upipe_attention` is the paper's fused operator: it
  takes the layer input and the q/k/v projection weights, so full-head q/k/v never exist (module
  :mod:`lightning_icml26.ops.attention.context_parallel.upipe_fused`).
* :func:`upipe_qkv_attention` is the same head-chunked loop on pre-projected q/k/v (for models whose
  projections live outside the attention op, e.g. HF transformers); it saves q, k, v, out and the per-stage
  log-sum-exp, so it keeps the transient savings but not the saved-activation savings.

GQA scheduling keeps the standard pairing (query head ``h`` uses KV head ``h // (H/G)``): a stage takes
``U_kv`` KV heads and ``t = U / U_kv`` query heads of each, and the ``g / t`` stages that share those KV heads
run back to back, so each KV head is projected and exchanged once. The paper's code instead relabels query
heads (head ``s*P + r`` pairs with KV head ``(s // g)*P + r``); keeping the standard pairing makes the weights
interchangeable with dense attention and pretrained checkpoints, at no cost in communication.

Deviation: within a stage the attention is local flash attention (ring degree 1), not the hybrid
ulysses x ring of the paper's multi-node runs.
"""

from __future__ import annotations

from typing import Any

import torch

from lightning_icml26.distributed import ContextParallelGroup
from lightning_icml26.distributed.collectives import _a2a, _head_to_seq_into, _seq_to_head_recv, _seq_to_head_send
from lightning_icml26.ops.attention.context_parallel._kernels import (
    acc_dtype,
    attention_backward,
    attention_forward,
    kv_replication,
    prepare,
)

__all__ = ["upipe_qkv_attention", "upipe_schedule"]

Stage = tuple[list[int], list[int] | None]


def upipe_schedule(num_heads: int, num_kv_heads: int, stage_heads: int, cp_size: int) -> list[Stage]:
    """The UPipe stage plan: per stage the query heads and (when a new KV group starts) the KV heads.

    Heads are listed rank-major: after the all-to-all, rank ``r`` holds the ``r``-th ``1/P`` of each list, and
    its local query head ``a`` uses its local KV head ``a // t``.

    Args:
        num_heads: query heads ``H``.
        num_kv_heads: KV heads ``G`` (divides ``H``).
        stage_heads: query heads per stage ``U`` (divides ``H``, divisible by ``P``).
        cp_size: context-parallel size ``P``.

    Returns:
        A list of ``(query_heads, kv_heads_or_None)``; ``None`` means "reuse the previous stage's KV".

    Example:
        >>> upipe_schedule(4, 2, 2, 2)
        [([0, 2], [0, 1]), ([1, 3], None)]
    """
    h, g_kv, u, p = num_heads, num_kv_heads, stage_heads, cp_size
    for name, val in (("num_heads", h), ("num_kv_heads", g_kv), ("stage_heads", u), ("cp_size", p)):
        if not isinstance(val, int) or isinstance(val, bool) or val < 1:
            raise ValueError(f"{name}={val!r} must be a positive integer")
    if h % g_kv:
        raise ValueError(f"num_kv_heads={g_kv} must divide num_heads={h}")
    if h % u:
        raise ValueError(f"stage_heads={u} must divide num_heads={h}")
    if u % p:
        raise ValueError(f"stage_heads={u} must be divisible by the context-parallel size {p}")
    ratio = h // g_kv
    for t in (d for d in range(1, ratio + 1) if ratio % d == 0):
        if u % t:
            continue
        u_kv = u // t
        if g_kv % u_kv == 0 and u_kv % p == 0:
            break
    else:
        raise ValueError(
            f"no stage plan for num_heads={h}, num_kv_heads={g_kv}, stage_heads={u}, cp_size={p}: each stage "
            "needs a number of KV heads that divides num_kv_heads and is divisible by cp_size"
        )
    stages: list[Stage] = []
    for grp in range(g_kv // u_kv):
        kv = [grp * u_kv + i for i in range(u_kv)]
        for j in range(ratio // t):
            qh = [(grp * u_kv + i) * ratio + j * t + m for i in range(u_kv) for m in range(t)]
            stages.append((qh, kv if j == 0 else None))
    return stages


def _idx(heads: list[int], device: torch.device) -> torch.Tensor:
    return torch.tensor(heads, dtype=torch.long, device=device)


def _select_heads(t: torch.Tensor, heads: torch.Tensor, cp: ContextParallelGroup, layout: str) -> torch.Tensor:
    """``t``'s ``heads`` (sequence layout ``(B, S/P, H, D)``) exchanged to head layout; the selection is not kept."""
    if cp.size == 1:
        return t.index_select(2, heads)
    send = _seq_to_head_send(t.index_select(2, heads), cp.size)
    recv = _a2a(send, cp)
    del send
    return _seq_to_head_recv(recv, layout)


def _attend(qh: torch.Tensor, kh: torch.Tensor, vh: torch.Tensor, causal: bool, scale: float) -> Any:
    out, lse = attention_forward(qh.transpose(1, 2), kh.transpose(1, 2), vh.transpose(1, 2), causal, scale)
    return out.transpose(1, 2), lse


def _attend_backward(
    doh: torch.Tensor,
    qh: torch.Tensor,
    kh: torch.Tensor,
    vh: torch.Tensor,
    oh: torch.Tensor,
    lse: torch.Tensor,
    causal: bool,
    scale: float,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    dq, dk, dv = attention_backward(
        doh.transpose(1, 2),
        qh.transpose(1, 2),
        kh.transpose(1, 2),
        vh.transpose(1, 2),
        oh.transpose(1, 2),
        lse,
        causal,
        scale,
    )
    return dq.transpose(1, 2), dk.transpose(1, 2), dv.transpose(1, 2)


class _UPipeQKV(torch.autograd.Function):
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
        stages: list[Stage],
    ) -> torch.Tensor:
        out = torch.empty_like(q)
        lses = []
        kh = vh = None
        for q_heads, kv_heads in stages:
            if kv_heads is not None:
                kv_idx = _idx(kv_heads, q.device)
                kh = vh = None
                kh = _select_heads(k, kv_idx, cp, layout)
                vh = _select_heads(v, kv_idx, cp, layout)
            q_idx = _idx(q_heads, q.device)
            qh = _select_heads(q, q_idx, cp, layout)
            oh, lse = _attend(qh, kh, vh, causal, scale)  # type: ignore[arg-type]
            del qh
            _head_to_seq_into(out, q_idx, oh.contiguous(), cp, layout)
            del oh
            lses.append(lse)
        del kh, vh
        ctx.save_for_backward(q, k, v, out, *lses)
        ctx.cp, ctx.causal, ctx.scale, ctx.layout, ctx.stages = cp, causal, scale, layout, stages
        return out

    @staticmethod
    def backward(ctx: Any, dout: torch.Tensor) -> Any:
        q, k, v, out, *lses = ctx.saved_tensors
        cp, causal, scale, layout = ctx.cp, ctx.causal, ctx.scale, ctx.layout
        dout = dout.contiguous()
        dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
        kh = vh = dkh = dvh = kv_idx = None
        for (q_heads, kv_heads), lse in zip(ctx.stages, lses, strict=True):
            if kv_heads is not None:
                _flush_kv(dk, dv, kv_idx, dkh, dvh, cp, layout)
                kh = vh = dkh = dvh = None
                kv_idx = _idx(kv_heads, q.device)
                kh = _select_heads(k, kv_idx, cp, layout)
                vh = _select_heads(v, kv_idx, cp, layout)
                dkh = torch.zeros(kh.shape, dtype=acc_dtype(q.dtype), device=q.device)
                dvh = torch.zeros(vh.shape, dtype=acc_dtype(q.dtype), device=q.device)
            q_idx = _idx(q_heads, q.device)
            qh = _select_heads(q, q_idx, cp, layout)
            oh = _select_heads(out, q_idx, cp, layout)
            doh = _select_heads(dout, q_idx, cp, layout)
            dqh, dkh_s, dvh_s = _attend_backward(doh, qh, kh, vh, oh, lse, causal, scale)  # type: ignore[arg-type]
            del qh, oh, doh
            dkh.add_(dkh_s)  # type: ignore[union-attr]
            dvh.add_(dvh_s)  # type: ignore[union-attr]
            del dkh_s, dvh_s
            _head_to_seq_into(dq, q_idx, dqh.contiguous(), cp, layout)
            del dqh
        _flush_kv(dk, dv, kv_idx, dkh, dvh, cp, layout)
        return dq, dk, dv, None, None, None, None, None


def _flush_kv(
    dk: torch.Tensor,
    dv: torch.Tensor,
    kv_idx: torch.Tensor | None,
    dkh: torch.Tensor | None,
    dvh: torch.Tensor | None,
    cp: ContextParallelGroup,
    layout: str,
) -> None:
    if kv_idx is None or dkh is None or dvh is None:
        return
    _head_to_seq_into(dk, kv_idx, dkh.to(dk.dtype), cp, layout)
    _head_to_seq_into(dv, kv_idx, dvh.to(dv.dtype), cp, layout)


def _stage_plan(
    num_heads: int, num_kv_heads: int, stage_heads: int | None, cp: ContextParallelGroup
) -> tuple[int, list[Stage]]:
    """Replication factor of the KV heads and the stage plan for the replicated head counts."""
    if stage_heads is None:
        stage_heads = cp.size
    if not isinstance(stage_heads, int) or isinstance(stage_heads, bool) or stage_heads < 1:
        raise ValueError(f"stage_heads={stage_heads!r} must be a positive integer or None")
    if num_heads % cp.size:
        raise ValueError(f"query heads ({num_heads}) must be divisible by the context-parallel size {cp.size}")
    rep = kv_replication(num_heads, num_kv_heads, cp.size)
    return rep, upipe_schedule(num_heads, num_kv_heads * rep, stage_heads, cp.size)


def upipe_qkv_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    *,
    cp: Any = None,
    causal: bool = True,
    scale: float | None = None,
    layout: str = "contiguous",
    stage_heads: int | None = None,
) -> torch.Tensor:
    """Head-chunked (UPipe-staged) Ulysses attention on pre-projected q/k/v.

    Same signature as :func:`~lightning_icml26.ops.attention.ulysses_attention` plus ``stage_heads``. Only one
    stage's exchanged q/k/v/output (``U/P`` query heads of the full sequence per rank) is alive at a time;
    backward re-exchanges each stage. KV heads shared by several stages are exchanged once per group, and
    their gradients are accumulated over the group in fp32 before going back.

    Args:
        q: ``(batch, seq_local, H, head_dim)``.
        k: ``(batch, seq_local, G, head_dim)``.
        v: same shape as ``k``.
        cp: a ``ContextParallelGroup``, ``ProcessGroup`` or ``None``.
        causal: causal mask over global positions.
        scale: softmax scale; default ``head_dim ** -0.5``.
        layout: sequence sharding layout.
        stage_heads: query heads per stage ``U`` (default: the context-parallel size); divides ``H`` and is
            divisible by ``P``.

    Returns:
        ``(batch, seq_local, H, head_dim)``.

    Example:
        >>> q, k = torch.randn(1, 4, 4, 8), torch.randn(1, 4, 2, 8)
        >>> upipe_qkv_attention(q, k, k, stage_heads=2).shape
        torch.Size([1, 4, 4, 8])
    """
    group, scale_ = prepare(q, k, v, cp, layout, scale)
    rep, stages = _stage_plan(q.shape[2], k.shape[2], stage_heads, group)
    if rep > 1:
        k, v = k.repeat_interleave(rep, dim=2), v.repeat_interleave(rep, dim=2)
    return _UPipeQKV.apply(q.contiguous(), k.contiguous(), v.contiguous(), group, causal, scale_, layout, stages)
