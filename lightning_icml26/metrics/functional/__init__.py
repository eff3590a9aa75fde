"""Functional twins of the metrics in :mod:`lightning_icml26.metrics`."""

from __future__ import annotations

__all__: list[str] = []

from lightning_icml26.metrics.functional.fairness import (  # noqa: E402
    binary_demographic_parity,
    binary_equal_opportunity,
    binary_equalized_odds,
    binary_group_rates,
    multiclass_demographic_parity,
    multiclass_equal_opportunity,
    multiclass_equalized_odds,
    multiclass_group_rates,
)

__all__ += [
    "binary_demographic_parity",
    "binary_equal_opportunity",
    "binary_equalized_odds",
    "binary_group_rates",
    "multiclass_demographic_parity",
    "multiclass_equal_opportunity",
    "multiclass_equalized_odds",
    "multiclass_group_rates",
]

from lightning_icml26.metrics.functional.sparsity import compression_ratio, select_weights, sparsity

__all__ += ["compression_ratio", "select_weights", "sparsity"]

from lightning_icml26.metrics.functional.boltzmann import (  # noqa: E402
    effective_sample_size,
    energy_w2,
    fit_tica,
    tica_w2,
    torus_w2,
    wasserstein_1d,
)

__all__ += ["effective_sample_size", "energy_w2", "fit_tica", "tica_w2", "torus_w2", "wasserstein_1d"]

from lightning_icml26.metrics.functional.consistency import (  # noqa: E402
    object_count_errors,
    rollout_consistency,
    token_accuracy_by_horizon,
)

__all__ += ["object_count_errors", "rollout_consistency", "token_accuracy_by_horizon"]

from lightning_icml26.metrics.functional.complementarity import (  # noqa: E402
    complementarity_gain,
    correlation_threshold,
    error_correlation,
    error_moments,
    forecast_loss,
    forecast_residuals,
    gain_weight_bound,
    linear_pool,
    logit_pool,
    oracle_pooling_weight,
    override_decision,
    pooling_gain,
    robust_pooling,
    robust_pooling_weight,
    robust_weight_cap,
    worst_case_gain,
)

__all__ += [
    "complementarity_gain",
    "correlation_threshold",
    "error_correlation",
    "error_moments",
    "forecast_loss",
    "forecast_residuals",
    "gain_weight_bound",
    "linear_pool",
    "logit_pool",
    "oracle_pooling_weight",
    "override_decision",
    "pooling_gain",
    "robust_pooling",
    "robust_pooling_weight",
    "robust_weight_cap",
    "worst_case_gain",
]
