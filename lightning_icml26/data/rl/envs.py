"""Gymnasium pieces for R4: segment collection and a wrapper that replaces the reward by a learned one.

This module imports ``gymnasium`` (the ``rl`` extra) at the top; :mod:`lightning_icml26.data.rl` loads it
lazily, on first access to one of its names.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Any, SupportsFloat

import gymnasium as gym
import numpy as np
import torch

from lightning_icml26.data.rl.ratings import Segments

__all__ = ["RewardReplacementWrapper", "collect_segments", "segments_from_transitions", "state_action_box"]

RewardFn = Callable[[np.ndarray, np.ndarray], float]


def _flat_action(action: Any, space: gym.Space) -> np.ndarray:
    if isinstance(space, gym.spaces.Discrete):
        one_hot = np.zeros(int(space.n), dtype=np.float32)
        one_hot[int(action)] = 1.0
        return one_hot
    return np.asarray(action, dtype=np.float32).reshape(-1)


def collect_segments(
    env_id: str,
    num_segments: int,
    segment_length: int = 50,
    seed: int = 0,
    policy: Callable[[np.ndarray], Any] | None = None,
    action_repeat_max: int = 8,
    env_kwargs: dict[str, Any] | None = None,
) -> Segments:
    """Roll out a behaviour policy in a gymnasium environment and cut non-overlapping segments of equal length.

    The default behaviour policy draws a random action and holds it for a random 1..``action_repeat_max`` steps,
    which gives segments of widely varying quality (this project's offline alignment protocol, docs/r4.md). Episodes are
    cut into consecutive windows of ``segment_length``; a trailing partial window is dropped.

    Args:
        env_id: a registered gymnasium id, e.g. ``"Pendulum-v1"`` or ``"HalfCheetah-v5"``.
        num_segments: segments to return.
        segment_length: steps per segment.
        seed: seeds the environment resets and the policy's random draws.
        policy: optional callable ``obs -> action`` replacing the default.
        action_repeat_max: longest hold of a random action for the default policy.
        env_kwargs: keyword arguments of ``gymnasium.make``.

    Returns:
        A :class:`~lightning_icml26.data.rl.ratings.Segments` pool (actions of discrete spaces one-hot).

    Example:
        >>> seg = collect_segments("Pendulum-v1", num_segments=3, segment_length=10)
        >>> seg.obs.shape, seg.act.shape, seg.true_returns.shape
        (torch.Size([3, 10, 3]), torch.Size([3, 10, 1]), torch.Size([3]))
    """
    for name, value in (("num_segments", num_segments), ("segment_length", segment_length)):
        if not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    env = gym.make(env_id, **(env_kwargs or {}))
    rng = np.random.default_rng(seed)
    env.action_space.seed(seed)
    obs_list: list[torch.Tensor] = []
    act_list: list[torch.Tensor] = []
    returns: list[float] = []
    episode = 0
    try:
        while len(returns) < num_segments:
            obs, _ = env.reset(seed=seed * 100_003 + episode)
            episode += 1
            buffer_obs: list[np.ndarray] = []
            buffer_act: list[np.ndarray] = []
            buffer_rew: list[float] = []
            action, hold = None, 0
            done = False
            while not done and len(returns) < num_segments:
                if policy is not None:
                    action = policy(obs)
                elif hold <= 0:
                    action, hold = env.action_space.sample(), int(rng.integers(1, action_repeat_max + 1))
                hold -= 1
                next_obs, reward, terminated, truncated, _ = env.step(action)
                buffer_obs.append(np.asarray(obs, dtype=np.float32).reshape(-1))
                buffer_act.append(_flat_action(action, env.action_space))
                buffer_rew.append(float(reward))
                obs = next_obs
                done = bool(terminated or truncated)
                if len(buffer_rew) == segment_length:
                    obs_list.append(torch.from_numpy(np.stack(buffer_obs)))
                    act_list.append(torch.from_numpy(np.stack(buffer_act)))
                    returns.append(float(np.sum(buffer_rew)))
                    buffer_obs, buffer_act, buffer_rew = [], [], []
    finally:
        env.close()
    return Segments.from_list(obs_list, act_list, returns)


def segments_from_transitions(
    obs: np.ndarray, act: np.ndarray, rewards: np.ndarray, episode_starts: np.ndarray, segment_length: int,
    num_segments: int, rng: np.random.Generator,
) -> Segments:  # fmt: skip
    """Random windows of ``segment_length`` steps that do not cross an episode boundary.

    Args:
        obs: ``(N, obs_dim)`` observations in time order.
        act: ``(N, act_dim)`` actions.
        rewards: ``(N,)`` true rewards.
        episode_starts: ``(N,)`` booleans, True where a new episode starts.
        segment_length: window length.
        num_segments: windows to draw (with replacement over start positions).
        rng: numpy generator.

    Returns:
        The windows as :class:`~lightning_icml26.data.rl.ratings.Segments`.

    Example:
        >>> n = 30
        >>> seg = segments_from_transitions(np.zeros((n, 2)), np.zeros((n, 1)), np.arange(n, dtype=float),
        ...     np.arange(n) % 10 == 0, 5, 4, np.random.default_rng(0))
        >>> bool(((seg.true_returns - 10) % 5 == 0).all())  # sums of 5 consecutive rewards of one episode
        True
    """
    starts = np.flatnonzero(episode_starts)
    episode_id = np.cumsum(episode_starts) - 1
    valid = [
        i for i in range(len(rewards) - segment_length + 1)
        if episode_id[i] == episode_id[i + segment_length - 1] and episode_id[i] >= 0
    ]  # fmt: skip
    if not valid:
        raise ValueError(
            f"no window of segment_length={segment_length} fits inside one episode ({len(starts)} episode starts, "
            f"{len(rewards)} transitions)"
        )
    pick = rng.choice(valid, size=num_segments, replace=len(valid) < num_segments)
    windows = [np.arange(i, i + segment_length) for i in pick]
    return Segments(
        torch.as_tensor(np.stack([obs[w] for w in windows]), dtype=torch.float32),
        torch.as_tensor(np.stack([act[w] for w in windows]), dtype=torch.float32),
        torch.as_tensor([rewards[w].sum() for w in windows], dtype=torch.float32),
    )


class RewardReplacementWrapper(gym.Wrapper):
    """Replace the environment reward by ``reward_fn(obs, action)``; everything else passes through unchanged.

    The reward is computed from the observation the action was taken in (``r(s_t, a_t)``, as R4's reward
    network). The environment's own reward goes into ``info["true_reward"]``. With ``history`` > 0 the wrapper
    also keeps the last ``history`` transitions (observation, flat action, true reward, episode start) for
    querying new segments during policy learning (:meth:`transitions`).

    Args:
        env: the environment to wrap.
        reward_fn: callable ``(obs, flat_action) -> float`` (numpy arrays), e.g. from
            :func:`~lightning_icml26.tasks.r4_online.reward_function`.
        history: number of recent transitions to remember (0: none).

    Example:
        >>> env = RewardReplacementWrapper(gym.make("Pendulum-v1"), lambda o, a: 42.0)
        >>> _ = env.reset(seed=0)
        >>> _, reward, _, _, info = env.step(env.action_space.sample())
        >>> reward, "true_reward" in info
        (42.0, True)
    """

    def __init__(self, env: gym.Env, reward_fn: RewardFn, history: int = 0) -> None:
        super().__init__(env)
        if not callable(reward_fn):
            raise TypeError(f"reward_fn must be callable (obs, action) -> float, got {type(reward_fn).__name__}")
        if history < 0:
            raise ValueError(f"history must be non-negative, got {history}")
        self.reward_fn = reward_fn
        self._last_obs: Any = None
        self._new_episode = True
        self._history: deque[tuple[np.ndarray, np.ndarray, float, bool]] = deque(maxlen=history or None)
        self._keep_history = history > 0

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        """Reset the inner environment and remember the first observation."""
        obs, info = self.env.reset(seed=seed, options=options)
        self._last_obs = obs
        self._new_episode = True
        return obs, info

    def step(self, action: Any) -> tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]:
        """Step the inner environment; return its output with the reward replaced."""
        if self._last_obs is None:
            raise RuntimeError("call reset() before step()")
        obs, true_reward, terminated, truncated, info = self.env.step(action)
        flat_obs = np.asarray(self._last_obs, dtype=np.float32).reshape(-1)
        flat_act = _flat_action(action, self.env.action_space)
        reward = float(self.reward_fn(flat_obs, flat_act))
        info = dict(info)
        info["true_reward"] = float(true_reward)
        if self._keep_history:
            self._history.append((flat_obs, flat_act, float(true_reward), self._new_episode))
        self._new_episode = False
        self._last_obs = obs
        return obs, reward, terminated, truncated, info

    def transitions(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The remembered ``(obs, act, true_rewards, episode_starts)`` in time order."""
        if not self._history:
            raise ValueError("no transitions remembered; construct the wrapper with history > 0 and step it")
        obs, act, rew, starts = zip(*self._history, strict=False)
        starts_arr = np.array(starts, dtype=bool)
        starts_arr[0] = True  # the oldest remembered step opens a (possibly truncated) episode
        return np.stack(obs), np.stack(act), np.array(rew, dtype=np.float64), starts_arr


def state_action_box(env_id: str, env_kwargs: dict[str, Any] | None = None) -> tuple[list[float], list[float]]:
    """The declared observation and action ranges of a gymnasium environment, concatenated (observation first).

    This is the box R4's out-of-distribution regulariser samples from (``R4RewardModel(ood_low=..., ood_high=...)``;
    the official code reads the same ranges from its environment configs). Discrete actions are one-hot, so
    their range is ``[0, 1]`` per action.

    Args:
        env_id: a registered gymnasium id with a ``Box`` observation space.
        env_kwargs: keyword arguments of ``gymnasium.make``.

    Returns:
        ``(low, high)`` lists of ``obs_dim + act_dim`` floats.

    Raises:
        ValueError: if the observation space is not a ``Box`` or a bound is infinite (the box must then be
            chosen by the user, e.g. from data quantiles).

    Example:
        >>> low, high = state_action_box("Pendulum-v1")
        >>> low, high
        ([-1.0, -1.0, -8.0, -2.0], [1.0, 1.0, 8.0, 2.0])
    """
    env = gym.make(env_id, **(env_kwargs or {}))
    try:
        obs_space, act_space = env.observation_space, env.action_space
        if not isinstance(obs_space, gym.spaces.Box):
            raise ValueError(f"env_id {env_id!r} has a {type(obs_space).__name__} observation space; a Box is needed")
        low = [float(v) for v in np.asarray(obs_space.low).reshape(-1)]
        high = [float(v) for v in np.asarray(obs_space.high).reshape(-1)]
        if isinstance(act_space, gym.spaces.Discrete):
            low += [0.0] * int(act_space.n)
            high += [1.0] * int(act_space.n)
        elif isinstance(act_space, gym.spaces.Box):
            low += [float(v) for v in np.asarray(act_space.low).reshape(-1)]
            high += [float(v) for v in np.asarray(act_space.high).reshape(-1)]
        else:
            raise ValueError(f"env_id {env_id!r} has a {type(act_space).__name__} action space; Box or Discrete needed")
    finally:
        env.close()
    if not (np.isfinite(low).all() and np.isfinite(high).all()):
        raise ValueError(
            f"env_id {env_id!r} declares infinite observation or action bounds; pass ood_low / ood_high yourself "
            "(for example quantiles of the collected segments)"
        )
    return low, high
