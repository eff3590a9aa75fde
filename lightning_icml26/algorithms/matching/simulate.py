"""``run_market``: simulate a policy in a market and keep regret, collision and stability curves.

The regret is the player-optimal stable pseudo-regret: at each step a present player is charged the utility
of its partner in the player-optimal stable matching of the players present, minus the utility it obtained
(0 when rejected). Curves are kept at checkpoint steps (cumulative), so ``T = 10^6`` fits in memory;
``record=True`` also keeps every step (for small ``T``), which the metrics in
:mod:`lightning_icml26.metrics` reproduce.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from lightning_icml26.algorithms.matching.market import MatchingMarketEnv
from lightning_icml26.algorithms.matching.policy import MatchingPolicy
from lightning_icml26.algorithms.matching.stable import blocking_pairs

__all__ = ["MarketRun", "log_checkpoints", "run_market"]


def log_checkpoints(horizon: int, per_decade: int = 20) -> np.ndarray:
    """Log-spaced steps in ``[1, horizon]`` (always including ``horizon``).

    Example:
        >>> log_checkpoints(1000, per_decade=1).tolist()
        [1, 10, 100, 1000]
    """
    if horizon < 1:
        raise ValueError(f"horizon must be >= 1, got {horizon}")
    n = max(int(np.ceil(np.log10(horizon) * per_decade)) + 1, 2)
    return np.unique(np.round(np.logspace(0, np.log10(horizon), n)).astype(np.int64))


@dataclass
class MarketRun:
    """Cumulative curves of one simulation: ``checkpoints (C,)`` and per-run arrays.

    Attributes:
        regret: ``(R, N)`` cumulative stable regret per player at ``T``.
        regret_curve: ``(R, C)`` total regret over players at each checkpoint.
        collisions: ``(R, C)`` cumulative rejected proposals; ``proposals`` the cumulative proposals.
        unstable_steps: ``(R, C)`` cumulative steps whose realised matching had a blocking pair.
        final_matching_stable: ``(R,)`` whether the last step's realised matching was stable.
        steps: with ``record=True``, per-step ``arms``, ``accepted``, ``optimal``, ``obtained``, ``present``
            and ``unstable`` arrays (``(T, R, N)`` or ``(T, R)``).
    """

    checkpoints: np.ndarray
    regret: np.ndarray
    regret_curve: np.ndarray
    collisions: np.ndarray
    proposals: np.ndarray
    unstable_steps: np.ndarray
    final_matching_stable: np.ndarray
    steps: dict[str, np.ndarray] = field(default_factory=dict)


def _stability(env: MatchingMarketEnv, matching: np.ndarray, present: np.ndarray) -> np.ndarray:
    return np.asarray(~blocking_pairs(env.utilities, env.arm_rank, matching, present).any(axis=(-2, -1)))


def run_market(
    env: MatchingMarketEnv, policy: MatchingPolicy, *, checkpoints: np.ndarray | None = None, record: bool = False
) -> MarketRun:
    """Run ``policy`` in ``env`` for ``env.horizon`` steps.

    Args:
        env: the market (its ``two_sided`` flag decides whether the arms' acceptance comes from the policy).
        policy: any :class:`MatchingPolicy`; two-sided markets need one with an arm side (``WaySE2S``).
        checkpoints: steps (1-based counts of elapsed steps) at which to keep the curves; default log-spaced.
        record: keep every step (memory ``O(T R N)``: small horizons only).

    Example:
        >>> from lightning_icml26.algorithms.matching import WaySE
        >>> run = run_market(MatchingMarketEnv(2, 2, horizon=500, gap=0.3, seed=1), WaySE(seed=1), record=True)
        >>> run.steps["arms"].shape
        (500, 1, 2)
        >>> bool(np.isclose(run.regret.sum(), (run.steps["optimal"] - run.steps["obtained"]).sum()))
        True
    """
    horizon = env.horizon
    checkpoints = log_checkpoints(horizon) if checkpoints is None else np.asarray(checkpoints, dtype=np.int64)
    if checkpoints.ndim != 1 or checkpoints.size == 0 or checkpoints.min() < 1 or checkpoints.max() > horizon:
        raise ValueError(f"checkpoints must be a non-empty 1-D array of steps in [1, {horizon}]")
    policy.reset(env)
    if env.two_sided and not policy.two_sided:
        raise ValueError(
            f"policy {policy.name!r} learns on the player side only; a two_sided market needs an arm side (WaySE2S)"
        )
    shape = (env.n_runs, env.n_players)
    regret, collisions, proposals, unstable = (
        np.zeros(shape),
        np.zeros(env.n_runs),
        np.zeros(env.n_runs),
        np.zeros(env.n_runs),
    )
    curves = {k: np.zeros((env.n_runs, checkpoints.size)) for k in ("regret", "collisions", "proposals", "unstable")}
    kept: dict[str, list[np.ndarray]] = {
        k: [] for k in ("arms", "accepted", "optimal", "obtained", "present", "unstable")
    }
    marks = set(checkpoints.tolist())
    column = 0
    last_matching = np.full(shape, -2)
    last_present = np.zeros(shape, bool)
    stable_now = np.ones(env.n_runs, bool)
    for t in range(horizon):
        present = env.present(t)
        local_time = np.where(present, t - env.arrival, -1)
        arms = policy.act(t, local_time, present)
        if np.any(arms[~present] >= 0) or np.any(arms >= env.n_arms):
            raise RuntimeError(f"policy {policy.name!r} proposed for an absent player or to an arm outside [0, K)")
        priority = policy.arm_priority(t, arms) if env.two_sided else None
        accepted, winners = env.resolve(arms, priority)
        rewards, obtained = env.rewards(arms, accepted)
        policy.update(arms, accepted, rewards, local_time, present, winners)
        if env.two_sided:
            policy.arm_update(t, arms, accepted, env.arm_rewards(arms, accepted))
        _, optimal = env.stable_partner(t)
        optimal = np.where(present, optimal, 0.0)
        regret += optimal - obtained
        n_prop = (arms >= 0).sum(axis=1)
        proposals += n_prop
        collisions += n_prop - accepted.sum(axis=1)
        matching = np.where(accepted, arms, -1)
        changed = np.any(matching != last_matching, axis=1) | np.any(present != last_present, axis=1)
        if changed.any():
            stable_now[changed] = _stability(env, matching, present)[changed]
            last_matching, last_present = matching, present
        unstable += ~stable_now
        if record:
            for key, value in (
                ("arms", arms),
                ("accepted", accepted),
                ("optimal", optimal),
                ("obtained", obtained),
                ("present", present),
                ("unstable", ~stable_now),
            ):
                kept[key].append(np.array(value))
        if t + 1 in marks:
            for key, value in (
                ("regret", regret.sum(axis=1)),
                ("collisions", collisions),
                ("proposals", proposals),
                ("unstable", unstable),
            ):
                curves[key][:, column] = value
            column += 1
    return MarketRun(
        checkpoints=checkpoints,
        regret=regret,
        regret_curve=curves["regret"],
        collisions=curves["collisions"],
        proposals=curves["proposals"],
        unstable_steps=curves["unstable"],
        final_matching_stable=stable_now.copy(),
        steps={k: np.stack(v) for k, v in kept.items()} if record else {},
    )
