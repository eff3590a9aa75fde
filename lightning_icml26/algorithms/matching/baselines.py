"""Baselines for matching bandits: centralised ETC-GS and UCB-GS, CA-UCB and ETGS.

Each follows its published description, with the choices this project made where the description leaves
room (the docs page lists them):

* :class:`CentralizedETCGS` (Liu, Mania and Jordan, 2020): a platform that sees who is present explores
  every present player round-robin on collision-free slots until every present player's intervals (at level
  ``log T``) are pairwise disjoint, then assigns the Gale-Shapley matching of the estimates; an arrival
  reopens exploration. The stopping rule replaces the paper's fixed exploration length ``h`` (which needs
  the gap) and is never weaker than a well-chosen ``h``.
* :class:`CentralizedUCBGS` (same paper): each step, the Gale-Shapley matching of the present players'
  upper confidence bounds (recomputed only when some ranking of bounds changes). As the paper shows, its
  regret is logarithmic against the player-*pessimal* stable matching; against the player-optimal one it
  can be linear, when it settles on another stable matching whose players never sample the arms that
  would correct their optimistic rankings (seen in the benchmark).
* :class:`CAUCB` (Liu, Ruan, Di and Jordan, 2021): decentralised; with probability ``lambda`` a player
  repeats its last arm, otherwise it picks the highest upper bound among arms whose previous winner it
  outranks. It assumes each arm's previous winner is public (``winners``), more than Way-SE observes.
* :class:`ETGS` (Kong and Li, 2023): index discovery through collisions on arm 0, round-robin exploration by
  index in doubling phases, then Gale-Shapley through collisions with an arm dropped at its first rejection.
  It assumes a global clock: each player reads its local clock as the global one, which is exact only when
  everyone arrives together. The completion signal that the paper sends through collision blocks is
  idealised here as free: a player ends exploration at a phase boundary when every present player of its
  market has a resolved ranking.
"""

from __future__ import annotations

import numpy as np

from lightning_icml26.algorithms.matching.market import MatchingMarketEnv
from lightning_icml26.algorithms.matching.policy import (
    MatchingPolicy,
    best_unblocked,
    confidence_radius,
    ranking_resolved,
)
from lightning_icml26.algorithms.matching.stable import stable_matching

__all__ = ["CAUCB", "ETGS", "CentralizedETCGS", "CentralizedUCBGS"]


class CentralizedETCGS(MatchingPolicy):
    """Centralised explore-then-commit with Gale-Shapley on the estimates (sees arrivals; knows ``T``).

    Example:
        >>> from lightning_icml26.algorithms.matching import MatchingMarketEnv, run_market
        >>> env = MatchingMarketEnv(3, 3, horizon=3000, gap=0.2, seed=0)
        >>> bool(run_market(env, CentralizedETCGS()).final_matching_stable.all())
        True
    """

    name = "Centralized ETC-GS"

    def reset(self, env: MatchingMarketEnv) -> None:
        """Bind to ``env``; nothing assigned yet."""
        super().reset(env)
        self.assignment = np.full((self.n_runs, self.n_players), -1)
        self.assigned_for = np.zeros((self.n_runs, self.n_players), bool)

    def act(self, t: int, local_time: np.ndarray, present: np.ndarray) -> np.ndarray:
        """Collision-free round-robin until all present players are resolved, then the estimated GS matching."""
        self.estimates.reset(present & (local_time == 0))
        radius = confidence_radius(self.estimates.counts, self.env.horizon, self.sub_gaussian, self.confidence)
        resolved = ranking_resolved(self.estimates.means, radius)
        done = np.all(resolved | ~present, axis=1)
        for r in np.flatnonzero(done & np.any(present != self.assigned_for, axis=1)):
            self.assignment[r] = stable_matching(self.estimates.means[r], self.env.arm_rank[r], present[r])
            self.assigned_for[r] = present[r]
        slots = (np.arange(self.n_players)[None, :] + t) % self.n_arms
        arms = np.where(done[:, None], self.assignment, slots)
        return np.where(present, arms, -1)


