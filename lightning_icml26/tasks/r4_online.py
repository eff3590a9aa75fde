"""Policy learning from a learned reward, with reward-model retraining during learning (R4's online protocol).

:func:`run_online` (settings: :class:`R4OnlineConfig`) follows the structure of the official ``train_online.py``: a
SAC agent (stable-baselines3) acts in the environment wrapped by
:class:`~lightning_icml26.data.rl.envs.RewardReplacementWrapper`; at the timesteps of ``query_schedule`` a query of
segments is drawn from the agent's recent experience, rated by the simulated teacher, the reward model is refitted
on all ratings so far with a Lightning ``Trainer``, and the SAC replay buffer is relabelled with the new
(normalised) reward. The final policy is scored by its **true** episode return.

Simplifications (documented deviations): query segments are random windows of recent experience (the paper also
picks windows of maximal predicted reward and stratifies by predicted return); the simulated teacher rates by
quantile bins over all segments rated so far (the paper uses fixed or "dynamic" return bins per task); the
schedule and budget are scaled down for CPU runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from lightning.pytorch import Trainer, seed_everything
from scipy.stats import kendalltau, spearmanr

from lightning_icml26._optional import require
from lightning_icml26._requirements import Requirement, declare_requirements
from lightning_icml26.data.rl.envs import RewardReplacementWrapper, collect_segments, segments_from_transitions
from lightning_icml26.data.rl.ratings import RatingDataModule, Segments
from lightning_icml26.modules.r4 import R4RewardModel
from lightning_icml26.tasks._config import TaskConfig

__all__ = ["R4OnlineConfig", "fit_reward_model", "reward_function", "run_online"]


def reward_function(model: R4RewardModel, normalize: bool = True) -> Any:
    """A numpy callable ``(obs, act) -> reward`` (scalar for one step, array for a batch) from the model.

    Example:
        >>> fn = reward_function(R4RewardModel(3, 1, num_classes=3, hidden=8, depth=1))
        >>> isinstance(fn(np.zeros(3), np.zeros(1)), float), fn(np.zeros((5, 3)), np.zeros((5, 1))).shape
        (True, (5,))
    """

    def fn(obs: np.ndarray, act: np.ndarray) -> Any:
        o = torch.as_tensor(np.asarray(obs, dtype=np.float32), device=model.device)
        a = torch.as_tensor(np.asarray(act, dtype=np.float32), device=model.device)
        r = model.reward(o, a, normalize=normalize).cpu().numpy()
        return float(r) if r.ndim == 0 else r

    return fn


def fit_reward_model(
    model: R4RewardModel, datamodule: RatingDataModule, max_steps: int, default_root_dir: str | None = None
) -> Any:
    """Fit ``model`` for ``max_steps`` optimizer steps on ``datamodule`` with a quiet Lightning ``Trainer``.

    Returns:
        The trainer (e.g. for ``trainer.save_checkpoint``).

    Example:
        >>> pool = Segments(torch.randn(30, 4, 3), torch.randn(30, 4, 1), torch.randn(30))
        >>> dm = RatingDataModule(pool, num_classes=3, num_ratings=30, num_heldout=0, batch_size=8)
        >>> trainer = fit_reward_model(R4RewardModel(3, 1, num_classes=3, hidden=8, depth=1), dm, max_steps=2)
        >>> trainer.global_step
        2
    """
    trainer = Trainer(
        max_steps=max_steps, max_epochs=-1, logger=False, enable_checkpointing=False, enable_progress_bar=False,
        enable_model_summary=False, num_sanity_val_steps=0, limit_val_batches=0, accelerator="cpu", devices=1,
        default_root_dir=default_root_dir,
    )  # fmt: skip
    trainer.fit(model, datamodule=datamodule)
    return trainer


def _evaluate(policy_model: Any, env_id: str, episodes: int, seed: int, env_kwargs: dict[str, Any]) -> list[float]:
    gym = require("gymnasium", "rl", "R4 policy evaluation")
    env = gym.make(env_id, **env_kwargs)
    returns = []
    for episode in range(episodes):
        obs, _ = env.reset(seed=10_000 + seed * 1000 + episode)
        done, total = False, 0.0
        while not done:
            action, _ = policy_model.predict(obs, deterministic=True)
            obs, reward, terminated, truncated, _ = env.step(action)
            total += float(reward)
            done = bool(terminated or truncated)
        returns.append(total)
    env.close()
    return returns


@declare_requirements(
    lambda args: [
        Requirement("gymnasium", "rl", "the environment"),
        Requirement("stable_baselines3", "rl", "SAC"),
        *([Requirement("mujoco", "mujoco", str(args["env_id"]))] if "Cheetah" in str(args["env_id"]) else []),
    ]
)
@dataclass(frozen=True)
class R4OnlineConfig(TaskConfig):
    """Settings of :func:`run_online` (the ``r4_pendulum`` and ``r4_halfcheetah`` recipes); ``run()`` runs it.

    ``loss="true_reward"`` runs the same SAC on the environment reward (an oracle reference, no ratings).

    Args:
        env_id: gymnasium environment id (continuous actions, for SAC).
        loss: ``"rmse"`` (R4), ``"rbrl"``, ``"bradley_terry"`` or ``"true_reward"``.
        num_classes: rating classes of the simulated teacher.
        num_ratings: total rating budget, split evenly over the queries of ``query_schedule``.
        query_schedule: timesteps at which a query is made and the reward refitted; the first must be 0
            (segments of a random-action policy before learning starts).
        total_timesteps: SAC environment steps.
        segment_length: steps per rated segment.
        reward_steps: optimizer steps per reward refit.
        label_noise: teacher's probability of a wrong rating.
        ensemble_size: reward networks in the ensemble.
        hidden: hidden width of the reward networks.
        depth: hidden layers of the reward networks.
        lr: Adam learning rate of the reward model.
        batch_size: reward-model batch size.
        learning_starts: SAC random-action warm-up steps.
        eval_episodes: deterministic evaluation episodes of the final policy (true return).
        num_heldout: random-policy segments to score the final reward's rank correlation with the true return.
        sac_kwargs: extra keyword arguments of ``stable_baselines3.SAC``.
        env_kwargs: keyword arguments of ``gymnasium.make``.
        seed: global seed.
        run_dir: if given, the final reward model checkpoint is written to ``run_dir/reward_model.ckpt``.

    Raises:
        ValueError: for an unknown loss or a bad schedule/budget, naming the field.

    Example:
        >>> R4OnlineConfig(query_schedule=[0, 500], total_timesteps=1000).ratings_per_query
        50
        >>> R4OnlineConfig(query_schedule=[100])
        Traceback (most recent call last):
        ...
        ValueError: query_schedule must start at 0 and stay below total_timesteps (10000), got [100]
    """

    env_id: str = "Pendulum-v1"
    loss: str = "rmse"
    num_classes: int = 5
    num_ratings: int = 100
    query_schedule: Sequence[int] = (0, 1000, 2000, 3000, 4000)
    total_timesteps: int = 10_000
    segment_length: int = 50
    reward_steps: int = 500
    label_noise: float = 0.0
    ensemble_size: int = 3
    hidden: int = 64
    depth: int = 2
    lr: float = 3e-4
    batch_size: int = 64
    learning_starts: int = 1000
    eval_episodes: int = 5
    num_heldout: int = 200
    sac_kwargs: dict[str, Any] | None = None
    env_kwargs: dict[str, Any] | None = None
    seed: int = 0
    run_dir: str | None = None

    def __post_init__(self) -> None:
        if self.loss not in LOSSES:
            raise ValueError(f"loss must be one of {LOSSES}, got {self.loss!r}")
        schedule = tuple(sorted(int(s) for s in self.query_schedule))
        if not schedule or schedule[0] != 0 or schedule[-1] >= self.total_timesteps:
            raise ValueError(
                f"query_schedule must start at 0 and stay below total_timesteps ({self.total_timesteps}), "
                f"got {list(self.query_schedule)}"
            )
        object.__setattr__(self, "query_schedule", schedule)
        if self.ratings_per_query < 2:
            raise ValueError(
                f"num_ratings={self.num_ratings} gives fewer than 2 ratings per query over {len(schedule)} queries"
            )

    @property
    def ratings_per_query(self) -> int:
        """The ratings of one query: ``num_ratings`` split evenly over the schedule."""
        return self.num_ratings // len(self.query_schedule)

    def run(self) -> dict[str, Any]:
        """Run :func:`run_online` with these settings."""
        return run_online(self)


LOSSES = ("rmse", "rbrl", "bradley_terry", "true_reward")


def _sac(config: R4OnlineConfig, env: Any) -> Any:
    sb3 = require("stable_baselines3", "rl", "R4 policy learning (SAC)")
    return sb3.SAC("MlpPolicy", env, learning_starts=config.learning_starts, seed=config.seed, verbose=0,
                   **(config.sac_kwargs or {}))  # fmt: skip


class _OnlineRun:
    """The reward model, the rated pool and the refits of one online run."""

    def __init__(self, config: R4OnlineConfig, obs_dim: int, act_dim: int) -> None:
        c = config
        self.config, self.trainer, self.fits = config, None, 0
        self.pool = collect_segments(c.env_id, c.ratings_per_query, c.segment_length, seed=c.seed,
                                     env_kwargs=dict(c.env_kwargs or {}))  # fmt: skip
        self.model = R4RewardModel(
            obs_dim, act_dim, loss=c.loss, num_classes=c.num_classes, ensemble_size=c.ensemble_size,
            hidden=c.hidden, depth=c.depth, optimizer=lambda p: torch.optim.Adam(p, lr=c.lr),
        )  # fmt: skip
        self.rng = np.random.default_rng(c.seed)

    def refit(self) -> None:
        """Refit the reward model on every rating so far (a fresh simulated rating of the whole pool)."""
        c = self.config
        dm = RatingDataModule(
            self.pool, loss=c.loss, num_classes=c.num_classes, num_ratings=len(self.pool), num_heldout=0,
            label_noise=c.label_noise, batch_size=c.batch_size, items_per_epoch=c.batch_size * 10,
            seed=c.seed * 1000 + self.fits,
        )  # fmt: skip
        self.trainer = fit_reward_model(self.model, dm, max_steps=c.reward_steps, default_root_dir=c.run_dir)
        self.fits += 1

    def requery(self, wrapper: RewardReplacementWrapper, agent: Any) -> None:
        """Rate fresh segments of recent experience, refit, and relabel the agent's replay buffer."""
        obs, act, rew, starts = wrapper.transitions()
        c = self.config
        fresh = segments_from_transitions(obs, act, rew, starts, c.segment_length, c.ratings_per_query, self.rng)
        self.pool = Segments.cat([self.pool, fresh])
        self.refit()
        buffer, score = agent.replay_buffer, reward_function(self.model)
        size = buffer.buffer_size if buffer.full else buffer.pos
        if size:
            flat_obs = buffer.observations[:size].reshape(size * buffer.n_envs, -1)
            flat_act = agent.policy.unscale_action(buffer.actions[:size].reshape(size * buffer.n_envs, -1))
            buffer.rewards[:size] = score(flat_obs, flat_act).reshape(size, buffer.n_envs)


