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

import warnings
from typing import Literal

import torch
from torch import Tensor

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

Mode = Literal["difference", "ratio"]
Reduction = Literal["max", "mean"]


def _group_fairness_arg_validation(
    num_classes: int, num_groups: int, mode: str, reduction: str, threshold: float | None = None
) -> None:
    if not isinstance(num_classes, int) or isinstance(num_classes, bool) or num_classes < 2:
        raise ValueError(f"num_classes must be an integer >= 2, got {num_classes!r}")
    if not isinstance(num_groups, int) or isinstance(num_groups, bool) or num_groups < 2:
        raise ValueError(f"num_groups must be an integer >= 2, got {num_groups!r}")
    if mode not in ("difference", "ratio"):
        raise ValueError(f"mode must be 'difference' or 'ratio', got {mode!r}")
    if reduction not in ("max", "mean"):
        raise ValueError(f"reduction must be 'max' or 'mean', got {reduction!r}")
    if threshold is not None and not 0.0 <= threshold <= 1.0:
        raise ValueError(f"threshold must be in [0, 1], got {threshold}")


def _check_range(name: str, values: Tensor, upper: int) -> None:
    if values.numel() == 0:
        return
    low, high = int(values.min()), int(values.max())
    if low < 0 or high >= upper:
        raise ValueError(f"{name} must hold integers in [0, {upper}), got values in [{low}, {high}]")


def _group_fairness_format(
    preds: Tensor,
    target: Tensor | None,
    groups: Tensor,
    num_classes: int,
    num_groups: int,
    threshold: float | None = None,
    validate_args: bool = True,
) -> tuple[Tensor, Tensor | None, Tensor]:
    """Turn ``preds`` into class ids, check shapes and ranges; returns flat int64 tensors."""
    if not isinstance(preds, Tensor):
        raise TypeError(f"preds must be a torch.Tensor, got {type(preds).__name__}")
    if not isinstance(groups, Tensor):
        raise TypeError(f"groups must be a torch.Tensor, got {type(groups).__name__}")
    if preds.is_floating_point():
        if threshold is not None and preds.ndim == 1:
            preds = (preds >= threshold).long()
        elif preds.ndim == 2 and preds.shape[1] == num_classes:
            preds = preds.argmax(dim=1)
        else:
            raise ValueError(
                f"floating-point preds must have shape (N, num_classes={num_classes})"
                + (" or (N,) probabilities of the positive class" if threshold is not None else "")
                + f", got {tuple(preds.shape)}"
            )
    preds = preds.reshape(-1).long()
    groups = groups.reshape(-1)
    if groups.is_floating_point():
        raise TypeError(f"groups must hold integer group ids, got dtype {groups.dtype}")
    groups = groups.long()
    if groups.numel() != preds.numel():
        raise ValueError(f"groups must have one entry per prediction: {groups.numel()} vs {preds.numel()}")
    if target is not None:
        if not isinstance(target, Tensor):
            raise TypeError(f"target must be a torch.Tensor, got {type(target).__name__}")
        if target.is_floating_point():
            raise TypeError(f"target must hold integer labels, got dtype {target.dtype}")
        target = target.reshape(-1).long()
        if target.numel() != preds.numel():
            raise ValueError(f"target must have one entry per prediction: {target.numel()} vs {preds.numel()}")
    if validate_args:
        _check_range("preds", preds, num_classes)
        _check_range("groups", groups, num_groups)
        if target is not None:
            _check_range("target", target, num_classes)
    return preds, target, groups


def _group_fairness_update(
    preds: Tensor, target: Tensor | None, groups: Tensor, num_classes: int, num_groups: int
) -> tuple[Tensor, Tensor]:
    """Counts ``selection[a, k]`` and ``confusion[a, y, k]`` (zeros when ``target`` is ``None``)."""
    selection = torch.bincount(groups * num_classes + preds, minlength=num_groups * num_classes)
    selection = selection.reshape(num_groups, num_classes)
    if target is None:
        confusion = torch.zeros(num_groups, num_classes, num_classes, dtype=torch.long, device=preds.device)
    else:
        index = (groups * num_classes + target) * num_classes + preds
        confusion = torch.bincount(index, minlength=num_groups * num_classes * num_classes)
        confusion = confusion.reshape(num_groups, num_classes, num_classes)
    return selection, confusion


