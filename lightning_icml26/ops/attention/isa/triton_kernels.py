"""Triton forward and backward kernels of ISA's 0-th order Taylor path (the ``backend="triton"`` of ISA).

Imported only when ``backend="triton"`` is asked for (through ``lightning_icml26._optional.require``), so
importing the package never imports triton. One program handles one (batch·head, query block): an online
softmax first over the tokens of the block's exact key blocks, then over the block-mean keys of every other
kept block, whose logit carries ``+ log c_B`` (the block size) and whose value is the block-mean value.
The backward recomputes the probabilities from the saved log-sum-exp (as flash attention does), writes the
query gradient of its block and accumulates key/value gradients with atomic adds (several query blocks
share a key block). Tiles are cast to fp32 before ``tl.dot`` (bf16 dots are wrong under ``TRITON_INTERPRET=1``).
On the CPU the kernels run only under ``TRITON_INTERPRET=1`` (set before triton is imported).
"""

from __future__ import annotations

from typing import Any

import torch
import triton
import triton.language as tl
from torch import Tensor

__all__ = ["taylor_path_triton"]


@triton.jit
def _fwd(  # type: ignore[no-untyped-def]
    Q, K, V, KM, VM, LOGC, COUNTS, EXACT, ISEX, OUT, LSE,
    scale, n_blocks, m_blocks, n_kv,
    NS: tl.constexpr, BLOCK: tl.constexpr, D: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_N: tl.constexpr,
):  # fmt: skip
    bh = tl.program_id(0)
    i = tl.program_id(1)
    rows = tl.arange(0, BLOCK)
    cols = tl.arange(0, BLOCK_D)
    dmask = cols < D
    q_off = ((bh * m_blocks + i) * BLOCK + rows[:, None]) * D + cols[None, :]
    q = tl.load(Q + q_off, mask=dmask[None, :], other=0.0).to(tl.float32)
    m_i = tl.full([BLOCK], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK], tl.float32)
    acc = tl.zeros([BLOCK, BLOCK_D], tl.float32)
    for s in range(NS):
        blk = tl.load(EXACT + (bh * m_blocks + i) * NS + s)
        cnt = tl.load(COUNTS + blk)
        kv_off = ((bh * n_blocks + blk) * BLOCK + rows[:, None]) * D + cols[None, :]
        k = tl.load(K + kv_off, mask=dmask[None, :], other=0.0).to(tl.float32)
        v = tl.load(V + kv_off, mask=dmask[None, :], other=0.0).to(tl.float32)
        sc = tl.dot(q, tl.trans(k)) * scale
        sc = tl.where((rows < cnt)[None, :], sc, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(sc, 1))
        p = tl.exp(sc - m_new[:, None])
        alpha = tl.exp(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None] + tl.dot(p, v)
        m_i = m_new
    js = tl.arange(0, BLOCK_N)
    for j0 in range(0, n_kv, BLOCK_N):
        j = j0 + js
        jmask = j < n_kv
        mean_off = (bh * n_kv + j[:, None]) * D + cols[None, :]
        km = tl.load(KM + mean_off, mask=jmask[:, None] & dmask[None, :], other=0.0).to(tl.float32)
        vm = tl.load(VM + mean_off, mask=jmask[:, None] & dmask[None, :], other=0.0).to(tl.float32)
        logc = tl.load(LOGC + bh * n_kv + j, mask=jmask, other=0.0)
        isex = tl.load(ISEX + (bh * m_blocks + i) * n_kv + j, mask=jmask, other=1)
        sc = tl.dot(q, tl.trans(km)) * scale + logc[None, :]
        sc = tl.where((jmask & (isex == 0))[None, :], sc, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(sc, 1))
        p = tl.exp(sc - m_new[:, None])
        alpha = tl.exp(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None] + tl.dot(p, vm)
        m_i = m_new
    tl.store(OUT + q_off, acc / l_i[:, None], mask=dmask[None, :])
    tl.store(LSE + (bh * m_blocks + i) * BLOCK + rows, m_i + tl.log(l_i))


