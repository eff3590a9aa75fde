"""Input formatting shared by the complementarity metrics: forecasts and outcomes as float64 ``(N, C)`` tensors.

One forecast per item (``num_classes=None``) becomes one column; class probabilities ``(N, K)`` keep their ``K``
columns and class-id outcomes become one-hot rows. Shape, range and row-sum checks raise ``ValueError`` naming
the argument.
"""

from __future__ import annotations

import torch
from torch import Tensor

from lightning_icml26.algorithms.complementarity import check_real_tensor, check_unit_interval

__all__: list[str] = []  # private to the metrics package


def _check_num_classes(num_classes: int | None) -> None:
    if num_classes is None:
        return
    if not isinstance(num_classes, int) or isinstance(num_classes, bool) or num_classes < 2:
        raise ValueError(f"num_classes must be None (one forecast per item) or an integer >= 2, got {num_classes!r}")


def _format_forecast(
    name: str, preds: Tensor, num_classes: int | None, probabilities: bool, validate_args: bool
) -> Tensor:
    preds = check_real_tensor(name, preds)
    if num_classes is None:
        if preds.ndim != 1:
            raise ValueError(f"{name} must have shape (N,) when num_classes is None, got {tuple(preds.shape)}")
    elif preds.ndim != 2 or preds.shape[1] != num_classes:
        raise ValueError(f"{name} must have shape (N, {num_classes}), got {tuple(preds.shape)}")
    preds = preds.double()
    if validate_args and (probabilities or num_classes is not None):
        check_unit_interval(name, preds)
        if num_classes is not None and preds.numel():
            total = preds.sum(1)
            worst = float((total - 1.0).abs().max())
            if worst > 1e-4:
                raise ValueError(f"{name} rows must sum to 1 (class probabilities), got a row summing to "
                                 f"{float(total[(total - 1.0).abs().argmax()]):.6g}")  # fmt: skip
    return preds


def _format_target(target: Tensor, n: int, num_classes: int | None, probabilities: bool, validate: bool) -> Tensor:
    target = check_real_tensor("target", target)
    if target.ndim != 1:
        raise ValueError(f"target must have shape (N,), got {tuple(target.shape)}")
    if target.shape[0] != n:
        raise ValueError(f"target must have the same length as the forecasts ({n}), got {target.shape[0]}")
    if num_classes is None:
        target = target.double()
        if validate and probabilities:
            check_unit_interval("target", target)
        return target.unsqueeze(1)
    if target.is_floating_point():
        if validate and target.numel() and not torch.equal(target, target.round()):
            raise ValueError("target must hold class ids (integers) when num_classes is given")
        target = target.long()
    if validate and target.numel():
        low, high = int(target.min()), int(target.max())
        if low < 0 or high >= num_classes:
            raise ValueError(f"target must hold class ids in [0, {num_classes}), got values in [{low}, {high}]")
    return torch.nn.functional.one_hot(target.long(), num_classes).double()


def _format_pair(
    p_human: Tensor,
    p_ai: Tensor,
    target: Tensor,
    num_classes: int | None,
    probabilities: bool,
    validate_args: bool = True,
) -> tuple[Tensor, Tensor, Tensor]:
    """Both forecasts and the target as float64 ``(N, C)`` (``C = num_classes`` or 1)."""
    _check_num_classes(num_classes)
    h = _format_forecast("p_human", p_human, num_classes, probabilities, validate_args)
    a = _format_forecast("p_ai", p_ai, num_classes, probabilities, validate_args)
    if h.shape[0] != a.shape[0]:
        raise ValueError(f"p_human and p_ai must have the same length, got {h.shape[0]} and {a.shape[0]}")
    y = _format_target(target, h.shape[0], num_classes, probabilities, validate_args)
    if num_classes is None:
        h, a = h.unsqueeze(1), a.unsqueeze(1)
    return h, a, y
