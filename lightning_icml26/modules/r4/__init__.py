"""R4: reward learning from ratings with the ranking mean squared error (Kharyal et al., ICML 2026).

This package holds the LightningModules and their losses. The other pieces live where their kind lives:
rated segments, the simulated teacher and :class:`~lightning_icml26.data.rl.RatingDataModule` in
:mod:`lightning_icml26.data.rl` (with the gymnasium helpers), and the online policy-learning runner
:func:`~lightning_icml26.tasks.run_online` in :mod:`lightning_icml26.tasks`.
"""

from __future__ import annotations

from lightning_icml26.modules.r4.losses import (
    SOFT_RANK_METHODS,
    average_ranks,
    bradley_terry_loss,
    ranking_mse_loss,
    rbrl_loss,
)
from lightning_icml26.modules.r4.model import R4RewardModel, RewardEnsemble

__all__ = [
    "SOFT_RANK_METHODS",
    "R4RewardModel",
    "RewardEnsemble",
    "average_ranks",
    "bradley_terry_loss",
    "ranking_mse_loss",
    "rbrl_loss",
]
