"""Ulysses, ring and UPipe on 1, 2 and 4 real gloo ranks equal dense attention on the full sequence.

The reference is an explicit fp64 softmax attention (with its own rotary embedding written with complex
numbers) on the full sequence in one process; outputs and the gradients of the layer input and of every
projection weight are compared. Many cases go through one ``run_on_ranks`` call per world size.
"""

from __future__ import annotations

import itertools

import pytest
import torch

from tests._support.distributed import run_on_ranks
from tests.ops._attention_support import BACKENDS, check_cases

# Element-wise |got - want| <= ATOL + RTOL * max|want| (torch.allclose style): fp32 weight gradients are sums
# over all tokens with magnitudes up to ~25 here, whose rounding alone is ~1e-6 relative.
FP32_ATOL, FP32_RTOL = 1e-5, 1e-6
FP64_ATOL = 1e-10
# bf16 keeps 8 mantissa bits: errors are measured relative to the largest reference entry of each tensor.
BF16_RTOL = 3e-2

# (num_heads, num_kv_heads, stage_heads) per world size: GQA ratios 1, 2, 4, several head counts and stage
# sizes (None = default U = P); (8, 2) and (4, 1) on 4 ranks need KV-head replication.
HEADS = {
    1: [(4, 4, None), (8, 4, 2), (8, 2, 4)],
    2: [(4, 4, None), (8, 4, 4), (8, 2, None), (16, 4, 8), (8, 8, 8)],
    4: [(8, 8, None), (8, 4, 8), (16, 4, 4), (8, 2, None), (4, 1, None)],
}


def _cases(world: int) -> list[dict]:
    cases = []
    modes = list(itertools.product((True, False), ("contiguous", "headtail")))
    if world != 2:  # every mode on 2 ranks; two complementary ones elsewhere (spawned ranks are slow)
        modes = [(True, "headtail"), (False, "contiguous")]
    for i, ((h, g, u), (causal, layout)) in enumerate(itertools.product(HEADS[world], modes)):
        cases.append(
            {
                "name": f"w{world}-H{h}-G{g}-U{u}-{'causal' if causal else 'full'}-{layout}",
                "seed": 100 * world + i,
                "b": 2,
                "s": 16,
                "e": 32,
                "h": h,
                "g": g,
                "d": 8,
                "causal": causal,
                "layout": layout,
                "rope": i % 3 != 2,
                "stage_heads": u,
                "dtype": torch.float32,
                "backends": BACKENDS,
            }
        )
    extra = dict(cases[0], name=f"w{world}-fp64", dtype=torch.float64, seed=7)
    bf16 = dict(cases[1], name=f"w{world}-bf16", dtype=torch.bfloat16, seed=8, s=32)
    return [*cases, extra, bf16]


def _assert(rows: list[dict]) -> None:
    assert rows, "no results"
    failures = []
    for row in rows:
        for key in ("out", "dx", "dw_q", "dw_k", "dw_v"):
            err, scale = row[key], row[key + "_scale"]
            if "bf16" in row["case"]:
                ok = err <= BF16_RTOL * scale
            elif "fp64" in row["case"]:
                ok = err <= FP64_ATOL
            else:
                ok = err <= FP32_ATOL + FP32_RTOL * scale
            if not ok:
                failures.append(f"{row['case']} {row['backend']} {key}: err={err:.3g} (scale {scale:.3g})")
    assert not failures, "\n".join(failures)


@pytest.mark.distributed
@pytest.mark.parametrize("world", [1, 2, pytest.param(4, marks=pytest.mark.slow)])
def test_backends_match_dense_reference(world: int) -> None:
    cases = _cases(world)
    results = run_on_ranks(check_cases, world, cases, timeout=300)
    rows = [row for rank_rows in results for row in rank_rows]
    assert len(rows) == world * len(cases) * len(BACKENDS)
    _assert(rows)
