"""Attention kernels returning the log-sum-exp, their backward, rotary embedding and argument checks.

:func:`select_kernel` picks the kernel by device and dtype, in one place. On CPU the forward and backward are
PyTorch's fused flash-attention kernels for CPU (``aten._scaled_dot_product_flash_attention_for_cpu`` and its
backward), which support GQA natively. On CUDA they are SDPA's flash kernel (fp16/bf16) or its memory-efficient
kernel (fp32, or head sizes flash refuses), with KV heads expanded per call for GQA. All of them return the row
log-sum-exp, take a given output and log-sum-exp in backward, and never materialise the ``S x S`` scores. Other
devices and dtypes raise an error.
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


_CPU_DTYPES = (torch.float32, torch.float64, torch.bfloat16, torch.float16)
_CUDA_DTYPES = (torch.float32, torch.bfloat16, torch.float16)
KERNELS: tuple[str, ...] = ("cpu_flash", "cuda_flash", "cuda_efficient")


def select_kernel(device: torch.device | str, dtype: torch.dtype, head_dim: int) -> str:
    """The attention kernel for a device, dtype and head size: the one place where kernels are chosen.

    * CPU (fp64, fp32, bf16, fp16): PyTorch's fused CPU flash attention (``"cpu_flash"``). ``meta`` tensors
      take the same kernel (its shape functions), so memory can be accounted at full size without computing.
    * CUDA, fp16/bf16 with ``head_dim`` a multiple of 8 up to 256: SDPA's flash kernel (``"cuda_flash"``).
    * CUDA otherwise (fp32, or other head sizes): SDPA's memory-efficient kernel (``"cuda_efficient"``).

    None of them materialises the ``S x S`` scores. ``flex_attention`` is not used: its backward cannot take
    a given output and log-sum-exp (ring attention's blockwise backward needs that), and outside
    ``torch.compile`` it builds the full score matrix.

    Raises:
        ValueError: for a device other than CPU, CUDA or meta.
        TypeError: for a dtype the device's kernels do not support.

    Example:
        >>> select_kernel("cpu", torch.float32, 64)
        'cpu_flash'
        >>> select_kernel("cuda", torch.bfloat16, 128)
        'cuda_flash'
    """
    kind = torch.device(device).type
    if kind in ("cpu", "meta"):
        if dtype not in _CPU_DTYPES:
            raise TypeError(f"attention on {kind} supports dtypes {_CPU_DTYPES}, got dtype={dtype}")
        return "cpu_flash"
    if kind == "cuda":
        if dtype not in _CUDA_DTYPES:
            raise TypeError(f"attention on cuda supports dtypes {_CUDA_DTYPES}, got dtype={dtype}")
        if dtype != torch.float32 and head_dim % 8 == 0 and head_dim <= 256:
            return "cuda_flash"
        return "cuda_efficient"
    raise ValueError(f"attention has no kernel for device={kind!r}; supported devices: 'cpu', 'cuda', 'meta'")


def _expand_kv(q: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
    rep = q.shape[1] // t.shape[1]
    return t if rep == 1 else t.repeat_interleave(rep, dim=1)


def _fold_kv(grad: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    """Sum the gradient of expanded KV heads back onto the ``G`` heads of ``like`` (GQA)."""
    b, g, s, d = like.shape
    if grad.shape[1] == g:
        return grad
    return grad.view(b, g, grad.shape[1] // g, s, d).sum(2)


def _cuda_flash_forward(q: Any, k: Any, v: Any, causal: bool, scale: float) -> tuple[torch.Tensor, torch.Tensor]:
    res = torch.ops.aten._scaled_dot_product_flash_attention(
        q, _expand_kv(q, k), _expand_kv(q, v), 0.0, causal, False, scale=scale
    )
    return res[0], res[1]


def _cuda_flash_backward(
    dout: Any, q: Any, k: Any, v: Any, out: Any, lse: Any, causal: bool, scale: float
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    unused = torch.empty(0, dtype=torch.long, device=q.device)  # RNG state: read only with dropout
    dq, dk, dv = torch.ops.aten._scaled_dot_product_flash_attention_backward(
        dout, q, _expand_kv(q, k), _expand_kv(q, v), out, lse, None, None, q.shape[2], k.shape[2], 0.0, causal,
        unused, unused, scale=scale,
    )  # fmt: skip
    return dq, _fold_kv(dk, k), _fold_kv(dv, v)


def _cuda_efficient_forward(q: Any, k: Any, v: Any, causal: bool, scale: float) -> tuple[torch.Tensor, torch.Tensor]:
    res = torch.ops.aten._scaled_dot_product_efficient_attention(
        q, _expand_kv(q, k), _expand_kv(q, v), None, True, 0.0, causal, scale=scale
    )
    return res[0], res[1][..., : q.shape[2]]  # the kernel pads the log-sum-exp to a multiple of 32 rows


def _cuda_efficient_backward(
    dout: Any, q: Any, k: Any, v: Any, out: Any, lse: Any, causal: bool, scale: float
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    rows = -(-q.shape[2] // 32) * 32
    lse = torch.nn.functional.pad(lse.contiguous(), (0, rows - lse.shape[-1]))
    unused = torch.empty(0, dtype=torch.long, device=q.device)  # RNG state: read only with dropout
    dq, dk, dv, _ = torch.ops.aten._scaled_dot_product_efficient_attention_backward(
        dout, q, _expand_kv(q, k), _expand_kv(q, v), None, out, lse, unused, unused, 0.0,
        [True, True, True, False], causal, scale=scale,
    )  # fmt: skip
    return dq, _fold_kv(dk, k), _fold_kv(dv, v)


def _cpu_flash_forward(q: Any, k: Any, v: Any, causal: bool, scale: float) -> tuple[torch.Tensor, torch.Tensor]:
    out, lse = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(q, k, v, 0.0, causal, scale=scale)
    return out, lse


def _cpu_flash_backward(
    dout: Any, q: Any, k: Any, v: Any, out: Any, lse: Any, causal: bool, scale: float
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    dq, dk, dv = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu_backward(
        dout, q, k, v, out, lse, 0.0, causal, scale=scale
    )
    return dq, dk, dv


_FORWARD = {
    "cpu_flash": _cpu_flash_forward,
    "cuda_flash": _cuda_flash_forward,
    "cuda_efficient": _cuda_efficient_forward,
}
_BACKWARD = {
    "cpu_flash": _cpu_flash_backward,
    "cuda_flash": _cuda_flash_backward,
    "cuda_efficient": _cuda_efficient_backward,
}


def attention_forward(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool, scale: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """Attention on ``(B, H, S, D)`` tensors (GQA: k/v with G heads); returns the output and the log-sum-exp.

    The kernel is chosen by :func:`select_kernel`. The log-sum-exp is ``(B, H, S)`` in fp32 (fp64 for fp64
    inputs on CPU).

    ``causal`` masks key ``j > i`` (top-left aligned; callers pass equal query and key lengths when causal).
    Rows with no visible key are not supported.
    """
    return _FORWARD[select_kernel(q.device, q.dtype, q.shape[-1])](q, k, v, causal, scale)


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
    return _BACKWARD[select_kernel(q.device, q.dtype, q.shape[-1])](dout, q, k, v, out, lse, causal, scale)


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

    ``x * cos + rotate_half(x) * sin``. For an even ``D`` the result is written into one new tensor (``x * cos``,
    then ``rotate_half(x) * sin`` added half by half with ``addcmul_``), so besides the result no ``x``-sized
    temporary exists; under autograd only ``cos`` and ``sin`` are saved, as for the plain formula.

    Example:
        >>> x = torch.randn(1, 3, 2, 4)
        >>> bool(torch.equal(apply_rotary(x, torch.ones(3, 4), torch.zeros(3, 4)), x))
        True
        >>> cos, sin = torch.randn(3, 4), torch.randn(3, 4)
        >>> torch.allclose(apply_rotary(x, cos, sin), x * cos[:, None] + rotate_half(x) * sin[:, None])
        True
    """
    cos, sin = _expand_rotary(cos), _expand_rotary(sin)
    d = x.shape[-1]
    if d % 2:
        return x * cos + rotate_half(x) * sin
    h = d // 2
    out = x * cos
    out[..., :h].addcmul_(x[..., h:], sin[..., :h], value=-1)
    out[..., h:].addcmul_(x[..., :h], sin[..., h:])
    return out


def apply_rotary_backward(grad: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """The gradient of :func:`apply_rotary` with respect to its input (the transposed rotation).

    ``grad * cos - rotate_half(grad * sin)``, written into one new tensor for an even ``D`` (as
    :func:`apply_rotary`). Not differentiable itself when ``D`` is even (in-place updates; used in backward passes).

    Example:
        >>> g, cos, sin = torch.randn(1, 3, 2, 4), torch.randn(3, 4), torch.randn(3, 4)
        >>> torch.allclose(apply_rotary_backward(g, cos, sin), g * cos[:, None] - rotate_half(g * sin[:, None]))
        True
    """
    cos, sin = _expand_rotary(cos), _expand_rotary(sin)
    d = grad.shape[-1]
    if d % 2:
        return grad * cos - rotate_half(grad * sin)
    h = d // 2
    out = grad * cos
    out[..., :h].addcmul_(grad[..., h:], sin[..., h:])
    out[..., h:].addcmul_(grad[..., :h], sin[..., :h], value=-1)
    return out


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

    Example:
        >>> kv_replication(8, 4, 2), kv_replication(8, 2, 4)  # 2 KV heads over 4 ranks: each one twice
        (1, 2)
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