@triton.jit
def _bwd(  # type: ignore[no-untyped-def]
    Q, K, V, KM, VM, LOGC, COUNTS, EXACT, ISEX, DO, LSE, DELTA, DQ, DK, DV, DKM, DVM,
    scale, n_blocks, m_blocks, n_kv,
    NS: tl.constexpr, BLOCK: tl.constexpr, D: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_N: tl.constexpr,
):  # fmt: skip
    bh = tl.program_id(0)
    i = tl.program_id(1)
    rows = tl.arange(0, BLOCK)
    cols = tl.arange(0, BLOCK_D)
    dmask = cols < D
    q_off = ((bh * m_blocks + i) * BLOCK + rows[:, None]) * D + cols[None, :]
    q = tl.load(Q + q_off, mask=dmask[None, :], other=0.0).to(tl.float32)
    do = tl.load(DO + q_off, mask=dmask[None, :], other=0.0).to(tl.float32)
    lse = tl.load(LSE + (bh * m_blocks + i) * BLOCK + rows)
    delta = tl.load(DELTA + (bh * m_blocks + i) * BLOCK + rows)
    dq = tl.zeros([BLOCK, BLOCK_D], tl.float32)
    for s in range(NS):
        blk = tl.load(EXACT + (bh * m_blocks + i) * NS + s)
        cnt = tl.load(COUNTS + blk)
        kv_off = ((bh * n_blocks + blk) * BLOCK + rows[:, None]) * D + cols[None, :]
        k = tl.load(K + kv_off, mask=dmask[None, :], other=0.0).to(tl.float32)
        v = tl.load(V + kv_off, mask=dmask[None, :], other=0.0).to(tl.float32)
        sc = tl.dot(q, tl.trans(k)) * scale
        p = tl.where((rows < cnt)[None, :], tl.exp(sc - lse[:, None]), 0.0)
        dp = tl.dot(do, tl.trans(v))
        ds = p * (dp - delta[:, None])
        dq += tl.dot(ds, k) * scale
        tl.atomic_add(DV + kv_off, tl.dot(tl.trans(p), do), mask=dmask[None, :])
        tl.atomic_add(DK + kv_off, tl.dot(tl.trans(ds), q) * scale, mask=dmask[None, :])
    js = tl.arange(0, BLOCK_N)
    for j0 in range(0, n_kv, BLOCK_N):
        j = j0 + js
        jmask = j < n_kv
        mean_off = (bh * n_kv + j[:, None]) * D + cols[None, :]
        mmask = jmask[:, None] & dmask[None, :]
        km = tl.load(KM + mean_off, mask=mmask, other=0.0).to(tl.float32)
        vm = tl.load(VM + mean_off, mask=mmask, other=0.0).to(tl.float32)
        logc = tl.load(LOGC + bh * n_kv + j, mask=jmask, other=0.0)
        isex = tl.load(ISEX + (bh * m_blocks + i) * n_kv + j, mask=jmask, other=1)
        sc = tl.dot(q, tl.trans(km)) * scale + logc[None, :]
        p = tl.where((jmask & (isex == 0))[None, :], tl.exp(sc - lse[:, None]), 0.0)
        dp = tl.dot(do, tl.trans(vm))
        ds = p * (dp - delta[:, None])
        dq += tl.dot(ds, km) * scale
        tl.atomic_add(DVM + mean_off, tl.dot(tl.trans(p), do), mask=mmask)
        tl.atomic_add(DKM + mean_off, tl.dot(tl.trans(ds), q) * scale, mask=mmask)
    tl.store(DQ + q_off, dq, mask=dmask[None, :])


def _block_n(n_kv: int) -> int:
    return max(16, min(64, triton.next_power_of_2(n_kv)))


