"""Estimators that are not trained networks (post-processing, layer selection, ...), sklearn-style."""

from __future__ import annotations

from lightning_icml26.algorithms.fairness import (
    AttributeBlindClassifier,
    ExponentiatedGradientReduction,
    FairPostProcessor,
    fairness_frontier,
)
from lightning_icml26.algorithms.loes import LayerSelection, isotropy, select_layers

__all__ = [
    "AttributeBlindClassifier",
    "ExponentiatedGradientReduction",
    "fairness_frontier",
    "FairPostProcessor",
    "isotropy",
    "LayerSelection",
    "select_layers",
]
