"""Functional KV-budget figures: key/value bytes held per sequence and mean memory slots read per token.

For ARM the bytes held are ``2 x layers x heads x (M + W) x d x bytes per element`` whatever the context
length; for a full cache they grow with it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from torch import Tensor

__all__ = ["kv_budget", "kv_cache_bytes"]


def kv_cache_bytes(caches: Sequence[Any], batch: int) -> Tensor:
    """Key/value bytes per sequence held by a model's per-layer caches (anything with ``nbytes()``).

    Args:
        caches: one cache per layer, each with an ``nbytes()`` method counting the whole batch.
        batch: sequences in the batch the caches hold.

    Returns:
        A float64 scalar: the summed bytes divided by ``batch``.

    Example:
        >>> class Cache:
        ...     def nbytes(self) -> int:
        ...         return 64
        >>> kv_cache_bytes([Cache(), Cache()], batch=2)
        tensor(64., dtype=torch.float64)
    """
    if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
        raise ValueError(f"batch must be a positive integer, got {batch!r}")
    total = 0
    for i, cache in enumerate(caches):
        if not callable(getattr(cache, "nbytes", None)):
            raise TypeError(f"caches[{i}] must have an nbytes() method, got {type(cache).__name__}")
        total += int(cache.nbytes())
    return torch.tensor(total / batch, dtype=torch.float64)


def _kv_budget_update(kv_bytes: Tensor, slots_read: Tensor) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """``(sum of bytes, sequences, sum of slots read, tokens)`` as float64 scalars."""
    for name, t in (("kv_bytes", kv_bytes), ("slots_read", slots_read)):
        if not isinstance(t, Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
        if t.is_floating_point() and not bool(torch.isfinite(t).all()):
            raise ValueError(f"{name} must be finite")
        if bool((t < 0).any()):
            raise ValueError(f"{name} must be >= 0, got a minimum of {t.min().item()}")
    kb, sr = kv_bytes.detach().double().reshape(-1), slots_read.detach().double().reshape(-1)
    return (
        kb.sum(),
        torch.tensor(float(kb.numel()), dtype=torch.float64),
        sr.sum(),
        torch.tensor(float(sr.numel()), dtype=torch.float64),
    )


def _kv_budget_compute(bytes_sum: Tensor, seqs: Tensor, slots_sum: Tensor, tokens: Tensor) -> dict[str, Tensor]:
    nan = torch.tensor(float("nan"), dtype=torch.float64)
    return {
        "kv_bytes": bytes_sum / seqs if seqs > 0 else nan,
        "slots_read": slots_sum / tokens if tokens > 0 else nan,
    }


def kv_budget(kv_bytes: Tensor, slots_read: Tensor) -> dict[str, Tensor]:
    """Mean key/value bytes held per sequence and mean slots read per token.

    Args:
        kv_bytes: bytes held, one entry per sequence (any shape).
        slots_read: memory slots read, one entry per token (any shape).

    Returns:
        ``{"kv_bytes": mean bytes, "slots_read": mean slots}`` (float64; NaN when a tensor is empty).

    Example:
        >>> out = kv_budget(torch.tensor([1024.0, 1024.0]), torch.tensor([8.0, 16.0, 24.0]))
        >>> out["kv_bytes"].item(), out["slots_read"].item()
        (1024.0, 16.0)
    """
    return _kv_budget_compute(*_kv_budget_update(kv_bytes, slots_read))
