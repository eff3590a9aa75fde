"""FSDP2 parameter sharding on the data-parallel axis of UPipeStrategy's (data x context) mesh.

The sharding units are the blocks of every ``nn.ModuleList`` (the transformer layers of the project's models and of
transformers models; the sub-modules of a block that is a container without ``forward``), then each top-level child
of the LightningModule that holds parameters, which becomes an FSDP root (its ``forward`` is what ``training_step``
calls). FSDP2 all-gathers a unit's parameters for its forward and backward and reduce-scatters (averages) the
gradients over the data-parallel ranks; the context-parallel ranks of one replica hold the same shards and average
their gradients with one all-reduce.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch.distributed as dist
from lightning.fabric.utilities.types import _PATH
from lightning.pytorch.strategies import ModelParallelStrategy, Strategy
from torch import nn
from torch.distributed.checkpoint.state_dict import (
    StateDictOptions,
    get_model_state_dict,
    get_optimizer_state_dict,
    set_model_state_dict,
    set_optimizer_state_dict,
)
from torch.distributed.device_mesh import DeviceMesh
from torch.distributed.fsdp import fully_shard
from torch.distributed.tensor import DTensor
from torch.optim import Optimizer

from lightning_icml26.strategies._blocks import transformer_blocks

__all__: list[str] = []

_FULL = StateDictOptions(full_state_dict=True, cpu_offload=True)


def _has_params(module: nn.Module) -> bool:
    return any(True for _ in module.parameters())


def shard_data_parallel(module: nn.Module, mesh: DeviceMesh) -> int:
    """Apply ``fully_shard`` to the blocks and the parameter-holding children of ``module``; return the unit count."""
    units = 0
    for child in module.children():
        if not _has_params(child):
            continue
        for block in transformer_blocks(child):
            fully_shard(block, mesh=mesh)
            units += 1
        fully_shard(child, mesh=mesh)
        units += 1
    return units


def average_over_context(module: nn.Module, group: Any, size: int) -> None:
    """Average the local gradient shards over the context-parallel ranks (nothing to do when ``size`` is 1)."""
    if size == 1:
        return
    for p in module.parameters():
        if p.grad is None:
            continue
        local = p.grad.to_local() if isinstance(p.grad, DTensor) else p.grad
        dist.all_reduce(local, group=group)
        local.div_(size)


class FullStateCheckpoints:
    """Strategy mixin: full checkpoints (one file, gathered from FSDP2 shards) or distributed ones.

    With ``_save_distributed_checkpoint`` false, a checkpoint holds the full weights and optimizer state (plain
    ``Strategy`` behaviour when the parameters are replicated), written once by global rank zero; it loads into
    any data-parallel size, sharded or not. With it true (sharded parameters only), Lightning's
    ``ModelParallelStrategy`` format is used: a directory written with ``torch.distributed.checkpoint``, one
    shard per data-parallel rank (context-parallel ranks hold the same shards; DCP writes each chunk once) plus
    a ``meta.pt`` of the loop state; it is read back into whatever mesh the resuming run has, so the
    data-parallel size may change, and a full checkpoint file loads too.
    """

    shard_parameters: bool
    _save_distributed_checkpoint: bool
    model: Any
    optimizers: list[Optimizer]

    def lightning_module_state_dict(self) -> dict[str, Any]:
        """The full model state (a collective when sharded), or this rank's shards for a distributed checkpoint."""
        if self._save_distributed_checkpoint:
            return ModelParallelStrategy.lightning_module_state_dict(self)  # type: ignore[arg-type]
        if self.shard_parameters:
            return get_model_state_dict(self.model, options=_FULL)
        return Strategy.lightning_module_state_dict(self)  # type: ignore[arg-type]

    def load_model_state_dict(self, checkpoint: Mapping[str, Any], strict: bool = True) -> None:
        """Load the full model state (every rank reads the checkpoint); distributed: done in ``load_checkpoint``."""
        if self._save_distributed_checkpoint:
            return
        if self.shard_parameters:
            options = StateDictOptions(full_state_dict=True, strict=strict)
            set_model_state_dict(self.model, dict(checkpoint["state_dict"]), options=options)
            return
        Strategy.load_model_state_dict(self, checkpoint, strict=strict)  # type: ignore[arg-type]

    def optimizer_state(self, optimizer: Optimizer) -> dict[str, Any]:
        """The full state of ``optimizer`` (a collective when sharded), or this rank's shards."""
        if self._save_distributed_checkpoint:
            return ModelParallelStrategy.optimizer_state(self, optimizer)  # type: ignore[arg-type]
        if self.shard_parameters:
            return get_optimizer_state_dict(self.model, optimizer, options=_FULL)
        return Strategy.optimizer_state(self, optimizer)  # type: ignore[arg-type]

    def load_optimizer_state_dict(self, checkpoint: Mapping[str, Any]) -> None:
        """Load the full optimizer states; distributed: done in ``load_checkpoint``."""
        if self._save_distributed_checkpoint:
            return
        if self.shard_parameters:
            for optimizer, state in zip(self.optimizers, checkpoint["optimizer_states"], strict=True):
                options = StateDictOptions(full_state_dict=True)
                set_optimizer_state_dict(self.model, optimizer, state, options=options)
            return
        Strategy.load_optimizer_state_dict(self, checkpoint)  # type: ignore[arg-type]

    def save_checkpoint(self, checkpoint: dict[str, Any], filepath: _PATH, storage_options: Any | None = None) -> None:
        """One file written by global rank zero, or a distributed checkpoint directory written by every rank."""
        if self._save_distributed_checkpoint:
            ModelParallelStrategy.save_checkpoint(self, checkpoint, filepath, storage_options)  # type: ignore[arg-type]
            return
        Strategy.save_checkpoint(self, checkpoint, filepath, storage_options)  # type: ignore[arg-type]

    def load_checkpoint(self, checkpoint_path: _PATH, weights_only: bool | None = None) -> dict[str, Any]:
        """Read the one file on every rank; distributed: load the shards into the set-up model and optimizers."""
        if self._save_distributed_checkpoint:
            return ModelParallelStrategy.load_checkpoint(self, checkpoint_path, weights_only)  # type: ignore[arg-type]
        return Strategy.load_checkpoint(self, checkpoint_path, weights_only)  # type: ignore[arg-type]
