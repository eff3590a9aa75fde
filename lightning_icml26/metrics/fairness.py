"""Streaming multi-class (and binary) group-fairness metrics with fixed-shape, sum-reduced states.

Each metric keeps ``selection[a, k]`` and ``confusion[a, y, k]`` counts (``dist_reduce_fx="sum"``), so
DDP sync is one all-reduce of fixed-size tensors whatever groups a rank saw. Group ids keep their slot
(``bincount(..., minlength=...)``): unlike torchmetrics 1.9.0's ``BinaryFairness`` they are not compressed
by sorting, ``**kwargs`` (``process_group``, ``dist_sync_on_step``, ...) reach ``Metric.__init__``, and
``num_groups < 2`` is rejected. Definitions are in :mod:`lightning_icml26.metrics.functional.fairness`.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from lightning_icml26.metrics._plot import PlottableMetric
from lightning_icml26.metrics.functional._group_fairness import (
    Mode,
    Reduction,
    _binary_rates_compute,
    _gap_compute,
    _group_fairness_arg_validation,
    _group_fairness_format,
    _group_fairness_update,
    _group_rates_compute,
)

__all__ = [
    "BinaryDemographicParity",
    "BinaryEqualOpportunity",
    "BinaryEqualizedOdds",
    "BinaryGroupRates",
    "MulticlassDemographicParity",
    "MulticlassEqualOpportunity",
    "MulticlassEqualizedOdds",
    "MulticlassGroupRates",
]


class _GroupCounts(PlottableMetric):
    """Shared state and update: ``selection`` ``(G, K)`` and ``confusion`` ``(G, K, K)`` counts."""

    is_differentiable = False
    full_state_update = False
    higher_is_better: bool | None = False  # for the default mode="difference"; a ratio is better when higher
    selection: Tensor
    confusion: Tensor

    def __init__(
        self,
        num_classes: int,
        num_groups: int,
        mode: Mode = "difference",
        reduction: Reduction = "max",
        threshold: float | None = None,
        validate_args: bool = True,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        _group_fairness_arg_validation(num_classes, num_groups, mode, reduction, threshold)
        self.num_classes = num_classes
        self.num_groups = num_groups
        self.mode = mode
        self.reduction = reduction
        self.threshold = threshold
        self.validate_args = validate_args
        self.add_state("selection", torch.zeros(num_groups, num_classes, dtype=torch.long), dist_reduce_fx="sum")
        self.add_state(
            "confusion", torch.zeros(num_groups, num_classes, num_classes, dtype=torch.long), dist_reduce_fx="sum"
        )

    def update(self, preds: Tensor, target: Tensor | None, groups: Tensor) -> None:
        """Add a batch.

        Args:
            preds: class ids ``(N,)`` or scores ``(N, K)`` (binary forms: 0/1 or probabilities ``(N,)``).
            target: labels ``(N,)``; may be ``None`` for demographic parity only.
            groups: group ids ``(N,)`` in ``[0, num_groups)``.
        """
        if target is None and self._needs_target:
            raise ValueError(f"target must be given to {type(self).__name__}.update, got None")
        preds, target, groups = _group_fairness_format(
            preds, target, groups, self.num_classes, self.num_groups, self.threshold, self.validate_args
        )
        selection, confusion = _group_fairness_update(preds, target, groups, self.num_classes, self.num_groups)
        self.selection += selection.to(self.selection.device)
        self.confusion += confusion.to(self.confusion.device)

    _needs_target = True


class _MulticlassGap(_GroupCounts):
    """A multi-class gap metric: the criterion is the class attribute ``_which`` (``"dp"``, ``"eo"``, ``"eopp"``)."""

    _which = "dp"

    def __init__(
        self,
        num_classes: int,
        num_groups: int,
        mode: Mode = "difference",
        reduction: Reduction = "max",
        validate_args: bool = True,
        **kwargs: Any,
    ) -> None:
        super().__init__(num_classes, num_groups, mode, reduction, validate_args=validate_args, **kwargs)

    def compute(self) -> Tensor:
        """The gap (float64 scalar)."""
        return _gap_compute(self._which, self.selection, self.confusion, self.mode, self.reduction)


class _BinaryGap(_GroupCounts):
    """A binary gap metric (``_which`` is ``"binary_dp"``, ``"binary_eo"`` or ``"binary_eopp"``)."""

    _which = "binary_dp"

    def __init__(
        self,
        num_groups: int,
        mode: Mode = "difference",
        threshold: float = 0.5,
        validate_args: bool = True,
        **kwargs: Any,
    ) -> None:
        super().__init__(2, num_groups, mode, threshold=threshold, validate_args=validate_args, **kwargs)

    def compute(self) -> Tensor:
        """The gap (float64 scalar)."""
        return _gap_compute(self._which, self.selection, self.confusion, self.mode, "max")


class MulticlassGroupRates(_GroupCounts):
    """Per-group selection rates ``P(Yhat=k | A=a)`` and confusion rates ``P(Yhat=k | A=a, Y=y)``.

    Args:
        num_classes: number of classes ``K >= 2``.
        num_groups: number of groups ``G >= 2``.
        validate_args: check value ranges in ``update``.
        **kwargs: forwarded to :class:`torchmetrics.Metric`.

    Example:
        >>> metric = MulticlassGroupRates(num_classes=3, num_groups=2)
        >>> metric.update(torch.tensor([0, 1, 2, 2]), torch.tensor([0, 1, 1, 2]), torch.tensor([0, 0, 1, 1]))
        >>> metric.compute()["selection_rate"]
        tensor([[0.5000, 0.5000, 0.0000],
                [0.0000, 0.0000, 1.0000]], dtype=torch.float64)
    """

    higher_is_better = None

    def __init__(self, num_classes: int, num_groups: int, validate_args: bool = True, **kwargs: Any) -> None:
        super().__init__(num_classes, num_groups, validate_args=validate_args, **kwargs)

    def compute(self) -> dict[str, Tensor]:
        """``selection_rate`` ``(G, K)``, ``confusion_rate`` ``(G, K, K)`` and the counts (NaN when empty)."""
        return _group_rates_compute(self.selection, self.confusion)


class MulticlassDemographicParity(_MulticlassGap):
    """Demographic-parity gap of a K-class classifier over groups (difference or ratio, max or mean over classes).

    ``update(preds, target, groups)`` accepts ``target=None``. An empty group at ``compute`` is left out
    with a warning; the gap is NaN when fewer than two groups have samples.

    Args:
        num_classes: number of classes ``K >= 2``.
        num_groups: number of groups ``G >= 2``.
        mode: ``"difference"`` (max minus min rate) or ``"ratio"`` (min over max).
        reduction: ``"max"`` (largest disparity over classes) or ``"mean"``.
        validate_args: check value ranges in ``update``.
        **kwargs: forwarded to :class:`torchmetrics.Metric`.

    Example:
        >>> metric = MulticlassDemographicParity(num_classes=3, num_groups=2)
        >>> metric.update(torch.tensor([0, 1, 2, 2, 0, 0]), None, torch.tensor([0, 0, 0, 1, 1, 1]))
        >>> metric.compute()
        tensor(0.3333, dtype=torch.float64)
    """

    _needs_target = False
    _which = "dp"


class MulticlassEqualizedOdds(_MulticlassGap):
    """Equalized-odds gap: disparity of ``P(Yhat=k | A=a, Y=y)`` across groups over all ``(y, k)`` cells.

    Args:
        num_classes: number of classes ``K >= 2``.
        num_groups: number of groups ``G >= 2``.
        mode: ``"difference"`` or ``"ratio"``.
        reduction: ``"max"`` or ``"mean"`` over the ``K * K`` cells.
        validate_args: check value ranges in ``update``.
        **kwargs: forwarded to :class:`torchmetrics.Metric`.

    Example:
        >>> metric = MulticlassEqualizedOdds(num_classes=2, num_groups=2)
        >>> metric.update(torch.tensor([1, 1, 0, 0, 1, 0]), torch.tensor([1, 0, 0, 1, 1, 0]),
        ...               torch.tensor([0, 0, 0, 1, 1, 1]))
        >>> metric.compute()
        tensor(0.5000, dtype=torch.float64)
    """

    _which = "eo"


class MulticlassEqualOpportunity(_MulticlassGap):
    """Equal-opportunity gap: disparity of the per-class recall ``P(Yhat=y | A=a, Y=y)`` across groups.

    Args:
        num_classes: number of classes ``K >= 2``.
        num_groups: number of groups ``G >= 2``.
        mode: ``"difference"`` or ``"ratio"``.
        reduction: ``"max"`` or ``"mean"`` over the classes.
        validate_args: check value ranges in ``update``.
        **kwargs: forwarded to :class:`torchmetrics.Metric`.

    Example:
        >>> metric = MulticlassEqualOpportunity(num_classes=3, num_groups=2)
        >>> metric.update(torch.tensor([0, 1, 2, 0, 1, 1]), torch.tensor([0, 1, 2, 0, 1, 2]),
        ...               torch.tensor([0, 0, 0, 1, 1, 1]))
        >>> metric.compute()
        tensor(1., dtype=torch.float64)
    """

    _which = "eopp"


class BinaryGroupRates(_GroupCounts):
    """Per-group selection rate, TPR and FPR of a binary classifier; every group keeps its own slot.

    Args:
        num_groups: number of groups ``G >= 2``.
        threshold: decision threshold applied to probability ``preds``.
        validate_args: check value ranges in ``update``.
        **kwargs: forwarded to :class:`torchmetrics.Metric`.

    Example:
        >>> metric = BinaryGroupRates(num_groups=3)
        >>> metric.update(torch.tensor([0.9, 0.2, 0.7, 0.6]), torch.tensor([1, 0, 0, 1]), torch.tensor([0, 0, 2, 2]))
        >>> metric.compute()["selection_rate"]
        tensor([0.5000,    nan, 1.0000], dtype=torch.float64)
    """

    higher_is_better = None

    def __init__(self, num_groups: int, threshold: float = 0.5, validate_args: bool = True, **kwargs: Any) -> None:
        super().__init__(2, num_groups, threshold=threshold, validate_args=validate_args, **kwargs)

    def compute(self) -> dict[str, Tensor]:
        """``selection_rate``, ``tpr``, ``fpr`` (``(G,)``, NaN when empty) and ``group_count``."""
        return _binary_rates_compute(self.selection, self.confusion)


class BinaryDemographicParity(_BinaryGap):
    """Demographic-parity difference or ratio of a binary classifier (fairlearn's definition).

    Args:
        num_groups: number of groups ``G >= 2``.
        mode: ``"difference"`` or ``"ratio"``.
        threshold: decision threshold applied to probability ``preds``.
        validate_args: check value ranges in ``update``.
        **kwargs: forwarded to :class:`torchmetrics.Metric`.

    Example:
        >>> metric = BinaryDemographicParity(num_groups=2)
        >>> metric.update(torch.tensor([1, 1, 0, 1]), None, torch.tensor([0, 0, 1, 1]))
        >>> metric.compute()
        tensor(0.5000, dtype=torch.float64)
    """

    _needs_target = False
    _which = "binary_dp"


class BinaryEqualizedOdds(_BinaryGap):
    """Equalized-odds difference or ratio of a binary classifier: the worse of the TPR and FPR disparities.

    Args:
        num_groups: number of groups ``G >= 2``.
        mode: ``"difference"`` or ``"ratio"``.
        threshold: decision threshold applied to probability ``preds``.
        validate_args: check value ranges in ``update``.
        **kwargs: forwarded to :class:`torchmetrics.Metric`.

    Example:
        >>> metric = BinaryEqualizedOdds(num_groups=2)
        >>> metric.update(torch.tensor([1, 1, 0, 0, 1, 0]), torch.tensor([1, 0, 0, 1, 1, 0]),
        ...               torch.tensor([0, 0, 0, 1, 1, 1]))
        >>> metric.compute()
        tensor(0.5000, dtype=torch.float64)
    """

    _which = "binary_eo"


class BinaryEqualOpportunity(_BinaryGap):
    """Equal-opportunity difference or ratio of a binary classifier: disparity of the TPR across groups.

    Args:
        num_groups: number of groups ``G >= 2``.
        mode: ``"difference"`` or ``"ratio"``.
        threshold: decision threshold applied to probability ``preds``.
        validate_args: check value ranges in ``update``.
        **kwargs: forwarded to :class:`torchmetrics.Metric`.

    Example:
        >>> metric = BinaryEqualOpportunity(num_groups=2)
        >>> metric.update(torch.tensor([1, 1, 0, 0, 1, 0]), torch.tensor([1, 0, 0, 1, 1, 0]),
        ...               torch.tensor([0, 0, 0, 1, 1, 1]))
        >>> metric.compute()
        tensor(0.5000, dtype=torch.float64)
    """

    _which = "binary_eopp"
