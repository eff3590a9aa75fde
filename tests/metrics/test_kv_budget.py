"""KVBudget: bytes held per sequence against the closed form, slot means against numpy, 2-rank DDP, errors."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from lightning_icml26.metrics import KVBudget
from lightning_icml26.metrics.functional import kv_budget, kv_cache_bytes
from lightning_icml26.ops.attention.kv_memory.arm import ARMAttention
from lightning_icml26.ops.attention.kv_memory.eviction import EvictionAttention
from tests._support.distributed import run_on_ranks


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_arm_bytes_match_the_closed_form_at_every_length(dtype: torch.dtype) -> None:
    layers, heads, m, w, d, batch = 3, 2, 8, 4, 6, 2
    arm = [ARMAttention(heads, d, num_slots=m, num_clusters=2, window=w).eval().to(dtype) for _ in range(layers)]
    full = EvictionAttention("full", heads, d)
    metric = KVBudget()
    expected = 2 * layers * heads * (m + w) * d * torch.finfo(dtype).bits // 8
    for n in (3, 17, 40):
        q, k, v = torch.randn(3, batch, n, heads, d, dtype=dtype).unbind(0)
        caches = [layer.prefill(q, k, v)[1] for layer in arm]
        held = kv_cache_bytes(caches, batch)
        assert held.item() == expected
        metric.update(held.repeat(batch), torch.full((batch, n), float(arm[0].last_slots_read)))
        grown = kv_cache_bytes([full.prefill(q, k, v)[1]], batch)
        assert grown.item() == 2 * heads * n * d * torch.finfo(dtype).bits // 8
    assert metric.compute()["kv_bytes"].item() == expected


def test_means_match_numpy() -> None:
    rng = np.random.default_rng(0)
    parts = [(rng.integers(100, 900, size=rng.integers(1, 4)), rng.integers(0, 64, size=(2, 5))) for _ in range(4)]
    metric = KVBudget()
    for kb, sr in parts:
        metric.update(torch.from_numpy(kb), torch.from_numpy(sr))
    all_kb = np.concatenate([kb for kb, _ in parts])
    all_sr = np.concatenate([sr.ravel() for _, sr in parts])
    out = metric.compute()
    assert out["kv_bytes"].item() == pytest.approx(all_kb.mean())
    assert out["slots_read"].item() == pytest.approx(all_sr.mean())
    twin = kv_budget(torch.from_numpy(all_kb), torch.from_numpy(all_sr))
    assert twin["slots_read"].item() == pytest.approx(all_sr.mean())
    assert torch.isnan(KVBudget().compute()["kv_bytes"])


def _ddp_metric(rank: int, world_size: int, data: list[tuple[torch.Tensor, torch.Tensor]]) -> dict[str, float]:
    metric = KVBudget()
    for kb, sr in data[rank::world_size]:
        metric.update(kb, sr)
    return {k: float(v) for k, v in metric.compute().items()}


@pytest.mark.distributed
def test_two_rank_ddp_equals_one_process() -> None:
    torch.manual_seed(0)
    data = [(torch.rand(3) * 1000, torch.randint(0, 32, (4, 7)).float()) for _ in range(5)]
    single = KVBudget()
    for kb, sr in data:
        single.update(kb, sr)
    expected = {k: pytest.approx(float(v)) for k, v in single.compute().items()}
    assert run_on_ranks(_ddp_metric, 2, data) == [expected, expected]


def test_bad_inputs() -> None:
    with pytest.raises(ValueError, match="kv_bytes must be >= 0"):
        kv_budget(torch.tensor([-1.0]), torch.tensor([1.0]))
    with pytest.raises(TypeError, match="slots_read"):
        KVBudget().update(torch.tensor([1.0]), [1.0])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="batch"):
        kv_cache_bytes([], 0)
    with pytest.raises(TypeError, match="nbytes"):
        kv_cache_bytes([object()], 1)
