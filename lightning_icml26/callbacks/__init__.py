"""Lightning callbacks: stateful ones checkpoint their state and write files on rank zero only."""

from __future__ import annotations

from lightning_icml26.callbacks.arm_gumbel_temperature import GumbelTemperatureScheduler
from lightning_icml26.callbacks.arm_memory_trace import ARMMemoryTrace
from lightning_icml26.callbacks.arm_read_cost import ReadCostScheduler
from lightning_icml26.callbacks.arm_usage_penalty import UsagePenaltyScheduler
from lightning_icml26.callbacks.boltzmann import BoltzmannEvalCallback, plot_boltzmann
from lightning_icml26.callbacks.fair_reduction import FairReductionCallback
from lightning_icml26.callbacks.fed_round import FedRoundCallback
from lightning_icml26.callbacks.finite_loss import FailOnNonFiniteLoss, NonFiniteLossError
from lightning_icml26.callbacks.georeg import GeoReg
from lightning_icml26.callbacks.gradual_prune import GradualMagnitudePrune, cubic_sparsity
from lightning_icml26.callbacks.isa import SwapAttentionForInference
from lightning_icml26.callbacks.lasso_baseline import LassoBaseline
from lightning_icml26.callbacks.loes import LOESLayerSelection
from lightning_icml26.callbacks.lr_warmup_cosine import WarmupCosineSchedule, warmup_cosine_factor
from lightning_icml26.callbacks.metrics_plot import MetricsPlot, plot_history
from lightning_icml26.callbacks.pgs_validation import PGSValidationCallback
from lightning_icml26.callbacks.preemption import PreemptionCheckpoint
from lightning_icml26.callbacks.recourse import RecourseOnPredict
from lightning_icml26.callbacks.seen_detector import SeenDetectorCallback
from lightning_icml26.callbacks.sparsity import (
    MagnitudePrune,
    SparsityMonitor,
    classification_accuracy,
    global_magnitude_threshold,
    magnitude_masks,
    threshold_sweep,
)
from lightning_icml26.callbacks.upipe import UPipeStepProfile, count_fused_upipe_layers
from lightning_icml26.callbacks.weight_decay import WeightDecaySchedule

__all__ = [
    "ARMMemoryTrace",
    "count_fused_upipe_layers",
    "UPipeStepProfile",
    "GumbelTemperatureScheduler",
    "ReadCostScheduler",
    "UsagePenaltyScheduler",
    "SwapAttentionForInference",
    "SeenDetectorCallback",
    "PGSValidationCallback",
    "PreemptionCheckpoint",
    "FailOnNonFiniteLoss",
    "NonFiniteLossError",
    "LassoBaseline",
    "RecourseOnPredict",
    "WeightDecaySchedule",
    "GradualMagnitudePrune",
    "cubic_sparsity",
    "WarmupCosineSchedule",
    "warmup_cosine_factor",
    "BoltzmannEvalCallback",
    "classification_accuracy",
    "FairReductionCallback",
    "FedRoundCallback",
    "GeoReg",
    "global_magnitude_threshold",
    "LOESLayerSelection",
    "magnitude_masks",
    "MagnitudePrune",
    "MetricsPlot",
    "plot_boltzmann",
    "plot_history",
    "SparsityMonitor",
    "threshold_sweep",
]
