"""KV baselines (StreamingLLM, SnapKV, H2O, full) and Gated Slot Attention against loops written from the papers."""

from __future__ import annotations

from typing import Any

import pytest
import torch
import torch.nn.functional as F

from lightning_icml26.ops.attention.kv_memory.eviction import EvictionAttention
from lightning_icml26.ops.attention.kv_memory.gsa import GatedSlotAttention


def _qkv(t: int, h: int = 2, d: int = 4, b: int = 2, seed: int = 0) -> tuple[torch.Tensor, ...]:
    g = torch.Generator().manual_seed(seed)
    return tuple(torch.randn(b, t, h, d, generator=g, dtype=torch.float64) for _ in range(3))


def _decode(attn: Any, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, cache: object) -> torch.Tensor:
    outs = []
    for t in range(q.shape[1]):
        out, cache = attn.step(q[:, t : t + 1], k[:, t : t + 1], v[:, t : t + 1], cache)
        outs.append(out)
    return torch.cat(outs, dim=1)


def _softmax_read(qt: torch.Tensor, keys: list[torch.Tensor], vals: list[torch.Tensor]) -> torch.Tensor:
    kk, vv = torch.stack(keys), torch.stack(vals)
    return torch.softmax(kk @ qt / kk.shape[-1] ** 0.5, dim=0) @ vv


def test_full_attention_decode_equals_sdpa() -> None:
    q, k, v = _qkv(10)
    attn = EvictionAttention("full", 2, 4)
    ref = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=True)
    torch.testing.assert_close(attn(q, k, v), ref.transpose(1, 2))
    torch.testing.assert_close(_decode(attn, q, k, v, attn.empty_cache(2, torch.float64)), ref.transpose(1, 2))


def test_streaming_llm_matches_sinks_plus_window_loop() -> None:
    q, k, v = _qkv(14)
    sinks, budget = 2, 6
    attn = EvictionAttention("streaming", 2, 4, budget=budget, sinks=sinks)
    ref = torch.zeros_like(q)
    for b in range(2):
        for h in range(2):
            for t in range(14):
                keep = [j for j in range(t + 1) if j < sinks or j >= t - (budget - sinks)]
                ref[b, t, h] = _softmax_read(q[b, t, h], [k[b, j, h] for j in keep], [v[b, j, h] for j in keep])
    torch.testing.assert_close(attn(q, k, v), ref)
    torch.testing.assert_close(_decode(attn, q, k, v, attn.empty_cache(2, torch.float64)), ref)
    head, cache = attn.prefill(q[:, :9], k[:, :9], v[:, :9])
    assert cache.k.shape[2] == budget
    torch.testing.assert_close(torch.cat([head, _decode(attn, q[:, 9:], k[:, 9:], v[:, 9:], cache)], 1), ref)


def test_h2o_decode_matches_the_greedy_heavy_hitter_loop() -> None:
    q, k, v = _qkv(16, seed=1)
    budget, recent = 6, 2
    attn = EvictionAttention("h2o", 2, 4, budget=budget, recent=recent)
    got = _decode(attn, q, k, v, attn.empty_cache(2, torch.float64))
    for b in range(2):
        for h in range(2):
            kept: list[int] = []
            mass: dict[int, float] = {}
            for t in range(16):
                kept.append(t)
                mass[t] = 0.0
                kk = torch.stack([k[b, j, h] for j in kept])
                p = torch.softmax(kk @ q[b, t, h] / 2.0, dim=0)
                torch.testing.assert_close(got[b, t, h], p @ torch.stack([v[b, j, h] for j in kept]))
                for j, pj in zip(kept, p.tolist(), strict=True):
                    mass[j] += pj
                if len(kept) > budget:
                    older = kept[: len(kept) - recent]
                    kept.remove(min(older, key=lambda j: (mass[j], j)))


def test_h2o_and_snapkv_prefill_keep_the_papers_choice() -> None:
    q, k, v = _qkv(20, seed=2)
    n, budget = 20, 8
    causal = torch.ones(n, n, dtype=torch.bool).tril()
    for b in range(2):
        for h in range(2):
            probs = torch.softmax((q[b, :, h] @ k[b, :, h].T / 2.0).masked_fill(~causal, float("-inf")), dim=1)
            mass = probs.sum(0)
            h2o = set(mass[: n - 3].argsort(descending=True)[: budget - 3].tolist()) | set(range(n - 3, n))
            vote = probs[n - 4 :, : n - 4].sum(0)
            pooled = torch.stack([vote[max(0, i - 2) : i + 3].mean() for i in range(n - 4)])
            snap = set(pooled.argsort(descending=True)[: budget - 4].tolist()) | set(range(n - 4, n))
            for kind, want in (("h2o", h2o), ("snapkv", snap)):
                attn = EvictionAttention(kind, 2, 4, budget=budget, recent=3, obs_window=4, kernel=5)
                out, cache = attn.prefill(q, k, v)
                assert set(cache.pos[b, h].tolist()) == want, kind
                assert torch.equal(cache.pos[b, h], cache.pos[b, h].sort().values)
                torch.testing.assert_close(cache.k[b, h], k[b, cache.pos[b, h], h])


