"""UPipe's fused operator: projection, rotary embedding, all-to-all and attention per stage of a few heads.

:func:`upipe_attention` takes the layer input and the q/k/v projection weights, so full-head q/k/v never exist. Per
stage it projects ``U`` query heads (and, once per KV group, their KV heads), applies rotary embedding, exchanges
them with an all-to-all, attends, and writes the exchanged-back output into a preallocated ``out``. A custom
autograd function saves only ``x``, the weights, the rotary tables, ``out`` and the per-stage log-sum-exp; backward
repeats the stage loop. Backward creates its gradient buffers when they are first written and keeps them in the
input dtype (bf16 inputs give bf16 gradients, each stage's matmul accumulating in fp32 internally); only the dk/dv
of a KV group that several stages share are summed in fp32. The stage schedule, GQA pairing and the variant on
pre-projected q/k/v are in :mod:`lightning_icml26.ops.attention.context_parallel.upipe`.
"""

from __future__ import annotations

from typing import Any

import torch

from lightning_icml26.distributed import ContextParallelGroup, as_context_parallel_group, check_layout
from lightning_icml26.distributed.collectives import (
    _a2a,
    _head_to_seq,
    _head_to_seq_into,
    _seq_to_head_recv,
    _seq_to_head_send,
)
from lightning_icml26.ops.attention.context_parallel._kernels import (
    acc_dtype,
    apply_rotary,
    apply_rotary_backward,
    resolve_scale,
)
from lightning_icml26.ops.attention.context_parallel.upipe import (
    Stage,
    _attend,
    _attend_backward,
    _idx,
    _select_heads,
    _stage_plan,
)

__all__ = ["upipe_attention"]


def _project(
    x: torch.Tensor, w: torch.Tensor, b: torch.Tensor | None, heads: torch.Tensor, head_dim: int
) -> torch.Tensor:
    """``x @ w[heads]^T (+ b[heads])`` reshaped to (B, s, len(heads), D)."""
    rows = w.view(-1, head_dim, w.shape[-1]).index_select(0, heads).reshape(-1, w.shape[-1])
    if b is None:
        y = torch.matmul(x, rows.t())
    else:
        y = torch.addmm(b.view(-1, head_dim).index_select(0, heads).reshape(-1), x.reshape(-1, x.shape[-1]), rows.t())
    return y.view(*x.shape[:2], heads.numel(), head_dim)


def _project_heads(
    x: torch.Tensor,
    w: torch.Tensor,
    b: torch.Tensor | None,
    heads: torch.Tensor,
    head_dim: int,
    rotary: tuple[torch.Tensor, torch.Tensor] | None,
    cp: ContextParallelGroup,
    layout: str,
) -> torch.Tensor:
    """One stage's projection (rotary embedding applied when given), exchanged to head layout ``(B, S, n/P, D)``.

    Each local intermediate is released as soon as the next one exists, so the exchange holds only its send and
    receive buffers.
    """
    t = _project(x, w, b, heads, head_dim)
    if rotary is not None:
        t = apply_rotary(t, *rotary)
    if cp.size == 1:
        return t
    send = _seq_to_head_send(t, cp.size)
    del t
    recv = _a2a(send, cp)
    del send
    return _seq_to_head_recv(recv, layout)


