"""Functional multi-class group-fairness metrics (demographic parity, equalized odds, equal opportunity).

Every metric is built from one fixed-shape count tensor ``confusion[a, y, k]`` = number of samples of
group ``a`` with label ``y`` predicted as ``k`` (and ``selection[a, k]`` when no labels are given). Group
ids are used as given (``bincount`` with ``minlength``), never compressed by sorting, so a batch that only
contains group 2 counts in slot 2 (the torchmetrics 1.9.0 ``BinaryFairness`` compresses them).

Definitions (``K`` classes, ``G`` groups):

* selection rate ``P(Yhat = k | A = a)``; demographic-parity gap of class ``k``:
  ``max_a rate[a, k] - min_a rate[a, k]`` (``mode="difference"``) or ``min_a / max_a`` (``mode="ratio"``);
* confusion rate ``P(Yhat = k | A = a, Y = y)``; equalized odds compares every ``(y, k)`` cell across
  groups, equal opportunity only the diagonal ``k = y`` (in the binary forms only ``y = k = 1``, the
  true-positive rate, as in fairlearn's ``equal_opportunity_difference``);
* ``reduction="max"`` reports the largest disparity over the cells (largest difference, smallest ratio),
  ``reduction="mean"`` the mean over the cells.

A group (or group-and-label cell) without samples has NaN rates; it is left out of the gaps with a
``UserWarning``; a cell in which fewer than two groups have samples gives a NaN gap.
"""

from __future__ import annotations

from torch import Tensor

from lightning_icml26.metrics.functional._group_fairness import (
    Mode,
    Reduction,
    _binary_rates_compute,
    _counts,
    _gap_compute,
    _group_rates_compute,
)

__all__ = [
    "binary_demographic_parity",
    "binary_equal_opportunity",
    "binary_equalized_odds",
    "binary_group_rates",
    "multiclass_demographic_parity",
    "multiclass_equal_opportunity",
    "multiclass_equalized_odds",
    "multiclass_group_rates",
]


def multiclass_group_rates(
    preds: Tensor,
    target: Tensor,
    groups: Tensor,
    num_classes: int,
    num_groups: int,
    validate_args: bool = True,
) -> dict[str, Tensor]:
    """Per-group selection and confusion rates of a K-class classifier.

    Args:
        preds: predicted class ids ``(N,)`` or scores/probabilities ``(N, num_classes)`` (argmax is taken).
        target: true labels ``(N,)`` in ``[0, num_classes)``.
        groups: group ids ``(N,)`` in ``[0, num_groups)``.
        num_classes: number of classes ``K >= 2``.
        num_groups: number of groups ``G >= 2``.
        validate_args: check value ranges (costs one ``min``/``max`` per tensor).

    Returns:
        ``selection_rate`` ``(G, K)`` = P(Yhat=k | A=a); ``confusion_rate`` ``(G, K, K)`` indexed
        ``[a, y, k]`` = P(Yhat=k | A=a, Y=y); ``group_count`` ``(G,)``; ``group_label_count`` ``(G, K)``.
        Rates of empty groups / cells are NaN.

    Example:
        >>> import torch
        >>> preds = torch.tensor([0, 1, 2, 2])
        >>> target = torch.tensor([0, 1, 1, 2])
        >>> groups = torch.tensor([0, 0, 1, 1])
        >>> multiclass_group_rates(preds, target, groups, num_classes=3, num_groups=2)["selection_rate"]
        tensor([[0.5000, 0.5000, 0.0000],
                [0.0000, 0.0000, 1.0000]], dtype=torch.float64)
    """
    if target is None:
        raise ValueError("target must be given for group rates")
    selection, confusion = _counts(preds, target, groups, num_classes, num_groups, validate_args=validate_args)
    return _group_rates_compute(selection, confusion)


def multiclass_demographic_parity(
    preds: Tensor,
    target: Tensor | None,
    groups: Tensor,
    num_classes: int,
    num_groups: int,
    mode: Mode = "difference",
    reduction: Reduction = "max",
    validate_args: bool = True,
) -> Tensor:
    """Demographic-parity gap: disparity of ``P(Yhat = k | A = a)`` across groups, over classes ``k``.

    Args:
        preds: predicted class ids ``(N,)`` or scores ``(N, num_classes)``.
        target: true labels ``(N,)`` or ``None``; demographic parity does not use them (the argument keeps the
            order of the metric class's ``update(preds, target, groups)``), but given labels are checked.
        groups: group ids ``(N,)`` in ``[0, num_groups)``.
        num_classes: number of classes ``K >= 2``.
        num_groups: number of groups ``G >= 2``.
        mode: ``"difference"`` (max minus min rate) or ``"ratio"`` (min over max rate).
        reduction: ``"max"`` (largest disparity over classes) or ``"mean"``.
        validate_args: check value ranges.

    Returns:
        A scalar float64 tensor.

    Example:
        >>> import torch
        >>> preds = torch.tensor([0, 1, 2, 2, 0, 0])
        >>> groups = torch.tensor([0, 0, 0, 1, 1, 1])
        >>> multiclass_demographic_parity(preds, None, groups, num_classes=3, num_groups=2)
        tensor(0.3333, dtype=torch.float64)
    """
    counts = _counts(preds, target, groups, num_classes, num_groups, mode, reduction, validate_args=validate_args)
    return _gap_compute("dp", *counts, mode, reduction)


