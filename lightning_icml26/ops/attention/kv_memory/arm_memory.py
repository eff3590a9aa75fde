"""Building blocks of ARM (experimental): Gumbel slot routing, the gated slot write and the joint read.

Tensors are head-major here, ``(batch, heads, ..., head_dim)``; :mod:`lightning_icml26.ops.attention.kv_memory.arm`
wraps them into a module. Every piece is pure torch and runs the same in the parallel and the decode form.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import Tensor

__all__ = ["gate_from_old", "gumbel_select", "joint_read", "masked_softmax", "rank_desc", "slot_write", "write_gate"]


def gumbel_select(
    logits: Tensor,
    tau: float,
    training: bool,
    generator: torch.Generator | None = None,
    noise_scale: float = 1.0,
) -> Tensor:
    """One-hot choice along the last dim: straight-through Gumbel-Softmax in training, argmax otherwise.

    In training the forward value is ``torch.nn.functional.gumbel_softmax(logits, tau, hard=True)`` (a one-hot
    vector) and the gradient is that of the soft relaxation with the same Gumbel noise. With a ``generator``
    the noise is drawn from it (same maths, reproducible across a checkpoint resume).

    ``noise_scale`` (our addition, not from the paper) multiplies the Gumbel noise: the hard choice is
    ``argmax(logits + s g)`` and the relaxation ``softmax((logits + s g) / tau)``. ``s = 1`` is the standard
    Gumbel-Softmax; ``s = 0`` takes the argmax in training too while the relaxation still passes gradient.
    Unlike ``tau``, it changes how random the training-time choice is.

    Args:
        logits: ``(..., n)`` unnormalised scores.
        tau: Gumbel-Softmax temperature, > 0.
        training: sample with noise (True) or take the argmax (False).
        generator: optional source of the Gumbel noise.
        noise_scale: factor ``s >= 0`` on the Gumbel noise in training.

    Returns:
        A one-hot tensor shaped like ``logits``.

    Example:
        >>> z = gumbel_select(torch.tensor([[0.0, 3.0, 1.0]]), tau=1.0, training=False)
        >>> z.tolist()
        [[0.0, 1.0, 0.0]]
    """
    if training and generator is None and noise_scale == 1.0:
        return F.gumbel_softmax(logits, tau=tau, hard=True, dim=-1)
    if training:
        if noise_scale > 0:
            device = logits.device if generator is None else generator.device
            uniform = torch.rand(logits.shape, generator=generator, dtype=logits.dtype, device=device)
            noise = -torch.log(-torch.log(uniform.clamp_min(torch.finfo(logits.dtype).tiny))).to(logits.device)
            soft = torch.softmax((logits + noise_scale * noise) / tau, dim=-1)
        else:
            soft = torch.softmax(logits / tau, dim=-1)
        hard = F.one_hot(soft.argmax(-1), logits.shape[-1]).to(logits.dtype)
        return hard - soft.detach() + soft
    return F.one_hot(logits.argmax(-1), logits.shape[-1]).to(logits.dtype)


def masked_softmax(scores: Tensor, valid: Tensor) -> Tensor:
    """Softmax over the last dim restricted to ``valid`` entries; a row with no valid entry gives zeros.

    Example:
        >>> masked_softmax(torch.zeros(1, 2), torch.tensor([[True, False]])).tolist()
        [[1.0, 0.0]]
    """
    any_valid = valid.any(-1, keepdim=True)
    filled = scores.masked_fill(~valid, float("-inf")).masked_fill(~any_valid, 0.0)
    return torch.softmax(filled, dim=-1) * valid.to(scores.dtype)


def rank_desc(scores: Tensor) -> Tensor:
    """Rank of every entry along the last dim in decreasing order (0 for the largest; ties by index).

    Example:
        >>> rank_desc(torch.tensor([0.1, 0.9, 0.5])).tolist()
        [2, 0, 1]
    """
    order = torch.argsort(scores, dim=-1, descending=True, stable=True)
    return torch.argsort(order, dim=-1, stable=True)


def write_gate(mem_k: Tensor, k: Tensor, v: Tensor, z: Tensor, gate_w: Tensor, gate_b: Tensor) -> Tensor:
    """The write gate ``g = sigmoid(w_g · [k ; M_K[slot] ; v] + b_g)`` of one token per (batch, head).

    Args:
        mem_k: ``(B, H, M, d)`` slot keys before the write.
        k: ``(B, H, d)`` key to write.
        v: ``(B, H, d)`` value to write.
        z: ``(B, H, M)`` one-hot slot choice (it picks ``M_K[slot]``).
        gate_w: ``(H, 3 d)`` gate weights per head.
        gate_b: ``(H,)`` gate bias per head.

    Returns:
        ``(B, H)`` gates in (0, 1).

    Example:
        >>> g = write_gate(torch.zeros(1, 1, 2, 3), torch.ones(1, 1, 3), torch.ones(1, 1, 3),
        ...                torch.tensor([[[1.0, 0.0]]]), torch.zeros(1, 9), torch.zeros(1))
        >>> g.tolist()
        [[0.5]]
    """
    old_k = (z.unsqueeze(-1) * mem_k).sum(-2)
    return gate_from_old(k.unsqueeze(2), old_k.unsqueeze(2), v.unsqueeze(2), gate_w, gate_b)[:, :, 0]


def gate_from_old(k: Tensor, old_k: Tensor, v: Tensor, gate_w: Tensor, gate_b: Tensor) -> Tensor:
    """The write gate ``sigmoid(w_g · [k ; old_k ; v] + b_g)`` given the routed slots' keys ``old_k`` themselves.

    :func:`write_gate` picks ``old_k`` with the one-hot choice and calls this; a decode step that has gathered the
    routed row calls it directly and gets the same values, bit for bit.

    Args:
        k: ``(B, H, T, d)`` keys to write.
        old_k: ``(B, H, T, d)`` keys held by their routed slots before the write.
        v: ``(B, H, T, d)`` values to write.
        gate_w: ``(H, 3 d)`` gate weights per head.
        gate_b: ``(H,)`` gate bias per head.

    Returns:
        ``(B, H, T)`` gates in (0, 1).

    Example:
        >>> g = gate_from_old(torch.ones(1, 1, 1, 2), torch.zeros(1, 1, 1, 2), torch.ones(1, 1, 1, 2),
        ...                   torch.ones(1, 6), torch.zeros(1))
        >>> round(g.item(), 4)  # sigmoid(4)
        0.982
    """
    feats = torch.cat([k, old_k, v], dim=-1)
    return torch.sigmoid((feats * gate_w[:, None]).sum(-1) + gate_b[:, None])


def slot_write(
    mem_k: Tensor,
    mem_v: Tensor,
    occupied: Tensor,
    k: Tensor,
    v: Tensor,
    z: Tensor,
    gate_w: Tensor,
    gate_b: Tensor,
    active: Tensor | None = None,
) -> tuple[Tensor, Tensor, Tensor]:
    """Merge one token per (batch, head) into its routed slot through a sigmoid gate.

    ``g = sigmoid(w_g · [k ; M_K[slot] ; v] + b_g)``, then ``M[slot] <- (1 - g) M[slot] + g x`` for keys and
    values, written as ``(1 - g z) M + g z x`` (``torch.lerp(M, x, g z)``) with the (straight-through) one-hot
    ``z`` so that gradients reach the router; slots with ``z = 0`` are left bit-for-bit unchanged, and ``g = 1``
    overwrites exactly.

    Args:
        mem_k: ``(B, H, M, d)`` slot keys.
        mem_v: ``(B, H, M, d)`` slot values.
        occupied: ``(B, H, M)`` bool, slots written at least once.
        k: ``(B, H, d)`` key to write.
        v: ``(B, H, d)`` value to write.
        z: ``(B, H, M)`` one-hot slot choice.
        gate_w: ``(H, 3 d)`` gate weights per head.
        gate_b: ``(H,)`` gate bias per head.
        active: optional ``(B,)`` bool; rows where it is False are not written (no token to write yet).

    Returns:
        The new ``(mem_k, mem_v, occupied)``.

    Example:
        >>> mk, mv = torch.zeros(1, 1, 2, 3), torch.zeros(1, 1, 2, 3)
        >>> occ = torch.zeros(1, 1, 2, dtype=torch.bool)
        >>> z = torch.tensor([[[0.0, 1.0]]])
        >>> mk, mv, occ = slot_write(mk, mv, occ, torch.ones(1, 1, 3), torch.ones(1, 1, 3), z,
        ...                          torch.zeros(1, 9), torch.tensor([50.0]))
        >>> mk[0, 0, 1].tolist(), occ.tolist()
        ([1.0, 1.0, 1.0], [[[False, True]]])
    """
    g = write_gate(mem_k, k, v, z, gate_w, gate_b)
    w = z * g.unsqueeze(-1)
    hit = z > 0.5
    if active is not None:
        w = w * active.to(w.dtype).view(-1, 1, 1)
        hit = hit & active.view(-1, 1, 1)
    w = w.unsqueeze(-1)
    mem_k = torch.lerp(mem_k, k.unsqueeze(-2), w)  # (1 - w) M + w x, exactly M where w = 0 and x where w = 1
    mem_v = torch.lerp(mem_v, v.unsqueeze(-2), w)
    return mem_k, mem_v, occupied | hit


def joint_read(
    win_scores: Tensor,
    win_valid: Tensor,
    win_v: Tensor,
    mem_scores: Tensor,
    mem_valid: Tensor,
    read_values: Callable[[Tensor], Tensor],
) -> Tensor:
    """One softmax over the window keys and the chosen memory slots, then the weighted values.

    Args:
        win_scores: ``(B, H, T, L)`` scaled query-key scores over the window candidates.
        win_valid: ``(B, H, T, L)`` bool (or broadcastable), which window candidates are attended.
        win_v: ``(B, H, L, d)`` window values.
        mem_scores: ``(B, H, T, M)`` scaled scores over slots.
        mem_valid: ``(B, H, T, M)`` bool, occupied slots of the chosen clusters.
        read_values: maps the slot weights ``(B, H, T, M)`` to the weighted sum of slot values ``(B, H, T, d)``.

    Returns:
        ``(B, H, T, d)``; zeros for a query that attends nothing.

    Example:
        >>> s, ok = torch.zeros(1, 1, 1, 1), torch.ones(1, 1, 1, 1, dtype=torch.bool)
        >>> slots = 3 * torch.ones(1, 1, 1, 1, 2)
        >>> out = joint_read(s, ok, torch.ones(1, 1, 1, 2), s, ok, lambda p: (p.unsqueeze(-1) * slots).sum(-2))
        >>> out.tolist()
        [[[[2.0, 2.0]]]]
    """
    length = win_scores.shape[-1]
    valid = torch.cat([win_valid.expand_as(win_scores), mem_valid], dim=-1)
    probs = masked_softmax(torch.cat([win_scores, mem_scores], dim=-1), valid)
    return torch.matmul(probs[..., :length], win_v) + read_values(probs[..., length:])
