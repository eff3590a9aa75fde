"""Context parallelism (UPipe, Ulysses, ring attention) as a Lightning ``Strategy`` for unchanged training scripts.

``Trainer(strategy="upipe", devices=N, num_nodes=M)`` or ``Trainer(strategy=UPipeStrategy(...))``:

* the ranks form a ``("data_parallel", "context_parallel")`` device mesh (context-parallel ranks are
  consecutive global ranks, so a context-parallel group stays inside a node when it fits); the distributed
  sampler is built on the ``"data_parallel"`` axis only, so every context-parallel rank of a data-parallel
  group receives the same sample;
* ``batch_to_device`` cuts the sequence tensors of each batch (``shard_keys`` along ``seq_dim``) into this
  rank's shard, with the layout the attention backend expects (``"contiguous"`` for UPipe / Ulysses,
  ``"headtail"`` zigzag for ring), and adds the global ``position_ids`` of the local tokens;
* at ``setup`` the model's attention is routed through the chosen context-parallel function without
  editing the model (:func:`lightning_icml26.ops.route_attention`);
* the loss returned by ``training_step`` (a mean over this rank's scored tokens) is re-weighted by its
  token count so that the gradient is that of the mean over all scored tokens of the global batch, and the
  gradients are averaged over the whole mesh before the optimizer step (and before gradient clipping);
* with ``shard_parameters=True`` the parameters are sharded with FSDP2 ``fully_shard`` on the
  ``"data_parallel"`` axis (one unit per transformer block, :mod:`lightning_icml26.strategies._fsdp`);
  gradients are reduce-scattered over that axis by FSDP and averaged over the context-parallel ranks;
* with ``activation_checkpointing=True`` every transformer block recomputes its activations in backward
  (:mod:`lightning_icml26.strategies._blocks`); with ``offload_activations=True`` the inputs the checkpointed
  blocks keep go to host memory (``torch.autograd.graph.save_on_cpu``; saves device memory on CUDA only);
* with ``tiled_mlp=N`` the ``mlp`` of every transformer block runs in ``N`` tiles along the sequence and keeps
  only its input for backward (:mod:`lightning_icml26.ops.tiled_mlp`), as in the paper's benchmark;
* checkpoints hold the full weights and optimizer state (gathered from the shards when sharded), written
  once by global rank zero, or, with ``save_distributed_checkpoint=True``, one shard per rank in
  ``torch.distributed.checkpoint`` format; both resume on another data-parallel size.

Deviations from the paper's reference design (docs/upipe.md): parameters are replicated by default (one
flat all-reduce of the gradients over the mesh); no tensor-parallel axis; activation checkpointing is off by
default.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any, Literal

import torch
from lightning.fabric.plugins.collectives.torch_collective import default_pg_timeout
from lightning.fabric.utilities.init import _materialize_distributed_module
from lightning.fabric.utilities.optimizer import _optimizers_to_device
from lightning.pytorch.strategies import ModelParallelStrategy, StrategyRegistry
from lightning.pytorch.strategies.launchers import _SubprocessScriptLauncher
from lightning.pytorch.trainer.states import TrainerFn
from torch import Tensor, nn
from torch.distributed.device_mesh import init_device_mesh
from torch.optim import Optimizer
from typing_extensions import override

from lightning_icml26.distributed import (
    all_reduce_mean,
    broadcast_tensors,
    mesh_sizes,
    shard_batch,
    token_share_scale,
)
from lightning_icml26.ops.attention.context_parallel.routing import route_attention
from lightning_icml26.strategies._arguments import as_timeout, check_arguments
from lightning_icml26.strategies._blocks import checkpoint_blocks, tile_block_mlps
from lightning_icml26.strategies._fsdp import FullStateCheckpoints, average_over_context, shard_data_parallel
from lightning_icml26.strategies._launcher import CleanExitMultiProcessingLauncher

if TYPE_CHECKING:
    import lightning.pytorch as pl

__all__ = ["UPipeStrategy"]


class UPipeStrategy(FullStateCheckpoints, ModelParallelStrategy):
    """Data x context parallel training with UPipe (or Ulysses / ring) attention in any Lightning ``Trainer``.

    .. warning:: Experimental. Batches must hold sequence tensors of a length divisible by the
        context-parallel size (twice that for the ``"headtail"`` layout); labels must already be shifted
        (``labels[t]`` is the target of ``input_ids[t]``), since a model that shifts inside its loss would lose
        the target at every shard border. Attention masks other than causal (padding, packing) are not
        supported: the strategy refuses an ``attention_mask`` key among ``shard_keys``.

    Args:
        context_parallel_size: ranks that share one sequence; ``"auto"``: world size / data-parallel size.
        data_parallel_size: number of model replicas seeing different samples; ``"auto"``: world size /
            context-parallel size (1 when both are ``"auto"``).
        attention: ``"upipe"`` (head-chunked Ulysses), ``"ulysses"``, ``"ring"`` or ``"dense"`` (all-gather;
            a reference, not memory-efficient).
        stage_heads: UPipe heads per stage (a multiple of the context-parallel size dividing the head count);
            ``None``: the context-parallel size, as in the paper's code.
        layout: sequence layout of the shards; ``None``: ``"contiguous"`` for UPipe / Ulysses / dense and
            ``"headtail"`` (zigzag, load-balanced) for ring.
        shard_keys: batch entries cut along ``seq_dim`` (mapping keys, or integer positions for tuple batches).
        seq_dim: the sequence dimension of those tensors.
        label_key: batch entry holding the labels, used to count the scored tokens; ``None``: every rank's loss
            weighs the same.
        ignore_index: label value that is not scored.
        add_position_ids: add ``position_ids`` (global positions of the local tokens) to mapping batches that
            lack it, so rotary embeddings see the right positions.
        start_method: how processes are launched when no cluster launcher created them: ``"popen"``
            (re-run the script, Lightning's default) or ``"spawn"`` / ``"fork"`` / ``"forkserver"``.
        process_group_backend: ``"gloo"`` (CPU) or ``"nccl"`` (CUDA); ``None``: chosen from the device.
        timeout: collective timeout: a rank left alone in a collective fails after it, ending the job instead
            of hanging it. Seconds (``strategy.timeout=60`` on the command line) or a ``timedelta``.
        shard_parameters: shard parameters, gradients and optimizer state over the data-parallel ranks with
            FSDP2 (``False``: replicate them).
        activation_checkpointing: recompute each transformer block's activations in backward (non-reentrant
            ``torch.utils.checkpoint``); the blocks are the entries of the model's ``nn.ModuleList``.
        save_distributed_checkpoint: write checkpoints as a ``torch.distributed.checkpoint`` directory of
            shards (needs ``shard_parameters=True``) instead of one full file.
        tiled_mlp: run each transformer block's ``mlp`` submodule in this many tiles along ``seq_dim``, keeping
            only its input for backward (ALST-style tiled MLP); ``None``: untiled. The ``mlp`` keeps its class
            and state-dict keys.
        offload_activations: keep what the checkpointed blocks save (their inputs) in host memory
            (``torch.autograd.graph.save_on_cpu``, pinned on CUDA); needs ``activation_checkpointing=True``.
            Only useful on an accelerator: on CPU the "copy" is the tensor itself and nothing changes.

    Raises:
        ValueError: for an argument out of range (named in the message); at ``Trainer`` construction for a
            world size not divisible by the mesh or a backend that does not fit the accelerator; at setup
            for head counts the attention cannot split, a model with no attention to route, or (with
            ``activation_checkpointing`` or ``tiled_mlp``) no ``nn.ModuleList`` of blocks, or (with
            ``tiled_mlp``) a block without an ``mlp`` submodule.

    Example:
        >>> strategy = UPipeStrategy(context_parallel_size=2, attention="ulysses")
        >>> strategy.attention, strategy.layout
        ('ulysses', 'contiguous')
        >>> UPipeStrategy(attention="flash")
        Traceback (most recent call last):
        ...
        ValueError: attention='flash' is not supported; choose one of ('upipe', 'ulysses', 'ring', 'dense')
    """

    def __init__(
        self,
        context_parallel_size: int | Literal["auto"] = "auto",
        data_parallel_size: int | Literal["auto"] = "auto",
        attention: str = "upipe",
        stage_heads: int | None = None,
        layout: str | None = None,
        shard_keys: Sequence[str | int] = ("input_ids", "labels", "position_ids"),
        seq_dim: int = 1,
        label_key: str | int | None = "labels",
        ignore_index: int = -100,
        add_position_ids: bool = True,
        start_method: str = "popen",
        process_group_backend: str | None = None,
        timeout: timedelta | float | None = default_pg_timeout,
        shard_parameters: bool = False,
        activation_checkpointing: bool = False,
        save_distributed_checkpoint: bool = False,
        tiled_mlp: int | None = None,
        offload_activations: bool = False,
    ) -> None:
        super().__init__(
            data_parallel_size=1,
            tensor_parallel_size=1,
            save_distributed_checkpoint=save_distributed_checkpoint,
            process_group_backend=process_group_backend,
            timeout=as_timeout(timeout),
        )
        layout = check_arguments(
            attention=attention,
            context_parallel_size=context_parallel_size,
            data_parallel_size=data_parallel_size,
            stage_heads=stage_heads,
            layout=layout,
            shard_keys=shard_keys,
            start_method=start_method,
            process_group_backend=process_group_backend,
            shard_parameters=shard_parameters,
            activation_checkpointing=activation_checkpointing,
            save_distributed_checkpoint=save_distributed_checkpoint,
            tiled_mlp=tiled_mlp,
            offload_activations=offload_activations,
        )
        self.activation_checkpointing = activation_checkpointing
        self.tiled_mlp = tiled_mlp
        self.offload_activations = offload_activations
        self.shard_parameters = shard_parameters
        self._cp_size_arg = context_parallel_size
        self._dp_size_arg = data_parallel_size
        self.attention = attention
        self.stage_heads = stage_heads
        self.layout = layout
        self.shard_keys = tuple(shard_keys)
        self.seq_dim = seq_dim
        self.label_key = label_key
        self.ignore_index = ignore_index
        self.add_position_ids = add_position_ids
        self.start_method = start_method
        self._cp_group: Any = None
        self._cp_rank = 0
        self._cp_size = 1
        self._loss_scale: float | None = None

    # ------------------------------------------------------------------ mesh and processes
    def mesh_sizes(self, world_size: int) -> tuple[int, int]:
        """``(data_parallel_size, context_parallel_size)`` for ``world_size`` ranks.

        Raises:
            ValueError: if the sizes do not multiply to ``world_size``.

        Example:
            >>> UPipeStrategy().mesh_sizes(4), UPipeStrategy(context_parallel_size=2).mesh_sizes(4)
            ((1, 4), (2, 2))
        """
        return mesh_sizes(world_size, self._cp_size_arg, self._dp_size_arg)

    @property
    def context_parallel_size(self) -> int:
        """Ranks per context-parallel group (1 before the processes are set up)."""
        return self._cp_size

    @property
    def context_parallel_rank(self) -> int:
        """This rank's index in its context-parallel group."""
        return self._cp_rank

    @property
    def context_parallel_group(self) -> Any:
        """The context-parallel ``ProcessGroup`` (``None`` before setup or when the size is 1)."""
        return self._cp_group

    @property
    def loss_scale(self) -> float | None:
        """Factor applied to the last training loss: local scored tokens x world size / global scored tokens.

        With manual optimization multiply your loss by it before ``manual_backward``.
        """
        return self._loss_scale

    @property
    def is_distributed(self) -> bool:
        """Always ``True``: the Trainer must inject the data-parallel sampler."""
        return True

    @override
    def _configure_launcher(self) -> None:
        assert self.cluster_environment is not None
        world_size = self.num_nodes * self.num_processes
        self.mesh_sizes(world_size)  # fail at Trainer construction, before any process starts
        self._check_backend()
        if self.cluster_environment.creates_processes_externally:
            return
        if self.start_method == "popen":
            self._launcher = _SubprocessScriptLauncher(self.cluster_environment, self.num_processes, self.num_nodes)
        else:
            if self.num_nodes > 1:
                raise ValueError(
                    f"start_method={self.start_method!r} launches processes on one machine only, got"
                    f" num_nodes={self.num_nodes}; launch multi-node runs with torchrun or srun"
                )
            self._launcher = CleanExitMultiProcessingLauncher(self, start_method=self.start_method)  # type: ignore[arg-type]

    def _check_backend(self) -> None:
        device_type = self.parallel_devices[0].type if self.parallel_devices else "cpu"
        backend = self._process_group_backend
        if backend == "nccl" and device_type != "cuda":
            raise ValueError(
                f"process_group_backend='nccl' needs CUDA devices, but the accelerator gives {device_type!r}"
                " devices; use process_group_backend='gloo' or accelerator='gpu'"
            )

    @override
    def setup_environment(self) -> None:
        self._setup_distributed()
        dp, cp = self.mesh_sizes(self.world_size)
        self._device_mesh = init_device_mesh(
            self.root_device.type, (dp, cp), mesh_dim_names=("data_parallel", "context_parallel")
        )
        assert self.lightning_module is not None
        self.lightning_module._device_mesh = self._device_mesh
        self._cp_size = cp
        self._cp_rank = self._device_mesh.get_local_rank("context_parallel")
        self._cp_group = self._device_mesh.get_group("context_parallel") if cp > 1 else None

    # ------------------------------------------------------------------ model
    @override
    def setup(self, trainer: pl.Trainer) -> None:
        assert self.model is not None
        assert self.accelerator is not None
        self.accelerator.setup(trainer)
        route_attention(
            self.model,
            self._cp_group,
            self._cp_size,
            attention=self.attention,
            stage_heads=self.stage_heads,
            layout=self.layout,
        )
        if self.tiled_mlp is not None:
            tile_block_mlps(self.model, self.tiled_mlp, seq_dim=self.seq_dim)
        if self.activation_checkpointing:
            checkpoint_blocks(self.model, offload=self.offload_activations)
        _materialize_distributed_module(self.model, self.root_device)
        self.model = self.precision_plugin.convert_module(self.model)
        self.model_to_device()
        self._broadcast_module_state(self.model)
        self.barrier()
        if self.shard_parameters:
            assert self._device_mesh is not None
            shard_data_parallel(self.model, self._device_mesh["data_parallel"])
        if trainer.state.fn == TrainerFn.FITTING:
            self.setup_optimizers(trainer)
        self.setup_precision_plugin()
        if trainer.state.fn == TrainerFn.FITTING:
            _optimizers_to_device(self.optimizers, self.root_device)

    def _broadcast_module_state(self, module: nn.Module) -> None:
        """Copy parameters and buffers of global rank zero to every rank (a flat broadcast per dtype)."""
        broadcast_tensors([*module.parameters(), *module.buffers()], src=0)

    def reduce_gradients(self) -> None:
        """Average the gradients over the whole data x context mesh (one all-reduce per dtype).

        Sharded parameters: FSDP has averaged them over the data-parallel axis; they are averaged over the
        context-parallel ranks here.
        """
        assert self.model is not None
        if self.shard_parameters:
            average_over_context(self.model, self._cp_group, self._cp_size)
            return
        all_reduce_mean([p.grad for p in self.model.parameters() if p.grad is not None])

    # ------------------------------------------------------------------ data and loss
    @override
    def batch_to_device(self, batch: Any, device: torch.device | None = None, dataloader_idx: int = 0) -> Any:
        batch = super().batch_to_device(batch, device, dataloader_idx)
        batch = self.shard_batch(batch)
        self._loss_scale = self._token_scale(batch)
        return batch

    def shard_batch(self, batch: Any) -> Any:
        """This rank's shard of a full-sequence batch (the ``shard_keys`` entries along ``seq_dim``).

        See :func:`lightning_icml26.distributed.shard_batch`, called with this strategy's settings and its
        context-parallel rank and size.

        Raises:
            ValueError: if no entry of ``shard_keys`` is a tensor in the batch, or a sequence length does not
                split over the context-parallel ranks.
        """
        return shard_batch(
            batch,
            self.shard_keys,
            rank=self._cp_rank,
            size=self._cp_size,
            layout=self.layout,
            seq_dim=self.seq_dim,
            add_position_ids=self.add_position_ids,
        )

    def _token_scale(self, batch: Any) -> float | None:
        labels = None if self.label_key is None else _lookup(batch, self.label_key)
        return token_share_scale(labels, self.ignore_index) if isinstance(labels, Tensor) else None

    @override
    def training_step(self, *args: Any, **kwargs: Any) -> Any:
        output = super().training_step(*args, **kwargs)
        scale = self._loss_scale
        if scale is None or scale == 1.0:
            return output
        if isinstance(output, Tensor):
            return output * scale
        if isinstance(output, Mapping) and isinstance(output.get("loss"), Tensor):
            return {**output, "loss": output["loss"] * scale}
        return output

    @override
    def optimizer_step(self, optimizer: Optimizer, closure: Callable[[], Any], model: Any = None, **kwargs: Any) -> Any:
        def closure_then_reduce() -> Any:
            result = closure()
            self.reduce_gradients()
            return result

        return super().optimizer_step(optimizer, closure_then_reduce, model, **kwargs)

    # ------------------------------------------------------------------ checkpoints (_fsdp.FullStateCheckpoints)
    @property
    @override
    def restore_checkpoint_after_setup(self) -> bool:
        return self._save_distributed_checkpoint  # shards load into the sharded model and its optimizers

    @property
    @override
    def lightning_restore_optimizer(self) -> bool:
        return not self._save_distributed_checkpoint  # distributed: loaded with the shards in load_checkpoint

    @classmethod
    def register_strategies(cls, strategy_registry: Any = None) -> None:
        """Register ``"upipe"``, ``"ulysses"`` and ``"ring_attention"`` (idempotent).

        Example:
            >>> from lightning.pytorch.strategies import StrategyRegistry
            >>> UPipeStrategy.register_strategies()
            >>> "upipe" in StrategyRegistry
            True
        """
        registry = StrategyRegistry if strategy_registry is None else strategy_registry
        for name, attention, description in (
            ("upipe", "upipe", "context parallelism with UPipe head-chunked attention"),
            ("ulysses", "ulysses", "context parallelism with Ulysses all-to-all attention"),
            ("ring_attention", "ring", "context parallelism with ring attention"),
        ):
            if name not in registry:
                registry.register(name, cls, description=description, attention=attention)


def _lookup(batch: Any, key: str | int) -> Any:
    if isinstance(batch, Mapping):
        return batch.get(key)
    if isinstance(batch, list | tuple) and isinstance(key, int) and -len(batch) <= key < len(batch):
        return batch[key]
    return None
