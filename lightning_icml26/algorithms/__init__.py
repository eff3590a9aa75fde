"""Estimators and decision rules that are not trained networks, sklearn-style.

Fair post-processing and reductions, human-AI pooling theory (robust weights, deferral), layer selection,
causal discovery on count data (``algorithms.causal``).

The causal-discovery names (:class:`LCPBSCM`, :class:`PGFSkeleton`) are loaded on first
access: :mod:`lightning_icml26.algorithms.causal` imports sympy and networkx (about two seconds), which the
metrics and callbacks that import this package's other modules never use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from lightning_icml26._moved import moved_attribute
from lightning_icml26.algorithms.boltzmann_reweighting import (
    BoltzmannReweighter,
    ChiralityFix,
    ReweightResult,
    effective_sample_size,
    signed_volumes,
)
from lightning_icml26.algorithms.complementarity import (
    check_interval,
    correlation_threshold,
    gain_weight_bound,
    linear_pool,
    logit_pool,
    oracle_pooling_weight,
    override_decision,
    pooling_gain,
    robust_pooling_weight,
    robust_weight_cap,
    worst_case_gain,
)
from lightning_icml26.algorithms.fairness import (
    AttributeBlindClassifier,
    ExponentiatedGradientReduction,
    FairPostProcessor,
    check_criterion,
    fairness_frontier,
)
from lightning_icml26.algorithms.itc_imagination import ImaginationConfig, TokenPolicy, imagine, train_in_imagination
from lightning_icml26.algorithms.loes import LayerSelection, isotropy, select_layers
from lightning_icml26.algorithms.novelty import (
    CalibratedSeenDetector,
    DeepSVDDDetector,
    IsolationForestDetector,
    KNNDistanceDetector,
    MemoryPenalty,
    NoveltyReward,
    OneClassSVMDetector,
    SeenDetector,
)
from lightning_icml26.algorithms.valueflow_intensity import (
    borda_interpolation,
    estimate_intensity,
    posterior_median,
    sample_anchors,
    solve_response_utility,
)
from lightning_icml26.algorithms.valueflow_judge import RankingJudge, evaluate_with_judge, steering_prompt

if TYPE_CHECKING:  # for type checkers; at run time ``__getattr__`` imports them on first access
    from lightning_icml26.algorithms.causal import LCPBSCM, PGFSkeleton

# Names resolved lazily by ``__getattr__`` (their module imports sympy and networkx).
_LAZY = {
    "LCPBSCM": "lightning_icml26.algorithms.causal",
    "PGFSkeleton": "lightning_icml26.algorithms.causal",
}

__all__ = [
    "BoltzmannReweighter",
    "ChiralityFix",
    "ReweightResult",
    "effective_sample_size",
    "posterior_median",
    "signed_volumes",
    "ImaginationConfig",
    "TokenPolicy",
    "imagine",
    "train_in_imagination",
    "MemoryPenalty",
    "NoveltyReward",
    "evaluate_with_judge",
    "RankingJudge",
    "steering_prompt",
    "borda_interpolation",
    "estimate_intensity",
    "sample_anchors",
    "solve_response_utility",
    "AttributeBlindClassifier",
    "CalibratedSeenDetector",
    "DeepSVDDDetector",
    "IsolationForestDetector",
    "KNNDistanceDetector",
    "OneClassSVMDetector",
    "SeenDetector",
    "check_criterion",
    "check_interval",
    "correlation_threshold",
    "ExponentiatedGradientReduction",
    "fairness_frontier",
    "FairPostProcessor",
    "gain_weight_bound",
    "isotropy",
    "LayerSelection",
    "LCPBSCM",
    "linear_pool",
    "logit_pool",
    "oracle_pooling_weight",
    "override_decision",
    "PGFSkeleton",
    "pooling_gain",
    "robust_pooling_weight",
    "robust_weight_cap",
    "select_layers",
    "worst_case_gain",
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    return moved_attribute(__name__, name)  # names that moved out, kept for one release
