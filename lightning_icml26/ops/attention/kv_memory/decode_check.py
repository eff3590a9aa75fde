"""The argument check shared by every one-token decode ``step`` of the KV-budget attention kinds."""

from __future__ import annotations

from collections.abc import Hashable

from torch import Tensor

__all__ = ["check_decode_step"]


def check_decode_step(q: Tensor, cache: object, cache_type: type, signature: Hashable) -> None:
    """Raise ``ValueError`` unless ``q`` is one token and ``cache`` was made by a layer configured as ``signature``.

    Args:
        q: the step's queries ``(batch, seq, heads, head_dim)``; ``seq`` must be 1.
        cache: the cache handed to ``step``.
        cache_type: the cache class this layer makes (``ARMCache``, ``GSACache``, ``KVCache``).
        signature: the layer's own configuration signature.

    Raises:
        ValueError: ``q`` holds more than one token, ``cache`` is not a ``cache_type`` or carries another
            signature, or its batch differs from ``q``'s.

    Example:
        >>> import torch
        >>> from lightning_icml26.ops.attention.kv_memory.gsa import GSACache
        >>> cache = GSACache(torch.zeros(2, 1, 3, 4), torch.zeros(2, 1, 3, 4), 0, (1, 4, 3))
        >>> check_decode_step(torch.zeros(2, 1, 1, 4), cache, GSACache, (1, 4, 3))
        >>> check_decode_step(torch.zeros(2, 1, 1, 4), cache, GSACache, (1, 4, 5))
        Traceback (most recent call last):
        ...
        ValueError: cache was built for configuration (1, 4, 3), this layer has (1, 4, 5)
    """
    if q.shape[1] != 1:
        raise ValueError(f"step takes one token at a time, got q with seq length {q.shape[1]}")
    if not isinstance(cache, cache_type) or getattr(cache, "signature", None) != signature:
        got = cache.signature if isinstance(cache, cache_type) else type(cache).__name__  # type: ignore[attr-defined]
        raise ValueError(f"cache was built for configuration {got}, this layer has {signature}")
    batch = cache.batch_size  # type: ignore[attr-defined]
    if batch != q.shape[0]:
        raise ValueError(f"cache batch {batch} differs from q batch {q.shape[0]}")
