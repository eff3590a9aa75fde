"""Framework-free distributed building blocks: process groups, differentiable collectives, sequence sharding.

Imports torch only (never lightning).
"""

from __future__ import annotations

from lightning_icml26.distributed.collectives import (
    all_to_all_head_to_seq,
    all_to_all_seq_to_head,
    gather_sequence,
    ring_shift,
)
from lightning_icml26.distributed.group import ContextParallelGroup, as_context_parallel_group
from lightning_icml26.distributed.sharding import (
    LAYOUTS,
    check_layout,
    sequence_shard_indices,
    shard_positions,
    shard_sequence,
)

__all__: list[str] = [
    "LAYOUTS",
    "ContextParallelGroup",
    "all_to_all_head_to_seq",
    "all_to_all_seq_to_head",
    "as_context_parallel_group",
    "check_layout",
    "gather_sequence",
    "ring_shift",
    "sequence_shard_indices",
    "shard_positions",
    "shard_sequence",
]