def multiclass_equalized_odds(
    preds: Tensor,
    target: Tensor,
    groups: Tensor,
    num_classes: int,
    num_groups: int,
    mode: Mode = "difference",
    reduction: Reduction = "max",
    validate_args: bool = True,
) -> Tensor:
    """Equalized-odds gap: disparity of ``P(Yhat = k | A = a, Y = y)`` across groups, over all ``(y, k)``.

    For two classes and ``mode="difference"``, ``reduction="max"`` this is fairlearn's
    ``equalized_odds_difference`` (the larger of the TPR and FPR differences).

    Args:
        preds: predicted class ids ``(N,)`` or scores ``(N, num_classes)``.
        target: labels ``(N,)`` in ``[0, num_classes)``.
        groups: group ids ``(N,)`` in ``[0, num_groups)``.
        num_classes: number of classes ``K >= 2``.
        num_groups: number of groups ``G >= 2``.
        mode: ``"difference"`` or ``"ratio"``.
        reduction: ``"max"`` or ``"mean"`` over the ``K * K`` cells.
        validate_args: check value ranges.

    Returns:
        A scalar float64 tensor.

    Example:
        >>> import torch
        >>> preds = torch.tensor([1, 1, 0, 0, 1, 0])
        >>> target = torch.tensor([1, 0, 0, 1, 1, 0])
        >>> groups = torch.tensor([0, 0, 0, 1, 1, 1])
        >>> multiclass_equalized_odds(preds, target, groups, num_classes=2, num_groups=2)
        tensor(0.5000, dtype=torch.float64)
    """
    counts = _counts(preds, target, groups, num_classes, num_groups, mode, reduction, validate_args=validate_args)
    return _gap_compute("eo", *counts, mode, reduction)


def multiclass_equal_opportunity(
    preds: Tensor,
    target: Tensor,
    groups: Tensor,
    num_classes: int,
    num_groups: int,
    mode: Mode = "difference",
    reduction: Reduction = "max",
    validate_args: bool = True,
) -> Tensor:
    """Equal-opportunity gap: disparity of the per-class recall ``P(Yhat = y | A = a, Y = y)`` across groups.

    Args:
        preds: predicted class ids ``(N,)`` or scores ``(N, num_classes)``.
        target: labels ``(N,)`` in ``[0, num_classes)``.
        groups: group ids ``(N,)`` in ``[0, num_groups)``.
        num_classes: number of classes ``K >= 2``.
        num_groups: number of groups ``G >= 2``.
        mode: ``"difference"`` or ``"ratio"``.
        reduction: ``"max"`` or ``"mean"`` over the ``K`` classes.
        validate_args: check value ranges.

    Returns:
        A scalar float64 tensor.

    Example:
        >>> import torch
        >>> preds = torch.tensor([0, 1, 2, 0, 1, 1])
        >>> target = torch.tensor([0, 1, 2, 0, 1, 2])
        >>> groups = torch.tensor([0, 0, 0, 1, 1, 1])
        >>> multiclass_equal_opportunity(preds, target, groups, num_classes=3, num_groups=2)
        tensor(1., dtype=torch.float64)
    """
    counts = _counts(preds, target, groups, num_classes, num_groups, mode, reduction, validate_args=validate_args)
    return _gap_compute("eopp", *counts, mode, reduction)


def binary_group_rates(
    preds: Tensor,
    target: Tensor,
    groups: Tensor,
    num_groups: int,
    threshold: float = 0.5,
    validate_args: bool = True,
) -> dict[str, Tensor]:
    """Per-group selection rate, true-positive rate and false-positive rate of a binary classifier.

    Every group keeps its own slot ``a`` (ids are not compressed).

    Args:
        preds: 0/1 predictions ``(N,)`` or probabilities of the positive class ``(N,)`` (``>= threshold``).
        target: 0/1 labels ``(N,)``.
        groups: group ids ``(N,)`` in ``[0, num_groups)``.
        num_groups: number of groups ``G >= 2``.
        threshold: decision threshold for probabilities.
        validate_args: check value ranges.

    Returns:
        ``selection_rate``, ``tpr``, ``fpr`` (each ``(G,)``, NaN for empty groups) and ``group_count``.

    Example:
        >>> import torch
        >>> preds = torch.tensor([0.9, 0.2, 0.7, 0.6])
        >>> target = torch.tensor([1, 0, 0, 1])
        >>> groups = torch.tensor([0, 0, 2, 2])
        >>> binary_group_rates(preds, target, groups, num_groups=3)["tpr"]
        tensor([1., nan, 1.], dtype=torch.float64)
    """
    counts = _counts(preds, target, groups, 2, num_groups, threshold=threshold, validate_args=validate_args)
    return _binary_rates_compute(*counts)