class CentralizedUCBGS(MatchingPolicy):
    """Centralised Gale-Shapley on upper confidence bounds, every step (sees arrivals).

    Example:
        >>> from lightning_icml26.algorithms.matching import MatchingMarketEnv, run_market
        >>> env = MatchingMarketEnv(2, 3, horizon=2000, gap=0.2, seed=0)
        >>> run_market(env, CentralizedUCBGS()).regret.shape
        (1, 2)
    """

    name = "Centralized UCB-GS"

    def reset(self, env: MatchingMarketEnv) -> None:
        """Bind to ``env``; no cached matching."""
        super().reset(env)
        self.order = np.full((self.n_runs, self.n_players, self.n_arms), -1)
        self.assigned_for = np.zeros((self.n_runs, self.n_players), bool)
        self.assignment = np.full((self.n_runs, self.n_players), -1)

    def act(self, t: int, local_time: np.ndarray, present: np.ndarray) -> np.ndarray:
        """The GS matching of the bounds' rankings (recomputed where a ranking or the present set changed)."""
        self.estimates.reset(present & (local_time == 0))
        radius = confidence_radius(self.estimates.counts, t + 1, self.sub_gaussian, self.confidence)
        upper = np.where(np.isinf(radius), 1e9, self.estimates.means + radius)
        order = np.argsort(-upper, axis=-1, kind="stable")
        changed = np.any((order != self.order) & present[..., None], axis=(1, 2)) | np.any(
            present != self.assigned_for, axis=1
        )
        for r in np.flatnonzero(changed):
            ranking_utility = -np.argsort(order[r], axis=-1).astype(float)  # higher = preferred, ties impossible
            self.assignment[r] = stable_matching(ranking_utility, self.env.arm_rank[r], present[r])
            self.assigned_for[r] = present[r]
        self.order = order
        return np.where(present, self.assignment, -1)


class CAUCB(MatchingPolicy):
    """Collision-avoiding UCB: decentralised, reads each arm's previous winner (public in its model).

    Args:
        hesitation: ``lambda``, the probability of repeating the last arm.
        confidence: as for :class:`MatchingPolicy`.
        seed: as for :class:`MatchingPolicy`.

    Example:
        >>> from lightning_icml26.algorithms.matching import MatchingMarketEnv, run_market
        >>> run_market(MatchingMarketEnv(2, 3, horizon=1000, seed=0), CAUCB()).regret.shape
        (1, 2)
    """

    name = "CA-UCB"

    def __init__(self, hesitation: float = 0.1, confidence: float = 2.0, seed: int = 0) -> None:
        super().__init__(confidence, seed)
        if not 0 <= hesitation < 1:
            raise ValueError(f"hesitation must be in [0, 1), got {hesitation!r}")
        self.hesitation = float(hesitation)

    def reset(self, env: MatchingMarketEnv) -> None:
        """Bind to ``env``; no previous arm or winners."""
        super().reset(env)
        self.last_arm = np.full((self.n_runs, self.n_players), -1)
        self.last_winners = np.full((self.n_runs, self.n_arms), -1)

    def act(self, t: int, local_time: np.ndarray, present: np.ndarray) -> np.ndarray:
        """Repeat with probability ``lambda``, else the best upper bound among the plausible arms."""
        new = present & (local_time == 0)
        self.estimates.reset(new)
        self.last_arm[new] = -1
        radius = confidence_radius(
            self.estimates.counts, np.maximum(local_time, 1)[..., None] + 1, self.sub_gaussian, self.confidence
        )
        upper = np.where(np.isinf(radius), 1e9, self.estimates.means + radius)
        winner = self.last_winners[:, None, :]  # (R, 1, K)
        rank = self.env.arm_rank.transpose(0, 2, 1)  # (R, N, K): rank of player p at arm k
        winner_rank = np.take_along_axis(self.env.arm_rank, np.maximum(winner, 0).transpose(0, 2, 1), -1).transpose(
            0, 2, 1
        )
        players = np.arange(self.n_players)[None, :, None]
        plausible = (winner < 0) | (winner == players) | (rank < winner_rank)
        choice = np.argmax(np.where(plausible, upper, -np.inf), axis=-1)
        repeat = (self.rng.random(choice.shape) < self.hesitation) & (self.last_arm >= 0)
        arms = np.where(repeat, self.last_arm, choice)
        return np.where(present, arms, -1)

    def update(
        self,
        arms: np.ndarray,
        accepted: np.ndarray,
        rewards: np.ndarray,
        local_time: np.ndarray,
        present: np.ndarray,
        winners: np.ndarray,
    ) -> None:
        """Record rewards, the last arm and each arm's winner."""
        super().update(arms, accepted, rewards, local_time, present, winners)
        self.last_arm = np.where(present, arms, self.last_arm)
        self.last_winners = winners.copy()


