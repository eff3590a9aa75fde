"""ISA (in-context sparse attention): function, modules, Triton kernel (lazy) and the block-sparse baseline."""

from __future__ import annotations

from lightning_icml26.ops.attention.isa.block_sparse import topk_block_attention
from lightning_icml26.ops.attention.isa.functional import (
    ISA_BACKENDS,
    ISA_ROUTINGS,
    check_fraction,
    check_isa_inputs,
    check_same_qkv,
    isa_attention,
)
from lightning_icml26.ops.attention.isa.module import ISAAttention, SDPAAttention

__all__ = [
    "check_fraction",
    "check_isa_inputs",
    "check_same_qkv",
    "ISAAttention",
    "isa_attention",
    "ISA_BACKENDS",
    "ISA_ROUTINGS",
    "SDPAAttention",
    "topk_block_attention",
]
