"""Every metric plots (torchmetrics' helper) and every functional twin takes ``update``'s arguments in order."""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from typing import Any

import matplotlib
import matplotlib.pyplot
import pytest
import torch

import lightning_icml26.metrics as metrics
import lightning_icml26.metrics.functional as functional

matplotlib.use("Agg")

_G = torch.tensor([0, 0, 1, 1])
_PROBS = torch.tensor([0.2, 0.7, 0.6, 0.4])
_Y = torch.tensor([0, 1, 1, 0])
_CODE = torch.tensor([[0, 1, 2], [0, 0, 0], [2, 0, 0]])

# (factory, update arguments) for every public metric class.
CASES: dict[str, tuple[Callable[[], Any], tuple[Any, ...]]] = {
    "BinaryDemographicParity": (lambda: metrics.BinaryDemographicParity(2), (_PROBS, _Y, _G)),
    "BinaryEqualizedOdds": (lambda: metrics.BinaryEqualizedOdds(2), (_PROBS, _Y, _G)),
    "BinaryEqualOpportunity": (lambda: metrics.BinaryEqualOpportunity(2), (_PROBS, _Y, _G)),
    "BinaryGroupRates": (lambda: metrics.BinaryGroupRates(2), (_PROBS, _Y, _G)),
    "MulticlassDemographicParity": (lambda: metrics.MulticlassDemographicParity(2, 2), (_Y, _Y, _G)),
    "MulticlassEqualizedOdds": (lambda: metrics.MulticlassEqualizedOdds(2, 2), (_Y, _Y, _G)),
    "MulticlassEqualOpportunity": (lambda: metrics.MulticlassEqualOpportunity(2, 2), (_Y, _Y, _G)),
    "MulticlassGroupRates": (lambda: metrics.MulticlassGroupRates(2, 2), (_Y, _Y, _G)),
    "ComplementarityGain": (lambda: metrics.ComplementarityGain(), (_PROBS, _PROBS.flip(0), _Y)),
    "ErrorCorrelation": (lambda: metrics.ErrorCorrelation(), (_PROBS, _PROBS.flip(0), _Y)),
    "RobustPoolingWeight": (lambda: metrics.RobustPoolingWeight((0.1, 0.5)), (_PROBS, _PROBS.flip(0), _Y)),
    "Sparsity": (lambda: metrics.Sparsity(), (torch.tensor([0.0, 1.0, 2.0]),)),
    "KVBudget": (lambda: metrics.KVBudget(), (torch.tensor([512.0, 512.0]), torch.tensor([4.0, 8.0]))),
    "AnchorPLIntensity": (
        lambda: metrics.AnchorPLIntensity(num_responses=2, num_windows=1, k=3),
        (
            torch.tensor([0, 1]),
            torch.tensor([0, 0]),
            torch.tensor([[1, 0, 2], [1, 2, 0]]),
            torch.tensor([[6.0, -6.0]] * 2),
        ),
    ),
    "AttentionApproxError": (
        lambda: metrics.AttentionApproxError(),
        (torch.randn(1, 4, 2, 3), torch.randn(1, 4, 2, 3)),
    ),
    "SkeletonF1": (lambda: metrics.SkeletonF1(), (_CODE, _CODE.T)),
    "LatentPairF1": (lambda: metrics.LatentPairF1(), (_CODE, _CODE.T)),
    "OrientationAccuracy": (lambda: metrics.OrientationAccuracy(), (_CODE, _CODE.T)),
    "StructuralHammingDistance": (lambda: metrics.StructuralHammingDistance(), (_CODE, _CODE.T)),
    "CompressionRatio": (lambda: metrics.CompressionRatio(), (torch.tensor([0.0, 1.0, 2.0]),)),
    "EffectiveSampleSize": (lambda: metrics.EffectiveSampleSize(), (torch.tensor([0.0, -1.0, -0.5]),)),
    "FeatureSpectrumGap": (lambda: metrics.FeatureSpectrumGap(3), (torch.randn(6, 3), torch.randn(7, 3))),
    "EnergyW2": (lambda: metrics.EnergyW2(), (torch.randn(64), torch.randn(64))),
    "TorusW2": (lambda: metrics.TorusW2(), (torch.rand(64, 2) * 6 - 3, torch.rand(64, 2) * 6 - 3)),
    "TICAW2": (lambda: metrics.TICAW2(n_components=1), (torch.randn(200, 3), torch.randn(200, 3))),
    "TokenAccuracyByHorizon": (
        lambda: metrics.TokenAccuracyByHorizon(3),
        (torch.randint(0, 4, (2, 3, 5)), torch.randint(0, 4, (2, 3, 5))),
    ),
    "StableRegret": (lambda: metrics.StableRegret(2), (torch.tensor([[1.0, 0.5]]), torch.tensor([[0.0, 0.5]]))),
    "StabilityViolationRate": (
        lambda: metrics.StabilityViolationRate(),
        (torch.tensor([[1, 0], [0, 1]]), torch.tensor([[0.9, 0.5], [0.8, 0.6]]), torch.tensor([[1, 0], [0, 1]])),
    ),
    "CollisionRate": (lambda: metrics.CollisionRate(), (torch.tensor([[0, 0]]), torch.tensor([[True, False]]))),
    "RecourseValidity": (lambda: metrics.RecourseValidity(), (_Y, _Y.flip(0))),
    "RecourseCost": (lambda: metrics.RecourseCost(), (torch.zeros(4, 2), torch.ones(4, 2), _Y.bool())),
    "RecourseSparsity": (lambda: metrics.RecourseSparsity(), (torch.zeros(4, 2), torch.eye(4)[:, :2], None)),
    "QueryCount": (lambda: metrics.QueryCount(), (torch.tensor([3, 150, 27]),)),
    "CoverageEntropy": (lambda: metrics.CoverageEntropy(3), (torch.tensor([0, 1, 1, 2]),)),
    "DistinctN": (lambda: metrics.DistinctN(2, num_buckets=64), (["a b c", "a b d"],)),
    "SeenRate": (lambda: metrics.SeenRate(), (torch.tensor([True, False, True]),)),
    "PassAtK": (lambda: metrics.PassAtK(k=2), (torch.tensor([5, 4]), torch.tensor([1, 0]))),
    "FixRate": (lambda: metrics.FixRate(), (_Y.bool(), _Y.flip(0).bool())),
    "CounterexampleTokens": (lambda: metrics.CounterexampleTokens(), (torch.tensor([3, 7, 4]),)),
    "GraphExactMatch": (lambda: metrics.GraphExactMatch(), (["Yes.", "3"], ["yes", "4"])),
    "EdgeMicroF1": (lambda: metrics.EdgeMicroF1(), (["(0, -, 1)"], ["(0, -, 1)\n(1, -, 2)"])),
    "RolloutConsistency": (
        lambda: metrics.RolloutConsistency(4, [1, 2], 3),
        (torch.randint(0, 4, (2, 3, 5)), torch.randint(0, 4, (2, 3, 5))),
    ),
}


