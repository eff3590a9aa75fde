"""Sparsity / CompressionRatio metrics and their functional twins, against numpy counts."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest
import torch
from torch import nn

from lightning_icml26.metrics import CompressionRatio, Sparsity
from lightning_icml26.metrics.functional import compression_ratio, select_weights, sparsity
from tests._support.distributed import run_on_ranks


def _np_counts(arrays: list[np.ndarray], thr: float) -> tuple[int, int]:
    flat = np.concatenate([a.ravel() for a in arrays])
    return int((np.abs(flat) > thr).sum()), flat.size


@pytest.mark.parametrize("thr", [0.0, 0.05, 0.5])
def test_functional_matches_numpy(thr: float) -> None:
    rng = np.random.default_rng(0)
    arrays = [rng.normal(size=s) * (rng.random(size=s) > 0.6) for s in [(4, 3), (7,), (2, 2, 3)]]
    nonzero, total = _np_counts(arrays, thr)
    tensors = [torch.from_numpy(a) for a in arrays]
    assert float(sparsity(tensors, thr)) == pytest.approx(1 - nonzero / total)
    assert float(compression_ratio(tensors, thr)) == pytest.approx(total / nonzero)


def test_all_pruned_and_empty() -> None:
    assert float(compression_ratio(torch.zeros(5))) == float("inf")
    assert float(sparsity(torch.zeros(5))) == 1.0
    assert torch.isnan(sparsity([]))


def test_select_weights_by_kind() -> None:
    net = nn.Sequential(nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2), nn.Flatten(), nn.Linear(8, 3), nn.Conv1d(1, 1, 2))
    assert list(select_weights(net, "conv")) == ["0.weight", "4.weight"]
    assert list(select_weights(net, ["linear"])) == ["3.weight"]
    assert len(select_weights(net, "all")) == len(list(net.parameters()))
    with pytest.raises(ValueError, match="include must be a non-empty selection"):
        select_weights(net, "bn")
    with torch.no_grad():
        net[0].weight.zero_()
    # module input: conv weights only (18 zeros of 18 + 2 non-zero conv1d weights)
    net[4].weight.data.fill_(1.0)
    assert float(compression_ratio(net)) == pytest.approx(20 / 2)


def test_metric_accumulates_and_is_well_behaved() -> None:
    rng = np.random.default_rng(1)
    arrays = [rng.normal(size=(5, 5)) * (rng.random(size=(5, 5)) > 0.5) for _ in range(3)]
    nonzero, total = _np_counts(arrays, 0.1)
    s, c = Sparsity(threshold=0.1), CompressionRatio(threshold=0.1)
    for a in arrays:
        s.update(torch.from_numpy(a))
        c.update([torch.from_numpy(a)])
    assert float(s.compute()) == pytest.approx(1 - nonzero / total)
    assert float(c.compute()) == pytest.approx(total / nonzero)
    assert s.state_dict() == {}  # non-persistent states
    clone = pickle.loads(pickle.dumps(copy.deepcopy(c)))
    assert float(clone.compute()) == pytest.approx(total / nonzero)
    s.reset()
    assert int(s.total) == 0
    assert Sparsity.full_state_update is False


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="threshold must be a non-negative number, got -1"):
        Sparsity(threshold=-1)
    with pytest.raises(ValueError, match="include"):
        CompressionRatio(include=("dense",))
    with pytest.raises(TypeError, match=r"weights\[1\] must be a torch.Tensor"):
        sparsity([torch.ones(1), 3.0])


def _ddp_metric(rank: int, world_size: int, arrays: list) -> float:
    metric = CompressionRatio(threshold=0.0)
    for a in arrays[rank::world_size]:
        metric.update(a)
    return float(metric.compute())


@pytest.mark.distributed
@pytest.mark.slow
def test_metric_syncs_over_two_ranks() -> None:
    torch.manual_seed(0)
    arrays = [torch.randn(6, 4) * (torch.rand(6, 4) > 0.7) for _ in range(4)]
    expected = float(compression_ratio(arrays))
    assert run_on_ranks(_ddp_metric, 2, arrays) == [pytest.approx(expected), pytest.approx(expected)]
