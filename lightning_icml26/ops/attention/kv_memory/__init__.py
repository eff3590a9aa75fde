"""Attention at a fixed KV budget: ARM (window + routed memory) and its baselines (GSA, StreamingLLM, SnapKV, H2O)."""

from __future__ import annotations

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
    "ARMAttention",
    "ARMCache",
    "ARM_READ_POLICIES",
    "ARM_WRITE_MODES",
    "build_kv_attention",
    "check_decode_step",
    "EvictionAttention",
    "EVICTION_KINDS",
    "GatedSlotAttention",
    "GSACache",
    "KVCache",
    "KV_ATTENTION_KINDS",
    "read_cost_at",
]
