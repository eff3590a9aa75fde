"""CoverageEntropy, DistinctN and SeenRate against direct counts and scipy; 2-rank DDP equals one process."""

from __future__ import annotations

import random

import numpy as np
import pytest
import torch
from scipy.stats import entropy

from lightning_icml26.metrics import CoverageEntropy, DistinctN, SeenRate
from lightning_icml26.metrics.functional import coverage_entropy, distinct_n, seen_rate
from tests._support.distributed import run_on_ranks


def _texts(seed: int, n: int = 40) -> list[str]:
    rng = random.Random(seed)
    vocab = [f"w{i}" for i in range(12)]
    return [" ".join(rng.choice(vocab) for _ in range(rng.randint(1, 7))) for _ in range(n)]


def _direct_distinct(texts: list[str], n: int) -> float:
    grams = [tuple(t.split()[i : i + n]) for t in texts for i in range(len(t.split()) - n + 1)]
    return len(set(grams)) / len(grams)


def test_coverage_entropy_matches_scipy() -> None:
    cats = torch.randint(0, 7, (300,), generator=torch.Generator().manual_seed(0))
    counts = np.bincount(cats.numpy(), minlength=9)
    for base in (np.e, 2.0):
        assert float(coverage_entropy(cats, 9, base)) == pytest.approx(entropy(counts, base=base), rel=1e-12)
    metric = CoverageEntropy(9, base=2.0)
    for chunk in cats.split(37):
        metric.update(chunk)
    assert float(metric.compute()) == pytest.approx(entropy(counts, base=2.0), rel=1e-12)
    assert float(coverage_entropy(torch.tensor([4, 4, 4]), 9)) == 0.0


@pytest.mark.parametrize("n", [1, 2, 3])
def test_distinct_n_matches_direct_counts(n: int) -> None:
    texts = _texts(n)
    expected = _direct_distinct(texts, n)
    assert float(distinct_n(texts, n)) == pytest.approx(expected, rel=1e-12)
    metric = DistinctN(n)
    metric.update(texts[:13])
    metric.update(texts[13:])
    assert float(metric.compute()) == pytest.approx(expected, rel=1e-12)


def test_seen_rate_matches_mean() -> None:
    flags = torch.rand(101, generator=torch.Generator().manual_seed(0)) < 0.3
    assert float(seen_rate(flags)) == pytest.approx(flags.double().mean().item())
    metric = SeenRate()
    metric.update(flags[:50])
    metric.update(flags[50:].long())
    assert float(metric.compute()) == pytest.approx(flags.double().mean().item())


def test_bad_inputs() -> None:
    with pytest.raises(ValueError, match="categories must lie"):
        coverage_entropy(torch.tensor([0, 5]), 3)
    with pytest.raises(TypeError, match="categories"):
        CoverageEntropy(3).update(torch.tensor([0.5]))
    with pytest.raises(ValueError, match="at least one problem"):
        CoverageEntropy(3).compute()
    with pytest.raises(ValueError, match="num_categories"):
        CoverageEntropy(0)
    with pytest.raises(TypeError, match="texts"):
        distinct_n("a b c")
    with pytest.raises(ValueError, match="n must"):
        DistinctN(0)
    with pytest.raises(ValueError, match="flags"):
        seen_rate(torch.tensor([0.5]))


def _ddp(rank: int, world_size: int, cats: torch.Tensor, texts: list[str], flags: torch.Tensor) -> list[float]:
    cov, dist_n, seen = CoverageEntropy(9), DistinctN(2, num_buckets=2**20), SeenRate()
    cov.update(cats[rank::world_size])
    dist_n.update(texts[rank::world_size])
    seen.update(flags[rank::world_size])
    return [float(cov.compute()), float(dist_n.compute()), float(seen.compute())]


@pytest.mark.distributed
def test_two_rank_ddp_equals_one_process() -> None:
    cats = torch.randint(0, 9, (61,), generator=torch.Generator().manual_seed(1))
    texts = _texts(7, 31)
    flags = torch.rand(45, generator=torch.Generator().manual_seed(2)) < 0.5
    expected = [float(coverage_entropy(cats, 9)), float(distinct_n(texts, 2)), float(seen_rate(flags))]
    for out in run_on_ranks(_ddp, 2, cats, texts, flags):
        assert out == pytest.approx(expected, rel=1e-12)
    assert expected[1] == pytest.approx(_direct_distinct(texts, 2), rel=1e-12)
