"""The shared multi-process harness itself: results come back by rank, failures surface."""

from __future__ import annotations

import pytest
import torch
import torch.distributed as dist

from tests._support.distributed import run_on_ranks


def _all_reduce_rank(rank: int, world_size: int, scale: float) -> torch.Tensor:
    value = torch.tensor([float(rank) * scale])
    dist.all_reduce(value)
    return value


def _fail_on_rank_one(rank: int, world_size: int) -> int:
    if rank == 1:
        raise ValueError("planted failure")
    return rank


@pytest.mark.distributed
@pytest.mark.parametrize("world_size", [1, 2])
def test_run_on_ranks_all_reduce(world_size: int) -> None:
    results = run_on_ranks(_all_reduce_rank, world_size, 2.0)
    expected = 2.0 * sum(range(world_size))
    assert [float(r) for r in results] == [expected] * world_size


@pytest.mark.distributed
def test_run_on_ranks_reports_rank_failure() -> None:
    with pytest.raises(RuntimeError, match="(?s)rank 1 failed.*planted failure"):
        run_on_ranks(_fail_on_rank_one, 2, timeout=60)
