"""torch.optim.Optimizer subclasses."""

from __future__ import annotations

from lightning_icml26.optim.baselines import L1SGD, LpSGD, SpredSGD
from lightning_icml26.optim.rewa import ReWAAdamW, ReWASGD, effective_lp, rewa_param_groups, signed_power
from lightning_icml26.optim.step_cost import interleaved_cost, step_cost

__all__ = [
    "effective_lp",
    "interleaved_cost",
    "L1SGD",
    "LpSGD",
    "rewa_param_groups",
    "ReWAAdamW",
    "ReWASGD",
    "signed_power",
    "SpredSGD",
    "step_cost",
]
