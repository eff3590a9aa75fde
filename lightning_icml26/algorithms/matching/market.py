"""``MatchingMarketEnv``: a seeded, vectorised matching market with arrivals and departures no player sees.

``R`` independent runs (seeds) of ``N`` players and ``K >= N`` arms are simulated side by side. Each step,
every present player proposes to one arm; an arm accepts its favourite proposer (by its known ranking in a
one-sided market, or by its own learning rule in a two-sided one) and rejects the rest. A player observes
only whether it was accepted and, if so, a noisy reward of the arm. Players arrive and depart at global times
that no player sees; a player's local clock starts at its arrival.

Utilities have a set minimum gap: each player's (and, two-sided, each arm's) values are ``top, top - gap,
top - 2 gap, ...`` in a random order. Regret is measured against the player-optimal stable matching of the
players present at each step (recomputed at every arrival and departure).
"""

from __future__ import annotations

import numpy as np

from lightning_icml26.algorithms.matching.stable import is_permutation_table, stable_matching

__all__ = ["ARRIVAL_PATTERNS", "MatchingMarketEnv", "market_schedule"]

#: Arrival (and departure) patterns: ``static`` (everyone from step 0, nobody leaves), ``uniform`` (times
#: uniform over the window), ``staggered`` (evenly spaced in a random order), ``poisson`` (a Poisson
#: process over the window, cut at its end).
ARRIVAL_PATTERNS = ("static", "uniform", "staggered", "poisson")


def _times(pattern: str, n_runs: int, n_players: int, low: float, high: float, rng: np.random.Generator) -> np.ndarray:
    if pattern == "uniform":
        return rng.uniform(low, high, (n_runs, n_players))
    if pattern == "staggered":
        slots = low + (high - low) * np.arange(n_players) / n_players
        return np.stack([rng.permutation(slots) for _ in range(n_runs)])
    gaps = rng.exponential((high - low) / n_players, (n_runs, n_players))
    return np.minimum(low + np.cumsum(gaps, axis=1), high - 1)[:, rng.permutation(n_players)]


def market_schedule(
    pattern: str,
    horizon: int,
    n_players: int,
    n_runs: int,
    rng: np.random.Generator,
    *,
    departures: bool = False,
    depart_fraction: float = 0.5,
) -> tuple[np.ndarray, np.ndarray]:
    """Arrival and departure steps ``(R, N)`` for a pattern; departures are ``horizon`` (never) unless asked.

    Arrivals fall in ``[0, horizon / 4)`` with one player always present from step 0 (so the market is never
    empty at the start); with ``departures=True`` a random ``depart_fraction`` of the players leaves at times
    in ``[horizon / 2, horizon)`` drawn by the same pattern.

    Example:
        >>> a, d = market_schedule("staggered", 1000, 4, 1, np.random.default_rng(0))
        >>> sorted(a[0].tolist()), d[0].tolist()
        ([0, 62, 125, 187], [1000, 1000, 1000, 1000])
    """
    if pattern not in ARRIVAL_PATTERNS:
        raise ValueError(f"arrivals must be one of {ARRIVAL_PATTERNS}, got {pattern!r}")
    if not 0.0 <= depart_fraction <= 1.0:
        raise ValueError(f"depart_fraction must be in [0, 1], got {depart_fraction!r}")
    arrival = np.zeros((n_runs, n_players), dtype=np.int64)
    departure = np.full((n_runs, n_players), horizon, dtype=np.int64)
    if pattern == "static":
        return arrival, departure
    arrival = np.floor(_times(pattern, n_runs, n_players, 0.0, horizon / 4, rng)).astype(np.int64)
    arrival -= arrival.min(axis=1, keepdims=True)
    if departures:
        leave = np.floor(_times(pattern, n_runs, n_players, horizon / 2, horizon, rng)).astype(np.int64)
        leaving = rng.random((n_runs, n_players)) < depart_fraction
        departure = np.where(leaving, leave, horizon)
    return arrival, departure


def _gapped_values(rng: np.random.Generator, shape: tuple[int, int, int], top: float, gap: float) -> np.ndarray:
    n_runs, rows, cols = shape
    ladder = top - gap * np.arange(cols)
    return np.stack([np.stack([ladder[rng.permutation(cols)] for _ in range(rows)]) for _ in range(n_runs)])


