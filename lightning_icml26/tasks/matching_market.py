"""``matching_market_task`` (recipe ``wayse_market``): Way-SE-inspired policies and baselines in one market.

No Trainer: every policy runs on the same seeded markets (``seeds`` independent runs simulated together)
and the task writes the mean regret curves (``regret_curves.csv``), a log-log plot (``regret.png``, with the
``plots`` extra) and ``summary.json``.
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from lightning_icml26._optional import require_pyplot
from lightning_icml26._requirements import Requirement, declare_requirements
from lightning_icml26.algorithms.matching import POLICIES, MatchingMarketEnv, run_market
from lightning_icml26.tasks._config import TaskConfig

__all__ = ["MatchingMarketConfig", "matching_market_task"]


def _check_policies(policies: Sequence[str], two_sided: bool) -> list[str]:
    names = list(policies)
    unknown = [name for name in names if name not in POLICIES]
    if not names or unknown:
        raise ValueError(f"policies must be a non-empty list of {sorted(POLICIES)}, got {names!r}")
    one_sided = [name for name in names if not POLICIES[name].two_sided]
    if two_sided and one_sided:
        arm_side = sorted(name for name, policy in POLICIES.items() if policy.two_sided)
        raise ValueError(f"two_sided=True markets need policies with an arm side ({arm_side}); {one_sided} have none")
    return names


def _plot(curves: dict[str, tuple[np.ndarray, np.ndarray]], path: Path, title: str) -> None:
    plt = require_pyplot()
    fig, ax = plt.subplots(figsize=(5.5, 4))
    for name, (steps, regret) in curves.items():
        keep = regret > 0
        ax.loglog(steps[keep], regret[keep], label=POLICIES[name].name)
    ax.set_xlabel("step T")
    ax.set_ylabel("cumulative stable regret (all players)")
    ax.set_title(title)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


@declare_requirements(lambda args: [Requirement("matplotlib", "plots", "regret.png")] if args["plot"] else [])
@dataclass(frozen=True)
class MatchingMarketConfig(TaskConfig):
    """Settings of :func:`matching_market_task` (the ``wayse_market`` recipe); ``run()`` runs it.

    Args:
        out_dir: where the CSV, plot and summary go (nothing written when ``None``).
        n_players: ``N``.
        n_arms: ``K >= N``.
        horizon: steps ``T``.
        gap: minimum utility gap.
        noise: ``"gaussian"`` or ``"bernoulli"`` rewards.
        noise_std: Gaussian reward noise.
        arrivals: ``static``, ``uniform``, ``staggered`` or ``poisson`` (see
            :class:`~lightning_icml26.algorithms.matching.MatchingMarketEnv`).
        departures: half the players (in expectation) leave in the second half.
        two_sided: arms learn their preferences too.
        policies: names from :data:`~lightning_icml26.algorithms.matching.POLICIES`; two-sided markets take
            ``["wayse2s"]`` only (the baselines have no arm side).
        seeds: independent runs (markets and rewards).
        plot: write ``regret.png`` (needs matplotlib).
        seed: the first market seed.

    Example:
        >>> MatchingMarketConfig(policies=["wayse"]).policies
        ('wayse',)
        >>> MatchingMarketConfig(seeds=0)
        Traceback (most recent call last):
        ...
        ValueError: seeds must be an int >= 1, got 0
    """

    out_dir: str | Path | None = None
    n_players: int = 5
    n_arms: int = 5
    horizon: int = 100_000
    gap: float = 0.2
    noise: str = "gaussian"
    noise_std: float = 0.2
    arrivals: str = "static"
    departures: bool = False
    two_sided: bool = False
    policies: Sequence[str] = ("wayse", "etc_gs", "ucb_gs", "ca_ucb", "etgs")
    seeds: int = 5
    plot: bool = True
    seed: int = 0

    def __post_init__(self) -> None:
        object.__setattr__(self, "policies", tuple(_check_policies(self.policies, self.two_sided)))
        if isinstance(self.seeds, bool) or not isinstance(self.seeds, int) or self.seeds < 1:
            raise ValueError(f"seeds must be an int >= 1, got {self.seeds!r}")

    def run(self) -> dict[str, Any]:
        """Run :func:`matching_market_task` with these settings."""
        return matching_market_task(self)


def _simulate(config: MatchingMarketConfig, name: str) -> tuple[dict[str, float], Any]:
    """One policy on the config's markets: its summary figures and the run."""
    c = config
    env = MatchingMarketEnv(
        c.n_players, c.n_arms, c.horizon, gap=c.gap, noise=c.noise, noise_std=c.noise_std, two_sided=c.two_sided,
        arrivals=c.arrivals, departures=c.departures, n_runs=c.seeds, seed=c.seed,
    )  # fmt: skip
    run = run_market(env, POLICIES[name](seed=c.seed))
    total = run.regret.sum(axis=1)
    figures = {
        "regret": float(total.mean()),
        "regret_std": float(total.std(ddof=1)) if c.seeds > 1 else 0.0,
        "regret_per_log_t": float(total.mean() / math.log(c.horizon)),
        "collision_rate": float(run.collisions[:, -1].sum() / max(run.proposals[:, -1].sum(), 1)),
        "unstable_fraction": float(run.unstable_steps[:, -1].mean() / c.horizon),
    }
    return figures, run


def _write(config: MatchingMarketConfig, summary: dict[str, Any], runs: dict[str, Any]) -> None:
    """``regret_curves.csv`` (mean and spread per checkpoint), ``summary.json`` and ``regret.png``."""
    out = Path(str(config.out_dir))
    out.mkdir(parents=True, exist_ok=True)
    with (out / "regret_curves.csv").open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=["policy", "step", "regret_mean", "regret_std"])
        writer.writeheader()
        for name, run in runs.items():
            mean_curve, spread = run.regret_curve.mean(axis=0), run.regret_curve.std(axis=0)
            for step, mean, std in zip(run.checkpoints, mean_curve, spread, strict=True):
                writer.writerow(
                    {"policy": name, "step": int(step), "regret_mean": float(mean), "regret_std": float(std)}
                )
    (out / "summary.json").write_text(json.dumps(summary, indent=2))
    if config.plot:
        curves = {name: (run.checkpoints, run.regret_curve.mean(axis=0)) for name, run in runs.items()}
        _plot(curves, out / "regret.png", f"N={config.n_players}, K={config.n_arms}, {config.arrivals} arrivals")


def matching_market_task(config: MatchingMarketConfig) -> dict[str, Any]:
    """Simulate each policy on the same markets and report regret, collisions and stability violations.

    Args:
        config: the settings (:class:`MatchingMarketConfig`).

    Returns:
        ``{policy: {"regret", "regret_std", "regret_per_log_t", "collision_rate", "unstable_fraction"}}``.

    Example:
        >>> config = MatchingMarketConfig(n_players=2, n_arms=2, horizon=500, policies=["wayse", "etc_gs"], seeds=2)
        >>> out = matching_market_task(config)
        >>> sorted(out), out["wayse"]["regret"] >= 0
        (['etc_gs', 'wayse'], True)
    """
    summary: dict[str, Any] = {}
    runs: dict[str, Any] = {}
    for name in config.policies:
        summary[name], runs[name] = _simulate(config, name)
    if config.out_dir is not None:
        _write(config, summary, runs)
    return summary
