"""Recourse metrics against numpy, their functional twins, and 2-rank DDP equal to one process."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from lightning_icml26.metrics import QueryCount, RecourseCost, RecourseSparsity, RecourseValidity
from lightning_icml26.metrics.functional import query_count, recourse_cost, recourse_sparsity, recourse_validity
from tests._support.distributed import run_on_ranks


def _batch(seed: int = 0) -> dict[str, torch.Tensor]:
    rng = np.random.default_rng(seed)
    original = rng.normal(size=(30, 5))
    counterfactual = original.copy()
    mask = rng.random((30, 5)) < 0.4
    counterfactual[mask] += rng.normal(size=mask.sum())
    counterfactual[:, 3] = np.round(original[:, 3]) + (rng.random(30) < 0.5)
    original[:, 3] = np.round(original[:, 3])
    return {
        "original": torch.tensor(original),
        "counterfactual": torch.tensor(counterfactual),
        "valid": torch.tensor(rng.random(30) < 0.7),
        "labels": torch.tensor(rng.integers(0, 3, 30)),
        "targets": torch.tensor(rng.integers(0, 3, 30)),
        "queries": torch.tensor(rng.integers(1, 151, 30)),
        "ranges": torch.tensor(rng.uniform(0.5, 3, 5)),
        "discrete": torch.tensor([False, False, False, True, False]),
    }


def test_metrics_and_twins_equal_numpy() -> None:
    b = _batch()
    o, c, v = b["original"].numpy(), b["counterfactual"].numpy(), b["valid"].numpy()
    r, disc = b["ranges"].numpy(), b["discrete"].numpy()
    per_row = np.array(
        [
            sum(float(c[i, j] != o[i, j]) if disc[j] else abs(c[i, j] - o[i, j]) / r[j] for j in range(5))
            for i in range(30)
        ]
    )
    expected = {
        "validity": np.mean(b["labels"].numpy() == b["targets"].numpy()),
        "cost": per_row[v].mean(),
        "sparsity": (np.abs(c - o) > 1e-9).sum(1)[v].mean(),
        "queries": b["queries"].numpy().mean(),
    }
    got_twin = {
        "validity": recourse_validity(b["labels"], b["targets"]),
        "cost": recourse_cost(b["original"], b["counterfactual"], b["valid"], b["ranges"], b["discrete"]),
        "sparsity": recourse_sparsity(b["original"], b["counterfactual"], b["valid"]),
        "queries": query_count(b["queries"]),
    }
    got_metric = _metrics_over(b, [slice(0, 11), slice(11, 30)])
    for key, value in expected.items():
        assert float(got_twin[key]) == pytest.approx(value)
        assert float(got_metric[key]) == pytest.approx(value)


def _metrics_over(b: dict[str, torch.Tensor], chunks: list[slice]) -> dict[str, torch.Tensor]:
    metrics = {
        "validity": RecourseValidity(),
        "cost": RecourseCost(ranges=b["ranges"], discrete=b["discrete"]),
        "sparsity": RecourseSparsity(),
        "queries": QueryCount(),
    }
    for rows in chunks:
        metrics["validity"].update(b["labels"][rows], b["targets"][rows])
        metrics["cost"].update(b["original"][rows], b["counterfactual"][rows], b["valid"][rows])
        metrics["sparsity"].update(b["original"][rows], b["counterfactual"][rows], b["valid"][rows])
        metrics["queries"].update(b["queries"][rows])
    return {key: m.compute() for key, m in metrics.items()}


def test_empty_and_bad_input() -> None:
    with pytest.warns(UserWarning, match="before the ``update``"):
        assert torch.isnan(RecourseCost().compute())
    assert torch.isnan(recourse_cost(torch.zeros(2, 2), torch.ones(2, 2), torch.tensor([False, False])))
    with pytest.raises(ValueError, match="original and counterfactual"):
        recourse_cost(torch.zeros(2, 2), torch.zeros(3, 2))
    with pytest.raises(ValueError, match="valid must have shape"):
        recourse_sparsity(torch.zeros(2, 2), torch.zeros(2, 2), torch.ones(3, dtype=torch.bool))
    with pytest.raises(ValueError, match="queries must be"):
        query_count(torch.tensor([-1]))


def _ddp(rank: int, world_size: int, b: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    rows = torch.arange(rank, 30, world_size)
    return _metrics_over({k: (v[rows] if v.shape[:1] == (30,) else v) for k, v in b.items()}, [slice(None)])


@pytest.mark.distributed
def test_two_rank_ddp_equals_one_process() -> None:
    b = _batch(1)
    single = _metrics_over(b, [slice(None)])
    for result in run_on_ranks(_ddp, 2, b):
        for key, value in single.items():
            torch.testing.assert_close(result[key], value)
