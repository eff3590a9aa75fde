"""torchmetrics ``RecourseValidity``, ``RecourseCost``, ``RecourseSparsity`` and ``QueryCount`` (sum states).

Every state is a sum with a count, so DDP runs that split the rows give one process's numbers.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from lightning_icml26.metrics._plot import PlottableMetric
from lightning_icml26.metrics.functional.recourse import (
    _ratio,
    _recourse_cost_update,
    _recourse_sparsity_update,
    query_count,
    recourse_validity,
)

__all__ = ["QueryCount", "RecourseCost", "RecourseSparsity", "RecourseValidity"]


class _MeanMetric(PlottableMetric):
    is_differentiable = False
    full_state_update = False
    total: Tensor
    count: Tensor

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.add_state("total", default=torch.zeros((), dtype=torch.float64), dist_reduce_fx="sum")
        self.add_state("count", default=torch.zeros((), dtype=torch.long), dist_reduce_fx="sum")

    def _add(self, total: Tensor, count: Tensor) -> None:
        self.total += total.to(self.total)
        self.count += count.to(self.count)

    def compute(self) -> Tensor:
        """The mean over everything seen (``nan`` before any row)."""
        return _ratio(self.total, self.count)


class RecourseValidity(_MeanMetric):
    """Fraction of counterfactuals predicted as their target class.

    Example:
        >>> m = RecourseValidity()
        >>> m.update(torch.tensor([1, 0]), torch.tensor([1, 1]))
        >>> m.update(torch.tensor([2]), torch.tensor([2]))
        >>> m.compute()
        tensor(0.6667, dtype=torch.float64)
    """

    higher_is_better = True
    plot_lower_bound = 0.0
    plot_upper_bound = 1.0

    def update(self, labels: Tensor, targets: Tensor) -> None:
        """Add ``(n,)`` counterfactual labels and their targets."""
        self._add(recourse_validity(labels, targets) * labels.numel(), torch.tensor(labels.numel()))


class RecourseCost(_MeanMetric):
    """Mean normalised ``L1 + L0`` cost of the valid counterfactuals.

    Args:
        ranges: ``(d,)`` ranges dividing continuous changes (default ones).
        discrete: ``(d,)`` mask of discrete features, counted as changed or not (default none).
        **kwargs: forwarded to :class:`torchmetrics.Metric`.

    Example:
        >>> m = RecourseCost(ranges=torch.tensor([2.0, 1.0]), discrete=torch.tensor([False, True]))
        >>> m.update(torch.zeros(2, 2), torch.tensor([[1.0, 1.0], [4.0, 0.0]]), torch.tensor([True, False]))
        >>> m.compute()
        tensor(1.5000, dtype=torch.float64)
    """

    higher_is_better = False
    plot_lower_bound = 0.0

    def __init__(self, ranges: Tensor | None = None, discrete: Tensor | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.ranges, self.discrete = ranges, discrete

    def update(self, original: Tensor, counterfactual: Tensor, valid: Tensor | None = None) -> None:
        """Add ``(n, d)`` original rows, their counterfactuals and the ``(n,)`` validity mask."""
        self._add(*_recourse_cost_update(original, counterfactual, valid, self.ranges, self.discrete))


class RecourseSparsity(_MeanMetric):
    """Mean number of changed features of the valid counterfactuals.

    Args:
        atol: a feature counts as changed when it moves by more than this.
        **kwargs: forwarded to :class:`torchmetrics.Metric`.

    Example:
        >>> m = RecourseSparsity()
        >>> m.update(torch.zeros(2, 3), torch.tensor([[1.0, 0.0, 2.0], [0.0, 0.0, 5.0]]))
        >>> m.compute()
        tensor(1.5000, dtype=torch.float64)
    """

    higher_is_better = False
    plot_lower_bound = 0.0

    def __init__(self, atol: float = 1e-9, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if not atol >= 0:
            raise ValueError(f"atol must be >= 0, got {atol!r}")
        self.atol = float(atol)

    def update(self, original: Tensor, counterfactual: Tensor, valid: Tensor | None = None) -> None:
        """Add ``(n, d)`` original rows, their counterfactuals and the ``(n,)`` validity mask."""
        self._add(*_recourse_sparsity_update(original, counterfactual, valid, self.atol))


class QueryCount(_MeanMetric):
    """Mean number of label queries spent per row.

    Example:
        >>> m = QueryCount()
        >>> m.update(torch.tensor([20, 150]))
        >>> m.compute()
        tensor(85., dtype=torch.float64)
    """

    higher_is_better = False
    plot_lower_bound = 0.0

    def update(self, queries: Tensor) -> None:
        """Add ``(n,)`` per-row query counts."""
        self._add(query_count(queries) * queries.numel(), torch.tensor(queries.numel()))
