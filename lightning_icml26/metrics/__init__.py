"""torchmetrics Metric classes; functional twins live in :mod:`lightning_icml26.metrics.functional`.

Never imports lightning or :mod:`lightning_icml26.modules`.
"""

from __future__ import annotations

from lightning_icml26.metrics.boltzmann import TICAW2, EffectiveSampleSize, EnergyW2, TorusW2
from lightning_icml26.metrics.causal import LatentPairF1, OrientationAccuracy, SkeletonF1, StructuralHammingDistance
from lightning_icml26.metrics.code_refinement import CounterexampleTokens, FixRate, PassAtK
from lightning_icml26.metrics.complementarity import (
    ComplementarityGain,
    ErrorCorrelation,
    RobustPoolingWeight,
)
from lightning_icml26.metrics.fairness import (
    BinaryDemographicParity,
    BinaryEqualizedOdds,
    BinaryEqualOpportunity,
    BinaryGroupRates,
    MulticlassDemographicParity,
    MulticlassEqualizedOdds,
    MulticlassEqualOpportunity,
    MulticlassGroupRates,
)
from lightning_icml26.metrics.graph_substrate import EdgeMicroF1, GraphExactMatch
from lightning_icml26.metrics.irt import GRMReliability, HumanAlignment
from lightning_icml26.metrics.isa import AttentionApproxError
from lightning_icml26.metrics.itc import RolloutConsistency, TokenAccuracyByHorizon
from lightning_icml26.metrics.kv_budget import KVBudget
from lightning_icml26.metrics.matching import CollisionRate, StabilityViolationRate, StableRegret
from lightning_icml26.metrics.novelty import CoverageEntropy, DistinctN, SeenRate
from lightning_icml26.metrics.recourse import QueryCount, RecourseCost, RecourseSparsity, RecourseValidity
from lightning_icml26.metrics.sparsity import CompressionRatio, Sparsity
from lightning_icml26.metrics.spectrum_gap import FeatureSpectrumGap
from lightning_icml26.metrics.valueflow import AnchorPLIntensity

__all__ = [
    "KVBudget",
    "EdgeMicroF1",
    "GraphExactMatch",
    "AttentionApproxError",
    "CoverageEntropy",
    "DistinctN",
    "SeenRate",
    "CounterexampleTokens",
    "FixRate",
    "PassAtK",
    "AnchorPLIntensity",
    "LatentPairF1",
    "OrientationAccuracy",
    "SkeletonF1",
    "StructuralHammingDistance",
    "BinaryDemographicParity",
    "BinaryEqualizedOdds",
    "BinaryEqualOpportunity",
    "BinaryGroupRates",
    "CollisionRate",
    "ComplementarityGain",
    "CompressionRatio",
    "EffectiveSampleSize",
    "EnergyW2",
    "ErrorCorrelation",
    "FeatureSpectrumGap",
    "GRMReliability",
    "HumanAlignment",
    "MulticlassDemographicParity",
    "MulticlassEqualizedOdds",
    "MulticlassEqualOpportunity",
    "MulticlassGroupRates",
    "QueryCount",
    "RecourseCost",
    "RecourseSparsity",
    "RecourseValidity",
    "RobustPoolingWeight",
    "RolloutConsistency",
    "Sparsity",
    "StabilityViolationRate",
    "StableRegret",
    "TICAW2",
    "TokenAccuracyByHorizon",
    "TorusW2",
]
