"""Attention kernels returning the log-sum-exp, their backward, rotary embedding and argument checks.

On CPU the forward and backward are PyTorch's fused flash-attention kernels for CPU
(``aten._scaled_dot_product_flash_attention_for_cpu`` and its backward), which never materialise the
``S x S`` score matrix, support GQA natively and return the row log-sum-exp. Elsewhere (or for dtypes they
refuse) a pure-torch reference with the same maths is used; it materialises the scores, so it is meant for
correctness, not for long sequences.
"""

from __future__ import annotations

import math
from typing import Any

import torch

from lightning_icml26.distributed import as_context_parallel_group, check_layout

__all__: list[str] = []


def acc_dtype(dtype: torch.dtype) -> torch.dtype:
    """Accumulation dtype for attention statistics and partial sums: fp64 for fp64, else fp32."""
    return torch.float64 if dtype == torch.float64 else torch.float32


def _math_forward(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool, scale: float
) -> tuple[torch.Tensor, torch.Tensor]:
    rep = q.shape[1] // k.shape[1]
    acc = acc_dtype(q.dtype)
    kk, vv = k.repeat_interleave(rep, dim=1).to(acc), v.repeat_interleave(rep, dim=1).to(acc)
    scores = torch.matmul(q.to(acc), kk.transpose(-1, -2)) * scale
    if causal:
        mask = torch.ones(q.shape[2], k.shape[2], dtype=torch.bool, device=q.device).tril()
        scores = scores.masked_fill(~mask, float("-inf"))
    lse = torch.logsumexp(scores, dim=-1)
    out = torch.matmul(torch.exp(scores - lse.unsqueeze(-1)), vv)
    return out.to(q.dtype), lse


