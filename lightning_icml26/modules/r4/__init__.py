"""R4: reward learning from ratings with the ranking mean squared error (Kharyal et al., ICML 2026).

Importing this package imports torch and lightning only. The gymnasium / stable-baselines3 pieces
(:func:`collect_segments`, :class:`RewardReplacementWrapper`, :func:`segments_from_transitions`,
:func:`run_online`, :func:`reward_function`, :func:`fit_reward_model`) are loaded on first access.
"""

from __future__ import annotations

import importlib
from typing import Any

from lightning_icml26.modules.r4.data import LOSSES, RatingDataModule, Segments, quantile_bin_edges, simulate_ratings
from lightning_icml26.modules.r4.losses import bradley_terry_loss, check_ratings, ranking_mse_loss, rbrl_loss
from lightning_icml26.modules.r4.model import R4RewardModel, RewardEnsemble

_LAZY = {
    "collect_segments": "envs",
    "segments_from_transitions": "envs",
    "RewardReplacementWrapper": "envs",
    "run_online": "online",
    "reward_function": "online",
    "fit_reward_model": "online",
}

__all__ = [
    "LOSSES",
    "R4RewardModel",
    "RatingDataModule",
    "RewardEnsemble",
    "Segments",
    "bradley_terry_loss",
    "check_ratings",
    "quantile_bin_edges",
    "ranking_mse_loss",
    "rbrl_loss",
    "simulate_ratings",
    *_LAZY,
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        module = importlib.import_module(f"lightning_icml26.modules.r4.{_LAZY[name]}")
        return getattr(module, name)
    raise AttributeError(f"module 'lightning_icml26.modules.r4' has no attribute {name!r}")
