"""Functional twins of the metrics in :mod:`lightning_icml26.metrics`."""

from __future__ import annotations

from lightning_icml26.metrics.functional.boltzmann import (
    effective_sample_size,
    energy_w2,
    fit_tica,
    tica_w2,
    torus_w2,
    wasserstein_1d,
)
from lightning_icml26.metrics.functional.causal import (
    latent_pair_f1,
    orientation_accuracy,
    skeleton_f1,
    structural_hamming_distance,
)
from lightning_icml26.metrics.functional.code_refinement import (
    counterexample_tokens,
    fix_rate,
    pass_at_k,
    pass_at_k_per_problem,
)
from lightning_icml26.metrics.functional.complementarity import (
    complementarity_gain,
    error_correlation,
    error_moments,
    forecast_loss,
    forecast_residuals,
    item_loss,
    robust_pooling,
)
from lightning_icml26.metrics.functional.fairness import (
    binary_demographic_parity,
    binary_equal_opportunity,
    binary_equalized_odds,
    binary_group_rates,
    multiclass_demographic_parity,
    multiclass_equal_opportunity,
    multiclass_equalized_odds,
    multiclass_group_rates,
)
from lightning_icml26.metrics.functional.graph_substrate import (
    edge_micro_f1,
    extract_facts,
    graph_exact_match,
    normalize_answer,
)
from lightning_icml26.metrics.functional.irt import (
    accumulate_counts,
    fit_grm,
    grm_reliability,
    human_alignment,
    marginal_reliability,
    modal_category,
    prompt_consistency,
    theta_range,
)
from lightning_icml26.metrics.functional.isa import attention_approx_error
from lightning_icml26.metrics.functional.itc import (
    object_count_errors,
    object_motion,
    rollout_consistency,
    token_accuracy_by_horizon,
)
from lightning_icml26.metrics.functional.kv_budget import kv_budget, kv_cache_bytes
from lightning_icml26.metrics.functional.matching import collision_rate, stability_violation_rate, stable_regret
from lightning_icml26.metrics.functional.novelty import coverage_entropy, distinct_n, seen_rate
from lightning_icml26.metrics.functional.recourse import (
    query_count,
    recourse_cost,
    recourse_sparsity,
    recourse_validity,
)
from lightning_icml26.metrics.functional.sparsity import compression_ratio, select_weights, sparsity, support_f1
from lightning_icml26.metrics.functional.spectrum_gap import feature_spectrum_gap
from lightning_icml26.metrics.functional.valueflow import (
    anchor_pl_intensity,
    hierarchical_retrieval,
    label_tree_agreement,
)

__all__ = [
    "kv_budget",
    "kv_cache_bytes",
    "edge_micro_f1",
    "extract_facts",
    "graph_exact_match",
    "normalize_answer",
    "attention_approx_error",
    "coverage_entropy",
    "distinct_n",
    "seen_rate",
    "counterexample_tokens",
    "fix_rate",
    "pass_at_k",
    "pass_at_k_per_problem",
    "anchor_pl_intensity",
    "hierarchical_retrieval",
    "label_tree_agreement",
    "collision_rate",
    "stability_violation_rate",
    "stable_regret",
    "latent_pair_f1",
    "orientation_accuracy",
    "skeleton_f1",
    "structural_hamming_distance",
    "accumulate_counts",
    "fit_grm",
    "grm_reliability",
    "human_alignment",
    "marginal_reliability",
    "modal_category",
    "prompt_consistency",
    "theta_range",
    "binary_demographic_parity",
    "binary_equal_opportunity",
    "binary_equalized_odds",
    "binary_group_rates",
    "complementarity_gain",
    "compression_ratio",
    "effective_sample_size",
    "energy_w2",
    "error_correlation",
    "error_moments",
    "feature_spectrum_gap",
    "fit_tica",
    "forecast_loss",
    "forecast_residuals",
    "item_loss",
    "multiclass_demographic_parity",
    "multiclass_equal_opportunity",
    "multiclass_equalized_odds",
    "multiclass_group_rates",
    "object_count_errors",
    "object_motion",
    "query_count",
    "recourse_cost",
    "recourse_sparsity",
    "recourse_validity",
    "robust_pooling",
    "rollout_consistency",
    "select_weights",
    "sparsity",
    "support_f1",
    "tica_w2",
    "token_accuracy_by_horizon",
    "torus_w2",
    "wasserstein_1d",
]
