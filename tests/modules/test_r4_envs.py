"""R4 gymnasium pieces: segment collection, the reward-replacement wrapper, lazy imports, the recipe end to end."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests._support.skips import requires_module

pytestmark = requires_module("gymnasium")


def _pendulum_reward(obs: np.ndarray, act: np.ndarray) -> np.ndarray:
    # Independent closed form of Pendulum-v1's reward from the pre-step observation (cos, sin, thdot) and torque.
    theta = np.arctan2(obs[..., 1], obs[..., 0])
    u = np.clip(act[..., 0], -2.0, 2.0)
    return -(theta**2 + 0.1 * obs[..., 2] ** 2 + 0.001 * u**2)


def test_collect_segments_returns_match_closed_form() -> None:
    from lightning_icml26.data.rl import collect_segments

    seg = collect_segments("Pendulum-v1", num_segments=6, segment_length=20, seed=3)
    assert seg.obs.shape == (6, 20, 3)
    assert seg.act.shape == (6, 20, 1)
    ref = _pendulum_reward(seg.obs.numpy().astype(np.float64), seg.act.numpy().astype(np.float64)).sum(-1)
    np.testing.assert_allclose(seg.true_returns.numpy(), ref, rtol=1e-4, atol=1e-3)
    assert seg.true_returns.std() > 1.0  # the behaviour policy gives segments of different quality
    with pytest.raises(ValueError, match="segment_length"):
        collect_segments("Pendulum-v1", num_segments=2, segment_length=0)


def test_state_action_box_reads_the_declared_spaces() -> None:
    import gymnasium as gym

    from lightning_icml26.data.rl import state_action_box

    low, high = state_action_box("Pendulum-v1")
    env = gym.make("Pendulum-v1")
    expected_low = np.concatenate([env.observation_space.low, env.action_space.low])
    expected_high = np.concatenate([env.observation_space.high, env.action_space.high])
    np.testing.assert_allclose(low, expected_low)
    np.testing.assert_allclose(high, expected_high)
    low, high = state_action_box("MountainCar-v0")  # discrete actions: one-hot columns in [0, 1]
    assert low[2:] == [0.0, 0.0, 0.0]
    assert high[2:] == [1.0, 1.0, 1.0]
    with pytest.raises(ValueError, match="infinite observation or action bounds"):
        state_action_box("CartPole-v1")


def test_wrapper_passes_everything_but_the_reward() -> None:
    import gymnasium as gym

    from lightning_icml26.data.rl import RewardReplacementWrapper

    calls: list[tuple[np.ndarray, np.ndarray]] = []

    def reward_fn(obs: np.ndarray, act: np.ndarray) -> float:
        calls.append((obs.copy(), act.copy()))
        return float(obs.sum() * 10 + act.sum())

    plain = gym.make("Pendulum-v1")
    wrapped = RewardReplacementWrapper(gym.make("Pendulum-v1"), reward_fn, history=100)
    assert wrapped.observation_space == plain.observation_space
    assert wrapped.action_space == plain.action_space
    o1, i1 = plain.reset(seed=5)
    o2, i2 = wrapped.reset(seed=5)
    np.testing.assert_array_equal(o1, o2)
    assert i1 == i2
    rng = np.random.default_rng(0)
    true_rewards = []
    for _ in range(210):  # crosses the 200-step truncation
        action = rng.uniform(-2, 2, size=1).astype(np.float32)
        prev = o2
        o1, r1, t1, u1, i1 = plain.step(action)
        o2, r2, t2, u2, i2 = wrapped.step(action)
        np.testing.assert_array_equal(o1, o2)
        assert (t1, u1) == (t2, u2)
        assert {k: v for k, v in i2.items() if k != "true_reward"} == i1
        assert i2["true_reward"] == pytest.approx(float(r1))
        np.testing.assert_array_equal(calls[-1][0], np.asarray(prev, dtype=np.float32))
        assert r2 == pytest.approx(reward_fn(np.asarray(prev, np.float32), action))
        true_rewards.append(float(r1))
        if t1 or u1:
            o1, _ = plain.reset(seed=6)
            o2, _ = wrapped.reset(seed=6)
    obs, act, rew, starts = wrapped.transitions()
    assert obs.shape == (100, 3)
    assert np.allclose(rew, true_rewards[-100:])
    assert starts.sum() == 2  # oldest remembered step and the reset after step 200


def test_importing_modules_leaves_rl_libraries_unimported() -> None:
    code = (
        "import sys, lightning_icml26.modules, lightning_icml26.modules.r4, lightning_icml26.data.rl,"
        " lightning_icml26.tasks;"
        "print('gymnasium' in sys.modules, 'stable_baselines3' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False False"


@requires_module("stable_baselines3")
@pytest.mark.slow
def test_recipe_runs_end_to_end(tmp_path: Path) -> None:
    from lightning_icml26 import _recipes

    overrides = [
        "task.total_timesteps=400", "task.query_schedule=[0,250]", "task.learning_starts=100",
        "task.reward_steps=5", "task.eval_episodes=1", "task.num_heldout=20", "task.num_ratings=12",
        "task.num_classes=3", "task.segment_length=20", "task.hidden=16",
    ]  # fmt: skip
    cfg = _recipes.compose("r4_pendulum", overrides, run_dir=tmp_path)
    summary = _recipes.run(cfg)
    text = str(summary)
    assert "true_return_mean" in text
    assert "reward_fits" in text
    assert (tmp_path / "reward_model.ckpt").is_file()


@requires_module("mujoco")
def test_halfcheetah_segments_and_wrapper() -> None:
    import gymnasium as gym

    from lightning_icml26.data.rl import RewardReplacementWrapper, collect_segments

    seg = collect_segments("HalfCheetah-v5", num_segments=2, segment_length=10)
    assert seg.obs.shape == (2, 10, 17)
    assert seg.act.shape == (2, 10, 6)
    env = RewardReplacementWrapper(gym.make("HalfCheetah-v5"), lambda o, a: 0.0)
    env.reset(seed=0)
    _, reward, _, _, info = env.step(env.action_space.sample())
    assert reward == 0.0
    assert np.isfinite(info["true_reward"])


@requires_module("mujoco")
@requires_module("stable_baselines3")
@pytest.mark.slow
def test_halfcheetah_recipe_composes_and_runs(tmp_path: Path) -> None:
    from lightning_icml26 import _recipes

    overrides = [
        "task.total_timesteps=300", "task.query_schedule=[0,200]", "task.learning_starts=100",
        "task.reward_steps=3", "task.eval_episodes=1", "task.num_heldout=10", "task.num_ratings=12",
        "task.num_classes=3", "task.segment_length=20", "task.hidden=16", "task.depth=1",
    ]  # fmt: skip
    cfg = _recipes.compose("r4_halfcheetah", overrides, run_dir=tmp_path)
    assert cfg.task.env_id == "HalfCheetah-v5"
    summary = _recipes.run(cfg)
    text = str(summary)
    assert "HalfCheetah-v5" in text
    assert "reward_fits" in text
    assert (tmp_path / "reward_model.ckpt").is_file()
