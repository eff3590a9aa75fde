"""Differentiable collectives for context parallelism, built on ``all_to_all_single`` and point-to-point ops.

All of them run on ``gloo`` (CPU) and ``nccl``. Each takes the group explicitly.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.distributed as dist

from lightning_icml26.distributed.group import ContextParallelGroup, as_context_parallel_group
from lightning_icml26.distributed.sharding import _check_seq_len, check_layout, shard_sequence

__all__ = ["all_to_all_head_to_seq", "all_to_all_seq_to_head", "gather_sequence", "ring_shift"]


def _a2a(send: torch.Tensor, cp: ContextParallelGroup) -> torch.Tensor:
    recv = torch.empty_like(send)
    dist.all_to_all_single(recv, send, group=cp.group)
    return recv


def _seq_to_head_send(x: torch.Tensor, p: int) -> torch.Tensor:
    """(B, S/P, H, D) -> the all-to-all send buffer (P, B, S/P, H/P, D): block j holds rank j's heads."""
    b, s, h, d = x.shape
    return x.reshape(b, s, p, h // p, d).permute(2, 0, 1, 3, 4).contiguous()


def _seq_to_head_recv(recv: torch.Tensor, layout: str) -> torch.Tensor:
    """The received (P, B, S/P, H/P, D) (block j: rank j's tokens) -> (B, S, H/P, D), sequence in global order."""
    p, b, s, hp, d = recv.shape
    if layout == "contiguous":
        return recv.permute(1, 0, 2, 3, 4).reshape(b, p * s, hp, d)
    c = s // 2
    chunks = recv.view(p, b, 2, c, hp, d)  # rank j holds global chunks j and 2P - 1 - j
    out = torch.empty(b, 2 * p, c, hp, d, dtype=recv.dtype, device=recv.device)
    out[:, :p] = chunks[:, :, 0].transpose(0, 1)
    for j in range(p):  # block by block: no flipped copy
        out[:, 2 * p - 1 - j] = chunks[j, :, 1]
    return out.view(b, 2 * p * c, hp, d)


def _seq_to_head(x: torch.Tensor, cp: ContextParallelGroup, layout: str) -> torch.Tensor:
    """(B, S/P, H, D) -> (B, S, H/P, D), sequence in global order. No autograd."""
    if cp.size == 1:
        return x
    send = _seq_to_head_send(x, cp.size)
    recv = _a2a(send, cp)
    del send
    return _seq_to_head_recv(recv, layout)


def _head_to_seq_send(y: torch.Tensor, p: int, layout: str) -> torch.Tensor:
    """(B, S, H/P, D), sequence in global order -> the send buffer (P, B, S/P, H/P, D): block j holds rank j's tokens.

    A view of ``y`` (no copy) for the contiguous layout when ``y`` is contiguous and ``B = 1``.
    """
    b, seq, h, d = y.shape
    s = seq // p
    if layout == "contiguous":
        return y.reshape(b, p, s, h, d).permute(1, 0, 2, 3, 4).contiguous()
    c = s // 2
    chunks = y.reshape(b, 2 * p, c, h, d).transpose(0, 1)  # global chunk k; rank j gets chunks j and 2P - 1 - j
    send = torch.empty(p, b, 2, c, h, d, dtype=y.dtype, device=y.device)
    send[:, :, 0] = chunks[:p]
    for j in range(p):  # block by block: no flipped copy
        send[j, :, 1] = chunks[2 * p - 1 - j]
    return send.view(p, b, s, h, d)


def _head_to_seq(y: torch.Tensor, cp: ContextParallelGroup, layout: str) -> torch.Tensor:
    """(B, S, H/P, D), sequence in global order -> (B, S/P, H, D). No autograd."""
    p = cp.size
    if p == 1:
        return y
    b, seq, h, d = y.shape
    send = _head_to_seq_send(y, p, layout)
    recv = _a2a(send, cp)  # (P, B, s, h, D): block j = my tokens of rank j's heads
    del send
    return recv.permute(1, 2, 0, 3, 4).reshape(b, seq // p, p * h, d)


def _head_to_seq_into(
    out: torch.Tensor, heads: torch.Tensor, y: torch.Tensor, cp: ContextParallelGroup, layout: str
) -> None:
    """``out.index_copy_(2, heads, _head_to_seq(y))`` without the reordered (B, S/P, H, D) copy of the result.

    ``heads`` lists the ``H`` head positions of ``out`` in the order of :func:`_head_to_seq`'s result (rank-major);
    each rank's received block is copied into its own positions.
    """
    p = cp.size
    if p == 1:
        out.index_copy_(2, heads, y)
        return
    h = y.shape[2]
    send = _head_to_seq_send(y, p, layout)
    recv = _a2a(send, cp)  # (P, B, s, h, D): block j = my tokens of rank j's heads
    del send
    for j in range(p):
        out.index_copy_(2, heads[j * h : (j + 1) * h], recv[j])


def _check_a2a_input(x: torch.Tensor, cp: ContextParallelGroup, layout: str, heads_dim_name: str, seq: int) -> None:
    check_layout(layout)
    if x.ndim != 4:
        raise ValueError(f"x must have shape (batch, seq, heads, head_dim), got shape {tuple(x.shape)}")
    if x.shape[2] % cp.size and heads_dim_name == "heads":
        raise ValueError(f"x.shape[2]={x.shape[2]} (heads) must be divisible by the context-parallel size {cp.size}")
    _check_seq_len(seq, cp.size, layout, name="global sequence length")


class _SeqToHead(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, cp: ContextParallelGroup, layout: str) -> torch.Tensor:
        ctx.cp, ctx.layout = cp, layout
        return _seq_to_head(x, cp, layout)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, None, None]:
        return _head_to_seq(grad.contiguous(), ctx.cp, ctx.layout), None, None


class _HeadToSeq(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, y: torch.Tensor, cp: ContextParallelGroup, layout: str) -> torch.Tensor:
        ctx.cp, ctx.layout = cp, layout
        return _head_to_seq(y, cp, layout)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, None, None]:
        return _seq_to_head(grad.contiguous(), ctx.cp, ctx.layout), None, None


