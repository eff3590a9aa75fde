"""The policy interface shared by Way-SE and the baselines, and the confidence-interval helpers they share.

A policy acts for all ``R x N`` players at once (vectorised over runs), but each player's decision reads only
its own row: its local clock, its own proposals, acceptances and rewards. Centralised baselines are the
exception and say so. ``act`` returns ``(R, N)`` proposals (``-1`` for none); ``update`` receives the outcome.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np

from lightning_icml26.algorithms.matching.market import MatchingMarketEnv

__all__ = [
    "MatchingPolicy",
    "RewardEstimates",
    "best_separated",
    "best_unblocked",
    "confidence_radius",
    "ranking_resolved",
]


def confidence_radius(
    counts: np.ndarray, level: np.ndarray | float, sub_gaussian: float, confidence: float
) -> np.ndarray:
    """Half-width ``s * sqrt(2 c log L / n)`` of a sub-Gaussian interval (``inf`` where ``n = 0``).

    Example:
        >>> confidence_radius(np.array([0, 8]), np.e, 1.0, 1.0).round(3).tolist()
        [inf, 0.5]
    """
    level = np.maximum(np.asarray(level, dtype=float), 1.0)
    with np.errstate(divide="ignore"):
        return np.where(
            counts > 0, sub_gaussian * np.sqrt(2.0 * confidence * np.log(level) / np.maximum(counts, 1)), np.inf
        )


def ranking_resolved(means: np.ndarray, radius: np.ndarray) -> np.ndarray:
    """Whether the intervals ``mean +- radius`` over the last axis are pairwise disjoint (the order is known).

    Example:
        >>> ranking_resolved(np.array([[0.9, 0.5], [0.9, 0.8]]), np.full((2, 2), 0.1)).tolist()
        [True, False]
    """
    order = np.argsort(-means, axis=-1)
    m = np.take_along_axis(means, order, -1)
    r = np.take_along_axis(radius, order, -1)
    return np.all(m[..., :-1] - r[..., :-1] > m[..., 1:] + r[..., 1:], axis=-1)


def best_separated(means: np.ndarray, radius: np.ndarray, candidates: np.ndarray) -> np.ndarray:
    """Whether, among ``candidates`` (last axis), the best mean's lower bound clears every other upper bound.

    False when there is no candidate; true when there is exactly one.

    Example:
        >>> m, r = np.array([[0.9, 0.5, 0.95]]), np.full((1, 3), 0.1)
        >>> best_separated(m, r, np.array([[True, True, False]])).tolist()
        [True]
        >>> best_separated(m, r, np.ones((1, 3), bool)).tolist()
        [False]
    """
    score = np.where(candidates, means, -np.inf)
    best = np.argmax(score, axis=-1)[..., None]
    lower = np.take_along_axis(means - radius, best, -1)[..., 0]
    others = candidates.copy()
    np.put_along_axis(others, best, False, -1)
    upper = np.where(others, means + radius, -np.inf).max(axis=-1)
    return candidates.any(axis=-1) & (lower > upper)


def best_unblocked(means: np.ndarray, blocked: np.ndarray) -> np.ndarray:
    """Index of the highest mean among arms not blocked (last axis); ``-1`` where every arm is blocked.

    Example:
        >>> best_unblocked(np.array([[0.9, 0.5], [0.9, 0.5]]), np.array([[True, False], [True, True]])).tolist()
        [1, -1]
    """
    best = np.argmax(np.where(blocked, -np.inf, means), axis=-1)
    return np.where(blocked.all(axis=-1), -1, best)


class RewardEstimates:
    """Per-(run, learner, option) sample counts and reward sums with means and intervals."""

    def __init__(self, shape: tuple[int, ...]) -> None:
        self.counts = np.zeros(shape, dtype=np.int64)
        self.sums = np.zeros(shape)

    def add(self, mask: np.ndarray, options: np.ndarray, rewards: np.ndarray) -> None:
        """Record ``rewards`` of ``options`` (last axis index) where ``mask`` holds."""
        idx = np.nonzero(mask)
        opt = options[idx]
        self.counts[idx + (opt,)] += 1
        self.sums[idx + (opt,)] += rewards[idx]

    def reset(self, mask: np.ndarray) -> None:
        """Forget everything for the learners where ``mask`` holds."""
        self.counts[mask] = 0
        self.sums[mask] = 0.0

    @property
    def means(self) -> np.ndarray:
        """Empirical means (0 where nothing was observed)."""
        return self.sums / np.maximum(self.counts, 1)


class MatchingPolicy(ABC):
    """Base class: ``reset`` once per simulation, then ``act`` and ``update`` every step.

    Args:
        confidence: ``c`` in the interval half-width ``s sqrt(2 c log L / n)``.
        seed: the policy's own randomness (offsets, tie-breaks, forced exploration).
    """

    name = "policy"
    #: Whether the policy also runs the arms' side (their acceptance and learning), as two-sided markets need.
    two_sided = False

    def __init__(self, confidence: float = 2.0, seed: int = 0) -> None:
        if not confidence > 0:
            raise ValueError(f"confidence must be > 0, got {confidence!r}")
        self.confidence = float(confidence)
        self.seed = int(seed)

    def reset(self, env: MatchingMarketEnv) -> None:
        """Bind to a market and clear every player's state."""
        self.env = env
        self.rng = np.random.default_rng(self.seed)
        self.n_runs, self.n_players, self.n_arms = env.n_runs, env.n_players, env.n_arms
        self.sub_gaussian = env.sub_gaussian
        self.estimates = RewardEstimates((self.n_runs, self.n_players, self.n_arms))

    @abstractmethod
    def act(self, t: int, local_time: np.ndarray, present: np.ndarray) -> np.ndarray:
        """``(R, N)`` proposals (``-1`` for none); ``t`` is read by centralised policies only."""

    def update(
        self,
        arms: np.ndarray,
        accepted: np.ndarray,
        rewards: np.ndarray,
        local_time: np.ndarray,
        present: np.ndarray,
        winners: np.ndarray,
    ) -> None:
        """Learn from the step; ``winners`` (each arm's accepted player) is read only by CA-UCB (public there)."""
        self.estimates.add(accepted, arms, rewards)

    def arm_priority(self, t: int, arms: np.ndarray) -> np.ndarray:
        """Two-sided markets: the arms' acceptance order of the proposals (lower wins).

        Raises:
            TypeError: for a policy without an arm side (``two_sided`` false).
        """
        raise TypeError(f"policy {self.name!r} learns on the player side only; it has no arm side")

    def arm_update(self, t: int, arms: np.ndarray, accepted: np.ndarray, arm_rewards: np.ndarray) -> None:
        """Two-sided markets: the arms learn from the rewards of the players they accepted.

        Raises:
            TypeError: for a policy without an arm side (``two_sided`` false).
        """
        raise TypeError(f"policy {self.name!r} learns on the player side only; it has no arm side")
