"""Sparse-regression generator and data module."""

from __future__ import annotations

import pytest
import torch

from lightning_icml26.data import SparseRegressionDataModule, make_sparse_regression


def test_generator_is_seeded_and_sparse() -> None:
    X, y, w = make_sparse_regression(30, 50, 5, noise=0.0, seed=3)
    X2, y2, w2 = make_sparse_regression(30, 50, 5, noise=0.0, seed=3)
    assert torch.equal(X, X2)
    assert torch.equal(w, w2)
    assert torch.equal(y, y2)
    assert int((w != 0).sum()) == 5
    assert bool((w[w != 0].abs() >= 1).all())
    torch.testing.assert_close(X @ w, y)
    with pytest.raises(ValueError, match="num_nonzero must lie in"):
        make_sparse_regression(5, 4, 5)


def test_data_module_shares_truth() -> None:
    dm = SparseRegressionDataModule(num_train=12, num_val=8, num_features=20, num_nonzero=2, batch_size=4)
    dm.setup()
    xt, yt = dm._splits["train"].tensors
    xv, yv = dm._splits["val"].tensors
    torch.testing.assert_close(xt @ dm.w_star, yt)
    torch.testing.assert_close(xv @ dm.w_star, yv)
    assert len(dm.train_dataloader().dataset) == 12


def test_test_split_is_separate_from_validation() -> None:
    dm = SparseRegressionDataModule(num_train=12, num_val=8, num_test=6, num_features=20, num_nonzero=2, batch_size=4)
    dm.setup()
    x_val = torch.cat([b[0] for b in dm.val_dataloader()])
    x_test = torch.cat([b[0] for b in dm.test_dataloader()])
    assert x_val.shape[0] == 8
    assert x_test.shape[0] == 6
    # No test row appears among the validation rows, and both follow y = X w* (noise 0).
    assert not bool((x_test[:, None, :] == x_val[None, :, :]).all(-1).any())
    y_test = torch.cat([b[1] for b in dm.test_dataloader()])
    torch.testing.assert_close(x_test @ dm.w_star, y_test)


def test_num_test_must_be_positive() -> None:
    with pytest.raises(ValueError, match="num_test"):
        SparseRegressionDataModule(num_test=0)
