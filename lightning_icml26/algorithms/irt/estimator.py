"""sklearn-style :class:`GradedResponseModel` around :func:`~lightning_icml26.algorithms.irt.fit_grm`."""

from __future__ import annotations

import numpy as np
import torch

from lightning_icml26.algorithms.irt.grm import GRMFit, category_probabilities, fit_grm, scores_to_counts

__all__ = ["GradedResponseModel"]


class GradedResponseModel:
    """Samejima's graded response model by marginal maximum likelihood (2PL when ``n_categories == 2``).

    Args:
        n_categories: number of ordered score levels ``K`` (scores are ``1..K``).
        n_nodes: quadrature nodes.
        max_iter: EM iterations at most.
        tol: relative log-likelihood tolerance.

    Attributes:
        discrimination_: ``[P]`` numpy array after :meth:`fit`.
        thresholds_: ``[P, K - 1]``.
        theta_: EAP abilities ``[N]``; ``theta_sd_``: their posterior SDs.
        fit_: the full :class:`GRMFit`.

    Example:
        >>> scores = np.array([[1, 1], [2, 2], [3, 3], [1, 2], [2, 3], [3, 2], [1, 1], [3, 3]])
        >>> model = GradedResponseModel(n_categories=3).fit(scores)
        >>> model.thresholds_.shape, bool(np.all(np.diff(model.thresholds_, axis=1) > 0))
        ((2, 2), True)
        >>> bool(model.theta_[2] > model.theta_[0])
        True
    """

    def __init__(self, n_categories: int, n_nodes: int = 61, max_iter: int = 500, tol: float = 1e-7) -> None:
        if isinstance(n_categories, bool) or not isinstance(n_categories, int) or n_categories < 2:
            raise ValueError(f"n_categories must be an int >= 2, got {n_categories!r}")
        self.n_categories = n_categories
        self.n_nodes = n_nodes
        self.max_iter = max_iter
        self.tol = tol

    def fit(self, scores: np.ndarray | torch.Tensor) -> GradedResponseModel:
        """Fit to integer scores ``[samples, items]`` in ``1..K`` (``0`` = missing).

        Raises:
            ValueError: for scores outside ``0..K`` or an item without responses.
        """
        tensor = torch.as_tensor(np.asarray(scores))
        counts = scores_to_counts(tensor, self.n_categories)
        self.fit_: GRMFit = fit_grm(counts, n_nodes=self.n_nodes, max_iter=self.max_iter, tol=self.tol)
        self.discrimination_ = self.fit_.discrimination.numpy()
        self.thresholds_ = self.fit_.thresholds.numpy()
        self.theta_ = self.fit_.theta.numpy()
        self.theta_sd_ = self.fit_.theta_sd.numpy()
        return self

    def predict_proba(self, theta: np.ndarray) -> np.ndarray:
        """Category probabilities ``[P, len(theta), K]`` at the given abilities."""
        if not hasattr(self, "fit_"):
            raise ValueError("GradedResponseModel is not fitted yet: call fit(scores) first")
        t = torch.as_tensor(np.asarray(theta, dtype=np.float64))
        return category_probabilities(t, self.fit_.discrimination, self.fit_.thresholds).numpy()
