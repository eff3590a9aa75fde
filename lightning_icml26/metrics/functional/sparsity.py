"""Functional sparsity figures of weight tensors: fraction of zeros and compression ratio.

A weight counts as non-zero when ``|w| > threshold`` (``threshold = 0`` counts exact zeros). The compression
ratio is ``total / non-zero`` (``inf`` when every weight is pruned), as in the ReWA paper.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import torch
from torch import nn

__all__ = ["compression_ratio", "select_weights", "sparsity", "support_f1"]

WeightsLike = torch.Tensor | nn.Module | Iterable[torch.Tensor]

_KINDS = ("conv", "linear", "all")
_CONV_TYPES = (nn.modules.conv._ConvNd,)


def select_weights(module: nn.Module, include: Sequence[str] | str = ("conv",)) -> dict[str, torch.Tensor]:
    """The weight tensors of ``module`` that sparsity is measured on, by qualified name.

    Args:
        module: the model.
        include: kinds to select: ``"conv"`` (weights of every ``ConvNd``), ``"linear"`` (weights of every
            ``nn.Linear``), ``"all"`` (every parameter). The paper measures conv weights only.

    Returns:
        An ordered ``{name: tensor}`` dict (no copies).

    Example:
        >>> net = nn.Sequential(nn.Conv2d(1, 2, 3), nn.Flatten(), nn.Linear(2, 3))
        >>> list(select_weights(net, ["conv", "linear"]))
        ['0.weight', '2.weight']
    """
    kinds = (include,) if isinstance(include, str) else tuple(include)
    bad = [k for k in kinds if k not in _KINDS]
    if bad or not kinds:
        raise ValueError(f"include must be a non-empty selection of {_KINDS}, got {include!r}")
    if "all" in kinds:
        return dict(module.named_parameters())
    selected: dict[str, torch.Tensor] = {}
    for name, sub in module.named_modules():
        weight = getattr(sub, "weight", None)
        if not isinstance(weight, torch.Tensor):
            continue
        if ("conv" in kinds and isinstance(sub, _CONV_TYPES)) or ("linear" in kinds and isinstance(sub, nn.Linear)):
            selected[f"{name}.weight" if name else "weight"] = weight
    return selected


def _as_tensors(weights: WeightsLike, include: Sequence[str] | str = ("conv",)) -> list[torch.Tensor]:
    if isinstance(weights, torch.Tensor):
        return [weights]
    if isinstance(weights, nn.Module):
        return list(select_weights(weights, include).values())
    tensors = list(weights)
    for i, t in enumerate(tensors):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"weights[{i}] must be a torch.Tensor, got {type(t).__name__}")
    return tensors


def _sparsity_arg_validation(threshold: float) -> None:
    if isinstance(threshold, bool) or not isinstance(threshold, int | float) or not threshold >= 0:
        raise ValueError(f"threshold must be a non-negative number, got {threshold!r}")


def _sparsity_update(
    weights: WeightsLike, threshold: float = 0.0, include: Sequence[str] | str = ("conv",)
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(non-zero count, total count)`` as int64 scalars."""
    _sparsity_arg_validation(threshold)
    nonzero = torch.zeros((), dtype=torch.long)
    total = torch.zeros((), dtype=torch.long)
    for t in _as_tensors(weights, include):
        t = t.detach()
        nonzero = nonzero + (t.abs() > threshold).sum().cpu()
        total = total + t.numel()
    return nonzero, total


def _sparsity_compute(nonzero: torch.Tensor, total: torch.Tensor) -> torch.Tensor:
    if int(total) == 0:
        return torch.tensor(float("nan"))
    return 1.0 - nonzero.double() / total.double()


def _compression_ratio_compute(nonzero: torch.Tensor, total: torch.Tensor) -> torch.Tensor:
    if int(total) == 0:
        return torch.tensor(float("nan"))
    if int(nonzero) == 0:
        return torch.tensor(float("inf"))
    return total.double() / nonzero.double()


def sparsity(weights: WeightsLike, threshold: float = 0.0, include: Sequence[str] | str = ("conv",)) -> torch.Tensor:
    """Fraction of weights with ``|w| <= threshold``.

    Args:
        weights: a tensor, an iterable of tensors, or a module (then ``include`` selects its weights).
        threshold: magnitude at or below which a weight counts as zero, non-negative.
        include: kinds of weights when ``weights`` is a module (see :func:`select_weights`).

    Returns:
        A float64 scalar in ``[0, 1]`` (``nan`` for no weights).

    Example:
        >>> sparsity(torch.tensor([0.0, 0.5, -0.01, 2.0]), threshold=0.1)
        tensor(0.5000, dtype=torch.float64)
    """
    return _sparsity_compute(*_sparsity_update(weights, threshold, include))


def compression_ratio(
    weights: WeightsLike, threshold: float = 0.0, include: Sequence[str] | str = ("conv",)
) -> torch.Tensor:
    """Compression ratio ``total / #{|w| > threshold}`` (``inf`` when every weight is pruned).

    Args:
        weights: a tensor, an iterable of tensors, or a module (then ``include`` selects its weights).
        threshold: magnitude at or below which a weight counts as zero, non-negative.
        include: kinds of weights when ``weights`` is a module.

    Returns:
        A float64 scalar ``>= 1``.

    Example:
        >>> compression_ratio([torch.tensor([0.0, 1.0]), torch.tensor([0.0, 0.0])])
        tensor(4., dtype=torch.float64)
    """
    return _compression_ratio_compute(*_sparsity_update(weights, threshold, include))


def support_f1(w: torch.Tensor, w_star: torch.Tensor, threshold: float = 0.0) -> float:
    """F1 score of the estimated support ``|w| > threshold`` against the true support ``w* != 0``.

    Example:
        >>> support_f1(torch.tensor([1.0, 0.0, 0.5]), torch.tensor([2.0, 0.0, 0.0]))
        0.666...
    """
    est = w.abs() > threshold
    true = w_star != 0
    tp = float((est & true).sum())
    denom = float(est.sum() + true.sum())
    return 0.0 if denom == 0 else 2 * tp / denom
