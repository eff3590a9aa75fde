"""Plackett-Luce anchor estimator: scipy references, convergence on Gumbel-max rankings, calibration, errors."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.optimize import brentq, minimize_scalar

from lightning_icml26.algorithms.valueflow_intensity import (
    borda_interpolation,
    calibrate_intensity,
    estimate_intensity,
    pl_log_likelihood,
    pl_response_score,
    posterior_median,
    sample_anchors,
    solve_response_utility,
)


def loop_log_likelihood(u, rankings, anchors, l2):
    """Full PL log-likelihood of every stage of every window (anchor-only stages included), one term at a time."""
    total = -0.5 * l2 * u * u
    for order, window in zip(rankings, anchors, strict=True):
        util = [u, *window]
        for j in range(len(order)):
            rest = [util[i] for i in order[j:]]
            total += util[order[j]] - math.log(sum(math.exp(v) for v in rest))
    return total


def loop_derivative(u, rankings, anchors, l2):
    total = -l2 * u
    for order, window in zip(rankings, anchors, strict=True):
        util = [u, *window]
        for j in range(len(order)):
            rest = list(order[j:])
            if 0 in rest:
                total += (1.0 if order[j] == 0 else 0.0) - math.exp(u) / sum(math.exp(util[i]) for i in rest)
    return total


def gumbel_rankings(rng, u_true, anchors):
    """[m, k] rankings by Gumbel-max (sorting utilities plus Gumbel noise), item 0 = the response."""
    util = np.concatenate([np.full((anchors.shape[0], 1), u_true), anchors], axis=1)
    noisy = util + rng.gumbel(size=util.shape)
    return np.argsort(-noisy, axis=1)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_root_matches_brentq_and_scipy_maximiser(seed):
    rng = np.random.default_rng(seed)
    anchors = rng.uniform(-3, 3, size=(3, 5))
    rankings = gumbel_rankings(rng, rng.uniform(-2, 2), anchors)
    ours = float(solve_response_utility(rankings, anchors, l2=1e-3))
    root = brentq(lambda u: loop_derivative(u, rankings, anchors, 1e-3), -20, 20, xtol=1e-12)
    best = minimize_scalar(
        lambda u: -loop_log_likelihood(u, rankings, anchors, 1e-3),
        bounds=(-20, 20),
        method="bounded",
        options={"xatol": 1e-10},
    )
    assert ours == pytest.approx(root, abs=1e-8)
    assert ours == pytest.approx(best.x, abs=1e-5)


def test_estimates_converge_as_m_grows():
    rng = np.random.default_rng(7)
    pool = np.linspace(-10, 10, 201)
    errors = {}
    for m in (3, 30, 300):
        err = []
        for _ in range(60):
            truth = rng.uniform(-6, 6)
            idx = np.stack([sample_anchors(pool, 6, "bucket", rng) for _ in range(m)])
            anchors = pool[idx] * 0.3  # utilities on a scale where rankings are noisy
            est = solve_response_utility(gumbel_rankings(rng, truth * 0.3, anchors), anchors, l2=1e-3)
            err.append(abs(est / 0.3 - truth))
        errors[m] = float(np.mean(err))
    assert errors[300] < errors[30] < errors[3]
    assert errors[300] < 0.35 * errors[3]
    assert errors[300] < 0.6


def test_isotonic_calibration_and_guards():
    rng = np.random.default_rng(3)
    intensities = np.stack([np.sort(rng.uniform(-9, 9, size=(2, 5)), axis=1) for _ in range(4)])
    utilities = 0.4 * intensities
    rankings = np.stack([np.stack([rng.permutation(6) for _ in range(2)]) for _ in range(4)])
    rankings[1] = [[1, 2, 3, 4, 5, 0]] * 2  # lost every window
    rankings[2] = [[0, 1, 2, 3, 4, 5]] * 2  # won every window
    roots = solve_response_utility(rankings, utilities, l2=1e-3)
    out = calibrate_intensity(roots, rankings, utilities, intensities, guard_margin=0.5)
    xs, ys = utilities[0].ravel(), intensities[0].ravel()
    order = np.argsort(xs)
    expected = np.interp(roots[0], xs[order], ys[order])  # isotonic on increasing pairs = interpolation
    assert out[0] == pytest.approx(expected, abs=1e-9)
    assert out[1] == pytest.approx(intensities[1].min() - 0.5)
    assert out[2] == pytest.approx(intensities[2].max() + 0.5)
    full = estimate_intensity(rankings, intensities, utility_scale=0.4)
    np.testing.assert_allclose(full[[0, 3]], out[[0, 3]], atol=1e-9)
    assert np.all(np.abs(estimate_intensity(rankings, np.clip(intensities * 2, -10, 10))) <= 10)


def test_borda_interpolation_and_anchor_sampling():
    anchors = np.array([[[-8.0, 4.0, 0.0, -4.0, 8.0]]])
    # response beats 3 of 5 anchors (-8, -4, 0): midpoint of 0 and 4
    assert borda_interpolation(np.array([[[5, 2, 0, 3, 4, 1]]]), anchors).tolist() == [2.0]
    rng = np.random.default_rng(0)
    pool = rng.uniform(-10, 10, size=500)
    idx = sample_anchors(pool, 6, "bucket", rng)
    edges = np.linspace(pool.min(), pool.max(), 6)
    assert sorted(np.clip(np.searchsorted(edges, pool[idx], side="right") - 1, 0, 4).tolist()) == [0, 1, 2, 3, 4]
    assert len(set(sample_anchors(pool, 6, "random", rng).tolist())) == 5


def test_bad_inputs():
    good = np.array([[[0, 1, 2]]])
    with pytest.raises(ValueError, match="k >= 2"):
        estimate_intensity(np.zeros((1, 1, 1), dtype=int), np.zeros((1, 1, 0)))
    with pytest.raises(ValueError, match="not a permutation"):
        estimate_intensity(np.array([[[0, 2, 2]]]), np.zeros((1, 1, 2)))
    with pytest.raises(ValueError, match="anchor_intensities must lie in"):
        estimate_intensity(good, np.array([[[12.0, 0.0]]]))
    with pytest.raises(ValueError, match="fewer than the k - 1"):
        sample_anchors(np.array([1.0, 2.0]), 6)
    with pytest.raises(ValueError, match="holds no anchor"):
        sample_anchors(np.array([-10.0, -9.9, -9.8, 10.0, 9.9]), 4, rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="k must be"):
        sample_anchors(np.zeros(4), 1)
    with pytest.raises(ValueError, match="method"):
        sample_anchors(np.zeros(4), 3, "quantile")
    with pytest.raises(ValueError, match="pool must lie"):
        sample_anchors(np.array([0.0, 11.0, 3.0]), 3)


def test_default_guards_place_just_beyond_the_window_range():
    """Default guards (the authors' released evaluator): strictly below the min / above the max, by one float."""
    rng = np.random.default_rng(5)
    intensities = np.sort(rng.uniform(-9, 9, size=(3, 2, 5)), axis=-1)
    rankings = np.stack([np.stack([rng.permutation(6) for _ in range(2)]) for _ in range(3)])
    rankings[1] = [[1, 2, 3, 4, 5, 0]] * 2  # lost every window
    rankings[2] = [[0, 5, 4, 3, 2, 1]] * 2  # won every window
    out = estimate_intensity(rankings, intensities)
    low, high = intensities[1].min(), intensities[2].max()
    assert out[1] < low
    assert out[1] == np.nextafter(low, -np.inf)
    assert out[2] > high
    assert out[2] == np.nextafter(high, np.inf)
    # the mixed response: the bisection root, clamped to its windows' anchor range (utility = intensity)
    root = solve_response_utility(rankings[0], intensities[0])
    assert out[0] == pytest.approx(np.clip(root, intensities[0].min(), intensities[0].max()), abs=1e-9)
    # at the edge of the scale the guard is clipped to [-10, 10]
    edge = np.full((1, 1, 5), 10.0)
    assert estimate_intensity(np.array([[[0, 1, 2, 3, 4, 5]]]), edge).tolist() == [10.0]
    with pytest.raises(ValueError, match="guard_margin"):
        estimate_intensity(rankings, intensities, guard_margin=-0.1)


def test_pl_log_likelihood_equals_the_product_of_stage_probabilities():
    rng = np.random.default_rng(11)
    rankings = np.stack([np.stack([rng.permutation(5) for _ in range(3)]) for _ in range(2)])
    anchors = rng.uniform(-3, 3, size=(2, 3, 4))
    for u in (-2.5, 0.0, 1.7):
        got = pl_log_likelihood(np.full(2, u), rankings, anchors, l2=1e-3)
        for r in range(2):
            ref = -0.5e-3 * u * u
            for w in range(3):
                util = [u, *anchors[r, w]]
                remaining = list(rankings[r, w])
                for item in rankings[r, w]:
                    ref += np.log(np.exp(util[item]) / sum(np.exp(util[i]) for i in remaining))
                    remaining.remove(item)
            assert got[r] == pytest.approx(ref, abs=1e-10)
        step = 1e-6  # its derivative is the score the bisection solves
        up, down = pl_log_likelihood(u + step, rankings, anchors), pl_log_likelihood(u - step, rankings, anchors)
        fd = (up - down) / (2 * step)
        np.testing.assert_allclose(fd, pl_response_score(u, rankings, anchors), atol=1e-6)


def test_posterior_median_matches_scipy_integration():
    from scipy.integrate import quad

    rng = np.random.default_rng(2)
    rankings = np.stack([np.stack([rng.permutation(6) for _ in range(3)]) for _ in range(2)])
    anchors = rng.uniform(-8, 8, size=(2, 3, 5))
    got = posterior_median(rankings, anchors, -9.0, 9.0, points=18001)
    for r in range(2):

        def density(u, r=r):
            return float(np.exp(pl_log_likelihood(u, rankings[r], anchors[r], l2=0.0)))

        total = quad(density, -9, 9, points=list(np.ravel(anchors[r])), limit=200)[0]
        median = brentq(lambda x, r=r, t=total: quad(density, -9, x, limit=200)[0] - 0.5 * t, -9, 9, xtol=1e-8)
        assert got[r] == pytest.approx(median, abs=2e-3)
    with pytest.raises(ValueError, match="high > low"):
        posterior_median(rankings, anchors, 1.0, 1.0)
