"""Decision theory of human-AI complementarity: pooling rules, the team's gain and the robust pooling weight.

A human forecast ``H = Y + e_H`` and an AI forecast ``A = Y + e_A`` are pooled linearly,
``T = (1 - w) H + w A``. With error scales ``sigma_H``, ``sigma_A`` and error correlation ``rho``:

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

``w`` is restricted to ``[0, 1]`` (a convex combination keeps probability forecasts in ``[0, 1]``). The
deferral rule :func:`override_decision` keeps the human's binary decision unless the AI is confident beyond a
threshold in the other direction (one agent flags the other's "obvious" errors); it is a reconstruction of the
strategy the No-Free-Lunch paper (arXiv 2411.15230) leaves open, not that paper's code. The streaming metrics
that estimate ``sigma_H``, ``sigma_A`` and ``rho`` from data live in :mod:`lightning_icml26.metrics`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch import Tensor

__all__ = [
    "Number",
    "check_interval",
    "check_pool_weight",
    "check_real_tensor",
    "check_unit_interval",
    "correlation_threshold",
    "gain_weight_bound",
    "linear_pool",
    "logit_pool",
    "oracle_pooling_weight",
    "override_decision",
    "pooling_gain",
    "robust_pooling_weight",
    "robust_weight_cap",
    "worst_case_gain",
]

Number = float | Tensor


def check_real_tensor(name: str, value: object) -> Tensor:
    """Return ``value`` unchanged if it is a real-valued tensor; raise ``TypeError`` naming ``name`` otherwise.

    Example:
        >>> check_real_tensor("p", torch.tensor([0.5])).tolist()
        [0.5]
    """
    if not isinstance(value, Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(value).__name__}")
    if value.is_complex():
        raise TypeError(f"{name} must be real, got dtype {value.dtype}")
    return value


def check_unit_interval(name: str, values: Tensor) -> None:
    """Raise ``ValueError`` naming ``name`` unless every entry of ``values`` is a probability in ``[0, 1]``.

    Example:
        >>> check_unit_interval("p", torch.tensor([0.0, 1.0]))
        >>> check_unit_interval("p", torch.tensor([1.5]))
        Traceback (most recent call last):
        ...
        ValueError: p must be probabilities in [0, 1], got values in [1.5, 1.5]
    """
    if values.numel() == 0:
        return
    if torch.isnan(values).any():
        raise ValueError(f"{name} must be probabilities in [0, 1], got NaN")
    low, high = float(values.min()), float(values.max())
    if low < 0.0 or high > 1.0:
        raise ValueError(f"{name} must be probabilities in [0, 1], got values in [{low:.6g}, {high:.6g}]")


def check_pool_weight(weight: Number) -> Tensor:
    """The pooling weight(s) as float64, after checking they lie in ``[0, 1]`` (scalar or per item).

    Example:
        >>> check_pool_weight(0.25)
        tensor(0.2500, dtype=torch.float64)
    """
    w = torch.as_tensor(weight, dtype=torch.float64)
    if w.numel() and (torch.isnan(w).any() or float(w.min()) < 0.0 or float(w.max()) > 1.0):
        raise ValueError(f"weight must be in [0, 1], got {weight!r}")
    return w


def check_interval(name: str, values: Sequence[float] | Tensor, low: float, high: float) -> tuple[float, float]:
    """A closed interval ``(lo, hi)`` inside ``[low, high]``; empty, inverted or NaN intervals are rejected.

    Args:
        name: the argument's name, quoted in errors.
        values: the pair ``(lo, hi)``.
        low: smallest allowed ``lo``.
        high: largest allowed ``hi``.

    Returns:
        ``(lo, hi)`` as floats.

    Raises:
        TypeError: if ``values`` is not a pair of numbers.
        ValueError: for a pair of the wrong length, NaN, ``lo > hi`` or an interval outside ``[low, high]``.

    Example:
        >>> check_interval("rho_range", (-0.5, 0.2), -1.0, 1.0)
        (-0.5, 0.2)
    """
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
# pooling and deferral rules
# ----------------------------------------------------------------------------------------------------------


def linear_pool(p_human: Tensor, p_ai: Tensor, weight: Number) -> Tensor:
    """``(1 - w) p_human + w p_ai``; ``weight`` a scalar or per-item ``(N,)`` in ``[0, 1]``.

    Example:
        >>> linear_pool(torch.tensor([0.2, 0.6]), torch.tensor([0.6, 1.0]), 0.25)
        tensor([0.3000, 0.7000], dtype=torch.float64)
    """
    h, a = check_real_tensor("p_human", p_human).double(), check_real_tensor("p_ai", p_ai).double()
    if h.shape != a.shape:
        raise ValueError(f"p_human and p_ai must have the same shape, got {tuple(h.shape)} and {tuple(a.shape)}")
    w = check_pool_weight(weight)
    if w.ndim == 1 and h.ndim == 2:
        w = w.unsqueeze(1)
    return (1 - w) * h + w * a


def logit_pool(p_human: Tensor, p_ai: Tensor, weight: Number, eps: float = 1e-6) -> Tensor:
    """Logarithmic (geometric) pooling: ``logit T = (1 - w) logit H + w logit A`` for binary ``(N,)``
    forecasts; ``T_k ∝ H_k^(1-w) A_k^w`` for class probabilities ``(N, K)``.

    Example:
        >>> logit_pool(torch.tensor([0.5, 0.9]), torch.tensor([0.5, 0.1]), 0.5)
        tensor([0.5000, 0.5000], dtype=torch.float64)
    """
    h, a = check_real_tensor("p_human", p_human).double(), check_real_tensor("p_ai", p_ai).double()
    if h.shape != a.shape:
        raise ValueError(f"p_human and p_ai must have the same shape, got {tuple(h.shape)} and {tuple(a.shape)}")
    check_unit_interval("p_human", h)
    check_unit_interval("p_ai", a)
    w = check_pool_weight(weight)
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
    h, a = check_real_tensor("p_human", p_human), check_real_tensor("p_ai", p_ai)
    if h.shape != a.shape:
        raise ValueError(f"p_human and p_ai must have the same shape, got {tuple(h.shape)} and {tuple(a.shape)}")
    check_unit_interval("p_human", h)
    check_unit_interval("p_ai", a)
    if not 0.5 < threshold <= 1.0:
        raise ValueError(f"threshold must be in (0.5, 1], got {threshold!r}")
    decision = (h >= 0.5).long()
    decision = torch.where(a >= threshold, torch.ones_like(decision), decision)
    return torch.where(a <= 1 - threshold, torch.zeros_like(decision), decision)


# ----------------------------------------------------------------------------------------------------------
# decision theory of linear pooling
# ----------------------------------------------------------------------------------------------------------


def _b_and_d(sigma_human: Tensor, sigma_ai: Tensor, rho: Tensor) -> tuple[Tensor, Tensor]:
    b = sigma_human**2 - rho * sigma_human * sigma_ai
    d = (sigma_human**2 + sigma_ai**2 - 2 * rho * sigma_human * sigma_ai).clamp_min(0)
    return b, d


def pooling_gain(weight: Number, sigma_human: Number, sigma_ai: Number, rho: Number) -> Tensor:
    """``G(w) = 2 w (s_H^2 - rho s_H s_A) - w^2 (s_H^2 + s_A^2 - 2 rho s_H s_A)``: MSE of the human minus
    MSE of the pool (broadcasts over all arguments).

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
    """``w_bar = 2 (s_H^2 - rho s_H s_A) / D``: ``G(w) > 0`` exactly for ``0 < w < w_bar`` (unclipped;
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
    lo, hi = check_interval("sigma_ai_range", sigma_ai_range, 0.0, math.inf)
    if math.isinf(hi):
        raise ValueError(f"sigma_ai_range must be bounded (no fixed weight helps when sigma_A is unbounded), got "
                         f"{[lo, hi]!r}")  # fmt: skip
    if (rho is None) == (rho_range is None):
        raise ValueError("give exactly one of rho (a known correlation) and rho_range (an interval)")
    if rho_range is not None:
        _, rho_hi = check_interval("rho_range", rho_range, -1.0, 1.0)
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
    """``min G(w)`` over ``s_A in [lo, hi]`` (and ``rho in rho_range``): attained at an endpoint of the
    ``s_A`` interval and at the largest ``rho`` (for ``w in [0, 1]``).

    Example:
        >>> worst_case_gain(0.5, 1.0, (0.5, 3.0), rho=0.0)
        tensor(-1.5000, dtype=torch.float64)
    """
    lo, hi, r = _uncertainty_set(sigma_ai_range, rho, rho_range)
    w = check_pool_weight(weight)
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
