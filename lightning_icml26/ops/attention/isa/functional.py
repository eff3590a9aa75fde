"""In-context sparse attention (ISA): the pure-torch reference on a ``[target ‖ context]`` sequence.

The sequence holds ``target_len`` target tokens (the clip being edited or generated) followed by context
tokens (the reference clip). Each part is cut into blocks of ``block_size`` tokens (the last block of each
part may be shorter) and every block is mean-pooled. From the pooled attention ``softmax(q̄ k̄ᵀ · scale)``:

1. **Context pre-selection.** Each context key block is scored by the pooled probability mass it receives
   from the target query blocks (per batch element and head); the top ``context_keep`` share of context
   blocks (at least one) is kept, the rest is dropped from the exact and the Taylor paths.
2. **Sharpness routing.** The sharpness of a query block is the summed pooled probability of its
   ``sharpness_fraction`` top target key blocks (at least one). The sharpest ``full_fraction`` share of query
   blocks (at least one) attends exactly (SDPA) over all kept tokens; the others take the Taylor path.
3. **0-th order Taylor path.** A query block attends exactly to the tokens of its ``exact_block_fraction``
   top kept key blocks (by pooled probability, at least one); every other kept block ``B`` of ``c_B`` tokens
   contributes one logit ``q·k̄_B · scale + log c_B`` with value ``v̄_B``, i.e. ``c_B · exp(q·k̄_B) · v̄_B``
   in the numerator and ``c_B · exp(q·k̄_B)`` in the denominator of the same softmax. (The authors' kernel
   ranks the exact blocks by the dot product of block sums of q and k and weights every block by the full
   block size: the same for whole blocks; only ragged blocks are treated differently here.)
4. **Gate (optional).** ``out + α · out_coarse`` with ``α = 0.5 · (sigmoid(gate_logits) − 0.5)`` in
   ``(−0.25, 0.25)`` and ``out_coarse = softmax(q̄ k̄ᵀ · scale) v̄`` broadcast to every token of a block.

Counts use ``floor(fraction · n)`` with a minimum of one, so ``1/8`` of 16 context blocks keeps 2. Every query
block, target or context, is routed; blocks never straddle the target/context border.
"""

from __future__ import annotations

import importlib
import math
from typing import Any, Literal, overload

import torch
import torch.nn.functional as F
from torch import Tensor

from lightning_icml26._checks import check_fraction
from lightning_icml26._optional import require

__all__ = ["ISA_BACKENDS", "ISA_ROUTINGS", "check_fraction", "check_isa_inputs", "check_same_qkv", "isa_attention"]

ISA_ROUTINGS = ("sharpness", "random", "taylor")
ISA_BACKENDS = ("torch", "triton")


def _count(fraction: float, n: int) -> int:
    return max(1, min(n, int(math.floor(fraction * n + 1e-9))))


