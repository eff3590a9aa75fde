"""Route a model's attention through the context-parallel attention functions, without editing the model.

:func:`route_attention` handles the project's :class:`~lightning_icml26.ops.attention.UPipeAttention` modules
(``set_context_parallel``) and Hugging Face transformers models. For the latter, transformers (>= 4.48) looks
the attention function of a model up by name in its ``AttentionInterface`` registry
(``config._attn_implementation``): :func:`register_hf_attention` registers one function per backend under the
names ``"icml26_upipe"``, ``"icml26_ulysses"``, ``"icml26_ring"`` and ``"icml26_dense"`` and
:func:`route_hf_model` switches a model to one of them with ``model.set_attn_implementation``. The
context-parallel group travels on each attention module (attribute ``_icml26_context_parallel``), so no global
state holds a process group and two models can use two groups. No mask function is registered for these names,
so transformers passes ``attention_mask=None`` and the functions apply the causal mask on global positions
themselves.

For ``"upipe"``, Llama-style layers (linear q/k/v projections with or without bias, as in Llama and Qwen2; no
per-head norm) also get the fused forward of
:mod:`~lightning_icml26.ops.attention.context_parallel.upipe_hf`: projection, rotary embedding, all-to-all and
attention per stage of a few heads, so the full q/k/v never exist. Other layers (Qwen3's q/k norms) run UPipe on
the pre-projected q/k/v through the ``AttentionInterface`` function, with a warning.
Routing sets ``config.use_cache = False``: a KV cache would hold every layer's full keys and values.

transformers is optional (the ``hf`` extra) and imported only when a transformers model is routed.
"""

from __future__ import annotations

import sys
import warnings
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from lightning_icml26._optional import require
from lightning_icml26.ops.attention.context_parallel.module import UPipeAttention, get_attention_backend
from lightning_icml26.ops.attention.context_parallel.upipe_hf import (
    ROUTING_ATTR,
    fused_unsupported_reason,
    install_fused_forward,
    remove_fused_forward,
)

__all__ = [
    "ATTENTION_CHOICES",
    "HF_ATTENTION_NAMES",
    "ContextParallelAttentionConfig",
    "check_heads",
    "register_hf_attention",
    "route_attention",
    "route_hf_model",
]

ATTENTION_CHOICES: tuple[str, ...] = ("upipe", "ulysses", "ring", "dense")

HF_ATTENTION_NAMES: dict[str, str] = {
    "upipe": "icml26_upipe",
    "ulysses": "icml26_ulysses",
    "ring": "icml26_ring",
    "dense": "icml26_dense",
}
_ATTR = ROUTING_ATTR


@dataclass
class ContextParallelAttentionConfig:
    """What an attention module routed by :func:`route_hf_model` runs: backend, group, layout, UPipe stages.

    Example:
        >>> ContextParallelAttentionConfig("ulysses", None).layout
        'contiguous'
    """

    backend: str
    cp: Any
    layout: str = "contiguous"
    stage_heads: int | None = None


def _context_parallel_attention(
    module: nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    dropout: float = 0.0,
    scaling: float | None = None,
    is_causal: bool | None = None,
    **kwargs: Any,
) -> tuple[torch.Tensor, None]:
    """The ``AttentionInterface`` function: (B, H, S_local, D) inputs, (B, S_local, H, D) output."""
    config: ContextParallelAttentionConfig | None = getattr(module, _ATTR, None)
    if config is None:
        raise RuntimeError(
            f"{type(module).__name__} uses a lightning_icml26 context-parallel attention but was not routed;"
            " train it under UPipeStrategy or call route_hf_model first"
        )
    if attention_mask is not None:
        raise ValueError("context-parallel attention supports causal attention only; got an attention_mask")
    if dropout:
        raise ValueError(f"context-parallel attention does not support attention dropout, got dropout={dropout}")
    if kwargs.get("sliding_window") is not None:
        raise ValueError("context-parallel attention does not support sliding-window attention")
    causal = bool(is_causal if is_causal is not None else getattr(module, "is_causal", True))
    fn = get_attention_backend(config.backend)
    extra: dict[str, Any] = {"stage_heads": config.stage_heads} if config.backend == "upipe" else {}
    out = fn(
        query.transpose(1, 2),
        key.transpose(1, 2),
        value.transpose(1, 2),
        cp=config.cp,
        causal=causal,
        scale=scaling,
        layout=config.layout,
        **extra,
    )
    return out, None


