"""Reward-learning losses on predicted segment returns: R4's ranking MSE, RbRL's rating loss, Bradley-Terry.

All three take *predicted returns* (sums of per-step rewards over a segment), so they are independent of the
reward network and can be reused with any model.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from lightning_icml26.data.rl.ratings import check_ratings
from lightning_icml26.ops.ot_rank import ot_soft_rank
from lightning_icml26.ops.soft_rank import soft_rank

__all__ = ["SOFT_RANK_METHODS", "average_ranks", "bradley_terry_loss", "ranking_mse_loss", "rbrl_loss"]

#: Soft-rank operators of the ranking MSE: the permutahedron projection (the paper) or entropic OT.
SOFT_RANK_METHODS = ("pav", "ot")
#: Default soft-rank strength of each operator (the official code's defaults).
DEFAULT_STRENGTH = {"pav": 1.0, "ot": 0.1}


def average_ranks(scores: torch.Tensor) -> torch.Tensor:
    """Hard ascending ranks (1-based) along the last dimension, ties sharing their average rank.

    The same as ``scipy.stats.rankdata(..., method="average")`` applied to every row.

    Example:
        >>> average_ranks(torch.tensor([[2.0, 0.0, 2.0, 1.0]]))
        tensor([[3.5000, 1.0000, 3.5000, 2.0000]])
    """
    below = (scores.unsqueeze(-1) > scores.unsqueeze(-2)).sum(-1)
    equal = (scores.unsqueeze(-1) == scores.unsqueeze(-2)).sum(-1)
    return (below + (equal + 1) / 2).to(scores.dtype)


def ranking_mse_loss(
    returns: torch.Tensor,
    ratings: torch.Tensor | None = None,
    regularization_strength: float | None = None,
    soft_rank_method: str = "pav",
) -> torch.Tensor:
    """R4's ranking mean squared error between soft ranks of predicted returns and ranks of the ratings.

    ``L = mean_{b, k} (soft_rank_eps(G_b)_k - soft_rank_eps(c_b)_k)^2`` with the target ranks computed without
    gradient. With one segment per class in class order, the target is ``(1, ..., n)``. The loss is zero exactly
    when, in every item, the predicted returns are in class order with consecutive gaps of at least ``eps``
    (the soft ranks then equal the hard ranks); it grows with the number of swapped pairs.

    Args:
        returns: predicted segment returns, shape ``(batch, n)``; ``n >= 2`` segments per item.
        ratings: rating classes of those segments, same shape; ``None`` means ``(0, ..., n-1)`` in every row
            (one segment per class, in class order, as the data module produces).
        regularization_strength: ``eps`` of the soft rank; ``None`` takes the operator's default (1.0 for
            ``"pav"``, the paper's value; 0.1 for ``"ot"``, the official OT variant's).
        soft_rank_method: ``"pav"`` (the paper: projection onto the permutahedron, target = soft ranks of the
            ratings at the same ``eps``) or ``"ot"`` (the official code's optimal-transport variant,
            :func:`~lightning_icml26.ops.ot_rank.ot_soft_rank` of the standardised returns, target = the hard
            ranks of the ratings, ties averaged).

    Returns:
        The scalar loss.

    Raises:
        ValueError: for fewer than two segments per item, mismatched shapes or an unknown method.

    Example:
        >>> ranking_mse_loss(torch.tensor([[0.0, 1.0, 2.0]]))
        tensor(0.)
        >>> ranking_mse_loss(torch.tensor([[2.0, 1.0, 0.0]]))
        tensor(2.6667)
    """
    if returns.dim() != 2 or returns.shape[1] < 2:
        raise ValueError(
            f"returns must have shape (batch, n) with n >= 2 segments (rating classes) per item, "
            f"got shape {tuple(returns.shape)}"
        )
    if ratings is None:
        target_scores = torch.arange(returns.shape[1], dtype=returns.dtype, device=returns.device).expand_as(returns)
    else:
        if ratings.shape != returns.shape:
            raise ValueError(
                f"ratings must have the shape of returns {tuple(returns.shape)}, got {tuple(ratings.shape)}"
            )
        target_scores = ratings.to(returns.dtype)
    if soft_rank_method not in SOFT_RANK_METHODS:
        raise ValueError(f"soft_rank_method must be one of {SOFT_RANK_METHODS}, got {soft_rank_method!r}")
    eps = DEFAULT_STRENGTH[soft_rank_method] if regularization_strength is None else regularization_strength
    if soft_rank_method == "ot":
        return F.mse_loss(ot_soft_rank(returns, eps), average_ranks(target_scores))
    with torch.no_grad():
        target = soft_rank(target_scores, eps)
    predicted = soft_rank(returns, eps)
    return F.mse_loss(predicted, target)


def rbrl_loss(returns: torch.Tensor, ratings: torch.Tensor, num_classes: int, k: float = 30.0) -> torch.Tensor:
    """Rating-based RL loss (White et al. 2024, as in the RbRL code): cross-entropy over class "closeness" logits.

    Returns are min-max normalised over the batch to ``R in [0, 1]``; class boundaries (no gradient) are
    ``R_0 = 0``, ``R_n = 1`` and ``R_c`` = the ``(N_0 + ... + N_{c-1})``-th smallest normalised return, where
    ``N_c`` counts class ``c`` in the batch (``R_c = 0`` when no earlier class occurs). The logit of class ``c``
    is ``-k (R - R_c)(R - R_{c+1})``, positive inside the class interval.

    Args:
        returns: predicted segment returns, shape ``(batch,)``.
        ratings: integer classes, shape ``(batch,)``.
        num_classes: number of declared classes (at least 2).
        k: logit sharpness (30 in the paper).

    Returns:
        The scalar cross-entropy.

    Raises:
        ValueError: for bad classes or shapes.

    Example:
        >>> rbrl_loss(torch.tensor([0.0, 1.0, 2.0, 3.0]), torch.tensor([0, 0, 1, 1]), num_classes=2) < 0.7
        tensor(True)
    """
    check_ratings(ratings, num_classes)
    if returns.dim() != 1 or ratings.shape != returns.shape:
        raise ValueError(
            f"returns and ratings must both have shape (batch,), got {tuple(returns.shape)} and {tuple(ratings.shape)}"
        )
    low, high = returns.min(), returns.max()
    normalised = (returns - low) / (high - low).clamp_min(1e-8)
    with torch.no_grad():
        ordered = torch.sort(normalised).values
        counts = torch.bincount(ratings, minlength=num_classes)
        cumulative = counts.cumsum(0)[:-1]  # N_0 + ... + N_{c-1} for c = 1..n-1
        inner = torch.where(
            cumulative > 0, ordered[(cumulative - 1).clamp_min(0)], torch.zeros((), dtype=returns.dtype)
        )
        bounds = torch.cat([normalised.new_zeros(1), inner, normalised.new_ones(1)])
    logits = -k * (normalised[:, None] - bounds[None, :-1]) * (normalised[:, None] - bounds[None, 1:])
    return F.cross_entropy(logits, ratings)


def bradley_terry_loss(returns_a: torch.Tensor, returns_b: torch.Tensor, preference: torch.Tensor) -> torch.Tensor:
    """Bradley-Terry preference loss (Christiano et al. 2017; PEBBLE): ``BCE(sigmoid(G_a - G_b), p)``.

    Args:
        returns_a: predicted returns of the first segments, shape ``(batch,)``.
        returns_b: predicted returns of the second segments, shape ``(batch,)``.
        preference: probability that the first segment is preferred (1, 0, or 0.5 for a tie), shape ``(batch,)``.

    Returns:
        The scalar loss.

    Raises:
        ValueError: for mismatched shapes or preferences outside ``[0, 1]``.

    Example:
        >>> bradley_terry_loss(torch.tensor([5.0]), torch.tensor([-5.0]), torch.tensor([1.0])) < 1e-4
        tensor(True)
    """
    if not (returns_a.shape == returns_b.shape == preference.shape) or returns_a.dim() != 1:
        raise ValueError(
            "returns_a, returns_b and preference must share one shape (batch,), got "
            f"{tuple(returns_a.shape)}, {tuple(returns_b.shape)}, {tuple(preference.shape)}"
        )
    if ((preference < 0) | (preference > 1)).any():
        raise ValueError(f"preference must lie in [0, 1], got min {preference.min()} and max {preference.max()}")
    return F.binary_cross_entropy_with_logits(returns_a - returns_b, preference.to(returns_a.dtype))