def test_cases_cover_every_public_metric() -> None:
    public = {name for name in metrics.__all__ if inspect.isclass(getattr(metrics, name))}
    assert public - set(CASES) <= {"GRMReliability", "HumanAlignment"}  # plotted in their own test below


@pytest.mark.parametrize("name", sorted(CASES))
def test_every_metric_plots(name: str) -> None:
    factory, args = CASES[name]
    torch.manual_seed(0)
    metric = factory()
    metric.update(*args)
    fig, ax = metric.plot()
    assert type(fig).__name__ == "Figure"
    assert ax.has_data() or ax.texts or ax.lines or ax.patches
    matplotlib.pyplot.close(fig)


def test_irt_metrics_plot() -> None:
    metric = metrics.GRMReliability(n_samples=6, n_variants=2, n_categories=3)
    gen = torch.Generator().manual_seed(0)
    samples = torch.arange(6).repeat_interleave(2)
    variants = torch.arange(2).repeat(6)
    scores = torch.randint(1, 4, (12,), generator=gen)
    metric.update(samples, variants, scores)
    fig, _ = metric.plot()
    assert type(fig).__name__ == "Figure"
    matplotlib.pyplot.close(fig)


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower().replace("w2", "_w2").replace("__", "_")


@pytest.mark.parametrize("name", sorted(CASES))
def test_functional_twin_takes_update_arguments_in_order(name: str) -> None:
    renamed = {
        "TICAW2": "tica_w2",
        "TorusW2": "torus_w2",
        "EnergyW2": "energy_w2",
        "RobustPoolingWeight": "robust_pooling",
        "AnchorPLIntensity": "anchor_pl_intensity",
        "KVBudget": "kv_budget",
    }
    twin_name = renamed.get(name, _snake(name))
    twin = getattr(functional, twin_name, None)
    if twin is None:
        pytest.skip(f"{name} has no functional twin named {twin_name}")
    update = [p for p in inspect.signature(CASES[name][0]().update).parameters if p != "self"]
    twin_params = list(inspect.signature(twin).parameters)
    assert twin_params[: len(update)] == update, (name, twin_params, update)
