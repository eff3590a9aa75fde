"""benchmarks/r4_reward.py policy part: schedule and order of the runs, partial results, summary, random returns."""

from __future__ import annotations

import argparse
import dataclasses
import importlib
from typing import Any

import numpy as np
import pytest

from tests._support.skips import requires_module

bench = importlib.import_module("benchmarks.r4_reward")


def _args(**kw: Any) -> argparse.Namespace:
    base = {"timesteps": 6000, "queries": 5, "learning_starts": None, "eval_episodes": 2, "num_classes": 5,
            "budgets": [25, 100], "steps": 500, "policy_rewards": ["rmse", "true_reward"]}  # fmt: skip
    base.update(kw)
    return argparse.Namespace(**base)


def test_policy_runs_scale_the_schedule_run_seed_major_and_report_each_run(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[dict[str, Any]] = []

    def fake_run_online(config: Any) -> dict[str, Any]:
        kw = {f.name: getattr(config, f.name) for f in dataclasses.fields(config)}
        calls.append(kw)
        return {"env_id": kw["env_id"], "loss": kw["loss"], "seed": kw["seed"], "timesteps": kw["total_timesteps"],
                "true_return_mean": float(10 * kw["seed"] + len(calls))}  # fmt: skip

    monkeypatch.setattr(bench, "run_online", fake_run_online)
    monkeypatch.setattr(bench, "random_policy_returns", lambda env_id, episodes, seed: [-1.0 - seed] * episodes)
    seen: list[int] = []
    runs = bench.policy_runs(["E"], [0, 1], _args(), lambda r: seen.append(len(r)))
    # seed-major: both rewards of seed 0, its random policy, then seed 1
    assert [(c["seed"], c["loss"]) for c in calls] == [(0, "rmse"), (0, "true_reward"), (1, "rmse"), (1, "true_reward")]
    assert [r["reward"] for r in runs] == ["rmse", "true_reward", "random_policy"] * 2
    assert seen == [1, 2, 3, 4, 5, 6]  # partial results after every finished run
    # the Pendulum schedule (0, T/10, ..., 4T/10), warm-up T/16, reward refits of steps/2, the largest budget
    assert calls[0]["query_schedule"] == (0, 600, 1200, 1800, 2400)
    assert calls[0]["learning_starts"] == 375
    assert calls[0]["reward_steps"] == 250
    assert calls[0]["num_ratings"] == 100
    assert bench.policy_runs(["E"], [0], _args(timesteps=8000, learning_starts=50, policy_rewards=["rmse"]))
    assert calls[-1]["query_schedule"] == (0, 800, 1600, 2400, 3200)
    assert calls[-1]["learning_starts"] == 50


def test_summarise_policy_means_and_sample_std_over_seeds() -> None:
    runs = [
        {"env": "E", "reward": r, "seed": s, "true_return_mean": v, "timesteps": t, "wall_s": 1.0 + s}
        for r, t, values in (("rmse", 100, (1.0, 2.0, 6.0)), ("random_policy", 0, (-5.0, -7.0, -6.0)))
        for s, v in enumerate(values)
    ]
    rows = {row["reward"]: row for row in bench.summarise_policy(runs)}
    assert rows["rmse"]["true_return"] == pytest.approx(3.0)
    assert rows["rmse"]["return_std"] == pytest.approx(np.std([1.0, 2.0, 6.0], ddof=1))
    assert rows["rmse"]["per_seed"] == "1.0 / 2.0 / 6.0"
    assert rows["rmse"]["wall_s"] == pytest.approx(2.0)
    assert rows["random_policy"]["true_return"] == pytest.approx(-6.0)
    assert rows["random_policy"]["seeds"] == 3


@requires_module("gymnasium")
def test_random_returns_on_pendulum_are_reproducible_and_within_the_reward_bounds() -> None:
    first = bench.random_policy_returns("Pendulum-v1", 3, seed=0)
    assert first == bench.random_policy_returns("Pendulum-v1", 3, seed=0)
    assert first != bench.random_policy_returns("Pendulum-v1", 3, seed=1)
    # each step's reward lies in [-(pi^2 + 0.1 * 8^2 + 0.001 * 2^2), 0]; episodes are 200 steps
    worst_step = np.pi**2 + 0.1 * 64 + 0.001 * 4
    assert all(-200 * worst_step <= r < 0 for r in first)
    assert np.mean(first) < -500  # a random torque does not hold the pendulum up
