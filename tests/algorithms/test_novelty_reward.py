"""NoveltyReward against a hand computation on a fixed batch; the gate; agreement rates; bad inputs."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torchmetrics.functional.text import bleu_score

from lightning_icml26.algorithms.novelty import (
    CalibratedSeenDetector,
    KNNDistanceDetector,
    MemoryPenalty,
    NoveltyReward,
    agreement_rate,
    bleu_distance_matrix,
    repetition_penalty,
)


def _fitted_detector() -> CalibratedSeenDetector:
    # buffer: 40 points on a 1-D grid in [0, 1] (second coordinate 0); kNN with k=1
    grid = torch.stack([torch.linspace(0, 1, 40), torch.zeros(40)], 1).double()
    return CalibratedSeenDetector(KNNDistanceDetector(k=1), holdout=0.25, min_buffer=8, seed=0).fit(grid)


def test_reward_equals_hand_computation() -> None:
    det = _fitted_detector()
    questions = ["what is 3 + 4 ?", "what is 3 + 4 ?", "is node a linked to node e ?", "what is 3 + 4 ?"]
    p_hat = torch.tensor([0.5, 0.25, 1.0, 0.0])
    emb = torch.tensor([[0.5, 0.0], [0.5, 5.0], [0.5, 5.0], [0.5, 5.0]]).double()
    mem = MemoryPenalty()
    mem.add(torch.tensor([[1.0, 0.0]]))
    out = NoveltyReward(det, beta=0.5, lambda_rep=1.0, lambda_mem=0.2, memory=mem, n_gram=2)(p_hat, questions, emb)
    # uncertainty 1 - 2|p - 1/2|
    unc = np.array([1.0, 0.5, 0.0, 0.0])
    # repetition: the three identical questions (BLEU distance 0) form one cluster; the graph question shares
    # no word with them (BLEU 0, distance 1) and stays alone
    rep = np.array([3, 3, 1, 3]) / 4
    # novelty: every held-out grid point has its nearest fitted neighbour at >= 1/39, while (0.5, 0) is within
    # 1/78 of a grid point, so it is more seen than every held-out item: F = 1, novelty 0. The points at
    # height 5 are farther than every held-out item: F = 0, novelty 1.
    nov = np.array([0.0, 1.0, 1.0, 1.0])
    gate = np.array([1.0, 1.0, 0.0, 0.0])  # p = 1 and p = 0 close the gate
    memp = np.array([1.0, 0.5 / np.hypot(0.5, 5.0), 0.5 / np.hypot(0.5, 5.0), 0.5 / np.hypot(0.5, 5.0)])
    expected = unc - 1.0 * rep - 0.2 * memp + 0.5 * nov * gate
    np.testing.assert_allclose(out["uncertainty"].numpy(), unc)
    np.testing.assert_allclose(out["repetition"].numpy(), rep)
    np.testing.assert_allclose(out["novelty"].numpy(), nov)
    np.testing.assert_allclose(out["gate"].numpy(), gate)
    np.testing.assert_allclose(out["memory"].numpy(), memp, rtol=1e-12)
    np.testing.assert_allclose(out["reward"].numpy(), expected, rtol=1e-12)


def test_gate_zeroes_novelty_for_unsolved_and_always_solved() -> None:
    det = _fitted_detector()
    emb = torch.tensor([[0.5, 9.0]] * 3).double()  # far from the buffer: novelty 1
    out = NoveltyReward(det, beta=1.0, lambda_rep=0.0)(torch.tensor([0.0, 0.5, 1.0]), embeddings=emb)
    np.testing.assert_allclose(out["reward"].numpy(), [0.0, 2.0, 0.0])
    ungated = NoveltyReward(det, beta=1.0, lambda_rep=0.0, gate=False)(torch.tensor([0.0, 0.5, 1.0]), embeddings=emb)
    np.testing.assert_allclose(ungated["reward"].numpy(), [1.0, 2.0, 1.0])


def test_empty_buffer_gives_zero_novelty() -> None:
    cal = CalibratedSeenDetector(KNNDistanceDetector(), min_buffer=8)
    out = NoveltyReward(cal, beta=2.0, lambda_rep=0.0)(torch.tensor([0.5, 0.5]), embeddings=torch.randn(2, 3))
    np.testing.assert_allclose(out["reward"].numpy(), [1.0, 1.0])


def test_bleu_distance_matches_torchmetrics_pairwise() -> None:
    qs = ["what is 3 + 4 ?", "what is 3 + 5 ?", "is a linked to b ?"]
    d = bleu_distance_matrix(qs, n_gram=2).numpy()
    for i, a in enumerate(qs):
        for j, b in enumerate(qs):
            ab = float(bleu_score([a], [[b]], n_gram=2, smooth=True))
            ba = float(bleu_score([b], [[a]], n_gram=2, smooth=True))
            assert d[i, j] == pytest.approx(1 - (ab + ba) / 2 if i != j else 0.0)
    # the two near-duplicates (distance < 0.5) cluster together
    np.testing.assert_allclose(repetition_penalty(qs, threshold=0.5, n_gram=2).numpy(), [2 / 3, 2 / 3, 1 / 3])


def test_agreement_rate_majority_and_reference() -> None:
    rates = agreement_rate([["1", "2", "2", "3"], ["x", "x", "x", "x"]])
    np.testing.assert_allclose(rates.numpy(), [0.5, 1.0])
    np.testing.assert_allclose(agreement_rate([["1", "2", "2"]], reference=["1"]).numpy(), [1 / 3])


def test_bad_inputs() -> None:
    with pytest.raises(ValueError, match="beta"):
        NoveltyReward(_fitted_detector(), beta=-0.1)
    with pytest.raises(ValueError, match="lambda_rep"):
        NoveltyReward(beta=0.0, lambda_rep=-1.0)
    with pytest.raises(ValueError, match="detector"):
        NoveltyReward(None, beta=0.5)
    with pytest.raises(ValueError, match="m="):
        agreement_rate([["1"], ["2"]])
    with pytest.raises(ValueError, match="p_hat"):
        NoveltyReward(beta=0.0, lambda_rep=0.0)(torch.tensor([1.5]))
    with pytest.raises(ValueError, match="width 3"):
        NoveltyReward(_fitted_detector(), beta=1.0, lambda_rep=0.0)(torch.tensor([0.5]), embeddings=torch.zeros(1, 3))
    with pytest.raises(ValueError, match="questions"):
        NoveltyReward(beta=0.0, lambda_rep=1.0)(torch.tensor([0.5, 0.5]))
