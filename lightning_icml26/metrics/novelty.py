"""torchmetrics ``CoverageEntropy``, ``DistinctN`` and ``SeenRate`` for self-play questioners."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch
from torch import Tensor

from lightning_icml26.metrics._plot import PlottableMetric
from lightning_icml26.metrics.functional.novelty import (
    _check_args,
    _check_n,
    _coverage_entropy_compute,
    _coverage_entropy_update,
    _distinct_n_compute,
    _distinct_n_update,
    _seen_rate_update,
)

__all__ = ["CoverageEntropy", "DistinctN", "SeenRate"]


class CoverageEntropy(PlottableMetric):
    """Entropy of the category (template or cluster) histogram of the problems seen so far.

    Args:
        num_categories: number of categories.
        base: logarithm base (``e``: nats).
        **kwargs: forwarded to :class:`torchmetrics.Metric`.

    Example:
        >>> m = CoverageEntropy(num_categories=4, base=2)
        >>> m.update(torch.tensor([0, 1]))
        >>> m.update(torch.tensor([2, 3]))
        >>> m.compute()
        tensor(2., dtype=torch.float64)
    """

    is_differentiable = False
    higher_is_better = True
    full_state_update = False
    plot_lower_bound = 0.0
    counts: Tensor

    def __init__(self, num_categories: int, base: float = math.e, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        _check_args(num_categories, base)
        self.num_categories, self.base = num_categories, float(base)
        self.add_state("counts", default=torch.zeros(num_categories, dtype=torch.long), dist_reduce_fx="sum")

    def update(self, categories: Tensor) -> None:
        """Add the categories ``(n,)`` of a batch of problems."""
        self.counts = self.counts + _coverage_entropy_update(categories, self.num_categories).to(self.counts.device)

    def compute(self) -> Tensor:
        """Entropy of the accumulated histogram."""
        return _coverage_entropy_compute(self.counts, self.base)


class DistinctN(PlottableMetric):
    """Distinct word n-grams over all word n-grams, over every text seen (hashed counts; see the functional).

    Args:
        n: n-gram order.
        num_buckets: hash buckets of the n-gram counts.
        **kwargs: forwarded to :class:`torchmetrics.Metric`.

    Example:
        >>> m = DistinctN(n=1)
        >>> m.update(["a b", "b c"])
        >>> m.compute()
        tensor(0.7500, dtype=torch.float64)
    """

    is_differentiable = False
    higher_is_better = True
    full_state_update = False
    plot_lower_bound = 0.0
    plot_upper_bound = 1.0
    counts: Tensor
    total: Tensor

    def __init__(self, n: int = 2, num_buckets: int = 2**20, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        _check_n(n, num_buckets)
        self.n, self.num_buckets = n, num_buckets
        self.add_state("counts", default=torch.zeros(num_buckets, dtype=torch.long), dist_reduce_fx="sum")
        self.add_state("total", default=torch.tensor(0, dtype=torch.long), dist_reduce_fx="sum")

    def update(self, texts: Sequence[str]) -> None:
        """Add a batch of texts."""
        counts, total = _distinct_n_update(texts, self.n, self.num_buckets)
        self.counts = self.counts + counts.to(self.counts.device)
        self.total = self.total + total.to(self.total.device)

    def compute(self) -> Tensor:
        """Distinct over total n-grams."""
        return _distinct_n_compute(self.counts, self.total)


class SeenRate(PlottableMetric):
    """Share of generated questions that the seen detector flags as seen.

    Args:
        **kwargs: forwarded to :class:`torchmetrics.Metric`.

    Example:
        >>> m = SeenRate()
        >>> m.update(torch.tensor([True, False]))
        >>> m.compute()
        tensor(0.5000, dtype=torch.float64)
    """

    is_differentiable = False
    higher_is_better = False
    full_state_update = False
    plot_lower_bound = 0.0
    plot_upper_bound = 1.0
    seen: Tensor
    total: Tensor

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.add_state("seen", default=torch.tensor(0, dtype=torch.long), dist_reduce_fx="sum")
        self.add_state("total", default=torch.tensor(0, dtype=torch.long), dist_reduce_fx="sum")

    def update(self, flags: Tensor) -> None:
        """Add a batch of 0/1 seen flags ``(n,)``."""
        seen, total = _seen_rate_update(flags)
        self.seen = self.seen + seen.to(self.seen.device)
        self.total = self.total + total.to(self.total.device)

    def compute(self) -> Tensor:
        """Flagged over total (0 before any update)."""
        return self.seen.to(torch.float64) / self.total.clamp_min(1).to(torch.float64)
