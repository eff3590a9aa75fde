"""Collectives over many tensors at once: one flat buffer per dtype and device instead of one call per tensor.

Used to keep replicated parameters in step (:func:`broadcast_tensors`) and to average gradients
(:func:`all_reduce_mean`) with few, large messages. Without an initialised process group, or with one process,
both return without touching the tensors.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import torch
import torch.distributed as dist
from torch import Tensor

__all__ = ["all_reduce_mean", "broadcast_tensors", "group_by_dtype", "token_share_scale"]


def group_by_dtype(tensors: Iterable[Tensor]) -> list[list[Tensor]]:
    """Split ``tensors`` into lists of one dtype and device each (in first-seen order), skipping empty ones.

    Example:
        >>> groups = group_by_dtype([torch.zeros(2), torch.zeros(1, dtype=torch.int64), torch.ones(3), torch.zeros(0)])
        >>> [[t.numel() for t in g] for g in groups]
        [[2, 3], [1]]
    """
    groups: dict[tuple[torch.dtype, torch.device], list[Tensor]] = {}
    for t in tensors:
        if t.numel() > 0:
            groups.setdefault((t.dtype, t.device), []).append(t)
    return list(groups.values())


def _scatter_back(flat: Tensor, tensors: Sequence[Tensor]) -> None:
    offset = 0
    with torch.no_grad():
        for t in tensors:
            t.copy_(flat[offset : offset + t.numel()].view_as(t))
            offset += t.numel()


def _active() -> bool:
    return dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1


def broadcast_tensors(tensors: Iterable[Tensor], src: int = 0) -> None:
    """Overwrite ``tensors`` on every rank with the values of global rank ``src`` (in place).

    Args:
        tensors: the same list of tensors (same shapes and dtypes, same order) on every rank.
        src: the global rank whose values win.

    Example:
        >>> t = torch.ones(3)
        >>> broadcast_tensors([t])  # no process group: nothing to do
        >>> t.tolist()
        [1.0, 1.0, 1.0]
    """
    if not _active():
        return
    for group in group_by_dtype(tensors):
        flat = torch.cat([t.detach().reshape(-1) for t in group])
        dist.broadcast(flat, src=src)
        _scatter_back(flat, group)


def all_reduce_mean(tensors: Iterable[Tensor]) -> None:
    """Replace ``tensors`` on every rank by their mean over all ranks of the default group (in place).

    Args:
        tensors: the same list of tensors (same shapes and dtypes, same order) on every rank, e.g. gradients.

    Example:
        >>> g = torch.full((2,), 4.0)
        >>> all_reduce_mean([g])  # no process group: nothing to do
        >>> g.tolist()
        [4.0, 4.0]
    """
    if not _active():
        return
    world = dist.get_world_size()
    for group in group_by_dtype(tensors):
        flat = torch.cat([t.detach().reshape(-1) for t in group])
        dist.all_reduce(flat, op=dist.ReduceOp.SUM)
        flat.div_(world)
        _scatter_back(flat, group)


def token_share_scale(labels: Tensor, ignore_index: int = -100) -> float | None:
    """``world_size * local / total`` scored tokens: rescales a per-rank mean loss into the global mean.

    A rank whose loss is the mean over its ``local`` scored tokens (labels other than ``ignore_index``)
    contributes ``local / total`` of the global mean over all ranks' ``total`` scored tokens; since gradients
    are then averaged over ``world_size`` ranks, the loss is multiplied by ``world_size * local / total``.

    Args:
        labels: this rank's labels.
        ignore_index: label value of unscored tokens.

    Returns:
        The scale, or ``None`` without a process group, with one process, or when no rank has a scored token.

    Example:
        >>> token_share_scale(torch.tensor([1, 2, -100])) is None  # no process group
        True
    """
    if not _active():
        return None
    counts = torch.tensor([float((labels != ignore_index).sum())], dtype=torch.float64, device=labels.device)
    local = float(counts)
    dist.all_reduce(counts, op=dist.ReduceOp.SUM)
    total = float(counts)
    if total == 0:
        return None
    return local * dist.get_world_size() / total
