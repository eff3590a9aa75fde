"""AnchorPLIntensity: equals the estimator and its functional twin, 2-rank DDP equals one process, errors."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from lightning_icml26.algorithms import estimate_intensity
from lightning_icml26.metrics import AnchorPLIntensity
from lightning_icml26.metrics.functional import anchor_pl_intensity
from tests._support.distributed import run_on_ranks


def _windows(responses=6, m=3, k=6, seed=0):
    rng = np.random.default_rng(seed)
    truth = rng.uniform(-8, 8, size=responses)
    anchors = np.sort(rng.uniform(-10, 10, size=(responses, m, k - 1)), axis=-1)
    util = np.concatenate([truth[:, None, None].repeat(m, 1), anchors], axis=-1)
    rankings = np.argsort(-(util + rng.gumbel(size=util.shape)), axis=-1)
    rid = np.repeat(np.arange(responses), m)
    wid = np.tile(np.arange(m), responses)
    return (
        torch.from_numpy(rid),
        torch.from_numpy(wid),
        torch.from_numpy(rankings.reshape(-1, k)),
        torch.from_numpy(anchors.reshape(-1, k - 1)).float(),
    )


def test_metric_equals_estimator_and_functional():
    rid, wid, rank, anchors = _windows()
    perm = torch.randperm(len(rid), generator=torch.Generator().manual_seed(1))
    metric = AnchorPLIntensity(num_responses=7, num_windows=3, k=6)
    for chunk in perm.split(5):  # shuffled, several updates
        metric.update(rid[chunk], wid[chunk], rank[chunk], anchors[chunk])
    out = metric.compute()
    direct = estimate_intensity(rank.view(6, 3, 6).numpy(), anchors.view(6, 3, 5).double().numpy())
    np.testing.assert_allclose(out[:6].numpy(), direct, atol=1e-5)
    assert torch.isnan(out[6])
    twin = anchor_pl_intensity(rid, wid, rank, anchors, num_responses=7, num_windows=3)
    torch.testing.assert_close(twin, out, equal_nan=True)


def _ddp(rank, world, rid, wid, ranking, anchors):
    metric = AnchorPLIntensity(num_responses=6, num_windows=3, k=6)
    mine = torch.arange(len(rid))[rank::world]
    metric.update(rid[mine], wid[mine], ranking[mine], anchors[mine])
    return metric.compute()


@pytest.mark.distributed
def test_ddp_two_ranks_equal_one_process():
    rid, wid, ranking, anchors = _windows(seed=3)
    single = AnchorPLIntensity(num_responses=6, num_windows=3, k=6)
    single.update(rid, wid, ranking, anchors)
    expected = single.compute()
    for result in run_on_ranks(_ddp, 2, rid, wid, ranking, anchors):
        torch.testing.assert_close(result, expected)


def test_bad_inputs():
    rid, wid, rank, anchors = _windows(responses=2)
    with pytest.raises(ValueError, match="k must be"):
        AnchorPLIntensity(num_responses=2, k=1)
    metric = AnchorPLIntensity(num_responses=2, num_windows=3, k=6)
    with pytest.raises(ValueError, match="not a permutation"):
        metric.update(rid[:1], wid[:1], torch.tensor([[0, 0, 1, 2, 3, 4]]), anchors[:1])
    with pytest.raises(ValueError, match="anchor_intensities must lie"):
        metric.update(rid[:1], wid[:1], rank[:1], anchors[:1] * 20)
    with pytest.raises(ValueError, match="response_ids must lie"):
        metric.update(rid[:1] + 5, wid[:1], rank[:1], anchors[:1])
    with pytest.raises(ValueError, match="rankings must be"):
        metric.update(rid[:1], wid[:1], rank[:1, :4], anchors[:1])
    metric.update(rid[:1], wid[:1], rank[:1], anchors[:1])
    with pytest.raises(ValueError, match="only some of their windows"):
        metric.compute()
    metric.update(rid, wid, rank, anchors)
    with pytest.raises(ValueError, match="more than once"):
        metric.compute()
