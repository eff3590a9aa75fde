"""Policies inspired by Way-SE and Way-SE-2S: matching bandits on local clocks only.

Only the paper's abstract is public, so these are reference designs consistent with it (the docs page lists
every reconstructed choice). Each player keeps a local clock from its own arrival and never reads a global
step, another player's state or the arms' decisions beyond its own acceptance.

**Way-SE** (one-sided: arms know their rankings of players).

* *Exploration with implicit coordination*: a player pulls arms round-robin from a random offset on its
  local clock. Two explorers with different offsets never meet (their clocks advance together), and a
  rejected explorer shifts its offset by a random amount, so explorers settle on distinct offsets through
  collisions alone. The shift takes effect at the end of the current cycle, so that every cycle visits
  every arm (an immediate shift would skip the arms after a rejecting one, forever for an arm held by a
  player it never outranks).
* *Successive elimination on doubling epochs*: epochs end at local times ``T0, 2 T0, 4 T0, ...``. Within
  the epoch ending at ``L`` a player's intervals are ``mean +- s sqrt(2 c log L / n)``; it explores until the
  interval of its best *available* arm (one whose latest proposal it accepted) lies above the intervals of
  every other available arm, checked at the end of each round-robin cycle. Arms held by players they
  prefer reject an explorer every time and are never sampled, so a full ranking would never resolve once
  others commit; successive elimination among the arms that accept the player is what the abstract's
  design allows.
* *Commit by deferred acceptance*: a resolved player proposes to its best arm that has not blocked it; an
  arm blocks the player after ``patience`` consecutive rejections (``K`` by default: fewer than ``K``
  other players can only cause shorter runs of rejections while exploring round-robin, so only a player
  that holds the arm causes a block). This is player-proposing deferred acceptance run through collisions,
  which ends at the player-optimal stable matching of the players present.
* *Re-exploration at epoch boundaries*: at each boundary the blocks and availabilities are lifted and the
  player explores at least one more round-robin cycle (finding arms freed since), committing again once its
  best available arm is separated at the new, stricter level. The regret therefore grows with the number of
  epochs, ``O(log T)``.

**Way-SE-2S** (two-sided: arms learn too) adds

* *forced exploration*: a committed player proposes, with probability ``min(1, tau^(-1/K))`` on its local
  clock, to a uniformly random other arm; an acceptance by an arm it ranks above its target lifts that
  arm's block (the arm now prefers it, for instance after a departure or as the arms learn). The expected
  number of forced proposals up to ``T`` is ``O(T^((K-1)/K))``, the rate of the abstract (its log and gap
  factors differ between the two published abstracts and are not reproduced here);
* *arm-side successive elimination*: an arm accepts, among its proposers whose upper confidence bound is not
  below another proposer's lower bound, the least sampled (ties to the higher upper bound).
"""

from __future__ import annotations

import numpy as np

from lightning_icml26.algorithms.matching.market import MatchingMarketEnv
from lightning_icml26.algorithms.matching.policy import (
    MatchingPolicy,
    RewardEstimates,
    best_separated,
    best_unblocked,
    confidence_radius,
)

__all__ = ["WaySE", "WaySE2S"]

EXPLORE, COMMIT = 0, 1


