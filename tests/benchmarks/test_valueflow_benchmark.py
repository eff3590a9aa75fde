"""benchmarks/valueflow.py: retrieval MAP against scikit-learn, tree-similarity Spearman, oracle against scipy."""

from __future__ import annotations

import importlib

import numpy as np
import pytest
import torch
from scipy.integrate import quad
from scipy.optimize import brentq
from scipy.stats import pearsonr, spearmanr
from sklearn.metrics import average_precision_score

from lightning_icml26.algorithms.valueflow_intensity import pl_log_likelihood
from lightning_icml26.data.valueflow import make_value_texts

valueflow = importlib.import_module("benchmarks.valueflow")


def test_retrieval_figures_match_sklearn_and_scipy():
    corpus = make_value_texts(per_label=2, seed=0, split="heldout", theories=("mft",))
    z = torch.nn.functional.normalize(torch.randn(len(corpus), 8, generator=torch.Generator().manual_seed(0)), dim=1)
    out = valueflow.retrieval_figures(z, corpus.levels, corpus.directions)
    sim = (z @ z.T).numpy()
    lv, dv = corpus.levels.numpy(), corpus.directions.numpy()
    n = len(corpus)
    for level in (1, 2, 3):
        aps = []
        for i in range(n):
            others = [j for j in range(n) if j != i]
            rel = [bool((lv[j, :level] == lv[i, :level]).all() and dv[j] == dv[i]) for j in others]
            aps.append(average_precision_score(rel, sim[i, others]))
        assert out[f"map_l{level}"] == pytest.approx(np.mean(aps), abs=1e-9)
    pairs = [(i, j) for i in range(n) for j in range(i + 1, n)]
    depth = [
        sum(bool((lv[i, : d + 1] == lv[j, : d + 1]).all()) for d in range(3))
        + bool((lv[i] == lv[j]).all() and dv[i] == dv[j])
        for i, j in pairs
    ]
    expected = spearmanr([sim[i, j] for i, j in pairs], depth).statistic
    assert out["spearman_tree"] == pytest.approx(expected, abs=1e-9)


def test_posterior_median_matches_scipy_integration():
    rng = np.random.default_rng(2)
    rankings = np.stack([np.stack([rng.permutation(6) for _ in range(3)]) for _ in range(2)])
    anchors = rng.uniform(-8, 8, size=(2, 3, 5))
    got = valueflow.posterior_median(rankings, anchors, -9.0, 9.0, points=18001)
    for r in range(2):

        def density(u, r=r):
            return float(np.exp(pl_log_likelihood(u, rankings[r], anchors[r], l2=0.0)))

        total = quad(density, -9, 9, points=list(np.ravel(anchors[r])), limit=200)[0]
        median = brentq(lambda x, r=r, t=total: quad(density, -9, x, limit=200)[0] - 0.5 * t, -9, 9, xtol=1e-8)
        assert got[r] == pytest.approx(median, abs=2e-3)


def test_authors_figures_match_a_brute_force_loop():
    corpus = make_value_texts(per_label=1, seed=1, split="heldout", theories=("mft",))
    z = torch.nn.functional.normalize(torch.randn(len(corpus), 6, generator=torch.Generator().manual_seed(1)), dim=1)
    sim = (z @ z.T).numpy()
    lv, dv = corpus.levels.numpy(), corpus.directions.numpy()
    out = valueflow.authors_figures(sim, lv, dv)
    n = len(corpus)

    def bin_of(a, j):
        if lv[a, 0] != lv[j, 0]:
            return 4
        if lv[a, 1] != lv[j, 1]:
            return 3
        if lv[a, 2] != lv[j, 2]:
            return 2
        return 0 if dv[a] == dv[j] else 1

    correct = total = 0
    for a in range(n):
        others = [j for j in range(n) if j != a]
        for i in others:
            for j in others:
                if bin_of(a, i) < bin_of(a, j):
                    total += 1
                    correct += sim[a, i] > sim[a, j]
    assert out["rank_pairwise"] == pytest.approx(correct / total, abs=1e-12)
    pairs = [(i, j) for i in range(n) for j in range(i + 1, n)]
    label = [float((lv[i] == lv[j]).sum()) + 0.5 * (dv[i] == dv[j]) for i, j in pairs]
    expected = pearsonr([sim[i, j] for i, j in pairs], label).statistic
    assert out["pearson_labels"] == pytest.approx(expected, abs=1e-9)