def all_to_all_seq_to_head(x: torch.Tensor, cp: Any = None, *, layout: str = "contiguous") -> torch.Tensor:
    """Sequence-sharded to head-sharded: ``(B, S/P, H, D)`` -> ``(B, S, H/P, D)`` (differentiable).

    Rank ``r`` receives heads ``[r*H/P, (r+1)*H/P)`` of the whole sequence, with the tokens in global order
    whatever the ``layout`` the input was sharded with. The backward pass is :func:`all_to_all_head_to_seq`.

    Args:
        x: this rank's shard, ``(batch, seq_local, heads, head_dim)``; ``heads`` divisible by ``P``.
        cp: a ``ContextParallelGroup``, ``ProcessGroup`` or ``None`` (identity).
        layout: how the sequence was sharded (``"contiguous"`` or ``"headtail"``).

    Example:
        >>> x = torch.randn(1, 4, 2, 3)
        >>> bool((all_to_all_seq_to_head(x) == x).all())
        True
    """
    group = as_context_parallel_group(cp)
    _check_a2a_input(x, group, layout, "heads", x.shape[1] * group.size if x.ndim == 4 else 0)
    if group.size == 1:
        return x
    return _SeqToHead.apply(x.contiguous(), group, layout)


def all_to_all_head_to_seq(y: torch.Tensor, cp: Any = None, *, layout: str = "contiguous") -> torch.Tensor:
    """Head-sharded to sequence-sharded: ``(B, S, H/P, D)`` -> ``(B, S/P, H, D)`` (differentiable).

    The inverse of :func:`all_to_all_seq_to_head`: ``y`` holds the full sequence in global order for this rank's
    heads; the result holds this rank's tokens (in ``layout``) for all heads.

    Args:
        y: ``(batch, seq, heads_local, head_dim)``.
        cp: a ``ContextParallelGroup``, ``ProcessGroup`` or ``None`` (identity).
        layout: the sharding layout of the result.

    Example:
        >>> y = torch.randn(1, 4, 2, 3)
        >>> bool((all_to_all_head_to_seq(y) == y).all())
        True
    """
    group = as_context_parallel_group(cp)
    _check_a2a_input(y, group, layout, "seq", y.shape[1] if y.ndim == 4 else 0)
    if group.size == 1:
        return y
    return _HeadToSeq.apply(y.contiguous(), group, layout)


