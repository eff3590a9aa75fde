"""torchmetrics for causal graph recovery on edge-code matrices (see ``metrics.functional.causal``).

Every state is a fixed-shape count tensor summed over processes, so DDP equals one process.
"""

from __future__ import annotations

from abc import abstractmethod
from typing import Any

import torch
from torch import Tensor

from lightning_icml26.metrics._plot import PlottableMetric
from lightning_icml26.metrics.functional.causal import (
    _f1,
    _latent_update,
    _orientation_update,
    _skeleton_update,
    structural_hamming_distance_counts,
)

__all__ = ["LatentPairF1", "OrientationAccuracy", "SkeletonF1", "StructuralHammingDistance"]


class _GraphCountMetric(PlottableMetric):
    is_differentiable = False
    full_state_update = False
    counts: Tensor
    n_counts = 3

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.add_state("counts", default=torch.zeros(self.n_counts, dtype=torch.long), dist_reduce_fx="sum")

    @abstractmethod
    def _count(self, preds: Tensor, target: Tensor) -> Tensor:
        """The summable counts of one update (the subclass's states)."""

    def update(self, preds: Tensor, target: Tensor) -> None:
        """Add one graph ``(p, p)`` or a batch ``(B, p, p)`` of predicted and true edge codes."""
        self.counts += self._count(preds, target).to(self.counts.device)


class _GraphF1(_GraphCountMetric):
    """An F1 score from summed (tp, fp, fn) counts."""

    higher_is_better = True
    plot_lower_bound = 0.0
    plot_upper_bound = 1.0

    def compute(self) -> Tensor:
        """The F1 score."""
        return _f1(*self.counts)


class SkeletonF1(_GraphF1):
    """F1 of the recovered adjacencies over every graph passed to ``update`` (states: tp, fp, fn).

    Example:
        >>> m = SkeletonF1()
        >>> m.update(torch.tensor([[0, 1], [0, 0]]), torch.tensor([[0, 0], [1, 0]]))
        >>> m.compute()
        tensor(1., dtype=torch.float64)
    """

    def _count(self, preds: Tensor, target: Tensor) -> Tensor:
        return _skeleton_update(preds, target)


class LatentPairF1(_GraphF1):
    """F1 of the recovered latent pairs (edge code 2) over every graph passed to ``update``.

    Example:
        >>> m = LatentPairF1()
        >>> m.update(torch.tensor([[0, 2, 0], [2, 0, 0], [0, 0, 0]]), torch.tensor([[0, 2, 2], [2, 0, 0], [2, 0, 0]]))
        >>> m.compute()
        tensor(0.6667, dtype=torch.float64)
    """

    def _count(self, preds: Tensor, target: Tensor) -> Tensor:
        return _latent_update(preds, target)


class OrientationAccuracy(_GraphCountMetric):
    """Share of true directed edges, among those found adjacent, that are oriented correctly.

    Example:
        >>> m = OrientationAccuracy()
        >>> m.update(torch.tensor([[0, 1], [1, 0]]), torch.tensor([[0, 1], [0, 0]]))
        >>> m.update(torch.tensor([[0, 1], [0, 0]]), torch.tensor([[0, 1], [0, 0]]))
        >>> m.compute()
        tensor(0.5000, dtype=torch.float64)
    """

    higher_is_better = True
    plot_lower_bound = 0.0
    plot_upper_bound = 1.0
    n_counts = 2

    def _count(self, preds: Tensor, target: Tensor) -> Tensor:
        return _orientation_update(preds, target)

    def compute(self) -> Tensor:
        """The accuracy (NaN before any true edge is found)."""
        correct, total = self.counts
        return correct.double() / total if total > 0 else torch.tensor(float("nan"), dtype=torch.float64)


class StructuralHammingDistance(_GraphCountMetric):
    """Mean structural Hamming distance per graph: pairs whose edge code (none, ->, <-, unoriented, <->) differs.

    Example:
        >>> m = StructuralHammingDistance()
        >>> m.update(torch.tensor([[[0, 1], [1, 0]], [[0, 0], [0, 0]]]), torch.tensor([[[0, 1], [0, 0]]] * 2))
        >>> m.compute()
        tensor(1., dtype=torch.float64)
    """

    higher_is_better = False
    plot_lower_bound = 0.0
    n_counts = 2

    def _count(self, preds: Tensor, target: Tensor) -> Tensor:
        return structural_hamming_distance_counts(preds, target)

    def compute(self) -> Tensor:
        """Total distance over the number of graphs."""
        distance, graphs = self.counts
        return distance.double() / graphs if graphs > 0 else torch.tensor(float("nan"), dtype=torch.float64)
