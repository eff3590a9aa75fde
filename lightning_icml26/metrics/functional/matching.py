"""Functional matching-market metrics: stable regret, stability violations and collisions.

Inputs are per-step records of a market with ``N`` players and ``K`` arms: ``(T, N)`` tensors (one row per
step). A proposal or partner of ``-1`` means none.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import Tensor

from lightning_icml26.algorithms.matching import blocking_pairs

__all__ = ["collision_rate", "stability_violation_rate", "stable_regret"]


def _as_steps(name: str, value: Tensor, n_players: int | None = None) -> Tensor:
    if not isinstance(value, Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(value).__name__}")
    value = value.unsqueeze(0) if value.ndim == 1 else value
    if value.ndim != 2 or (n_players is not None and value.shape[1] != n_players):
        expected = f"(T, {n_players})" if n_players is not None else "(T, N)"
        raise ValueError(f"{name} must have shape {expected} or (N,), got {tuple(value.shape)}")
    return value


def _stable_regret_update(optimal: Tensor, obtained: Tensor, present: Tensor | None) -> Tensor:
    optimal = _as_steps("optimal", optimal)
    obtained = _as_steps("obtained", obtained, optimal.shape[1])
    if obtained.shape != optimal.shape:
        raise ValueError(f"obtained must have the shape of optimal {tuple(optimal.shape)}, got {tuple(obtained.shape)}")
    gap = optimal.double() - obtained.double()
    if not torch.isfinite(gap).all():
        raise ValueError("optimal and obtained must be finite")
    if present is not None:
        present = _as_steps("present", present, optimal.shape[1]).bool()
        gap = torch.where(present, gap, torch.zeros_like(gap))
    return gap.sum(0)


def stable_regret(optimal: Tensor, obtained: Tensor, present: Tensor | None = None) -> Tensor:
    """Per-player cumulative stable regret ``sum_t (optimal - obtained)`` over the steps a player is present.

    Args:
        optimal: ``(T, N)`` utility of each player's partner in the player-optimal stable matching.
        obtained: ``(T, N)`` utility obtained (0 when rejected).
        present: optional ``(T, N)`` booleans; absent steps count zero.

    Example:
        >>> stable_regret(torch.tensor([[1.0, 0.5], [1.0, 0.5]]), torch.tensor([[0.0, 0.5], [1.0, 0.4]]))
        tensor([1.0000, 0.1000], dtype=torch.float64)
    """
    return _stable_regret_update(optimal, obtained, present)


def _violation_update(
    matching: Tensor, utilities: Tensor, arm_rank: Tensor, present: Tensor | None
) -> tuple[Tensor, Tensor]:
    matching = _as_steps("matching", matching)
    n_players = matching.shape[1]
    if utilities.ndim != 2 or utilities.shape[0] != n_players:
        raise ValueError(f"utilities must have shape ({n_players}, K), got {tuple(utilities.shape)}")
    n_arms = utilities.shape[1]
    if tuple(arm_rank.shape) != (n_arms, n_players):
        raise ValueError(f"arm_rank must have shape ({n_arms}, {n_players}), got {tuple(arm_rank.shape)}")
    if matching.min() < -1 or matching.max() >= n_arms:
        raise ValueError(
            f"matching entries must be -1 (unmatched) or arms in [0, {n_arms}), "
            f"got [{int(matching.min())}, {int(matching.max())}]"
        )
    here = None if present is None else _as_steps("present", present, n_players).bool().cpu().numpy()
    blocks = blocking_pairs(
        utilities.detach().cpu().double().numpy(), arm_rank.cpu().numpy(), matching.cpu().numpy(), here
    )
    violations = torch.as_tensor(np.any(blocks, axis=(-2, -1)).sum(), dtype=torch.long)
    return violations, torch.tensor(matching.shape[0], dtype=torch.long)


def stability_violation_rate(
    matching: Tensor, utilities: Tensor, arm_rank: Tensor, present: Tensor | None = None
) -> Tensor:
    """Fraction of steps whose realised matching has a blocking pair among the present players.

    Args:
        matching: ``(T, N)`` arm each player was accepted by, ``-1`` when none.
        utilities: ``(N, K)`` player utilities (higher preferred).
        arm_rank: ``(K, N)`` each arm's rank of each player (0 = favourite).
        present: optional ``(T, N)`` booleans.

    Example:
        >>> u, rank = torch.tensor([[0.9, 0.5], [0.8, 0.6]]), torch.tensor([[1, 0], [0, 1]])
        >>> stability_violation_rate(torch.tensor([[1, 0], [0, 1]]), u, rank)
        tensor(0.5000, dtype=torch.float64)
    """
    violations, steps = _violation_update(matching, utilities, arm_rank, present)
    return violations.double() / steps.double()


def _collision_update(proposals: Tensor, accepted: Tensor) -> tuple[Tensor, Tensor]:
    proposals = _as_steps("proposals", proposals)
    accepted = _as_steps("accepted", accepted, proposals.shape[1]).bool()
    if accepted.shape != proposals.shape:
        raise ValueError(
            f"accepted must have the shape of proposals {tuple(proposals.shape)}, got {tuple(accepted.shape)}"
        )
    proposing = proposals >= 0
    if (accepted & ~proposing).any():
        raise ValueError("accepted is true where no proposal was made (proposals == -1)")
    return (proposing & ~accepted).sum(), proposing.sum()


def collision_rate(proposals: Tensor, accepted: Tensor) -> Tensor:
    """Rejected proposals over proposals (``nan`` when nothing was proposed).

    Example:
        >>> collision_rate(torch.tensor([[0, 0], [1, -1]]), torch.tensor([[True, False], [True, False]]))
        tensor(0.3333, dtype=torch.float64)
    """
    rejected, total = _collision_update(proposals, accepted)
    return rejected.double() / total.double() if total > 0 else torch.tensor(float("nan"), dtype=torch.float64)