def _all_gather_seq(x: torch.Tensor, cp: ContextParallelGroup, dim: int, layout: str) -> torch.Tensor:
    parts = [torch.empty_like(x) for _ in range(cp.size)]
    dist.all_gather(parts, x.contiguous(), group=cp.group)
    if layout == "contiguous":
        return torch.cat(parts, dim=dim)
    halves = [part.chunk(2, dim=dim) for part in parts]
    return torch.cat([h[0] for h in halves] + [h[1] for h in reversed(halves)], dim=dim)


class _GatherSeq(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, cp: ContextParallelGroup, dim: int, layout: str) -> torch.Tensor:
        ctx.cp, ctx.dim, ctx.layout = cp, dim, layout
        return _all_gather_seq(x, cp, dim, layout)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, None, None, None]:
        grad = grad.contiguous().clone()
        dist.all_reduce(grad, group=ctx.cp.group)
        return shard_sequence(grad, ctx.cp, ctx.dim, ctx.layout).contiguous(), None, None, None


def gather_sequence(x: torch.Tensor, cp: Any = None, dim: int = 1, layout: str = "contiguous") -> torch.Tensor:
    """All-gather the sequence shards back into the full sequence, in global order (differentiable).

    The backward pass sums the incoming gradients over the ranks and returns this rank's shard, so a loss
    computed on the gathered tensor by every rank gives each shard the gradient of the sum of those losses.

    Args:
        x: this rank's shard (``dim`` is the local sequence).
        cp: a ``ContextParallelGroup``, ``ProcessGroup`` or ``None`` (identity).
        dim: the sequence dimension.
        layout: the layout ``x`` was sharded with.

    Example:
        >>> gather_sequence(torch.arange(4).view(1, 4)).tolist()
        [[0, 1, 2, 3]]
    """
    group = as_context_parallel_group(cp)
    check_layout(layout)
    if not -x.ndim <= dim < x.ndim:
        raise ValueError(f"dim={dim} is out of range for a tensor with {x.ndim} dimensions")
    dim = dim % x.ndim
    if layout == "headtail" and x.shape[dim] % 2:
        raise ValueError(f"x.shape[{dim}]={x.shape[dim]} must be even for the 'headtail' layout")
    if group.size == 1:
        return x
    return _GatherSeq.apply(x, group, dim, layout)


def ring_shift(x: torch.Tensor, cp: Any = None) -> torch.Tensor:
    """Send ``x`` to the next rank of the ring and return the tensor received from the previous one.

    Not differentiable (the ring attention backward drives its own shifts). With one rank, returns ``x``.

    Args:
        x: a tensor with the same shape and dtype on every rank.
        cp: a ``ContextParallelGroup``, ``ProcessGroup`` or ``None``.

    Example:
        >>> ring_shift(torch.ones(2)).tolist()
        [1.0, 1.0]
    """
    group = as_context_parallel_group(cp)
    if group.size == 1:
        return x
    x = x.contiguous()
    recv = torch.empty_like(x)
    nxt = group.global_rank((group.rank + 1) % group.size)
    prv = group.global_rank((group.rank - 1) % group.size)
    ops = [dist.P2POp(dist.isend, x, nxt, group.group), dist.P2POp(dist.irecv, recv, prv, group.group)]
    for req in dist.batch_isend_irecv(ops):
        req.wait()
    return recv
