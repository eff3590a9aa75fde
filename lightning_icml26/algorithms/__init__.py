"""Estimators that are not trained networks (post-processing, layer selection, ...), sklearn-style."""

from __future__ import annotations

__all__: list[str] = []

from lightning_icml26.algorithms.loes import LayerSelection, isotropy, select_layers  # noqa: E402

__all__ += ["LayerSelection", "isotropy", "select_layers"]

from lightning_icml26.algorithms.fairness import (  # noqa: E402
    AttributeBlindClassifier,
    ExponentiatedGradientReduction,
    FairPostProcessor,
    fairness_frontier,
)

__all__ += ["AttributeBlindClassifier", "ExponentiatedGradientReduction", "FairPostProcessor", "fairness_frontier"]