def test_snapkv_decode_holds_the_budget_and_attends_over_the_kept_keys() -> None:
    q, k, v = _qkv(18, seed=3)
    attn = EvictionAttention("snapkv", 2, 4, budget=7, obs_window=3, kernel=3)
    _, cache = attn.prefill(q[:, :10], k[:, :10], v[:, :10])
    for t in range(10, 18):
        old = cache
        out, cache = attn.step(q[:, t : t + 1], k[:, t : t + 1], v[:, t : t + 1], cache)
        assert cache.k.shape[2] == 7
        assert bool((cache.pos[..., -3:] == torch.arange(t - 2, t + 1)).all())  # observation window kept
        for b in range(2):
            for h in range(2):
                keys = [*old.k[b, h], k[b, t, h]]
                vals = [*old.v[b, h], v[b, t, h]]
                torch.testing.assert_close(out[b, 0, h], _softmax_read(q[b, t, h], keys, vals))


def test_snapkv_decode_drops_the_key_the_observation_window_votes_least_for() -> None:
    q, k, v = _qkv(16, seed=6)
    budget, obs, kern = 7, 3, 3
    attn = EvictionAttention("snapkv", 2, 4, budget=budget, obs_window=obs, kernel=kern)
    cache = attn.empty_cache(2, dtype=torch.float64)
    kept = [[list[int]() for _ in range(2)] for _ in range(2)]
    for t in range(16):
        _, cache = attn.step(q[:, t : t + 1], k[:, t : t + 1], v[:, t : t + 1], cache)
        for b in range(2):
            for h in range(2):
                kept[b][h].append(t)
                if len(kept[b][h]) > budget:
                    keys = torch.stack([k[b, j, h] for j in kept[b][h]])
                    n = len(kept[b][h])
                    vote = torch.zeros(n - obs, dtype=torch.float64)
                    for tq in range(t - obs + 1, t + 1):
                        seen = [i for i, j in enumerate(kept[b][h]) if j <= tq]
                        p = torch.softmax(keys[seen] @ q[b, tq, h] / 2.0, dim=0)
                        for i, pi in zip(seen, p, strict=True):
                            if i < n - obs:
                                vote[i] += pi
                    pooled = [vote[max(0, i - kern // 2) : i + kern // 2 + 1].mean() for i in range(n - obs)]
                    del kept[b][h][int(torch.stack(pooled).argmin())]
                assert cache.pos[b, h].tolist() == kept[b][h]


def test_gsa_parallel_and_recurrent_forms_match_the_paper_loop() -> None:
    q, k, v = _qkv(11, seed=5)
    gsa = GatedSlotAttention(2, 4, num_slots=3, chunk=4).double()
    ref = torch.zeros_like(q)
    for b in range(2):
        for h in range(2):
            hk, hv = torch.zeros(3, 4, dtype=torch.float64), torch.zeros(3, 4, dtype=torch.float64)
            for t in range(11):
                alpha = torch.sigmoid(k[b, t, h] @ gsa.w_alpha[h]).detach() ** (1 / 8)
                hk = alpha[:, None] * hk + (1 - alpha)[:, None] * k[b, t, h][None]
                hv = alpha[:, None] * hv + (1 - alpha)[:, None] * v[b, t, h][None]
                ref[b, t, h] = hv.T @ torch.softmax(hk @ q[b, t, h] / 2.0, dim=0)
    torch.testing.assert_close(gsa(q, k, v).detach(), ref)
    torch.testing.assert_close(_decode(gsa, q, k, v, gsa.empty_cache(2, torch.float64)).detach(), ref)
    head, cache = gsa.prefill(q[:, :6], k[:, :6], v[:, :6])
    tail = _decode(gsa, q[:, 6:], k[:, 6:], v[:, 6:], cache)
    torch.testing.assert_close(torch.cat([head, tail], 1).detach(), ref)
    assert cache.nbytes() == 2 * 2 * 2 * 3 * 4 * 8


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"kind": "lru"}, "kind"),
        ({"kind": "h2o", "budget": 0}, "budget"),
        ({"kind": "streaming", "budget": 4, "sinks": 4}, "sinks"),
        ({"kind": "snapkv", "budget": 16, "kernel": 4}, "kernel"),
    ],
)
def test_baseline_errors(kw: dict[str, object], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        EvictionAttention(num_heads=2, head_dim=4, **kw)  # type: ignore[arg-type]


def test_cache_from_another_configuration_errors() -> None:
    q, k, v = _qkv(2)
    attn = EvictionAttention("h2o", 2, 4, budget=6, recent=2)
    with pytest.raises(ValueError, match="configuration"):
        attn.step(q[:, :1], k[:, :1], v[:, :1], EvictionAttention("h2o", 2, 4, budget=5, recent=2).empty_cache(2))
    gsa = GatedSlotAttention(2, 4, num_slots=3)
    with pytest.raises(ValueError, match="configuration"):
        gsa.step(q[:, :1], k[:, :1], v[:, :1], GatedSlotAttention(2, 4, num_slots=4).empty_cache(2))
    with pytest.raises(ValueError, match="num_slots"):
        GatedSlotAttention(2, 4, num_slots=0)


@pytest.mark.parametrize(
    "layer",
    [EvictionAttention("h2o", 2, 4, budget=6, recent=2), GatedSlotAttention(2, 4, num_slots=3)],
    ids=["h2o", "gsa"],
)
def test_step_rejects_many_tokens_and_a_cache_of_another_batch(layer: torch.nn.Module) -> None:
    q, k, v = _qkv(2)
    with pytest.raises(ValueError, match="one token at a time, got q with seq length"):
        layer.step(q[:, :2], k[:, :2], v[:, :2], layer.empty_cache(2))
    with pytest.raises(ValueError, match="cache batch 3 differs from q batch 2"):
        layer.step(q[:, :1], k[:, :1], v[:, :1], layer.empty_cache(3))
    with pytest.raises(ValueError, match="cache was built for configuration str"):
        layer.step(q[:, :1], k[:, :1], v[:, :1], "cache")
