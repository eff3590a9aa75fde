"""ContextParallelGroup, sharding layouts and the differentiable collectives on real gloo ranks."""

from __future__ import annotations

import pytest
import torch
import torch.distributed as dist

from lightning_icml26.distributed import (
    ContextParallelGroup,
    all_to_all_head_to_seq,
    all_to_all_seq_to_head,
    as_context_parallel_group,
    gather_sequence,
    ring_shift,
    sequence_shard_indices,
    shard_sequence,
)
from tests._support.distributed import run_on_ranks


def _expected_indices(s: int, r: int, p: int, layout: str) -> list[int]:
    if layout == "contiguous":
        return list(range(r * s // p, (r + 1) * s // p))
    c = s // (2 * p)
    return list(range(r * c, (r + 1) * c)) + list(range((2 * p - 1 - r) * c, (2 * p - r) * c))


@pytest.mark.parametrize("layout", ["contiguous", "headtail"])
@pytest.mark.parametrize("p", [1, 2, 4])
def test_shard_indices_partition_the_sequence(layout: str, p: int) -> None:
    s = 16
    parts = [sequence_shard_indices(s, r, p, layout).tolist() for r in range(p)]
    assert sorted(i for part in parts for i in part) == list(range(s))
    assert parts == [_expected_indices(s, r, p, layout) for r in range(p)]


def test_bad_arguments_raise() -> None:
    with pytest.raises(ValueError, match="layout"):
        sequence_shard_indices(8, 0, 2, "zigzagx")
    with pytest.raises(ValueError, match="divisible by 4"):
        sequence_shard_indices(6, 0, 2, "headtail")
    with pytest.raises(ValueError, match="rank"):
        sequence_shard_indices(8, 2, 2)
    with pytest.raises(TypeError, match="cp must be"):
        as_context_parallel_group("world")
    with pytest.raises(TypeError, match="group must be"):
        ContextParallelGroup(3)  # type: ignore[arg-type]


def _collectives(rank: int, world: int) -> dict:
    cp = ContextParallelGroup(dist.new_group(list(range(world))))
    b, s, h, d = 2, 8 * world, 2 * world, 3
    gen = torch.Generator().manual_seed(0)
    full = torch.randn(b, s, h, d, generator=gen, dtype=torch.float64)
    dfull = torch.randn(b, s, h // world, d, generator=gen, dtype=torch.float64)
    out: dict = {"size": cp.size, "rank": cp.rank}
    for layout in ("contiguous", "headtail"):
        idx = torch.tensor(_expected_indices(s, rank, world, layout))
        local = shard_sequence(full, cp, dim=1, layout=layout).clone().requires_grad_()
        out[f"shard_ok_{layout}"] = torch.equal(local.detach(), full[:, idx])
        heads = all_to_all_seq_to_head(local, cp, layout=layout)
        hs = slice(rank * h // world, (rank + 1) * h // world)
        out[f"a2a_ok_{layout}"] = torch.equal(heads.detach(), full[:, :, hs])
        back = all_to_all_head_to_seq(heads, cp, layout=layout)
        out[f"roundtrip_ok_{layout}"] = torch.equal(back.detach(), local.detach())
        # gradient of sum(heads * dfull_rank) w.r.t. local: rank j's slice of heads uses dfull on its heads
        (heads * dfull).sum().backward()
        out[f"grad_{layout}"] = local.grad
        gathered = gather_sequence(local.detach(), cp, dim=1, layout=layout)
        out[f"gather_ok_{layout}"] = torch.equal(gathered, full)
    x = torch.full((3,), float(rank))
    out["ring"] = ring_shift(x, cp)
    out["dfull"] = dfull
    return out


@pytest.mark.distributed
def test_collectives_on_two_ranks() -> None:
    world = 2
    results = run_on_ranks(_collectives, world)
    h = 2 * world
    for rank, res in enumerate(results):
        assert res["size"] == world
        assert res["rank"] == rank
        for layout in ("contiguous", "headtail"):
            assert res[f"shard_ok_{layout}"]
            assert res[f"a2a_ok_{layout}"]
            assert res[f"roundtrip_ok_{layout}"]
            assert res[f"gather_ok_{layout}"]
            # d/d(local) of sum_j <heads_j, dfull_j>: head block j of the local tokens gets dfull_j there
            idx = torch.tensor(_expected_indices(8 * world, rank, world, layout))
            want = torch.cat([results[j]["dfull"][:, idx] for j in range(world)], dim=2)
            assert res[f"grad_{layout}"].shape[2] == h
            torch.testing.assert_close(res[f"grad_{layout}"], want)
        assert res["ring"].tolist() == [float((rank - 1) % world)] * 3
