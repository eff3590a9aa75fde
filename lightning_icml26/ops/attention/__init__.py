"""Attention in three families that never import each other, all re-exported here.

* :mod:`~lightning_icml26.ops.attention.context_parallel`: dense reference, Ulysses, ring and UPipe, with one
  signature, and their routing into models. Tensors are ``(batch, seq_local, heads, head_dim)``; q has ``H``
  heads, k/v have ``G`` (GQA, ``G`` divides ``H``, query head ``h`` uses KV head ``h // (H/G)``). Every backend
  takes keyword arguments ``cp`` (a ``ContextParallelGroup``, ``ProcessGroup`` or ``None``), ``causal``,
  ``scale`` and ``layout``.
* :mod:`~lightning_icml26.ops.attention.isa`: ISA, in-context sparse attention, and its block-sparse baseline.
* :mod:`~lightning_icml26.ops.attention.kv_memory`: ARM and the fixed-KV-budget baselines (GSA, eviction).
"""

from __future__ import annotations

from lightning_icml26.ops.attention.context_parallel import (
    ATTENTION_BACKENDS,
    ATTENTION_CHOICES,
    HF_ATTENTION_NAMES,
    ContextParallelAttentionConfig,
    FusedHFAttentionForward,
    LiveBytesTracker,
    RotaryEmbedding,
    SavedTensorBytes,
    UPipeAttention,
    apply_rotary,
    check_heads,
    dense_attention,
    fused_unsupported_reason,
    get_attention_backend,
    install_fused_forward,
    register_hf_attention,
    remove_fused_forward,
    ring_attention,
    route_attention,
    route_hf_model,
    ulysses_attention,
    upipe_attention,
    upipe_qkv_attention,
    upipe_schedule,
)
from lightning_icml26.ops.attention.isa import (
    ISA_ROUTINGS,
    ISAAttention,
    SDPAAttention,
    isa_attention,
    topk_block_attention,
)
from lightning_icml26.ops.attention.kv_memory import (
    ARM_READ_POLICIES,
    ARM_WRITE_MODES,
    EVICTION_KINDS,
    KV_ATTENTION_KINDS,
    ARMAttention,
    ARMCache,
    EvictionAttention,
    GatedSlotAttention,
    GSACache,
    KVCache,
    build_kv_attention,
    check_decode_step,
    read_cost_at,
)

__all__ = [
    "apply_rotary",
    "ARM_READ_POLICIES",
    "ARM_WRITE_MODES",
    "ARMAttention",
    "ARMCache",
    "read_cost_at",
    "ATTENTION_BACKENDS",
    "ATTENTION_CHOICES",
    "check_decode_step",
    "check_heads",
    "ContextParallelAttentionConfig",
    "dense_attention",
    "FusedHFAttentionForward",
    "fused_unsupported_reason",
    "build_kv_attention",
    "KV_ATTENTION_KINDS",
    "EVICTION_KINDS",
    "EvictionAttention",
    "GatedSlotAttention",
    "GSACache",
    "KVCache",
    "get_attention_backend",
    "HF_ATTENTION_NAMES",
    "ISA_ROUTINGS",
    "install_fused_forward",
    "ISAAttention",
    "isa_attention",
    "LiveBytesTracker",
    "register_hf_attention",
    "remove_fused_forward",
    "ring_attention",
    "RotaryEmbedding",
    "route_attention",
    "route_hf_model",
    "SavedTensorBytes",
    "SDPAAttention",
    "topk_block_attention",
    "ulysses_attention",
    "upipe_attention",
    "upipe_qkv_attention",
    "upipe_schedule",
    "UPipeAttention",
]
