"""FeatureSpectrumGap: numpy reference, batch accumulation, 2-rank DDP equals one process."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy.stats import wasserstein_distance

from lightning_icml26.metrics import FeatureSpectrumGap
from lightning_icml26.metrics.functional import feature_spectrum_gap
from tests._support.distributed import run_on_ranks


def _np_reference(s: np.ndarray, r: np.ndarray) -> tuple[float, float]:
    def hob(x: np.ndarray) -> np.ndarray:
        v = np.linalg.svd(x, full_matrices=False)[2][0]
        return v * np.sign(v[np.argmax(np.abs(v))])

    return (
        wasserstein_distance(hob(s), hob(r)),
        wasserstein_distance(s.var(0, ddof=1), r.var(0, ddof=1)),
    )


def _data(seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    s = torch.randn(12, 5, generator=gen, dtype=torch.float64) * torch.linspace(2, 0.5, 5, dtype=torch.float64) + 1
    r = torch.randn(20, 5, generator=gen, dtype=torch.float64) * torch.linspace(0.5, 2, 5, dtype=torch.float64) + 1
    return s, r


def test_functional_and_batched_metric_match_numpy() -> None:
    s, r = _data(0)
    hob, var = _np_reference(s.numpy(), r.numpy())
    out = feature_spectrum_gap(s, r)
    assert float(out["hob_gap"]) == pytest.approx(hob, rel=1e-8)
    assert float(out["var_gap"]) == pytest.approx(var, rel=1e-8)
    metric = FeatureSpectrumGap(5)
    metric.update(s[:5], r[:3])
    metric.update(s[5:], r[3:11])
    metric.update(s[:0], r[11:])
    res = metric.compute()
    assert float(res["hob_gap"]) == pytest.approx(hob, rel=1e-8)
    assert float(res["var_gap"]) == pytest.approx(var, rel=1e-8)
    assert hob > 1e-3
    assert var > 1e-3


def test_bad_input() -> None:
    with pytest.raises(ValueError, match="num_features"):
        FeatureSpectrumGap(0)
    with pytest.raises(ValueError, match=r"features must have shape \(n, 3\)"):
        FeatureSpectrumGap(3).update(torch.randn(4, 2), torch.randn(4, 3))
    with pytest.raises(ValueError, match="at least 2"):
        feature_spectrum_gap(torch.randn(1, 3), torch.randn(4, 3))


def _ddp_metric(rank: int, world_size: int, s: torch.Tensor, r: torch.Tensor) -> dict[str, torch.Tensor]:
    metric = FeatureSpectrumGap(5)
    metric.update(s[rank::world_size], r[rank::world_size])
    return metric.compute()


@pytest.mark.distributed
def test_two_rank_ddp_equals_one_process() -> None:
    s, r = _data(1)
    expected = feature_spectrum_gap(s, r)
    for out in run_on_ranks(_ddp_metric, 2, s, r):
        assert float(out["hob_gap"]) == pytest.approx(float(expected["hob_gap"]), rel=1e-8)
        assert float(out["var_gap"]) == pytest.approx(float(expected["var_gap"]), rel=1e-8)
