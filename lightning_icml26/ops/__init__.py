"""Numerical kernels and layers (attention variants, soft ranking, optimal transport).

Triton kernels live beside a pure-torch reference; never imports lightning.
"""

from __future__ import annotations

from lightning_icml26.ops.assignment import (
    SOLVERS,
    build_itc_cost,
    grid_coordinates,
    gumbel_noise,
    solve_assignment,
)
from lightning_icml26.ops.attention import (
    ARMAttention,
    ARMCache,
    EvictionAttention,
    GatedSlotAttention,
    UPipeAttention,
    check_heads,
    dense_attention,
    read_cost_at,
    register_hf_attention,
    ring_attention,
    route_attention,
    route_hf_model,
    ulysses_attention,
    upipe_attention,
    upipe_qkv_attention,
)
from lightning_icml26.ops.georeg import GeoRegLoss, georeg_penalty
from lightning_icml26.ops.itc_decoder import DECODERS, ITCDecoder, decode_next_frame
from lightning_icml26.ops.ot_rank import ot_soft_rank
from lightning_icml26.ops.sinkhorn import greedy_round, sinkhorn_log
from lightning_icml26.ops.soft_rank import isotonic_regression_decreasing, soft_rank, soft_sort
from lightning_icml26.ops.spectrum_match import (
    hob_projection_loss,
    hob_w1_loss,
    leading_right_singular_vector,
    mean_matching_loss,
    principal_subspace,
    sorted_w1,
    subspace_projection_distance,
    top_right_singular_vectors,
    var_w1_loss,
)
from lightning_icml26.ops.valueflow_contrastive import (
    HierarchicalAlignLoss,
    HierarchicalContrastiveLoss,
    anchor_info_nce,
    hierarchical_contrastive_loss,
)

__all__ = [
    "ARMAttention",
    "ARMCache",
    "read_cost_at",
    "EvictionAttention",
    "GatedSlotAttention",
    "anchor_info_nce",
    "HierarchicalAlignLoss",
    "HierarchicalContrastiveLoss",
    "hierarchical_contrastive_loss",
    "build_itc_cost",
    "check_heads",
    "decode_next_frame",
    "DECODERS",
    "dense_attention",
    "georeg_penalty",
    "GeoRegLoss",
    "greedy_round",
    "hob_projection_loss",
    "hob_w1_loss",
    "leading_right_singular_vector",
    "mean_matching_loss",
    "principal_subspace",
    "sorted_w1",
    "subspace_projection_distance",
    "top_right_singular_vectors",
    "var_w1_loss",
    "grid_coordinates",
    "gumbel_noise",
    "isotonic_regression_decreasing",
    "ITCDecoder",
    "register_hf_attention",
    "ring_attention",
    "route_attention",
    "route_hf_model",
    "ot_soft_rank",
    "sinkhorn_log",
    "soft_rank",
    "soft_sort",
    "solve_assignment",
    "SOLVERS",
    "ulysses_attention",
    "upipe_attention",
    "upipe_qkv_attention",
    "UPipeAttention",
]
