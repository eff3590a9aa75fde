"""ISA against a token-by-token emulation of the steps of the authors' GPU pipeline, written independently.

The emulation follows the published algorithm on a sequence whose two parts are whole blocks, in fp64 and with
plain Python loops over heads, blocks and tokens: the pooled softmax over all blocks; context blocks ranked by
the summed pooled probability from target query blocks; a query block's sharpness as the summed top pooled
probabilities on target key blocks; the sharper half on exact attention over [target ‖ kept context]; the rest
on the Taylor path, whose exact key blocks are ranked by the dot product of block *sums* of q and k (as the
authors' kernel host does, no softmax), every other kept block one logit ``q·(Σk/b)·scale`` weighted by ``b``
with value ``Σv / b``; plus the gated coarse path with one gate value per token shared by the heads.
"""

from __future__ import annotations

import math

import pytest
import torch

from lightning_icml26.ops.attention import isa_attention


def _emulate(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, n_t: int, b: int, gate: torch.Tensor, ns_fraction: float
) -> torch.Tensor:
    _, seq, heads, d = q.shape
    scale = d**-0.5
    n, nt = seq // b, n_t // b
    nc = n - nt
    out = torch.zeros_like(q)
    alpha = 0.5 * (torch.sigmoid(gate[0]) - 0.5)  # (seq,)
    for h in range(heads):
        qh, kh, vh = q[0, :, h], k[0, :, h], v[0, :, h]
        qs = qh.view(n, b, d).sum(1)
        ks = kh.view(n, b, d).sum(1)
        vs = vh.view(n, b, d).sum(1)
        pooled = torch.softmax((qs / b) @ (ks / b).T * scale, dim=-1)
        saliency = [sum(float(pooled[i, nt + j]) for i in range(nt)) for j in range(nc)]
        kept = sorted(range(nc), key=lambda j: -saliency[j])[: nc // 8]
        kv_blocks = list(range(nt)) + [nt + j for j in kept]
        kv_tokens = [t for blk in kv_blocks for t in range(blk * b, (blk + 1) * b)]
        k_s = max(1, int(nt * 0.0625))
        sharp = [float(torch.sort(pooled[i, :nt], descending=True).values[:k_s].sum()) for i in range(n)]
        order = sorted(range(n), key=lambda i: -sharp[i])
        exact_q = set(order[: n // 2])
        ns = max(1, int(ns_fraction * len(kv_blocks)))
        for i in range(n):
            if i in exact_q:
                chosen = set(kv_blocks)
            else:
                by_sum = sorted(kv_blocks, key=lambda j: -float(qs[i] @ ks[j]))
                chosen = set(by_sum[:ns])
            for t in range(i * b, (i + 1) * b):
                logits, values = [], []
                for blk in kv_blocks:
                    if blk in chosen:
                        for u in range(blk * b, (blk + 1) * b):
                            logits.append(float(qh[t] @ kh[u]) * scale)
                            values.append(vh[u])
                    else:
                        logits.append(float(qh[t] @ (ks[blk] / b)) * scale + math.log(b))
                        values.append(vs[blk] / b)
                w = torch.softmax(torch.tensor(logits, dtype=q.dtype), dim=0)
                out[0, t, h] = (w[:, None] * torch.stack(values)).sum(0)
                out[0, t, h] += alpha[t] * (pooled[i] @ (vs / b))
        assert len(kv_tokens) == n_t + len(kept) * b
    return out


@pytest.mark.parametrize("ns_fraction", [0.0625, 0.125])
def test_isa_equals_an_emulation_of_the_authors_steps(ns_fraction: float) -> None:
    g = torch.Generator().manual_seed(3)
    b, n_t, n_c, heads, d = 8, 128, 128, 2, 16
    q, k, v = (torch.randn(1, n_t + n_c, heads, d, generator=g, dtype=torch.float64) for _ in range(3))
    k = k + 0.7 * q  # keys resemble queries, so pooled scores have structure
    gate = torch.randn(1, n_t + n_c, generator=g, dtype=torch.float64)
    ours, info = isa_attention(
        q, k, v, n_t, block_size=b, exact_block_fraction=ns_fraction, gate_logits=gate[..., None], return_info=True
    )
    expect = _emulate(q, k, v, n_t, b, gate, ns_fraction)
    assert int(info["full_blocks"].sum()) == heads * (n_t + n_c) // b // 2
    torch.testing.assert_close(ours, expect, rtol=1e-10, atol=1e-10)