class _UPipeFused(torch.autograd.Function):
    @staticmethod
    def forward(
        ctx: Any,
        x: torch.Tensor,
        w_q: torch.Tensor,
        w_k: torch.Tensor,
        w_v: torch.Tensor,
        b_q: torch.Tensor | None,
        b_k: torch.Tensor | None,
        b_v: torch.Tensor | None,
        cos: torch.Tensor | None,
        sin: torch.Tensor | None,
        meta: tuple[ContextParallelGroup, bool, float, str, list[Stage], int, int],
    ) -> torch.Tensor:
        cp, causal, scale, layout, stages, num_heads, head_dim = meta
        b, s, _ = x.shape
        out = torch.empty(b, s, num_heads, head_dim, dtype=x.dtype, device=x.device)
        lses = []
        kh = vh = None
        rotary = None if cos is None or sin is None else (cos, sin)
        for q_heads, kv_heads in stages:
            if kv_heads is not None:
                kh = vh = None
                kv_idx = _idx(kv_heads, x.device)
                kh = _project_heads(x, w_k, b_k, kv_idx, head_dim, rotary, cp, layout)
                vh = _project_heads(x, w_v, b_v, kv_idx, head_dim, None, cp, layout)
            q_idx = _idx(q_heads, x.device)
            qh = _project_heads(x, w_q, b_q, q_idx, head_dim, rotary, cp, layout)
            oh, lse = _attend(qh, kh, vh, causal, scale)  # type: ignore[arg-type]
            del qh
            _head_to_seq_into(out, q_idx, oh.contiguous(), cp, layout)
            del oh
            lses.append(lse)
        del kh, vh
        ctx.save_for_backward(x, w_q, w_k, w_v, b_q, b_k, b_v, cos, sin, out, *lses)
        ctx.meta = meta
        return out

    @staticmethod
    def backward(ctx: Any, dout: torch.Tensor) -> Any:
        x, w_q, w_k, w_v, b_q, b_k, b_v, cos, sin, out, *lses = ctx.saved_tensors
        biases = {"q": b_q, "k": b_k, "v": b_v}
        cp, causal, scale, layout, stages, _, head_dim = ctx.meta
        rotary = cos is not None and sin is not None
        tables = (cos, sin) if rotary else None
        dout = dout.contiguous()
        x2 = x.reshape(-1, x.shape[-1])
        # Accumulators are created when first written, in the input dtype: dx and the weight gradients are sums
        # of per-stage matmuls (each accumulated in fp32 inside the kernel); only a KV group's dk/dv, summed over
        # the several stages that share it, stay in fp32 (see _accumulate_kv).
        grads: dict[str, torch.Tensor] = {}
        state: dict[str, Any] = {}

        def grad_proj(d_local: torch.Tensor, name: str, w: torch.Tensor, heads: torch.Tensor) -> None:
            # d_local: (B, s, n, D) gradient of this stage's projection output
            d2 = d_local.reshape(-1, heads.numel() * head_dim)
            rows = w.view(-1, head_dim, w.shape[-1]).index_select(0, heads).reshape(-1, w.shape[-1])
            if "x" in grads:
                grads["x"].view(-1, x.shape[-1]).addmm_(d2, rows)  # in place: no transient
            else:
                grads["x"] = torch.matmul(d2, rows).view(x.shape)
            del rows
            if name not in grads:
                grads[name] = torch.empty_like(w)
            dw_rows = torch.matmul(d2.t(), x2).view(heads.numel(), head_dim, -1)
            grads[name].view(-1, head_dim, w.shape[-1]).index_copy_(0, heads, dw_rows)
            bias = biases[name]
            if bias is not None:
                if "b" + name not in grads:
                    grads["b" + name] = torch.empty_like(bias)
                grads["b" + name].view(-1, head_dim).index_copy_(0, heads, d2.sum(0).view(heads.numel(), head_dim))

        def flush() -> None:
            if "kv_idx" not in state:
                return
            del state["kh"], state["vh"]  # the group's last stage is done
            dk_local = _head_to_seq(state.pop("dkh").to(x.dtype), cp, layout)
            if rotary:
                dk_local = apply_rotary_backward(dk_local, cos, sin)
            grad_proj(dk_local, "k", w_k, state["kv_idx"])
            del dk_local
            grad_proj(_head_to_seq(state.pop("dvh").to(x.dtype), cp, layout), "v", w_v, state["kv_idx"])

        for i, ((q_heads, kv_heads), lse) in enumerate(zip(stages, lses, strict=True)):
            if kv_heads is not None:
                flush()
                state.clear()
                kv_idx = _idx(kv_heads, x.device)
                state["kh"] = _project_heads(x, w_k, b_k, kv_idx, head_dim, tables, cp, layout)
                state["vh"] = _project_heads(x, w_v, b_v, kv_idx, head_dim, None, cp, layout)
                state["kv_idx"] = kv_idx
                state["shared"] = i + 1 < len(stages) and stages[i + 1][1] is None
            q_idx = _idx(q_heads, x.device)
            qh = _project_heads(x, w_q, b_q, q_idx, head_dim, tables, cp, layout)
            oh = _select_heads(out, q_idx, cp, layout)
            doh = _select_heads(dout, q_idx, cp, layout)
            dqh, dkh_s, dvh_s = _attend_backward(doh, qh, state["kh"], state["vh"], oh, lse, causal, scale)
            del qh, oh, doh
            _accumulate_kv(state, "dkh", dkh_s)
            _accumulate_kv(state, "dvh", dvh_s)
            del dkh_s, dvh_s
            dq_local = _head_to_seq(dqh.contiguous(), cp, layout)
            del dqh
            if rotary:
                dq_local = apply_rotary_backward(dq_local, cos, sin)
            grad_proj(dq_local, "q", w_q, q_idx)
            del dq_local
        flush()
        state.clear()
        bias_grads = (grads.get("bq"), grads.get("bk"), grads.get("bv"))
        return grads["x"], grads["q"], grads["k"], grads["v"], *bias_grads, None, None, None


