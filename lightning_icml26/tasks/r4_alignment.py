"""R4 against its baselines at equal human effort: rank alignment of learned rewards with the true return.

:func:`r4_alignment_task` (settings: :class:`R4AlignmentConfig`) is the offline alignment test of the official
code, as a grid: per seed one pool of random-policy segments is collected; its held-out part scores every reward
(Kendall's tau and Spearman's rho between learned and true segment returns). Every method of
:data:`R4_ALIGNMENT_METHODS` trains the same reward ensemble with :func:`fit_reward_model` (a Lightning
``Trainer``) for the same number of Adam steps. :func:`summarise_alignment` reduces the runs to per-cell means with
R4's paired margin; :func:`random_policy_returns` and :func:`summarise_policy` serve the short policy runs of
:func:`~lightning_icml26.tasks.run_online`. This module imports ``gymnasium`` (the ``rl`` extra).
"""

from __future__ import annotations

import itertools
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from lightning.pytorch import seed_everything
from scipy.stats import kendalltau, spearmanr

from lightning_icml26._optional import require
from lightning_icml26.data.rl.envs import collect_segments, state_action_box
from lightning_icml26.data.rl.ratings import RatingDataModule, Segments
from lightning_icml26.modules.r4 import R4RewardModel
from lightning_icml26.tasks._config import TaskConfig
from lightning_icml26.tasks.r4_online import fit_reward_model

__all__ = [
    "R4AlignmentConfig",
    "R4_ALIGNMENT_METHODS",
    "R4_CORE_METHODS",
    "R4_PAPER_BASELINES",
    "alignment_score",
    "r4_alignment_task",
    "random_policy_returns",
    "summarise_alignment",
    "summarise_policy",
]

log = logging.getLogger(__name__)

#: Reward-learning methods of the grid: the reward model's loss and its options, the ratings' preference source.
R4_ALIGNMENT_METHODS: dict[str, dict[str, Any]] = {
    "r4": {"loss": "rmse"},
    "r4_ot": {"loss": "rmse", "soft_rank": "ot"},
    "r4_ood": {"loss": "rmse", "ood_coeff": 0.1},
    "rbrl": {"loss": "rbrl"},
    "bt_queries": {"loss": "bradley_terry", "preference_source": "queries"},
    "bt_ratings": {"loss": "bradley_terry", "preference_source": "ratings"},
}
#: The paper's baselines (RbRL's rating loss, Bradley-Terry on as many preference queries as ratings).
R4_PAPER_BASELINES = ("rbrl", "bt_queries")
#: Methods that run in every (budget, noise) cell; the others run at the largest budget only.
R4_CORE_METHODS = ("r4", *R4_PAPER_BASELINES)
_ABLATIONS = ("bt_ratings",)


@dataclass(frozen=True)
class R4AlignmentConfig(TaskConfig):
    """Settings of :func:`r4_alignment_task`: one grid of rating budgets x label noise x methods x seeds.

    Attributes:
        env_id: the gymnasium environment whose random-policy segments (length 50) are rated.
        seeds: one segment pool per seed.
        steps: Adam steps per reward model (lr 3e-4, 64 items per batch, 3 MLPs 64 wide and 2 deep).
        budgets: rating budgets (human answers); non-core methods run at the largest only.
        noises: teacher label-noise levels (a wrong rating is a uniformly drawn other class).
        methods: names of :data:`R4_ALIGNMENT_METHODS`; must include :data:`R4_CORE_METHODS`.
        num_classes: rating classes.
        num_heldout: held-out segments per pool (the same for every budget and method).

    Example:
        >>> R4AlignmentConfig(methods=("r4",))
        Traceback (most recent call last):
        ...
        ValueError: R4AlignmentConfig.methods must include 'rbrl', got ('r4',)
    """

    env_id: str = "Pendulum-v1"
    seeds: Sequence[int] = (0, 1, 2, 3, 4)
    steps: int = 500
    budgets: Sequence[int] = (25, 50, 100)
    noises: Sequence[float] = (0.0, 0.1)
    methods: Sequence[str] = tuple(R4_ALIGNMENT_METHODS)
    num_classes: int = 5
    num_heldout: int = 500

    def __post_init__(self) -> None:
        for name in self.methods:
            if name not in R4_ALIGNMENT_METHODS:
                raise ValueError(f"R4AlignmentConfig.methods: unknown {name!r}, allowed {list(R4_ALIGNMENT_METHODS)}")
        for name in R4_CORE_METHODS:
            if name not in self.methods:
                raise ValueError(f"R4AlignmentConfig.methods must include {name!r}, got {tuple(self.methods)}")
        if not self.budgets or min(self.budgets) < 1:
            raise ValueError(f"R4AlignmentConfig.budgets must be positive integers, got {self.budgets}")

    def run(self) -> dict[str, Any]:
        """Run :func:`r4_alignment_task` with these settings."""
        return r4_alignment_task(self)