def register_hf_attention() -> None:
    """Register the project's context-parallel functions in transformers' ``AttentionInterface`` (idempotent).

    Example:
        >>> register_hf_attention()
        >>> from transformers import AttentionInterface
        >>> "icml26_upipe" in AttentionInterface._global_mapping
        True
    """
    transformers = require("transformers", extra="hf", purpose="routing transformers attention")
    interface = transformers.AttentionInterface
    for name in HF_ATTENTION_NAMES.values():
        if interface._global_mapping.get(name) is not _context_parallel_attention:
            interface.register(name, _context_parallel_attention)


def _hf_models(model: nn.Module) -> list[nn.Module]:
    """The outermost transformers ``PreTrainedModel`` sub-modules of ``model``."""
    if "transformers" not in sys.modules:  # no transformers model can exist without the package imported
        return []
    # transformers is optional (the ``hf`` extra); it is already imported here, so this costs nothing.
    PreTrainedModel = require("transformers", extra="hf", purpose="routing transformers attention").PreTrainedModel

    found: list[nn.Module] = []
    inner: set[int] = set()
    for module in model.modules():
        if id(module) in inner or not isinstance(module, PreTrainedModel):
            continue
        found.append(module)
        inner.update(id(m) for m in module.modules())
    return found


def route_hf_model(
    model: nn.Module,
    cp: Any,
    cp_size: int,
    attention: str = "upipe",
    stage_heads: int | None = None,
    layout: str = "contiguous",
) -> int:
    """Switch every transformers model inside ``model`` to a context-parallel attention; return the layer count.

    Args:
        model: any module holding transformers models (or one itself).
        cp: the context-parallel ``ProcessGroup`` (``None``: single process).
        cp_size: its size (used for the head checks).
        attention: ``"upipe"``, ``"ulysses"``, ``"ring"`` or ``"dense"``.
        stage_heads: UPipe heads per stage.
        layout: sequence layout of the shards.

    Returns:
        The number of attention layers routed (0 when ``model`` holds no transformers model).

    Raises:
        ValueError: for an unknown ``attention``, a model whose attention layers cannot be found, or head
            counts that do not split over ``cp_size`` ranks.

    Example:
        >>> route_hf_model(nn.Linear(2, 2), None, 1)
        0
    """
    if attention not in HF_ATTENTION_NAMES:
        raise ValueError(f"attention={attention!r} is not supported; choose one of {tuple(HF_ATTENTION_NAMES)}")
    routed = 0
    hf_model: Any
    for hf_model in _hf_models(model):
        config = hf_model.config
        num_heads: Any = getattr(config, "num_attention_heads", None)
        num_kv_heads: Any = getattr(config, "num_key_value_heads", None) or num_heads
        layers = [m for m in hf_model.modules() if hasattr(m, "layer_idx") and hasattr(m, "scaling")]
        if num_heads is None or not layers:
            raise ValueError(
                f"cannot route the attention of {type(hf_model).__name__}: it has no num_attention_heads in its config"
                " or no attention layer with 'layer_idx' and 'scaling' (Llama/Qwen-style models are supported)"
            )
        if getattr(config, "sliding_window", None) and getattr(config, "use_sliding_window", True):
            raise ValueError(
                f"{type(hf_model).__name__} uses sliding-window attention, which context-parallel attention does not"
                " support; set config.sliding_window=None"
            )
        check_heads(int(num_heads), int(num_kv_heads), cp_size, attention, stage_heads, where=type(hf_model).__name__)
        register_hf_attention()
        hf_model.set_attn_implementation(HF_ATTENTION_NAMES[attention])
        routing = ContextParallelAttentionConfig(attention, cp, layout, stage_heads)
        config.use_cache = False  # a KV cache would keep every layer's full k/v; training never reads it
        unfused: set[str] = set()
        for layer in layers:
            setattr(layer, _ATTR, routing)
            remove_fused_forward(layer)
            reason = fused_unsupported_reason(layer) if attention == "upipe" else "not upipe"
            if reason is None:
                install_fused_forward(layer, int(num_heads), int(num_kv_heads))
            elif attention == "upipe":
                unfused.add(f"{type(layer).__name__}: {reason}")
        if unfused:
            warnings.warn(
                f"{type(hf_model).__name__}: UPipe runs on pre-projected q/k/v (the full q/k/v stay alive for"
                f" backward) instead of the fused operator because {'; '.join(sorted(unfused))}",
                stacklevel=2,
            )
        routed += len(layers)
    return routed


