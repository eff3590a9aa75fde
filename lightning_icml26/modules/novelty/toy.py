"""``toy_selfplay_module``: a :class:`SelfPlayModule` on the toy world from plain numbers (for Hydra recipes)."""

from __future__ import annotations

from collections.abc import Callable, Iterable

import torch
from torch import nn

from lightning_icml26.algorithms.novelty import (
    CalibratedSeenDetector,
    DeepSVDDDetector,
    IsolationForestDetector,
    KNNDistanceDetector,
    MemoryPenalty,
    NoveltyReward,
    OneClassSVMDetector,
)
from lightning_icml26.data.selfplay import CategoricalQuestioner, ToySolver, ToyWorld
from lightning_icml26.modules.novelty.selfplay import SelfPlayModule

__all__ = ["DETECTORS", "toy_selfplay_module"]

DETECTORS: dict[str, Callable[[int], object]] = {
    "knn": lambda seed: KNNDistanceDetector(k=5),
    "ocsvm": lambda seed: OneClassSVMDetector(),
    "iforest": lambda seed: IsolationForestDetector(seed=seed),
    "deep_svdd": lambda seed: DeepSVDDDetector(seed=seed),
}
"""Detector factories by name (``seed -> detector``)."""


def toy_selfplay_module(
    num_difficulties: int = 6,
    num_variants: int = 8,
    beta: float = 1.0,
    lambda_rep: float = 1.0,
    lambda_mem: float = 0.0,
    detector: str = "knn",
    min_buffer: int = 16,
    holdout: float = 0.25,
    group_size: int = 8,
    num_samples: int = 8,
    band: tuple[float, float] = (0.25, 0.75),
    optimizer: Callable[[Iterable[nn.Parameter]], torch.optim.Optimizer] | None = None,
    seed: int = 0,
) -> SelfPlayModule:
    """Build the toy world's questioner, solver, detector and reward, and the module over them.

    The detector is always attached (its seen rate is logged); ``beta = 0`` turns its reward term off, so the
    baselines are configurations: uncertainty only (``beta = lambda_rep = 0``), R-Zero (``lambda_rep > 0``),
    memory penalty (``lambda_mem > 0``).

    Args:
        num_difficulties: difficulty levels of the world (must match the data module's).
        num_variants: variants per cell (must match the data module's).
        beta: novelty weight.
        lambda_rep: repetition-penalty weight.
        lambda_mem: memory-penalty weight.
        detector: ``"knn"``, ``"ocsvm"``, ``"iforest"`` or ``"deep_svdd"``.
        min_buffer: buffered problems before the detector is fitted.
        holdout: calibration share of the buffer.
        group_size: questions per prompt.
        num_samples: solver answers per question.
        band: solver data band.
        optimizer: questioner optimizer factory (default ``SGD(lr=8)``).
        seed: seed of the module and the detector.

    Returns:
        The :class:`SelfPlayModule`.

    Example:
        >>> mod = toy_selfplay_module(num_difficulties=3, num_variants=2, detector="iforest")
        >>> type(mod.reward.detector.detector).__name__
        'IsolationForestDetector'
    """
    if detector not in DETECTORS:
        raise ValueError(f"detector must be one of {sorted(DETECTORS)}, got {detector!r}")
    world = ToyWorld(num_difficulties, num_variants)
    cal = CalibratedSeenDetector(DETECTORS[detector](seed), holdout=holdout, min_buffer=min_buffer, seed=seed)  # type: ignore[arg-type]
    reward = NoveltyReward(
        cal, beta=beta, lambda_rep=lambda_rep, lambda_mem=lambda_mem,
        memory=MemoryPenalty() if lambda_mem > 0 else None, n_gram=2,
    )  # fmt: skip
    if optimizer is None:
        optimizer = _sgd8
    return SelfPlayModule(
        CategoricalQuestioner(world), ToySolver(world), world.embed, reward, categories=world.categories,
        num_categories=world.num_templates, group_size=group_size, num_samples=num_samples, band=tuple(band),  # type: ignore[arg-type]
        optimizer=optimizer, seed=seed,
    )  # fmt: skip


def _sgd8(params: Iterable[nn.Parameter]) -> torch.optim.Optimizer:
    return torch.optim.SGD(params, lr=8.0)
