"""Human-AI complementarity: error correlation, team gain and the robust pooling weight (functional forms).

"Towards Robust Human-AI Complementarity under Uncertainty" (ICML 2026; only the abstract is public, the
formalisation below is this project's reconstruction, see docs/complementarity.md). A human forecast
``H = Y + e_H`` and an AI forecast ``A = Y + e_A`` are pooled linearly, ``T = (1 - w) H + w A``. With error
scales ``sigma_H``, ``sigma_A`` and error correlation ``rho``:

* ``G(w) = 2 w (sigma_H^2 - rho sigma_H sigma_A) - w^2 (sigma_H^2 + sigma_A^2 - 2 rho sigma_H sigma_A)`` is the
  gain of the team over the human alone (:func:`pooling_gain`);
* ``G(w) > 0`` iff ``0 < w < w_bar = 2 (sigma_H^2 - rho sigma_H sigma_A) / D`` (:func:`gain_weight_bound`),
  ``D = sigma_H^2 + sigma_A^2 - 2 rho sigma_H sigma_A``; the oracle weight is ``w_opt = (sigma_H^2 - rho
  sigma_H sigma_A) / D`` (:func:`oracle_pooling_weight`);
* when the decision maker only knows ``sigma_A in [lo, hi]`` (and possibly ``rho in [rho_lo, rho_hi]``),
  the worst case of ``G(w)`` lies at ``sigma_A in {lo, hi}`` (``G`` is concave in ``sigma_A``) and at
  ``rho_hi`` (``G`` is linear in ``rho`` with slope ``-2 w (1 - w) sigma_H sigma_A <= 0`` on ``[0, 1]``);
  the robust weight ``w* = argmax_w min(G(w; lo), G(w; hi))`` and its guaranteed gain ``G*`` come in closed
  form (:func:`robust_pooling_weight`); a strictly positive guaranteed gain exists iff
  ``rho_hi < sigma_H / hi`` (:func:`correlation_threshold`).

Conventions and deviations from that reconstruction (all documented here and in the metric classes):

* ``w`` is restricted to ``[0, 1]`` (a convex combination keeps probability forecasts in ``[0, 1]``).
* Error "scales" estimated from data are **root mean squared errors** and ``rho`` the **uncentred**
  correlation ``E[e_H e_A] / (sigma_H sigma_A)`` (:func:`error_moments`). With these the identity
  ``L_H - L_team(w) = G(w)`` holds *exactly* for the empirical squared / Brier loss, biases included.
  :func:`error_correlation` (the reconstruction's ``corr(p_H - y, p_A - y)``) is the usual centred Pearson correlation.
* Multi-class probability forecasts ``(N, K)`` use the multi-class Brier score ``sum_k (p_k - [y = k])^2``;
  the moments are then summed over classes, and :func:`error_correlation` reports one correlation per class.
* The "abstention/deferral rule" of the No-Free-Lunch paper (arXiv 2411.15230) is realised as
  :func:`override_decision`: keep the human's binary decision unless the AI is confident beyond a threshold
  in the other direction (one agent flags the other's "obvious" errors). Reconstruction, not the paper's code.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Literal

import torch
from torch import Tensor

__all__ = [
    "complementarity_gain",
    "correlation_threshold",
    "error_correlation",
    "error_moments",
    "forecast_loss",
    "forecast_residuals",
    "gain_weight_bound",
    "linear_pool",
    "logit_pool",
    "oracle_pooling_weight",
    "override_decision",
    "pooling_gain",
    "robust_pooling",
    "robust_pooling_weight",
    "robust_weight_cap",
    "worst_case_gain",
]

LossName = Literal["brier", "log", "squared"]
Average = Literal["none", "macro", "micro"]
LossFn = Callable[[Tensor, Tensor], Tensor]
Number = float | Tensor

_LOSSES = ("brier", "log", "squared")
_AVERAGES = ("none", "macro", "micro")


# ----------------------------------------------------------------------------------------------------------
# input checks
# ----------------------------------------------------------------------------------------------------------


def _check_num_classes(num_classes: int | None) -> None:
    if num_classes is None:
        return
    if not isinstance(num_classes, int) or isinstance(num_classes, bool) or num_classes < 2:
        raise ValueError(f"num_classes must be None (one forecast per item) or an integer >= 2, got {num_classes!r}")


def _as_tensor(name: str, value: object) -> Tensor:
    if not isinstance(value, Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(value).__name__}")
    if value.is_complex():
        raise TypeError(f"{name} must be real, got dtype {value.dtype}")
    return value


def _check_unit_interval(name: str, values: Tensor) -> None:
    if values.numel() == 0:
        return
    if torch.isnan(values).any():
        raise ValueError(f"{name} must be probabilities in [0, 1], got NaN")
    low, high = float(values.min()), float(values.max())
    if low < 0.0 or high > 1.0:
        raise ValueError(f"{name} must be probabilities in [0, 1], got values in [{low:.6g}, {high:.6g}]")


def _format_forecast(
    name: str, preds: Tensor, num_classes: int | None, probabilities: bool, validate_args: bool
) -> Tensor:
    preds = _as_tensor(name, preds)
    if num_classes is None:
        if preds.ndim != 1:
            raise ValueError(f"{name} must have shape (N,) when num_classes is None, got {tuple(preds.shape)}")
    elif preds.ndim != 2 or preds.shape[1] != num_classes:
        raise ValueError(f"{name} must have shape (N, {num_classes}), got {tuple(preds.shape)}")
    preds = preds.double()
    if validate_args and (probabilities or num_classes is not None):
        _check_unit_interval(name, preds)
        if num_classes is not None and preds.numel():
            total = preds.sum(1)
            worst = float((total - 1.0).abs().max())
            if worst > 1e-4:
                raise ValueError(f"{name} rows must sum to 1 (class probabilities), got a row summing to "
                                 f"{float(total[(total - 1.0).abs().argmax()]):.6g}")  # fmt: skip
    return preds


def _format_target(target: Tensor, n: int, num_classes: int | None, probabilities: bool, validate: bool) -> Tensor:
    target = _as_tensor("target", target)
    if target.ndim != 1:
        raise ValueError(f"target must have shape (N,), got {tuple(target.shape)}")
    if target.shape[0] != n:
        raise ValueError(f"target must have the same length as the forecasts ({n}), got {target.shape[0]}")
    if num_classes is None:
        target = target.double()
        if validate and probabilities:
            _check_unit_interval("target", target)
        return target.unsqueeze(1)
    if target.is_floating_point():
        if validate and target.numel() and not torch.equal(target, target.round()):
            raise ValueError("target must hold class ids (integers) when num_classes is given")
        target = target.long()
    if validate and target.numel():
        low, high = int(target.min()), int(target.max())
        if low < 0 or high >= num_classes:
            raise ValueError(f"target must hold class ids in [0, {num_classes}), got values in [{low}, {high}]")
    return torch.nn.functional.one_hot(target.long(), num_classes).double()


def _format_pair(
    p_human: Tensor,
    p_ai: Tensor,
    target: Tensor,
    num_classes: int | None,
    probabilities: bool,
    validate_args: bool = True,
) -> tuple[Tensor, Tensor, Tensor]:
    """Both forecasts and the target as float64 ``(N, C)`` (``C = num_classes`` or 1)."""
    _check_num_classes(num_classes)
    h = _format_forecast("p_human", p_human, num_classes, probabilities, validate_args)
    a = _format_forecast("p_ai", p_ai, num_classes, probabilities, validate_args)
    if h.shape[0] != a.shape[0]:
        raise ValueError(f"p_human and p_ai must have the same length, got {h.shape[0]} and {a.shape[0]}")
    y = _format_target(target, h.shape[0], num_classes, probabilities, validate_args)
    if num_classes is None:
        h, a = h.unsqueeze(1), a.unsqueeze(1)
    return h, a, y


def _check_weight(weight: Number) -> Tensor:
    w = torch.as_tensor(weight, dtype=torch.float64)
    if w.numel() and (torch.isnan(w).any() or float(w.min()) < 0.0 or float(w.max()) > 1.0):
        raise ValueError(f"weight must be in [0, 1], got {weight!r}")
    return w


def _check_range(name: str, values: Sequence[float] | Tensor, low: float, high: float) -> tuple[float, float]:
    """A closed interval ``(lo, hi)`` inside ``[low, high]``; empty, inverted or NaN intervals are rejected."""
    try:
        items = [float(v) for v in values]
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a pair (lo, hi) of numbers, got {values!r}") from None
    if len(items) != 2:
        raise ValueError(f"{name} must be a pair (lo, hi), got {len(items)} values {items!r} (an empty set is not "
                         "an uncertainty set)")  # fmt: skip
    lo, hi = items
    if math.isnan(lo) or math.isnan(hi):
        raise ValueError(f"{name} must not contain NaN, got {items!r}")
    if lo > hi:
        raise ValueError(f"{name} must satisfy lo <= hi (got an inverted, empty interval {items!r})")
    if lo < low or hi > high:
        raise ValueError(f"{name} must lie in [{low}, {high}], got {items!r}")
    return lo, hi


def _check_sigma(name: str, value: Number) -> Tensor:
    s = torch.as_tensor(value, dtype=torch.float64)
    if s.numel() and (torch.isnan(s).any() or float(s.min()) < 0.0 or not torch.isfinite(s).all()):
        raise ValueError(f"{name} must be finite and >= 0, got {value!r}")
    return s


def _check_rho(value: Number) -> Tensor:
    r = torch.as_tensor(value, dtype=torch.float64)
    if r.numel() and (torch.isnan(r).any() or float(r.min()) < -1.0 or float(r.max()) > 1.0):
        raise ValueError(f"rho must be in [-1, 1], got {value!r}")
    return r


# ----------------------------------------------------------------------------------------------------------
# residuals, losses, pooling
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


def _item_loss(p: Tensor, y: Tensor, loss: LossName | LossFn, eps: float = 1e-12) -> Tensor:
    """Per-item loss of ``(N, C)`` forecasts against ``(N, C)`` outcomes (one-hot for classes)."""
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
    return _item_loss(p.unsqueeze(1) if num_classes is None else p, y, loss)


def linear_pool(p_human: Tensor, p_ai: Tensor, weight: Number) -> Tensor:
    """``(1 - w) p_human + w p_ai``; ``weight`` a scalar or per-item ``(N,)`` in ``[0, 1]``.

    Example:
        >>> linear_pool(torch.tensor([0.2, 0.6]), torch.tensor([0.6, 1.0]), 0.25)
        tensor([0.3000, 0.7000], dtype=torch.float64)
    """
    h, a = _as_tensor("p_human", p_human).double(), _as_tensor("p_ai", p_ai).double()
    if h.shape != a.shape:
        raise ValueError(f"p_human and p_ai must have the same shape, got {tuple(h.shape)} and {tuple(a.shape)}")
    w = _check_weight(weight)
    if w.ndim == 1 and h.ndim == 2:
        w = w.unsqueeze(1)
    return (1 - w) * h + w * a


def logit_pool(p_human: Tensor, p_ai: Tensor, weight: Number, eps: float = 1e-6) -> Tensor:
    """Logarithmic (geometric) pooling of two forecasts.

    ``logit T = (1 - w) logit H + w logit A`` for binary ``(N,)`` forecasts; ``T_k ∝ H_k^(1-w) A_k^w`` for
    class probabilities ``(N, K)``.

    Example:
        >>> logit_pool(torch.tensor([0.5, 0.9]), torch.tensor([0.5, 0.1]), 0.5)
        tensor([0.5000, 0.5000], dtype=torch.float64)
    """
    h, a = _as_tensor("p_human", p_human).double(), _as_tensor("p_ai", p_ai).double()
    if h.shape != a.shape:
        raise ValueError(f"p_human and p_ai must have the same shape, got {tuple(h.shape)} and {tuple(a.shape)}")
    _check_unit_interval("p_human", h)
    _check_unit_interval("p_ai", a)
    w = _check_weight(weight)
    h, a = h.clamp(eps, 1 - eps), a.clamp(eps, 1 - eps)
    if h.ndim == 1:
        return torch.sigmoid((1 - w) * torch.logit(h) + w * torch.logit(a))
    if w.ndim == 1:
        w = w.unsqueeze(1)
    return torch.softmax((1 - w) * h.log() + w * a.log(), dim=-1)


def override_decision(p_human: Tensor, p_ai: Tensor, threshold: float = 0.9) -> Tensor:
    """Binary decision of the human unless the AI is confident beyond ``threshold`` in the other direction.

    The "one agent flags the other's obvious errors" strategy that the No-Free-Lunch result (arXiv
    2411.15230) leaves open: decide ``1{p_human >= 0.5}``, overridden to 1 where ``p_ai >= threshold`` and to
    0 where ``p_ai <= 1 - threshold``.

    Example:
        >>> override_decision(torch.tensor([0.7, 0.4, 0.6]), torch.tensor([0.05, 0.5, 0.95]), 0.9)
        tensor([0, 0, 1])
    """
    h, a = _as_tensor("p_human", p_human), _as_tensor("p_ai", p_ai)
    if h.shape != a.shape:
        raise ValueError(f"p_human and p_ai must have the same shape, got {tuple(h.shape)} and {tuple(a.shape)}")
    _check_unit_interval("p_human", h)
    _check_unit_interval("p_ai", a)
    if not 0.5 < threshold <= 1.0:
        raise ValueError(f"threshold must be in (0.5, 1], got {threshold!r}")
    decision = (h >= 0.5).long()
    decision = torch.where(a >= threshold, torch.ones_like(decision), decision)
    return torch.where(a <= 1 - threshold, torch.zeros_like(decision), decision)


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
        w = _check_weight(weight)
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
        _check_unit_interval("p_team", t)
    fn: LossName | LossFn = loss
    if utility is not None:
        user = utility

        def fn(p: Tensor, target_: Tensor) -> Tensor:
            return -user(p, target_)

    return _item_loss(h, y, fn).sum(), _item_loss(a, y, fn).sum(), _item_loss(t, y, fn).sum(), h.shape[0]


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
# closed forms of the reconstruction
# ----------------------------------------------------------------------------------------------------------


def _b_and_d(sigma_human: Tensor, sigma_ai: Tensor, rho: Tensor) -> tuple[Tensor, Tensor]:
    b = sigma_human**2 - rho * sigma_human * sigma_ai
    d = (sigma_human**2 + sigma_ai**2 - 2 * rho * sigma_human * sigma_ai).clamp_min(0)
    return b, d


def pooling_gain(weight: Number, sigma_human: Number, sigma_ai: Number, rho: Number) -> Tensor:
    """Gain of the linear pool over the human: MSE of the human minus MSE of the pool.

    ``G(w) = 2 w (s_H^2 - rho s_H s_A) - w^2 (s_H^2 + s_A^2 - 2 rho s_H s_A)`` (broadcasts over all arguments).

    Example:
        >>> pooling_gain(0.5, 1.0, 1.0, 0.0)
        tensor(0.5000, dtype=torch.float64)
    """
    w = torch.as_tensor(weight, dtype=torch.float64)
    s_h, s_a, r = _check_sigma("sigma_human", sigma_human), _check_sigma("sigma_ai", sigma_ai), _check_rho(rho)
    b, d = _b_and_d(s_h, s_a, r)
    return 2 * w * b - w**2 * d


def oracle_pooling_weight(sigma_human: Number, sigma_ai: Number, rho: Number, clip: bool = True) -> Tensor:
    """Weight maximising :func:`pooling_gain`: ``(s_H^2 - rho s_H s_A) / D``, clipped to ``[0, 1]`` by default.

    When ``D = 0`` (identical errors) every weight gives the same loss and 0 is returned.

    Example:
        >>> oracle_pooling_weight(1.0, 1.0, 0.0)
        tensor(0.5000, dtype=torch.float64)
    """
    s_h, s_a, r = _check_sigma("sigma_human", sigma_human), _check_sigma("sigma_ai", sigma_ai), _check_rho(rho)
    b, d = _b_and_d(s_h, s_a, r)
    w = torch.where(d > 0, b / d.clamp_min(1e-300), torch.zeros_like(b))
    return w.clamp(0.0, 1.0) if clip else w


def gain_weight_bound(sigma_human: Number, sigma_ai: Number, rho: Number) -> Tensor:
    """The largest weight with a positive gain.

    ``w_bar = 2 (s_H^2 - rho s_H s_A) / D``: ``G(w) > 0`` exactly for ``0 < w < w_bar`` (unclipped;
    ``<= 0`` means no positive weight helps; ``inf`` when ``D = 0`` and the linear term is positive).

    Example:
        >>> gain_weight_bound(1.0, 3.0, 0.0)
        tensor(0.2000, dtype=torch.float64)
    """
    s_h, s_a, r = _check_sigma("sigma_human", sigma_human), _check_sigma("sigma_ai", sigma_ai), _check_rho(rho)
    b, d = _b_and_d(s_h, s_a, r)
    inf = torch.full_like(b, float("inf"))
    return torch.where(d > 0, 2 * b / d.clamp_min(1e-300), torch.where(b > 0, inf, torch.zeros_like(b)))


def correlation_threshold(sigma_human: Number, sigma_ai_max: Number) -> Tensor:
    """``rho* = s_H / s_hi``: a strictly positive guaranteed gain over ``s_A <= s_hi`` exists iff ``rho < rho*``.

    Example:
        >>> correlation_threshold(1.0, 2.0)
        tensor(0.5000, dtype=torch.float64)
    """
    s_h, s_hi = _check_sigma("sigma_human", sigma_human), _check_sigma("sigma_ai_max", sigma_ai_max)
    return torch.where(s_hi > 0, s_h / s_hi.clamp_min(1e-300), torch.full_like(s_h * s_hi, float("inf")))


def _uncertainty_set(
    sigma_ai_range: Sequence[float] | Tensor, rho: Number | None, rho_range: Sequence[float] | Tensor | None
) -> tuple[float, float, Tensor]:
    lo, hi = _check_range("sigma_ai_range", sigma_ai_range, 0.0, math.inf)
    if math.isinf(hi):
        raise ValueError(f"sigma_ai_range must be bounded (no fixed weight helps when sigma_A is unbounded), got "
                         f"{[lo, hi]!r}")  # fmt: skip
    if (rho is None) == (rho_range is None):
        raise ValueError("give exactly one of rho (a known correlation) and rho_range (an interval)")
    if rho_range is not None:
        _, rho_hi = _check_range("rho_range", rho_range, -1.0, 1.0)
        return lo, hi, torch.tensor(rho_hi, dtype=torch.float64)
    assert rho is not None  # for mypy; checked above
    return lo, hi, _check_rho(rho)


def worst_case_gain(
    weight: Number,
    sigma_human: Number,
    sigma_ai_range: Sequence[float] | Tensor,
    rho: Number | None = None,
    rho_range: Sequence[float] | Tensor | None = None,
) -> Tensor:
    """Worst-case gain ``min G(w)`` over ``s_A in [lo, hi]`` (and ``rho in rho_range``).

    The minimum is attained at an endpoint of the ``s_A`` interval and at the largest ``rho`` (for
    ``w in [0, 1]``).

    Example:
        >>> worst_case_gain(0.5, 1.0, (0.5, 3.0), rho=0.0)
        tensor(-1.5000, dtype=torch.float64)
    """
    lo, hi, r = _uncertainty_set(sigma_ai_range, rho, rho_range)
    w = _check_weight(weight)
    return torch.minimum(pooling_gain(w, sigma_human, lo, r), pooling_gain(w, sigma_human, hi, r))


def robust_weight_cap(
    sigma_human: Number,
    sigma_ai_range: Sequence[float] | Tensor,
    rho: Number | None = None,
    rho_range: Sequence[float] | Tensor | None = None,
) -> Tensor:
    """Largest ``w in [0, 1]`` whose worst-case gain is ``>= 0``: ``min(w_bar(lo), w_bar(hi))`` clipped.

    Every weight in ``[0, cap]`` is safe (the worst-case gain is concave in ``w`` and 0 at ``w = 0``).

    Example:
        >>> robust_weight_cap(1.0, (0.5, 3.0), rho=0.0)
        tensor(0.2000, dtype=torch.float64)
    """
    lo, hi, r = _uncertainty_set(sigma_ai_range, rho, rho_range)
    s_h = _check_sigma("sigma_human", sigma_human)
    cap = torch.minimum(gain_weight_bound(s_h, lo, r), gain_weight_bound(s_h, hi, r))
    return cap.clamp(0.0, 1.0)


def robust_pooling_weight(
    sigma_human: Number,
    sigma_ai_range: Sequence[float] | Tensor,
    rho: Number | None = None,
    rho_range: Sequence[float] | Tensor | None = None,
) -> tuple[Tensor, Tensor]:
    """Robust weight ``w* = argmax_{w in [0,1]} min(G(w; lo), G(w; hi))`` and guaranteed gain ``G*``.

    Closed form: the objective is the minimum of two concave quadratics, so its maximum over ``[0, 1]`` is at
    ``0``, ``1``, a (clipped) vertex of one quadratic, or where the two cross,
    ``w_c = -2 rho s_H / (lo + hi - 2 rho s_H)``; all candidates are evaluated. ``w* = 0`` and ``G* = 0``
    when no positive weight is safe (``rho >= s_H / hi``).

    Args:
        sigma_human: the human's error scale (known to the decision maker).
        sigma_ai_range: ``(lo, hi)``, ``0 <= lo <= hi < inf``: the AI's error scale is only known to lie here.
        rho: the error correlation, when known (scalar or tensor; broadcasts with ``sigma_human``).
        rho_range: ``(rho_lo, rho_hi)`` in ``[-1, 1]`` when the correlation is only known to lie in an interval.

    Returns:
        ``(w_star, guaranteed_gain)`` as float64 tensors.

    Raises:
        ValueError: an empty, inverted or unbounded ``sigma_ai_range``, a ``rho_range`` outside ``[-1, 1]``, or
            both / neither of ``rho`` and ``rho_range``.

    Example:
        >>> w, g = robust_pooling_weight(1.0, (0.5, 3.0), rho=-0.5)
        >>> round(float(w), 4), round(float(g), 4)
        (0.2222, 0.4691)
        >>> robust_pooling_weight(1.0, (0.5, 3.0), rho=0.5)
        (tensor(0., dtype=torch.float64), tensor(0., dtype=torch.float64))
    """
    lo, hi, r = _uncertainty_set(sigma_ai_range, rho, rho_range)
    s_h = _check_sigma("sigma_human", sigma_human)
    s_h, r = torch.broadcast_tensors(s_h, r)
    b_lo, d_lo = _b_and_d(s_h, torch.tensor(lo, dtype=torch.float64), r)
    b_hi, d_hi = _b_and_d(s_h, torch.tensor(hi, dtype=torch.float64), r)

    def vertex(b: Tensor, d: Tensor) -> Tensor:
        return torch.where(d > 0, b / d.clamp_min(1e-300), (b > 0).double()).clamp(0.0, 1.0)

    cross_den = lo + hi - 2 * r * s_h
    cross = torch.where(cross_den != 0, -2 * r * s_h / torch.where(cross_den != 0, cross_den, 1.0), 0.0)
    candidates = torch.stack(
        [torch.zeros_like(s_h), torch.ones_like(s_h), vertex(b_lo, d_lo), vertex(b_hi, d_hi), cross.clamp(0, 1)],
        dim=-1,
    )
    gain = torch.minimum(2 * candidates * b_lo.unsqueeze(-1) - candidates**2 * d_lo.unsqueeze(-1),
                         2 * candidates * b_hi.unsqueeze(-1) - candidates**2 * d_hi.unsqueeze(-1))  # fmt: skip
    best = gain.argmax(dim=-1, keepdim=True)
    g_star = gain.gather(-1, best).squeeze(-1)
    w_star = candidates.gather(-1, best).squeeze(-1)
    tol = 1e-12 * (s_h**2).clamp_min(1e-300)
    positive = g_star > tol
    return torch.where(positive, w_star, 0.0), torch.where(positive, g_star, 0.0)


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
    then returns the decision-theoretic quantities of the reconstruction: ``robust_weight`` ``w*``,
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
    lo, hi = _check_range("sigma_ai_range", sigma_ai_range, 0.0, math.inf)
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
