"""Label-only access to a classifier: the :class:`LabelOracle` protocol and the :class:`CountingOracle` budget."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np

__all__ = ["BudgetExhausted", "CountingOracle", "LabelOracle"]


@runtime_checkable
class LabelOracle(Protocol):
    """Anything that maps ``(n, d)`` rows to ``(n,)`` labels (no scores, no gradients)."""

    def __call__(self, X: np.ndarray) -> np.ndarray:
        """Labels of the rows of ``X``."""
        ...


class BudgetExhausted(RuntimeError):
    """Raised by :class:`CountingOracle` when a call would exceed its query budget."""


class CountingOracle:
    """Counts every row sent to ``oracle`` and refuses any call that would pass ``budget`` rows.

    A refused call does not reach the wrapped oracle, so ``queries`` never exceeds ``budget``.

    Args:
        oracle: the label oracle (a callable ``(n, d) -> (n,)``).
        budget: the most rows that may be queried (``>= 1``).

    Example:
        >>> oracle = CountingOracle(lambda X: (X[:, 0] > 0).astype(int), budget=3)
        >>> oracle(np.array([[1.0], [-1.0]])).tolist(), oracle.queries, oracle.remaining
        ([1, 0], 2, 1)
        >>> oracle(np.zeros((2, 1)))  # doctest: +IGNORE_EXCEPTION_DETAIL
        Traceback (most recent call last):
        ...
        BudgetExhausted: 2 more queries would exceed the budget ...
    """

    def __init__(self, oracle: LabelOracle, budget: int) -> None:
        if not callable(oracle):
            raise TypeError(f"oracle must be callable (rows -> labels), got {type(oracle).__name__}")
        if isinstance(budget, bool) or not isinstance(budget, int | np.integer) or budget < 1:
            raise ValueError(f"budget must be an int >= 1, got {budget!r}")
        self.oracle = oracle
        self.budget = int(budget)
        self.queries = 0

    @property
    def remaining(self) -> int:
        """Queries left."""
        return self.budget - self.queries

    def __call__(self, X: np.ndarray) -> np.ndarray:
        """Labels of ``X`` (``(n, d)``); counts ``n`` queries."""
        X = np.asarray(X, dtype=float)
        if X.ndim != 2:
            raise ValueError(f"X must be a 2-D array of rows, got shape {X.shape}")
        n = X.shape[0]
        if self.queries + n > self.budget:
            raise BudgetExhausted(f"{n} more queries would exceed the budget of {self.budget} ({self.queries} used)")
        self.queries += n
        labels = np.asarray(self.oracle(X))
        if labels.shape != (n,):
            raise ValueError(f"the oracle must answer one label per row, shape ({n},), got shape {labels.shape}")
        return labels
