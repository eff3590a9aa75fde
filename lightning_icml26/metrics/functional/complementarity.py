"""Human-AI complementarity measured from data: error correlation, the team's gain, the robust pooling weight.

A human forecast ``H = Y + e_H`` and an AI forecast ``A = Y + e_A`` are pooled, ``T = (1 - w) H + w A``. These
functions estimate from data what :mod:`lightning_icml26.algorithms.complementarity` takes as known (``sigma_H``,
``sigma_A``, ``rho``) and the realised gain of the team over the human.

Conventions and deviations (also documented in the metric classes):

* Error "scales" estimated from data are **root mean squared errors** and ``rho`` the **uncentred**
  correlation ``E[e_H e_A] / (sigma_H sigma_A)`` (:func:`error_moments`). With these the identity
  ``L_H - L_team(w) = G(w)`` holds *exactly* for the empirical squared / Brier loss, biases included.
  :func:`error_correlation` (``corr(p_H - y, p_A - y)``) is the usual centred Pearson correlation.
* Multi-class probability forecasts ``(N, K)`` use the multi-class Brier score ``sum_k (p_k - [y = k])^2``;
  the moments are then summed over classes, and :func:`error_correlation` reports one correlation per class.
* :func:`robust_pooling` plugs the estimates into :func:`~lightning_icml26.algorithms.robust_pooling_weight`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Literal

import torch
from torch import Tensor

from lightning_icml26.algorithms.complementarity import (
    Number,
    check_interval,
    check_pool_weight,
    check_unit_interval,
    correlation_threshold,
    oracle_pooling_weight,
    pooling_gain,
    robust_pooling_weight,
    robust_weight_cap,
)
from lightning_icml26.metrics.functional._forecast_format import (
    _check_num_classes,
    _format_forecast,
    _format_pair,
    _format_target,
)

__all__ = [
    "complementarity_gain",
    "error_correlation",
    "error_moments",
    "forecast_loss",
    "forecast_residuals",
    "item_loss",
    "robust_pooling",
]

LossName = Literal["brier", "log", "squared"]
Average = Literal["none", "macro", "micro"]
LossFn = Callable[[Tensor, Tensor], Tensor]

_LOSSES = ("brier", "log", "squared")
_AVERAGES = ("none", "macro", "micro")


# ----------------------------------------------------------------------------------------------------------
# residuals and losses
# ----------------------------------------------------------------------------------------------------------


def forecast_residuals(
    preds: Tensor, target: Tensor, num_classes: int | None = None, probabilities: bool = True
) -> Tensor:
    """Errors ``preds - outcome`` as float64 ``(N, C)`` (one-hot outcomes when ``num_classes`` is given).

    Args:
        preds: ``(N,)`` forecasts, or ``(N, K)`` class probabilities when ``num_classes=K``.
        target: ``(N,)`` outcomes (binary/real, or class ids when ``num_classes`` is given).
        num_classes: ``None`` for one forecast per item, else the number of classes ``K >= 2``.
        probabilities: check that forecasts and outcomes lie in ``[0, 1]`` (``False`` for real-valued targets).

    Example:
        >>> forecast_residuals(torch.tensor([0.8, 0.3]), torch.tensor([1.0, 0.0]))
        tensor([[-0.2000],
                [ 0.3000]], dtype=torch.float64)
    """
    _check_num_classes(num_classes)
    p = _format_forecast("preds", preds, num_classes, probabilities, True)
    y = _format_target(target, p.shape[0], num_classes, probabilities, True)
    return (p.unsqueeze(1) if num_classes is None else p) - y


def item_loss(p: Tensor, y: Tensor, loss: LossName | LossFn, eps: float = 1e-12) -> Tensor:
    """Per-item loss ``(N,)`` of already formatted ``(N, C)`` forecasts against ``(N, C)`` outcomes.

    The unchecked core of :func:`forecast_loss`, for callers that have formatted their tensors (one column for
    one forecast per item, one-hot outcomes for classes).

    Args:
        p: forecasts ``(N, C)``.
        y: outcomes ``(N, C)``.
        loss: ``"brier"``, ``"squared"``, ``"log"`` or a callable ``(p, y) -> per-item loss``.
        eps: clamp for the log loss.

    Returns:
        Per-item losses, shape ``(N,)``.

    Example:
        >>> item_loss(torch.tensor([[0.8], [0.3]]), torch.tensor([[1.0], [0.0]]), "brier")
        tensor([0.0400, 0.0900])
    """
    if callable(loss):
        return loss(p, y).double().reshape(p.shape[0], -1).sum(1)
    if loss in ("brier", "squared"):
        return (p - y).square().sum(1)
    if p.shape[1] == 1:  # binary log loss, also for fractional outcomes (cross-entropy)
        q = p[:, 0].clamp(eps, 1 - eps)
        return -(y[:, 0] * q.log() + (1 - y[:, 0]) * (1 - q).log())
    return -(y * p.clamp_min(eps).log()).sum(1)


def _check_loss(loss: object) -> None:
    if not callable(loss) and loss not in _LOSSES:
        raise ValueError(f"loss must be one of {_LOSSES} or a callable (preds, target) -> per-item loss, got {loss!r}")


def forecast_loss(
    preds: Tensor, target: Tensor, loss: LossName | LossFn = "brier", num_classes: int | None = None
) -> Tensor:
    """Per-item loss ``(N,)``: Brier (``sum_k (p_k - y_k)^2``), log loss, squared error or a callable.

    ``"squared"`` skips the ``[0, 1]`` check (real-valued outcomes); a callable receives ``(N, C)`` float64
    forecasts and outcomes (one-hot for classes) and returns per-item losses.

    Example:
        >>> forecast_loss(torch.tensor([0.8, 0.3]), torch.tensor([1, 0]), "brier")
        tensor([0.0400, 0.0900], dtype=torch.float64)
    """
    _check_loss(loss)
    _check_num_classes(num_classes)
    probabilities = loss != "squared"
    p = _format_forecast("preds", preds, num_classes, probabilities, True)
    y = _format_target(target, p.shape[0], num_classes, probabilities, True)
    return item_loss(p.unsqueeze(1) if num_classes is None else p, y, loss)


# ----------------------------------------------------------------------------------------------------------
# error correlation and empirical gains
# ----------------------------------------------------------------------------------------------------------


def _pearson_from_sums(
    n: Tensor, sx: Tensor, sy: Tensor, sxx: Tensor, syy: Tensor, sxy: Tensor, average: str
) -> Tensor:
    if average == "micro":
        n, sx, sy, sxx, syy, sxy = n * sx.numel(), sx.sum(), sy.sum(), sxx.sum(), syy.sum(), sxy.sum()
    cov = n * sxy - sx * sy
    var_x = (n * sxx - sx * sx).clamp_min(0)
    var_y = (n * syy - sy * sy).clamp_min(0)
    denom = (var_x * var_y).sqrt()
    corr = torch.where(denom > 0, cov / denom.clamp_min(1e-300), torch.full_like(cov, float("nan")))
    corr = corr.clamp(-1.0, 1.0)
    if average == "macro":
        return corr.mean() if corr.numel() > 1 else corr.reshape(())
    if average == "none" and corr.numel() == 1:
        return corr.reshape(())
    return corr


def _correlation_sums(e_h: Tensor, e_a: Tensor) -> tuple[Tensor, Tensor, Tensor, Tensor, Tensor]:
    return e_h.sum(0), e_a.sum(0), e_h.square().sum(0), e_a.square().sum(0), (e_h * e_a).sum(0)


def error_correlation(
    p_human: Tensor,
    p_ai: Tensor,
    target: Tensor,
    num_classes: int | None = None,
    average: Average = "macro",
    probabilities: bool = True,
) -> Tensor:
    """Pearson correlation of the human's and the AI's errors ``corr(p_H - y, p_A - y)``.

    Args:
        p_human: ``(N,)`` forecasts or ``(N, K)`` class probabilities.
        p_ai: same shape as ``p_human``.
        target: ``(N,)`` outcomes or class ids.
        num_classes: ``None`` (one forecast per item) or ``K >= 2``.
        average: for class probabilities, ``"none"`` (one correlation per class, ``(K,)``), ``"macro"``
            (their mean) or ``"micro"`` (one correlation over all ``N * K`` residual pairs).
        probabilities: check forecasts and outcomes lie in ``[0, 1]`` (``False`` for real outcomes).

    Returns:
        A float64 scalar (or ``(K,)``); NaN where an error has zero variance.

    Example:
        >>> y = torch.tensor([1.0, 0.0, 1.0, 0.0])
        >>> error_correlation(torch.tensor([0.9, 0.2, 0.6, 0.1]), torch.tensor([0.5, 0.1, 0.8, 0.4]), y)
        tensor(0.5855, dtype=torch.float64)
    """
    if average not in _AVERAGES:
        raise ValueError(f"average must be one of {_AVERAGES}, got {average!r}")
    h, a, y = _format_pair(p_human, p_ai, target, num_classes, probabilities)
    n = torch.tensor(float(h.shape[0]), dtype=torch.float64)
    sx, sy, sxx, syy, sxy = _correlation_sums(h - y, a - y)
    return _pearson_from_sums(n, sx, sy, sxx, syy, sxy, average)


def error_moments(
    p_human: Tensor, p_ai: Tensor, target: Tensor, num_classes: int | None = None, probabilities: bool = True
) -> dict[str, Tensor]:
    """Root-mean-square errors ``sigma_human``, ``sigma_ai`` and the uncentred error correlation ``rho``.

    ``sigma^2 = mean_i sum_k e_ik^2`` (the Brier score / MSE) and ``rho = mean(e_H . e_A) / (sigma_H sigma_A)``,
    so that :func:`pooling_gain` with these values equals the empirical ``L_H - L_team(w)`` exactly.

    Example:
        >>> m = error_moments(torch.tensor([0.9, 0.2]), torch.tensor([0.7, 0.4]), torch.tensor([1.0, 0.0]))
        >>> [round(float(m[k]), 4) for k in ("sigma_human", "sigma_ai", "rho")]
        [0.1581, 0.3536, 0.9839]
    """
    h, a, y = _format_pair(p_human, p_ai, target, num_classes, probabilities)
    e_h, e_a = h - y, a - y
    n = torch.tensor(float(h.shape[0]), dtype=torch.float64)
    return _moments_compute(n, e_h.square().sum(), e_a.square().sum(), (e_h * e_a).sum())


def _moments_compute(n: Tensor, shh: Tensor, saa: Tensor, sha: Tensor) -> dict[str, Tensor]:
    nan = torch.tensor(float("nan"), dtype=torch.float64)
    if float(n) == 0:
        return {"sigma_human": nan, "sigma_ai": nan, "rho": nan}
    denom = (shh * saa).sqrt()
    rho = (sha / denom).clamp(-1.0, 1.0) if float(denom) > 0 else nan
    return {"sigma_human": (shh / n).sqrt(), "sigma_ai": (saa / n).sqrt(), "rho": rho}


def _gain_compute(n: Tensor, loss_h: Tensor, loss_a: Tensor, loss_t: Tensor) -> dict[str, Tensor]:
    if float(n) == 0:
        nan = torch.tensor(float("nan"), dtype=torch.float64)
        return dict.fromkeys(("loss_human", "loss_ai", "loss_team", "gain", "gain_over_human"), nan)
    lh, la, lt = loss_h / n, loss_a / n, loss_t / n
    return {
        "loss_human": lh,
        "loss_ai": la,
        "loss_team": lt,
        "gain": torch.minimum(lh, la) - lt,
        "gain_over_human": lh - lt,
    }


def _team_forecast(h: Tensor, a: Tensor, p_team: Tensor | None, weight: Number, num_classes: int | None) -> Tensor:
    if p_team is None:
        w = check_pool_weight(weight)
        if w.ndim == 1:
            if w.shape[0] != h.shape[0]:
                raise ValueError(f"a per-item weight must have length {h.shape[0]}, got {w.shape[0]}")
            w = w.unsqueeze(1)
        return (1 - w) * h + w * a
    t = _format_forecast("p_team", p_team, num_classes, False, False)
    if t.shape[0] != h.shape[0]:
        raise ValueError(f"p_team must have the same length as p_human ({h.shape[0]}), got {t.shape[0]}")
    return t.unsqueeze(1) if num_classes is None else t


def _gain_sums(
    p_human: Tensor,
    p_ai: Tensor,
    target: Tensor,
    p_team: Tensor | None,
    weight: Number,
    loss: LossName | LossFn,
    utility: LossFn | None,
    num_classes: int | None,
    validate_args: bool = True,
) -> tuple[Tensor, Tensor, Tensor, int]:
    named = utility is None and not callable(loss)
    probabilities = num_classes is not None or (named and loss in ("brier", "log"))
    h, a, y = _format_pair(p_human, p_ai, target, num_classes, probabilities, validate_args)
    t = _team_forecast(h, a, p_team, weight, num_classes)
    if validate_args and probabilities:
        check_unit_interval("p_team", t)
    fn: LossName | LossFn = loss
    if utility is not None:
        user = utility

        def fn(p: Tensor, target_: Tensor) -> Tensor:
            return -user(p, target_)

    return item_loss(h, y, fn).sum(), item_loss(a, y, fn).sum(), item_loss(t, y, fn).sum(), h.shape[0]


def complementarity_gain(
    p_human: Tensor,
    p_ai: Tensor,
    target: Tensor,
    p_team: Tensor | None = None,
    weight: Number = 0.5,
    loss: LossName | LossFn = "brier",
    utility: LossFn | None = None,
    num_classes: int | None = None,
) -> dict[str, Tensor]:
    """Team loss against each member: ``gain = min(L_H, L_A) - L_team`` and ``gain_over_human = L_H - L_team``.

    Args:
        p_human: ``(N,)`` forecasts or ``(N, K)`` class probabilities.
        p_ai: same shape.
        target: ``(N,)`` outcomes (binary, fractions, reals for ``"squared"``) or class ids.
        p_team: the team's forecast; ``None`` pools linearly with ``weight`` on the AI.
        weight: scalar or per-item ``(N,)`` weight in ``[0, 1]`` (used when ``p_team`` is ``None``).
        loss: ``"brier"``, ``"log"``, ``"squared"`` (no ``[0, 1]`` check) or a callable ``(preds, target)``
            on ``(N, C)`` float64 tensors returning per-item losses.
        utility: optional callable ``(preds, target) -> per-item utility``; overrides ``loss`` with
            ``-utility`` (gains are then utility gains).
        num_classes: ``None`` or ``K >= 2``.

    Returns:
        ``loss_human``, ``loss_ai``, ``loss_team`` (means), ``gain`` and ``gain_over_human`` (float64).

    Example:
        >>> out = complementarity_gain(torch.tensor([0.9, 0.2]), torch.tensor([0.5, 0.0]), torch.tensor([1, 0]))
        >>> round(float(out["gain"]), 4), round(float(out["gain_over_human"]), 4)
        (-0.025, -0.025)
    """
    _check_loss(loss)
    if utility is not None and not callable(utility):
        raise TypeError(f"utility must be a callable (preds, target) -> per-item utility, got {utility!r}")
    lh, la, lt, n = _gain_sums(p_human, p_ai, target, p_team, weight, loss, utility, num_classes)
    return _gain_compute(torch.tensor(float(n), dtype=torch.float64), lh, la, lt)


# ----------------------------------------------------------------------------------------------------------
# the robust pooling weight estimated from data
# ----------------------------------------------------------------------------------------------------------


def robust_pooling(
    p_human: Tensor,
    p_ai: Tensor,
    target: Tensor,
    sigma_ai_range: Sequence[float] | Tensor,
    rho_range: Sequence[float] | Tensor | None = None,
    num_classes: int | None = None,
    probabilities: bool = True,
) -> dict[str, Tensor]:
    """Functional twin of :class:`~lightning_icml26.metrics.RobustPoolingWeight`.

    Estimates ``sigma_human`` (RMSE) and, unless ``rho_range`` is given, ``rho`` (uncentred) from the data,
    then returns the decision-theoretic quantities of the note: ``robust_weight`` ``w*``,
    ``guaranteed_gain`` ``G*``, ``weight_cap`` (largest safe weight), ``rho_threshold`` ``s_H / hi``,
    ``oracle_weight`` and ``oracle_gain`` (with the estimated ``sigma_ai``), ``gain_at_robust_weight``
    (the realised ``L_H - L_team(w*)`` for the Brier / squared loss) and the estimates ``sigma_human``,
    ``sigma_ai``, ``rho``.

    Example:
        >>> g = torch.Generator().manual_seed(0)
        >>> y = torch.randn(4000, generator=g)
        >>> e_h = torch.randn(4000, generator=g); e_a = -0.5 * e_h + 0.8 * torch.randn(4000, generator=g)
        >>> out = robust_pooling(y + e_h, y + e_a, y, (0.5, 3.0), probabilities=False)
        >>> bool(out["guaranteed_gain"] > 0), bool(out["gain_at_robust_weight"] > 0)
        (True, True)
    """
    h, a, y = _format_pair(p_human, p_ai, target, num_classes, probabilities)
    e_h, e_a = h - y, a - y
    n = torch.tensor(float(h.shape[0]), dtype=torch.float64)
    return _robust_compute(n, e_h.square().sum(), e_a.square().sum(), (e_h * e_a).sum(), sigma_ai_range, rho_range)


def _robust_compute(
    n: Tensor,
    shh: Tensor,
    saa: Tensor,
    sha: Tensor,
    sigma_ai_range: Sequence[float] | Tensor,
    rho_range: Sequence[float] | Tensor | None,
) -> dict[str, Tensor]:
    moments = _moments_compute(n, shh, saa, sha)
    s_h, s_a, rho_hat = moments["sigma_human"], moments["sigma_ai"], moments["rho"]
    lo, hi = check_interval("sigma_ai_range", sigma_ai_range, 0.0, math.inf)
    if torch.isnan(s_h):
        nan = torch.tensor(float("nan"), dtype=torch.float64)
        keys = ("robust_weight", "guaranteed_gain", "weight_cap", "rho_threshold", "oracle_weight", "oracle_gain",
                "gain_at_robust_weight")  # fmt: skip
        return {**dict.fromkeys(keys, nan), **moments}
    if rho_range is None:
        if torch.isnan(rho_hat):
            raise ValueError("rho cannot be estimated (an error has zero variance); pass rho_range")
        kwargs: dict = {"rho": rho_hat}
    else:
        kwargs = {"rho_range": rho_range}
    w_star, g_star = robust_pooling_weight(s_h, (lo, hi), **kwargs)
    cap = robust_weight_cap(s_h, (lo, hi), **kwargs)
    rho_eval = rho_hat if not torch.isnan(rho_hat) else torch.tensor(0.0, dtype=torch.float64)
    w_opt = oracle_pooling_weight(s_h, s_a, rho_eval)
    return {
        "robust_weight": w_star,
        "guaranteed_gain": g_star,
        "weight_cap": cap,
        "rho_threshold": correlation_threshold(s_h, hi),
        "oracle_weight": w_opt,
        "oracle_gain": pooling_gain(w_opt, s_h, s_a, rho_eval),
        "gain_at_robust_weight": pooling_gain(w_star, s_h, s_a, rho_eval),
        **moments,
    }
