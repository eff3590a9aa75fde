"""``ISAAttention`` (in-context sparse attention with its optional learned gate) and its dense twin as modules."""

from __future__ import annotations

import torch.nn.functional as F
from torch import Tensor, nn

from lightning_icml26.ops.attention.isa.functional import (
    ISA_BACKENDS,
    ISA_ROUTINGS,
    check_fraction,
    check_same_qkv,
    isa_attention,
)

__all__ = ["ISAAttention", "SDPAAttention"]


class ISAAttention(nn.Module):
    """ISA as a module: the ratios as attributes, plus the optional learned gate on the coarse path.

    The gate is ``α(x) = 0.5 · (sigmoid(W x + c) − 0.5)``, one scalar per token (``gate_heads=1``) or per
    token and head, from the hidden states ``x`` given to :meth:`forward`. ``W`` and ``c`` start at zero, so
    ``α = 0`` and a freshly built module adds nothing to the sparse output: fine-tuning learns the gate.

    Args:
        block_size: tokens per block.
        context_keep: share of context blocks kept.
        full_fraction: share of query blocks on exact attention.
        exact_block_fraction: share of kept key blocks attended exactly on the Taylor path.
        sharpness_fraction: share of target key blocks in the sharpness score.
        gate_dim: width of the hidden states feeding the gate; ``None`` for no gate (and no coarse path).
        gate_heads: outputs of the gate (1, or the number of heads).
        routing: see :func:`isa_attention`.
        backend: see :func:`isa_attention`.

    Example:
        >>> import torch
        >>> attn = ISAAttention(block_size=8, gate_dim=16)
        >>> q, k, v = torch.randn(3, 1, 40, 2, 8).unbind(0)
        >>> attn(q, k, v, target_len=24, x=torch.randn(1, 40, 16)).shape
        torch.Size([1, 40, 2, 8])
    """

    def __init__(
        self,
        block_size: int = 64,
        context_keep: float = 0.125,
        full_fraction: float = 0.5,
        exact_block_fraction: float = 0.0625,
        sharpness_fraction: float = 0.0625,
        gate_dim: int | None = None,
        gate_heads: int = 1,
        routing: str = "sharpness",
        backend: str = "torch",
    ) -> None:
        super().__init__()
        for name, value in (
            ("context_keep", context_keep),
            ("full_fraction", full_fraction),
            ("exact_block_fraction", exact_block_fraction),
            ("sharpness_fraction", sharpness_fraction),
        ):
            check_fraction(name, value)
        if isinstance(block_size, bool) or not isinstance(block_size, int) or block_size < 1:
            raise ValueError(f"block_size must be a positive integer, got {block_size!r}")
        if routing not in ISA_ROUTINGS:
            raise ValueError(f"routing must be one of {ISA_ROUTINGS}, got {routing!r}")
        if backend not in ISA_BACKENDS:
            raise ValueError(f"backend must be one of {ISA_BACKENDS}, got {backend!r}")
        if gate_dim is not None and (isinstance(gate_dim, bool) or not isinstance(gate_dim, int) or gate_dim < 1):
            raise ValueError(f"gate_dim must be a positive integer or None, got {gate_dim!r}")
        if isinstance(gate_heads, bool) or not isinstance(gate_heads, int) or gate_heads < 1:
            raise ValueError(f"gate_heads must be a positive integer, got {gate_heads!r}")
        self.block_size, self.context_keep, self.full_fraction = block_size, context_keep, full_fraction
        self.exact_block_fraction, self.sharpness_fraction = exact_block_fraction, sharpness_fraction
        self.routing, self.backend = routing, backend
        self.gate: nn.Linear | None = None
        if gate_dim is not None:
            self.gate = nn.Linear(gate_dim, gate_heads)
            nn.init.zeros_(self.gate.weight)
            nn.init.zeros_(self.gate.bias)

    def forward(
        self, q: Tensor, k: Tensor, v: Tensor, target_len: int, x: Tensor | None = None, scale: float | None = None
    ) -> Tensor:
        """Attend; ``x`` ``(batch, seq, gate_dim)`` feeds the gate and is required when the module has one."""
        gate_logits = None
        if self.gate is not None:
            if x is None:
                raise ValueError("x (the hidden states feeding the gate) is required when gate_dim is set, got None")
            gate_logits = self.gate(x)
        return isa_attention(
            q, k, v, target_len,
            block_size=self.block_size, context_keep=self.context_keep, full_fraction=self.full_fraction,
            exact_block_fraction=self.exact_block_fraction, sharpness_fraction=self.sharpness_fraction,
            gate_logits=gate_logits, scale=scale, routing=self.routing, backend=self.backend,
        )  # fmt: skip


class SDPAAttention(nn.Module):
    """Dense attention with :class:`ISAAttention`'s call signature, so the two swap for each other.

    ``target_len`` and ``x`` are accepted and ignored: dense attention needs neither.

    Example:
        >>> import torch
        >>> q, k, v = torch.randn(3, 1, 40, 2, 8).unbind(0)
        >>> dense, sparse = SDPAAttention(), ISAAttention(block_size=8, context_keep=1, full_fraction=1)
        >>> torch.allclose(dense(q, k, v, 24), sparse(q, k, v, 24), atol=1e-5)
        True
    """

    def forward(
        self, q: Tensor, k: Tensor, v: Tensor, target_len: int | None = None, x: Tensor | None = None,
        scale: float | None = None,
    ) -> Tensor:  # fmt: skip
        """``(batch, seq, heads, head_dim)`` q, k, v -> softmax attention over the whole sequence."""
        check_same_qkv(q, k, v)
        out = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), scale=scale)
        return out.transpose(1, 2)
