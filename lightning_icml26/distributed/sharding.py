"""Sequence sharding for context parallelism: which tokens each rank holds, for each layout.

Layouts:

* ``"contiguous"``: rank ``r`` of ``P`` holds tokens ``[r*S/P, (r+1)*S/P)``.
* ``"headtail"`` (zigzag): the sequence is cut into ``2P`` equal chunks; rank ``r`` holds chunk ``r`` followed by
  chunk ``2P-1-r``. Under a causal mask every rank then does the same amount of attention work (the load
  balancing used by ring attention).
"""

from __future__ import annotations

from typing import Any

import torch

from lightning_icml26.distributed.group import as_context_parallel_group

__all__ = ["LAYOUTS", "check_layout", "sequence_shard_indices", "shard_positions", "shard_sequence"]

LAYOUTS: tuple[str, ...] = ("contiguous", "headtail")


def check_layout(layout: str) -> None:
    """Raise ``ValueError`` unless ``layout`` is one of :data:`LAYOUTS`.

    Example:
        >>> check_layout("headtail")
    """
    if layout not in LAYOUTS:
        raise ValueError(f"layout={layout!r} is not supported; choose one of {LAYOUTS}")


def _check_seq_len(seq_len: int, size: int, layout: str, name: str = "seq_len") -> None:
    check_layout(layout)
    parts = size if layout == "contiguous" else 2 * size
    if seq_len % parts != 0:
        raise ValueError(
            f"{name}={seq_len} must be divisible by {parts} (context-parallel size {size}, layout {layout!r})"
        )


def sequence_shard_indices(
    seq_len: int, rank: int, size: int, layout: str = "contiguous", device: torch.device | str | None = None
) -> torch.Tensor:
    """Global positions of the tokens held by ``rank`` of ``size`` ranks, in local order.

    A pure function of its arguments (no process group needed), e.g. for sharding a batch in a data hook.

    Args:
        seq_len: the global sequence length ``S``.
        rank: this rank's index in the context-parallel group.
        size: the context-parallel size ``P``.
        layout: ``"contiguous"`` or ``"headtail"``.
        device: device of the result.

    Returns:
        A ``LongTensor`` of length ``S / P``.

    Example:
        >>> sequence_shard_indices(8, 0, 2, "headtail").tolist()
        [0, 1, 6, 7]
        >>> sequence_shard_indices(8, 1, 2).tolist()
        [4, 5, 6, 7]
    """
    if size < 1:
        raise ValueError(f"size={size} must be >= 1")
    if not 0 <= rank < size:
        raise ValueError(f"rank={rank} must be in [0, {size})")
    _check_seq_len(seq_len, size, layout)
    if layout == "contiguous":
        local = seq_len // size
        return torch.arange(rank * local, (rank + 1) * local, device=device)
    chunk = seq_len // (2 * size)
    head = torch.arange(rank * chunk, (rank + 1) * chunk, device=device)
    tail_start = (2 * size - 1 - rank) * chunk
    tail = torch.arange(tail_start, tail_start + chunk, device=device)
    return torch.cat([head, tail])


def shard_positions(
    seq_len: int, cp: Any = None, layout: str = "contiguous", device: torch.device | str | None = None
) -> torch.Tensor:
    """Global positions of this rank's tokens (for RoPE and causal masks); rank and size come from ``cp``.

    Args:
        seq_len: the global sequence length.
        cp: a ``ContextParallelGroup``, ``ProcessGroup`` or ``None`` (single process).
        layout: ``"contiguous"`` or ``"headtail"``.
        device: device of the result.

    Example:
        >>> shard_positions(4).tolist()
        [0, 1, 2, 3]
    """
    group = as_context_parallel_group(cp)
    return sequence_shard_indices(seq_len, group.rank, group.size, layout, device)


def shard_sequence(x: torch.Tensor, cp: Any = None, dim: int = 1, layout: str = "contiguous") -> torch.Tensor:
    """This rank's shard of a full-sequence tensor (no communication; every rank must hold the full ``x``).

    Args:
        x: a tensor whose dimension ``dim`` is the full sequence.
        cp: a ``ContextParallelGroup``, ``ProcessGroup`` or ``None``.
        dim: the sequence dimension.
        layout: ``"contiguous"`` or ``"headtail"``.

    Returns:
        ``x`` restricted to this rank's tokens along ``dim`` (a view for the contiguous layout).

    Example:
        >>> shard_sequence(torch.arange(6).view(1, 6), None).tolist()
        [[0, 1, 2, 3, 4, 5]]
    """
    group = as_context_parallel_group(cp)
    if not -x.ndim <= dim < x.ndim:
        raise ValueError(f"dim={dim} is out of range for a tensor with {x.ndim} dimensions")
    seq_len = x.shape[dim]
    _check_seq_len(seq_len, group.size, layout, name=f"x.shape[{dim}]")
    if group.size == 1:
        return x
    if layout == "contiguous":
        local = seq_len // group.size
        return x.narrow(dim, group.rank * local, local)
    chunk = seq_len // (2 * group.size)
    head = x.narrow(dim, group.rank * chunk, chunk)
    tail = x.narrow(dim, (2 * group.size - 1 - group.rank) * chunk, chunk)
    return torch.cat([head, tail], dim=dim)