def _math_backward(
    dout: torch.Tensor,
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    out: torch.Tensor,
    lse: torch.Tensor,
    causal: bool,
    scale: float,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    rep = q.shape[1] // k.shape[1]
    acc = acc_dtype(q.dtype)
    kk, vv = k.repeat_interleave(rep, dim=1).to(acc), v.repeat_interleave(rep, dim=1).to(acc)
    scores = torch.matmul(q.to(acc), kk.transpose(-1, -2)) * scale
    if causal:
        mask = torch.ones(q.shape[2], k.shape[2], dtype=torch.bool, device=q.device).tril()
        scores = scores.masked_fill(~mask, float("-inf"))
    probs = torch.exp(scores - lse.unsqueeze(-1))
    do = dout.to(acc)
    dv = torch.matmul(probs.transpose(-1, -2), do)
    dp = torch.matmul(do, vv.transpose(-1, -2))
    delta = (do * out.to(acc)).sum(-1, keepdim=True)
    ds = probs * (dp - delta) * scale
    dq = torch.matmul(ds, kk)
    dk = torch.matmul(ds.transpose(-1, -2), q.to(acc))
    b, g, s, d = k.shape
    dk = dk.view(b, g, rep, s, d).sum(2)
    dv = dv.view(b, g, rep, s, d).sum(2)
    return dq.to(q.dtype), dk.to(k.dtype), dv.to(v.dtype)


def _use_cpu_flash(q: torch.Tensor) -> bool:
    return q.device.type == "cpu" and q.dtype in (torch.float32, torch.float64, torch.bfloat16, torch.float16)


def attention_forward(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool, scale: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """Attention on ``(B, H, S, D)`` tensors (GQA: k/v with G heads); returns the output and the log-sum-exp.

    The log-sum-exp is in :func:`acc_dtype` (fp32, or fp64 for fp64 inputs).

    ``causal`` masks key ``j > i`` (top-left aligned). Rows with no visible key are not supported.
    """
    if _use_cpu_flash(q):
        out, lse = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(q, k, v, 0.0, causal, scale=scale)
        return out, lse
    return _math_forward(q, k, v, causal, scale)


def attention_backward(
    dout: torch.Tensor,
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    out: torch.Tensor,
    lse: torch.Tensor,
    causal: bool,
    scale: float,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Gradients of :func:`attention_forward` given the (possibly global, merged) ``out`` and ``lse``.

    Passing the output and log-sum-exp of a larger attention (over more keys) gives this key block's share of
    the gradients, which is what blockwise (ring) backward passes need.
    """
    if _use_cpu_flash(q):
        dq, dk, dv = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu_backward(
            dout, q, k, v, out, lse, 0.0, causal, scale=scale
        )
        return dq, dk, dv
    return _math_backward(dout, q, k, v, out, lse, causal, scale)


class _LocalAttention(torch.autograd.Function):
    """Flash attention on (B, S, H, D) tensors that saves q, k, v, out and lse (like FlashAttention)."""

    @staticmethod
    def forward(ctx: Any, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool, scale: float) -> Any:
        out, lse = attention_forward(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), causal, scale)
        out = out.transpose(1, 2)
        ctx.save_for_backward(q, k, v, out, lse)
        ctx.causal, ctx.scale = causal, scale
        return out

    @staticmethod
    def backward(ctx: Any, dout: torch.Tensor) -> Any:
        q, k, v, out, lse = ctx.saved_tensors
        dq, dk, dv = attention_backward(
            dout.transpose(1, 2),
            q.transpose(1, 2),
            k.transpose(1, 2),
            v.transpose(1, 2),
            out.transpose(1, 2),
            lse,
            ctx.causal,
            ctx.scale,
        )
        return dq.transpose(1, 2), dk.transpose(1, 2), dv.transpose(1, 2), None, None


def local_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool, scale: float) -> torch.Tensor:
    """Differentiable single-process attention on ``(B, S, H, D)`` tensors (GQA allowed)."""
    return _LocalAttention.apply(q, k, v, causal, scale)


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    """``cat(-x2, x1)`` over the last dimension (the Llama / HF rotary convention)."""
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def _expand_rotary(t: torch.Tensor) -> torch.Tensor:
    return t.unsqueeze(-2)  # (S, D) or (B, S, D) -> broadcast over the head dimension of (B, S, H, D)


def apply_rotary(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotary embedding on ``x`` of shape ``(B, S, H, D)`` with ``cos``/``sin`` of shape ``(S, D)`` or ``(B, S, D)``.

    Example:
        >>> x = torch.randn(1, 3, 2, 4)
        >>> bool(torch.equal(apply_rotary(x, torch.ones(3, 4), torch.zeros(3, 4)), x))
        True
    """
    cos, sin = _expand_rotary(cos), _expand_rotary(sin)
    return x * cos + rotate_half(x) * sin


def apply_rotary_backward(grad: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """The gradient of :func:`apply_rotary` with respect to its input (the transposed rotation)."""
    cos, sin = _expand_rotary(cos), _expand_rotary(sin)
    return grad * cos - rotate_half(grad * sin)


def resolve_scale(scale: float | None, head_dim: int) -> float:
    """``scale`` or the default ``head_dim ** -0.5``."""
    if scale is None:
        return float(head_dim) ** -0.5
    if not isinstance(scale, int | float) or isinstance(scale, bool) or scale <= 0:
        raise ValueError(f"scale={scale!r} must be a positive number or None")
    return float(scale)


def check_qkv(q: Any, k: Any, v: Any) -> None:
    """Validate pre-projected ``(B, S_local, H, D)`` q and ``(B, S_local, G, D)`` k/v."""
    for name, t in (("q", q), ("k", k), ("v", v)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
        if t.ndim != 4:
            raise ValueError(f"{name} must have shape (batch, seq_local, heads, head_dim), got {tuple(t.shape)}")
        if not t.is_floating_point():
            raise TypeError(f"{name} must be a floating-point tensor, got dtype {t.dtype}")
    if k.dtype != q.dtype or v.dtype != q.dtype:
        raise TypeError(f"q, k, v must share one dtype, got q={q.dtype}, k={k.dtype}, v={v.dtype}")
    if k.shape != v.shape:
        raise ValueError(f"k and v must have the same shape, got k={tuple(k.shape)}, v={tuple(v.shape)}")
    if q.shape[0] != k.shape[0] or q.shape[1] != k.shape[1] or q.shape[3] != k.shape[3]:
        raise ValueError(
            f"q {tuple(q.shape)} and k/v {tuple(k.shape)} must agree in batch, seq_local and head_dim "
            "(layout (batch, seq_local, heads, head_dim))"
        )
    if q.shape[2] % k.shape[2]:
        raise ValueError(f"KV heads ({k.shape[2]}) must divide query heads ({q.shape[2]}) for GQA")


def prepare(q: Any, k: Any, v: Any, cp: Any, layout: str, scale: float | None) -> tuple[Any, float]:
    """Check the shared arguments of the attention backends; return the group and the scale."""
    check_qkv(q, k, v)
    check_layout(layout)
    group = as_context_parallel_group(cp)
    if layout == "headtail" and q.shape[1] % 2:
        raise ValueError(f"seq_local={q.shape[1]} must be even for the 'headtail' layout")
    return group, resolve_scale(scale, q.shape[3])


def kv_replication(num_heads: int, num_kv_heads: int, cp_size: int) -> int:
    """How many times each KV head must be replicated so that the KV heads divide evenly over ``cp_size`` ranks.

    1 when ``num_kv_heads`` is divisible by ``cp_size``; otherwise the smallest ``r`` with ``r * G`` divisible
    by ``P`` (each replica serves ``H / (r G)`` query heads), which needs ``r`` to divide the GQA ratio.
    """
    if num_kv_heads % cp_size == 0:
        return 1
    rep = cp_size // math.gcd(num_kv_heads, cp_size)
    group_size = num_heads // num_kv_heads
    if group_size % rep:
        raise ValueError(
            f"num_kv_heads={num_kv_heads} cannot be spread over context-parallel size {cp_size}: replicating each "
            f"KV head {rep} times needs the GQA ratio ({group_size}) to be divisible by {rep}"
        )
    if num_heads % cp_size:
        raise ValueError(f"num_heads={num_heads} must be divisible by the context-parallel size {cp_size}")
    return rep