class WaySE(MatchingPolicy):
    """Way-SE-inspired decentralised policy for one-sided markets with uncoordinated arrivals.

    Args:
        first_epoch: ``T0``, the first epoch's length on the local clock (default ``4 K``).
        patience: consecutive rejections after which a committed player gives an arm up (default ``K``).
        confidence: ``c`` in the interval half-width.
        seed: offsets and their shifts.

    Example:
        >>> from lightning_icml26.algorithms.matching import MatchingMarketEnv, run_market
        >>> env = MatchingMarketEnv(3, 3, horizon=3000, gap=0.2, noise_std=0.1, seed=0)
        >>> result = run_market(env, WaySE(seed=0))
        >>> bool(result.final_matching_stable.all())
        True
    """

    name = "Way-SE"

    def __init__(
        self, first_epoch: int | None = None, patience: int | None = None, confidence: float = 2.0, seed: int = 0
    ) -> None:
        super().__init__(confidence, seed)
        for name, value in (("first_epoch", first_epoch), ("patience", patience)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
                raise ValueError(f"{name} must be a positive int or None, got {value!r}")
        self._first_epoch, self._patience = first_epoch, patience

    def reset(self, env: MatchingMarketEnv) -> None:
        """Bind to ``env`` and clear every player's state."""
        super().reset(env)
        shape = (self.n_runs, self.n_players)
        self.first_epoch = self._first_epoch or 4 * self.n_arms
        self.patience = self._patience or self.n_arms
        self.phase = np.full(shape, EXPLORE)
        self.offset = self.rng.integers(0, self.n_arms, shape)
        self.epoch_end = np.full(shape, self.first_epoch, dtype=np.int64)
        self.blocked = np.zeros(shape + (self.n_arms,), bool)
        self.streak = np.zeros(shape, dtype=np.int64)
        self.target = np.full(shape, -1)
        self.available = np.ones(shape + (self.n_arms,), bool)
        self.collided = np.zeros(shape, bool)

    def _arrive(self, local_time: np.ndarray, present: np.ndarray) -> None:
        new = present & (local_time == 0)
        if new.any():
            self.estimates.reset(new)
            self.phase[new] = EXPLORE
            self.offset[new] = self.rng.integers(0, self.n_arms, int(new.sum()))
            self.epoch_end[new] = self.first_epoch
            self.blocked[new] = False
            self.streak[new] = 0
            self.available[new] = True
            self.collided[new] = False

    def _resolved(self) -> np.ndarray:
        radius = confidence_radius(self.estimates.counts, self.epoch_end[..., None], self.sub_gaussian, self.confidence)
        return best_separated(self.estimates.means, radius, self.available)

    def act(self, t: int, local_time: np.ndarray, present: np.ndarray) -> np.ndarray:
        """Round-robin from the offset while exploring, the best unblocked arm once committed."""
        self._arrive(local_time, present)
        self.target = best_unblocked(self.estimates.means, self.blocked)
        arms = np.where(self.phase == EXPLORE, (self.offset + local_time) % self.n_arms, self.target)
        return np.where(present, arms, -1)

    def _start_commit(self, mask: np.ndarray) -> None:
        self.phase[mask] = COMMIT
        self.blocked[mask] = False
        self.streak[mask] = 0

    def update(
        self,
        arms: np.ndarray,
        accepted: np.ndarray,
        rewards: np.ndarray,
        local_time: np.ndarray,
        present: np.ndarray,
        winners: np.ndarray,
    ) -> None:
        """Record rewards; shift offsets on exploration collisions; count rejections; end explorations and epochs."""
        self.estimates.add(accepted, arms, rewards)
        explorer = present & (self.phase == EXPLORE) & (arms >= 0)
        r_idx, p_idx = np.nonzero(explorer)
        self.available[r_idx, p_idx, arms[r_idx, p_idx]] = accepted[r_idx, p_idx]
        self.collided |= explorer & ~accepted
        on_target = present & (self.phase == COMMIT) & (arms >= 0) & (arms == self.target)
        self.streak = np.where(on_target & ~accepted, self.streak + 1, np.where(on_target, 0, self.streak))
        give_up = on_target & (self.streak >= self.patience)
        if give_up.any():
            r_idx, p_idx = np.nonzero(give_up)
            self.blocked[r_idx, p_idx, arms[r_idx, p_idx]] = True
            self.streak[give_up] = 0
        cycle_end = explorer & ((local_time + 1) % self.n_arms == 0)
        if cycle_end.any():
            shift = cycle_end & self.collided
            if shift.any() and self.n_arms > 1:
                self.offset[shift] += self.rng.integers(1, self.n_arms, int(shift.sum()))
            self.collided &= ~cycle_end
            self._start_commit(cycle_end & self._resolved())
        boundary = present & (local_time + 1 >= self.epoch_end)
        if boundary.any():
            self.epoch_end[boundary] *= 2
            self.phase[boundary] = EXPLORE
            self.available[boundary] = True


class WaySE2S(WaySE):
    """Way-SE-2S-inspired policy for two-sided markets with arrivals and departures (arms learn too).

    Args:
        forced_exponent: forced exploration probability ``min(1, tau^(-forced_exponent))``; default ``1 / K``.
        first_epoch: as for :class:`WaySE`.
        patience: as for :class:`WaySE`.
        confidence: as for :class:`WaySE`.
        seed: as for :class:`WaySE`.

    Example:
        >>> from lightning_icml26.algorithms.matching import MatchingMarketEnv, run_market
        >>> env = MatchingMarketEnv(2, 3, horizon=4000, gap=0.2, noise_std=0.1, two_sided=True, seed=0)
        >>> run_market(env, WaySE2S(seed=0)).regret.shape
        (1, 2)
    """

    name = "Way-SE-2S"
    two_sided = True

    def __init__(
        self,
        forced_exponent: float | None = None,
        first_epoch: int | None = None,
        patience: int | None = None,
        confidence: float = 2.0,
        seed: int = 0,
    ) -> None:
        super().__init__(first_epoch, patience, confidence, seed)
        if forced_exponent is not None and not 0 < forced_exponent <= 1:
            raise ValueError(f"forced_exponent must be in (0, 1] or None, got {forced_exponent!r}")
        self._forced_exponent = forced_exponent

    def reset(self, env: MatchingMarketEnv) -> None:
        """Bind to ``env``; clear player and arm state."""
        super().reset(env)
        self.forced_exponent = self._forced_exponent or 1.0 / self.n_arms
        self.arm_estimates = RewardEstimates((self.n_runs, self.n_arms, self.n_players))
        self.forced = np.zeros((self.n_runs, self.n_players), bool)

    def act(self, t: int, local_time: np.ndarray, present: np.ndarray) -> np.ndarray:
        """Way-SE's proposal, replaced with probability ``tau^(-1/K)`` by a random other arm once committed."""
        arms = super().act(t, local_time, present)
        rate = np.minimum(1.0, np.maximum(local_time, 1) ** -self.forced_exponent)
        self.forced = present & (self.phase == COMMIT) & (self.rng.random(arms.shape) < rate) & (self.n_arms > 1)
        if self.forced.any():
            shift = self.rng.integers(1, max(self.n_arms, 2), arms.shape)
            anywhere = self.rng.integers(0, self.n_arms, arms.shape)  # a player blocked everywhere retries any arm
            other = np.where(self.target < 0, anywhere, (self.target + shift) % self.n_arms)
            arms = np.where(self.forced, other, arms)
        return arms

    def update(
        self,
        arms: np.ndarray,
        accepted: np.ndarray,
        rewards: np.ndarray,
        local_time: np.ndarray,
        present: np.ndarray,
        winners: np.ndarray,
    ) -> None:
        """Way-SE's update; a forced proposal accepted by a better-ranked arm lifts that arm's block."""
        super().update(arms, accepted, rewards, local_time, present, winners)
        won = self.forced & accepted
        if won.any():
            means = self.estimates.means
            r_idx, p_idx = np.nonzero(won)
            arm = arms[r_idx, p_idx]
            target = self.target[r_idx, p_idx]
            better = (target < 0) | (means[r_idx, p_idx, arm] > means[r_idx, p_idx, np.maximum(target, 0)])
            self.blocked[r_idx[better], p_idx[better], arm[better]] = False

    def arm_priority(self, t: int, arms: np.ndarray) -> np.ndarray:
        """Arm-side successive elimination among each arm's proposers (lower priority wins)."""
        proposing = arms >= 0
        safe = np.where(proposing, arms, 0)
        runs = np.broadcast_to(np.arange(self.n_runs)[:, None], arms.shape)
        players = np.broadcast_to(np.arange(self.n_players)[None, :], arms.shape)
        counts = self.arm_estimates.counts[runs, safe, players]
        means = self.arm_estimates.means[runs, safe, players]
        radius = confidence_radius(counts, t + 1, self.sub_gaussian, self.confidence)
        upper, lower = means + radius, np.where(counts > 0, means - radius, -np.inf)
        best_lower = np.full((self.n_runs, self.n_arms), -np.inf)
        np.maximum.at(best_lower, (runs[proposing], safe[proposing]), lower[proposing])
        eliminated = upper < best_lower[runs, safe]
        finite_upper = np.where(np.isfinite(upper), upper, 1e6)
        return np.where(eliminated, 1e12, 0.0) + counts - 1e-9 * finite_upper

    def arm_update(self, t: int, arms: np.ndarray, accepted: np.ndarray, arm_rewards: np.ndarray) -> None:
        """Each accepting arm records the reward from the player it accepted."""
        r_idx, p_idx = np.nonzero(accepted)
        arm = arms[r_idx, p_idx]
        self.arm_estimates.counts[r_idx, arm, p_idx] += 1
        self.arm_estimates.sums[r_idx, arm, p_idx] += arm_rewards[r_idx, p_idx]
