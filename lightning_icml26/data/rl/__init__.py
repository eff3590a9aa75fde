"""Reinforcement-learning data: rated trajectory segments, MinAtar token trajectories, gymnasium helpers.

Importing this package imports torch and lightning only (the MinAtar collector in
:mod:`lightning_icml26.data.rl.minatar` imports ``minatar`` at call time through ``require``).
The gymnasium pieces (:func:`collect_segments`, :func:`segments_from_transitions`,
:class:`RewardReplacementWrapper`) live in
:mod:`lightning_icml26.data.rl.envs` and are loaded on first access, because ``gymnasium`` is an optional
dependency (the ``rl`` extra) and :class:`RewardReplacementWrapper` subclasses ``gymnasium.Wrapper``.
"""

from __future__ import annotations

import importlib
from typing import Any

from lightning_icml26._optional import require
from lightning_icml26.data.rl.minatar import (
    GAMES,
    FrameRules,
    MinAtarEpisodes,
    PatchCodebook,
    collect_minatar,
    noise_floor,
    patch_keys,
)
from lightning_icml26.data.rl.minatar_windows import (
    TokenWindowDataModule,
    episode_tokens,
    episode_windows,
    heuristic_policy,
)
from lightning_icml26.data.rl.ratings import (
    LOSSES,
    RatingDataModule,
    Segments,
    check_ratings,
    quantile_bin_edges,
    simulate_ratings,
)

# Names from the gymnasium-dependent module, resolved lazily by ``__getattr__`` (gymnasium is optional).
_LAZY = {
    "collect_segments": "envs",
    "segments_from_transitions": "envs",
    "RewardReplacementWrapper": "envs",
    "state_action_box": "envs",
}

__all__ = [
    "FrameRules",
    "GAMES",
    "LOSSES",
    "MinAtarEpisodes",
    "PatchCodebook",
    "TokenWindowDataModule",
    "collect_minatar",
    "episode_tokens",
    "episode_windows",
    "heuristic_policy",
    "noise_floor",
    "patch_keys",
    "RatingDataModule",
    "Segments",
    "check_ratings",
    "quantile_bin_edges",
    "simulate_ratings",
    *_LAZY,
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        require("gymnasium", extra="rl", purpose=name)  # the install hint instead of a bare ModuleNotFoundError
        module = importlib.import_module(f"lightning_icml26.data.rl.{_LAZY[name]}")
        return getattr(module, name)
    raise AttributeError(f"module 'lightning_icml26.data.rl' has no attribute {name!r}")
