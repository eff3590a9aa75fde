"""The transformer blocks of a model, and per-block activation checkpointing.

:func:`transformer_blocks` finds the units that :class:`~lightning_icml26.strategies.UPipeStrategy` shards with
FSDP2 and checkpoints: the entries of every outermost ``nn.ModuleList`` below the model (the decoder layers of
transformers models, ``model.layers``; the ``blocks`` of the project's models); an entry that is a container
without ``forward`` (an ``nn.ModuleDict`` whose parent calls its children) is replaced by its parameter-holding
children.

:func:`checkpoint_blocks` gives each such block an instance-level ``forward``
(:class:`CheckpointedForward`) that runs the block's own forward under
``torch.utils.checkpoint.checkpoint(..., use_reentrant=False)``: the block keeps only its inputs for backward
and recomputes its activations (the UPipe stage loop and its all-to-alls included) when the gradient reaches it.
The class, parameters and state-dict keys of the block are unchanged, so checkpoints, FSDP2 ``fully_shard``
(applied afterwards, around the checkpointed forward, as torchtitan nests them) and the strategy's attention
routing all see the same module. With ``offload=True`` the checkpointed call runs under
``torch.autograd.graph.save_on_cpu``: what the checkpoint keeps (the block's inputs) is copied to host memory in
forward and back to the device in backward (pinned host memory when CUDA is available). On CPU the copy is the
tensor itself, so results and memory are unchanged; the option only saves device memory on an accelerator.

:func:`tile_block_mlps` gives the ``mlp`` submodule of each block an instance-level forward
(:class:`~lightning_icml26.ops.tiled_mlp.TiledForward`) that runs it tile by tile along the sequence, keeping only
its input for backward (ALST's tiled MLP); class, parameters and state-dict keys are again unchanged.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn
from torch.autograd.graph import save_on_cpu
from torch.utils.checkpoint import checkpoint

from lightning_icml26.ops.tiled_mlp import TiledForward

__all__ = ["CheckpointedForward", "checkpoint_blocks", "tile_block_mlps", "transformer_blocks"]


def _has_params(module: nn.Module) -> bool:
    return any(True for _ in module.parameters())


def _units(block: nn.Module) -> list[nn.Module]:
    """``block`` itself, or its parameter-holding children when it is a container without ``forward``."""
    if type(block).forward is not nn.Module.forward:
        return [block]
    return [unit for child in block.children() if _has_params(child) for unit in _units(child)]


def transformer_blocks(module: nn.Module) -> list[nn.Module]:
    """The parameter-holding units inside the outermost ``nn.ModuleList`` entries below ``module``.

    Example:
        >>> net = nn.Sequential(nn.Embedding(8, 4), nn.ModuleList([nn.Linear(4, 4), nn.Linear(4, 4)]))
        >>> [type(b).__name__ for b in transformer_blocks(net)]
        ['Linear', 'Linear']
    """
    found: list[nn.Module] = []
    for child in module.children():
        if isinstance(child, nn.ModuleList):
            found += [unit for block in child if _has_params(block) for unit in _units(block)]
        else:
            found += transformer_blocks(child)
    return found


class CheckpointedForward:
    """Instance-level ``forward`` running a module's own forward under non-reentrant activation checkpointing.

    Without gradients (evaluation, ``torch.no_grad``) the forward runs plainly. ``inner`` is kept so that
    :func:`checkpoint_blocks` does not wrap a block twice.

    Args:
        inner: the block's forward before wrapping (its bound method, or an instance-level forward set earlier).
        offload: keep the checkpoint's saved inputs in host memory (``save_on_cpu``).

    Example:
        >>> layer = nn.Linear(3, 3)
        >>> layer.forward = CheckpointedForward(layer.forward)
        >>> layer(torch.ones(2, 3, requires_grad=True)).shape
        torch.Size([2, 3])
    """

    def __init__(self, inner: Any, offload: bool = False) -> None:
        self.inner = inner
        self.offload = offload

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """The block's output; its activations are recomputed in backward."""
        if not torch.is_grad_enabled():
            return self.inner(*args, **kwargs)
        if self.offload:
            with save_on_cpu(pin_memory=torch.cuda.is_available()):
                return checkpoint(self.inner, *args, use_reentrant=False, **kwargs)
        return checkpoint(self.inner, *args, use_reentrant=False, **kwargs)


