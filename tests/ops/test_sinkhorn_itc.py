"""Log-domain Sinkhorn against POT, and greedy one-to-one rounding."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from lightning_icml26.ops import greedy_round, sinkhorn_log

ot = pytest.importorskip("ot")


@pytest.mark.parametrize(("n", "m", "reg"), [(3, 3, 0.5), (4, 6, 0.1), (7, 5, 0.05)])
def test_sinkhorn_matches_pot(n: int, m: int, reg: float) -> None:
    gen = torch.Generator().manual_seed(n * m)
    cost = torch.rand(n, m, generator=gen, dtype=torch.float64)
    a = torch.rand(n, generator=gen, dtype=torch.float64) + 0.1
    b = torch.rand(m, generator=gen, dtype=torch.float64) + 0.1
    a, b = a / a.sum(), b / b.sum()
    ours = sinkhorn_log(cost, a, b, reg=reg, num_iters=5000, tol=1e-13)
    ref = ot.sinkhorn(a.numpy(), b.numpy(), cost.numpy(), reg, method="sinkhorn_log", numItermax=100000, stopThr=1e-14)
    np.testing.assert_allclose(ours.numpy(), ref, atol=1e-9)


def test_sinkhorn_batched_uniform_and_forbidden_entries() -> None:
    gen = torch.Generator().manual_seed(1)
    cost = torch.rand(3, 4, 4, generator=gen, dtype=torch.float64)
    cost[:, 0, 1] = float("inf")
    plan = sinkhorn_log(cost, reg=0.2, num_iters=3000)
    assert torch.all(plan[:, 0, 1] == 0)
    torch.testing.assert_close(plan.sum(-1), torch.full((3, 4), 0.25, dtype=torch.float64))
    torch.testing.assert_close(plan.sum(-2), torch.full((3, 4), 0.25, dtype=torch.float64))
    big = cost.clone()
    big[:, 0, 1] = 1e4  # POT cannot take inf; a huge finite cost is the same problem numerically
    for k in range(3):
        ref = ot.sinkhorn(
            np.full(4, 0.25),
            np.full(4, 0.25),
            big[k].numpy(),
            0.2,
            method="sinkhorn_log",
            numItermax=100000,
            stopThr=1e-14,
        )
        np.testing.assert_allclose(plan[k].numpy(), ref, atol=1e-9)


def test_sinkhorn_errors() -> None:
    with pytest.raises(ValueError, match="infeasible"):
        sinkhorn_log(torch.tensor([[float("inf"), float("inf")], [0.0, 1.0]]))
    with pytest.raises(ValueError, match="reg"):
        sinkhorn_log(torch.zeros(2, 2), reg=0.0)
    with pytest.raises(ValueError, match="nan"):
        sinkhorn_log(torch.tensor([[float("nan"), 0.0], [0.0, 0.0]]))


def test_greedy_round_is_one_to_one_and_greedy() -> None:
    gen = torch.Generator().manual_seed(2)
    scores = torch.rand(5, 9, 6, generator=gen)
    rows = greedy_round(scores)
    for problem, assignment in zip(scores, rows, strict=True):
        assert len(set(assignment.tolist())) == 6  # distinct rows
        # reference greedy: repeatedly take the global max over free rows and columns
        s = problem.clone()
        expected = {}
        for _ in range(6):
            r, c = divmod(int(s.argmax()), 6)
            expected[c] = r
            s[r, :] = -1
            s[:, c] = -1
        assert assignment.tolist() == [expected[c] for c in range(6)]


def test_greedy_round_respects_mask_and_reports_stuck() -> None:
    scores = torch.tensor([[0.9, 0.8], [0.1, 0.2]])
    allowed = torch.tensor([[False, True], [True, True]])
    assert greedy_round(scores, allowed).tolist() == [1, 0]
    with pytest.raises(ValueError, match="stuck"):
        greedy_round(scores, torch.tensor([[True, False], [True, False]]))
    with pytest.raises(ValueError, match="at least as many rows"):
        greedy_round(torch.zeros(2, 3))
