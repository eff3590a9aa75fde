"""ISA against dense attention and two equal-budget sparse baselines on one input: errors, budgets and insights.

:func:`compare_isa_attention` runs, on the same ``[target ‖ context]`` tensors, dense SDPA (the reference),
SpargeAttn-style top-k block attention given ISA's score budget, ISA with random routing, and ISA; it reports each
method's computed scores relative to dense, relative L2 error and cosine against dense, and wall time, plus the
paper's two insights: the attention mass per context token relative to a target token
(:func:`context_mass_ratio`) and the Spearman correlation between a query block's sharpness and the Taylor path's
per-block error (:func:`isa_block_errors`), also for the pure 0-th order path (:func:`zeroth_order_attention`).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F
from scipy.stats import spearmanr
from torch import Tensor

from lightning_icml26.metrics.functional import attention_approx_error
from lightning_icml26.ops.attention import isa_attention, topk_block_attention

__all__ = [
    "ISA_COMPARED_METHODS",
    "compare_isa_attention",
    "context_mass_ratio",
    "isa_block_errors",
    "zeroth_order_attention",
]

ISA_COMPARED_METHODS = ("dense", "topk_block", "isa_random", "isa")


def context_mass_ratio(q: Tensor, k: Tensor, n_target: int) -> float:
    """Mean dense attention mass per context token over that per target token, from the target queries.

    ``q``, ``k``: ``(batch, seq, heads, head_dim)`` with the ``n_target`` target tokens first; mean over heads.

    Example:
        >>> q = torch.zeros(1, 8, 1, 4)
        >>> context_mass_ratio(q, torch.randn(1, 8, 1, 4), 4)  # uniform attention: equal mass per token
        1.0
    """
    if not 0 < n_target < q.shape[1]:
        raise ValueError(f"n_target must be in (0, {q.shape[1]}), got {n_target}")
    scale = q.shape[-1] ** -0.5
    n_c = q.shape[1] - n_target
    ratios = []
    for h in range(q.shape[2]):
        p = torch.softmax(q[:, :n_target, h] @ k[:, :, h].transpose(-1, -2) * scale, dim=-1)
        ctx = p[..., n_target:].sum(-1).mean()
        ratios.append(float((ctx / n_c) / ((1 - ctx) / n_target)))
    return statistics.mean(ratios)


def isa_block_errors(out: Tensor, ref: Tensor, block_size: int = 64, relative: bool = True) -> Tensor:
    """L2 error per ``(batch, head, block)`` of ``block_size`` tokens, relative to the block's reference norm or not.

    Example:
        >>> ref = torch.ones(1, 4, 1, 2)
        >>> isa_block_errors(2 * ref, ref, block_size=2).flatten().tolist()
        [1.0, 1.0]
    """
    b, s, h, d = ref.shape
    if s % block_size:
        raise ValueError(f"the sequence ({s}) must be a multiple of block_size={block_size}")
    shape = (b, s // block_size, block_size, h, d)
    err = (out - ref).reshape(shape).norm(dim=(2, 4))
    if relative:
        err = err / ref.reshape(shape).norm(dim=(2, 4))
    return err.transpose(1, 2)


def zeroth_order_attention(q: Tensor, k: Tensor, v: Tensor, block_size: int = 64) -> Tensor:
    """Every key block replaced by its mean key and value: ``softmax(q k̄ᵀ / √d) v̄`` (the 0-th order path).

    Example:
        >>> k = v = torch.ones(1, 4, 1, 2)
        >>> zeroth_order_attention(torch.randn(1, 4, 1, 2), k, v, block_size=2).flatten().tolist()
        [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0]
    """
    b, s, h, d = k.shape
    km = k.reshape(b, s // block_size, block_size, h, d).mean(2).transpose(1, 2)
    vm = v.reshape(b, s // block_size, block_size, h, d).mean(2).transpose(1, 2)
    return (torch.softmax(q.transpose(1, 2) @ km.transpose(-1, -2) * d**-0.5, -1) @ vm).transpose(1, 2)


def _dense(q: Tensor, k: Tensor, v: Tensor) -> Tensor:
    return F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)).transpose(1, 2)


def _timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    start = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - start


def _methods(q: Tensor, k: Tensor, v: Tensor, n_t: int, seed: int, block: int) -> tuple[dict[str, Any], ...]:
    """Outputs, computed scores and seconds of the four methods, ISA's info, top-k's key blocks per query."""
    ref, t_dense = _timed(lambda: _dense(q, k, v))
    (out_isa, info), t_isa = _timed(lambda: isa_attention(q, k, v, n_t, block_size=block, return_info=True))
    gen = torch.Generator().manual_seed(seed)
    (out_rand, info_r), t_rand = _timed(
        lambda: isa_attention(q, k, v, n_t, block_size=block, routing="random", generator=gen, return_info=True)
    )
    bsz, seq, heads, _ = q.shape
    pooled = bsz * heads * (seq // block) ** 2
    per_query = max(1, round((info["computed_scores"] - pooled) / (bsz * heads * seq * block)))
    out_topk, t_topk = _timed(lambda: topk_block_attention(q, k, v, per_query, block_size=block))
    outs = {"dense": ref, "topk_block": out_topk, "isa_random": out_rand, "isa": out_isa}
    scores = {"dense": info["dense_scores"], "topk_block": pooled + bsz * heads * seq * per_query * block,
              "isa_random": info_r["computed_scores"], "isa": info["computed_scores"]}  # fmt: skip
    times = {"dense": t_dense, "topk_block": t_topk, "isa_random": t_rand, "isa": t_isa}
    return outs, scores, times, {"info": info, "per_query": per_query}


def compare_isa_attention(
    q: Tensor, k: Tensor, v: Tensor, n_target: int, seed: int = 0, block_size: int = 64
) -> dict[str, Any]:
    """Every method of :data:`ISA_COMPARED_METHODS` and the insight measurements on one input.

    Returns:
        ``rows`` (per method: ``score_ratio``, ``rel_l2``, ``cosine``, ``cpu_s``), ``topk_blocks_per_query``,
        ``context_mass_ratio``, ``spearman_taylor`` (sharpness against the Taylor path's relative per-block error,
        all context kept), ``spearman_taylor_abs`` (absolute error), ``spearman_zeroth`` (0-th order path) and
        ``all_context_err_over_random`` (ISA's error over random routing's with all context kept).

    Example:
        >>> from lightning_icml26.data import video_qkv
        >>> q, k, v, n_t = video_qkv(4, 8, 8, heads=2, head_dim=16, seed=0)
        >>> out = compare_isa_attention(q, k, v, n_t, block_size=16)
        >>> out["rows"]["dense"]["rel_l2"], 0 < out["rows"]["isa"]["score_ratio"] < 1
        (0.0, True)
    """
    outs, scores, times, extra = _methods(q, k, v, n_target, seed, block_size)
    ref = outs["dense"]
    rows = {}
    for m in ISA_COMPARED_METHODS:
        err = attention_approx_error(outs[m], ref)
        rows[m] = {"score_ratio": scores[m] / scores["dense"], "rel_l2": float(err["rel_l2"]),
                   "cosine": float(err["cosine"]), "cpu_s": times[m]}  # fmt: skip
    taylor = isa_attention(q, k, v, n_target, block_size=block_size, routing="taylor", context_keep=1.0)
    sharp = extra["info"]["sharpness"].flatten().numpy()

    def rho(out: Tensor, relative: bool = True) -> float:
        return float(spearmanr(sharp, isa_block_errors(out, ref, block_size, relative).flatten().numpy()).statistic)

    all_ctx = isa_attention(q, k, v, n_target, block_size=block_size, context_keep=1.0)
    gen = torch.Generator().manual_seed(seed)
    all_rand = isa_attention(
        q, k, v, n_target, block_size=block_size, context_keep=1.0, routing="random", generator=gen
    )
    rand_err = float(attention_approx_error(all_rand, ref)["rel_l2"])
    return {
        "rows": rows,
        "topk_blocks_per_query": extra["per_query"],
        "context_mass_ratio": context_mass_ratio(q, k, n_target),
        "spearman_taylor": rho(taylor),
        "spearman_taylor_abs": rho(taylor, relative=False),
        "spearman_zeroth": rho(zeroth_order_attention(q, k, v, block_size)),
        "all_context_err_over_random": float(attention_approx_error(all_ctx, ref)["rel_l2"]) / rand_err
        if rand_err > 0
        else float("nan"),
    }