def _safe_divide(num: Tensor, den: Tensor) -> Tensor:
    num = num.double()
    den = den.double()
    return torch.where(den > 0, num / den.clamp_min(1), torch.full_like(num, float("nan")))


def _group_rates_compute(selection: Tensor, confusion: Tensor) -> dict[str, Tensor]:
    group_count = selection.sum(dim=1)
    group_label_count = confusion.sum(dim=2)
    return {
        "selection_rate": _safe_divide(selection, group_count[:, None]),
        "confusion_rate": _safe_divide(confusion, group_label_count[:, :, None]),
        "group_count": group_count,
        "group_label_count": group_label_count,
    }


def _warn_empty(what: str, empty: list[str]) -> None:
    if empty:
        warnings.warn(
            f"{what} without samples: {', '.join(empty)}; their rates are NaN and they are left out of the gaps",
            UserWarning,
            stacklevel=3,
        )


def _disparity(rates: Tensor, mode: str, reduction: str) -> Tensor:
    """``rates`` has groups on dim 0 and cells on dim 1; NaN groups are ignored per cell."""
    valid = ~torch.isnan(rates)
    enough = valid.sum(dim=0) >= 2
    if not bool(enough.any()):
        return torch.tensor(float("nan"), dtype=rates.dtype)
    high = torch.where(valid, rates, torch.full_like(rates, -torch.inf)).amax(dim=0)[enough]
    low = torch.where(valid, rates, torch.full_like(rates, torch.inf)).amin(dim=0)[enough]
    if mode == "difference":
        cell = high - low
        return cell.amax() if reduction == "max" else cell.mean()
    cell = torch.where(high > 0, low / high.clamp_min(torch.finfo(rates.dtype).tiny), torch.ones_like(high))
    return cell.amin() if reduction == "max" else cell.mean()


def _demographic_parity_compute(selection: Tensor, mode: str, reduction: str, positive_only: bool = False) -> Tensor:
    count = selection.sum(dim=1)
    _warn_empty("groups", [str(a) for a in torch.nonzero(count == 0).flatten().tolist()])
    rates = _safe_divide(selection, count[:, None])
    return _disparity(rates[:, 1:] if positive_only else rates, mode, reduction)


def _confusion_cells(confusion: Tensor, which: str) -> Tensor:
    """Per-group rates ``(G, cells)`` of the cells a criterion constrains.

    Every ``(y, k)`` for ``"eo"``, the diagonal for ``"eopp"``, FPR and TPR for ``"binary_eo"``, the TPR
    ``(1, 1)`` for ``"binary_eopp"``.
    """
    count = confusion.sum(dim=2)
    empty = torch.nonzero(count == 0).tolist()
    rates = _safe_divide(confusion, count[:, :, None])
    num_groups, num_classes, _ = rates.shape
    if which == "eo":
        cells = rates.reshape(num_groups, num_classes * num_classes)
        needed = empty
    elif which == "eopp":
        cells = torch.diagonal(rates, dim1=1, dim2=2)
        needed = empty
    elif which == "binary_eo":  # FPR (y=0, k=1) and TPR (y=1, k=1)
        cells = rates.reshape(num_groups, num_classes * num_classes)[:, [1, 3]]
        needed = empty
    else:  # binary equal opportunity: true-positive rate only
        cells = rates[:, 1, 1:2]
        needed = [cell for cell in empty if cell[1] == 1]
    _warn_empty("(group, label) cells", [f"(group={a}, label={y})" for a, y in needed])
    return cells


