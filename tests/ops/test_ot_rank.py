"""OT soft ranks against POT's Sinkhorn plan, hard ranks in the small-eps limit, gradients and errors."""

from __future__ import annotations

import numpy as np
import ot
import pytest
import torch
from scipy.stats import rankdata

from lightning_icml26.ops import ot_soft_rank


def _pot_ranks(x: np.ndarray, eps: float) -> np.ndarray:
    """Cuturi et al.'s ranks from POT's log-domain Sinkhorn plan (independent of the project's Sinkhorn)."""
    n = x.size
    z = (x - x.mean()) / (x.std(ddof=1) + 1e-8)
    cost = (z[:, None] - np.linspace(0.0, 1.0, n)[None, :]) ** 2
    plan = ot.sinkhorn(np.full(n, 1 / n), np.full(n, 1 / n), cost, eps, method="sinkhorn_log", stopThr=1e-13,
                       numItermax=100_000)  # fmt: skip
    return n * (plan * np.arange(1, n + 1)).sum(1)


@pytest.mark.parametrize("eps", [0.1, 0.5, 2.0])
def test_matches_pot_plan(eps: float) -> None:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(4, 6))
    ours = ot_soft_rank(torch.tensor(x), eps, num_iters=5000, tol=1e-12).numpy()
    expected = np.stack([_pot_ranks(row, eps) for row in x])
    np.testing.assert_allclose(ours, expected, atol=1e-6)
    np.testing.assert_allclose(ours.sum(-1), 6 * 7 / 2, atol=1e-6)


def test_small_eps_gives_hard_ranks_and_large_eps_the_mean_rank() -> None:
    x = torch.tensor([[1.0, -2.0, 4.0, 2.5, -0.5]], dtype=torch.float64)
    hard = torch.tensor(rankdata(x.numpy(), axis=-1))
    np.testing.assert_allclose(ot_soft_rank(x, 0.02, num_iters=20_000, tol=1e-10), hard, atol=1e-3)
    wide = ot_soft_rank(x, 1e4)
    np.testing.assert_allclose(wide, torch.full_like(x, 3.0), atol=1e-3)
    # order preserved at every strength
    for eps in (0.05, 0.3, 3.0):
        assert torch.equal(torch.argsort(ot_soft_rank(x, eps)), torch.argsort(x))


def test_gradient_through_unrolled_sinkhorn() -> None:
    x = torch.tensor([[0.4, -1.3, 2.2, 0.9]], dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda v: ot_soft_rank(v, 0.3, num_iters=50, tol=None), (x,))
    rank = ot_soft_rank(x, 0.3)[0, 0]
    rank.backward()
    assert x.grad is not None
    assert float(x.grad[0, 0]) > 0  # raising a value raises its own rank


def test_errors() -> None:
    with pytest.raises(ValueError, match="regularization must be positive, got 0"):
        ot_soft_rank(torch.zeros(3), 0)
    with pytest.raises(ValueError, match="at least 2 entries"):
        ot_soft_rank(torch.zeros(4, 1))
    with pytest.raises(TypeError, match="floating-point"):
        ot_soft_rank(torch.arange(3))
