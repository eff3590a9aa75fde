"""PassAtK against the closed form and a Monte Carlo estimate; FixRate and CounterexampleTokens; 2-rank DDP."""

from __future__ import annotations

import math

import pytest
import torch

from lightning_icml26.metrics import CounterexampleTokens, FixRate, PassAtK
from lightning_icml26.metrics.functional import counterexample_tokens, fix_rate, pass_at_k, pass_at_k_per_problem
from tests._support.distributed import run_on_ranks

N = torch.tensor([10, 10, 7, 20, 5, 12])
C = torch.tensor([0, 3, 7, 1, 4, 6])


@pytest.mark.parametrize("k", [1, 2, 5])
def test_pass_at_k_equals_the_binomial_closed_form(k: int) -> None:
    closed = [1.0 - math.comb(n - c, k) / math.comb(n, k) for n, c in zip(N.tolist(), C.tolist(), strict=True)]
    got = pass_at_k_per_problem(N, C, k)
    torch.testing.assert_close(got, torch.tensor(closed, dtype=torch.float64), rtol=0, atol=1e-12)
    assert float(pass_at_k(N, C, k)) == pytest.approx(sum(closed) / len(closed), abs=1e-12)
    metric = PassAtK(k=k)
    metric.update(N[:2], C[:2])
    metric.update(N[2:], C[2:])
    assert float(metric.compute()) == pytest.approx(sum(closed) / len(closed), abs=1e-12)


def test_pass_at_k_matches_monte_carlo() -> None:
    gen = torch.Generator().manual_seed(0)
    n, c, k, trials = 12, 3, 4, 40_000
    correct = torch.zeros(n, dtype=torch.bool)
    correct[:c] = True
    draws = torch.stack([torch.randperm(n, generator=gen)[:k] for _ in range(trials)])
    estimate = correct[draws].any(dim=1).double().mean()
    exact = pass_at_k_per_problem([n], [c], k)[0]
    assert abs(float(estimate) - float(exact)) < 4 * math.sqrt(float(exact) * (1 - float(exact)) / trials)


def test_pass_at_k_bad_input() -> None:
    with pytest.raises(ValueError, match="k must"):
        PassAtK(k=0)
    with pytest.raises(ValueError, match="num_samples must be >= k"):
        pass_at_k([3], [1], k=5)
    with pytest.raises(ValueError, match="num_correct must be <="):
        pass_at_k([3], [4], k=1)
    with pytest.raises(ValueError, match="same length"):
        pass_at_k([3, 3], [1], k=1)
    with pytest.raises(ValueError, match="non-negative"):
        pass_at_k([3], [-1], k=1)
    assert math.isnan(float(PassAtK().compute()))


def test_fix_rate_and_tokens() -> None:
    before = torch.tensor([False, False, True, False, True])
    after = torch.tensor([True, False, True, True, False])
    assert float(fix_rate(before, after)) == pytest.approx(2 / 3)
    metric = FixRate()
    metric.update(before[:2], after[:2])
    metric.update(before[2:], after[2:])
    assert float(metric.compute()) == pytest.approx(2 / 3)
    assert math.isnan(float(fix_rate([True], [False])))
    with pytest.raises(ValueError, match="initially_passed"):
        fix_rate(torch.tensor([2, 0]), torch.tensor([1, 0]))
    tokens = CounterexampleTokens()
    tokens.update(torch.tensor([3, 9]))
    tokens.update(torch.tensor([6]))
    assert float(tokens.compute()) == pytest.approx(6.0)
    assert float(counterexample_tokens([3, 9, 6])) == pytest.approx(6.0)
    with pytest.raises(ValueError, match="tokens must"):
        counterexample_tokens([1.5])


def _ddp(rank: int, world: int) -> list[float]:
    half = slice(rank * 3, rank * 3 + 3)
    before = torch.tensor([False, True, False, False, False, True])
    after = torch.tensor([True, True, False, True, False, False])
    p, f, t = PassAtK(k=2), FixRate(), CounterexampleTokens()
    p.update(N[half], C[half])
    f.update(before[half], after[half])
    t.update(N[half])
    return [float(p.compute()), float(f.compute()), float(t.compute())]


@pytest.mark.distributed
def test_two_rank_ddp_equals_one_process() -> None:
    before = torch.tensor([False, True, False, False, False, True])
    after = torch.tensor([True, True, False, True, False, False])
    one = [float(pass_at_k(N, C, 2)), float(fix_rate(before, after)), float(counterexample_tokens(N))]
    ranks = run_on_ranks(_ddp, 2)
    for got in ranks:
        assert got == pytest.approx(one, abs=1e-12)