def _gap_compute(which: str, selection: Tensor, confusion: Tensor, mode: str, reduction: str) -> Tensor:
    """The gap of a criterion from the counts (shared by the functions and the metric classes).

    ``which``: ``"dp"``, ``"eo"``, ``"eopp"`` (multi-class) or ``"binary_dp"``, ``"binary_eo"``,
    ``"binary_eopp"`` (positive class only; the binary forms always take the worst cell).
    """
    if which == "dp":
        return _demographic_parity_compute(selection, mode, reduction)
    if which == "binary_dp":
        return _demographic_parity_compute(selection, mode, "max", positive_only=True)
    cells = _confusion_cells(confusion, which)
    return _disparity(cells, mode, "max" if which.startswith("binary") else reduction)


def _binary_rates_compute(selection: Tensor, confusion: Tensor) -> dict[str, Tensor]:
    """Per-group selection rate, TPR, FPR and count of a binary classifier from the counts."""
    rates = _group_rates_compute(selection, confusion)
    return {
        "selection_rate": rates["selection_rate"][:, 1],
        "tpr": rates["confusion_rate"][:, 1, 1],
        "fpr": rates["confusion_rate"][:, 0, 1],
        "group_count": rates["group_count"],
    }


def _counts(
    preds: Tensor,
    target: Tensor | None,
    groups: Tensor,
    num_classes: int,
    num_groups: int,
    mode: str = "difference",
    reduction: str = "max",
    threshold: float | None = None,
    validate_args: bool = True,
) -> tuple[Tensor, Tensor]:
    """Validate the arguments, format the inputs and count: ``(selection, confusion)``."""
    _group_fairness_arg_validation(num_classes, num_groups, mode, reduction, threshold)
    preds, target, groups = _group_fairness_format(
        preds, target, groups, num_classes, num_groups, threshold=threshold, validate_args=validate_args
    )
    return _group_fairness_update(preds, target, groups, num_classes, num_groups)


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
        groups: group ids ``(N,)`` in ``[0, num_groups)``.
        num_classes: number of classes ``K >= 2``.
        num_groups: number of groups ``G >= 2``.
        mode: ``"difference"`` (max minus min rate) or ``"ratio"`` (min over max rate).
        reduction: ``"max"`` (largest disparity over classes) or ``"mean"``.
        validate_args: check value ranges.

    Returns:
        A scalar float64 tensor.

    Example:
        >>> preds = torch.tensor([0, 1, 2, 2, 0, 0])
        >>> groups = torch.tensor([0, 0, 0, 1, 1, 1])
        >>> multiclass_demographic_parity(preds, groups, num_classes=3, num_groups=2)
        tensor(0.3333, dtype=torch.float64)
    """
    counts = _counts(preds, None, groups, num_classes, num_groups, mode, reduction, validate_args=validate_args)
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
        groups: group ids ``(N,)`` in ``[0, num_groups)``.
        num_groups: number of groups ``G >= 2``.
        mode: ``"difference"`` or ``"ratio"``.
        threshold: decision threshold for probabilities.
        validate_args: check value ranges.

    Returns:
        A scalar float64 tensor.

    Example:
        >>> binary_demographic_parity(torch.tensor([1, 1, 0, 1]), torch.tensor([0, 0, 1, 1]), num_groups=2)
        tensor(0.5000, dtype=torch.float64)
    """
    counts = _counts(preds, None, groups, 2, num_groups, mode, threshold=threshold, validate_args=validate_args)
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
        >>> preds = torch.tensor([1, 1, 0, 0, 1, 0])
        >>> target = torch.tensor([1, 0, 0, 1, 1, 0])
        >>> binary_equal_opportunity(preds, target, torch.tensor([0, 0, 0, 1, 1, 1]), num_groups=2)
        tensor(0.5000, dtype=torch.float64)
    """
    counts = _counts(preds, target, groups, 2, num_groups, mode, threshold=threshold, validate_args=validate_args)
    return _gap_compute("binary_eopp", *counts, mode, "max")
