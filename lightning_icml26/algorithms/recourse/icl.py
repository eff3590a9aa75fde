"""Label-only in-context-learning (ICL) classifiers conditioned on ``M`` labelled context rows.

Each predictor is a :class:`~lightning_icml26.algorithms.recourse.LabelOracle` (``predictor(X) -> labels``)
with ``classes_``; ``logits_torch`` exposes scores to white-box baselines (Wachter) only.

* :class:`LinearAttentionICL`: one layer of linear self-attention doing in-context linear regression, the
  model of the ICL recourse theory. Its weights are ``w_C = Gamma^-1 (1/M) sum_i s_i x_i`` (``s_i = +-1``),
  ``Gamma`` a fixed "pre-trained" covariance; as ``M`` grows ``w_C -> Gamma^-1 E[s x]``, the least-squares
  weights when ``Gamma`` is the data covariance, so its recourse converges to classical linear recourse.
* :class:`KernelICL`: soft k-nearest-neighbours, ``p(y | x, C) ~ sum_i K(x, x_i) 1[y_i = y]``.
* :class:`ContextLogisticICL`: a logistic regression fitted on the context (a cheap ICL proxy; the context
  is fixed per predictor, so it is fitted once instead of at every call).
* :class:`LanguageModelICL`: the context written into a prompt for any
  :class:`~lightning_icml26.llm.LanguageModel`; the label is the class name the model finds most likely.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np
import torch
from torch import Tensor

from lightning_icml26._optional import require
from lightning_icml26.llm import LanguageModel, continuation_scores

__all__ = ["ContextLogisticICL", "KernelICL", "LanguageModelICL", "LinearAttentionICL", "linear_recourse"]


def _context(X: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    X, y = np.asarray(X, dtype=float), np.asarray(y)
    if X.ndim != 2 or X.shape[0] < 1 or not np.all(np.isfinite(X)):
        raise ValueError(f"X_context must be a finite (M, d) array with M >= 1, got shape {X.shape}")
    if y.shape != (X.shape[0],):
        raise ValueError(f"y_context must have shape ({X.shape[0]},) like X_context's rows, got {y.shape}")
    return X, y.astype(int)


class _ICL(ABC):
    classes_: np.ndarray
    n_features: int

    def _rows(self, X: np.ndarray) -> np.ndarray:
        X = np.asarray(X, dtype=float)
        if X.ndim != 2 or X.shape[1] != self.n_features:
            raise ValueError(f"X must have shape (n, {self.n_features}), got {X.shape}")
        return X

    @abstractmethod
    def logits_torch(self, X: Tensor) -> Tensor:
        """``(n, C)`` differentiable class scores (white-box access for gradient baselines)."""

    def predict(self, X: np.ndarray) -> np.ndarray:
        """Labels of the rows of ``X``."""
        with torch.no_grad():
            scores = self.logits_torch(torch.as_tensor(self._rows(X), dtype=torch.float64))
        return self.classes_[scores.argmax(1).numpy()]

    def __call__(self, X: np.ndarray) -> np.ndarray:
        """Labels only (the oracle interface)."""
        return self.predict(X)


class LinearAttentionICL(_ICL):
    """Linear self-attention ICL for two classes: ``label = classes_[1] iff x . w_C > threshold``.

    Args:
        X_context: ``(M, d)`` context rows.
        y_context: ``(M,)`` context labels, two classes (the larger one is the positive class ``+1``).
        gamma: ``(d, d)`` pre-trained covariance ``Gamma`` (default the identity).
        threshold: decision threshold ``t``.

    Example:
        >>> icl = LinearAttentionICL(np.array([[1.0, 0.0], [-1.0, 0.0]]), np.array([1, 0]))
        >>> icl.weights.tolist(), icl(np.array([[0.5, 3.0], [-0.5, 3.0]])).tolist()
        ([1.0, 0.0], [1, 0])
    """

    def __init__(
        self, X_context: np.ndarray, y_context: np.ndarray, gamma: np.ndarray | None = None, threshold: float = 0.0
    ) -> None:
        X, y = _context(X_context, y_context)
        self.classes_ = np.unique(y)
        if self.classes_.size != 2:
            raise ValueError(f"y_context must hold exactly two classes, got {self.classes_.tolist()}")
        self.n_features = X.shape[1]
        gamma = np.eye(self.n_features) if gamma is None else np.asarray(gamma, dtype=float)
        if gamma.shape != (self.n_features, self.n_features):
            raise ValueError(f"gamma must have shape ({self.n_features}, {self.n_features}), got {gamma.shape}")
        signs = np.where(y == self.classes_[1], 1.0, -1.0)
        self.weights = np.linalg.solve(gamma, X.T @ signs / X.shape[0])
        self.threshold = float(threshold)

    def decision_function(self, X: np.ndarray) -> np.ndarray:
        """``x . w_C - threshold``."""
        return self._rows(X) @ self.weights - self.threshold

    def logits_torch(self, X: Tensor) -> Tensor:
        """``[0, x . w_C - t]`` per row."""
        score = X @ torch.as_tensor(self.weights, dtype=X.dtype) - self.threshold
        return torch.stack([torch.zeros_like(score), score], 1)

    def closed_form_recourse(self, x: np.ndarray, margin: float = 1e-6) -> np.ndarray:
        """Least-L2 change that crosses the boundary: ``(t - x . w + margin) w / ||w||^2`` (0 if already positive).

        Example:
            >>> icl = LinearAttentionICL(np.array([[2.0, 0.0], [-2.0, 0.0]]), np.array([1, 0]))
            >>> icl.closed_form_recourse(np.array([-1.0, 5.0]), margin=0.0).tolist()
            [1.0, 0.0]
        """
        return linear_recourse(self.weights, self.threshold, x, margin)


def linear_recourse(weights: np.ndarray, threshold: float, x: np.ndarray, margin: float = 1e-6) -> np.ndarray:
    """Least-L2 ``delta`` with ``(x + delta) . w >= threshold + margin`` (zero when ``x`` already satisfies it).

    Example:
        >>> linear_recourse(np.array([0.0, 2.0]), 1.0, np.array([3.0, 0.0]), margin=0.0).tolist()
        [0.0, 0.5]
    """
    weights, x = np.asarray(weights, dtype=float), np.asarray(x, dtype=float)
    gap = threshold + margin - x @ weights
    return np.maximum(gap, 0.0)[..., None] * weights / (weights @ weights)


class KernelICL(_ICL):
    """Soft k-nearest-neighbour ICL with a Gaussian kernel (any number of classes).

    Args:
        X_context: ``(M, d)`` context rows.
        y_context: ``(M,)`` context labels.
        bandwidth: kernel bandwidth (default: the median distance from a context row to its nearest other
            context row; the median pairwise distance makes the sum nearly flat, so the majority class wins).

    Example:
        >>> icl = KernelICL(np.array([[0.0], [1.0], [5.0]]), np.array([0, 0, 2]), bandwidth=1.0)
        >>> icl(np.array([[0.4], [4.0]])).tolist()
        [0, 2]
    """

    def __init__(self, X_context: np.ndarray, y_context: np.ndarray, bandwidth: float | None = None) -> None:
        X, y = _context(X_context, y_context)
        self.classes_ = np.unique(y)
        self.n_features = X.shape[1]
        if bandwidth is None:
            distances = np.sqrt(((X[:, None] - X[None]) ** 2).sum(-1)) + np.diag(np.full(len(X), np.inf))
            nearest = distances.min(1) if len(X) > 1 else np.ones(1)
            bandwidth = float(np.median(nearest)) if np.median(nearest) > 0 else 1.0
        if not bandwidth > 0:
            raise ValueError(f"bandwidth must be > 0, got {bandwidth!r}")
        self.bandwidth = float(bandwidth)
        self._X = torch.as_tensor(X, dtype=torch.float64)
        self._onehot = torch.as_tensor((y[:, None] == self.classes_[None]).astype(float))

    def logits_torch(self, X: Tensor) -> Tensor:
        """``log(sum_i K(x, x_i) 1[y_i = c] + 1e-12)``."""
        sq = ((X[:, None, :] - self._X.to(X)[None]) ** 2).sum(-1)
        return torch.log(torch.exp(-sq / (2 * self.bandwidth**2)) @ self._onehot.to(X) + 1e-12)


class ContextLogisticICL(_ICL):
    """Multinomial logistic regression fitted on the context rows.

    Args:
        X_context: ``(M, d)`` context rows.
        y_context: ``(M,)`` context labels, at least two classes.
        C: inverse L2 regularisation strength.

    Example:
        >>> X = np.array([[0.0], [0.2], [1.0], [1.2]])
        >>> ContextLogisticICL(X, np.array([0, 0, 1, 1]), C=10.0)(np.array([[0.0], [1.5]])).tolist()
        [0, 1]
    """

    def __init__(self, X_context: np.ndarray, y_context: np.ndarray, C: float = 1.0) -> None:
        X, y = _context(X_context, y_context)
        self.classes_ = np.unique(y)
        if self.classes_.size < 2:
            raise ValueError(f"y_context must hold at least two classes, got {self.classes_.tolist()}")
        self.n_features = X.shape[1]
        linear_model = require("sklearn.linear_model", extra="tabular", purpose="the context logistic ICL")
        self.model = linear_model.LogisticRegression(C=C, max_iter=1000).fit(X, y)
        coef, intercept = self.model.coef_, self.model.intercept_
        if self.classes_.size == 2:  # sklearn keeps one row for two classes
            coef, intercept = np.vstack([np.zeros_like(coef), coef]), np.concatenate([[0.0], intercept])
        self._coef = torch.as_tensor(coef, dtype=torch.float64)
        self._intercept = torch.as_tensor(intercept, dtype=torch.float64)

    def logits_torch(self, X: Tensor) -> Tensor:
        """``X coef^T + intercept``."""
        return X @ self._coef.to(X).T + self._intercept.to(X)


class LanguageModelICL:
    """A language model as a label-only ICL classifier: context rows in the prompt, the label read by scoring.

    The prompt lists the context rows as ``name=value`` pairs (``decimals`` digits) followed by
    ``-> <class name>``, then the query row and ``->``; the label is the class whose name (after a space) has
    the highest total log-probability as the continuation. One prompt per row; no scores leave the object.

    Args:
        model: any :class:`~lightning_icml26.llm.LanguageModel`.
        X_context: ``(M, d)`` context rows.
        y_context: ``(M,)`` context labels.
        feature_names: ``d`` names (default ``x0, x1, ...``).
        class_names: names written for the sorted classes (default their numbers).
        decimals: digits written per value.
        instruction: the first line of the prompt.

    Example:
        >>> class Fake:  # prefers the class that follows "x0=1"
        ...     def logprobs(self, prompts, continuations):
        ...         last = [p.splitlines()[-1] for p in prompts]
        ...         return [torch.tensor([0.0 if (l.startswith("x0=1")) == (c == " 1") else -5.0])
        ...                 for l, c in zip(last, continuations)]
        >>> icl = LanguageModelICL(Fake(), np.array([[0.0], [1.0]]), np.array([0, 1]), decimals=0)
        >>> icl(np.array([[1.0], [0.0]])).tolist()
        [1, 0]
    """

    def __init__(
        self,
        model: LanguageModel,
        X_context: np.ndarray,
        y_context: np.ndarray,
        feature_names: list[str] | tuple[str, ...] | None = None,
        class_names: list[str] | tuple[str, ...] | None = None,
        decimals: int = 2,
        instruction: str = "Predict the label of the last row from the labelled rows above it.",
    ) -> None:
        X, y = _context(X_context, y_context)
        self.model = model
        self.classes_ = np.unique(y)
        self.n_features = X.shape[1]
        self.feature_names = (
            tuple(feature_names) if feature_names is not None else tuple(f"x{j}" for j in range(X.shape[1]))
        )
        if len(self.feature_names) != self.n_features:
            raise ValueError(f"feature_names must have {self.n_features} names, got {len(self.feature_names)}")
        names = tuple(class_names) if class_names is not None else tuple(str(c) for c in self.classes_)
        if len(names) != self.classes_.size:
            raise ValueError(f"class_names must have {self.classes_.size} names, got {len(names)}")
        self.class_names, self.decimals = names, decimals
        label = dict(zip(self.classes_, names, strict=True))
        self._header = "\n".join([instruction] + [f"{self._row(x)} -> {label[c]}" for x, c in zip(X, y, strict=True)])

    def _row(self, x: np.ndarray) -> str:
        return ", ".join(f"{n}={v:.{self.decimals}f}" for n, v in zip(self.feature_names, x, strict=True))

    def prompt(self, x: np.ndarray) -> str:
        """The prompt for one row."""
        return f"{self._header}\n{self._row(x)} ->"

    def __call__(self, X: np.ndarray) -> np.ndarray:
        """Labels only (the oracle interface): one prompt per row."""
        X = np.asarray(X, dtype=float)
        if X.ndim != 2 or X.shape[1] != self.n_features:
            raise ValueError(f"X must have shape (n, {self.n_features}), got {X.shape}")
        options = [f" {n}" for n in self.class_names]
        best = [int(continuation_scores(self.model, self.prompt(x), options).argmax()) for x in X]
        return self.classes_[np.array(best, dtype=int)]
