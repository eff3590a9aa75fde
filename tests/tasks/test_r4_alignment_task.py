"""R4's offline alignment grid: its reductions against hand-computed values, its cell rule and its checks."""

from __future__ import annotations

import math

import numpy as np
import pytest

pytest.importorskip("gymnasium")

from lightning_icml26.tasks import (
    R4AlignmentConfig,
    random_policy_returns,
    summarise_alignment,
    summarise_policy,
)


def _run(method: str, seed: int, tau: float) -> dict[str, object]:
    return {"env": "E", "budget": 5, "noise": 0.1, "method": method, "seed": seed, "kendall_tau": tau, "spearman": tau}


def test_summarise_alignment_pairs_r4_with_each_method_by_seed() -> None:
    runs = [_run("r4", 0, 0.4), _run("r4", 1, 0.9), _run("bt_queries", 0, 0.5), _run("bt_queries", 1, 0.2)]
    rows = {r["method"]: r for r in summarise_alignment(runs)}
    margins = np.array([0.4 - 0.5, 0.9 - 0.2])
    assert rows["bt_queries"]["r4-method tau"] == pytest.approx(margins.mean())
    assert rows["bt_queries"]["paired sem"] == pytest.approx(margins.std(ddof=1) / math.sqrt(2))
    assert rows["bt_queries"]["r4 wins (seeds)"] == "1/2"
    assert rows["bt_queries"]["role"] == "paper baseline"
    assert rows["r4"]["role"] == "R4"
    assert rows["r4"]["tau_std"] == pytest.approx(np.std([0.4, 0.9], ddof=1))


def test_summarise_policy_groups_by_env_and_reward() -> None:
    runs = [{"env": "E", "reward": r, "true_return_mean": v, "timesteps": 8, "wall_s": 2.0}
            for r, v in (("rmse", -4.0), ("true_reward", -1.0), ("rmse", -2.0))]  # fmt: skip
    rows = summarise_policy(runs)
    assert [(r["reward"], r["seeds"], r["true_return"]) for r in rows] == [("rmse", 2, -3.0), ("true_reward", 1, -1.0)]


def test_random_policy_returns_are_pendulum_returns() -> None:
    returns = random_policy_returns("Pendulum-v1", episodes=2, seed=3)
    # a Pendulum episode is 200 steps with a per-step reward in [-(pi^2 + 0.1 * 8^2 + 0.001 * 2^2), 0]
    assert len(returns) == 2
    assert all(-200 * (math.pi**2 + 6.4 + 0.004) <= r <= 0 for r in returns)
    assert returns == random_policy_returns("Pendulum-v1", episodes=2, seed=3)


def test_task_runs_extra_methods_at_the_largest_budget_only() -> None:
    methods = ("r4", "rbrl", "bt_queries", "r4_ot")
    config = R4AlignmentConfig(seeds=(0,), steps=2, budgets=(4, 8), noises=(0.0,), methods=methods, num_heldout=10)
    runs = config.run()["runs"]
    assert [(r["budget"], r["method"]) for r in runs] == [
        (4, "r4"), (4, "rbrl"), (4, "bt_queries"), (8, "r4"), (8, "rbrl"), (8, "bt_queries"), (8, "r4_ot"),
    ]  # fmt: skip
    assert all(-1.0 <= r["kendall_tau"] <= 1.0 for r in runs)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [({"methods": ("r4", "rbrl")}, "must include 'bt_queries'"), ({"methods": ("r4", "nope")}, "unknown 'nope'"),
     ({"budgets": (0,)}, "budgets must be positive")],
)  # fmt: skip
def test_config_rejects_bad_settings(kwargs: dict[str, object], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        R4AlignmentConfig(**kwargs)  # type: ignore[arg-type]
