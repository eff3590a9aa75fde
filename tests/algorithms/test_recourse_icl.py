"""ICL predictors, the closed-form recourse of linear self-attention ICL, and the baselines."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch
from scipy.optimize import linprog
from sklearn.linear_model import LogisticRegression

from lightning_icml26.algorithms.recourse import (
    ASRICL,
    ActionabilitySpec,
    ActionableRecourse,
    ContextLogisticICL,
    DiceRandom,
    FullZO,
    GrowingSpheres,
    KernelICL,
    LanguageModelICL,
    LinearAttentionICL,
    Wachter,
)


def _gaussian_task(d: int = 6, n: int = 3000, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    mix = rng.normal(size=(d, d)) * 0.3 + np.eye(d)
    sigma = mix @ mix.T
    X = rng.multivariate_normal(np.zeros(d), sigma, n)
    y = (X @ rng.normal(size=d) + 0.3 * rng.normal(size=n) > 0).astype(int)
    return X, y, sigma


def _lp_optimum(weights: np.ndarray, threshold: float, x: np.ndarray, spec: ActionabilitySpec) -> float:
    """Least normalised-L1 change reaching ``w . x' >= t`` inside the bounds (an independent LP)."""
    r = spec.ranges
    lo, hi = spec.bounds(x)
    result = linprog(
        np.concatenate([1 / r, 1 / r]),
        A_ub=-np.concatenate([weights, -weights])[None],
        b_ub=[x @ weights - threshold],
        bounds=[(0, h - v) for h, v in zip(hi, x, strict=True)] + [(0, v - lo_) for lo_, v in zip(lo, x, strict=True)],
    )
    return float(result.fun)


def test_icl_predictors_match_direct_computations() -> None:
    X, y, sigma = _gaussian_task()
    ctx, query = X[:32], X[100:140]
    lsa = LinearAttentionICL(ctx, y[:32], gamma=sigma, threshold=0.1)
    weights = np.linalg.inv(sigma) @ (ctx * np.where(y[:32] == 1, 1.0, -1.0)[:, None]).mean(0)
    np.testing.assert_allclose(lsa.weights, weights, rtol=1e-10)
    np.testing.assert_array_equal(lsa(query), (query @ weights > 0.1).astype(int))
    kernel = KernelICL(ctx, y[:32], bandwidth=1.3)
    manual = []
    for q in query:
        k = np.exp(-((ctx - q) ** 2).sum(1) / (2 * 1.3**2))
        manual.append(int(k[y[:32] == 1].sum() > k[y[:32] == 0].sum()))
    np.testing.assert_array_equal(kernel(query), manual)
    logistic = ContextLogisticICL(ctx, y[:32], C=0.5)
    np.testing.assert_array_equal(
        logistic(query), LogisticRegression(C=0.5, max_iter=1000).fit(ctx, y[:32]).predict(query)
    )
    wine_like = np.array([0, 1, 2] * 11)[:32]
    three = ContextLogisticICL(ctx, wine_like)
    assert three.classes_.tolist() == [0, 1, 2]
    assert set(three(query)) <= {0, 1, 2}


def test_icl_recourse_gap_to_classical_shrinks_as_one_over_sqrt_m() -> None:
    X, y, sigma = _gaussian_task(n=20000, seed=1)
    signs = np.where(y == 1, 1.0, -1.0)
    classical = np.linalg.solve(X.T @ X / len(X), X.T @ signs / len(X))  # least squares on the full data
    rows = X[:50]
    gaps = []
    ms = [16, 64, 256, 1024]
    rng = np.random.default_rng(2)
    for m in ms:
        per_context = []
        for _ in range(30):
            idx = rng.choice(len(X), m, replace=False)
            icl = LinearAttentionICL(X[idx], y[idx], gamma=sigma)
            d_icl = np.stack([icl.closed_form_recourse(x) for x in rows])
            d_classical = np.stack([_ls(classical, x) for x in rows])
            per_context.append(np.linalg.norm(d_icl - d_classical, axis=1).mean())
        gaps.append(np.mean(per_context))
    slope = np.polyfit(np.log(ms), np.log(gaps), 1)[0]
    assert np.all(np.diff(gaps) < 0), gaps
    assert -0.8 < slope < -0.3, (slope, gaps)


def _ls(weights: np.ndarray, x: np.ndarray) -> np.ndarray:
    gap = max(1e-6 - x @ weights, 0.0)
    return gap * weights / (weights @ weights)


