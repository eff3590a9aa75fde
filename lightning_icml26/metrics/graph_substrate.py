"""torchmetrics for G-Substrate: normalised exact match of graph answers and micro-F1 of extracted facts."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from lightning_icml26.metrics._plot import PlottableMetric
from lightning_icml26.metrics.functional.graph_substrate import _edge_counts, _exact_counts

__all__ = ["EdgeMicroF1", "GraphExactMatch"]


class GraphExactMatch(PlottableMetric):
    """Fraction of answers equal to their targets after lower-casing and stripping punctuation and spaces.

    ``update(preds, target)`` takes two equally long sequences of strings. States are two sums, so DDP
    sync is exact. Functional twin:
    :func:`~lightning_icml26.metrics.functional.graph_exact_match`.

    Args:
        **kwargs: forwarded to :class:`torchmetrics.Metric`.

    Example:
        >>> metric = GraphExactMatch()
        >>> metric.update(["Yes.", "0, 2"], ["yes", "0 2"])
        >>> metric.update(["7"], ["8"])
        >>> metric.compute()
        tensor(0.6667)
    """

    is_differentiable = False
    higher_is_better = True
    full_state_update = False
    plot_lower_bound = 0.0
    plot_upper_bound = 1.0
    correct: torch.Tensor
    total: torch.Tensor

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.add_state("correct", torch.tensor(0, dtype=torch.long), dist_reduce_fx="sum")
        self.add_state("total", torch.tensor(0, dtype=torch.long), dist_reduce_fx="sum")

    def update(self, preds: Sequence[str], target: Sequence[str]) -> None:
        """Count the exact matches of one batch."""
        correct, total = _exact_counts(preds, target)
        self.correct += correct
        self.total += total

    def compute(self) -> torch.Tensor:
        """Exact-match rate (``nan`` before any update)."""
        return (self.correct.double() / self.total.double()).float()


class EdgeMicroF1(PlottableMetric):
    r"""Micro-F1 of extracted ``(subject, relation, object)`` facts, pooled over every pair seen.

    Each text's facts are its parenthesised groups (whitespace collapsed); true positives, false positives
    and false negatives are summed over pairs and ranks. Functional twin:
    :func:`~lightning_icml26.metrics.functional.edge_micro_f1`.

    Args:
        **kwargs: forwarded to :class:`torchmetrics.Metric`.

    Example:
        >>> metric = EdgeMicroF1()
        >>> metric.update(["(0, -, 1)\n(1, -, 2)"], ["(0, -, 1)"])
        >>> metric.compute()
        tensor(0.6667)
    """

    is_differentiable = False
    higher_is_better = True
    full_state_update = False
    plot_lower_bound = 0.0
    plot_upper_bound = 1.0
    counts: torch.Tensor

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.add_state("counts", torch.zeros(3, dtype=torch.long), dist_reduce_fx="sum")

    def update(self, preds: Sequence[str], target: Sequence[str]) -> None:
        """Add one batch's true positives, false positives and false negatives."""
        self.counts += torch.tensor(_edge_counts(preds, target), dtype=torch.long)

    def compute(self) -> torch.Tensor:
        """``2 TP / (2 TP + FP + FN)`` (0 when no fact was seen)."""
        tp, fp, fn = (int(c) for c in self.counts)
        denom = 2 * tp + fp + fn
        return torch.tensor(2 * tp / denom if denom else 0.0, dtype=torch.float32)
