"""The math of the reductions approach: exponentiated-gradient multipliers, example costs, constraint moments.

Pure functions used by :class:`~lightning_icml26.algorithms.ExponentiatedGradientReduction` and by
:class:`~lightning_icml26.callbacks.FairReductionCallback`; the notation follows
:mod:`lightning_icml26.algorithms.fairness.reduction`.
"""

from __future__ import annotations

import numpy as np
import torch
from scipy import optimize
from torch import Tensor

__all__ = [
    "best_iterate",
    "eg_multipliers",
    "eg_update",
    "mixture_weights",
    "reduction_cells",
    "reduction_costs",
    "reduction_moments",
]


def _cell_shape(criterion: str, num_classes: int, num_groups: int) -> tuple[int, ...]:
    """Shape of the multipliers / moments: ``(K, G)`` for DP and EOpp, ``(K, K, G)`` (``[y, k, a]``) for EO."""
    return (num_classes, num_classes, num_groups) if criterion == "eo" else (num_classes, num_groups)


def eg_multipliers(theta: Tensor, bound: float) -> Tensor:
    """Signed multipliers ``mu = lambda+ - lambda-`` of the EG player, ``lambda = B exp(theta) / (1 + sum exp(theta))``.

    Args:
        theta: EG state ``(2, *cells)``: row 0 for the ``gamma <= alpha/2`` constraints, row 1 for
            ``-gamma <= alpha/2``.
        bound: ``B``, the l1 bound of ``lambda``.

    Returns:
        ``mu`` with shape ``cells`` (same dtype and device as ``theta``).

    Example:
        >>> eg_multipliers(torch.zeros(2, 3, 2, dtype=torch.float64), bound=10.0).abs().max().item()
        0.0
    """
    lam = _eg_lambda(theta, bound)
    return lam[0] - lam[1]


def _eg_lambda(theta: Tensor, bound: float) -> Tensor:
    top = theta.max()  # stable: exp(theta - top) / (exp(-top) + sum exp(theta - top))
    expo = torch.exp(theta - top)
    return bound * expo / (torch.exp(-top) + expo.sum())


def eg_update(theta: Tensor, gamma: Tensor, alpha: float, step: float) -> Tensor:
    """One exponentiated-gradient step ``theta += step * ([gamma, -gamma] - alpha / 2)``.

    Args:
        theta: EG state ``(2, *cells)``.
        gamma: moments of the latest best response, shape ``cells``.
        alpha: tolerance on every pairwise gap (each signed moment is bounded by ``alpha / 2``).
        step: step size (``eta0 / B``).

    Returns:
        The new state (a new tensor).

    Example:
        >>> eg_update(torch.zeros(2, 1), torch.tensor([0.3]), alpha=0.2, step=1.0)
        tensor([[ 0.2000],
                [-0.4000]])
    """
    return theta + step * (torch.stack([gamma, -gamma]) - alpha / 2.0)


def reduction_costs(y: Tensor, groups: Tensor, mu: Tensor, criterion: str, group_label_counts: Tensor) -> Tensor:
    """Per-example costs ``c_i(k)`` of the Lagrangian best response (see the module docstring).

    Args:
        y: labels ``(n,)``.
        groups: group ids ``(n,)``.
        mu: signed multipliers, ``(K, G)`` (DP, EOpp) or ``(K, K, G)`` (EO).
        criterion: ``"dp"``, ``"eo"`` or ``"eopp"``.
        group_label_counts: ``N(a, y)`` ``(G, K)`` of the population whose moments are constrained
            (any scale: only ratios are used); every group (DP) or cell (EO, EOpp) must be non-empty.

    Returns:
        Costs ``(n, K)`` in ``mu``'s dtype, ``1[k != y_i]`` plus the fairness term.

    Example:
        >>> y, a = torch.tensor([0, 1]), torch.tensor([0, 1])
        >>> reduction_costs(y, a, torch.zeros(2, 2), "dp", torch.ones(2, 2))
        tensor([[0., 1.],
                [1., 0.]])
    """
    num_groups, num_classes = group_label_counts.shape
    y, groups = y.long(), groups.long()
    counts = group_label_counts.to(mu)
    total = counts.sum()
    base = 1.0 - torch.nn.functional.one_hot(y, num_classes).to(mu)
    if criterion == "dp":
        p_a = counts.sum(1) / total  # (G,)
        per_group = mu.T / p_a[:, None]  # (G, K): mu[k, a] / p_a
        return base + per_group[groups] - mu.sum(1)[None]
    p_ay = counts / total  # (G, K)
    p_y = p_ay.sum(0)  # (K,)
    if criterion == "eo":
        own = mu.permute(2, 0, 1)[groups, y] / p_ay[groups, y][:, None]  # mu[y_i, k, a_i] / p(a_i, y_i)
        return base + own - mu.sum(2)[y] / p_y[y][:, None]
    fair = mu[y, groups] / p_ay[groups, y] - mu.sum(1)[y] / p_y[y]  # EOpp: only k = y_i
    return base + torch.nn.functional.one_hot(y, num_classes).to(mu) * fair[:, None]


