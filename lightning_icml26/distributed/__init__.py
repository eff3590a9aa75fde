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
from lightning_icml26.distributed.flat import all_reduce_mean, broadcast_tensors, group_by_dtype, token_share_scale
from lightning_icml26.distributed.group import ContextParallelGroup, as_context_parallel_group, mesh_sizes
from lightning_icml26.distributed.sharding import (
    LAYOUTS,
    check_layout,
    sequence_shard_indices,
    shard_batch,
    shard_positions,
    shard_sequence,
)
from lightning_icml26.distributed.teardown import EXIT_WATCHDOG_SECONDS, end_process_group

__all__: list[str] = [
    "all_reduce_mean",
    "end_process_group",
    "EXIT_WATCHDOG_SECONDS",
    "all_to_all_head_to_seq",
    "all_to_all_seq_to_head",
    "as_context_parallel_group",
    "broadcast_tensors",
    "check_layout",
    "ContextParallelGroup",
    "gather_sequence",
    "group_by_dtype",
    "LAYOUTS",
    "mesh_sizes",
    "ring_shift",
    "sequence_shard_indices",
    "shard_batch",
    "shard_positions",
    "shard_sequence",
    "token_share_scale",
]
