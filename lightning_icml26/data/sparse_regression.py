"""Sparse linear regression with a k-sparse ground truth (generated, seeded): the ReWA ``linear/`` setting."""

from __future__ import annotations

from typing import Any

import torch
from torch.utils.data import TensorDataset

from lightning_icml26.data._splits import SplitsDataModule

__all__ = ["SparseRegressionDataModule", "make_sparse_regression"]


def make_sparse_regression(
    num_samples: int, num_features: int, num_nonzero: int, noise: float = 0.0, seed: int = 0
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Draw ``X ~ N(0, 1)``, a ``num_nonzero``-sparse ``w*`` (entries ``+-(1 + |N(0,1)|)``) and ``y = X w* + noise``.

    Args:
        num_samples: rows of ``X``.
        num_features: columns of ``X``.
        num_nonzero: support size of ``w*``, in ``[1, num_features]``.
        noise: standard deviation of the Gaussian noise, non-negative.
        seed: seed of the private generator.

    Returns:
        ``(X, y, w_star)`` float32 with shapes ``(n, d)``, ``(n,)``, ``(d,)``.

    Example:
        >>> X, y, w = make_sparse_regression(5, 8, 2)
        >>> tuple(X.shape), int((w != 0).sum()), bool(torch.allclose(X @ w, y))
        ((5, 8), 2, True)
    """
    if num_samples < 1 or num_features < 1:
        raise ValueError(f"num_samples and num_features must be positive, got {num_samples}, {num_features}")
    if not 1 <= num_nonzero <= num_features:
        raise ValueError(f"num_nonzero must lie in [1, num_features={num_features}], got {num_nonzero}")
    if noise < 0:
        raise ValueError(f"noise must be non-negative, got {noise}")
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(num_samples, num_features, generator=g)
    w = torch.zeros(num_features)
    support = torch.randperm(num_features, generator=g)[:num_nonzero]
    signs = torch.randint(0, 2, (num_nonzero,), generator=g).float() * 2 - 1
    w[support] = signs * (1 + torch.randn(num_nonzero, generator=g).abs())
    y = X @ w + noise * torch.randn(num_samples, generator=g)
    return X, y, w


class SparseRegressionDataModule(SplitsDataModule):
    """Loaders over :func:`make_sparse_regression` data; ``w_star`` is kept for evaluation.

    Args:
        num_train: training rows.
        num_val: validation rows (same ``w*``), for choosing hyper-parameters.
        num_test: test rows (same ``w*``), held out from every choice.
        num_features: dimension ``d``.
        num_nonzero: support size ``k``.
        noise: noise standard deviation.
        batch_size: loader batch size.
        seed: data seed.

    Example:
        >>> dm = SparseRegressionDataModule(num_train=20, num_val=10, num_features=30, num_nonzero=3, batch_size=5)
        >>> dm.setup()
        >>> x, y = next(iter(dm.train_dataloader()))
        >>> tuple(x.shape), int((dm.w_star != 0).sum())
        ((5, 30), 3)
    """

    def __init__(
        self,
        num_train: int = 200,
        num_val: int = 200,
        num_test: int = 200,
        num_features: int = 1000,
        num_nonzero: int = 10,
        noise: float = 0.0,
        batch_size: int = 25,
        seed: int = 0,
    ) -> None:
        super().__init__()
        if num_train < 1 or num_val < 1 or num_test < 1:
            raise ValueError(
                f"num_train, num_val and num_test must be positive, got {num_train}, {num_val}, {num_test}"
            )
        if batch_size < 1:
            raise ValueError(f"batch_size must be a positive integer, got {batch_size}")
        if not 1 <= num_nonzero <= num_features:
            raise ValueError(f"num_nonzero must lie in [1, num_features={num_features}], got {num_nonzero}")
        self.save_hyperparameters()
        self.num_features = num_features
        self.w_star = torch.zeros(num_features)

    def setup(self, stage: str | None = None) -> None:
        """Generate the data: train, validation and test rows share ``w*`` and never overlap."""
        if self._splits:
            return
        hp: Any = self.hparams
        total = hp.num_train + hp.num_val + hp.num_test
        X, y, w = make_sparse_regression(total, hp.num_features, hp.num_nonzero, hp.noise, hp.seed)
        self.w_star = w
        val_end = hp.num_train + hp.num_val
        self._splits["train"] = TensorDataset(X[: hp.num_train], y[: hp.num_train])
        self._splits["val"] = TensorDataset(X[hp.num_train : val_end], y[hp.num_train : val_end])
        self._splits["test"] = TensorDataset(X[val_end:], y[val_end:])
