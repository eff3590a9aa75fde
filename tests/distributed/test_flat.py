"""Flat collectives over many tensors, the token-share loss scale and the mesh arithmetic, on 2 gloo ranks."""

from __future__ import annotations

import pytest
import torch

from lightning_icml26.distributed import (
    all_reduce_mean,
    broadcast_tensors,
    group_by_dtype,
    mesh_sizes,
    shard_batch,
    token_share_scale,
)
from tests._support.distributed import run_on_ranks


def _rank_tensors(rank: int) -> list[torch.Tensor]:
    return [
        torch.full((2, 3), float(rank + 1)),
        torch.arange(4, dtype=torch.int64) * (rank + 1),
        torch.full((5,), 10.0 * (rank + 1), dtype=torch.float64),
        torch.zeros(0),
    ]


def _collectives(rank: int, world_size: int) -> dict[str, object]:
    broadcast = _rank_tensors(rank)
    broadcast_tensors(broadcast, src=1)
    floats = [t for t in _rank_tensors(rank) if t.is_floating_point()]
    all_reduce_mean(floats)
    labels = torch.tensor([5, -100, 7, 8]) if rank == 0 else torch.tensor([-100, -100, 3, -100])
    return {
        "broadcast": [t.tolist() for t in broadcast],
        "mean": [t.tolist() for t in floats],
        "scale": token_share_scale(labels, ignore_index=-100),
        "none": token_share_scale(torch.full((3,), -100), ignore_index=-100),
    }


@pytest.mark.distributed
def test_flat_collectives_match_per_tensor_reference() -> None:
    results = run_on_ranks(_collectives, 2)
    rank1 = [t.tolist() for t in _rank_tensors(1)]
    means = [((a + b) / 2).tolist() for a, b in zip(
        [t for t in _rank_tensors(0) if t.is_floating_point()],
        [t for t in _rank_tensors(1) if t.is_floating_point()],
        strict=True,
    )]  # fmt: skip
    for out in results:
        assert out["broadcast"] == rank1  # every dtype group, including int64, takes rank 1's values
        assert out["mean"] == means
        assert out["none"] is None  # no scored token on any rank
    # 3 + 1 = 4 scored tokens: rank 0 holds 3 of them, rank 1 holds 1; scale = world * local / total
    assert results[0]["scale"] == pytest.approx(2 * 3 / 4)
    assert results[1]["scale"] == pytest.approx(2 * 1 / 4)


def test_group_by_dtype_keeps_order_and_skips_empty() -> None:
    a, b, c = torch.zeros(2), torch.zeros(3, dtype=torch.int64), torch.ones(1)
    groups = group_by_dtype([a, b, torch.zeros(0), c])
    assert [[id(t) for t in g] for g in groups] == [[id(a), id(c)], [id(b)]]


def test_mesh_sizes_and_errors() -> None:
    assert mesh_sizes(8) == (1, 8)
    assert mesh_sizes(8, context_parallel_size=4) == (2, 4)
    assert mesh_sizes(8, data_parallel_size=4) == (4, 2)
    assert mesh_sizes(6, 3, 2) == (2, 3)
    with pytest.raises(ValueError, match="context_parallel_size=3 does not divide the world size 8"):
        mesh_sizes(8, context_parallel_size=3)
    with pytest.raises(ValueError, match="must equal the world size 8"):
        mesh_sizes(8, 2, 2)


def test_shard_batch_matches_index_select_of_the_layout() -> None:
    batch = {"input_ids": torch.arange(16).view(2, 8), "labels": torch.arange(16).view(2, 8) + 100}
    out = shard_batch(batch, ("input_ids", "labels"), rank=1, size=2, layout="headtail")
    # headtail on 2 ranks: 4 chunks of 2 tokens; rank 1 holds chunks 1 and 2 -> positions 2, 3, 4, 5
    assert out["input_ids"].tolist() == [[2, 3, 4, 5], [10, 11, 12, 13]]
    assert out["labels"].tolist() == [[102, 103, 104, 105], [110, 111, 112, 113]]
    assert out["position_ids"].tolist() == [[2, 3, 4, 5], [2, 3, 4, 5]]
    tuple_out = shard_batch((batch["input_ids"],), (0,), rank=0, size=2)
    assert tuple_out[0].tolist() == [[0, 1, 2, 3], [8, 9, 10, 11]]
    with pytest.raises(ValueError, match="not divisible by 4"):
        shard_batch({"input_ids": torch.zeros(1, 6)}, ("input_ids",), rank=0, size=2, layout="headtail")
    with pytest.raises(TypeError, match="batch must be a mapping"):
        shard_batch(torch.zeros(2, 4), ("input_ids",), rank=0, size=2)
