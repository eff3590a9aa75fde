"""The fused UPipe operator inside transformers attention layers (Llama-style q/k/v/o projections).

transformers' ``AttentionInterface`` hands an attention function q/k/v that the layer has already projected
and rotated, so a function registered there can only run UPipe on pre-projected tensors, which keeps the full
q/k/v of every layer alive for backward. :func:`install_fused_forward` instead gives a Llama-style attention
layer an instance-level ``forward`` (:class:`FusedHFAttentionForward`) that passes the layer input and the
q/k/v projection weights to :func:`~lightning_icml26.ops.attention.context_parallel.upipe_fused.upipe_attention`
(projection, rotary embedding, all-to-all and attention per stage of a few heads, recomputed per stage in backward) and
applies the layer's ``o_proj`` to the result. The module keeps its class, parameters and state-dict keys.

A layer qualifies when its ``q_proj``/``k_proj``/``v_proj``/``o_proj`` are ``nn.Linear`` (with or without
bias: Llama, Mistral, Qwen2) and it has no per-head normalisation (``q_norm``/``k_norm``, as in Qwen3);
:func:`fused_unsupported_reason` says why a layer does not. A call that passes a KV cache (incremental decoding)
runs the layer's own forward, which goes through the ``AttentionInterface`` function.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from lightning_icml26.ops.attention.context_parallel.upipe_fused import upipe_attention

__all__ = ["FusedHFAttentionForward", "fused_unsupported_reason", "install_fused_forward", "remove_fused_forward"]

ROUTING_ATTR = "_icml26_context_parallel"


def fused_unsupported_reason(layer: nn.Module) -> str | None:
    """Why ``layer`` cannot run the fused UPipe operator, or ``None`` when it can.

    Example:
        >>> fused_unsupported_reason(nn.Linear(2, 2))
        'it has no q_proj'
    """
    for name in ("q_proj", "k_proj", "v_proj", "o_proj"):
        proj = getattr(layer, name, None)
        if not isinstance(proj, nn.Linear):
            return f"it has no {name}" if proj is None else f"its {name} is a {type(proj).__name__}, not nn.Linear"
    for name in ("q_norm", "k_norm"):
        if getattr(layer, name, None) is not None:
            return f"it normalises heads ({name}) before the rotary embedding"
    if not isinstance(getattr(layer, "head_dim", None), int):
        return "it has no integer head_dim"
    return None


class FusedHFAttentionForward:
    """Instance-level ``forward`` of a routed transformers attention layer running the fused UPipe operator.

    Takes the same arguments as a Llama attention layer's ``forward`` (``hidden_states``,
    ``position_embeddings``, ``attention_mask``, ``cache``/``past_key_values``, ...) and returns
    ``(output, None)``. It holds the layer (a reference cycle that ``copy.deepcopy`` and ``pickle`` handle).

    Args:
        layer: the attention module (a ``LlamaAttention`` or alike, see :func:`fused_unsupported_reason`).
        num_heads: query heads ``H``.
        num_kv_heads: KV heads ``G``.
    """

    def __init__(self, layer: nn.Module, num_heads: int, num_kv_heads: int) -> None:
        self.layer, self.num_heads, self.num_kv_heads = layer, num_heads, num_kv_heads

    def __call__(self, *args: Any, **kwargs: Any) -> tuple[torch.Tensor, None]:
        """Run the layer: the fused operator, then ``o_proj``; with a KV cache, the layer's own forward."""
        layer: Any = self.layer
        if kwargs.get("cache") is not None or kwargs.get("past_key_values") is not None:
            return type(layer).forward(layer, *args, **kwargs)
        config = getattr(layer, ROUTING_ATTR, None)
        if config is None or config.backend != "upipe":
            raise RuntimeError(f"{type(layer).__name__} carries the fused UPipe forward but is not routed to 'upipe'")
        names = ("hidden_states", "position_embeddings", "attention_mask")
        bound = dict(zip(names, args, strict=False)) | {k: kwargs.pop(k) for k in names if k in kwargs}
        hidden_states: torch.Tensor = bound["hidden_states"]
        if bound.get("attention_mask") is not None:
            raise ValueError("context-parallel attention supports causal attention only; got an attention_mask")
        dropout = getattr(layer, "attention_dropout", 0.0) if layer.training else 0.0
        if dropout:
            raise ValueError(f"context-parallel attention does not support attention dropout, got dropout={dropout}")
        if kwargs.get("sliding_window") is not None:
            raise ValueError("context-parallel attention does not support sliding-window attention")
        rotary = bound.get("position_embeddings")
        if rotary is not None:
            rotary = (rotary[0], rotary[1])
        b, s, _ = hidden_states.shape
        out = upipe_attention(
            hidden_states,
            layer.q_proj.weight,
            layer.k_proj.weight,
            layer.v_proj.weight,
            num_heads=self.num_heads,
            num_kv_heads=self.num_kv_heads,
            cp=config.cp,
            causal=bool(getattr(layer, "is_causal", True)),
            scale=float(layer.scaling),
            layout=config.layout,
            rotary=rotary,
            stage_heads=config.stage_heads,
            bias=(layer.q_proj.bias, layer.k_proj.bias, layer.v_proj.bias),
        )
        return layer.o_proj(out.reshape(b, s, -1)), None


def install_fused_forward(layer: nn.Module, num_heads: int, num_kv_heads: int) -> None:
    """Give ``layer`` the fused UPipe forward (an instance attribute; the class is untouched).

    Raises:
        ValueError: if ``layer`` does not qualify (the message says why).

    Example:
        >>> install_fused_forward(nn.Linear(2, 2), 2, 2)
        Traceback (most recent call last):
        ...
        ValueError: Linear cannot run the fused UPipe operator: it has no q_proj
    """
    reason = fused_unsupported_reason(layer)
    if reason is not None:
        raise ValueError(f"{type(layer).__name__} cannot run the fused UPipe operator: {reason}")
    layer.forward = FusedHFAttentionForward(layer, num_heads, num_kv_heads)  # type: ignore[method-assign]


def remove_fused_forward(layer: nn.Module) -> None:
    """Undo :func:`install_fused_forward` (no-op when it was not installed)."""
    if isinstance(layer.__dict__.get("forward"), FusedHFAttentionForward):
        del layer.__dict__["forward"]
