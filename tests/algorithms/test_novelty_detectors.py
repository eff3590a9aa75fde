"""Seen detectors against direct scikit-learn use, AUROC on planted clusters, calibration, bad inputs."""

from __future__ import annotations

import sys

import numpy as np
import pytest
import torch
from scipy.stats import kstest
from sklearn.ensemble import IsolationForest
from sklearn.metrics import roc_auc_score
from sklearn.neighbors import NearestNeighbors
from sklearn.svm import OneClassSVM

from lightning_icml26.algorithms.novelty import (
    CalibratedSeenDetector,
    DeepSVDDDetector,
    EmpiricalCDF,
    IsolationForestDetector,
    KNNDistanceDetector,
    NoveltyReward,
    OneClassSVMDetector,
)


def _clusters(seed: int = 0) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Seen: two Gaussian clusters in 6-D; test: fresh seen draws and an unseen cluster."""
    g = torch.Generator().manual_seed(seed)
    centers = torch.tensor([[3.0] * 6, [-3.0] * 6])
    seen = torch.cat([c + 0.7 * torch.randn(100, 6, generator=g) for c in centers]).double()
    seen_test = torch.cat([c + 0.7 * torch.randn(50, 6, generator=g) for c in centers]).double()
    unseen = (torch.tensor([3.0, -3.0, 3.0, -3.0, 0.0, 0.0]) + 0.7 * torch.randn(100, 6, generator=g)).double()
    return seen, seen_test, unseen


def test_sklearn_detectors_equal_direct_sklearn() -> None:
    seen, seen_test, unseen = _clusters()
    x, q = seen.numpy(), torch.cat([seen_test, unseen])
    ours = OneClassSVMDetector(nu=0.2).fit(seen).score(q).numpy()
    ref = OneClassSVM(kernel="rbf", nu=0.2, gamma="scale").fit(x).decision_function(q.numpy())
    np.testing.assert_allclose(ours, ref, rtol=1e-10, atol=1e-12)
    ours = IsolationForestDetector(n_estimators=50, seed=3).fit(seen).score(q).numpy()
    ref = IsolationForest(n_estimators=50, random_state=3).fit(x).decision_function(q.numpy())
    np.testing.assert_allclose(ours, ref, rtol=1e-10, atol=1e-12)
    ours = KNNDistanceDetector(k=4).fit(seen).score(q).numpy()
    brute = torch.cdist(q, seen).topk(4, largest=False).values.mean(1).numpy()
    np.testing.assert_allclose(ours, -brute, rtol=1e-9)
    dist, _ = NearestNeighbors(n_neighbors=4).fit(x).kneighbors(q.numpy())
    np.testing.assert_allclose(ours, -dist.mean(1), rtol=1e-9)


@pytest.mark.parametrize(
    "make",
    [
        lambda: OneClassSVMDetector(),
        lambda: IsolationForestDetector(seed=0),
        lambda: KNNDistanceDetector(k=5),
        lambda: DeepSVDDDetector(steps=150, seed=0),
    ],
    ids=["ocsvm", "iforest", "knn", "deep_svdd"],
)
def test_auroc_on_planted_clusters(make) -> None:
    seen, seen_test, unseen = _clusters(1)
    det = make().fit(seen)
    scores = torch.cat([det.score(seen_test), det.score(unseen)]).numpy()
    labels = np.r_[np.ones(len(seen_test)), np.zeros(len(unseen))]  # 1 = seen; higher score = more seen
    assert roc_auc_score(labels, scores) >= 0.95


def test_deep_svdd_refit_is_reproducible() -> None:
    seen, seen_test, _ = _clusters(2)
    a = DeepSVDDDetector(steps=30, seed=4).fit(seen).score(seen_test)
    torch.manual_seed(123)  # the global RNG must not matter
    b = DeepSVDDDetector(steps=30, seed=4).fit(seen).score(seen_test)
    torch.testing.assert_close(a, b)


def test_empirical_cdf_matches_numpy() -> None:
    ref = torch.randn(37, generator=torch.Generator().manual_seed(0))
    q = torch.linspace(-3, 3, 41)
    expected = np.array([(ref.numpy() <= v).mean() for v in q.numpy()])
    np.testing.assert_allclose(EmpiricalCDF(ref)(q).numpy(), expected)


@pytest.mark.parametrize("make", [lambda: KNNDistanceDetector(k=5), lambda: IsolationForestDetector(seed=0)])
def test_calibrated_scores_of_held_out_buffer_items_are_uniform(make) -> None:
    g = torch.Generator().manual_seed(5)
    pool = torch.randn(2400, 3, generator=g).double()
    cal = CalibratedSeenDetector(make(), holdout=0.5, seed=1).fit(pool[:2000])
    # fresh draws from the buffer's distribution are exchangeable with the held-out slice
    u = cal.seen(pool[2000:]).numpy()
    assert kstest(u, "uniform").pvalue > 0.01
    # and the held-out slice itself, re-scored, gives exactly the uniform grid k / n
    perm = torch.randperm(2000, generator=torch.Generator().manual_seed(1 * 1_000_003))
    held = cal.seen(pool[:2000][perm[:1000]])
    torch.testing.assert_close(torch.sort(held).values, torch.arange(1, 1001, dtype=torch.float64) / 1000)


def test_empty_buffer_rule_and_resume() -> None:
    cal = CalibratedSeenDetector(KNNDistanceDetector(), min_buffer=10)
    x = torch.randn(9, 2).double()
    assert torch.equal(cal.novelty(x), torch.zeros(9, dtype=torch.float64))
    assert not cal.flags(x).any()
    with pytest.raises(ValueError, match="min_buffer=10"):
        cal.fit(x)
    with pytest.raises(ValueError, match="min_buffer=10"):
        cal.fit(torch.zeros(0, 2))
    buf = torch.randn(30, 2, generator=torch.Generator().manual_seed(0)).double()
    cal.fit(buf)
    cal.fit(buf)
    other = CalibratedSeenDetector(KNNDistanceDetector(), min_buffer=10)
    other.load_state_dict(cal.state_dict(), buf)
    q = torch.randn(7, 2).double()
    torch.testing.assert_close(other.novelty(q), cal.novelty(q))


def test_bad_inputs() -> None:
    with pytest.raises(TypeError, match="embeddings"):
        KNNDistanceDetector().fit(np.zeros((3, 2)))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="2-D"):
        KNNDistanceDetector().fit(torch.zeros(3))
    det = KNNDistanceDetector().fit(torch.randn(10, 3))
    with pytest.raises(ValueError, match="width 2"):
        det.score(torch.randn(4, 2))
    with pytest.raises(RuntimeError, match="not fitted"):
        OneClassSVMDetector().score(torch.randn(4, 2))
    with pytest.raises(ValueError, match="nu"):
        OneClassSVMDetector(nu=0.0)
    with pytest.raises(ValueError, match="k must"):
        KNNDistanceDetector(k=0)
    with pytest.raises(ValueError, match="holdout"):
        CalibratedSeenDetector(KNNDistanceDetector(), holdout=1.0)
    with pytest.raises(TypeError, match="detector"):
        CalibratedSeenDetector(object())  # type: ignore[arg-type]
    cal = CalibratedSeenDetector(KNNDistanceDetector(), min_buffer=4).fit(torch.randn(20, 3))
    with pytest.raises(ValueError, match="width 5"):
        cal.novelty(torch.randn(2, 5))


@pytest.mark.parametrize(
    ("build", "module"),
    [
        (OneClassSVMDetector, "sklearn.svm"),
        (IsolationForestDetector, "sklearn.ensemble"),
        (KNNDistanceDetector, "sklearn.neighbors"),
        (lambda: NoveltyReward(beta=0.0, lambda_rep=1.0), "sklearn.cluster"),
    ],
)
def test_without_scikit_learn_building_names_the_novelty_extra(monkeypatch, build, module) -> None:
    monkeypatch.setitem(sys.modules, module, None)  # `import sklearn.<module>` fails as when it is not installed
    with pytest.raises(ImportError, match=r"pip install 'lightning-icml26\[novelty\]'"):
        build()
