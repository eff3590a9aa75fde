"""hierarchical_retrieval / label_tree_agreement: MAP against scikit-learn, Spearman against scipy, the authors'
pair ranking against a brute-force loop."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy.stats import pearsonr, spearmanr
from sklearn.metrics import average_precision_score

from lightning_icml26.data.valueflow import make_value_texts
from lightning_icml26.metrics.functional import hierarchical_retrieval, label_tree_agreement


def _embeddings(n: int, dim: int, seed: int) -> torch.Tensor:
    return torch.nn.functional.normalize(torch.randn(n, dim, generator=torch.Generator().manual_seed(seed)), dim=1)


def test_retrieval_figures_match_sklearn_and_scipy() -> None:
    corpus = make_value_texts(per_label=2, seed=0, split="heldout", theories=("mft",))
    z = _embeddings(len(corpus), 8, 0)
    out = hierarchical_retrieval(z, corpus.levels, corpus.directions)
    sim = (z @ z.T).numpy()
    lv, dv = corpus.levels.numpy(), corpus.directions.numpy()
    n = len(corpus)
    for level in (1, 2, 3):
        aps, by_dir = [], {0: [], 1: []}
        for i in range(n):
            others = [j for j in range(n) if j != i]
            rel = [bool((lv[j, :level] == lv[i, :level]).all() and dv[j] == dv[i]) for j in others]
            aps.append(average_precision_score(rel, sim[i, others]))
            by_dir[int(dv[i])].append(aps[-1])
        assert out[f"map_l{level}"] == pytest.approx(np.mean(aps), abs=1e-6)
        assert out[f"map_l{level}_opposes"] == pytest.approx(np.mean(by_dir[1]), abs=1e-6)
    pairs = [(i, j) for i in range(n) for j in range(i + 1, n)]
    depth = [
        sum(bool((lv[i, : d + 1] == lv[j, : d + 1]).all()) for d in range(3))
        + bool((lv[i] == lv[j]).all() and dv[i] == dv[j])
        for i, j in pairs
    ]
    expected = spearmanr([sim[i, j] for i, j in pairs], depth).statistic
    assert out["spearman_tree"] == pytest.approx(expected, abs=1e-6)


def test_authors_figures_match_a_brute_force_loop() -> None:
    corpus = make_value_texts(per_label=1, seed=1, split="heldout", theories=("mft",))
    z = _embeddings(len(corpus), 6, 1)
    sim = (z @ z.T).numpy()
    lv, dv = corpus.levels.numpy(), corpus.directions.numpy()
    out = label_tree_agreement(sim, lv, dv)
    n = len(corpus)

    def bin_of(a: int, j: int) -> int:
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
    assert out["pearson_labels"] == pytest.approx(expected, abs=1e-6)