def checkpoint_blocks(module: nn.Module, argument: str = "activation_checkpointing", offload: bool = False) -> int:
    """Checkpoint every transformer block of ``module`` (see :func:`transformer_blocks`); return their number.

    Calling it again leaves already checkpointed blocks as they are.

    Args:
        module: the model (or the LightningModule holding it).
        argument: the option named in the error message.
        offload: offload the checkpoints' saved inputs to host memory (see :class:`CheckpointedForward`).

    Raises:
        ValueError: if ``module`` has no ``nn.ModuleList`` of blocks with parameters.

    Example:
        >>> net = nn.Sequential(nn.ModuleList([nn.Linear(4, 4)]))
        >>> checkpoint_blocks(net)
        1
        >>> checkpoint_blocks(nn.Linear(4, 4))
        Traceback (most recent call last):
        ...
        ValueError: activation_checkpointing=True needs the transformer blocks of the model in an nn.ModuleList (as \
transformers models hold them in `model.layers`); found none in Linear
    """
    blocks = _blocks_or_raise(module, f"{argument}=True")
    for block in blocks:
        if not isinstance(block.__dict__.get("forward"), CheckpointedForward):
            block.forward = CheckpointedForward(block.forward, offload=offload)  # type: ignore[method-assign]
    return len(blocks)


def _blocks_or_raise(module: nn.Module, option: str) -> list[nn.Module]:
    blocks = transformer_blocks(module)
    if not blocks:
        raise ValueError(
            f"{option} needs the transformer blocks of the model in an nn.ModuleList (as transformers"
            f" models hold them in `model.layers`); found none in {type(module).__name__}"
        )
    return blocks


def tile_block_mlps(module: nn.Module, num_tiles: int, seq_dim: int = 1, argument: str = "tiled_mlp") -> int:
    """Run the ``mlp`` of every transformer block tile by tile along the sequence; return the number of blocks.

    Calling it again leaves already tiled MLPs as they are.

    Args:
        module: the model (or the LightningModule holding it).
        num_tiles: sequence tiles per MLP call.
        seq_dim: the sequence dimension of the hidden states.
        argument: the option named in the error messages.

    Raises:
        ValueError: if ``module`` has no ``nn.ModuleList`` of blocks, or a block has no ``mlp`` submodule.

    Example:
        >>> class Block(nn.Module):
        ...     def __init__(self):
        ...         super().__init__()
        ...         self.mlp = nn.Sequential(nn.Linear(4, 8), nn.SiLU(), nn.Linear(8, 4))
        ...     def forward(self, h):
        ...         return h + self.mlp(h)
        >>> net = nn.Sequential(nn.ModuleList([Block(), Block()]))
        >>> tile_block_mlps(net, num_tiles=2)
        2
        >>> tile_block_mlps(nn.Sequential(nn.ModuleList([nn.Linear(4, 4)])), num_tiles=2)
        Traceback (most recent call last):
        ...
        ValueError: tiled_mlp=2 needs an `mlp` submodule in every transformer block (as Llama's decoder layers \
have); Linear has none
    """
    mlps = []
    for block in _blocks_or_raise(module, f"{argument}={num_tiles}"):
        mlp = getattr(block, "mlp", None)
        if not isinstance(mlp, nn.Module):
            raise ValueError(
                f"{argument}={num_tiles} needs an `mlp` submodule in every transformer block (as Llama's decoder"
                f" layers have); {type(block).__name__} has none"
            )
        mlps.append(mlp)
    for mlp in mlps:
        if not isinstance(mlp.__dict__.get("forward"), TiledForward):
            mlp.forward = TiledForward(mlp, num_tiles, seq_dim)  # type: ignore[method-assign]
    return len(mlps)
