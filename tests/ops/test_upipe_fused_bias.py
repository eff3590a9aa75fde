"""The fused UPipe operator with q/k/v projection biases (Qwen2-style) against an fp64 dense reference.

Two gloo ranks; GQA with KV heads dividing the context-parallel size and with fewer KV heads than ranks (the
KV weights and biases are replicated, their gradients summed); both sequence layouts; rotary embedding on.
Tolerance 1e-10 absolute: everything runs in fp64, differences come from summation order only.
"""

from __future__ import annotations

import math
from typing import Any

import pytest
import torch
import torch.distributed as dist

from lightning_icml26.ops.attention import upipe_attention
from tests._support.distributed import run_on_ranks
from tests.ops._attention_support import reference_attention, reference_rope, rope_tables, shard_indices

B, S, E, D = 2, 16, 16, 4
CASES = [  # (query heads, KV heads, layout, stage heads)
    (4, 2, "contiguous", None),
    (4, 1, "headtail", None),
    (4, 4, "contiguous", 4),
]


def _tensors(h: int, g: int) -> dict[str, torch.Tensor]:
    gen = torch.Generator().manual_seed(11)

    def rnd(*shape: int) -> torch.Tensor:
        return torch.randn(*shape, generator=gen, dtype=torch.float64)

    return {
        "x": rnd(B, S, E),
        "w_q": rnd(h * D, E) / math.sqrt(E),
        "w_k": rnd(g * D, E) / math.sqrt(E),
        "w_v": rnd(g * D, E) / math.sqrt(E),
        "b_q": rnd(h * D),
        "b_k": rnd(g * D),
        "b_v": rnd(g * D),
        "dout": rnd(B, S, h, D),
    }


def _reference(t: dict[str, torch.Tensor], h: int, g: int) -> dict[str, torch.Tensor]:
    p = {k: v.clone().requires_grad_(True) for k, v in t.items() if k != "dout"}
    pos = torch.arange(S)
    q = reference_rope((p["x"] @ p["w_q"].t() + p["b_q"]).view(B, S, h, D), pos)
    k = reference_rope((p["x"] @ p["w_k"].t() + p["b_k"]).view(B, S, g, D), pos)
    v = (p["x"] @ p["w_v"].t() + p["b_v"]).view(B, S, g, D)
    out = reference_attention(q, k, v, causal=True)
    out.backward(t["dout"])
    return {"out": out.detach(), **{f"d{n}": q.grad for n, q in p.items() if q.grad is not None}}


def _worker(rank: int, world: int) -> list[dict[str, torch.Tensor]]:
    results = []
    for h, g, layout, stage_heads in CASES:
        t = _tensors(h, g)
        idx = shard_indices(S, rank, world, layout)
        p = {k: v.clone().requires_grad_(True) for k, v in t.items() if k not in ("x", "dout")}
        x = t["x"][:, idx].clone().requires_grad_(True)
        out = upipe_attention(
            x,
            p["w_q"],
            p["w_k"],
            p["w_v"],
            num_heads=h,
            num_kv_heads=g,
            cp=dist.group.WORLD,
            layout=layout,
            rotary=rope_tables(idx, D, torch.float64),
            stage_heads=stage_heads,
            bias=(p["b_q"], p["b_k"], p["b_v"]),
        )
        out.backward(t["dout"][:, idx])
        row = {"idx": idx, "out": out.detach(), "dx": x.grad}
        for name, q in p.items():
            grad = q.grad.clone()
            dist.all_reduce(grad)  # each rank holds its tokens' share of the parameter gradients
            row[f"d{name}"] = grad
        results.append(row)
    return results


@pytest.mark.distributed
def test_fused_operator_with_biases_matches_the_dense_reference() -> None:
    ranks = run_on_ranks(_worker, 2, timeout=120)
    for i, (h, g, _layout, _stages) in enumerate(CASES):
        ref = _reference(_tensors(h, g), h, g)
        assert float(ref["db_q"].abs().max()) > 0.1  # the biases have gradients worth checking
        for r in ranks:
            row = r[i]
            torch.testing.assert_close(row["out"], ref["out"][:, row["idx"]], atol=1e-10, rtol=0)
            torch.testing.assert_close(row["dx"], ref["dx"][:, row["idx"]], atol=1e-10, rtol=0)
            for name in ("dw_q", "dw_k", "dw_v", "db_q", "db_k", "db_v"):
                torch.testing.assert_close(row[name], ref[name], atol=1e-10, rtol=0, msg=f"case {i} {name}")


@pytest.mark.parametrize(
    ("bias", "error", "message"),
    [
        ((torch.zeros(8),), TypeError, "bias must be None or a"),
        ((torch.zeros(7), None, None), ValueError, r"bias b_q must have shape \(8,\)"),
        ((None, torch.zeros(4, dtype=torch.float64), None), TypeError, "bias b_k must be None or a tensor"),
    ],
)
def test_bad_biases_are_refused(bias: Any, error: type[Exception], message: str) -> None:
    x, w_q, w_kv = torch.randn(1, 4, 8), torch.randn(8, 8), torch.randn(4, 8)
    with pytest.raises(error, match=message):
        upipe_attention(x, w_q, w_kv, w_kv, num_heads=2, num_kv_heads=1, bias=bias)


def test_none_biases_equal_no_bias() -> None:
    x, w_q, w_kv = torch.randn(1, 4, 8), torch.randn(8, 8), torch.randn(4, 8)
    plain = upipe_attention(x, w_q, w_kv, w_kv, num_heads=2, num_kv_heads=1)
    none = upipe_attention(x, w_q, w_kv, w_kv, num_heads=2, num_kv_heads=1, bias=(None, None, None))
    torch.testing.assert_close(none, plain, atol=0, rtol=0)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
@pytest.mark.parametrize(("dtype", "tol"), [(torch.float32, 2e-3), (torch.bfloat16, 3e-2)])
def test_fused_operator_with_biases_on_cuda_matches_the_reference(dtype: torch.dtype, tol: float) -> None:
    h, g = 8, 2
    t = _tensors(h, g)
    ref = _reference(t, h, g)
    p = {k: v.to(device="cuda", dtype=dtype).requires_grad_(True) for k, v in t.items() if k != "dout"}
    out = upipe_attention(
        p["x"],
        p["w_q"],
        p["w_k"],
        p["w_v"],
        num_heads=h,
        num_kv_heads=g,
        rotary=tuple(r.cuda() for r in rope_tables(torch.arange(S), D, dtype)),
        stage_heads=2,
        bias=(p["b_q"], p["b_k"], p["b_v"]),
    )
    out.backward(t["dout"].to(device="cuda", dtype=dtype))
    pairs = [(out.detach(), ref["out"]), *((q.grad, ref[f"d{n}"]) for n, q in p.items())]
    for got, want in pairs:
        err = (got.double().cpu() - want).abs().max() / want.abs().max()
        assert err <= tol