def test_label_only_recourse_approaches_the_closed_form_optimum() -> None:
    X, y, sigma = _gaussian_task(d=8, n=4000, seed=0)
    icl = LinearAttentionICL(X[:32], y[:32], gamma=sigma)
    spec = ActionabilitySpec(tuple(X.min(0)), tuple(X.max(0)), (True,) * 8, (0,) * 8, (None,) * 8)
    rows = X[200:][icl(X[200:]) == 0][:12]
    optimum = np.array([_lp_optimum(icl.weights, 0.0, x, spec) for x in rows])
    wachter = Wachter(icl, spec).generate(rows, 1)
    assert wachter.found.all()
    assert np.median(wachter.cost / optimum) < 1.1
    asr = ASRICL(icl, spec, seed=0).generate(rows, 1)
    longer = ASRICL(icl, spec, seed=0, patience=10).generate(rows, 1)
    full = FullZO(icl, spec, seed=0).generate(rows, 1)
    for out in (asr, longer, full):
        assert out.found.all()
        assert np.all(out.cost >= optimum - 1e-9)  # nothing beats the LP optimum
    assert np.median(longer.cost / optimum) < np.median(asr.cost / optimum)
    assert np.median(longer.cost / optimum) < 1.5
    assert np.median(asr.cost / optimum) < np.median(full.cost / optimum)
    assert asr.queries.mean() < 0.3 * full.queries.mean()


def test_actionable_recourse_matches_brute_force_on_a_grid() -> None:
    rng = np.random.default_rng(3)
    grids = ((0, 1, 2, 3), (0, 1, 2), (0, 2, 4, 6, 8), (0, 1))
    spec = ActionabilitySpec((0, 0, 0, 0), (3, 2, 8, 1), (True, True, True, False), (1, 0, -1, 0), grids)
    checked = 0
    for _ in range(25):
        w, b = rng.normal(size=4), rng.normal()
        x = np.array([rng.choice(g) for g in grids], dtype=float)
        if x @ w + b > 0:
            continue
        lo, hi = spec.bounds(x)
        best = np.inf
        for values in itertools.product(*grids):
            cand = np.array(values, dtype=float)
            if np.all(cand >= lo) and np.all(cand <= hi) and cand @ w + b >= 1e-6:
                best = min(best, float(spec.cost(x, cand)))
        out = ActionableRecourse(w, b, spec).generate(x[None], 1)
        if np.isinf(best):
            assert not out.found[0]
        else:
            assert out.found[0]
            assert out.cost[0] == pytest.approx(best)
        checked += 1
    assert checked >= 8


@pytest.mark.parametrize("generator", [GrowingSpheres, DiceRandom])
def test_label_only_baselines_flip_and_respect_the_budget(generator: type) -> None:
    X, y, sigma = _gaussian_task(d=5, seed=4)
    icl = KernelICL(X[:32], y[:32])
    spec = ActionabilitySpec.from_data(X, immutable=[4], increasing=[0])
    rows = X[100:][icl(X[100:]) == 0][:6]
    out = generator(icl, spec, seed=0, budget=150).generate(rows, 1)
    assert np.all(out.queries <= 150)
    assert out.validity >= 0.8
    np.testing.assert_array_equal(icl(out.counterfactuals[out.found]), 1)
    np.testing.assert_array_equal(out.counterfactuals[:, 4], rows[:, 4])
    assert np.all(out.counterfactuals[:, 0] >= rows[:, 0])


class _ThresholdLM:
    """A fake language model: class " 1" is likely when the query row's first value exceeds 0.5."""

    def __init__(self) -> None:
        self.prompts: list[str] = []

    def logprobs(self, prompts: list[str], continuations: list[str]) -> list[torch.Tensor]:
        out = []
        for prompt, option in zip(prompts, continuations, strict=True):
            self.prompts.append(prompt)
            value = float(prompt.splitlines()[-1].split(",")[0].split("=")[1])
            out.append(torch.tensor([0.0 if (value > 0.5) == (option == " approve") else -3.0]))
        return out


def test_language_model_icl_is_a_label_oracle_for_recourse() -> None:
    lm = _ThresholdLM()
    X = np.array([[0.1, 0.2], [0.9, 0.4]])
    icl = LanguageModelICL(lm, X, np.array([0, 1]), ["income", "debt"], ["reject", "approve"])  # type: ignore[arg-type]  # only logprobs is used
    prompt = icl.prompt(np.array([0.3, 0.7]))
    assert "income=0.10, debt=0.20 -> reject" in prompt
    assert "income=0.90, debt=0.40 -> approve" in prompt
    assert prompt.endswith("income=0.30, debt=0.70 ->")
    np.testing.assert_array_equal(icl(np.array([[0.2, 0.0], [0.8, 0.0]])), [0, 1])
    spec = ActionabilitySpec((0, 0), (1, 1), (True, False), (1, 0), (None, None))
    lm.prompts.clear()
    out = ASRICL(icl, spec, seed=0).generate(np.array([[0.2, 0.5]]), 1)
    assert out.found[0]
    assert 0.5 < out.counterfactuals[0, 0] < 0.7
    assert out.counterfactuals[0, 1] == 0.5
    assert len(lm.prompts) == 2 * out.queries[0]  # one prompt per query, scored for both class names