def route_attention(
    model: nn.Module,
    cp: Any,
    cp_size: int,
    attention: str = "upipe",
    stage_heads: int | None = None,
    layout: str = "contiguous",
) -> int:
    """Route every attention layer of ``model`` through a context-parallel function; return how many.

    Handles :class:`lightning_icml26.ops.attention.UPipeAttention` modules (``set_context_parallel``) and
    transformers models (switched to the project's ``AttentionInterface`` function, see
    :func:`route_hf_model`). Head counts are checked here, on every
    rank, before any collective runs.

    Args:
        model: any module (a LightningModule, a network, a transformers model).
        cp: the context-parallel ``ProcessGroup`` (``None`` for a single process).
        cp_size: its size.
        attention: one of :data:`ATTENTION_CHOICES`.
        stage_heads: UPipe heads per stage (``None``: ``cp_size``).
        layout: sequence layout of the shards.

    Returns:
        The number of attention layers routed.

    Raises:
        ValueError: if the model has no attention layer that can be routed, or head counts do not split.

    Example:
        >>> route_attention(nn.Linear(2, 2), None, 1)
        Traceback (most recent call last):
        ...
        ValueError: found no attention layer to route in Linear: ...
    """
    routed = 0
    for name, module in model.named_modules():
        if isinstance(module, UPipeAttention):
            check_heads(module.num_heads, module.num_kv_heads, cp_size, attention, stage_heads, where=name or "model")
            module.set_context_parallel(cp, backend=attention, stage_heads=stage_heads, layout=layout)
            routed += 1
    routed += route_hf_model(model, cp, cp_size, attention, stage_heads, layout)
    if routed == 0:
        raise ValueError(
            f"found no attention layer to route in {type(model).__name__}: the strategy routes"
            " lightning_icml26.ops.attention.UPipeAttention modules and transformers models (Llama, Qwen, ... with"
            " an AttentionInterface); use one of them in the LightningModule"
        )
    return routed


def check_heads(
    num_heads: int, num_kv_heads: int, cp_size: int, attention: str, stage_heads: int | None, where: str = "model"
) -> None:
    """Raise ``ValueError`` if the head counts cannot be split over ``cp_size`` ranks by ``attention``.

    Ulysses and UPipe scatter heads: ``num_heads`` must be divisible by ``cp_size``, and ``num_kv_heads``
    divisible by it or dividing it (KV heads are then replicated). UPipe stages of ``stage_heads`` heads need
    ``stage_heads`` to be a multiple of ``cp_size`` that divides ``num_heads``. Ring and dense attention split the
    sequence only.

    Example:
        >>> check_heads(8, 2, 4, "ulysses", None)
        >>> check_heads(6, 6, 4, "upipe", None, where="layers.0")
        Traceback (most recent call last):
        ...
        ValueError: layers.0: num_attention_heads=6 is not divisible by context_parallel_size=4 ...
    """
    if num_heads % num_kv_heads != 0:
        raise ValueError(f"{where}: num_attention_heads={num_heads} is not divisible by num_kv_heads={num_kv_heads}")
    if attention not in ("ulysses", "upipe") or cp_size == 1:
        return
    if num_heads % cp_size != 0:
        raise ValueError(
            f"{where}: num_attention_heads={num_heads} is not divisible by context_parallel_size={cp_size}"
            f" ({attention!r} attention scatters heads over the context-parallel ranks); choose a divisor of"
            " the head count or attention='ring'"
        )
    if num_kv_heads % cp_size != 0 and cp_size % num_kv_heads != 0:
        raise ValueError(
            f"{where}: num_key_value_heads={num_kv_heads} and context_parallel_size={cp_size} must divide one"
            " another (KV heads are scattered or replicated); use attention='ring' otherwise"
        )
    if attention == "upipe" and stage_heads is not None and (stage_heads % cp_size != 0 or num_heads % stage_heads):
        raise ValueError(
            f"{where}: stage_heads={stage_heads} must be a multiple of context_parallel_size={cp_size} that divides"
            f" num_attention_heads={num_heads}"
        )