class _TaylorPath(torch.autograd.Function):
    @staticmethod
    def forward(  # type: ignore[override]
        ctx: Any, qs: Tensor, kp: Tensor, vp: Tensor, km: Tensor, vm: Tensor,
        logc: Tensor, counts: Tensor, exact: Tensor, is_exact: Tensor, scale: float,
    ) -> Tensor:  # fmt: skip
        bsz, heads, m, b, d = qs.shape
        n, n_kv, ns = kp.shape[2], km.shape[2], exact.shape[-1]
        args = [t.contiguous() for t in (qs, kp, vp, km, vm)]
        meta = (logc.float().contiguous(), counts.to(torch.int32).contiguous(),
                exact.to(torch.int32).contiguous(), is_exact.to(torch.int32).contiguous())  # fmt: skip
        out = torch.empty(qs.shape, dtype=torch.float32, device=qs.device)
        lse = torch.empty(bsz, heads, m, b, dtype=torch.float32, device=qs.device)
        consts = {"NS": ns, "BLOCK": b, "D": d, "BLOCK_D": triton.next_power_of_2(d), "BLOCK_N": _block_n(n_kv)}
        _fwd[(bsz * heads, m)](*args, *meta, out, lse, scale, n, m, n_kv, **consts)
        ctx.save_for_backward(*args, *meta, out, lse)
        ctx.scale, ctx.consts = scale, consts
        return out.to(qs.dtype)

    @staticmethod
    def backward(ctx: Any, dout: Tensor) -> Any:  # type: ignore[override]
        qs, kp, vp, km, vm, logc, counts, exact, is_exact, out, lse = ctx.saved_tensors
        bsz, heads, m, _, _ = qs.shape
        do = dout.float().contiguous()
        delta = (do * out).sum(-1).contiguous()
        dq = torch.empty(qs.shape, dtype=torch.float32, device=qs.device)
        dk, dv = (torch.zeros(t.shape, dtype=torch.float32, device=t.device) for t in (kp, vp))
        dkm, dvm = (torch.zeros(t.shape, dtype=torch.float32, device=t.device) for t in (km, vm))
        _bwd[(bsz * heads, m)](
            qs, kp, vp, km, vm, logc, counts, exact, is_exact, do, lse, delta, dq, dk, dv, dkm, dvm,
            ctx.scale, kp.shape[2], m, km.shape[2], **ctx.consts,
        )  # fmt: skip
        grads = (dq.to(qs.dtype), dk.to(kp.dtype), dv.to(vp.dtype), dkm.to(km.dtype), dvm.to(vm.dtype))
        return (*grads, None, None, None, None, None)


def taylor_path_triton(
    qs: Tensor, kp: Tensor, vp: Tensor, km: Tensor, vm: Tensor, logc: Tensor, counts: Tensor, exact: Tensor,
    is_exact: Tensor, scale: float,
) -> Tensor:  # fmt: skip
    """The Taylor path on gathered query blocks (differentiable in q, k, v and the block means).

    Args:
        qs: query blocks ``(B, H, m, b, D)`` (``b`` a power of two, at least 16 for ``tl.dot``).
        kp: padded key blocks ``(B, H, n, b, D)``.
        vp: padded value blocks, same shape.
        km: means of the kept key blocks ``(B, H, n_kv, D)``.
        vm: means of the kept value blocks, same shape.
        logc: log token count of each kept block ``(B, H, n_kv)``.
        counts: token count of every block ``(n,)`` (tokens past the count are padding).
        exact: global ids of each query block's exact key blocks ``(B, H, m, NS)``.
        is_exact: ``(B, H, m, n_kv)``, nonzero where a kept block is one of the exact ones.
        scale: softmax scale.

    Returns:
        ``(B, H, m, b, D)`` in the dtype of ``qs``.
    """
    return _TaylorPath.apply(qs, kp, vp, km, vm, logc, counts, exact, is_exact, scale)  # type: ignore[no-any-return]
