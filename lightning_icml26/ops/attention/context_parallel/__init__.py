"""Context-parallel attention: dense reference, Ulysses, ring and UPipe (staged, fused), and routing into models."""

from __future__ import annotations

from lightning_icml26.ops.attention.context_parallel._kernels import apply_rotary, kv_replication
from lightning_icml26.ops.attention.context_parallel.dense import dense_attention
from lightning_icml26.ops.attention.context_parallel.memory import (
    LiveBytesTracker,
    OffloadByteModel,
    SavedTensorBytes,
    forward_backward_memory,
)
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

__all__ = [
    "apply_rotary",
    "ATTENTION_BACKENDS",
    "ATTENTION_CHOICES",
    "check_heads",
    "ContextParallelAttentionConfig",
    "dense_attention",
    "forward_backward_memory",
    "FusedHFAttentionForward",
    "fused_unsupported_reason",
    "get_attention_backend",
    "kv_replication",
    "HF_ATTENTION_NAMES",
    "install_fused_forward",
    "LiveBytesTracker",
    "OffloadByteModel",
    "register_hf_attention",
    "remove_fused_forward",
    "ring_attention",
    "RotaryEmbedding",
    "route_attention",
    "route_hf_model",
    "SavedTensorBytes",
    "ulysses_attention",
    "UPipeAttention",
    "upipe_attention",
    "upipe_qkv_attention",
    "upipe_schedule",
]
