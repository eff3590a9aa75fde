"""torchmetrics ``AnchorPLIntensity``: VALUEFLOW's anchor-based intensity evaluator as a metric.

Each update adds ranked windows: a response ranked with ``k - 1`` anchors of known intensity. The state holds,
for ``num_responses`` responses declared up front and ``num_windows`` windows each, the rankings
``[R, m, k]``, the anchors' intensities ``[R, m, k - 1]`` and a fill count ``[R, m]``, all summed across
ranks, so every ``(response, window)`` must be written by exactly one update on one rank. ``compute()`` runs
the Plackett-Luce fit with fixed anchor utilities, the bisection, isotonic calibration and window guards of
:func:`lightning_icml26.algorithms.estimate_intensity` for every response whose windows are all filled.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from lightning_icml26.metrics._plot import PlottableMetric
from lightning_icml26.metrics.functional.valueflow import _estimate, scatter_windows

__all__ = ["AnchorPLIntensity"]


class AnchorPLIntensity(PlottableMetric):
    """Intensity in ``[-10, 10]`` of each response from rankings against fixed anchors (Plackett-Luce).

    Args:
        num_responses: number of responses ``R`` (ids ``0..R-1``).
        num_windows: windows (judge prompts) per response ``m`` (paper: 3).
        k: items per window, the response plus ``k - 1`` anchors (paper: 6), ``>= 2``.
        l2: ridge of the fit (paper: ``1e-3``).
        utility_scale: anchor utilities are ``utility_scale * I_a`` (paper: 1).
        guard_margin: offset below (above) the anchors of a response that lost (won) every window; 0 (default,
            the authors' released behaviour) places it at the next float beyond the anchors.
        **kwargs: forwarded to :class:`torchmetrics.Metric`.

    ``compute()`` returns ``[R]`` intensities, ``nan`` for a response with no window; a response with only some
    of its windows, or a window written twice, raises ``ValueError``.

    Example:
        >>> metric = AnchorPLIntensity(num_responses=2, num_windows=1, k=3)
        >>> anchors = torch.tensor([[6.0, -6.0], [6.0, -6.0]])
        >>> metric.update(torch.tensor([0, 1]), torch.tensor([0, 0]), torch.tensor([[1, 0, 2], [1, 2, 0]]), anchors)
        >>> out = metric.compute(); bool(out[0] > out[1])
        True
    """

    is_differentiable = False
    higher_is_better = None
    full_state_update = False
    rankings: Tensor
    anchors: Tensor
    filled: Tensor

    def __init__(
        self,
        num_responses: int,
        num_windows: int = 3,
        k: int = 6,
        l2: float = 1e-3,
        utility_scale: float = 1.0,
        guard_margin: float = 0.0,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        for name, value, low in (("num_responses", num_responses, 1), ("num_windows", num_windows, 1), ("k", k, 2)):
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ValueError(f"{name} must be an int >= {low}, got {value!r}")
        if l2 < 0:
            raise ValueError(f"l2 must be >= 0, got {l2}")
        if utility_scale <= 0:
            raise ValueError(f"utility_scale must be positive, got {utility_scale}")
        self.num_responses, self.num_windows, self.k = num_responses, num_windows, k
        self.l2, self.utility_scale, self.guard_margin = l2, utility_scale, guard_margin
        self.add_state("rankings", torch.zeros(num_responses, num_windows, k, dtype=torch.long), "sum")
        self.add_state("anchors", torch.zeros(num_responses, num_windows, k - 1, dtype=torch.float64), "sum")
        self.add_state("filled", torch.zeros(num_responses, num_windows, dtype=torch.long), "sum")

    def update(self, response_ids: Tensor, window_ids: Tensor, rankings: Tensor, anchor_intensities: Tensor) -> None:
        """Add windows: ``[B]`` response and window ids, ``[B, k]`` rankings, ``[B, k - 1]`` anchor intensities."""
        scatter_windows(
            self.rankings, self.anchors, self.filled, response_ids, window_ids, rankings, anchor_intensities
        )

    def compute(self) -> Tensor:
        """``[R]`` intensities (``nan`` where a response has no window)."""
        return _estimate(self.rankings, self.anchors, self.filled, self.l2, self.utility_scale, self.guard_margin)
