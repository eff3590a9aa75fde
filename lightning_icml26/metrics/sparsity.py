"""torchmetrics ``Sparsity`` and ``CompressionRatio`` of weight tensors (sum states: non-zero and total counts).

Under DDP every rank usually holds the same weights: both counts are multiplied by the world size and the
ratios are unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from lightning_icml26.metrics._plot import PlottableMetric
from lightning_icml26.metrics.functional.sparsity import (
    WeightsLike,
    _compression_ratio_compute,
    _sparsity_arg_validation,
    _sparsity_compute,
    _sparsity_update,
    select_weights,
)

__all__ = ["CompressionRatio", "Sparsity"]


class _CountMetric(PlottableMetric):
    is_differentiable = False
    full_state_update = False
    nonzero: torch.Tensor
    total: torch.Tensor

    def __init__(self, threshold: float = 0.0, include: Sequence[str] | str = ("conv",), **kwargs: Any) -> None:
        super().__init__(**kwargs)
        _sparsity_arg_validation(threshold)
        select_weights(torch.nn.Module(), include)  # validates ``include``
        self.threshold = float(threshold)
        self.include = include
        self.add_state("nonzero", default=torch.zeros((), dtype=torch.long), dist_reduce_fx="sum")
        self.add_state("total", default=torch.zeros((), dtype=torch.long), dist_reduce_fx="sum")

    def update(self, weights: WeightsLike) -> None:
        """Add the counts of ``weights`` (a tensor, an iterable of tensors, or a module)."""
        nonzero, total = _sparsity_update(weights, self.threshold, self.include)
        self.nonzero += nonzero.to(self.nonzero.device)
        self.total += total.to(self.total.device)


class Sparsity(_CountMetric):
    """Fraction of weights with ``|w| <= threshold`` over everything passed to ``update``.

    Args:
        threshold: magnitude at or below which a weight counts as zero.
        include: weight kinds selected when ``update`` gets a module (``"conv"``, ``"linear"``, ``"all"``).
        **kwargs: forwarded to :class:`torchmetrics.Metric`.

    Example:
        >>> m = Sparsity()
        >>> m.update(torch.tensor([0.0, 1.0]))
        >>> m.update([torch.zeros(2)])
        >>> m.compute()
        tensor(0.7500, dtype=torch.float64)
    """

    higher_is_better = True
    plot_lower_bound = 0.0
    plot_upper_bound = 1.0

    def compute(self) -> torch.Tensor:
        """The fraction of zeros."""
        return _sparsity_compute(self.nonzero, self.total)


class CompressionRatio(_CountMetric):
    """Compression ratio ``total / non-zero`` over everything passed to ``update``.

    Args:
        threshold: magnitude at or below which a weight counts as zero.
        include: weight kinds selected when ``update`` gets a module.
        **kwargs: forwarded to :class:`torchmetrics.Metric`.

    Example:
        >>> m = CompressionRatio(threshold=0.1)
        >>> m.update(torch.tensor([0.05, 1.0, 0.0, 0.0]))
        >>> m.compute()
        tensor(4., dtype=torch.float64)
    """

    higher_is_better = True
    plot_lower_bound = 1.0

    def compute(self) -> torch.Tensor:
        """The compression ratio."""
        return _compression_ratio_compute(self.nonzero, self.total)