def binary_demographic_parity(
    preds: Tensor,
    target: Tensor | None,
    groups: Tensor,
    num_groups: int,
    mode: Mode = "difference",
    threshold: float = 0.5,
    validate_args: bool = True,
) -> Tensor:
    """Demographic-parity difference (or ratio) of the positive rate across groups.

    Matches fairlearn's ``demographic_parity_difference`` / ``demographic_parity_ratio``.

    Args:
        preds: 0/1 predictions or positive-class probabilities ``(N,)``.
        target: true labels ``(N,)`` or ``None``; unused by demographic parity (same argument order as the
            class's ``update``), checked when given.
        groups: group ids ``(N,)`` in ``[0, num_groups)``.
        num_groups: number of groups ``G >= 2``.
        mode: ``"difference"`` or ``"ratio"``.
        threshold: decision threshold for probabilities.
        validate_args: check value ranges.

    Returns:
        A scalar float64 tensor.

    Example:
        >>> import torch
        >>> binary_demographic_parity(torch.tensor([1, 1, 0, 1]), None, torch.tensor([0, 0, 1, 1]), num_groups=2)
        tensor(0.5000, dtype=torch.float64)
    """
    counts = _counts(preds, target, groups, 2, num_groups, mode, threshold=threshold, validate_args=validate_args)
    return _gap_compute("binary_dp", *counts, mode, "max")


def binary_equalized_odds(
    preds: Tensor,
    target: Tensor,
    groups: Tensor,
    num_groups: int,
    mode: Mode = "difference",
    threshold: float = 0.5,
    validate_args: bool = True,
) -> Tensor:
    """Equalized-odds difference (or ratio): the worse of the TPR and FPR disparities across groups.

    Matches fairlearn's ``equalized_odds_difference`` / ``equalized_odds_ratio`` (``agg="worst_case"``).

    Args:
        preds: 0/1 predictions or positive-class probabilities ``(N,)``.
        target: 0/1 labels ``(N,)``.
        groups: group ids ``(N,)`` in ``[0, num_groups)``.
        num_groups: number of groups ``G >= 2``.
        mode: ``"difference"`` or ``"ratio"``.
        threshold: decision threshold for probabilities.
        validate_args: check value ranges.

    Returns:
        A scalar float64 tensor.

    Example:
        >>> import torch
        >>> preds = torch.tensor([1, 1, 0, 0, 1, 0])
        >>> target = torch.tensor([1, 0, 0, 1, 1, 0])
        >>> binary_equalized_odds(preds, target, torch.tensor([0, 0, 0, 1, 1, 1]), num_groups=2)
        tensor(0.5000, dtype=torch.float64)
    """
    counts = _counts(preds, target, groups, 2, num_groups, mode, threshold=threshold, validate_args=validate_args)
    return _gap_compute("binary_eo", *counts, mode, "max")


def binary_equal_opportunity(
    preds: Tensor,
    target: Tensor,
    groups: Tensor,
    num_groups: int,
    mode: Mode = "difference",
    threshold: float = 0.5,
    validate_args: bool = True,
) -> Tensor:
    """Equal-opportunity difference (or ratio): disparity of the true-positive rate across groups.

    Matches fairlearn's ``equal_opportunity_difference`` / ``equal_opportunity_ratio``.

    Args:
        preds: 0/1 predictions or positive-class probabilities ``(N,)``.
        target: 0/1 labels ``(N,)``.
        groups: group ids ``(N,)`` in ``[0, num_groups)``.
        num_groups: number of groups ``G >= 2``.
        mode: ``"difference"`` or ``"ratio"``.
        threshold: decision threshold for probabilities.
        validate_args: check value ranges.

    Returns:
        A scalar float64 tensor.

    Example:
        >>> import torch
        >>> preds = torch.tensor([1, 1, 0, 0, 1, 0])
        >>> target = torch.tensor([1, 0, 0, 1, 1, 0])
        >>> binary_equal_opportunity(preds, target, torch.tensor([0, 0, 0, 1, 1, 1]), num_groups=2)
        tensor(0.5000, dtype=torch.float64)
    """
    counts = _counts(preds, target, groups, 2, num_groups, mode, threshold=threshold, validate_args=validate_args)
    return _gap_compute("binary_eopp", *counts, mode, "max")
