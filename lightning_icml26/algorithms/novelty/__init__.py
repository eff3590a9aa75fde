"""Seen-Detector novelty reward for self-play: one-class detectors, calibration and the questioner's reward.

Inspired by an ICML 2026 method against iteration collapse in self-play (see ``docs/novelty-selfplay.md``).
"""

from __future__ import annotations

from lightning_icml26.algorithms.novelty.calibration import CalibratedSeenDetector, EmpiricalCDF
from lightning_icml26.algorithms.novelty.detectors import (
    DeepSVDDDetector,
    IsolationForestDetector,
    KNNDistanceDetector,
    OneClassSVMDetector,
    SeenDetector,
    check_embeddings,
)
from lightning_icml26.algorithms.novelty.reward import (
    MemoryPenalty,
    NoveltyReward,
    agreement_rate,
    bleu_distance_matrix,
    repetition_penalty,
    uncertainty_reward,
)

__all__ = [
    "agreement_rate",
    "bleu_distance_matrix",
    "MemoryPenalty",
    "NoveltyReward",
    "repetition_penalty",
    "uncertainty_reward",
    "CalibratedSeenDetector",
    "check_embeddings",
    "DeepSVDDDetector",
    "EmpiricalCDF",
    "IsolationForestDetector",
    "KNNDistanceDetector",
    "OneClassSVMDetector",
    "SeenDetector",
]
