"""Shared pieces of the PGF causal-discovery estimators: input checks and the fitted attributes."""

from __future__ import annotations

from typing import Any

import numpy as np

from lightning_icml26.algorithms.causal.pgf import check_counts

__all__ = ["CausalDiscoveryEstimator", "edge_list"]


def edge_list(code: np.ndarray, names: list[str] | None = None) -> list[str]:
    """Readable edges of an edge-code matrix: ``a -> b``, ``a <-> b`` (latent pair), ``a - b`` (unoriented).

    Example:
        >>> edge_list(np.array([[0, 1, 2], [0, 0, 1], [2, 1, 0]]), ["x", "y", "z"])
        ['x -> y', 'x <-> z', 'y - z']
    """
    p = code.shape[0]
    labels = names if names is not None else [f"X{i}" for i in range(p)]
    if len(labels) != p:
        raise ValueError(f"names must have {p} entries, got {len(labels)}")
    out = []
    for i in range(p):
        for j in range(i + 1, p):
            a, b = int(code[i, j]), int(code[j, i])
            if a == b == 2:
                out.append(f"{labels[i]} <-> {labels[j]}")
            elif a == b == 1:
                out.append(f"{labels[i]} - {labels[j]}")
            elif a:
                out.append(f"{labels[i]} -> {labels[j]}")
            elif b:
                out.append(f"{labels[j]} -> {labels[i]}")
    return out


class CausalDiscoveryEstimator:
    """Base of the sklearn-style estimators.

    ``fit(X)`` sets ``adjacency_``, ``orientation_``, ``latent_pairs_``, ``equivalence_classes_`` and
    ``graph_`` (edge codes, see ``graph_code``).

    Edge codes: ``graph_[i, j] = 1, graph_[j, i] = 0`` for an oriented ``i -> j``; ``1`` both ways for an
    adjacency whose orientation is not identified; ``2`` both ways for a latent pair ``i <-> j``.
    """

    min_samples = 100

    adjacency_: np.ndarray
    orientation_: np.ndarray
    latent_pairs_: np.ndarray
    graph_: np.ndarray
    equivalence_classes_: dict[tuple[int, ...], list[list[str]]]

    def _check_X(self, X: Any) -> np.ndarray:
        counts = check_counts(X, "X", min_variables=3)
        if counts.shape[0] < self.min_samples:
            raise ValueError(
                f"X has n_samples={counts.shape[0]}; {type(self).__name__} needs at least {self.min_samples} "
                "samples for its resampling standard errors"
            )
        return counts

    @staticmethod
    def _check_level(name: str, value: float, low: float = 0.0, high: float = 1.0) -> float:
        if not (isinstance(value, int | float) and low < value < high):
            raise ValueError(f"{name} must lie in ({low}, {high}), got {value!r}")
        return float(value)

    def _finish(self, adjacency: np.ndarray, arrow: np.ndarray, allow_latent: bool) -> None:
        """Set the fitted attributes from endpoint marks (``arrow[i, j]``: arrowhead at ``j`` on ``i - j``).

        An arrowhead at one end only is reported as ``i -> j``: with latents allowed this stands for the
        class ``{i -> j, i <-> j}``, in both of which ``j`` is not an ancestor of ``i``. Arrowheads at both
        ends are a latent pair when ``allow_latent``, otherwise a conflict left unoriented.
        """
        p = adjacency.shape[0]
        self.adjacency_ = adjacency.copy()
        self.orientation_ = np.zeros((p, p), dtype=bool)
        self.latent_pairs_ = np.zeros((p, p), dtype=bool)
        self.graph_ = np.zeros((p, p), dtype=np.int64)
        for i in range(p):
            for j in range(i + 1, p):
                if not adjacency[i, j]:
                    continue
                if arrow[i, j] and arrow[j, i] and allow_latent:
                    self.latent_pairs_[i, j] = self.latent_pairs_[j, i] = True
                    self.graph_[i, j] = self.graph_[j, i] = 2
                elif arrow[i, j] != arrow[j, i]:
                    a, b = (i, j) if arrow[i, j] else (j, i)
                    self.orientation_[a, b] = True
                    self.graph_[a, b] = 1
                else:
                    self.graph_[i, j] = self.graph_[j, i] = 1
