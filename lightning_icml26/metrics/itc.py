"""torchmetrics for the long-horizon consistency of imagined token rollouts (fixed-shape sum states)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from lightning_icml26.metrics._plot import PlottableMetric
from lightning_icml26.metrics.functional.itc import (
    _consistency_arg_validation,
    _consistency_tensor_validation,
    _rates,
    object_count_errors,
)

__all__ = ["RolloutConsistency", "TokenAccuracyByHorizon"]


def _check_horizon(max_horizon: int) -> None:
    if not isinstance(max_horizon, int) or max_horizon < 1:
        raise ValueError(f"max_horizon must be a positive integer, got {max_horizon!r}")


class TokenAccuracyByHorizon(PlottableMetric):
    """Fraction of cells equal to the truth at every rollout horizon ``1..max_horizon``.

    ``update(preds, target)`` takes ``(B, T, *cells)`` token tensors with ``T <= max_horizon`` (``preds[:, h]``
    is ``h + 1`` steps ahead). ``compute()`` returns a ``(max_horizon,)`` tensor (``nan`` where nothing was seen).

    Args:
        max_horizon: longest horizon tracked.
        **kwargs: forwarded to :class:`torchmetrics.Metric`.

    Example:
        >>> metric = TokenAccuracyByHorizon(max_horizon=2)
        >>> metric.update(torch.tensor([[[1, 1], [1, 0]]]), torch.tensor([[[1, 1], [0, 0]]]))
        >>> metric.compute()
        tensor([1.0000, 0.5000])
    """

    is_differentiable = False
    higher_is_better = True
    full_state_update = False
    plot_lower_bound = 0.0
    plot_upper_bound = 1.0
    correct: torch.Tensor
    cells: torch.Tensor

    def __init__(self, max_horizon: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        _check_horizon(max_horizon)
        self.max_horizon = max_horizon
        self.add_state("correct", torch.zeros(max_horizon, dtype=torch.long), dist_reduce_fx="sum")
        self.add_state("cells", torch.zeros(max_horizon, dtype=torch.long), dist_reduce_fx="sum")

    def update(self, preds: torch.Tensor, target: torch.Tensor) -> None:
        """Accumulate one batch of rollouts."""
        _consistency_tensor_validation(preds, target)
        steps = preds.shape[1]
        if steps > self.max_horizon:
            raise ValueError(f"preds has {steps} horizons but max_horizon={self.max_horizon}")
        equal = (preds == target).reshape(preds.shape[0], steps, -1)
        self.correct[:steps] += equal.sum(dim=(0, 2))
        self.cells[:steps] += equal.shape[0] * equal.shape[2]

    def compute(self) -> torch.Tensor:
        """Accuracy per horizon."""
        return (self.correct.double() / self.cells.double()).float()


class RolloutConsistency(PlottableMetric):
    """Object duplication / disappearance / transmutation rates and token accuracy by horizon.

    See :mod:`lightning_icml26.metrics.functional.itc` for the definitions (per-kind object counts of
    the imagined frame against the true frame at the same horizon). All states are fixed-shape
    ``(max_horizon,)`` sums, so DDP sync is exact.

    Args:
        num_tokens: vocabulary size.
        object_tokens: token ids that are objects.
        max_horizon: longest horizon tracked.
        **kwargs: forwarded to :class:`torchmetrics.Metric`.

    Example:
        >>> metric = RolloutConsistency(num_tokens=4, object_tokens=[2, 3], max_horizon=2)
        >>> metric.update(torch.tensor([[[0, 2, 2, 3], [0, 0, 0, 3]]]), torch.tensor([[[0, 2, 0, 3], [2, 0, 0, 3]]]))
        >>> out = metric.compute()
        >>> out["duplication_rate"].tolist(), out["disappearance_rate"].tolist(), out["token_accuracy"].tolist()
        ([0.5, 0.0], [0.0, 0.5], [0.75, 0.75])
    """

    is_differentiable = False
    higher_is_better: bool | None = None
    full_state_update = False
    duplications: torch.Tensor
    disappearances: torch.Tensor
    transmutations: torch.Tensor
    objects: torch.Tensor
    correct: torch.Tensor
    cells: torch.Tensor

    def __init__(self, num_tokens: int, object_tokens: Sequence[int], max_horizon: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        object_tokens = [int(t) for t in object_tokens] if not isinstance(object_tokens, str) else object_tokens
        _consistency_arg_validation(num_tokens, object_tokens)
        _check_horizon(max_horizon)
        self.num_tokens = num_tokens
        self.object_tokens = list(object_tokens)
        self.max_horizon = max_horizon
        for name in ("duplications", "disappearances", "transmutations", "objects", "correct", "cells"):
            self.add_state(name, torch.zeros(max_horizon, dtype=torch.long), dist_reduce_fx="sum")

    def update(self, preds: torch.Tensor, target: torch.Tensor) -> None:
        """Accumulate ``(B, T, *cells)`` imagined frames against the true ones."""
        _consistency_tensor_validation(preds, target, self.num_tokens)
        steps = preds.shape[1]
        if steps > self.max_horizon:
            raise ValueError(f"preds has {steps} horizons but max_horizon={self.max_horizon}")
        errors = object_count_errors(preds, target, self.num_tokens, self.object_tokens)
        self.duplications[:steps] += errors["duplications"].sum(0)
        self.disappearances[:steps] += errors["disappearances"].sum(0)
        self.transmutations[:steps] += errors["transmutations"].sum(0)
        self.objects[:steps] += errors["objects"].sum(0)
        equal = (preds == target).reshape(preds.shape[0], steps, -1)
        self.correct[:steps] += equal.sum(dim=(0, 2))
        self.cells[:steps] += equal.shape[0] * equal.shape[2]

    def compute(self) -> dict[str, torch.Tensor]:
        """``(max_horizon,)`` rates and accuracy (keys as in ``rollout_consistency``)."""
        return _rates(
            {
                "duplications": self.duplications,
                "disappearances": self.disappearances,
                "transmutations": self.transmutations,
                "objects": self.objects,
                "correct": self.correct,
                "cells": self.cells,
            }
        )