def _accumulate_kv(state: dict[str, Any], key: str, grad: torch.Tensor) -> None:
    """Add one stage's dk (or dv) of the current KV group: fp32 when several stages share the group."""
    if key in state:
        state[key].add_(grad)
    elif state["shared"]:
        state[key] = grad.to(acc_dtype(grad.dtype))  # no copy for fp32 / fp64 inputs
    else:
        state[key] = grad


# The branches are argument checks (shapes, GQA grouping, layout, rotary tables) before one stage loop.
def upipe_attention(  # noqa: C901
    x: torch.Tensor,
    w_q: torch.Tensor,
    w_k: torch.Tensor,
    w_v: torch.Tensor,
    *,
    num_heads: int,
    num_kv_heads: int,
    cp: Any = None,
    causal: bool = True,
    scale: float | None = None,
    layout: str = "contiguous",
    rotary: tuple[torch.Tensor, torch.Tensor] | None = None,
    stage_heads: int | None = None,
    bias: tuple[torch.Tensor | None, torch.Tensor | None, torch.Tensor | None] | None = None,
) -> torch.Tensor:
    """The paper's fused UPipe attention: q/k/v projection and rotary embedding inside the stage loop.

    Args:
        x: layer input ``(batch, seq_local, hidden)``, sharded along the sequence with ``layout``.
        w_q: ``(num_heads * head_dim, hidden)`` (``nn.Linear`` weight layout; biases go in ``bias``).
        w_k: ``(num_kv_heads * head_dim, hidden)``.
        w_v: same shape as ``w_k``.
        num_heads: query heads ``H``.
        num_kv_heads: KV heads ``G`` (divides ``H``).
        cp: a ``ContextParallelGroup``, ``ProcessGroup`` or ``None``.
        causal: causal mask over global positions.
        scale: softmax scale; default ``head_dim ** -0.5``.
        layout: sequence sharding layout.
        rotary: ``(cos, sin)`` for this rank's tokens, ``(seq_local, head_dim)`` or ``(batch or 1,
            seq_local, head_dim)``, in the Llama ``rotate_half`` convention; ``None`` for no rotary embedding. Not
            differentiated.
        stage_heads: query heads per stage ``U`` (default: the context-parallel size).
        bias: ``(b_q, b_k, b_v)`` projection biases of shapes ``(num_heads * head_dim,)``,
            ``(num_kv_heads * head_dim,)`` twice (an entry may be ``None``), as in Qwen2; ``None``: no bias.

    Returns:
        The attention output before the output projection, ``(batch, seq_local, H, head_dim)``. When ``G`` is
        not divisible by ``P`` the KV weights are replicated (their gradients summed), as in the paper's code.

    Example:
        >>> x = torch.randn(1, 4, 16)
        >>> w_q, w_kv = torch.randn(16, 16), torch.randn(8, 16)
        >>> upipe_attention(x, w_q, w_kv, w_kv, num_heads=4, num_kv_heads=2).shape
        torch.Size([1, 4, 4, 4])
    """
    group = as_context_parallel_group(cp)
    check_layout(layout)
    for name, t in (("x", x), ("w_q", w_q), ("w_k", w_k), ("w_v", w_v)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
        if not t.is_floating_point() or t.dtype != x.dtype:
            raise TypeError(f"{name} has dtype {t.dtype}; x, w_q, w_k, w_v must share one floating dtype")
    if x.ndim != 3:
        raise ValueError(f"x must have shape (batch, seq_local, hidden), got {tuple(x.shape)}")
    for name, val in (("num_heads", num_heads), ("num_kv_heads", num_kv_heads)):
        if not isinstance(val, int) or isinstance(val, bool) or val < 1:
            raise ValueError(f"{name}={val!r} must be a positive integer")
    if num_heads % num_kv_heads:
        raise ValueError(f"num_kv_heads={num_kv_heads} must divide num_heads={num_heads}")
    hidden = x.shape[-1]
    if w_q.ndim != 2 or w_q.shape[1] != hidden or w_q.shape[0] % num_heads:
        raise ValueError(
            f"w_q must have shape (num_heads * head_dim, {hidden}) with num_heads={num_heads}, got {tuple(w_q.shape)}"
        )
    head_dim = w_q.shape[0] // num_heads
    for name, w in (("w_k", w_k), ("w_v", w_v)):
        if tuple(w.shape) != (num_kv_heads * head_dim, hidden):
            raise ValueError(f"{name} must have shape {(num_kv_heads * head_dim, hidden)}, got {tuple(w.shape)}")
    b_q, b_k, b_v = _check_bias(bias, x.dtype, num_heads * head_dim, num_kv_heads * head_dim)
    if layout == "headtail" and x.shape[1] % 2:
        raise ValueError(f"seq_local={x.shape[1]} must be even for the 'headtail' layout")
    cos = sin = None
    if rotary is not None:
        if not isinstance(rotary, tuple | list) or len(rotary) != 2:
            raise TypeError("rotary must be a (cos, sin) pair of tensors or None")
        cos, sin = (t.to(x.dtype) for t in rotary)
        allowed = {(x.shape[1], head_dim), (x.shape[0], x.shape[1], head_dim), (1, x.shape[1], head_dim)}
        if tuple(cos.shape) not in allowed or cos.shape != sin.shape:
            raise ValueError(
                f"rotary cos/sin must have shape (seq_local, head_dim) or (batch or 1, seq_local, head_dim) = one of "
                f"{sorted(allowed)}, got {tuple(cos.shape)} and {tuple(sin.shape)}"
            )
        cos, sin = cos.detach(), sin.detach()
    scale_ = resolve_scale(scale, head_dim)
    rep, stages = _stage_plan(num_heads, num_kv_heads, stage_heads, group)
    if rep > 1:
        w_k = w_k.view(num_kv_heads, head_dim, hidden).repeat_interleave(rep, dim=0).reshape(-1, hidden)
        w_v = w_v.view(num_kv_heads, head_dim, hidden).repeat_interleave(rep, dim=0).reshape(-1, hidden)
        b_k = None if b_k is None else b_k.view(num_kv_heads, head_dim).repeat_interleave(rep, dim=0).reshape(-1)
        b_v = None if b_v is None else b_v.view(num_kv_heads, head_dim).repeat_interleave(rep, dim=0).reshape(-1)
    meta = (group, causal, scale_, layout, stages, num_heads, head_dim)
    weights = (x.contiguous(), w_q.contiguous(), w_k.contiguous(), w_v.contiguous())
    biases = tuple(None if b is None else b.contiguous() for b in (b_q, b_k, b_v))
    return _UPipeFused.apply(*weights, *biases, cos, sin, meta)


def _check_bias(bias: Any, dtype: torch.dtype, q_size: int, kv_size: int) -> tuple[Any, Any, Any]:
    """``(b_q, b_k, b_v)`` after checking their type, dtype and shape (``None`` entries allowed)."""
    if bias is None:
        return None, None, None
    if not isinstance(bias, tuple | list) or len(bias) != 3:
        raise TypeError(f"bias must be None or a (b_q, b_k, b_v) triple, got {type(bias).__name__}")
    for name, b, size in zip(("b_q", "b_k", "b_v"), bias, (q_size, kv_size, kv_size), strict=True):
        if b is None:
            continue
        if not isinstance(b, torch.Tensor) or b.dtype != dtype:
            raise TypeError(f"bias {name} must be None or a tensor of dtype {dtype}, got {getattr(b, 'dtype', b)!r}")
        if tuple(b.shape) != (size,):
            raise ValueError(f"bias {name} must have shape ({size},), got {tuple(b.shape)}")
    return bias[0], bias[1], bias[2]
