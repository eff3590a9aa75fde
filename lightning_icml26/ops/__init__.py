"""Numerical kernels and layers (attention variants, soft ranking, optimal transport).

Triton kernels live beside a pure-torch reference; never imports lightning.
"""

from __future__ import annotations

from lightning_icml26.ops.attention import (
    UPipeAttention,
    dense_attention,
    ring_attention,
    ulysses_attention,
    upipe_attention,
    upipe_qkv_attention,
)
from lightning_icml26.ops.georeg import GeoRegLoss, georeg_penalty
from lightning_icml26.ops.sinkhorn import greedy_round, sinkhorn_log
from lightning_icml26.ops.soft_rank import isotonic_regression_decreasing, soft_rank, soft_sort

__all__ = [
    "dense_attention",
    "georeg_penalty",
    "GeoRegLoss",
    "greedy_round",
    "isotonic_regression_decreasing",
    "ring_attention",
    "sinkhorn_log",
    "soft_rank",
    "soft_sort",
    "ulysses_attention",
    "upipe_attention",
    "upipe_qkv_attention",
    "UPipeAttention",
]
