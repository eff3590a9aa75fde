"""Attribute-blind multi-class fair classification: LP plug-in post-processing, EG reduction, frontier sweeps."""

from __future__ import annotations

from lightning_icml26.algorithms.fairness._common import check_criterion, expected_gap, one_hot
from lightning_icml26.algorithms.fairness.frontier import fairness_frontier, plot_frontier
from lightning_icml26.algorithms.fairness.models import fit_probability_model, make_mlp
from lightning_icml26.algorithms.fairness.postprocess import AttributeBlindClassifier, FairPostProcessor
from lightning_icml26.algorithms.fairness.reduction import ExponentiatedGradientReduction

__all__ = [
    "AttributeBlindClassifier",
    "ExponentiatedGradientReduction",
    "FairPostProcessor",
    "check_criterion",
    "expected_gap",
    "fairness_frontier",
    "fit_probability_model",
    "make_mlp",
    "one_hot",
    "plot_frontier",
]
