"""GRMReliability / HumanAlignment: definitions against direct numpy computations, planted pathologies, DDP."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy.stats import wasserstein_distance

from lightning_icml26.algorithms.irt import fit_grm, scores_to_counts
from lightning_icml26.data.irt_judges import simulate_judge
from lightning_icml26.metrics import GRMReliability, HumanAlignment
from lightning_icml26.metrics.functional import (
    grm_reliability,
    human_alignment,
    marginal_reliability,
    prompt_consistency,
    theta_range,
)
from tests._support.distributed import run_on_ranks


def _cv_numpy(theta: np.ndarray, scores: np.ndarray) -> float:
    vbar = []
    for p in range(scores.shape[1]):
        levels = [theta[scores[:, p] == k] for k in np.unique(scores[:, p])]
        vbar.append(np.mean([np.var(t) for t in levels if len(t) >= 2]))
    return float(np.std(vbar) / np.mean(vbar))


def test_definitions_match_numpy() -> None:
    sim = simulate_judge(n_samples=300, seed=4)
    counts = scores_to_counts(sim.scores, 5)
    fit = fit_grm(counts)
    th, sd = fit.theta.numpy(), fit.theta_sd.numpy()
    assert float(prompt_consistency(fit.theta, counts)) == pytest.approx(_cv_numpy(th, sim.scores.numpy()), rel=1e-9)
    assert float(marginal_reliability(fit.theta, fit.theta_sd)) == pytest.approx(
        np.var(th) / (np.var(th) + np.mean(sd**2)), rel=1e-9
    )
    cat = sim.scores[:, 0]
    direct = np.median(th[cat.numpy() == int(cat.max())]) - np.median(th[cat.numpy() == int(cat.min())])
    assert float(theta_range(fit.theta, cat)) == pytest.approx(direct, rel=1e-9)


def test_wasserstein_matches_scipy_and_pot() -> None:
    ot = pytest.importorskip("ot")
    sim = simulate_judge(n_samples=200, seed=5, human_scale=0.5)
    out = human_alignment(*sim.triples(), *sim.human_triples(), 200, 4, 3, 5)
    tj = fit_grm(scores_to_counts(sim.scores, 5)).theta.numpy()
    th = fit_grm(scores_to_counts(sim.human_scores, 5)).theta.numpy()
    assert float(out["wasserstein"]) == pytest.approx(wasserstein_distance(tj, th), rel=1e-6)
    assert float(out["wasserstein"]) == pytest.approx(float(ot.wasserstein_1d(tj, th, p=1)), rel=1e-6)


@pytest.mark.parametrize(
    ("kwargs", "consistent", "reliable"),
    [
        ({"n_samples": 1600}, True, True),  # a clean judge on a SummEval-sized set
        ({"sensitive_variant": 2}, False, True),  # one prompt-sensitive variant
        ({"discrimination": 0.35, "n_samples": 300}, None, False),  # a judge that barely separates samples
    ],
)
def test_planted_pathologies_are_flagged(kwargs: dict, consistent: bool | None, reliable: bool) -> None:
    sim = simulate_judge(seed=0, **kwargs)
    out = grm_reliability(*sim.triples(), sim.scores.shape[0], 4, 5)
    assert bool(out["reliable"]) is reliable
    if consistent is not None:
        assert bool(out["consistent"]) is consistent


def test_theta_ratio_follows_the_human_scale() -> None:
    ratios = {}
    for scale in (0.5, 1.0, 2.0):
        sim = simulate_judge(n_samples=300, seed=1, human_scale=scale)
        ratios[scale] = float(human_alignment(*sim.triples(), *sim.human_triples(), 300, 4, 3, 5)["theta_ratio"])
    assert ratios[0.5] < 0.9
    assert ratios[0.5] < ratios[1.0] < ratios[2.0]
    assert ratios[2.0] > 1.3


def test_metric_equals_functional_over_batches() -> None:
    sim = simulate_judge(n_samples=200, seed=2)
    s, v, y = sim.triples()
    metric = GRMReliability(200, 4, 5)
    for chunk in torch.arange(s.numel()).chunk(3):
        metric.update(s[chunk], v[chunk], y[chunk])
    got, want = metric.compute(), grm_reliability(s, v, y, 200, 4, 5)
    for key in want:
        torch.testing.assert_close(got[key], want[key])


def test_errors() -> None:
    metric = GRMReliability(10, 2, 5)
    with pytest.raises(ValueError, match="scores must lie in 1..5"):
        metric.update(torch.tensor([0]), torch.tensor([0]), torch.tensor([6]))
    with pytest.raises(ValueError, match="scores must lie in 1..5"):
        metric.update(torch.tensor([0]), torch.tensor([0]), torch.tensor([0]))
    with pytest.raises(ValueError, match="n_categories must be an int >= 2"):
        GRMReliability(10, 2, 1)
    metric.update(torch.arange(10), torch.zeros(10, dtype=torch.long), torch.arange(10) % 5 + 1)
    with pytest.raises(ValueError, match="items \\[1\\] have none"):
        metric.compute()
    ha = HumanAlignment(10, 1, 1, 5)
    ha.update(torch.arange(10), torch.zeros(10, dtype=torch.long), torch.arange(10) % 5 + 1,
              torch.arange(9), torch.zeros(9, dtype=torch.long), torch.arange(9) % 5 + 1)  # fmt: skip
    with pytest.raises(ValueError, match="same samples"):
        ha.compute()


def _ddp(rank: int, world: int, triples: tuple, human: tuple) -> dict:
    rel, ali = GRMReliability(150, 4, 5), HumanAlignment(150, 4, 3, 5)
    s, v, y = (t[rank::world] for t in triples)
    hs, hr, hy = (t[rank::world] for t in human)
    rel.update(s, v, y)
    ali.update(s, v, y, hs, hr, hy)
    return {**rel.compute(), **ali.compute()}


@pytest.mark.distributed
def test_two_ranks_equal_one_process() -> None:
    sim = simulate_judge(n_samples=150, seed=3, sensitive_variant=1)
    triples, human = sim.triples(), sim.human_triples()
    single = {**grm_reliability(*triples, 150, 4, 5), **human_alignment(*triples, *human, 150, 4, 3, 5)}
    for result in run_on_ranks(_ddp, 2, triples, human):
        for key, value in single.items():
            torch.testing.assert_close(result[key], value)
