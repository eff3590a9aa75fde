"""Build any attention kind of the ARM comparison at one KV budget: full, StreamingLLM, SnapKV, H2O, GSA, ARM."""

from __future__ import annotations

from typing import Any

from torch import nn

from lightning_icml26.ops.attention.kv_memory.arm import ARMAttention
from lightning_icml26.ops.attention.kv_memory.eviction import EvictionAttention
from lightning_icml26.ops.attention.kv_memory.gsa import GatedSlotAttention

__all__ = ["KV_ATTENTION_KINDS", "build_kv_attention"]

KV_ATTENTION_KINDS = ("full", "streaming", "snapkv", "h2o", "gsa", "arm")


def build_kv_attention(
    kind: str, num_heads: int, head_dim: int, budget: int, layer_idx: int = 0, **kwargs: Any
) -> nn.Module:
    """An attention module of ``kind`` holding ``budget`` key/value tokens per head while decoding.

    ``"full"`` ignores the budget (its cache grows); ``"streaming"``, ``"snapkv"`` and ``"h2o"`` keep ``budget``
    tokens; ``"gsa"`` has ``budget`` slots; ``"arm"`` splits it into a window (``window``, default
    ``budget // 4``) and ``budget - window`` memory slots. Extra keyword arguments go to the module.

    Args:
        kind: one of :data:`KV_ATTENTION_KINDS`.
        num_heads: heads.
        head_dim: head width.
        budget: key/value tokens per head (>= 2).
        layer_idx: layer id (ARM's learned read policy uses it).
        **kwargs: forwarded to the module's constructor.

    Returns:
        A module with ``forward``, ``prefill``, ``step`` and ``empty_cache``.

    Example:
        >>> arm = build_kv_attention("arm", num_heads=2, head_dim=8, budget=64, num_clusters=4)
        >>> arm.num_slots, arm.window
        (48, 16)
    """
    if kind not in KV_ATTENTION_KINDS:
        raise ValueError(f"attention kind must be one of {KV_ATTENTION_KINDS}, got {kind!r}")
    if isinstance(budget, bool) or not isinstance(budget, int) or budget < 2:
        raise ValueError(f"budget must be an integer >= 2, got {budget!r}")
    if kind in ("full", "streaming", "snapkv", "h2o"):
        return EvictionAttention(kind, num_heads, head_dim, budget=None if kind == "full" else budget, **kwargs)
    if kind == "gsa":
        return GatedSlotAttention(num_heads, head_dim, num_slots=budget, **kwargs)
    window = int(kwargs.pop("window", budget // 4))
    if not 0 <= window < budget:
        raise ValueError(f"window must be in [0, budget={budget}), got {window!r}")
    return ARMAttention(num_heads, head_dim, num_slots=budget - window, window=window, layer_idx=layer_idx, **kwargs)
