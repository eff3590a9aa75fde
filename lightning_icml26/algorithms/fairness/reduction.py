"""In-processing by reduction: multi-class exponentiated gradient with a cost-sensitive softmax oracle.

A multi-class generalisation of Agarwal et al. (2018) (reconstruction; the paper's algorithm is not public).
Constraint moments on the training data (group ids ``a_i`` are used here, at training time only):

* DP: ``gamma_{k,a}(h) = P(h = k | A = a) - P(h = k)``, cells ``(k, a)``;
* EO: ``gamma_{y,k,a}(h) = P(h = k | A = a, Y = y) - P(h = k | Y = y)``;
* EOpp: the EO cells with ``k = y``;

each bounded by ``|gamma| <= alpha / 2`` (so every pairwise gap is at most ``alpha``). The Lagrangian
``err(h) + sum_j lambda_j (gamma_j(h) - alpha/2)`` over the signed constraints ``j`` gives the per-example
costs of predicting ``k``:

    c_i(k) = 1[k != y_i] + sum_a mu_{k,a} (1[a_i = a] / p_a - 1)                           (DP)
    c_i(k) = 1[k != y_i] + sum_a mu_{y_i,k,a} (1[a_i = a] / p_{a,y_i} - 1 / p_{y_i})          (EO, EOpp: k = y_i)

with ``mu = lambda+ - lambda-``. The best response minimises ``mean_i sum_k softmax(f(x_i))_k c_i(k)``
(the oracle trains ``model_factory()`` for ``oracle_steps`` full-batch Adam steps, warm-started from the
previous best response); the lambda player runs exponentiated gradient,
``lambda = B exp(theta) / (1 + sum exp(theta))``, ``theta += eta (gamma(h_t) - alpha / 2)``.

Output (as fairlearn's ``run_linprog_step``): an LP over the hull of the best responses and the ``K``
constant classifiers picks mixture weights that minimise training error subject to every pairwise gap
``<= alpha`` on the training data (always feasible thanks to the constant classifiers). :meth:`predict`
samples from that mixture; :meth:`predict_best` uses the best deterministic best response (most accurate
among those meeting the constraint on the training data, else the one with the smallest gap). Prediction
sees only ``x``.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from lightning_icml26.algorithms.fairness._common import (
    as_tensor,
    check_alpha,
    check_count,
    check_criterion,
    check_labels,
    one_hot,
    to_numpy,
)
from lightning_icml26.algorithms.fairness.eg import (
    _cell_shape,
    _eg_lambda,
    best_iterate,
    eg_multipliers,
    eg_update,
    mixture_weights,
    reduction_cells,
    reduction_costs,
    reduction_moments,
)

__all__ = [
    "ExponentiatedGradientReduction",
    "eg_multipliers",
    "eg_update",
    "mixture_weights",
    "reduction_cells",
    "reduction_costs",
    "reduction_moments",
]


class ExponentiatedGradientReduction:
    """Fair multi-class training of any torch classifier (e.g. a LightningModule) by the EG reduction.

    Args:
        model_factory: callable returning a fresh ``nn.Module`` that maps features ``(n, d)`` to logits
            ``(n, K)`` (a LightningModule's ``forward`` works).
        num_classes: number of classes ``K >= 2``.
        num_groups: number of groups ``G >= 2``.
        criterion: ``"dp"``, ``"eo"`` or ``"eopp"``.
        alpha: tolerance on every pairwise gap, ``0 <= alpha <= 1``.
        max_iter: number of EG iterations (best responses).
        eta0: EG step size scale; the step is ``eta0 / bound``.
        bound: ``B``, the l1 bound of the multipliers (default ``1 / max(alpha, 0.01)``).
        oracle_steps: Adam steps per best response (the first one gets three times as many).
        lr: Adam learning rate of the oracle.
        weight_decay: AdamW weight decay of the oracle.
        seed: seed of the model initialisation and of :meth:`predict`'s sampling.

    Attributes (after :meth:`fit`):
        weights_: mixture weights over ``models_`` followed by the ``K`` constant classifiers.
        train_error_, train_gap_: training error and largest pairwise gap of the mixture.
        history_: per-iteration ``dict(error, gap, lambda_l1)`` of the best responses.

    Example:
        >>> from lightning_icml26.data.tabular import make_fair_gaussian
        >>> data = make_fair_gaussian(200, seed=1)
        >>> red = ExponentiatedGradientReduction(lambda: nn.Linear(5, 4), 4, 3, alpha=0.1, max_iter=2,
        ...                                      oracle_steps=5)
        >>> red = red.fit(data.x, data.y, data.a)
        >>> red.predict_proba(data.x).shape, red.train_gap_ <= 0.1 + 1e-6
        (torch.Size([200, 4]), True)
    """

    def __init__(
        self,
        model_factory: Callable[[], nn.Module],
        num_classes: int,
        num_groups: int,
        criterion: str = "dp",
        alpha: float = 0.05,
        max_iter: int = 20,
        eta0: float = 2.0,
        bound: float | None = None,
        oracle_steps: int = 100,
        lr: float = 0.05,
        weight_decay: float = 0.0,
        seed: int = 0,
    ) -> None:
        if not callable(model_factory):
            raise TypeError(f"model_factory must be callable, got {type(model_factory).__name__}")
        self.model_factory = model_factory
        self.num_classes = check_count("num_classes", num_classes)
        self.num_groups = check_count("num_groups", num_groups)
        self.criterion = check_criterion(criterion)
        self.alpha = check_alpha(alpha)
        self.max_iter = check_count("max_iter", max_iter, 1)
        self.oracle_steps = check_count("oracle_steps", oracle_steps, 1)
        if eta0 <= 0:
            raise ValueError(f"eta0 must be positive, got {eta0}")
        self.eta0 = float(eta0)
        self.bound = float(bound) if bound is not None else 1.0 / max(self.alpha, 0.01)
        if self.bound <= 0:
            raise ValueError(f"bound must be positive, got {bound}")
        self.lr = lr
        self.weight_decay = weight_decay
        self.seed = seed
        self.models_: list[nn.Module] = []

    # --------------------------------------------------------------------- fit
    def _oracle(self, model: nn.Module, x: Tensor, costs: Tensor, steps: int) -> None:
        optimizer = torch.optim.AdamW(model.parameters(), lr=self.lr, weight_decay=self.weight_decay)
        model.train()
        for _ in range(steps):
            optimizer.zero_grad()
            loss = (model(x).softmax(dim=1) * costs).sum(1).mean()
            loss.backward()
            optimizer.step()
        model.eval()

    def fit(self, x: Tensor, y: Any, groups: Any) -> ExponentiatedGradientReduction:
        """Run the EG reduction on training data (group ids are used for the moments only).

        Args:
            x: features ``(n, d)``.
            y: labels ``(n,)`` in ``[0, K)``.
            groups: group ids ``(n,)`` in ``[0, G)``; every group (and for EO/EOpp every (group, label)
                cell) must have samples.

        Returns:
            ``self``.

        Raises:
            ValueError: labels or groups out of range, or an empty group.
        """
        if not isinstance(x, Tensor) or x.ndim != 2:
            raise ValueError(f"x must be a 2-D torch.Tensor, got {type(x).__name__} {getattr(x, 'shape', '')}")
        n = x.shape[0]
        yy = check_labels("y", to_numpy("y", y), self.num_classes, n)
        aa = check_labels("groups", to_numpy("groups", groups), self.num_groups, n)
        counts = np.bincount(aa, minlength=self.num_groups)
        if (counts == 0).any():
            raise ValueError(f"groups {np.flatnonzero(counts == 0).tolist()} have no training samples")
        cell = np.zeros((self.num_groups, self.num_classes))
        np.add.at(cell, (aa, yy), 1)
        if self.criterion != "dp" and (cell == 0).any():
            raise ValueError(f"(group, label) cells {np.argwhere(cell == 0).tolist()} have no training samples")
        x = x.float()
        y_t, a_t, cell_t = as_tensor(yy), as_tensor(aa), as_tensor(cell)
        theta = torch.zeros(2, *_cell_shape(self.criterion, self.num_classes, self.num_groups), dtype=torch.float64)
        step = self.eta0 / self.bound
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(self.seed)
            model = self.model_factory()
        self.models_, preds_list, self.history_ = [], [], []
        for it in range(self.max_iter):
            lam = _eg_lambda(theta, self.bound)
            mu = lam[0] - lam[1]
            costs = reduction_costs(y_t, a_t, mu, self.criterion, cell_t)
            costs = costs - costs.min(dim=1, keepdim=True).values
            steps = self.oracle_steps * (3 if it == 0 else 1)
            self._oracle(model, x, costs.float(), steps)
            with torch.no_grad():
                preds = model(x).argmax(dim=1).numpy()
            self.models_.append(copy.deepcopy(model))
            preds_list.append(preds)
            gamma = reduction_moments(self._confusion(one_hot(preds, self.num_classes), yy, aa), self.criterion)
            theta = eg_update(theta, gamma, self.alpha, step)
            self.history_.append(
                {
                    "error": float((preds != yy).mean()),
                    "gap": self._gap(one_hot(preds, self.num_classes), yy, aa),
                    "lambda_l1": float(lam.sum()),
                }
            )
        self.theta_ = theta
        # LP over the hull of the best responses and the constant classifiers
        candidates = [one_hot(p, self.num_classes) for p in preds_list]
        candidates += [np.tile(np.eye(self.num_classes)[k], (n, 1)) for k in range(self.num_classes)]
        errors = np.array([1.0 - (c[np.arange(n), yy]).mean() for c in candidates])
        cells = np.stack([self._cells(c, yy, aa) for c in candidates], axis=2)  # (G, C, T)
        self.weights_ = mixture_weights(errors, cells, self.alpha)
        mixture = sum(w * c for w, c in zip(self.weights_, candidates, strict=True))
        self.train_error_ = float(1.0 - mixture[np.arange(n), yy].mean())
        self.train_gap_ = self._gap(mixture, yy, aa)
        gaps = np.array([h["gap"] for h in self.history_])
        errs = np.array([h["error"] for h in self.history_])
        self.best_index_ = best_iterate(errs, gaps, self.alpha)
        return self

    def _confusion(self, dist: np.ndarray, y: np.ndarray, a: np.ndarray) -> Tensor:
        conf = np.zeros((self.num_groups, self.num_classes, self.num_classes))
        np.add.at(conf, (a, y), dist)
        return as_tensor(conf)

    def _cells(self, dist: np.ndarray, y: np.ndarray, a: np.ndarray) -> np.ndarray:
        return reduction_cells(self._confusion(dist, y, a), self.criterion).numpy()

    def _gap(self, dist: np.ndarray, y: np.ndarray, a: np.ndarray) -> float:
        cells = self._cells(dist, y, a)
        return float((cells.max(0) - cells.min(0)).max())

    # ----------------------------------------------------------------- predict
    def _check_fitted(self) -> None:
        if not self.models_:
            raise RuntimeError("ExponentiatedGradientReduction is not fitted: call fit first")

    @torch.no_grad()
    def predict_proba(self, x: Tensor) -> Tensor:
        """Class distribution of the randomised mixture ``(n, K)`` (float64)."""
        self._check_fitted()
        x = x.float()
        out = np.zeros((x.shape[0], self.num_classes))
        num_models = len(self.models_)
        for t, w in enumerate(self.weights_):
            if w <= 0:
                continue
            if t < num_models:
                out += w * one_hot(self.models_[t](x).argmax(1).numpy(), self.num_classes)
            else:
                out[:, t - num_models] += w
        return as_tensor(out)

    def predict(self, x: Tensor, generator: torch.Generator | None = None) -> Tensor:
        """Labels ``(n,)`` sampled from the randomised mixture."""
        probs = self.predict_proba(x)
        return torch.multinomial(probs.float().clamp_min(0) + 1e-12, 1, generator=generator).squeeze(1)

    @torch.no_grad()
    def predict_best(self, x: Tensor) -> Tensor:
        """Labels ``(n,)`` of the best deterministic best response (see the module docstring)."""
        self._check_fitted()
        return self.models_[self.best_index_](x.float()).argmax(1)