def _learn_online(config: R4OnlineConfig, run: _OnlineRun) -> Any:
    """SAC on the learned reward, with a requery at each scheduled timestep; returns the agent."""
    gym = require("gymnasium", "rl", "R4 policy learning")
    base = require("stable_baselines3.common.callbacks", "rl", "R4 policy learning").BaseCallback
    run.refit()
    env = gym.make(config.env_id, **dict(config.env_kwargs or {}))
    wrapper = RewardReplacementWrapper(env, reward_function(run.model), history=20_000)
    agent = _sac(config, wrapper)
    later = set(config.query_schedule[1:])

    class Requery(base):  # type: ignore[misc,valid-type]
        def _on_step(self) -> bool:
            if self.num_timesteps in later:
                run.requery(wrapper, agent)
            return True

    agent.learn(total_timesteps=config.total_timesteps, callback=Requery())
    return agent


def run_online(config: R4OnlineConfig) -> dict[str, Any]:
    """Learn a policy with SAC from a reward learned from ratings, refitting the reward during learning.

    Args:
        config: the settings (:class:`R4OnlineConfig`).

    Returns:
        Summary figures: mean/std true episode return of the final policy, the rank correlations of the final
        reward model on held-out segments, ratings used and time steps.

    Example:
        >>> config = R4OnlineConfig(num_ratings=8, query_schedule=[0, 60], total_timesteps=120, segment_length=10,
        ...     reward_steps=2, ensemble_size=1, hidden=8, depth=1, learning_starts=50, eval_episodes=1,
        ...     num_heldout=8, sac_kwargs={"batch_size": 16}, env_kwargs={"max_episode_steps": 20})
        >>> out = run_online(config)
        >>> out["ratings"], out["reward_fits"], -1.0 <= out["heldout_kendall_tau"] <= 1.0
        (8, 2, True)
    """
    c = config
    seed_everything(c.seed, workers=True, verbose=False)
    env_kwargs = dict(c.env_kwargs or {})
    figures: dict[str, Any] = {"env_id": c.env_id, "loss": c.loss, "seed": c.seed, "timesteps": c.total_timesteps}
    if c.loss == "true_reward":
        agent = _sac(c, require("gymnasium", "rl", "R4 policy learning").make(c.env_id, **env_kwargs))
        agent.learn(total_timesteps=c.total_timesteps)
        returns = _evaluate(agent, c.env_id, c.eval_episodes, c.seed, env_kwargs)
        return figures | {"true_return_mean": float(np.mean(returns)), "true_return_std": float(np.std(returns)),
                          "ratings": 0}  # fmt: skip
    heldout = collect_segments(c.env_id, c.num_heldout, c.segment_length, seed=c.seed + 7919, env_kwargs=env_kwargs)
    run = _OnlineRun(c, heldout.obs.shape[-1], heldout.act.shape[-1])
    agent = _learn_online(c, run)
    returns = _evaluate(agent, c.env_id, c.eval_episodes, c.seed, env_kwargs)
    run.model.eval()
    with torch.no_grad():
        predicted = run.model.segment_returns(heldout.obs, heldout.act).mean(0).numpy()
    figures.update(
        true_return_mean=float(np.mean(returns)),
        true_return_std=float(np.std(returns)),
        heldout_kendall_tau=float(kendalltau(predicted, heldout.true_returns.numpy()).statistic),
        heldout_spearman=float(spearmanr(predicted, heldout.true_returns.numpy()).statistic),
        ratings=len(run.pool),
        reward_fits=run.fits,
    )
    if c.run_dir is not None and run.trainer is not None:
        path = Path(c.run_dir) / "reward_model.ckpt"
        path.parent.mkdir(parents=True, exist_ok=True)
        run.trainer.save_checkpoint(path)
        figures["reward_checkpoint"] = str(path)
    return figures
