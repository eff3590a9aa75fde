"""Independent fp64 references and the per-rank worker shared by the attention tests."""

from __future__ import annotations

import math
from typing import Any

import torch
import torch.distributed as dist

BACKENDS = ("dense", "ulysses", "ring", "upipe_qkv", "upipe")


def reference_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool) -> torch.Tensor:
    """Explicit softmax attention on (B, S, H, D) with GQA pairing h -> h // (H/G); written from scratch."""
    b, s, h, d = q.shape
    g = k.shape[2]
    out = torch.empty_like(q)
    for head in range(h):
        kv = head // (h // g)
        scores = q[:, :, head] @ k[:, :, kv].transpose(-1, -2) / math.sqrt(d)
        if causal:
            mask = torch.arange(s)[:, None] >= torch.arange(s)[None, :]
            scores = scores.masked_fill(~mask, float("-inf"))
        out[:, :, head] = torch.softmax(scores, dim=-1) @ v[:, :, kv]
    return out


def reference_rope(x: torch.Tensor, positions: torch.Tensor, theta: float = 10000.0) -> torch.Tensor:
    """Rotary embedding written with complex numbers over pairs (i, i + D/2) — a different formulation."""
    d = x.shape[-1]
    inv = 1.0 / theta ** (torch.arange(0, d, 2, dtype=torch.float64) / d)
    angle = positions.to(torch.float64)[:, None] * inv[None, :]  # (S, D/2)
    rot = torch.polar(torch.ones_like(angle), angle)[None, :, None, :]
    z = torch.complex(x[..., : d // 2].double(), x[..., d // 2 :].double()) * rot
    return torch.cat([z.real, z.imag], dim=-1).to(x.dtype)


def rope_tables(positions: torch.Tensor, d: int, dtype: torch.dtype, theta: float = 10000.0) -> Any:
    inv = 1.0 / theta ** (torch.arange(0, d, 2, dtype=torch.float64) / d)
    ang = positions.double()[:, None] * inv[None, :]
    emb = torch.cat([ang, ang], dim=-1)
    return emb.cos().to(dtype), emb.sin().to(dtype)


def reference_layer(x, w_q, w_k, w_v, h, g, causal, rope):  # type: ignore[no-untyped-def]
    b, s, _ = x.shape
    d = w_q.shape[0] // h
    q = (x @ w_q.t()).view(b, s, h, d)
    k = (x @ w_k.t()).view(b, s, g, d)
    v = (x @ w_v.t()).view(b, s, g, d)
    if rope:
        pos = torch.arange(s)
        q, k = reference_rope(q, pos), reference_rope(k, pos)
    return reference_attention(q, k, v, causal)


def shard_indices(s: int, rank: int, p: int, layout: str) -> torch.Tensor:
    if layout == "contiguous":
        return torch.arange(rank * s // p, (rank + 1) * s // p)
    c = s // (2 * p)
    return torch.cat([torch.arange(rank * c, (rank + 1) * c), torch.arange((2 * p - 1 - rank) * c, (2 * p - rank) * c)])


def make_case(seed: int, b: int, s: int, e: int, h: int, g: int, d: int) -> dict[str, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    return {
        "x": torch.randn(b, s, e, generator=gen, dtype=torch.float64),
        "w_q": torch.randn(h * d, e, generator=gen, dtype=torch.float64) / math.sqrt(e),
        "w_k": torch.randn(g * d, e, generator=gen, dtype=torch.float64) / math.sqrt(e),
        "w_v": torch.randn(g * d, e, generator=gen, dtype=torch.float64) / math.sqrt(e),
        "dout": torch.randn(b, s, h, d, generator=gen, dtype=torch.float64),
    }


def run_layer(backend: str, x, w_q, w_k, w_v, h, g, cp, causal, layout, stage_heads, rope, positions):  # type: ignore[no-untyped-def]
    from lightning_icml26.ops.attention import apply_rotary, get_attention_backend, upipe_attention

    b, s, _ = x.shape
    d = w_q.shape[0] // h
    tables = rope_tables(positions, d, x.dtype) if rope else None
    if backend == "upipe":
        return upipe_attention(
            x,
            w_q,
            w_k,
            w_v,
            num_heads=h,
            num_kv_heads=g,
            cp=cp,
            causal=causal,
            layout=layout,
            rotary=tables,
            stage_heads=stage_heads,
        )
    q = (x @ w_q.t()).view(b, s, h, d)
    k = (x @ w_k.t()).view(b, s, g, d)
    v = (x @ w_v.t()).view(b, s, g, d)
    if tables is not None:
        q, k = apply_rotary(q, *tables), apply_rotary(k, *tables)
    if backend == "upipe_qkv":
        fn = get_attention_backend("upipe")
        return fn(q, k, v, cp=cp, causal=causal, layout=layout, stage_heads=stage_heads)
    return get_attention_backend(backend)(q, k, v, cp=cp, causal=causal, layout=layout)


def check_cases(rank: int, world: int, cases: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per case and backend: max abs error of output, dx, dw_q, dw_k, dw_v vs the fp64 reference."""
    from lightning_icml26.distributed import ContextParallelGroup

    torch.set_num_threads(1)
    cp = ContextParallelGroup(dist.group.WORLD) if world > 1 else ContextParallelGroup(dist.group.WORLD)
    results = []
    for case in cases:
        t = make_case(case["seed"], case["b"], case["s"], case["e"], case["h"], case["g"], case["d"])
        ref_in = {k: t[k].clone().requires_grad_() for k in ("x", "w_q", "w_k", "w_v")}
        ref = reference_layer(
            ref_in["x"], ref_in["w_q"], ref_in["w_k"], ref_in["w_v"], case["h"], case["g"], case["causal"], case["rope"]
        )
        ref.backward(t["dout"])
        idx = shard_indices(case["s"], rank, world, case["layout"])
        dtype = case["dtype"]
        for backend in case["backends"]:
            x = t["x"][:, idx].to(dtype).requires_grad_()
            ws = {k: t[k].to(dtype).clone().requires_grad_() for k in ("w_q", "w_k", "w_v")}
            out = run_layer(
                backend,
                x,
                ws["w_q"],
                ws["w_k"],
                ws["w_v"],
                case["h"],
                case["g"],
                cp,
                case["causal"],
                case["layout"],
                case.get("stage_heads"),
                case["rope"],
                idx,
            )
            out.backward(t["dout"][:, idx].to(dtype))
            grads = {k: w.grad.double() for k, w in ws.items()}
            for grad in grads.values():
                dist.all_reduce(grad)
            row = {"case": case["name"], "backend": backend}
            pairs = {
                "out": (out.detach().double(), ref.detach()[:, idx]),
                "dx": (x.grad.double(), ref_in["x"].grad[:, idx]),
                **{f"d{k}": (grads[k], ref_in[k].grad) for k in grads},
            }
            for name, (got, want) in pairs.items():
                row[name] = float((got - want).abs().max())
                row[name + "_scale"] = float(want.abs().max())
            results.append(row)
    return results
