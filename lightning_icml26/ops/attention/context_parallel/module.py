"""``UPipeAttention``: a Llama-style attention block whose attention runs on a chosen context-parallel backend."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from lightning_icml26.distributed import as_context_parallel_group, check_layout, shard_positions
from lightning_icml26.ops.attention.context_parallel._kernels import apply_rotary
from lightning_icml26.ops.attention.context_parallel.dense import dense_attention
from lightning_icml26.ops.attention.context_parallel.ring import ring_attention
from lightning_icml26.ops.attention.context_parallel.ulysses import ulysses_attention
from lightning_icml26.ops.attention.context_parallel.upipe import upipe_qkv_attention
from lightning_icml26.ops.attention.context_parallel.upipe_fused import upipe_attention

__all__ = ["ATTENTION_BACKENDS", "RotaryEmbedding", "UPipeAttention", "get_attention_backend"]

ATTENTION_BACKENDS: dict[str, Any] = {
    "dense": dense_attention,
    "ulysses": ulysses_attention,
    "ring": ring_attention,
    "upipe": upipe_qkv_attention,
}


def get_attention_backend(name: str) -> Any:
    """The attention function registered under ``name`` (all share the pre-projected q/k/v signature).

    Example:
        >>> get_attention_backend("ring").__name__
        'ring_attention'
    """
    if name not in ATTENTION_BACKENDS:
        raise ValueError(f"backend={name!r} is not supported; choose one of {sorted(ATTENTION_BACKENDS)}")
    return ATTENTION_BACKENDS[name]


class RotaryEmbedding(nn.Module):
    """Rotary position embedding tables in the Llama / HF convention.

    Args:
        head_dim: the head dimension (even).
        theta: the base of the inverse frequencies.

    Example:
        >>> cos, sin = RotaryEmbedding(8)(torch.arange(5))
        >>> cos.shape
        torch.Size([5, 8])
    """

    inv_freq: torch.Tensor

    def __init__(self, head_dim: int, theta: float = 10000.0) -> None:
        super().__init__()
        if head_dim % 2:
            raise ValueError(f"head_dim={head_dim} must be even for rotary embedding")
        if theta <= 0:
            raise ValueError(f"theta={theta} must be positive")
        inv_freq = 1.0 / (theta ** (torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim))
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    def forward(self, positions: torch.Tensor, dtype: torch.dtype = torch.float32) -> tuple[torch.Tensor, torch.Tensor]:
        """``(cos, sin)`` of shape ``positions.shape + (head_dim,)``."""
        freqs = positions.to(torch.float32).unsqueeze(-1) * self.inv_freq.to(positions.device)
        emb = torch.cat((freqs, freqs), dim=-1)
        return emb.cos().to(dtype), emb.sin().to(dtype)


class UPipeAttention(nn.Module):
    """Llama-style self-attention (q/k/v/o projections without bias, RoPE, GQA) with a pluggable CP backend.

    The module holds the weights; :meth:`set_context_parallel` attaches a context-parallel group and picks the
    backend, so the same module (and the same weights) run densely in one process or sharded over ranks.
    ``backend="upipe"`` uses the fused operator :func:`~lightning_icml26.ops.attention.upipe_attention`
    (projection and RoPE inside the stage loop); the others project first and call the q/k/v backend.

    Args:
        hidden_size: model width ``E``.
        num_heads: query heads ``H``.
        num_kv_heads: KV heads ``G`` (default ``H``).
        head_dim: per-head width (default ``E // H``).
        rope_theta: rotary base; ``None`` disables rotary embedding.
        causal: causal self-attention.
        backend: ``"dense"``, ``"ulysses"``, ``"ring"`` or ``"upipe"``.
        stage_heads: UPipe query heads per stage (default: the context-parallel size).
        cp: a ``ContextParallelGroup``, ``ProcessGroup`` or ``None``.
        layout: how the input sequence is sharded over ``cp``.

    Example:
        >>> attn = UPipeAttention(32, num_heads=4, num_kv_heads=2)
        >>> attn(torch.randn(2, 6, 32)).shape
        torch.Size([2, 6, 32])
    """

    def __init__(
        self,
        hidden_size: int,
        num_heads: int,
        num_kv_heads: int | None = None,
        head_dim: int | None = None,
        *,
        rope_theta: float | None = 10000.0,
        causal: bool = True,
        backend: str = "dense",
        stage_heads: int | None = None,
        cp: Any = None,
        layout: str = "contiguous",
    ) -> None:
        super().__init__()
        num_kv_heads = num_heads if num_kv_heads is None else num_kv_heads
        for name, val in (("hidden_size", hidden_size), ("num_heads", num_heads), ("num_kv_heads", num_kv_heads)):
            if not isinstance(val, int) or isinstance(val, bool) or val < 1:
                raise ValueError(f"{name}={val!r} must be a positive integer")
        if num_heads % num_kv_heads:
            raise ValueError(f"num_kv_heads={num_kv_heads} must divide num_heads={num_heads}")
        if head_dim is None:
            if hidden_size % num_heads:
                raise ValueError(f"hidden_size={hidden_size} must be divisible by num_heads={num_heads}")
            head_dim = hidden_size // num_heads
        self.hidden_size, self.num_heads, self.num_kv_heads, self.head_dim = (
            hidden_size,
            num_heads,
            num_kv_heads,
            head_dim,
        )
        self.causal = causal
        self.q_proj = nn.Linear(hidden_size, num_heads * head_dim, bias=False)
        self.k_proj = nn.Linear(hidden_size, num_kv_heads * head_dim, bias=False)
        self.v_proj = nn.Linear(hidden_size, num_kv_heads * head_dim, bias=False)
        self.o_proj = nn.Linear(num_heads * head_dim, hidden_size, bias=False)
        self.rotary = RotaryEmbedding(head_dim, rope_theta) if rope_theta is not None else None
        self.set_context_parallel(cp, backend=backend, stage_heads=stage_heads, layout=layout)

    def set_context_parallel(
        self, cp: Any, backend: str = "upipe", stage_heads: int | None = None, layout: str = "contiguous"
    ) -> UPipeAttention:
        """Attach a context-parallel group and choose the backend; returns ``self``.

        Args:
            cp: a ``ContextParallelGroup``, ``ProcessGroup`` or ``None`` (single process).
            backend: ``"dense"``, ``"ulysses"``, ``"ring"`` or ``"upipe"``.
            stage_heads: UPipe query heads per stage (default: the context-parallel size).
            layout: sequence sharding layout of the inputs.

        Example:
            >>> UPipeAttention(16, 2).set_context_parallel(None, backend="ulysses").backend
            'ulysses'
        """
        get_attention_backend(backend)
        check_layout(layout)
        self.cp = as_context_parallel_group(cp)
        self.backend, self.stage_heads, self.layout = backend, stage_heads, layout
        return self

    def forward(self, x: torch.Tensor, position_ids: torch.Tensor | None = None) -> torch.Tensor:
        """Attend over the (sharded) sequence.

        Args:
            x: ``(batch, seq_local, hidden_size)``, this rank's tokens in the module's layout.
            position_ids: global positions of the local tokens, ``(seq_local,)`` or ``(batch, seq_local)``;
                default: derived from the group's rank and the layout.

        Returns:
            ``(batch, seq_local, hidden_size)``.
        """
        if x.ndim != 3 or x.shape[-1] != self.hidden_size:
            raise ValueError(f"x must have shape (batch, seq_local, {self.hidden_size}), got {tuple(x.shape)}")
        b, s, _ = x.shape
        rotary = None
        if self.rotary is not None:
            if position_ids is None:
                position_ids = shard_positions(s * self.cp.size, self.cp, self.layout, device=x.device)
            if position_ids.shape not in ((s,), (b, s)):
                raise ValueError(f"position_ids must have shape ({s},) or ({b}, {s}), got {tuple(position_ids.shape)}")
            rotary = self.rotary(position_ids, x.dtype)
        if self.backend == "upipe":
            out = upipe_attention(
                x,
                self.q_proj.weight,
                self.k_proj.weight,
                self.v_proj.weight,
                num_heads=self.num_heads,
                num_kv_heads=self.num_kv_heads,
                cp=self.cp,
                causal=self.causal,
                layout=self.layout,
                rotary=rotary,
                stage_heads=self.stage_heads,
            )
        else:
            q = self.q_proj(x).view(b, s, self.num_heads, self.head_dim)
            k = self.k_proj(x).view(b, s, self.num_kv_heads, self.head_dim)
            v = self.v_proj(x).view(b, s, self.num_kv_heads, self.head_dim)
            if rotary is not None:
                q, k = apply_rotary(q, *rotary), apply_rotary(k, *rotary)
            fn = get_attention_backend(self.backend)
            out = fn(q, k, v, cp=self.cp, causal=self.causal, layout=self.layout)
        return self.o_proj(out.reshape(b, s, self.num_heads * self.head_dim))

    def extra_repr(self) -> str:
        """The layer's sizes, backend and context-parallel size, shown by ``print(module)``."""
        return (
            f"hidden_size={self.hidden_size}, num_heads={self.num_heads}, num_kv_heads={self.num_kv_heads}, "
            f"head_dim={self.head_dim}, backend={self.backend!r}, cp_size={self.cp.size}"
        )
