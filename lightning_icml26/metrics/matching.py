"""torchmetrics ``StableRegret``, ``StabilityViolationRate`` and ``CollisionRate`` for matching markets.

All states are sums (per-player regret, violation and step counts, rejected and total proposals), so a DDP
run that splits the steps across ranks gives the numbers of one process that saw them all.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from lightning_icml26.metrics._plot import PlottableMetric
from lightning_icml26.metrics.functional.matching import _collision_update, _stable_regret_update, _violation_update

__all__ = ["CollisionRate", "StabilityViolationRate", "StableRegret"]


class StableRegret(PlottableMetric):
    """Per-player cumulative player-optimal stable regret.

    Args:
        n_players: ``N``.
        **kwargs: forwarded to :class:`torchmetrics.Metric`.

    Example:
        >>> metric = StableRegret(n_players=2)
        >>> metric.update(torch.tensor([[1.0, 0.5]]), torch.tensor([[0.0, 0.5]]))
        >>> metric.compute()
        tensor([1., 0.], dtype=torch.float64)
    """

    is_differentiable = False
    higher_is_better = False
    full_state_update = False
    regret: Tensor

    def __init__(self, n_players: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if isinstance(n_players, bool) or not isinstance(n_players, int) or n_players < 1:
            raise ValueError(f"n_players must be an int >= 1, got {n_players!r}")
        self.n_players = n_players
        self.add_state("regret", default=torch.zeros(n_players, dtype=torch.float64), dist_reduce_fx="sum")

    def update(self, optimal: Tensor, obtained: Tensor, present: Tensor | None = None) -> None:
        """Add ``(T, N)`` steps (see :func:`~lightning_icml26.metrics.functional.stable_regret`)."""
        if optimal.shape[-1] != self.n_players:
            raise ValueError(
                f"optimal must have {self.n_players} players in its last dimension, got {tuple(optimal.shape)}"
            )
        self.regret += _stable_regret_update(optimal, obtained, present).to(self.regret)

    def compute(self) -> Tensor:
        """``(N,)`` cumulative regret per player."""
        return self.regret.clone()


class StabilityViolationRate(PlottableMetric):
    """Fraction of steps whose realised matching has a blocking pair among the present players.

    The market's preferences come with each update, so one metric can follow several markets.

    Example:
        >>> metric = StabilityViolationRate()
        >>> utilities, arm_rank = torch.tensor([[0.9, 0.5], [0.8, 0.6]]), torch.tensor([[1, 0], [0, 1]])
        >>> metric.update(torch.tensor([[1, 0], [0, 1]]), utilities, arm_rank)
        >>> metric.compute()
        tensor(0.5000, dtype=torch.float64)
    """

    is_differentiable = False
    higher_is_better = False
    full_state_update = False
    violations: Tensor
    steps: Tensor

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.add_state("violations", default=torch.zeros((), dtype=torch.long), dist_reduce_fx="sum")
        self.add_state("steps", default=torch.zeros((), dtype=torch.long), dist_reduce_fx="sum")

    def update(self, matching: Tensor, utilities: Tensor, arm_rank: Tensor, present: Tensor | None = None) -> None:
        """Add ``(T, N)`` matchings (``-1`` = unmatched) of a market with ``(N, K)`` utilities and ``(K, N)`` ranks."""
        violations, steps = _violation_update(matching, utilities, arm_rank, present)
        self.violations += violations.to(self.violations.device)
        self.steps += steps.to(self.steps.device)

    def compute(self) -> Tensor:
        """Violating steps over steps (``nan`` before any update)."""
        return self.violations.double() / self.steps.double()


class CollisionRate(PlottableMetric):
    """Rejected proposals over proposals.

    Example:
        >>> metric = CollisionRate()
        >>> metric.update(torch.tensor([[0, 0], [1, -1]]), torch.tensor([[True, False], [True, False]]))
        >>> metric.compute()
        tensor(0.3333, dtype=torch.float64)
    """

    is_differentiable = False
    higher_is_better = False
    full_state_update = False
    rejected: Tensor
    proposals: Tensor

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.add_state("rejected", default=torch.zeros((), dtype=torch.long), dist_reduce_fx="sum")
        self.add_state("proposals", default=torch.zeros((), dtype=torch.long), dist_reduce_fx="sum")

    def update(self, proposals: Tensor, accepted: Tensor) -> None:
        """Add ``(T, N)`` proposals (``-1`` = none) and whether each was accepted."""
        rejected, total = _collision_update(proposals, accepted)
        self.rejected += rejected.to(self.rejected.device)
        self.proposals += total.to(self.proposals.device)

    def compute(self) -> Tensor:
        """Rejected over proposed (``nan`` before any proposal)."""
        return self.rejected.double() / self.proposals.double()
