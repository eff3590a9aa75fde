"""Rollout consistency metrics: planted errors counted exactly; 2-rank DDP equals one process."""

from __future__ import annotations

import pytest
import torch

from lightning_icml26.data.gridworld import make_gridworld_rollouts
from lightning_icml26.metrics import RolloutConsistency, TokenAccuracyByHorizon
from lightning_icml26.metrics.functional import object_count_errors, object_motion, rollout_consistency
from tests._support.distributed import run_on_ranks


def test_planted_errors_are_counted_exactly() -> None:
    target, _ = make_gridworld_rollouts(6, 5, num_objects=3, seed=1)
    preds = target.clone()
    gen = torch.Generator().manual_seed(0)
    planted = torch.zeros(6, 5, 3, dtype=torch.long)  # dup, dis, trans per frame
    for b in range(6):
        for t in range(5):
            frame = preds[b, t]
            kind = int(torch.randint(0, 4, (1,), generator=gen))
            objects = (frame >= 3).nonzero()
            floor = (frame == 0).nonzero()
            if kind == 0:  # duplicate an object onto a floor cell
                r, c = objects[0]
                f = floor[0]
                frame[f[0], f[1]] = frame[r, c]
                planted[b, t, 0] = 1
            elif kind == 1:  # remove an object
                r, c = objects[0]
                frame[r, c] = 0
                planted[b, t, 1] = 1
            elif kind == 2:  # change an object's kind (3..5) into another kind
                r, c = objects[0]
                frame[r, c] = 3 + (int(frame[r, c]) - 3 + 1) % 3
                planted[b, t, 2] = 1
    errors = object_count_errors(preds, target, 6, [2, 3, 4, 5])
    assert torch.equal(errors["duplications"], planted[..., 0])
    assert torch.equal(errors["disappearances"], planted[..., 1])
    assert torch.equal(errors["transmutations"], planted[..., 2])
    assert torch.all(errors["objects"] == 4)
    out = rollout_consistency(preds, target, 6, [2, 3, 4, 5])
    torch.testing.assert_close(out["duplication_rate"], planted[..., 0].sum(0).float() / 24)
    torch.testing.assert_close(out["disappearance_rate"], planted[..., 1].sum(0).float() / 24)
    metric = RolloutConsistency(6, [2, 3, 4, 5], max_horizon=5)
    metric.update(preds[:3], target[:3])
    metric.update(preds[3:], target[3:])
    for key, value in metric.compute().items():
        torch.testing.assert_close(value, out[key])
    acc = TokenAccuracyByHorizon(5)
    acc.update(preds, target)
    dense = (preds == target).float().mean(dim=(0, 2, 3))
    torch.testing.assert_close(acc.compute(), dense)
    torch.testing.assert_close(out["token_accuracy"], dense)


def test_metric_errors() -> None:
    with pytest.raises(ValueError, match="object_tokens"):
        RolloutConsistency(4, [5], max_horizon=2)
    metric = RolloutConsistency(4, [2], max_horizon=1)
    with pytest.raises(ValueError, match="max_horizon"):
        metric.update(torch.zeros(1, 2, 3, dtype=torch.long), torch.zeros(1, 2, 3, dtype=torch.long))
    with pytest.raises(TypeError, match="integer"):
        metric.update(torch.zeros(1, 1, 3), torch.zeros(1, 1, 3))


def _corrupted_rollouts() -> tuple[torch.Tensor, torch.Tensor]:
    target, _ = make_gridworld_rollouts(7, 5, num_objects=3, seed=3)
    gen = torch.Generator().manual_seed(5)
    flip = torch.rand(target.shape, generator=gen) < 0.15
    preds = torch.where(flip, torch.randint(0, 6, target.shape, generator=gen), target)
    return preds, target


def _rank_rows(preds: torch.Tensor, target: torch.Tensor, rank: int, world_size: int) -> tuple:
    # rank 1 rolls out only 3 of the 5 horizons: the sums must still line up horizon by horizon
    steps = 5 if rank == 0 else 3
    return preds[rank::world_size, :steps], target[rank::world_size, :steps]


def _ddp_metrics(rank: int, world_size: int, preds: torch.Tensor, target: torch.Tensor) -> dict[str, torch.Tensor]:
    consistency, accuracy = RolloutConsistency(6, [2, 3, 4, 5], max_horizon=5), TokenAccuracyByHorizon(5)
    p, t = _rank_rows(preds, target, rank, world_size)
    consistency.update(p, t)
    accuracy.update(p, t)
    return consistency.compute() | {"accuracy_metric": accuracy.compute()}


@pytest.mark.distributed
def test_two_rank_ddp_equals_one_process() -> None:
    preds, target = _corrupted_rollouts()
    consistency, accuracy = RolloutConsistency(6, [2, 3, 4, 5], max_horizon=5), TokenAccuracyByHorizon(5)
    for rank in range(2):
        consistency.update(*_rank_rows(preds, target, rank, 2))
        accuracy.update(*_rank_rows(preds, target, rank, 2))
    expected = consistency.compute() | {"accuracy_metric": accuracy.compute()}
    # independent reference for the accuracy: horizons 0-2 see all 7 rollouts, horizons 3-4 only rank 0's 4
    equal = (preds == target).float()
    dense = torch.cat([equal[:, :3].mean(dim=(0, 2, 3)), equal[0::2, 3:].mean(dim=(0, 2, 3))])
    torch.testing.assert_close(expected["accuracy_metric"], dense)
    torch.testing.assert_close(expected["token_accuracy"], dense)
    for out in run_on_ranks(_ddp_metrics, 2, preds, target):
        assert out.keys() == expected.keys()
        for key, value in expected.items():
            torch.testing.assert_close(out[key], value, equal_nan=True)


def test_object_motion_matches_a_cell_loop() -> None:
    gen = torch.Generator().manual_seed(3)
    frames = torch.randint(0, 4, (3, 5, 4, 4), generator=gen)
    objects = [2, 3]
    got = object_motion(frames, objects)
    for h in range(1, 5):
        moved = held = 0
        for b in range(3):
            for r in range(4):
                for c in range(4):
                    if int(frames[b, h - 1, r, c]) in objects:
                        held += 1
                        moved += int(frames[b, h, r, c] != frames[b, h - 1, r, c])
        assert got[h - 1].item() == pytest.approx(moved / held)
    frozen = frames[:, :1].expand(-1, 4, -1, -1)
    assert object_motion(frozen, objects).tolist() == [0.0, 0.0, 0.0]
    with pytest.raises(ValueError, match="at least 2 frames"):
        object_motion(frames[:, :1], objects)
