"""Checks of :class:`~lightning_icml26.strategies.UPipeStrategy`'s constructor arguments."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from lightning_icml26.ops.attention.context_parallel.routing import ATTENTION_CHOICES

__all__ = ["DEFAULT_LAYOUT", "START_METHODS", "check_arguments"]

DEFAULT_LAYOUT = {"upipe": "contiguous", "ulysses": "contiguous", "ring": "headtail", "dense": "contiguous"}
START_METHODS = ("popen", "spawn", "fork", "forkserver")


def check_arguments(
    *,
    attention: str,
    context_parallel_size: Any,
    data_parallel_size: Any,
    stage_heads: Any,
    layout: str | None,
    shard_keys: Sequence[str | int],
    start_method: str,
    process_group_backend: str | None,
    shard_parameters: Any,
    activation_checkpointing: Any,
    save_distributed_checkpoint: Any,
    tiled_mlp: Any = None,
    offload_activations: Any = False,
) -> str:
    """Raise ``ValueError`` naming the first bad argument; return the sequence layout (default resolved).

    Example:
        >>> check_arguments(
        ...     attention="ring", context_parallel_size="auto", data_parallel_size=2, stage_heads=None, layout=None,
        ...     shard_keys=("input_ids",), start_method="spawn", process_group_backend=None, shard_parameters=False,
        ...     activation_checkpointing=True, save_distributed_checkpoint=False,
        ... )
        'headtail'
    """
    if attention not in ATTENTION_CHOICES:
        raise ValueError(f"attention={attention!r} is not supported; choose one of {ATTENTION_CHOICES}")
    for name, size in (
        ("context_parallel_size", context_parallel_size),
        ("data_parallel_size", data_parallel_size),
    ):
        if size != "auto" and (not isinstance(size, int) or isinstance(size, bool) or size < 1):
            raise ValueError(f"{name} must be 'auto' or a positive int, got {size!r}")
    if stage_heads is not None and (not isinstance(stage_heads, int) or stage_heads < 1):
        raise ValueError(f"stage_heads must be None or a positive int, got {stage_heads!r}")
    if stage_heads is not None and attention != "upipe":
        raise ValueError(f"stage_heads={stage_heads} only applies to attention='upipe', got {attention!r}")
    layout = layout if layout is not None else DEFAULT_LAYOUT[attention]
    if layout not in ("contiguous", "headtail"):
        raise ValueError(f"layout={layout!r} is not supported; choose 'contiguous' or 'headtail'")
    if isinstance(shard_keys, str | int) or not shard_keys:
        raise ValueError(f"shard_keys must be a non-empty sequence of keys, got {shard_keys!r}")
    if "attention_mask" in shard_keys:
        raise ValueError("shard_keys must not hold 'attention_mask': only causal attention is supported")
    if start_method not in START_METHODS:
        raise ValueError(f"start_method={start_method!r} is not supported; choose one of {START_METHODS}")
    if process_group_backend not in (None, "gloo", "nccl"):
        raise ValueError(f"process_group_backend must be None, 'gloo' or 'nccl', got {process_group_backend!r}")
    for flag, value in (
        ("shard_parameters", shard_parameters),
        ("activation_checkpointing", activation_checkpointing),
        ("save_distributed_checkpoint", save_distributed_checkpoint),
        ("offload_activations", offload_activations),
    ):
        if not isinstance(value, bool):
            raise ValueError(f"{flag} must be True or False, got {value!r}")
    if save_distributed_checkpoint and not shard_parameters:
        raise ValueError(
            "save_distributed_checkpoint=True needs shard_parameters=True (replicated parameters are saved"
            " as one full file)"
        )
    _check_memory_options(tiled_mlp, offload_activations, activation_checkpointing)
    return layout


def _check_memory_options(tiled_mlp: Any, offload_activations: Any, activation_checkpointing: Any) -> None:
    if tiled_mlp is not None and (not isinstance(tiled_mlp, int) or isinstance(tiled_mlp, bool) or tiled_mlp < 1):
        raise ValueError(f"tiled_mlp must be None or a positive int (tiles per MLP call), got {tiled_mlp!r}")
    if offload_activations and not activation_checkpointing:
        raise ValueError(
            "offload_activations=True offloads the inputs kept by checkpointed blocks and needs"
            " activation_checkpointing=True"
        )


def as_timeout(timeout: object) -> timedelta | None:
    """A collective timeout as a ``timedelta``: seconds (``int``/``float``) or a ``timedelta``; ``None`` stays.

    Raises:
        TypeError: for any other type.
        ValueError: for a timeout that is not positive.

    Example:
        >>> as_timeout(60)
        datetime.timedelta(seconds=60)
        >>> as_timeout(-1)
        Traceback (most recent call last):
        ...
        ValueError: timeout=-1 must be positive (seconds or a timedelta)
    """
    if timeout is None or isinstance(timeout, timedelta):
        value = timeout
    elif isinstance(timeout, int | float) and not isinstance(timeout, bool):
        value = timedelta(seconds=float(timeout))
    else:
        raise TypeError(f"timeout={timeout!r} must be seconds (int or float) or a datetime.timedelta")
    if value is not None and value.total_seconds() <= 0:
        raise ValueError(f"timeout={timeout!r} must be positive (seconds or a timedelta)")
    return value
