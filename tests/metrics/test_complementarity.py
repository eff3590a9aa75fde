"""Complementarity metrics against numpy / scipy / sklearn, the note's closed forms against Monte Carlo and
dense searches, the sign condition on generated data, bad input, and 2-rank DDP against one process."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy import optimize, special
from sklearn.metrics import brier_score_loss, log_loss

from lightning_icml26.algorithms import (
    correlation_threshold,
    gain_weight_bound,
    linear_pool,
    logit_pool,
    oracle_pooling_weight,
    override_decision,
    pooling_gain,
    robust_pooling_weight,
    robust_weight_cap,
    worst_case_gain,
)
from lightning_icml26.data.forecasts import make_forecasting_task
from lightning_icml26.metrics import ComplementarityGain, ErrorCorrelation, RobustPoolingWeight
from lightning_icml26.metrics.functional import complementarity_gain, error_correlation, error_moments, robust_pooling
from tests._support.distributed import run_on_ranks


def _binary_data(n: int = 3000, rho: float = -0.4, seed: int = 0):
    t = make_forecasting_task(n, 1.0, 1.5, rho, kind="binary", seed=seed)
    return t.p_human, t.p_model, t.resolution


def _multiclass_data(n: int = 1500, k: int = 4, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    logits = torch.randn(n, k, generator=g) * 1.5
    y = torch.multinomial(logits.softmax(1), 1, generator=g).squeeze(1)
    noise = torch.randn(n, k, generator=g)
    p_h = (logits + noise).softmax(1).double()
    p_a = (logits - 0.5 * noise + 0.8 * torch.randn(n, k, generator=g)).softmax(1).double()
    return p_h, p_a, y


def _np_gain(w: float, s_h: float, s_a: float, r: float) -> float:
    return 2 * w * (s_h**2 - r * s_h * s_a) - w**2 * (s_h**2 + s_a**2 - 2 * r * s_h * s_a)


# ------------------------------------------------------------------------------------------------------
# metrics against numpy / sklearn
# ------------------------------------------------------------------------------------------------------


def test_error_correlation_binary_matches_numpy_and_streams():
    p_h, p_a, y = _binary_data()
    expected = np.corrcoef((p_h - y).numpy(), (p_a - y).numpy())[0, 1]
    assert float(error_correlation(p_h, p_a, y)) == pytest.approx(expected, abs=1e-10)
    metric = ErrorCorrelation()
    for chunk in torch.arange(len(y)).split(700):
        metric.update(p_h[chunk], p_a[chunk], y[chunk])
    assert float(metric.compute()) == pytest.approx(expected, abs=1e-10)


def test_error_correlation_real_valued_matches_numpy():
    t = make_forecasting_task(4000, 1.0, 2.0, 0.3, kind="gaussian", seed=3)
    expected = np.corrcoef((t.p_human - t.resolution).numpy(), (t.p_model - t.resolution).numpy())[0, 1]
    got = error_correlation(t.p_human, t.p_model, t.resolution, probabilities=False)
    assert float(got) == pytest.approx(expected, abs=1e-10)
    assert abs(expected - 0.3) < 0.05  # the generator controls the correlation


def test_error_correlation_per_class_macro_micro_match_numpy():
    p_h, p_a, y = _multiclass_data()
    onehot = np.eye(4)[y.numpy()]
    e_h, e_a = p_h.numpy() - onehot, p_a.numpy() - onehot
    per_class = np.array([np.corrcoef(e_h[:, k], e_a[:, k])[0, 1] for k in range(4)])
    metric = ErrorCorrelation(num_classes=4, average="none")
    for chunk in torch.arange(len(y)).split(400):
        metric.update(p_h[chunk], p_a[chunk], y[chunk])
    np.testing.assert_allclose(metric.compute().numpy(), per_class, atol=1e-10)
    macro = error_correlation(p_h, p_a, y, num_classes=4, average="macro")
    assert float(macro) == pytest.approx(per_class.mean(), abs=1e-10)
    micro = error_correlation(p_h, p_a, y, num_classes=4, average="micro")
    assert float(micro) == pytest.approx(np.corrcoef(e_h.ravel(), e_a.ravel())[0, 1], abs=1e-10)


def test_complementarity_gain_matches_sklearn_brier_and_log_loss():
    p_h, p_a, y = _binary_data(seed=1)
    w = 0.3
    team = (1 - w) * p_h + w * p_a
    metric = ComplementarityGain(loss="brier", weight=w)
    for chunk in torch.arange(len(y)).split(999):
        metric.update(p_h[chunk], p_a[chunk], y[chunk])
    out = metric.compute()
    lh, la, lt = (brier_score_loss(y.numpy(), p.numpy()) for p in (p_h, p_a, team))
    assert float(out["loss_human"]) == pytest.approx(lh, abs=1e-12)
    assert float(out["loss_ai"]) == pytest.approx(la, abs=1e-12)
    assert float(out["loss_team"]) == pytest.approx(lt, abs=1e-12)
    assert float(out["gain"]) == pytest.approx(min(lh, la) - lt, abs=1e-12)
    assert float(out["gain_over_human"]) == pytest.approx(lh - lt, abs=1e-12)
    logs = complementarity_gain(p_h, p_a, y, weight=w, loss="log")
    clip = lambda p: np.clip(p.numpy(), 1e-12, 1 - 1e-12)  # noqa: E731
    assert float(logs["loss_team"]) == pytest.approx(log_loss(y.numpy(), clip(team), labels=[0, 1]), rel=1e-9)
    assert float(logs["loss_ai"]) == pytest.approx(log_loss(y.numpy(), clip(p_a), labels=[0, 1]), rel=1e-9)


def test_complementarity_gain_multiclass_squared_and_utility():
    p_h, p_a, y = _multiclass_data(seed=2)
    onehot = np.eye(4)[y.numpy()]
    team = logit_pool(p_h, p_a, 0.5)
    out = complementarity_gain(p_h, p_a, y, p_team=team, num_classes=4)
    brier = lambda p: ((np.asarray(p) - onehot) ** 2).sum(1).mean()  # noqa: E731
    assert float(out["loss_team"]) == pytest.approx(brier(team), abs=1e-12)
    assert float(out["gain"]) == pytest.approx(min(brier(p_h), brier(p_a)) - brier(team), abs=1e-12)
    # a user utility: accuracy of the argmax decision (negative loss)
    accuracy = lambda p, t: (p.argmax(1) == t.argmax(1)).double()  # noqa: E731
    metric = ComplementarityGain(utility=accuracy, num_classes=4, weight=0.5)
    metric.update(p_h, p_a, y)
    util = metric.compute()
    acc = lambda p: (np.asarray(p).argmax(1) == y.numpy()).mean()  # noqa: E731
    pooled = 0.5 * p_h.numpy() + 0.5 * p_a.numpy()
    assert -float(util["loss_team"]) == pytest.approx(acc(pooled), abs=1e-12)
    assert float(util["gain"]) == pytest.approx(acc(pooled) - max(acc(p_h), acc(p_a)), abs=1e-12)
    t = make_forecasting_task(500, 1.0, 1.0, 0.0, kind="gaussian", seed=4)
    sq = complementarity_gain(t.p_human, t.p_model, t.resolution, weight=0.5, loss="squared")
    team_np = 0.5 * (t.p_human + t.p_model).numpy()
    assert float(sq["loss_team"]) == pytest.approx(np.mean((team_np - t.resolution.numpy()) ** 2), abs=1e-12)


def test_pooling_helpers_match_scipy_and_numpy():
    p_h, p_a, y = _binary_data(200, seed=5)
    w = torch.rand(200, dtype=torch.float64)
    np.testing.assert_allclose(linear_pool(p_h, p_a, w).numpy(), ((1 - w) * p_h + w * p_a).numpy())
    expected = special.expit(0.7 * special.logit(p_h.numpy()) + 0.3 * special.logit(p_a.numpy()))
    np.testing.assert_allclose(logit_pool(p_h, p_a, 0.3).numpy(), expected, atol=1e-9)
    decision = override_decision(p_h, p_a, 0.85).numpy()
    ref = np.where(p_a.numpy() >= 0.85, 1, np.where(p_a.numpy() <= 0.15, 0, (p_h.numpy() >= 0.5).astype(int)))
    np.testing.assert_array_equal(decision, ref)


# ------------------------------------------------------------------------------------------------------
# closed forms of the note
# ------------------------------------------------------------------------------------------------------


def test_closed_form_gain_matches_monte_carlo():
    g = np.random.default_rng(0)
    n = 400_000
    for s_h, s_a, r, w in [(1.0, 0.5, -0.6, 0.4), (1.0, 3.0, 0.3, 0.1), (0.7, 1.2, 0.6, 0.8), (1.0, 2.0, 0.0, 0.5)]:
        cov = [[s_h**2, r * s_h * s_a], [r * s_h * s_a, s_a**2]]
        e = g.multivariate_normal([0.0, 0.0], cov, size=n)
        diff = e[:, 0] ** 2 - ((1 - w) * e[:, 0] + w * e[:, 1]) ** 2
        se = diff.std() / np.sqrt(n)
        closed = float(pooling_gain(w, s_h, s_a, r))
        assert closed == pytest.approx(_np_gain(w, s_h, s_a, r), abs=1e-12)
        assert abs(diff.mean() - closed) < 5 * se, (s_h, s_a, r, w, diff.mean(), closed)
        # w_bar and the oracle weight from their definitions
        ws = np.linspace(-1.0, 2.5, 350_001)
        gains = _np_gain(ws, s_h, s_a, r)
        assert float(oracle_pooling_weight(s_h, s_a, r, clip=False)) == pytest.approx(ws[gains.argmax()], abs=2e-5)
        positive = ws[(gains > 0) & (ws > 0)]
        bound = float(gain_weight_bound(s_h, s_a, r))
        if positive.size:
            assert bound == pytest.approx(positive.max(), abs=2e-5)
        else:
            assert bound <= 0


def test_moments_make_the_closed_form_exact_on_data():
    """With RMSE scales and the uncentred correlation, G(w) is exactly L_H - L_team of the data."""
    p_h, p_a, y = _binary_data(seed=6)
    m = error_moments(p_h, p_a, y)
    for w in (0.0, 0.2, 0.55, 1.0):
        gain = complementarity_gain(p_h, p_a, y, weight=w)["gain_over_human"]
        closed = pooling_gain(w, m["sigma_human"], m["sigma_ai"], m["rho"])
        assert float(closed) == pytest.approx(float(gain), abs=1e-12)


@pytest.mark.parametrize("seed", range(3))
def test_robust_weight_matches_scipy_and_dense_worst_case(seed: int):
    g = np.random.default_rng(seed)
    for _ in range(40):
        s_h = g.uniform(0.3, 2.0)
        lo = g.uniform(0.0, 2.0)
        hi = lo + g.uniform(0.0, 3.0)
        r_lo = g.uniform(-1, 1)
        r_hi = min(1.0, r_lo + g.uniform(0, 0.5))

        def neg_worst(w, s_h=s_h, lo=lo, hi=hi, r_lo=r_lo, r_hi=r_hi):
            grid_s, grid_r = np.meshgrid(np.linspace(lo, hi, 41), np.linspace(r_lo, r_hi, 5))
            return -float(_np_gain(w, s_h, grid_s, grid_r).min())

        ref = optimize.minimize_scalar(neg_worst, bounds=(0, 1), method="bounded", options={"xatol": 1e-10})
        w_star, g_star = robust_pooling_weight(s_h, (lo, hi), rho_range=(r_lo, r_hi))
        # the closed form's guarantee equals the dense worst case at w*, and no weight does better
        dense = -neg_worst(float(w_star))
        assert float(g_star) == pytest.approx(max(dense, 0.0), abs=1e-9)
        assert float(g_star) >= max(-ref.fun, 0.0) - 1e-9
        assert float(g_star) == pytest.approx(max(-ref.fun, 0.0), abs=1e-6)
        # worst_case_gain and the cap agree with dense grids
        assert float(worst_case_gain(w_star, s_h, (lo, hi), rho_range=(r_lo, r_hi))) == pytest.approx(dense, abs=1e-9)
        cap = float(robust_weight_cap(s_h, (lo, hi), rho_range=(r_lo, r_hi)))
        ws = np.linspace(0, 1, 20_001)
        safe = ws[np.minimum(_np_gain(ws, s_h, lo, r_hi), _np_gain(ws, s_h, hi, r_hi)) >= 0]
        assert cap == pytest.approx(safe.max(), abs=1e-4)


def test_sign_condition_on_generated_data():
    """rho <= 0 always admits a guaranteed gain; rho above s_H / hi admits none (and w* = 0)."""
    sigma_range = (0.5, 3.0)
    for rho in (-0.6, -0.3, 0.0, 0.3, 0.6):
        for s_a in (0.5, 1.5, 3.0):
            t = make_forecasting_task(20_000, 1.0, s_a, rho, kind="gaussian", seed=11)
            out = robust_pooling(t.p_human, t.p_model, t.resolution, sigma_range, probabilities=False)
            threshold = float(correlation_threshold(out["sigma_human"], sigma_range[1]))
            assert threshold == pytest.approx(float(out["sigma_human"]) / 3.0)
            rho_hat = float(out["rho"])
            if rho_hat <= 0:
                assert float(out["guaranteed_gain"]) > 0
                assert float(out["robust_weight"]) > 0
            if rho_hat >= threshold:
                assert float(out["guaranteed_gain"]) == 0
                assert float(out["robust_weight"]) == 0
                # and indeed every positive weight loses for some AI in the set
                ws = np.linspace(1e-3, 1, 1000)
                worst = worst_case_gain(torch.tensor(ws), out["sigma_human"], sigma_range, rho=out["rho"])
                assert float(worst.max()) < 0
            if rho <= 0:
                assert rho_hat < threshold
            if rho >= 0.6:
                assert rho_hat > threshold


def test_robust_weight_guarantee_holds_by_monte_carlo_over_the_set():
    """w* chosen from (s_H, rho) and the interval never loses to the human, whatever AI in the set is deployed."""
    lo, hi = 0.5, 3.0
    for rho in (-0.6, -0.3, 0.0, 0.2):
        w_star, g_star = robust_pooling_weight(1.0, (lo, hi), rho=rho)
        assert float(g_star) > 0
        for s_a in (lo, 1.0, 2.0, hi):
            t = make_forecasting_task(40_000, 1.0, float(s_a), rho, kind="gaussian", seed=int(10 * s_a))
            e_h, e_a = t.p_human - t.resolution, t.p_model - t.resolution
            diff = (e_h.square() - ((1 - w_star) * e_h + w_star * e_a).square()).numpy()
            mc, se = diff.mean(), diff.std() / np.sqrt(len(diff))
            # the realised gain is at least the guarantee (up to Monte-Carlo noise), hence positive
            assert mc > float(g_star) - 4 * se, (rho, s_a, mc, float(g_star), se)
            assert mc > 0


def test_robust_pooling_metric_matches_functional_and_estimates():
    t = make_forecasting_task(5000, 1.0, 1.4, -0.4, kind="gaussian", seed=12)
    metric = RobustPoolingWeight(sigma_ai_range=(0.5, 3.0), probabilities=False)
    for chunk in torch.arange(5000).split(1200):
        metric.update(t.p_human[chunk], t.p_model[chunk], t.resolution[chunk])
    out = metric.compute()
    ref = robust_pooling(t.p_human, t.p_model, t.resolution, (0.5, 3.0), probabilities=False)
    for key, value in ref.items():
        assert float(out[key]) == pytest.approx(float(value), abs=1e-12), key
    e_h = (t.p_human - t.resolution).numpy()
    e_a = (t.p_model - t.resolution).numpy()
    assert float(out["sigma_human"]) == pytest.approx(np.sqrt(np.mean(e_h**2)), rel=1e-12)
    assert float(out["rho"]) == pytest.approx(np.mean(e_h * e_a) / np.sqrt(np.mean(e_h**2) * np.mean(e_a**2)))
    w = float(out["robust_weight"])
    assert float(out["gain_at_robust_weight"]) == pytest.approx(np.mean(e_h**2 - ((1 - w) * e_h + w * e_a) ** 2))
    # a known rho interval: the worst case uses its upper end
    interval = RobustPoolingWeight(sigma_ai_range=(0.5, 3.0), rho_range=(-0.9, 0.1), probabilities=False)
    interval.update(t.p_human, t.p_model, t.resolution)
    expected = robust_pooling_weight(out["sigma_human"], (0.5, 3.0), rho=0.1)
    assert float(interval.compute()["robust_weight"]) == pytest.approx(float(expected[0]))


# ------------------------------------------------------------------------------------------------------
# bad input
# ------------------------------------------------------------------------------------------------------


def test_clear_errors():
    p = torch.tensor([0.2, 0.7, 0.9])
    y = torch.tensor([0.0, 1.0, 1.0])
    with pytest.raises(ValueError, match=r"p_human must be probabilities in \[0, 1\], got values in \[0.2, 1.3\]"):
        error_correlation(torch.tensor([0.2, 0.7, 1.3]), p, y)
    with pytest.raises(ValueError, match="p_ai must be probabilities"):
        ComplementarityGain().update(p, torch.tensor([0.2, -0.1, 0.5]), y)
    with pytest.raises(ValueError, match="target must be probabilities"):
        error_correlation(p, p, torch.tensor([0.0, 2.0, 1.0]))
    with pytest.raises(ValueError, match="p_human and p_ai must have the same length, got 3 and 2"):
        error_correlation(p, p[:2], y)
    with pytest.raises(ValueError, match=r"target must have the same length as the forecasts \(3\), got 2"):
        complementarity_gain(p, p, y[:2])
    with pytest.raises(ValueError, match="inverted"):
        robust_pooling_weight(1.0, (3.0, 0.5), rho=0.0)
    with pytest.raises(ValueError, match="empty set"):
        RobustPoolingWeight(sigma_ai_range=())
    with pytest.raises(ValueError, match="inverted"):
        RobustPoolingWeight(sigma_ai_range=(0.5, 2.0), rho_range=(0.5, -0.5))
    with pytest.raises(ValueError, match=r"rho_range must lie in \[-1.0, 1.0\]"):
        robust_pooling_weight(1.0, (0.5, 2.0), rho_range=(-0.5, 1.5))
    with pytest.raises(ValueError, match="bounded"):
        robust_pooling_weight(1.0, (0.5, float("inf")), rho=0.0)
    with pytest.raises(ValueError, match="exactly one of rho"):
        robust_pooling_weight(1.0, (0.5, 2.0))
    with pytest.raises(ValueError, match=r"weight must be in \[0, 1\]"):
        ComplementarityGain(weight=1.5)
    with pytest.raises(ValueError, match="loss must be one of"):
        ComplementarityGain(loss="hinge")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="p_human must be a torch.Tensor, got list"):
        error_correlation([0.1], p[:1], y[:1])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="rows must sum to 1"):
        error_correlation(torch.full((2, 3), 0.5), torch.full((2, 3), 1 / 3), torch.tensor([0, 1]), num_classes=3)
    with pytest.raises(ValueError, match=r"class ids in \[0, 3\)"):
        error_correlation(torch.full((2, 3), 1 / 3), torch.full((2, 3), 1 / 3), torch.tensor([0, 3]), num_classes=3)
    with pytest.raises(ValueError, match="average must be one of"):
        ErrorCorrelation(average="weighted")  # type: ignore[arg-type]


@pytest.mark.filterwarnings("ignore:The ``compute`` method of metric")
def test_empty_metric_is_nan():
    assert torch.isnan(ErrorCorrelation().compute())
    assert torch.isnan(ComplementarityGain().compute()["gain"])
    assert torch.isnan(RobustPoolingWeight(sigma_ai_range=(0.5, 2.0)).compute()["robust_weight"])


# ------------------------------------------------------------------------------------------------------
# DDP
# ------------------------------------------------------------------------------------------------------


def _ddp_worker(rank: int, world_size: int, p_h, p_a, y, mp_h, mp_a, my):
    from lightning_icml26.modules import HumanAICombiner

    corr = ErrorCorrelation()
    gain = ComplementarityGain(loss="brier", weight=0.3)
    robust = RobustPoolingWeight(sigma_ai_range=(0.1, 0.8))
    per_class = ErrorCorrelation(num_classes=4, average="none")
    for chunk in torch.arange(len(y)).split(500)[rank::world_size]:
        corr.update(p_h[chunk], p_a[chunk], y[chunk])
        gain.update(p_h[chunk], p_a[chunk], y[chunk])
        robust.update(p_h[chunk], p_a[chunk], y[chunk])
    for chunk in torch.arange(len(my)).split(300)[rank::world_size]:
        per_class.update(mp_h[chunk], mp_a[chunk], my[chunk])
    # the combiner's calibration (sigma_H, rho, its confidence bound and the cap) syncs through the metric
    combiner = HumanAICombiner(sigma_ai_range=(0.3, 0.55))
    combiner.calibrate([(p_h[c], p_a[c], y[c]) for c in torch.arange(len(y)).split(500)[rank::world_size]])
    calibration = {k: getattr(combiner, k).clone() for k in ("sigma_human", "rho_hat", "rho_high", "weight_cap")}
    return corr.compute(), gain.compute(), robust.compute(), per_class.compute(), calibration


@pytest.mark.distributed
def test_two_rank_ddp_equals_one_process():
    p_h, p_a, y = _binary_data(3100, seed=9)  # uneven: rank 0 gets 4 chunks, rank 1 gets 3
    mp_h, mp_a, my = _multiclass_data(1300, seed=9)
    results = run_on_ranks(_ddp_worker, 2, p_h, p_a, y, mp_h, mp_a, my)
    corr = error_correlation(p_h, p_a, y)
    gain = complementarity_gain(p_h, p_a, y, weight=0.3)
    robust = robust_pooling(p_h, p_a, y, (0.1, 0.8))
    per_class = error_correlation(mp_h, mp_a, my, num_classes=4, average="none")
    from lightning_icml26.modules import HumanAICombiner

    single = HumanAICombiner(sigma_ai_range=(0.3, 0.55))
    single.calibrate([(p_h, p_a, y)])
    assert float(single.weight_cap) > 0
    for c, g, r, pc, cal in results:
        assert float(c) == pytest.approx(float(corr), abs=1e-12)
        for key, value in gain.items():
            assert float(g[key]) == pytest.approx(float(value), abs=1e-12)
        for key, value in robust.items():
            assert float(r[key]) == pytest.approx(float(value), abs=1e-12), key
        torch.testing.assert_close(pc, per_class, rtol=0, atol=1e-12)
        for key, value in cal.items():
            assert float(value) == pytest.approx(float(getattr(single, key)), abs=1e-12), key
