"""Boltzmann metrics against POT / scipy / closed-form references."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from scipy.optimize import linear_sum_assignment

from lightning_icml26.metrics import TICAW2, EffectiveSampleSize, EnergyW2, TorusW2
from lightning_icml26.metrics.functional import effective_sample_size, energy_w2, fit_tica, tica_w2, torus_w2
from tests._support.distributed import run_on_ranks
from tests._support.skips import requires_module

GEN = torch.Generator().manual_seed(0)


def test_ess_against_numpy_and_batches() -> None:
    lw = torch.randn(500, generator=GEN, dtype=torch.float64) * 2
    w = np.exp(lw.numpy())
    ref = w.sum() ** 2 / (w**2).sum()
    assert float(effective_sample_size(lw, normalize=False)) == pytest.approx(ref, rel=1e-10)
    metric = EffectiveSampleSize()
    for chunk in lw.split(77):
        metric.update(chunk)
    assert float(metric.compute()) == pytest.approx(ref / 500, rel=1e-10)
    lw2 = lw.clone()
    lw2[:10] = float("-inf")  # zero weights count in N
    w2 = np.exp(lw2.numpy())
    assert float(effective_sample_size(lw2)) == pytest.approx(w2.sum() ** 2 / (w2**2).sum() / 500, rel=1e-10)
    with pytest.raises(ValueError, match="nan"):
        effective_sample_size(torch.tensor([0.0, float("nan")]))


def test_ess_refuses_log_weights_that_are_not_one_per_sample() -> None:
    lw = torch.randn(4, 3, generator=GEN, dtype=torch.float64)  # e.g. per-sample, per-atom terms not yet summed
    with pytest.raises(ValueError, match=r"log_weights must be 1-D \(N,\).*got shape \(4, 3\)"):
        effective_sample_size(lw)
    metric = EffectiveSampleSize()
    with pytest.raises(ValueError, match=r"log_weights must be 1-D \(N,\).*got shape \(4, 3\)"):
        metric.update(lw)
    with pytest.raises(ValueError, match=r"got shape \(\)"):
        metric.update(torch.tensor(0.5))
    with pytest.raises(ValueError, match="nan"):
        metric.update(torch.tensor([0.0, float("nan")]))
    with pytest.raises(TypeError, match="log_weights"):
        metric.update([0.0, 1.0])  # type: ignore[arg-type]
    assert int(metric.count) == 0
    metric.update(lw.sum(-1))  # the same weights, one per sample
    assert float(metric.compute()) == pytest.approx(float(effective_sample_size(lw.sum(-1))), rel=1e-12)


@requires_module("ot")
@pytest.mark.parametrize(("n", "m"), [(300, 300), (257, 131), (7, 1000)])
def test_energy_w2_against_pot(n: int, m: int) -> None:
    import ot

    a = torch.randn(n, generator=GEN, dtype=torch.float64) * 3
    b = torch.randn(m, generator=GEN, dtype=torch.float64) + 1
    ref = ot.emd2_1d(a.numpy(), b.numpy(), metric="sqeuclidean")
    assert float(energy_w2(a, b)) == pytest.approx(math.sqrt(ref), rel=1e-8)
    metric = EnergyW2()
    metric.update(b[: m // 2], a[: n // 2])
    metric.update(b[m // 2 :], a[n // 2 :])
    assert float(metric.compute()) == pytest.approx(math.sqrt(ref), rel=1e-8)
    clipped = ot.emd2_1d(np.clip(a.numpy(), -1, 1), np.clip(b.numpy(), -1, 1), metric="sqeuclidean")
    assert float(energy_w2(a, b, clip=1.0)) == pytest.approx(math.sqrt(clipped), rel=1e-8)


def _wrapped_cost(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    d = np.abs(a[:, None, :] - b[None, :, :]) % (2 * np.pi)
    return (np.minimum(d, 2 * np.pi - d) ** 2).sum(-1)


@requires_module("ot")
def test_torus_w2_against_scipy_assignment() -> None:
    a = (torch.rand(120, 2, generator=GEN, dtype=torch.float64) * 2 - 1) * math.pi
    b = (
        torch.remainder(a + 0.3 * torch.randn(120, 2, generator=GEN, dtype=torch.float64) + math.pi, 2 * math.pi)
        - math.pi
    )
    cost = _wrapped_cost(a.numpy(), b.numpy())
    rows, cols = linear_sum_assignment(cost)
    ref = math.sqrt(cost[rows, cols].mean())
    assert float(torus_w2(a, b)) == pytest.approx(ref, rel=1e-8)
    metric = TorusW2()
    metric.update(b, a)
    assert float(metric.compute()) == pytest.approx(ref, rel=1e-8)
    # wrapping matters: the naive Euclidean W2 is larger
    naive = ((a.numpy()[:, None] - b.numpy()[None]) ** 2).sum(-1)
    r2, c2 = linear_sum_assignment(naive)
    assert ref < math.sqrt(naive[r2, c2].mean())


def _ar1_trajectory(n: int = 3000) -> torch.Tensor:
    rng = np.random.default_rng(0)
    slow, fast = np.zeros(n), np.zeros(n)
    for t in range(1, n):
        slow[t] = 0.98 * slow[t - 1] + rng.normal() * 0.2
        fast[t] = 0.1 * fast[t - 1] + rng.normal()
    mix = np.array([[1.0, 0.5, 0.2], [0.3, -1.0, 0.4]])
    feats = np.stack([slow, fast], 1) @ mix + 0.01 * rng.normal(size=(n, 3))
    return torch.from_numpy(np.concatenate([feats, slow[:, None]], 1))


def test_tica_finds_slow_component() -> None:
    traj = _ar1_trajectory()
    mean, proj = fit_tica(traj[:, :3], lagtime=5, n_components=1)
    tic = ((traj[:, :3] - mean) @ proj).flatten().numpy()
    assert abs(np.corrcoef(tic, traj[:, 3].numpy())[0, 1]) > 0.98
    # the autocorrelation of the projection at the lag equals the leading eigenvalue (about 0.98^5)
    z = tic - tic.mean()
    assert float((z[:-5] * z[5:]).mean() / (z**2).mean()) == pytest.approx(0.98**5, abs=0.05)


@requires_module("ot")
def test_tica_w2_against_pot() -> None:
    import ot

    traj = _ar1_trajectory(400)[:, :3]
    gen = traj[::2] + 0.3
    mean, proj = fit_tica(traj, lagtime=3, n_components=2)
    a, b = ((traj - mean) @ proj).numpy(), ((gen - mean) @ proj).numpy()
    ref = math.sqrt(ot.emd2(np.full(len(a), 1 / len(a)), np.full(len(b), 1 / len(b)), ot.dist(a, b)))
    assert float(tica_w2(gen, traj, lagtime=3)) == pytest.approx(ref, rel=1e-6)
    metric = TICAW2(lagtime=3)
    metric.update(gen, traj)
    assert float(metric.compute()) == pytest.approx(ref, rel=1e-6)


def _ess_rank(rank: int, world_size: int) -> float:
    lw = torch.randn(100, generator=torch.Generator().manual_seed(5), dtype=torch.float64)
    metric = EffectiveSampleSize()
    metric.update(lw[rank::world_size])
    return float(metric.compute())


@pytest.mark.distributed
@pytest.mark.slow
def test_ess_sync_across_ranks() -> None:
    lw = torch.randn(100, generator=torch.Generator().manual_seed(5), dtype=torch.float64)
    ref = float(effective_sample_size(lw))
    for value in run_on_ranks(_ess_rank, 2):
        assert value == pytest.approx(ref, rel=1e-10)
