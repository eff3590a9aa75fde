"""Matching-market metrics against direct numpy sums of a simulated run, and 2-rank DDP against one process."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from lightning_icml26.algorithms.matching import MatchingMarketEnv, WaySE, blocking_pairs, run_market
from lightning_icml26.metrics import CollisionRate, StabilityViolationRate, StableRegret
from lightning_icml26.metrics.functional import collision_rate, stability_violation_rate, stable_regret
from tests._support.distributed import run_on_ranks


@pytest.fixture(scope="module")
def recorded() -> tuple[MatchingMarketEnv, dict[str, np.ndarray]]:
    env = MatchingMarketEnv(3, 4, horizon=600, gap=0.2, noise_std=0.2, seed=2, arrival_times=np.array([0, 50, 120]))
    run = run_market(env, WaySE(seed=1), record=True)
    assert run.steps["unstable"].any()
    assert run.collisions[0, -1] > 0
    return env, {
        **run.steps,
        "regret": run.regret[0],
        "collisions": run.collisions[0, -1],
        "proposals": run.proposals[0, -1],
    }


def test_metrics_equal_numpy_sums_of_the_run(recorded: tuple[MatchingMarketEnv, dict[str, np.ndarray]]) -> None:
    env, steps = recorded
    optimal, obtained = torch.tensor(steps["optimal"][:, 0]), torch.tensor(steps["obtained"][:, 0])
    present = torch.tensor(steps["present"][:, 0])
    arms, accepted = torch.tensor(steps["arms"][:, 0]), torch.tensor(steps["accepted"][:, 0])
    matching = torch.where(accepted, arms, torch.full_like(arms, -1))

    direct_regret = ((steps["optimal"][:, 0] - steps["obtained"][:, 0]) * steps["present"][:, 0]).sum(0)
    np.testing.assert_allclose(stable_regret(optimal, obtained, present).numpy(), direct_regret, rtol=1e-12)
    np.testing.assert_allclose(direct_regret, steps["regret"], rtol=1e-12)  # the simulator's own accumulator
    metric = StableRegret(n_players=3)
    for chunk in range(0, 600, 250):
        metric.update(optimal[chunk : chunk + 250], obtained[chunk : chunk + 250], present[chunk : chunk + 250])
    np.testing.assert_allclose(metric.compute().numpy(), direct_regret, rtol=1e-12)

    proposing = steps["arms"][:, 0] >= 0
    direct_collisions = (proposing & ~steps["accepted"][:, 0]).sum() / proposing.sum()
    assert collision_rate(arms, accepted).item() == pytest.approx(direct_collisions)
    assert direct_collisions == pytest.approx(steps["collisions"] / steps["proposals"])
    rate = CollisionRate()
    rate.update(arms[:300], accepted[:300])
    rate.update(arms[300:], accepted[300:])
    assert rate.compute().item() == pytest.approx(direct_collisions)

    unstable = np.array(
        [
            blocking_pairs(env.utilities[0], env.arm_rank[0], m, p).any()
            for m, p in zip(matching.numpy(), steps["present"][:, 0], strict=True)
        ]
    )
    np.testing.assert_array_equal(unstable, steps["unstable"][:, 0])
    utilities, ranks = torch.tensor(env.utilities[0]), torch.tensor(env.arm_rank[0])
    assert stability_violation_rate(matching, utilities, ranks, present).item() == pytest.approx(unstable.mean())
    violations = StabilityViolationRate()
    violations.update(matching[:100], utilities, ranks, present[:100])
    violations.update(matching[100:], utilities, ranks, present[100:])
    assert violations.compute().item() == pytest.approx(unstable.mean())


def test_metric_input_errors_name_the_argument() -> None:
    with pytest.raises(ValueError, match="obtained"):
        stable_regret(torch.zeros(4, 2), torch.zeros(4, 3))
    with pytest.raises(ValueError, match="accepted"):
        collision_rate(torch.tensor([[-1, 0]]), torch.tensor([[True, True]]))
    with pytest.raises(ValueError, match="arm_rank"):
        StabilityViolationRate().update(torch.tensor([[0, 1]]), torch.zeros(2, 3), torch.zeros(2, 2, dtype=torch.long))
    with pytest.raises(ValueError, match="matching"):
        stability_violation_rate(torch.tensor([[5, 0]]), torch.zeros(2, 2), torch.tensor([[0, 1], [1, 0]]))
    with pytest.raises(ValueError, match="n_players"):
        StableRegret(n_players=0)


def _ddp_metrics(
    rank: int, world_size: int, steps: dict[str, np.ndarray], utilities: np.ndarray, ranks: np.ndarray
) -> list[torch.Tensor]:
    rows = slice(rank, None, world_size)
    arms, accepted = torch.tensor(steps["arms"][rows, 0]), torch.tensor(steps["accepted"][rows, 0])
    regret, rate = StableRegret(n_players=3), CollisionRate()
    violations = StabilityViolationRate()
    regret.update(
        torch.tensor(steps["optimal"][rows, 0]),
        torch.tensor(steps["obtained"][rows, 0]),
        torch.tensor(steps["present"][rows, 0]),
    )
    rate.update(arms, accepted)
    matching = torch.where(accepted, arms, -1)
    violations.update(matching, torch.tensor(utilities), torch.tensor(ranks), torch.tensor(steps["present"][rows, 0]))
    return [regret.compute(), rate.compute(), violations.compute()]


@pytest.mark.distributed
def test_two_rank_ddp_equals_one_process(recorded: tuple[MatchingMarketEnv, dict[str, np.ndarray]]) -> None:
    env, steps = recorded
    single = _ddp_metrics(0, 1, steps, env.utilities[0], env.arm_rank[0])
    for result in run_on_ranks(_ddp_metrics, 2, steps, env.utilities[0], env.arm_rank[0]):
        for got, expected in zip(result, single, strict=True):
            torch.testing.assert_close(got, expected)