class MatchingMarketEnv:
    """A matching market of ``N`` players and ``K >= N`` arms, ``R`` independent seeded runs.

    Args:
        n_players: ``N >= 1``.
        n_arms: ``K >= N``.
        horizon: number of steps ``T > 0``.
        gap: minimum utility gap between a participant's consecutive choices (``> 0``).
        noise: ``"gaussian"`` (reward = utility + ``noise_std`` x N(0, 1)) or ``"bernoulli"`` (utilities in [0, 1]).
        noise_std: Gaussian noise scale (``> 0``).
        two_sided: arms learn their preferences from rewards instead of knowing them.
        arrivals: one of :data:`ARRIVAL_PATTERNS`.
        departures: whether some players leave (needs a non-static pattern or explicit times).
        arrival_times: explicit ``(N,)`` or ``(R, N)`` arrival steps in ``[0, T)``, overriding the pattern.
        departure_times: explicit ``(N,)`` or ``(R, N)`` departure steps in ``[0, T]`` (``T`` means never),
            overriding the pattern.
        arm_preferences: explicit ``(K, N)`` or ``(R, K, N)`` rank table (rows are permutations of ``0..N-1``).
        n_runs: ``R``, independent runs simulated together.
        seed: seeds utilities, preferences, schedule and rewards.

    Example:
        >>> env = MatchingMarketEnv(2, 3, horizon=100, gap=0.2, seed=0)
        >>> env.utilities.shape, env.arm_rank.shape, bool(env.present(0).all())
        ((1, 2, 3), (1, 3, 2), True)
    """

    def __init__(
        self,
        n_players: int,
        n_arms: int,
        horizon: int,
        *,
        gap: float = 0.1,
        noise: str = "gaussian",
        noise_std: float = 0.1,
        two_sided: bool = False,
        arrivals: str = "static",
        departures: bool = False,
        arrival_times: np.ndarray | None = None,
        departure_times: np.ndarray | None = None,
        arm_preferences: np.ndarray | None = None,
        n_runs: int = 1,
        seed: int = 0,
    ) -> None:
        for name, value in (("n_players", n_players), ("n_arms", n_arms), ("horizon", horizon), ("n_runs", n_runs)):
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value <= 0:
                raise ValueError(f"{name} must be a positive int, got {value!r}")
        if n_arms < n_players:
            raise ValueError(f"n_arms must be >= n_players (K >= N), got K={n_arms} < N={n_players}")
        if not gap > 0:
            raise ValueError(f"gap must be > 0, got {gap!r}")
        if noise not in ("gaussian", "bernoulli"):
            raise ValueError(f"noise must be 'gaussian' or 'bernoulli', got {noise!r}")
        if noise == "bernoulli" and 0.9 - gap * (n_arms - 1) < 0.05:
            raise ValueError(
                f"gap={gap} is too large for Bernoulli utilities with {n_arms} arms: need gap * (K - 1) <= 0.85"
            )
        if not noise_std > 0:
            raise ValueError(f"noise_std must be > 0, got {noise_std!r}")
        self.n_players, self.n_arms, self.horizon, self.n_runs = int(n_players), int(n_arms), int(horizon), int(n_runs)
        self.gap, self.noise, self.noise_std, self.two_sided = float(gap), noise, float(noise_std), bool(two_sided)
        self.rng = np.random.default_rng(seed)
        top = 0.9 if noise == "bernoulli" else 1.0
        self.utilities = _gapped_values(self.rng, (self.n_runs, self.n_players, self.n_arms), top, self.gap)
        if arm_preferences is not None:
            self.arm_rank = self._check_arm_preferences(arm_preferences)
        else:
            self.arm_rank = np.stack(
                [
                    np.stack([self.rng.permutation(self.n_players) for _ in range(self.n_arms)])
                    for _ in range(self.n_runs)
                ]
            )
        # arm utilities for two-sided markets: consistent with arm_rank (rank 0 gets the top value)
        self.arm_utilities = top - self.gap * self.arm_rank.astype(float)
        arrival, departure = market_schedule(
            arrivals, self.horizon, self.n_players, self.n_runs, self.rng, departures=departures
        )
        if arrivals == "static" and departures and departure_times is None:
            raise ValueError("departures=True needs a non-static arrivals pattern or explicit departure_times")
        if arrival_times is not None:
            arrival = self._check_times("arrival_times", arrival_times, allow_horizon=False)
        if departure_times is not None:
            departure = self._check_times("departure_times", departure_times, allow_horizon=True)
        if np.any(departure <= arrival):
            raise ValueError("every departure time must come after the player's arrival time")
        self.arrival, self.departure = arrival, departure
        self._event_times = np.unique(np.concatenate([arrival.ravel(), departure.ravel()]))
        self._present_segment = self._stable_segment = -1
        self._present = np.zeros((self.n_runs, self.n_players), bool)
        self._arm_ids = np.arange(self.n_arms)
        self._player_ids = np.arange(self.n_players)[None, :]
        self._rank_pk = self.arm_rank.transpose(0, 2, 1).astype(float)  # rank of player p at arm k
        self._optimal = np.zeros((self.n_runs, self.n_players))
        self._stable = np.full((self.n_runs, self.n_players), -1)

    def _check_arm_preferences(self, table: np.ndarray) -> np.ndarray:
        table = np.asarray(table)
        table = np.broadcast_to(table, (self.n_runs,) + table.shape[-2:]) if table.ndim == 2 else table
        if table.shape != (self.n_runs, self.n_arms, self.n_players) or not all(is_permutation_table(t) for t in table):
            raise ValueError(
                f"arm_preferences must be a ({self.n_arms}, {self.n_players}) or ({self.n_runs}, {self.n_arms}, "
                f"{self.n_players}) integer table whose rows are permutations of 0..{self.n_players - 1}"
            )
        return np.array(table)

    def _check_times(self, name: str, times: np.ndarray, *, allow_horizon: bool) -> np.ndarray:
        times = np.asarray(times)
        if not np.issubdtype(times.dtype, np.integer):
            raise ValueError(f"{name} must be integer steps, got dtype {times.dtype}")
        if times.shape not in ((self.n_players,), (self.n_runs, self.n_players)):
            raise ValueError(
                f"{name} must have shape ({self.n_players},) or ({self.n_runs}, {self.n_players}), got {times.shape}"
            )
        high = self.horizon if allow_horizon else self.horizon - 1
        if times.min() < 0 or times.max() > high:
            where = "[0, T] (T = never)" if allow_horizon else "[0, T)"
            raise ValueError(
                f"{name} must lie in {where} with T={self.horizon}, got values in [{times.min()}, {times.max()}]"
            )
        return np.broadcast_to(times, (self.n_runs, self.n_players)).astype(np.int64).copy()

    def present(self, t: int) -> np.ndarray:
        """``(R, N)`` booleans: the players in the market at step ``t``."""
        segment = int(np.searchsorted(self._event_times, t, side="right"))
        if segment != self._present_segment:
            self._present = (self.arrival <= t) & (t < self.departure)
            self._present_segment = segment
        return self._present

    def stable_partner(self, t: int) -> tuple[np.ndarray, np.ndarray]:
        """Player-optimal stable matching of the players present at ``t`` and each player's utility in it."""
        segment = int(np.searchsorted(self._event_times, t, side="right"))
        if segment != self._stable_segment:
            present = self.present(t)
            for r in range(self.n_runs):
                self._stable[r] = stable_matching(self.utilities[r], self.arm_rank[r], present[r])
            matched = self._stable >= 0
            safe = np.where(matched, self._stable, 0)
            self._optimal = np.where(matched, np.take_along_axis(self.utilities, safe[..., None], -1)[..., 0], 0.0)
            self._stable_segment = segment
        return self._stable, self._optimal

    def resolve(self, arms: np.ndarray, priority: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Each arm accepts its favourite proposer: ``(accepted (R, N), winners (R, K))``.

        Args:
            arms: ``(R, N)`` proposed arm per player, ``-1`` for no proposal.
            priority: ``(R, N)`` acceptance order of each proposal (lower wins, ties to the lower player
                index); default the arms' true ranks.
        """
        onehot = arms[..., None] == self._arm_ids  # (R, N, K)
        if priority is None:
            scores = np.where(onehot, self._rank_pk, np.inf)
        else:
            scores = np.where(onehot, priority[..., None], np.inf)
        winners = np.argmin(scores, axis=1)  # (R, K): first minimum = lowest player index on ties
        winners = np.where(onehot.any(axis=1), winners, -1)
        accepted = (arms >= 0) & (np.take_along_axis(winners, np.maximum(arms, 0), 1) == self._player_ids)
        return accepted, winners

    def rewards(self, arms: np.ndarray, accepted: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Noisy rewards of accepted proposals and their mean utilities, both ``(R, N)`` (0 elsewhere)."""
        safe = np.where(accepted, arms, 0)
        means = np.where(accepted, np.take_along_axis(self.utilities, safe[..., None], -1)[..., 0], 0.0)
        return self._noisy(means, accepted), means

    def arm_rewards(self, arms: np.ndarray, accepted: np.ndarray) -> np.ndarray:
        """Two-sided markets: the noisy reward each accepting arm gets from its player, ``(R, N)`` (0 elsewhere)."""
        safe = np.where(accepted, arms, 0)
        runs = np.arange(self.n_runs)[:, None]
        means = np.where(accepted, self.arm_utilities[runs, safe, np.arange(self.n_players)[None, :]], 0.0)
        return self._noisy(means, accepted)

    def _noisy(self, means: np.ndarray, mask: np.ndarray) -> np.ndarray:
        if self.noise == "bernoulli":
            draws = (self.rng.random(means.shape) < means).astype(float)
        else:
            draws = means + self.noise_std * self.rng.standard_normal(means.shape)
        return np.where(mask, draws, 0.0)

    @property
    def sub_gaussian(self) -> float:
        """The reward noise's sub-Gaussian scale (``noise_std``, or 1/2 for Bernoulli rewards)."""
        return 0.5 if self.noise == "bernoulli" else self.noise_std