def check_same_qkv(q: Any, k: Any, v: Any) -> None:
    """Raise ``TypeError``/``ValueError`` naming the argument unless q, k, v are 4-D float tensors alike."""
    for name, t in (("q", q), ("k", k), ("v", v)):
        if not isinstance(t, Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
        if t.ndim != 4:
            raise ValueError(f"{name} must have shape (batch, seq, heads, head_dim), got {tuple(t.shape)}")
        if not t.is_floating_point():
            raise TypeError(f"{name} must be a floating-point tensor, got dtype {t.dtype}")
    if not (q.dtype == k.dtype == v.dtype):
        raise TypeError(f"q, k, v must share one dtype, got q={q.dtype}, k={k.dtype}, v={v.dtype}")
    if not (q.shape == k.shape == v.shape):
        raise ValueError(
            f"q, k, v must have the same shape, got q={tuple(q.shape)}, k={tuple(k.shape)}, v={tuple(v.shape)}"
        )


def check_isa_inputs(q: Any, k: Any, v: Any, target_len: Any, block_size: Any) -> None:
    """Raise ``TypeError``/``ValueError`` naming the argument when ISA's inputs disagree."""
    check_same_qkv(q, k, v)
    if isinstance(block_size, bool) or not isinstance(block_size, int) or block_size < 1:
        raise ValueError(f"block_size must be a positive integer, got {block_size!r}")
    seq = q.shape[1]
    if isinstance(target_len, bool) or not isinstance(target_len, int) or not 0 < target_len < seq:
        raise ValueError(
            f"target_len must be an integer with 0 < target_len < seq={seq} (both parts non-empty), got {target_len!r}"
        )


class _Blocks:
    """The padded block layout: target blocks then context blocks, each padded to ``block_size`` tokens."""

    def __init__(self, seq: int, target_len: int, block_size: int, device: torch.device) -> None:
        b = block_size
        self.b = b
        self.n_target = -(-target_len // b)
        self.n_context = -(-(seq - target_len) // b)
        self.n = self.n_target + self.n_context
        pos_t = torch.arange(self.n_target * b, device=device)
        pos_c = torch.arange(self.n_context * b, device=device)
        self.valid = torch.cat([pos_t < target_len, pos_c < seq - target_len]).view(self.n, b)
        self.counts = self.valid.sum(-1)
        self.positions = self.valid.flatten().nonzero().squeeze(-1)
        self.target_len, self.seq = target_len, seq

    def pad(self, x: Tensor) -> Tensor:
        """``(B, S, H, D)`` -> ``(B, H, n_blocks, b, D)`` with zeros in the padding."""
        xt = x.transpose(1, 2)
        t, c = xt[:, :, : self.target_len], xt[:, :, self.target_len :]
        pad_t = self.n_target * self.b - t.shape[2]
        pad_c = self.n_context * self.b - c.shape[2]
        xp = torch.cat([F.pad(t, (0, 0, 0, pad_t)), F.pad(c, (0, 0, 0, pad_c))], dim=2)
        return xp.view(xp.shape[0], xp.shape[1], self.n, self.b, xp.shape[-1])

    def unpad(self, xp: Tensor) -> Tensor:
        """``(B, H, n_blocks, b, D)`` -> ``(B, S, H, D)``."""
        flat = xp.reshape(xp.shape[0], xp.shape[1], self.n * self.b, xp.shape[-1])
        return flat[:, :, self.positions].transpose(1, 2)

    def mean(self, xp: Tensor) -> Tensor:
        return xp.sum(3) / self.counts.to(xp.dtype)[:, None]


def _triton_path(backend: Any, block_size: int) -> Any:
    """``None`` for the torch backend, else the Triton Taylor path (imports triton now, or says how to)."""
    if backend not in ISA_BACKENDS:
        raise ValueError(f"backend must be one of {ISA_BACKENDS}, got {backend!r}")
    if backend == "torch":
        return None
    require("triton", extra="kernels", purpose="ISA's Triton backend")
    if block_size < 16 or block_size & (block_size - 1):
        raise ValueError(f"block_size must be a power of two >= 16 for backend='triton', got {block_size}")
    return importlib.import_module("lightning_icml26.ops.attention.isa.triton_kernels").taylor_path_triton


def _gather_blocks(xp: Tensor, idx: Tensor) -> Tensor:
    """Blocks ``idx`` (``(B, H, *m)``) of ``xp`` (``(B, H, n, b, D)``) -> ``(B, H, *m, b, D)``."""
    bsz, heads, _, b, d = xp.shape
    flat = idx.reshape(bsz, heads, -1)
    out = xp.gather(2, flat[..., None, None].expand(-1, -1, -1, b, d))
    return out.view(*idx.shape, b, d)


def _taylor(
    qb: Tensor,
    kp: Tensor,
    vp: Tensor,
    k_mean: Tensor,
    v_mean: Tensor,
    kv_idx: Tensor,
    exact_local: Tensor,
    lay: _Blocks,
    scale: float,
    triton_path: Any = None,
) -> Tensor:
    """The Taylor path for query blocks ``qb`` (``(B, H, m, b, D)``) with their exact kept blocks ``exact_local``."""
    bsz, heads, m, b, d = qb.shape
    exact = kv_idx.unsqueeze(2).expand(-1, -1, m, -1).gather(3, exact_local)  # global block ids (B, H, m, NS)
    km = k_mean.gather(2, kv_idx[..., None].expand(-1, -1, -1, d))  # (B, H, n_kv, D)
    vm = v_mean.gather(2, kv_idx[..., None].expand(-1, -1, -1, d))
    log_c = lay.counts.to(torch.float32 if qb.dtype != torch.float64 else qb.dtype).log()[kv_idx]  # (B, H, n_kv)
    is_exact = torch.zeros(bsz, heads, m, kv_idx.shape[-1], dtype=torch.bool, device=qb.device)
    is_exact.scatter_(3, exact_local, True)
    if triton_path is not None:
        return triton_path(qb, kp, vp, km, vm, log_c, lay.counts, exact, is_exact, scale)  # type: ignore[no-any-return]
    ke = _gather_blocks(kp, exact).reshape(bsz, heads, m, -1, d)
    ve = _gather_blocks(vp, exact).reshape(bsz, heads, m, -1, d)
    tok = torch.matmul(qb, ke.transpose(-1, -2)) * scale  # (B, H, m, b, NS*b)
    tok_valid = lay.valid[exact].reshape(bsz, heads, m, 1, -1)
    tok = tok.masked_fill(~tok_valid, float("-inf"))
    blk = torch.einsum("bhmqd,bhkd->bhmqk", qb, km) * scale + log_c[:, :, None, None, :].to(qb.dtype)
    blk = blk.masked_fill(is_exact[:, :, :, None, :], float("-inf"))
    probs = torch.softmax(torch.cat([tok, blk], dim=-1), dim=-1)
    n_tok = tok.shape[-1]
    return torch.matmul(probs[..., :n_tok], ve) + torch.einsum("bhmqk,bhkd->bhmqd", probs[..., n_tok:], vm)


@overload
def isa_attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    target_len: int,
    *,
    block_size: int = 64,
    context_keep: float = 0.125,
    full_fraction: float = 0.5,
    exact_block_fraction: float = 0.0625,
    sharpness_fraction: float = 0.0625,
    gate_logits: Tensor | None = None,
    scale: float | None = None,
    routing: str = "sharpness",
    generator: torch.Generator | None = None,
    backend: str = "torch",
    return_info: Literal[False] = False,
) -> Tensor: ...


@overload
def isa_attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    target_len: int,
    *,
    block_size: int = 64,
    context_keep: float = 0.125,
    full_fraction: float = 0.5,
    exact_block_fraction: float = 0.0625,
    sharpness_fraction: float = 0.0625,
    gate_logits: Tensor | None = None,
    scale: float | None = None,
    routing: str = "sharpness",
    generator: torch.Generator | None = None,
    backend: str = "torch",
    return_info: Literal[True],
) -> tuple[Tensor, dict[str, Any]]: ...


def isa_attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    target_len: int,
    *,
    block_size: int = 64,
    context_keep: float = 0.125,
    full_fraction: float = 0.5,
    exact_block_fraction: float = 0.0625,
    sharpness_fraction: float = 0.0625,
    gate_logits: Tensor | None = None,
    scale: float | None = None,
    routing: str = "sharpness",
    generator: torch.Generator | None = None,
    backend: str = "torch",
    return_info: bool = False,
) -> Tensor | tuple[Tensor, dict[str, Any]]:
    """In-context sparse attention on a ``[target ‖ context]`` sequence (non-causal, as in video diffusion).

    Args:
        q: ``(batch, seq, heads, head_dim)``; the first ``target_len`` tokens are the target.
        k: same shape and dtype as ``q``.
        v: same shape and dtype as ``q``.
        target_len: number of target tokens, ``0 < target_len < seq``.
        block_size: tokens per block (the last block of each part may be shorter).
        context_keep: share of context blocks kept by pre-selection, in ``(0, 1]``.
        full_fraction: share of query blocks routed to exact attention, in ``(0, 1]``.
        exact_block_fraction: share of kept key blocks each Taylor-path query block attends to exactly.
        sharpness_fraction: share of target key blocks whose pooled mass defines a query block's sharpness.
        gate_logits: optional ``(batch, seq, heads)`` or ``(batch, seq, 1)`` logits of the gate on the
            coarse path (``None``: no coarse path).
        scale: softmax scale, default ``head_dim ** -0.5``.
        routing: ``"sharpness"`` (the method), ``"random"`` (same counts, random choice of the exact query
            blocks; an ablation) or ``"taylor"`` (every query block on the Taylor path, ignoring
            ``full_fraction``).
        generator: random generator for ``routing="random"``.
        backend: ``"torch"`` (this reference) or ``"triton"`` (the Taylor path as a Triton kernel, forward and
            backward; needs the ``kernels`` extra and a power-of-two ``block_size >= 16``; everything else
            stays in torch).
        return_info: also return a dict with the selections and the count of computed scores.

    Returns:
        ``(batch, seq, heads, head_dim)``, and with ``return_info`` a dict: ``kept_context_blocks``
        ``(B, H, n_keep)`` (context block indices), ``full_blocks`` ``(B, H, n_blocks)`` bool, ``sharpness``
        ``(B, H, n_blocks)``, ``exact_blocks`` ``(B, H, n_blocks, n_exact)`` (global block ids, target blocks
        first), ``computed_scores`` and ``dense_scores`` (ints, over batch and heads).

    Example:
        >>> q, k, v = torch.randn(3, 1, 40, 2, 8).unbind(0)
        >>> isa_attention(q, k, v, target_len=24, block_size=8).shape
        torch.Size([1, 40, 2, 8])
    """
    check_isa_inputs(q, k, v, target_len, block_size)
    context_keep = check_fraction("context_keep", context_keep)
    full_fraction = check_fraction("full_fraction", full_fraction)
    exact_block_fraction = check_fraction("exact_block_fraction", exact_block_fraction)
    sharpness_fraction = check_fraction("sharpness_fraction", sharpness_fraction)
    if routing not in ISA_ROUTINGS:
        raise ValueError(f"routing must be one of {ISA_ROUTINGS}, got {routing!r}")
    triton_path = _triton_path(backend, block_size)
    bsz, seq, heads, d = q.shape
    if gate_logits is not None:
        if not isinstance(gate_logits, Tensor):
            raise TypeError(f"gate_logits must be a torch.Tensor or None, got {type(gate_logits).__name__}")
        if gate_logits.shape not in ((bsz, seq, heads), (bsz, seq, 1)):
            raise ValueError(
                f"gate_logits must have shape ({bsz}, {seq}, {heads}) or ({bsz}, {seq}, 1), "
                f"got {tuple(gate_logits.shape)}"
            )
    if scale is None:
        scale = d**-0.5
    elif isinstance(scale, bool) or not isinstance(scale, int | float) or not scale > 0:
        raise ValueError(f"scale must be a positive number or None, got {scale!r}")
    lay = _Blocks(seq, target_len, block_size, q.device)
    qp, kp, vp = lay.pad(q), lay.pad(k), lay.pad(v)
    q_mean, k_mean, v_mean = lay.mean(qp), lay.mean(kp), lay.mean(vp)
    pooled = torch.softmax(torch.matmul(q_mean, k_mean.transpose(-1, -2)) * scale, dim=-1)  # (B, H, n, n)
    pooled_d = pooled.detach()
    nt, nc, n = lay.n_target, lay.n_context, lay.n

    # 1. context pre-selection by the pooled mass from target queries
    saliency = pooled_d[:, :, :nt, nt:].sum(2)
    n_keep = _count(context_keep, nc)
    kept_ctx = saliency.topk(n_keep, dim=-1).indices.sort(-1).values
    target_ids = torch.arange(nt, device=q.device).expand(bsz, heads, nt)
    kv_idx = torch.cat([target_ids, kept_ctx + nt], dim=-1)  # (B, H, n_kv)
    n_kv = kv_idx.shape[-1]

    # 2. sharpness and routing
    sharp = pooled_d[:, :, :, :nt].topk(_count(sharpness_fraction, nt), dim=-1).values.sum(-1)
    key = torch.rand(bsz, heads, n, generator=generator, device="cpu").to(q.device) if routing == "random" else sharp
    n_full = 0 if routing == "taylor" else _count(full_fraction, n)
    order = key.argsort(dim=-1, descending=True, stable=True)
    full_idx, sparse_idx = order[..., :n_full], order[..., n_full:]
    full_mask = torch.zeros(bsz, heads, n, dtype=torch.bool, device=q.device)
    full_mask.scatter_(2, full_idx, True)

    pooled_kv = pooled_d.gather(3, kv_idx[:, :, None, :].expand(-1, -1, n, -1))  # (B, H, n, n_kv)
    n_exact = _count(exact_block_fraction, n_kv)
    exact_local = pooled_kv.topk(n_exact, dim=-1).indices  # (B, H, n, NS)

    out_p = torch.zeros_like(qp)
    # no padding when both parts are whole blocks: no mask then, so SDPA may take its flash backend (which takes none)
    whole_blocks = target_len % block_size == 0 and (seq - target_len) % block_size == 0
    key_valid = None if whole_blocks else lay.valid[kv_idx].reshape(bsz, heads, 1, -1)
    if n_full > 0:  # 3a. exact attention over all kept tokens
        qf = _gather_blocks(qp, full_idx).reshape(bsz, heads, -1, d)
        kf = _gather_blocks(kp, kv_idx).reshape(bsz, heads, -1, d)
        vf = _gather_blocks(vp, kv_idx).reshape(bsz, heads, -1, d)
        of = F.scaled_dot_product_attention(qf, kf, vf, attn_mask=key_valid, scale=scale)
        out_p = out_p.scatter(
            2, full_idx[..., None, None].expand(-1, -1, -1, lay.b, d), of.view(bsz, heads, -1, lay.b, d)
        )
    if sparse_idx.shape[-1] > 0:  # 3b. the Taylor path
        qs = _gather_blocks(qp, sparse_idx)
        ex = exact_local.gather(2, sparse_idx[..., None].expand(-1, -1, -1, n_exact))
        os_ = _taylor(qs, kp, vp, k_mean, v_mean, kv_idx, ex, lay, scale, triton_path)
        out_p = out_p.scatter(2, sparse_idx[..., None, None].expand(-1, -1, -1, lay.b, d), os_)
    if gate_logits is not None:  # 4. gated coarse path
        coarse = torch.matmul(pooled, v_mean)  # (B, H, n, D)
        alpha = 0.5 * (torch.sigmoid(gate_logits) - 0.5)
        alpha_p = lay.pad(alpha.unsqueeze(-1).expand(bsz, seq, heads, 1))
        out_p = out_p + alpha_p * coarse.unsqueeze(3)
    out = lay.unpad(out_p)
    if not return_info:
        return out
    counts = lay.counts.to(torch.long)
    kept_tokens = counts[kv_idx].sum(-1)  # (B, H)
    exact_tokens = counts[kv_idx.unsqueeze(2).expand(-1, -1, n, -1).gather(3, exact_local)].sum(-1)  # (B, H, n)
    per_block = torch.where(full_mask, kept_tokens[..., None], exact_tokens + (n_kv - n_exact)) * counts
    info = {
        "kept_context_blocks": kept_ctx,
        "full_blocks": full_mask,
        "sharpness": sharp,
        "exact_blocks": kv_idx.unsqueeze(2).expand(-1, -1, n, -1).gather(3, exact_local),
        "computed_scores": int(per_block.sum()) + bsz * heads * n * n,
        "dense_scores": bsz * heads * seq * seq,
    }
    return out, info