INDEX, EXPLORE, GALE_SHAPLEY = 0, 1, 2


class ETGS(MatchingPolicy):
    """Explore-then-Gale-Shapley with a global clock (each player's local clock taken as global).

    Example:
        >>> from lightning_icml26.algorithms.matching import MatchingMarketEnv, run_market
        >>> env = MatchingMarketEnv(3, 3, horizon=3000, gap=0.2, seed=0)
        >>> bool(run_market(env, ETGS()).final_matching_stable.all())
        True
    """

    name = "ETGS"

    def reset(self, env: MatchingMarketEnv) -> None:
        """Bind to ``env``; no indices yet."""
        super().reset(env)
        shape = (self.n_runs, self.n_players)
        self.index = np.full(shape, -1)
        self.phase = np.full(shape, INDEX)
        self.phase_end = np.full(shape, 2 * self.n_arms, dtype=np.int64)
        self.blocked = np.zeros(shape + (self.n_arms,), bool)

    def act(self, t: int, local_time: np.ndarray, present: np.ndarray) -> np.ndarray:
        """Arm 0 while seeking an index, round-robin by index while exploring, the best unblocked arm in GS."""
        new = present & (local_time == 0)
        if new.any():
            self.estimates.reset(new)
            self.index[new], self.phase[new], self.phase_end[new], self.blocked[new] = -1, INDEX, 2 * self.n_arms, False
        start = present & (self.phase == INDEX) & (local_time >= self.n_arms)
        missing = start & (self.index < 0)
        self.index[missing] = self.rng.integers(0, self.n_arms, int(missing.sum()))  # discovery failed: guess
        self.phase[start] = EXPLORE
        seeking = np.where(self.index < 0, 0, -1)
        best = best_unblocked(self.estimates.means, self.blocked)
        arms = np.select(
            [self.phase == INDEX, self.phase == EXPLORE], [seeking, (self.index + local_time) % self.n_arms], best
        )
        return np.where(present, arms, -1)

    def update(
        self,
        arms: np.ndarray,
        accepted: np.ndarray,
        rewards: np.ndarray,
        local_time: np.ndarray,
        present: np.ndarray,
        winners: np.ndarray,
    ) -> None:
        """Index on acceptance at arm 0; explore; GS on the idealised all-done signal; drop rejecting arms."""
        in_index = present & (self.phase == INDEX) & (arms >= 0)
        self.index = np.where(in_index & accepted, local_time, self.index)
        learning = present & (self.phase != INDEX)
        super().update(arms, accepted & learning, rewards, local_time, present, winners)
        gs = present & (self.phase == GALE_SHAPLEY) & (arms >= 0) & ~accepted
        if gs.any():
            r_idx, p_idx = np.nonzero(gs)
            self.blocked[r_idx, p_idx, arms[r_idx, p_idx]] = True
        boundary = present & (self.phase == EXPLORE) & (local_time + 1 >= self.phase_end)
        if boundary.any():
            radius = confidence_radius(self.estimates.counts, self.env.horizon, self.sub_gaussian, self.confidence)
            resolved = ranking_resolved(self.estimates.means, radius)
            all_done = np.all(resolved | ~present, axis=1, keepdims=True)
            move = boundary & all_done
            self.phase[move] = GALE_SHAPLEY
            self.blocked[move] = False
            self.phase_end[boundary] = self.n_arms + 2 * (self.phase_end[boundary] - self.n_arms)
