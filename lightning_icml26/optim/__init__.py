"""torch.optim.Optimizer subclasses."""

from __future__ import annotations

__all__: list[str] = []

from lightning_icml26.optim.baselines import L1SGD, LpSGD, SpredSGD
from lightning_icml26.optim.rewa import ReWAAdamW, ReWASGD, effective_lp, rewa_param_groups, signed_power

__all__ += ["L1SGD", "LpSGD", "ReWAAdamW", "ReWASGD", "SpredSGD", "effective_lp", "rewa_param_groups", "signed_power"]