def reduction_moments(confusion: Tensor, criterion: str) -> Tensor:
    """Moments ``gamma`` of a classifier from its confusion counts ``confusion[a, y, k]`` (any scale).

    DP: ``P(h=k | a) - P(h=k)`` ``(K, G)``; EO: ``P(h=k | a, y) - P(h=k | y)`` ``(K, K, G)``;
    EOpp: the EO diagonal ``(K, G)``. Soft (expected) counts of a randomised classifier work too.

    Args:
        confusion: ``(G, K, K)`` counts indexed ``[group, label, prediction]``.
        criterion: ``"dp"``, ``"eo"`` or ``"eopp"``.

    Returns:
        The moments (float64 unless ``confusion`` is floating).

    Example:
        >>> conf = torch.zeros(2, 2, 2); conf[0, 0, 0] = conf[1, 0, 1] = 1
        >>> reduction_moments(conf, "dp")
        tensor([[ 0.5000, -0.5000],
                [-0.5000,  0.5000]])
    """
    conf = confusion if confusion.is_floating_point() else confusion.double()
    if criterion == "dp":
        sel = conf.sum(1)  # (G, K)
        rates = sel / sel.sum(1, keepdim=True)
        overall = sel.sum(0) / sel.sum()
        return (rates - overall[None]).T
    n_ay = conf.sum(2)  # (G, K)
    rates = conf / n_ay[:, :, None]  # (G, K, K)
    overall = conf.sum(0) / n_ay.sum(0)[:, None]  # (K, K)
    gamma = (rates - overall[None]).permute(1, 2, 0)  # (K, K, G) = [y, k, a]
    if criterion == "eo":
        return gamma
    diag = torch.arange(gamma.shape[0])
    return gamma[diag, diag]


def reduction_cells(confusion: Tensor, criterion: str) -> Tensor:
    """Constrained rates per group from confusion counts: ``(G, C)`` with C = K (DP, EOpp) or K * K (EO).

    DP: ``P(h=k | a)``; EO: ``P(h=k | a, y)`` flattened over ``(y, k)``; EOpp: ``P(h=y | a, y)``. The
    largest pairwise gap is ``(cells.max(0) - cells.min(0)).max()``.

    Args:
        confusion: ``(G, K, K)`` counts ``[group, label, prediction]`` (hard or expected).
        criterion: ``"dp"``, ``"eo"`` or ``"eopp"``.

    Returns:
        float64 rates (NaN for empty groups / cells).

    Example:
        >>> conf = torch.zeros(2, 2, 2); conf[0, 0, 0] = conf[1, 0, 1] = 1
        >>> reduction_cells(conf, "dp")
        tensor([[1., 0.],
                [0., 1.]], dtype=torch.float64)
    """
    conf = confusion.double()
    num_groups = conf.shape[0]
    if criterion == "dp":
        sel = conf.sum(1)
        return sel / sel.sum(1, keepdim=True)
    rates = conf / conf.sum(2, keepdim=True)
    if criterion == "eo":
        return rates.reshape(num_groups, -1)
    return torch.diagonal(rates, dim1=1, dim2=2)


def mixture_weights(errors: np.ndarray, cells: np.ndarray, alpha: float) -> np.ndarray:
    """LP over the hull of candidate classifiers: least error subject to every pairwise gap ``<= alpha``.

    Args:
        errors: ``(T,)`` error of each candidate.
        cells: ``(G, C, T)`` rate of every group and cell for each candidate.
        alpha: tolerance.

    Returns:
        ``(T,)`` non-negative weights summing to 1.

    Raises:
        RuntimeError: if the LP has no solution (include the constant classifiers to keep it feasible).

    Example:
        >>> cells = np.array([[[0.9, 0.5]], [[0.1, 0.5]]])  # candidate 0 unfair, candidate 1 fair
        >>> mixture_weights(np.array([0.1, 0.5]), cells, alpha=0.4).round(3)
        array([0.5, 0.5])
    """
    num_groups, num_cells, num_cand = cells.shape
    eps = alpha / 2.0
    rows, b_ub = [], []
    for g in range(num_groups):
        for c in range(num_cells):
            q = np.zeros(num_cells)
            q[c] = 1.0
            rows.append(np.concatenate([cells[g, c], -q]))
            rows.append(np.concatenate([-cells[g, c], q]))
            b_ub += [eps + 1e-9, eps + 1e-9]
    a_eq = np.concatenate([np.ones(num_cand), np.zeros(num_cells)])[None]
    res = optimize.linprog(
        np.concatenate([errors, np.zeros(num_cells)]),
        A_ub=np.array(rows),
        b_ub=np.array(b_ub),
        A_eq=a_eq,
        b_eq=[1.0],
        bounds=[(0, None)] * num_cand + [(0, 1)] * num_cells,
        method="highs",
    )
    if res.status != 0:
        raise RuntimeError(f"the mixture LP did not solve: {res.message}")
    weights = np.clip(res.x[:num_cand], 0.0, None)
    return weights / weights.sum()


def best_iterate(errors: np.ndarray, gaps: np.ndarray, alpha: float) -> int:
    """Index of the most accurate iterate whose gap is at most ``alpha``, else of the one with the smallest gap.

    Args:
        errors: training error of each iterate.
        gaps: largest constrained gap of each iterate.
        alpha: the tolerance (a gap within ``1e-9`` of it counts as meeting it).

    Example:
        >>> best_iterate(np.array([0.1, 0.2, 0.3]), np.array([0.5, 0.05, 0.01]), 0.1)
        1
        >>> best_iterate(np.array([0.1, 0.2]), np.array([0.5, 0.3]), 0.1)
        1
    """
    ok = np.flatnonzero(np.asarray(gaps) <= alpha + 1e-9)
    return int(ok[np.argmin(np.asarray(errors)[ok])]) if ok.size else int(np.argmin(gaps))
