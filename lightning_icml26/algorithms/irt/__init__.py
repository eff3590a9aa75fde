"""Item response theory for LLM-judge reliability: graded response model fits."""

from __future__ import annotations

from lightning_icml26.algorithms.irt.bayes import BayesianGRM
from lightning_icml26.algorithms.irt.estimator import GradedResponseModel
from lightning_icml26.algorithms.irt.grm import (
    GRMFit,
    category_probabilities,
    eap_abilities,
    fit_grm,
    quadrature,
    scores_to_counts,
)
from lightning_icml26.algorithms.irt.judge import VARIANTS, JudgeRunner, newline_variant, typo_variant

__all__ = [
    "BayesianGRM",
    "category_probabilities",
    "eap_abilities",
    "fit_grm",
    "GradedResponseModel",
    "GRMFit",
    "JudgeRunner",
    "newline_variant",
    "quadrature",
    "scores_to_counts",
    "typo_variant",
    "VARIANTS",
]