def alignment_score(model: R4RewardModel, heldout: Segments) -> tuple[float, float]:
    """Kendall's tau and Spearman's rho between the ensemble-mean predicted and the true segment returns.

    Example:
        >>> _ = torch.manual_seed(0)
        >>> segs = Segments(torch.randn(12, 5, 3), torch.randn(12, 5, 1), torch.randn(12))
        >>> tau, rho = alignment_score(R4RewardModel(3, 1, ensemble_size=1, hidden=8, depth=1), segs)
        >>> -1.0 <= tau <= 1.0 and -1.0 <= rho <= 1.0
        True
    """
    model.eval()
    with torch.no_grad():
        pred = model.segment_returns(heldout.obs, heldout.act).mean(0).numpy()
    true = heldout.true_returns.numpy()
    return float(kendalltau(pred, true).statistic), float(spearmanr(pred, true).statistic)


def _fit_cell(
    config: R4AlignmentConfig, pool: Segments, cell: tuple[str, int, float, int], box: Any
) -> tuple[float, float]:
    method, budget, noise, seed = cell
    spec = R4_ALIGNMENT_METHODS[method]
    seed_everything(seed, verbose=False)
    dm = RatingDataModule(
        pool, loss=spec["loss"], num_classes=config.num_classes, num_ratings=budget, num_heldout=config.num_heldout,
        label_noise=noise, batch_size=64, items_per_epoch=64 * 10,
        preference_source=spec.get("preference_source", "ratings"), seed=seed,
    )  # fmt: skip
    ood = {"ood_coeff": spec["ood_coeff"], "ood_low": box[0], "ood_high": box[1]} if "ood_coeff" in spec else {}
    model = R4RewardModel(
        pool.obs.shape[-1], pool.act.shape[-1], loss=spec["loss"], num_classes=config.num_classes, ensemble_size=3,
        hidden=64, depth=2, soft_rank=spec.get("soft_rank", "pav"), **ood,
    )  # fmt: skip
    fit_reward_model(model, dm, max_steps=config.steps)
    assert dm.heldout is not None
    return alignment_score(model, dm.heldout)


def r4_alignment_task(config: R4AlignmentConfig) -> dict[str, Any]:
    """Fit every (seed, budget, noise, method) reward on one segment pool per seed; one run record per fit.

    Args:
        config: the settings (:class:`R4AlignmentConfig`).

    Returns:
        ``{"runs": [...]}``: per fit the env, seed, budget, noise, method, ``kendall_tau``, ``spearman`` and
        ``fit_s`` (wall seconds); reduce with :func:`summarise_alignment`.

    Example:
        >>> out = R4AlignmentConfig(seeds=(0,), steps=2, budgets=(10,), noises=(0.0,),
        ...     methods=("r4", "rbrl", "bt_queries"), num_heldout=12).run()
        >>> [r["method"] for r in out["runs"]]
        ['r4', 'rbrl', 'bt_queries']
    """
    box = state_action_box(config.env_id)
    runs = []
    for seed in config.seeds:
        pool = collect_segments(config.env_id, config.num_heldout + 2 * max(config.budgets), 50, seed=seed)
        for budget, noise in itertools.product(config.budgets, config.noises):
            methods = [m for m in config.methods if m in R4_CORE_METHODS or budget == max(config.budgets)]
            for method in methods:
                start = time.perf_counter()
                tau, rho = _fit_cell(config, pool, (method, budget, noise, seed), box)
                runs.append({"env": config.env_id, "seed": seed, "budget": budget, "noise": noise, "method": method,
                             "kendall_tau": tau, "spearman": rho, "fit_s": time.perf_counter() - start})  # fmt: skip
                log.info("%s seed=%d budget=%d noise=%s %s tau=%.3f", config.env_id, seed, budget, noise, method, tau)
    return {"runs": runs}


def _sem(values: np.ndarray) -> float:
    return float(values.std(ddof=1) / np.sqrt(len(values))) if len(values) > 1 else 0.0


