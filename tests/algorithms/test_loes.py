"""LOES layer selection: building blocks against dense / sklearn references, planted signal, errors."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from sklearn.linear_model import Ridge

from lightning_icml26.algorithms import select_layers
from lightning_icml26.algorithms.loes import isotropy, orthogonalize, redundancy, ridge_fit, simplex_area


def _planted(seed: int, n: int = 400, n_layers: int = 7, signal_layer: int = 3):
    g = torch.Generator().manual_seed(seed)
    y = torch.arange(n) % 3
    scale = torch.tensor([1.0, 1, 2, 3, 4, 5, 6, 7])
    layers = [torch.randn(n, 8, generator=g) * scale for _ in range(n_layers)]
    angle = 2 * torch.pi * y / 3
    signal = 1.2 * torch.stack([angle.cos(), angle.sin()], 1)
    layers[signal_layer][:, :2] = signal + 0.53 * torch.randn(n, 2, generator=g)
    return layers, y


def test_isotropy_isotropic_vs_rank_one():
    g = torch.Generator().manual_seed(0)
    iso_cloud = torch.randn(5000, 16, generator=g)
    rank_one = torch.randn(5000, 1, generator=g) * torch.randn(1, 16, generator=g)
    # closed form for rank one: eigenvalues (s, 0, ..., 0) -> mean / std = 1 / sqrt(D - 1)
    assert isotropy(rank_one) == pytest.approx(1 / np.sqrt(15), rel=1e-3)
    assert isotropy(iso_cloud) > 5.0
    # against a numpy computation of the same definition
    x = iso_cloud.double().numpy()
    lam = np.linalg.eigvalsh(np.cov(x, rowvar=False) + 1e-6 * np.eye(16))
    assert isotropy(iso_cloud) == pytest.approx(lam.mean() / (lam.std() + 1e-6), rel=1e-6)


def test_ridge_matches_sklearn():
    g = torch.Generator().manual_seed(1)
    x, y = torch.randn(60, 5, generator=g).double(), torch.randn(60, 2, generator=g).double()
    w, b, fitted = ridge_fit(x, y, ridge=0.7)
    ref = Ridge(alpha=0.7, fit_intercept=True).fit(x.numpy(), y.numpy())
    np.testing.assert_allclose(w.numpy(), ref.coef_.T, atol=1e-10)
    np.testing.assert_allclose(b.numpy(), ref.intercept_, atol=1e-10)
    np.testing.assert_allclose(fitted.numpy(), ref.predict(x.numpy()), atol=1e-10)


def test_projected_features_are_orthogonal_to_selected_span():
    g = torch.Generator().manual_seed(2)
    s = torch.randn(80, 6, generator=g).double() + 3.0
    x = (s[:, :4] @ torch.randn(4, 5, generator=g).double()) + torch.randn(80, 5, generator=g).double() + 1.0
    xt = orthogonalize(x, s, eps=1e-10)
    inner = (s - s.mean(0)).T @ (xt - x.mean(0))
    assert inner.abs().max() < 1e-6
    assert torch.allclose(xt.mean(0), x.mean(0))
    # the residual is the least-squares residual of x on s (numpy lstsq)
    sc, xc = (s - s.mean(0)).numpy(), (x - x.mean(0)).numpy()
    coef = np.linalg.lstsq(sc, xc, rcond=None)[0]
    np.testing.assert_allclose((xt - x.mean(0)).numpy(), xc - sc @ coef, atol=1e-6)


def test_redundancy_and_simplex_against_dense():
    g = torch.Generator().manual_seed(3)
    a, b = torch.randn(50, 4, generator=g).double(), torch.randn(50, 3, generator=g).double()
    ac, bc = a - a.mean(0), b - b.mean(0)
    expected = np.linalg.norm(ac.numpy().T @ bc.numpy()) / (np.linalg.norm(ac.numpy()) * np.linalg.norm(bc.numpy()))
    assert redundancy(a, [a]) == pytest.approx(
        np.linalg.norm(ac.numpy().T @ ac.numpy()) / np.linalg.norm(ac.numpy()) ** 2, rel=1e-9
    )
    assert redundancy(a, [b]) == pytest.approx(expected, rel=1e-9)
    # four centroids: all C(4, 3) triangles are used; compare with Heron's formula
    x = torch.tensor([[0.0, 0], [3, 0], [0, 4], [3, 4]], dtype=torch.float64)
    labels = torch.arange(4)

    def heron(p, q, r):
        la, lb, lc = np.linalg.norm(p - q), np.linalg.norm(q - r), np.linalg.norm(r - p)
        s = (la + lb + lc) / 2
        return np.sqrt(max(s * (s - la) * (s - lb) * (s - lc), 0.0))

    pts = x.numpy()
    import itertools

    ref = np.mean([heron(pts[i], pts[j], pts[k]) for i, j, k in itertools.combinations(range(4), 3)])
    assert simplex_area(x, labels) == pytest.approx(ref, rel=1e-9)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_planted_middle_layer_is_selected_first(seed):
    layers, y = _planted(seed)
    result = select_layers(layers, y, k=3, seed=seed)
    assert result.indices[0] == 3
    assert len(set(result.indices)) == 3
    # the residual error falls as layers are added
    assert all(a >= b - 1e-12 for a, b in zip(result.residual_mse, result.residual_mse[1:], strict=False))
    # the planted layer has by far the lowest step-1 fit error
    mse = result.steps[0]["mse"]
    assert mse[3] < 0.5 * min(m for i, m in enumerate(mse) if i != 3)


def test_two_planted_layers_found_with_residual_boosting():
    g = torch.Generator().manual_seed(5)
    n = 600
    y = torch.arange(n) % 4
    onehot = torch.nn.functional.one_hot(y).double()
    layers = [torch.randn(n, 6, generator=g).double() * torch.arange(1, 7).double() for _ in range(6)]
    # layer 1 separates classes {0,1} vs {2,3}; layer 4 separates {0,2} vs {1,3}: both are needed
    layers[1][:, 0] = 2.0 * (onehot[:, 0] + onehot[:, 1] - 0.5) + 0.3 * torch.randn(n, generator=g).double()
    layers[4][:, 0] = 2.0 * (onehot[:, 0] + onehot[:, 2] - 0.5) + 0.3 * torch.randn(n, generator=g).double()
    # the fit terms alone (residual boosting on the orthogonalised candidates) pick both halves
    result = select_layers(layers, y, k=2, alpha=0.0, gamma=0.0, eta=0.0)
    assert sorted(result.indices) == [1, 4]
    assert result.residual_mse[1] < result.residual_mse[0] - 0.05


def test_label_free_variant_runs_without_labels():
    layers, _ = _planted(0)
    layers[5] = layers[2] + 1e-3 * torch.randn_like(layers[2])  # a near copy is redundant
    result = select_layers(layers, None, k=3)
    assert len(result.indices) == 3
    assert not {2, 5} <= set(result.indices)
    assert all(np.isnan(v) for v in result.residual_mse)


def test_regression_targets():
    layers, y = _planted(1)
    target = layers[4][:, 3:5].clone() * 0.1
    result = select_layers(layers, target, k=1, eta=0.0)
    assert result.indices == [4]


def test_clear_errors():
    layers, y = _planted(0, n_layers=4)
    with pytest.raises(ValueError, match=r"k must be .* number of layers = 4"):
        select_layers(layers, y, k=5)
    with pytest.raises(ValueError, match="at least 3 classes, got 2"):
        select_layers(layers, y % 2, k=2)
    assert len(select_layers(layers, y % 2, k=2, eta=0.0).indices) == 2
    small = [torch.randn(5, 8) for _ in range(3)]
    with pytest.raises(ValueError, match=r"n=5 samples .* D=8"):
        select_layers(small, torch.tensor([0, 1, 2, 0, 1]), k=1, ridge=0.0)
    assert select_layers(small, torch.tensor([0, 1, 2, 0, 1]), k=1).indices[0] in range(3)
    with pytest.raises(TypeError, match="embeddings"):
        select_layers("abc", y)
    with pytest.raises(ValueError, match="rows"):
        select_layers(layers, y[:10], k=1)
