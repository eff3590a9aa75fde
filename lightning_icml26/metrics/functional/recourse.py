"""Functional recourse figures: validity, normalised ``L1 + L0`` cost, sparsity (changed features), queries.

Cost and sparsity average over the valid recourses only (``valid`` mask; all rows when ``None``); with no
valid row they are ``nan``.
"""

from __future__ import annotations

import torch
from torch import Tensor

__all__ = ["query_count", "recourse_cost", "recourse_sparsity", "recourse_validity"]


def _pair(original: Tensor, counterfactual: Tensor, valid: Tensor | None) -> tuple[Tensor, Tensor, Tensor]:
    if original.ndim != 2 or counterfactual.shape != original.shape:
        raise ValueError(
            f"original and counterfactual must be (n, d) of one shape, got {tuple(original.shape)} "
            f"and {tuple(counterfactual.shape)}"
        )
    if valid is None:
        valid = torch.ones(original.shape[0], dtype=torch.bool, device=original.device)
    if valid.shape != (original.shape[0],):
        raise ValueError(f"valid must have shape ({original.shape[0]},), got {tuple(valid.shape)}")
    return original.double(), counterfactual.double(), valid.bool()


def _recourse_cost_update(
    original: Tensor, counterfactual: Tensor, valid: Tensor | None, ranges: Tensor | None, discrete: Tensor | None
) -> tuple[Tensor, Tensor]:
    original, counterfactual, valid = _pair(original, counterfactual, valid)
    d = original.shape[1]
    ranges = torch.ones(d, dtype=torch.float64) if ranges is None else torch.as_tensor(ranges, dtype=torch.float64)
    discrete = torch.zeros(d, dtype=torch.bool) if discrete is None else torch.as_tensor(discrete, dtype=torch.bool)
    if ranges.shape != (d,) or discrete.shape != (d,) or bool((ranges <= 0).any()):
        raise ValueError(f"ranges must be ({d},) positive and discrete ({d},), got {tuple(ranges.shape)}")
    delta = (counterfactual - original).abs()
    per_row = torch.where(discrete.to(delta.device), (delta > 1e-12).double(), delta / ranges.to(delta.device)).sum(1)
    return per_row[valid].sum(), valid.sum()


def _recourse_sparsity_update(
    original: Tensor, counterfactual: Tensor, valid: Tensor | None, atol: float
) -> tuple[Tensor, Tensor]:
    original, counterfactual, valid = _pair(original, counterfactual, valid)
    changed = ((counterfactual - original).abs() > atol).sum(1)
    return changed[valid].sum().double(), valid.sum()


def _ratio(total: Tensor, count: Tensor) -> Tensor:
    return total.double() / count if count > 0 else torch.tensor(float("nan"), dtype=torch.float64)


def recourse_validity(labels: Tensor, targets: Tensor) -> Tensor:
    """Fraction of counterfactuals whose predicted label is the target.

    Example:
        >>> recourse_validity(torch.tensor([1, 0, 1, 2]), torch.tensor([1, 1, 1, 2]))
        tensor(0.7500, dtype=torch.float64)
    """
    if labels.shape != targets.shape or labels.ndim != 1:
        raise ValueError(f"labels and targets must be (n,) of one shape, got {tuple(labels.shape)}, {targets.shape}")
    return _ratio((labels == targets).sum(), torch.tensor(labels.numel()))


def recourse_cost(
    original: Tensor,
    counterfactual: Tensor,
    valid: Tensor | None = None,
    ranges: Tensor | None = None,
    discrete: Tensor | None = None,
) -> Tensor:
    """Mean over valid rows of ``sum_j |x'_j - x_j| / range_j`` (continuous) ``+ sum_j 1[x'_j != x_j]`` (discrete).

    Example:
        >>> x = torch.tensor([[0.0, 1.0], [0.0, 1.0]])
        >>> cf = torch.tensor([[0.5, 2.0], [1.0, 1.0]])
        >>> recourse_cost(x, cf, ranges=torch.tensor([2.0, 1.0]), discrete=torch.tensor([False, True]))
        tensor(0.8750, dtype=torch.float64)
    """
    return _ratio(*_recourse_cost_update(original, counterfactual, valid, ranges, discrete))


def recourse_sparsity(
    original: Tensor, counterfactual: Tensor, valid: Tensor | None = None, atol: float = 1e-9
) -> Tensor:
    """Mean over valid rows of the number of changed features (``|x'_j - x_j| > atol``).

    Example:
        >>> recourse_sparsity(torch.zeros(2, 3), torch.tensor([[1.0, 0.0, 2.0], [0.0, 0.0, 5.0]]))
        tensor(1.5000, dtype=torch.float64)
    """
    return _ratio(*_recourse_sparsity_update(original, counterfactual, valid, atol))


def query_count(queries: Tensor) -> Tensor:
    """Mean number of label queries per row.

    Example:
        >>> query_count(torch.tensor([20, 150, 31]))
        tensor(67., dtype=torch.float64)
    """
    if queries.ndim != 1 or bool((queries < 0).any()):
        raise ValueError(f"queries must be a (n,) tensor of non-negative counts, got shape {tuple(queries.shape)}")
    return _ratio(queries.double().sum(), torch.tensor(queries.numel()))