def _alignment_row(cell: tuple[str, int, float, str], runs: list[dict[str, Any]], r4_tau: np.ndarray) -> dict[str, Any]:
    env, budget, noise, method = cell
    tau = np.array([r["kendall_tau"] for r in runs])
    paired = r4_tau - tau if len(r4_tau) == len(tau) else np.array([np.nan])
    role = "paper baseline" if method in R4_PAPER_BASELINES else "ablation" if method in _ABLATIONS else "R4"
    return {
        "env": env, "budget": budget, "noise": noise, "method": method, "seeds": len(runs),
        "kendall_tau": float(tau.mean()), "tau_std": float(tau.std(ddof=1)) if len(tau) > 1 else 0.0,
        "tau_sem": _sem(tau), "spearman": float(np.mean([r["spearman"] for r in runs])),
        "r4-method tau": float(paired.mean()), "paired sem": _sem(paired),
        "r4 wins (seeds)": "—" if method == "r4" else f"{int((paired >= 0).sum())}/{len(paired)}", "role": role,
    }  # fmt: skip


def summarise_alignment(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Mean, std and sem over seeds per (env, budget, noise, method), with R4's paired tau margin over each method.

    Example:
        >>> runs = [{"env": "E", "budget": 5, "noise": 0.0, "method": m, "kendall_tau": t, "spearman": t}
        ...         for m, t in (("r4", 0.5), ("r4", 0.7), ("rbrl", 0.2), ("rbrl", 0.8))]
        >>> [(r["method"], round(r["kendall_tau"], 2), round(r["r4-method tau"], 2), r["r4 wins (seeds)"])
        ...  for r in summarise_alignment(runs)]
        [('r4', 0.6, 0.0, '—'), ('rbrl', 0.5, 0.1, '1/2')]
    """
    rows = []
    for env, budget, noise in dict.fromkeys((r["env"], r["budget"], r["noise"]) for r in runs):
        per = {m: [r for r in runs if (r["env"], r["budget"], r["noise"], r["method"]) == (env, budget, noise, m)]
               for m in R4_ALIGNMENT_METHODS}  # fmt: skip
        r4_tau = np.array([r["kendall_tau"] for r in per["r4"]]) if per["r4"] else np.array([np.nan])
        rows += [_alignment_row((env, budget, noise, m), mine, r4_tau) for m, mine in per.items() if mine]
    return rows


def random_policy_returns(env_id: str, episodes: int, seed: int) -> list[float]:
    """True episode returns of a uniformly random policy, on the evaluation resets of ``run_online`` (for scale).

    Example:
        >>> len(random_policy_returns("Pendulum-v1", episodes=1, seed=0))
        1
    """
    gym = require("gymnasium", "rl", "random-policy returns")
    env = gym.make(env_id)
    env.action_space.seed(seed)
    returns = []
    for episode in range(episodes):
        env.reset(seed=10_000 + seed * 1000 + episode)  # the reset seeds of run_online's final evaluation
        done, total = False, 0.0
        while not done:
            _, reward, terminated, truncated, _ = env.step(env.action_space.sample())
            total += float(reward)
            done = bool(terminated or truncated)
        returns.append(total)
    env.close()
    return returns


def summarise_policy(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Mean and standard deviation over seeds of the final policy's true return, per (env, reward).

    Example:
        >>> runs = [{"env": "E", "reward": "rmse", "true_return_mean": v, "timesteps": 10, "wall_s": 1.0}
        ...         for v in (1.0, 3.0)]
        >>> row = summarise_policy(runs)[0]
        >>> row["true_return"], round(row["return_std"], 3), row["per_seed"]
        (2.0, 1.414, '1.0 / 3.0')
    """
    rows = []
    for env_id, reward in dict.fromkeys((r["env"], r["reward"]) for r in runs):
        mine = [r for r in runs if (r["env"], r["reward"]) == (env_id, reward)]
        ret = np.array([r["true_return_mean"] for r in mine])
        rows.append({"env": env_id, "reward": reward, "seeds": len(mine), "true_return": float(ret.mean()),
                     "return_std": float(ret.std(ddof=1)) if len(ret) > 1 else 0.0,
                     "per_seed": " / ".join(f"{v:.1f}" for v in ret), "timesteps": mine[0]["timesteps"],
                     "wall_s": float(np.mean([r["wall_s"] for r in mine]))})  # fmt: skip
    return rows
