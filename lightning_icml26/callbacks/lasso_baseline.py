"""A scikit-learn Lasso fitted beside a sparse linear model, for a side-by-side test summary."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import lightning.pytorch as pl
import numpy as np
import torch
from lightning.pytorch.callbacks import Callback

from lightning_icml26._optional import require
from lightning_icml26._requirements import Requirement, declare_requirements
from lightning_icml26.metrics.functional import support_f1

__all__ = ["LassoBaseline"]


def _rows(loader: Iterable[Sequence[torch.Tensor]]) -> tuple[np.ndarray, np.ndarray]:
    xs, ys = zip(*((batch[0], batch[1]) for batch in loader), strict=True)
    return torch.cat(xs).double().numpy(), torch.cat(ys).double().numpy()


@declare_requirements([Requirement("sklearn", "tabular", "the Lasso baseline")])
class LassoBaseline(Callback):
    """At the end of testing, fit ``sklearn.linear_model.Lasso`` and log its figures next to the model's.

    The regularisation strength is chosen on the validation loader (lowest validation MSE over ``alphas``),
    never on the test rows; the chosen Lasso is then scored on the test loader. Logged (as test metrics, so
    they land in the run's summary beside ``test_w_error`` / ``test_support_f1``): ``lasso_alpha``,
    ``lasso_test_loss`` (``0.5 * MSE``, the module's loss), and, when the datamodule has a ``w_star``,
    ``lasso_test_w_error`` and ``lasso_test_support_f1`` (support = exact non-zeros of Lasso's coefficients).
    Batches must be ``(x, y)`` pairs; the model has no intercept, and neither does the Lasso.

    Args:
        alphas: candidate Lasso strengths (positive), searched on the validation rows.
        max_iter: coordinate-descent iterations of each fit.

    Example:
        >>> baseline = LassoBaseline(alphas=(0.01, 0.1))
        >>> baseline.alphas
        (0.01, 0.1)
    """

    def __init__(self, alphas: Sequence[float] = tuple(np.logspace(-4, 0, 17).tolist()), max_iter: int = 20000) -> None:
        alphas = tuple(float(a) for a in alphas)
        if not alphas or any(a <= 0 for a in alphas):
            raise ValueError(f"alphas must be a non-empty list of positive numbers, got {alphas}")
        if max_iter < 1:
            raise ValueError(f"max_iter must be a positive integer, got {max_iter}")
        self.alphas = alphas
        self.max_iter = max_iter

    def on_test_epoch_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        """Fit on the training rows, choose ``alpha`` on the validation rows, score on the test rows."""
        datamodule = getattr(trainer, "datamodule", None)
        if datamodule is None:
            raise ValueError("LassoBaseline needs the test run to have a datamodule (its train/val/test loaders)")
        linear_model = require("sklearn.linear_model", extra="tabular", purpose="the Lasso baseline")
        x_train, y_train = _rows(datamodule.train_dataloader())
        x_val, y_val = _rows(datamodule.val_dataloader())
        x_test, y_test = _rows(datamodule.test_dataloader())
        best: tuple[float, float, np.ndarray] | None = None
        for alpha in self.alphas:
            lasso = linear_model.Lasso(alpha=alpha, fit_intercept=False, max_iter=self.max_iter)
            lasso.fit(x_train, y_train)
            val_mse = float(np.mean((x_val @ lasso.coef_ - y_val) ** 2))
            if best is None or val_mse < best[0]:
                best = (val_mse, alpha, lasso.coef_.copy())
        assert best is not None  # alphas is non-empty (checked in __init__)
        _, alpha, coef = best
        pl_module.log("lasso_alpha", alpha)
        pl_module.log("lasso_test_loss", 0.5 * float(np.mean((x_test @ coef - y_test) ** 2)))
        w_star = getattr(datamodule, "w_star", None)
        if isinstance(w_star, torch.Tensor) and bool((w_star != 0).any()):
            w = torch.as_tensor(coef, dtype=w_star.dtype)
            pl_module.log("lasso_test_w_error", float(torch.linalg.vector_norm(w - w_star)))
            pl_module.log("lasso_test_support_f1", support_f1(w, w_star))
