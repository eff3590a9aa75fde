"""Shared machinery of the label-only recourse generators: inputs, per-row budgets and the result."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from lightning_icml26.algorithms.recourse.oracle import CountingOracle, LabelOracle
from lightning_icml26.algorithms.recourse.spec import ActionabilitySpec

__all__ = ["RecourseGenerator", "RecourseResult", "SearchState"]


@dataclass(frozen=True)
class RecourseResult:
    """Recourse for ``n`` rows.

    Attributes:
        counterfactuals: ``(n, d)`` recourse rows (the original row where none was found).
        found: ``(n,)`` whether the counterfactual is predicted as the target.
        original_labels: ``(n,)`` predicted labels of the original rows.
        labels: ``(n,)`` predicted labels of the counterfactuals.
        targets: ``(n,)`` target classes (the class reached when any other class was accepted and one was found).
        queries: ``(n,)`` label queries spent per row (``0`` for white-box generators).
        cost: ``(n,)`` normalised ``L1 + L0`` cost of each counterfactual (``0`` where none was found).
    """

    counterfactuals: np.ndarray
    found: np.ndarray
    original_labels: np.ndarray
    labels: np.ndarray
    targets: np.ndarray
    queries: np.ndarray
    cost: np.ndarray

    @property
    def validity(self) -> float:
        """Fraction of rows with a valid recourse."""
        return float(self.found.mean()) if self.found.size else 0.0


class SearchState:
    """The objective ``L = (1 - 1[flip]) + lam * cost`` of one row, with the cheapest flip seen so far."""

    def __init__(
        self,
        x: np.ndarray,
        spec: ActionabilitySpec,
        oracle: CountingOracle,
        accept: Callable[[int], bool],
        lam: float,
    ) -> None:
        self.x, self.spec, self.oracle, self.accept, self.lam = x, spec, oracle, accept, lam
        self.best: np.ndarray | None = None
        self.best_cost = np.inf
        self.best_label: int | None = None

    def query(self, x_new: np.ndarray) -> tuple[bool, float]:
        """Project, ask one label, update the incumbent; return ``(flipped, cost)``."""
        x_new = self.spec.project(self.x, x_new)
        label = int(self.oracle(x_new[None, :])[0])
        cost = float(self.spec.cost(self.x, x_new))
        flipped = bool(self.accept(label))
        if flipped and cost < self.best_cost:
            self.best, self.best_cost, self.best_label = x_new, cost, label
        return flipped, cost

    def loss(self, x_new: np.ndarray) -> float:
        """One query of the recourse objective."""
        flipped, cost = self.query(x_new)
        return (0.0 if flipped else 1.0) + self.lam * cost


class RecourseGenerator(ABC):
    """Base of the label-only generators: validation, one :class:`CountingOracle` per row, the result.

    Subclasses implement ``_search(state, rng)``.

    Args:
        oracle: the label oracle.
        spec: the actionability spec (its length must equal the number of features).
        classes: the classes the oracle can answer (default: ``oracle.classes_``).
        budget: label queries per row, the first one reads the row's own label.
        lam: weight of the cost in the objective; default ``1 / (m + 1)`` for ``m`` actionable features, so any
            flip scores better than any non-flip (RACOS only uses the ranking).
        seed: seed; row ``i`` uses ``numpy.random.default_rng([seed, i])``.
    """

    def __init__(
        self,
        oracle: LabelOracle,
        spec: ActionabilitySpec,
        classes: Sequence[int] | None = None,
        budget: int = 150,
        lam: float | None = None,
        seed: int = 0,
    ) -> None:
        if not callable(oracle):
            raise TypeError(f"oracle must be callable (rows -> labels), got {type(oracle).__name__}")
        if not isinstance(spec, ActionabilitySpec):
            raise TypeError(f"spec must be an ActionabilitySpec, got {type(spec).__name__}")
        if isinstance(budget, bool) or not isinstance(budget, int | np.integer) or budget < 1:
            raise ValueError(f"budget must be an int >= 1, got {budget!r}")
        if lam is not None and not lam > 0:
            raise ValueError(f"lam must be > 0 or None, got {lam!r}")
        if classes is None:
            classes = getattr(oracle, "classes_", None)
            if classes is None:
                raise ValueError("classes is None and the oracle has no classes_: pass the classes it can answer")
        self.oracle, self.spec, self.budget, self.lam, self.seed = oracle, spec, int(budget), lam, int(seed)
        self.classes = np.asarray(classes).astype(int)

    def actionable(self, x: np.ndarray) -> np.ndarray:
        """Indices of the features that can move from ``x``."""
        lo, hi = self.spec.bounds(x)
        return np.flatnonzero(hi > lo)

    def _targets(self, y_target: int | Sequence[int] | np.ndarray | None, n: int) -> np.ndarray:
        if y_target is None:
            return np.full(n, -1)
        targets = np.broadcast_to(np.asarray(y_target), (n,)) if np.ndim(y_target) == 0 else np.asarray(y_target)
        if targets.shape != (n,):
            raise ValueError(f"y_target must be None, one class or ({n},) classes, got shape {targets.shape}")
        unknown = ~np.isin(targets, self.classes)
        if unknown.any():
            raise ValueError(f"y_target {targets[unknown][0]!r} is not a known class; allowed: {self.classes.tolist()}")
        return targets.astype(int)

    def generate(self, X: np.ndarray, y_target: int | Sequence[int] | np.ndarray | None = None) -> RecourseResult:
        """Recourse for every row of ``X`` towards ``y_target``.

        Args:
            X: ``(n, d)`` rows, each valid under the spec.
            y_target: one class, ``(n,)`` classes, or ``None`` for the cheapest other class (any class but the
                current one is accepted; the one reached is reported).

        Returns:
            A :class:`RecourseResult`.
        """
        X = np.asarray(X, dtype=float)
        if X.ndim != 2:
            raise ValueError(f"X must be a 2-D array (n, d), got shape {X.shape}")
        if X.shape[1] != self.spec.n_features:
            raise ValueError(f"the spec describes {self.spec.n_features} features but X has {X.shape[1]}")
        self.spec.check(X)
        n, d = X.shape
        targets = self._targets(y_target, n)
        out = {
            "counterfactuals": X.copy(),
            "found": np.zeros(n, bool),
            "original_labels": np.zeros(n, int),
            "labels": np.zeros(n, int),
            "targets": targets.copy(),
            "queries": np.zeros(n, int),
            "cost": np.zeros(n),
        }
        for i in range(n):
            x = X[i]
            counting = CountingOracle(self.oracle, self.budget)
            current = int(counting(x[None, :])[0])
            target = int(targets[i])
            if target == current:
                raise ValueError(f"y_target {target} equals the current label of row {i}; ask for another class")

            def accept(label: int, target: int = target, current: int = current) -> bool:
                return label == target if target >= 0 else label != current

            m = self.actionable(x).size
            state = SearchState(x, self.spec, counting, accept, self.lam if self.lam else 1.0 / (m + 1))
            if m > 0 and counting.remaining > 0:
                self._search(state, np.random.default_rng([self.seed, i]))
            out["original_labels"][i] = out["labels"][i] = current
            out["queries"][i] = counting.queries
            if state.best is not None and state.best_label is not None:
                out["counterfactuals"][i], out["found"][i] = state.best, True
                out["labels"][i], out["cost"][i] = state.best_label, state.best_cost
                out["targets"][i] = state.best_label
        return RecourseResult(**out)

    @abstractmethod
    def _search(self, state: SearchState, rng: np.random.Generator) -> None:
        """Spend the row's budget through ``state.query``; the state keeps the cheapest flip found."""
