"""Streaming human-AI complementarity metrics with fixed-shape, sum-reduced float64 states.

Robust human-AI complementarity (docs/complementarity.md; reconstructed from the abstract). Every state is a sum
(``dist_reduce_fx="sum"``), so a DDP sync is one all-reduce and the result equals one process over the
concatenated data. Definitions, conventions and the deviations from the paper are in
:mod:`lightning_icml26.metrics.functional.complementarity`.

* :class:`ErrorCorrelation`: Pearson correlation of ``p_H - y`` and ``p_A - y`` (per class for class
  probabilities) from running sums ``Σx, Σy, Σx², Σy², Σxy, n``.
* :class:`ComplementarityGain`: mean human, AI and team losses (Brier, log, squared or a user utility) and
  the team's gain over the best single member.
* :class:`RobustPoolingWeight`: the robust weight ``w*``, its guaranteed gain ``G*`` over an uncertainty set
  of AI error levels (and correlations), the safe-weight cap, the correlation threshold and the oracle
  quantities, from running second moments of the errors.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch
from torch import Tensor

from lightning_icml26.algorithms.complementarity import check_interval, check_pool_weight
from lightning_icml26.metrics._plot import PlottableMetric
from lightning_icml26.metrics.functional._forecast_format import _check_num_classes, _format_pair
from lightning_icml26.metrics.functional.complementarity import (
    _AVERAGES,
    Average,
    LossFn,
    LossName,
    _check_loss,
    _correlation_sums,
    _gain_compute,
    _gain_sums,
    _pearson_from_sums,
    _robust_compute,
)

__all__ = ["ComplementarityGain", "ErrorCorrelation", "RobustPoolingWeight"]


class ErrorCorrelation(PlottableMetric):
    """Streaming correlation of human and AI forecast errors, ``corr(p_H - y, p_A - y)``.

    ``update(p_human, p_ai, target)`` takes ``(N,)`` forecasts with ``(N,)`` outcomes, or ``(N, K)`` class
    probabilities with ``(N,)`` class ids (``num_classes=K``; one correlation per class).

    Args:
        num_classes: ``None`` (one forecast per item) or ``K >= 2``.
        average: ``"none"`` (``(K,)`` per class), ``"macro"`` (mean over classes) or ``"micro"`` (one
            correlation over all ``N * K`` residual pairs); ignored for ``num_classes=None``.
        probabilities: check forecasts and outcomes lie in ``[0, 1]``; ``False`` for real-valued targets.
        validate_args: check shapes and ranges in ``update``.
        **kwargs: forwarded to :class:`torchmetrics.Metric`.

    Example:
        >>> metric = ErrorCorrelation()
        >>> y = torch.tensor([1.0, 0.0, 1.0, 0.0])
        >>> metric.update(torch.tensor([0.9, 0.2]), torch.tensor([0.5, 0.1]), y[:2])
        >>> metric.update(torch.tensor([0.6, 0.1]), torch.tensor([0.8, 0.4]), y[2:])
        >>> metric.compute()
        tensor(0.5855, dtype=torch.float64)
    """

    is_differentiable = False
    higher_is_better: bool | None = None
    full_state_update = False
    n: Tensor
    sum_human: Tensor
    sum_ai: Tensor
    sum_human_sq: Tensor
    sum_ai_sq: Tensor
    sum_cross: Tensor

    def __init__(
        self,
        num_classes: int | None = None,
        average: Average = "macro",
        probabilities: bool = True,
        validate_args: bool = True,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        _check_num_classes(num_classes)
        if average not in _AVERAGES:
            raise ValueError(f"average must be one of {_AVERAGES}, got {average!r}")
        self.num_classes = num_classes
        self.average = average
        self.probabilities = probabilities
        self.validate_args = validate_args
        width = num_classes or 1
        self.add_state("n", torch.zeros((), dtype=torch.float64), dist_reduce_fx="sum")
        for name in ("sum_human", "sum_ai", "sum_human_sq", "sum_ai_sq", "sum_cross"):
            self.add_state(name, torch.zeros(width, dtype=torch.float64), dist_reduce_fx="sum")

    def update(self, p_human: Tensor, p_ai: Tensor, target: Tensor) -> None:
        """Add a batch of forecasts and outcomes."""
        h, a, y = _format_pair(p_human, p_ai, target, self.num_classes, self.probabilities, self.validate_args)
        sums = _correlation_sums(h - y, a - y)
        self.n += h.shape[0]
        for name, value in zip(("sum_human", "sum_ai", "sum_human_sq", "sum_ai_sq", "sum_cross"), sums, strict=True):
            state = getattr(self, name)
            state += value.to(state.device)

    def compute(self) -> Tensor:
        """The correlation (float64 scalar, or ``(K,)`` for ``average="none"``); NaN on zero variance."""
        average = self.average if self.num_classes is not None else "none"
        return _pearson_from_sums(
            self.n, self.sum_human, self.sum_ai, self.sum_human_sq, self.sum_ai_sq, self.sum_cross, average
        )


class ComplementarityGain(PlottableMetric):
    """Team loss against the best single member: ``gain = min(L_H, L_A) - L_team`` (higher is better).

    The team forecast is the linear pool with ``weight`` on the AI, or the ``p_team`` passed to ``update``.
    ``compute`` returns the mean losses ``loss_human``, ``loss_ai``, ``loss_team``, the ``gain`` and the
    ``gain_over_human`` ``L_H - L_team`` (float64 scalars).

    Args:
        loss: ``"brier"`` (multi-class Brier ``sum_k (p_k - y_k)^2``), ``"log"``, ``"squared"`` (real-valued
            outcomes, no range check) or a callable ``(preds, target) -> per-item loss`` on ``(N, C)`` tensors.
        utility: optional callable ``(preds, target) -> per-item utility``; the metric then works with
            ``-utility`` and the gains are utility gains.
        weight: AI weight in ``[0, 1]`` of the default linear pool.
        num_classes: ``None`` (one forecast per item) or ``K >= 2`` (class probabilities, class-id targets).
        validate_args: check shapes and ranges in ``update``.
        **kwargs: forwarded to :class:`torchmetrics.Metric`.

    Example:
        >>> metric = ComplementarityGain(loss="brier", weight=0.5)
        >>> metric.update(torch.tensor([0.9, 0.3]), torch.tensor([0.6, 0.0]), torch.tensor([1, 0]))
        >>> out = metric.compute()
        >>> round(float(out["loss_team"]), 4), round(float(out["gain"]), 4)
        (0.0425, 0.0075)
    """

    is_differentiable = False
    higher_is_better: bool | None = True
    full_state_update = False
    n: Tensor
    loss_human: Tensor
    loss_ai: Tensor
    loss_team: Tensor

    def __init__(
        self,
        loss: LossName | LossFn = "brier",
        utility: LossFn | None = None,
        weight: float = 0.5,
        num_classes: int | None = None,
        validate_args: bool = True,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        _check_loss(loss)
        _check_num_classes(num_classes)
        if utility is not None and not callable(utility):
            raise TypeError(f"utility must be a callable (preds, target) -> per-item utility, got {utility!r}")
        check_pool_weight(weight)
        self.loss = loss
        self.utility = utility
        self.weight = float(weight)
        self.num_classes = num_classes
        self.validate_args = validate_args
        for name in ("n", "loss_human", "loss_ai", "loss_team"):
            self.add_state(name, torch.zeros((), dtype=torch.float64), dist_reduce_fx="sum")

    def update(self, p_human: Tensor, p_ai: Tensor, target: Tensor, p_team: Tensor | None = None) -> None:
        """Add a batch; ``p_team`` replaces the linear pool when given."""
        lh, la, lt, n = _gain_sums(
            p_human, p_ai, target, p_team, self.weight, self.loss, self.utility, self.num_classes, self.validate_args
        )
        self.n += n
        self.loss_human += lh.to(self.loss_human.device)
        self.loss_ai += la.to(self.loss_ai.device)
        self.loss_team += lt.to(self.loss_team.device)

    def compute(self) -> dict[str, Tensor]:
        """Mean losses and gains (NaN before any update)."""
        return _gain_compute(self.n, self.loss_human, self.loss_ai, self.loss_team)


class RobustPoolingWeight(PlottableMetric):
    """Robust pooling weight ``w*`` and its guaranteed gain over an uncertainty set of AI error levels.

    From running second moments of the errors it estimates the human's error scale ``sigma_human`` (RMSE,
    the decision maker's own reliability) and, unless ``rho_range`` is given, the uncentred error
    correlation ``rho``; the AI's error scale is only known to lie in ``sigma_ai_range``. ``compute``
    returns ``robust_weight``, ``guaranteed_gain`` (worst case of ``L_H - L_team`` over the set, squared /
    Brier loss), ``weight_cap`` (largest weight with a non-negative worst case), ``rho_threshold``
    (``sigma_human / hi``: a positive guarantee needs ``rho < rho_threshold``), ``oracle_weight`` and
    ``oracle_gain`` (with the estimated ``sigma_ai``), ``gain_at_robust_weight`` (realised on the data) and
    the estimates ``sigma_human``, ``sigma_ai``, ``rho``.

    Args:
        sigma_ai_range: ``(lo, hi)`` with ``0 <= lo <= hi < inf``, in the units of the errors (RMSE).
        rho_range: optional ``(rho_lo, rho_hi)`` in ``[-1, 1]``; the worst case uses ``rho_hi``.
        num_classes: ``None`` or ``K >= 2`` (multi-class Brier: moments summed over classes).
        probabilities: check forecasts and outcomes lie in ``[0, 1]``; ``False`` for real-valued targets.
        validate_args: check shapes and ranges in ``update``.
        **kwargs: forwarded to :class:`torchmetrics.Metric`.

    Raises:
        ValueError: an empty, inverted or unbounded ``sigma_ai_range`` or a ``rho_range`` outside ``[-1, 1]``.

    Example:
        >>> g = torch.Generator().manual_seed(0)
        >>> y = torch.randn(2000, generator=g)
        >>> e_h = torch.randn(2000, generator=g)
        >>> e_a = -0.6 * e_h + 0.8 * torch.randn(2000, generator=g)
        >>> metric = RobustPoolingWeight(sigma_ai_range=(0.5, 3.0), probabilities=False)
        >>> metric.update(y + e_h, y + e_a, y)
        >>> out = metric.compute()
        >>> bool(out["guaranteed_gain"] > 0), bool(0 < out["robust_weight"] <= out["weight_cap"])
        (True, True)
    """

    is_differentiable = False
    higher_is_better: bool | None = None
    full_state_update = False
    n: Tensor
    sum_human_sq: Tensor
    sum_ai_sq: Tensor
    sum_cross: Tensor

    def __init__(
        self,
        sigma_ai_range: Sequence[float],
        rho_range: Sequence[float] | None = None,
        num_classes: int | None = None,
        probabilities: bool = True,
        validate_args: bool = True,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        lo, hi = check_interval("sigma_ai_range", sigma_ai_range, 0.0, math.inf)
        if math.isinf(hi):
            raise ValueError(f"sigma_ai_range must be bounded, got {[lo, hi]!r}")
        self.sigma_ai_range = (lo, hi)
        self.rho_range = None if rho_range is None else check_interval("rho_range", rho_range, -1.0, 1.0)
        _check_num_classes(num_classes)
        self.num_classes = num_classes
        self.probabilities = probabilities
        self.validate_args = validate_args
        for name in ("n", "sum_human_sq", "sum_ai_sq", "sum_cross"):
            self.add_state(name, torch.zeros((), dtype=torch.float64), dist_reduce_fx="sum")

    def update(self, p_human: Tensor, p_ai: Tensor, target: Tensor) -> None:
        """Add a batch of forecasts and outcomes."""
        h, a, y = _format_pair(p_human, p_ai, target, self.num_classes, self.probabilities, self.validate_args)
        e_h, e_a = h - y, a - y
        self.n += h.shape[0]
        self.sum_human_sq += e_h.square().sum().to(self.sum_human_sq.device)
        self.sum_ai_sq += e_a.square().sum().to(self.sum_ai_sq.device)
        self.sum_cross += (e_h * e_a).sum().to(self.sum_cross.device)

    def compute(self) -> dict[str, Tensor]:
        """The robust and oracle quantities (float64 scalars; NaN before any update)."""
        return _robust_compute(
            self.n, self.sum_human_sq, self.sum_ai_sq, self.sum_cross, self.sigma_ai_range, self.rho_range
        )
