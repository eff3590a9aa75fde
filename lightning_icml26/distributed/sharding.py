"""Sequence sharding for context parallelism: which tokens each rank holds, for each layout.

Layouts:

* ``"contiguous"``: rank ``r`` of ``P`` holds tokens ``[r*S/P, (r+1)*S/P)``.
* ``"headtail"`` (zigzag): the sequence is cut into ``2P`` equal chunks; rank ``r`` holds chunk ``r`` followed by
  chunk ``2P-1-r``. Under a causal mask every rank then does the same amount of attention work (the load
  balancing used by ring attention).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import torch
from torch import Tensor

from lightning_icml26.distributed.group import as_context_parallel_group

__all__ = ["LAYOUTS", "check_layout", "sequence_shard_indices", "shard_batch", "shard_positions", "shard_sequence"]

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


def shard_batch(
    batch: Any,
    shard_keys: Sequence[str | int],
    rank: int,
    size: int,
    layout: str = "contiguous",
    seq_dim: int = 1,
    add_position_ids: bool = True,
) -> Any:
    """This rank's shard of a full-sequence batch: the ``shard_keys`` entries cut along ``seq_dim``.

    Args:
        batch: a mapping, list or tuple holding full-sequence tensors.
        shard_keys: entries to cut (mapping keys, or integer positions for list / tuple batches); entries absent
            from the batch or not tensors are skipped.
        rank: this rank's index in the context-parallel group.
        size: the group's size (``1`` returns the tensors whole).
        layout: one of :data:`LAYOUTS`.
        seq_dim: the sequence dimension of the tensors.
        add_position_ids: add ``position_ids`` (global positions of the local tokens) to mapping batches that
            lack it, so rotary embeddings see the right positions.

    Returns:
        A batch of the same type with the shards in place of the full tensors.

    Raises:
        TypeError: if ``batch`` is not a mapping, list or tuple.
        ValueError: if no entry of ``shard_keys`` is a tensor in the batch, the sequence length does not split
            over ``size`` ranks, or two entries differ in length.

    Example:
        >>> out = shard_batch({"input_ids": torch.arange(8).view(1, 8)}, ["input_ids"], rank=1, size=2)
        >>> out["input_ids"].tolist(), out["position_ids"].tolist()
        ([[4, 5, 6, 7]], [[4, 5, 6, 7]])
    """
    keys: list[Any]
    if isinstance(batch, Mapping):
        items = dict(batch)
        keys = [k for k in shard_keys if isinstance(k, str) and isinstance(items.get(k), Tensor)]
    elif isinstance(batch, list | tuple):
        items = dict(enumerate(batch))
        keys = [k for k in shard_keys if isinstance(k, int) and isinstance(items.get(k), Tensor)]
    else:
        raise TypeError(f"batch must be a mapping, list or tuple of tensors, got {type(batch).__name__}")
    if not keys:
        raise ValueError(
            f"the batch holds none of shard_keys={shard_keys} as a tensor"
            f" (batch keys: {sorted(map(str, items))}); set shard_keys to the sequence entries of your batch"
        )
    seq_len = int(items[keys[0]].shape[seq_dim])
    if seq_len % (size * (2 if layout == "headtail" else 1)) != 0:
        parts = size * (2 if layout == "headtail" else 1)
        raise ValueError(
            f"the sequence length {seq_len} of batch entry {keys[0]!r} is not divisible by {parts}"
            f" (context_parallel_size={size}, layout={layout!r}); pad or crop the sequences"
        )
    device = items[keys[0]].device
    index = sequence_shard_indices(seq_len, rank, size, layout, device=device)
    if isinstance(batch, Mapping) and add_position_ids and "position_ids" not in items:
        template = items[keys[0]]
        positions = torch.arange(seq_len, device=device).expand(template.shape[0], seq_len)
        items["position_ids"] = positions
        keys.append("position_ids")
    for key in keys:
        tensor = items[key]
        if tensor.shape[seq_dim] != seq_len:
            raise ValueError(
                f"batch entry {key!r} has length {tensor.shape[seq_dim]} along seq_dim={seq_dim},"
                f" but {keys[0]!r} has {seq_len}"
            )
        items[key] = tensor.index_select(seq_dim, index) if size > 1 else tensor
    if isinstance(batch, Mapping):
        return type(batch)(items) if type(batch) is not dict else items  # type: ignore[call-arg]
    return type(batch)(items[i] for i in range(len(items)))
