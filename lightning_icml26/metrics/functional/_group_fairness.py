"""Shared core of the group-fairness metrics: argument checks, count updates and gap computations.

Both the functional forms (:mod:`lightning_icml26.metrics.functional.fairness`) and the ``Metric`` classes
(:mod:`lightning_icml26.metrics.fairness`) are built from the fixed-shape count tensors ``confusion[a, y, k]``
and ``selection[a, k]`` that this module fills and reduces.
"""

from __future__ import annotations

import warnings
from typing import Literal

import torch
from torch import Tensor

__all__: list[str] = []  # private to the metrics package


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


def _check_float_preds(preds: Tensor, threshold: float | None) -> None:
    """Floating ``preds`` must be finite; ``(N,)`` probabilities (with a threshold) must lie in ``[0, 1]``."""
    if preds.numel() == 0:
        return
    if not bool(torch.isfinite(preds).all()):
        bad = int((~torch.isfinite(preds)).sum())
        raise ValueError(f"preds must be finite scores or probabilities, got {bad} NaN or infinite value(s)")
    if threshold is not None and preds.ndim == 1 and (float(preds.min()) < 0.0 or float(preds.max()) > 1.0):
        raise ValueError(
            f"(N,) floating-point preds must be probabilities in [0, 1], got values in "
            f"[{float(preds.min()):.6g}, {float(preds.max()):.6g}]"
        )


def _float_preds_to_ids(preds: Tensor, num_classes: int, threshold: float | None, validate_args: bool) -> Tensor:
    """Class ids from ``(N, C)`` scores (argmax) or ``(N,)`` positive-class probabilities (``>= threshold``)."""
    if validate_args:
        _check_float_preds(preds, threshold)
    if threshold is not None and preds.ndim == 1:
        return (preds >= threshold).long()
    if preds.ndim == 2 and preds.shape[1] == num_classes:
        return preds.argmax(dim=1)
    raise ValueError(
        f"floating-point preds must have shape (N, num_classes={num_classes})"
        + (" or (N,) probabilities of the positive class" if threshold is not None else "")
        + f", got {tuple(preds.shape)}"
    )


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
        preds = _float_preds_to_ids(preds, num_classes, threshold, validate_args)
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
