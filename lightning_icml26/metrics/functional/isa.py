"""Functional relative L2 error and cosine of an approximate attention output against dense attention."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

__all__ = ["attention_approx_error"]


def _check_heads(heads: Sequence[int] | None, num_heads: int | None = None) -> tuple[int, ...] | None:
    if heads is None:
        return None
    if isinstance(heads, str | bytes) or not isinstance(heads, Sequence) or len(heads) == 0:
        raise ValueError(f"heads must be None or a non-empty sequence of head indices, got {heads!r}")
    out = []
    for h in heads:
        if isinstance(h, bool) or not isinstance(h, int) or h < 0 or (num_heads is not None and h >= num_heads):
            limit = f" below {num_heads}" if num_heads is not None else ""
            raise ValueError(f"heads must hold non-negative integers{limit}, got {heads!r}")
        out.append(h)
    return tuple(out)


def _attention_approx_update(
    preds: Tensor, target: Tensor, heads: Sequence[int] | None
) -> tuple[Tensor, Tensor, Tensor]:
    for name, t in (("preds", preds), ("target", target)):
        if not isinstance(t, Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
        if t.ndim != 4 or not t.is_floating_point():
            raise ValueError(f"{name} must be a float tensor (batch, seq, heads, head_dim), got {tuple(t.shape)}")
        if not bool(torch.isfinite(t).all()):
            raise ValueError(f"{name} holds {int((~torch.isfinite(t)).sum())} non-finite value(s) (nan or inf)")
    if preds.shape != target.shape:
        raise ValueError(
            f"preds and target must have the same shape, got {tuple(preds.shape)} and {tuple(target.shape)}"
        )
    picked = _check_heads(heads, preds.shape[2])
    p, t = preds.detach().to(torch.float64), target.detach().to(torch.float64)
    if picked is not None:
        p, t = p[:, :, list(picked)], t[:, :, list(picked)]
    p, t = p.transpose(1, 2).flatten(2), t.transpose(1, 2).flatten(2)  # (B, H', S*D)
    t_norm, p_norm = t.norm(dim=-1), p.norm(dim=-1)
    rel = (p - t).norm(dim=-1) / t_norm.clamp_min(torch.finfo(torch.float64).tiny)
    cos = (p * t).sum(-1) / (p_norm * t_norm).clamp_min(torch.finfo(torch.float64).tiny)
    return rel.sum(), cos.sum(), torch.tensor(rel.numel(), dtype=torch.long, device=rel.device)


def _attention_approx_compute(rel_sum: Tensor, cos_sum: Tensor, count: Tensor) -> dict[str, Tensor]:
    if int(count) == 0:
        raise ValueError("no attention outputs were seen: call update before compute")
    return {"rel_l2": rel_sum / count, "cosine": cos_sum / count}


def attention_approx_error(preds: Tensor, target: Tensor, heads: Sequence[int] | None = None) -> dict[str, Tensor]:
    """Mean relative L2 error and cosine similarity per (sample, head) of ``preds`` against ``target``.

    For every sample and head the ``(seq, head_dim)`` output is flattened; the relative error is
    ``||preds - target|| / ||target||`` and the cosine ``<preds, target> / (||preds|| ||target||)``. Both are
    averaged over samples and the chosen heads (float64).

    Args:
        preds: approximate attention output ``(batch, seq, heads, head_dim)``.
        target: dense attention output, same shape.
        heads: head indices to score (``None``: all heads).

    Returns:
        ``{"rel_l2": ..., "cosine": ...}`` float64 scalars.

    Example:
        >>> t = torch.ones(1, 4, 2, 3)
        >>> {k: float(v) for k, v in attention_approx_error(2 * t, t).items()}
        {'rel_l2': 1.0, 'cosine': 1.0}
    """
    return _attention_approx_compute(*_attention_approx_update(preds, target, heads))
