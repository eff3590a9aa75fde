"""Policy learning from a learned reward, with reward-model retraining during learning (R4's online protocol).

:func:`run_online` follows the structure of the official ``train_online.py``: a SAC agent (stable-baselines3)
acts in the environment wrapped by :class:`~lightning_icml26.data.rl.envs.RewardReplacementWrapper`; at the
timesteps of ``query_schedule`` a query of segments is drawn from the agent's recent experience, rated by the
simulated teacher, the reward model is refitted on all ratings so far with a Lightning ``Trainer``, and the SAC
replay buffer is relabelled with the new (normalised) reward. The final policy is scored by its **true** episode
return.

Simplifications (documented deviations): query segments are random windows of recent experience (the paper also
picks windows of maximal predicted reward and stratifies by predicted return); the simulated teacher rates by
quantile bins over all segments rated so far (the paper uses fixed or "dynamic" return bins per task); the
schedule and budget are scaled down for CPU runs.
"""

from __future__ import annotations

from collections.abc import Sequence
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

__all__ = ["fit_reward_model", "reward_function", "run_online"]


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
def run_online(
    env_id: str = "Pendulum-v1",
    loss: str = "rmse",
    num_classes: int = 5,
    num_ratings: int = 100,
    query_schedule: Sequence[int] = (0, 1000, 2000, 3000, 4000),
    total_timesteps: int = 10_000,
    segment_length: int = 50,
    reward_steps: int = 500,
    label_noise: float = 0.0,
    ensemble_size: int = 3,
    hidden: int = 64,
    depth: int = 2,
    lr: float = 3e-4,
    batch_size: int = 64,
    learning_starts: int = 1000,
    eval_episodes: int = 5,
    num_heldout: int = 200,
    sac_kwargs: dict[str, Any] | None = None,
    env_kwargs: dict[str, Any] | None = None,
    seed: int = 0,
    run_dir: str | None = None,
) -> dict[str, Any]:
    """Learn a policy with SAC from a reward learned from ratings, refitting the reward during learning.

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

    Returns:
        Summary figures: mean/std true episode return of the final policy, the rank correlations of the final
        reward model on held-out segments, ratings used and time steps.

    Raises:
        ValueError: for an unknown loss or a bad schedule/budget.
    """
    gym = require("gymnasium", "rl", "R4 policy learning")
    sb3 = require("stable_baselines3", "rl", "R4 policy learning (SAC)")
    BaseCallback = require("stable_baselines3.common.callbacks", "rl", "R4 policy learning").BaseCallback

    if loss not in ("rmse", "rbrl", "bradley_terry", "true_reward"):
        raise ValueError(f"loss must be one of 'rmse', 'rbrl', 'bradley_terry', 'true_reward', got {loss!r}")
    schedule = sorted(int(s) for s in query_schedule)
    if not schedule or schedule[0] != 0 or schedule[-1] >= total_timesteps:
        raise ValueError(f"query_schedule must start at 0 and stay below total_timesteps, got {list(query_schedule)}")
    per_query = num_ratings // len(schedule)
    if per_query < 2:
        raise ValueError(f"num_ratings={num_ratings} gives fewer than 2 ratings per query over {len(schedule)} queries")
    seed_everything(seed, workers=True, verbose=False)
    env_kwargs = dict(env_kwargs or {})
    rng = np.random.default_rng(seed)
    figures: dict[str, Any] = {"env_id": env_id, "loss": loss, "seed": seed, "timesteps": total_timesteps}

    if loss == "true_reward":
        agent = sb3.SAC("MlpPolicy", gym.make(env_id, **env_kwargs), learning_starts=learning_starts, seed=seed,
                        verbose=0, **(sac_kwargs or {}))  # fmt: skip
        agent.learn(total_timesteps=total_timesteps)
        returns = _evaluate(agent, env_id, eval_episodes, seed, env_kwargs)
        figures.update(true_return_mean=float(np.mean(returns)), true_return_std=float(np.std(returns)), ratings=0)
        return figures

    heldout = collect_segments(env_id, num_heldout, segment_length, seed=seed + 7919, env_kwargs=env_kwargs)
    pool = collect_segments(env_id, per_query, segment_length, seed=seed, env_kwargs=env_kwargs)
    model = R4RewardModel(
        heldout.obs.shape[-1], heldout.act.shape[-1], loss=loss, num_classes=num_classes, ensemble_size=ensemble_size,
        hidden=hidden, depth=depth, optimizer=lambda p: torch.optim.Adam(p, lr=lr),
    )  # fmt: skip
    state: dict[str, Any] = {"pool": pool, "trainer": None, "fits": 0}

    def refit() -> None:
        dm = RatingDataModule(
            state["pool"], loss=loss, num_classes=num_classes, num_ratings=len(state["pool"]), num_heldout=0,
            label_noise=label_noise, batch_size=batch_size, items_per_epoch=batch_size * 10,
            seed=seed * 1000 + state["fits"],
        )  # fmt: skip
        state["trainer"] = fit_reward_model(model, dm, max_steps=reward_steps, default_root_dir=run_dir)
        state["fits"] += 1

    refit()
    wrapper = RewardReplacementWrapper(gym.make(env_id, **env_kwargs), reward_function(model), history=20_000)
    agent = sb3.SAC("MlpPolicy", wrapper, learning_starts=learning_starts, seed=seed, verbose=0, **(sac_kwargs or {}))
    score = reward_function(model)

    class _Requery(BaseCallback):  # type: ignore[misc,valid-type]
        def _on_step(self) -> bool:
            if self.num_timesteps not in schedule[1:]:
                return True
            obs, act, rew, starts = wrapper.transitions()
            fresh = segments_from_transitions(obs, act, rew, starts, segment_length, per_query, rng)
            state["pool"] = Segments.cat([state["pool"], fresh])
            refit()
            buffer = agent.replay_buffer
            size = buffer.buffer_size if buffer.full else buffer.pos
            if size:
                flat_obs = buffer.observations[:size].reshape(size * buffer.n_envs, -1)
                flat_act = agent.policy.unscale_action(buffer.actions[:size].reshape(size * buffer.n_envs, -1))
                buffer.rewards[:size] = score(flat_obs, flat_act).reshape(size, buffer.n_envs)
            return True

    agent.learn(total_timesteps=total_timesteps, callback=_Requery())
    returns = _evaluate(agent, env_id, eval_episodes, seed, env_kwargs)
    model.eval()
    with torch.no_grad():
        predicted = model.segment_returns(heldout.obs, heldout.act).mean(0).numpy()
    figures.update(
        true_return_mean=float(np.mean(returns)),
        true_return_std=float(np.std(returns)),
        heldout_kendall_tau=float(kendalltau(predicted, heldout.true_returns.numpy()).statistic),
        heldout_spearman=float(spearmanr(predicted, heldout.true_returns.numpy()).statistic),
        ratings=len(state["pool"]),
        reward_fits=state["fits"],
    )
    if run_dir is not None:
        path = Path(run_dir) / "reward_model.ckpt"
        path.parent.mkdir(parents=True, exist_ok=True)
        state["trainer"].save_checkpoint(path)
        figures["reward_checkpoint"] = str(path)
    return figures
