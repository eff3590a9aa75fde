"""Attention for context parallelism: dense reference, Ulysses, ring and UPipe, with one signature.

Tensors are ``(batch, seq_local, heads, head_dim)``; q has ``H`` heads, k/v have ``G`` (GQA, ``G`` divides
``H``, query head ``h`` uses KV head ``h // (H/G)``). Every backend takes keyword arguments ``cp`` (a
``ContextParallelGroup``, ``ProcessGroup`` or ``None``), ``causal``, ``scale`` and ``layout``.
"""

from __future__ import annotations

from lightning_icml26.ops.attention.context_parallel._kernels import apply_rotary
from lightning_icml26.ops.attention.context_parallel.dense import dense_attention
from lightning_icml26.ops.attention.context_parallel.memory import LiveBytesTracker, SavedTensorBytes
from lightning_icml26.ops.attention.context_parallel.module import (
    ATTENTION_BACKENDS,
    RotaryEmbedding,
    UPipeAttention,
    get_attention_backend,
)
from lightning_icml26.ops.attention.context_parallel.ring import ring_attention
from lightning_icml26.ops.attention.context_parallel.routing import (
    ATTENTION_CHOICES,
    HF_ATTENTION_NAMES,
    ContextParallelAttentionConfig,
    check_heads,
    register_hf_attention,
    route_attention,
    route_hf_model,
)
from lightning_icml26.ops.attention.context_parallel.ulysses import ulysses_attention
from lightning_icml26.ops.attention.context_parallel.upipe import upipe_qkv_attention, upipe_schedule
from lightning_icml26.ops.attention.context_parallel.upipe_fused import upipe_attention
from lightning_icml26.ops.attention.context_parallel.upipe_hf import (
    FusedHFAttentionForward,
    fused_unsupported_reason,
    install_fused_forward,
    remove_fused_forward,
)
from lightning_icml26.ops.attention.isa.block_sparse import topk_block_attention
from lightning_icml26.ops.attention.isa.functional import ISA_ROUTINGS, isa_attention
from lightning_icml26.ops.attention.isa.module import ISAAttention, SDPAAttention
from lightning_icml26.ops.attention.kv_memory.arm import (
    ARM_READ_POLICIES,
    ARM_WRITE_MODES,
    ARMAttention,
    ARMCache,
    read_cost_at,
)
from lightning_icml26.ops.attention.kv_memory.decode_check import check_decode_step
from lightning_icml26.ops.attention.kv_memory.eviction import EVICTION_KINDS, EvictionAttention, KVCache
from lightning_icml26.ops.attention.kv_memory.gsa import GatedSlotAttention, GSACache
from lightning_icml26.ops.attention.kv_memory.kinds import KV_ATTENTION_KINDS, build_kv_attention

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
