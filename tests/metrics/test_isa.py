"""AttentionApproxError against numpy, batch accumulation, sampled heads, bad inputs and 2-rank DDP."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from lightning_icml26.metrics import AttentionApproxError
from lightning_icml26.metrics.functional import attention_approx_error
from tests._support.distributed import run_on_ranks


def _numpy_reference(p: np.ndarray, t: np.ndarray, heads: list[int]) -> tuple[float, float]:
    rels, coss = [], []
    for b in range(p.shape[0]):
        for h in heads:
            x, y = p[b, :, h].ravel(), t[b, :, h].ravel()
            rels.append(np.linalg.norm(x - y) / np.linalg.norm(y))
            coss.append(x @ y / (np.linalg.norm(x) * np.linalg.norm(y)))
    return float(np.mean(rels)), float(np.mean(coss))


def _data(seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    t = torch.randn(6, 7, 4, 5, generator=g)
    return t + 0.3 * torch.randn(6, 7, 4, 5, generator=g), t


@pytest.mark.parametrize("heads", [None, [1, 3]])
def test_matches_numpy_and_accumulates_over_batches(heads: list[int] | None) -> None:
    p, t = _data(0)
    rel, cos = _numpy_reference(p.double().numpy(), t.double().numpy(), heads or [0, 1, 2, 3])
    out = attention_approx_error(p, t, heads)
    assert float(out["rel_l2"]) == pytest.approx(rel, rel=1e-10)
    assert float(out["cosine"]) == pytest.approx(cos, rel=1e-10)
    metric = AttentionApproxError(heads=heads)
    metric.update(p[:2], t[:2])
    metric.update(p[2:], t[2:])
    res = metric.compute()
    assert float(res["rel_l2"]) == pytest.approx(rel, rel=1e-10)
    assert float(res["cosine"]) == pytest.approx(cos, rel=1e-10)
    assert cos < 0.999  # the noise is visible: the test could fail


def test_bad_inputs() -> None:
    p, t = _data(1)
    with pytest.raises(ValueError, match="same shape"):
        attention_approx_error(p[:, :3], t)
    with pytest.raises(ValueError, match="heads"):
        attention_approx_error(p, t, [4])
    with pytest.raises(ValueError, match="heads"):
        AttentionApproxError(heads=[])
    with pytest.raises(TypeError, match="preds"):
        attention_approx_error(p.numpy(), t)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="preds"):
        attention_approx_error(p[0], t[0])
    with pytest.raises(ValueError, match="update"):
        AttentionApproxError().compute()


@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
@pytest.mark.parametrize("which", ["preds", "target"])
def test_non_finite_inputs_are_refused(bad: float, which: str) -> None:
    p, t = _data(1)
    p, t = p.clone(), t.clone()
    (p if which == "preds" else t)[0, 1, 2, 3] = bad
    with pytest.raises(ValueError, match=rf"{which} holds 1 non-finite value"):
        attention_approx_error(p, t)
    metric = AttentionApproxError()
    with pytest.raises(ValueError, match=rf"{which} holds 1 non-finite value"):
        metric.update(p, t)
    assert int(metric.count) == 0  # the refused batch left no trace


def _ddp_metric(rank: int, world_size: int, p: torch.Tensor, t: torch.Tensor) -> dict[str, torch.Tensor]:
    metric = AttentionApproxError(heads=[0, 2])
    metric.update(p[rank::world_size], t[rank::world_size])
    return metric.compute()


@pytest.mark.distributed
def test_two_rank_ddp_equals_one_process() -> None:
    p, t = _data(2)
    expected = attention_approx_error(p, t, [0, 2])
    for out in run_on_ranks(_ddp_metric, 2, p, t):
        assert float(out["rel_l2"]) == pytest.approx(float(expected["rel_l2"]), rel=1e-10)
        assert float(out["cosine"]) == pytest.approx(float(expected["cosine"]), rel=1e-10)
