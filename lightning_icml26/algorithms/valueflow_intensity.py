"""Anchor-based intensity estimation (VALUEFLOW's evaluator): a Plackett-Luce fit with fixed anchor utilities.

A response is ranked against ``k - 1`` anchors of known intensity ``I_a`` in each of ``m`` windows (prompts).
Each ranking is a permutation of the window's items, best first; item ``0`` is the response and items
``1..k-1`` are the window's anchors. Under Plackett-Luce with anchor utilities ``u_a = s * I_a`` (``s`` =
``utility_scale``, 1 in the paper) the penalised log-likelihood of the response's utility ``u`` is

    l(u) = sum_w sum_{stages j} [1(item j is the response) u - 1(response unranked at j) log sum_{i unranked} e^{u_i}]
           - (lambda / 2) u^2,

whose derivative is strictly decreasing, so its root (the maximiser) is found by bisection on ``[-20, 20]``.
The root is mapped back to the intensity scale by isotonic regression fitted on the response's anchors
``(u_a, I_a)`` and guarded by the windows: a response ranked last in every window is placed just below
``min I_a`` (the next float below it, or ``min I_a - margin`` for a positive ``guard_margin``), one ranked first
everywhere just above ``max I_a``, any other is clamped to ``[min I_a, max I_a]``; the result is clipped to
``[-10, 10]``. The default ``guard_margin = 0`` is the authors' released behaviour.

If the derivative does not change sign on the bracket (possible only when ``lambda`` is very small and the
data are extreme), the bracket end towards which the likelihood grows is returned; the paper falls back to
gradient ascent there, which would move towards the same end. The window guards then decide the estimate.
"""

from __future__ import annotations

import numpy as np
import torch

from lightning_icml26._optional import require

__all__ = [
    "INTENSITY_RANGE",
    "borda_interpolation",
    "calibrate_intensity",
    "check_rankings",
    "estimate_intensity",
    "pl_log_likelihood",
    "pl_response_score",
    "posterior_median",
    "sample_anchors",
    "solve_response_utility",
]

INTENSITY_RANGE = (-10.0, 10.0)
"""Intensities live in this closed interval."""


def _np(value: object, dtype: type) -> np.ndarray:
    if isinstance(value, torch.Tensor):
        return value.detach().cpu().numpy().astype(dtype)
    return np.asarray(value, dtype=dtype)


def check_rankings(rankings: np.ndarray | torch.Tensor, name: str = "rankings") -> np.ndarray:
    """Validate ``[..., k]`` rankings: every row a permutation of ``0..k-1`` with ``k >= 2``.

    Args:
        rankings: integer array, best first.
        name: argument name used in the error message.

    Returns:
        The rankings as an int64 numpy array.

    Raises:
        ValueError: if ``k < 2`` or a row is not a permutation.

    Example:
        >>> check_rankings([[2, 0, 1]]).tolist()
        [[2, 0, 1]]
        >>> check_rankings([[0, 0, 1]])
        Traceback (most recent call last):
        ...
        ValueError: rankings row [0, 0, 1] is not a permutation of 0..2
    """
    array = _np(rankings, np.float64)
    if array.ndim < 1 or array.shape[-1] < 2:
        raise ValueError(f"{name} must have k >= 2 items per ranking, got shape {array.shape}")
    if not np.all(array == np.round(array)):
        raise ValueError(f"{name} must hold integer item indices")
    array = array.astype(np.int64)
    k = array.shape[-1]
    flat = array.reshape(-1, k)
    bad = ~np.all(np.sort(flat, axis=1) == np.arange(k), axis=1)
    if bad.any():
        raise ValueError(f"{name} row {flat[np.argmax(bad)].tolist()} is not a permutation of 0..{k - 1}")
    return array


def _check_intensities(values: np.ndarray, name: str) -> None:
    lo, hi = INTENSITY_RANGE
    if not np.all(np.isfinite(values)) or values.min(initial=0.0) < lo or values.max(initial=0.0) > hi:
        raise ValueError(f"{name} must lie in [{lo}, {hi}], got values in [{values.min()}, {values.max()}]")


def _stage_logsumexp(rankings: np.ndarray, anchor_utilities: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-stage log-sum-exp of the anchors still unranked, and the stages where the response is unranked.

    Both are ``[..., m, k]`` for ``[..., m, k]`` rankings.
    """
    k = rankings.shape[-1]
    utilities = np.concatenate([np.zeros_like(anchor_utilities[..., :1]), anchor_utilities], axis=-1)
    ordered = np.take_along_axis(utilities, rankings, axis=-1)
    ordered = np.where(rankings == 0, -np.inf, ordered)  # the response's own term is added separately
    # remaining anchors at stage j: items ordered[j:], log-sum-exp from the end
    lse = np.logaddexp.accumulate(ordered[..., ::-1], axis=-1)[..., ::-1]
    position = np.argmax(rankings == 0, axis=-1)
    mask = np.arange(k) <= position[..., None]
    return lse, mask


def pl_log_likelihood(
    u: np.ndarray | float, rankings: np.ndarray, anchor_utilities: np.ndarray, l2: float = 1e-3
) -> np.ndarray:
    """Penalised Plackett-Luce log-likelihood ``l(u)`` of the full rankings (anchor choices included).

    Args:
        u: response utility, a scalar or one per leading index of ``rankings``.
        rankings: ``[..., m, k]`` permutations (item 0 = the response), best first.
        anchor_utilities: ``[..., m, k - 1]`` fixed anchor utilities.
        l2: ridge ``lambda`` (the penalty is ``lambda u^2 / 2``).

    Returns:
        ``l(u)`` with the leading shape of ``rankings``; its derivative is :func:`pl_response_score`.

    Example:
        >>> round(float(pl_log_likelihood(0.0, np.array([[0, 1]]), np.array([[0.0]]), l2=0.0)), 4)  # log 1/2
        -0.6931
    """
    ranks = np.asarray(rankings)
    lse, mask = _stage_logsumexp(ranks, anchor_utilities)
    u_arr = np.asarray(u, dtype=np.float64)
    u_b = u_arr[..., None, None]
    utilities = np.concatenate([np.zeros_like(anchor_utilities[..., :1]), anchor_utilities], axis=-1)
    chosen = np.where(ranks == 0, u_b, np.take_along_axis(utilities, ranks, axis=-1))
    with np.errstate(divide="ignore"):
        normaliser = np.where(mask, np.logaddexp(u_b, lse), lse)
    return (chosen - normaliser).sum(axis=(-1, -2)) - 0.5 * l2 * u_arr**2


def pl_response_score(
    u: np.ndarray | float, rankings: np.ndarray, anchor_utilities: np.ndarray, l2: float = 1e-3
) -> np.ndarray:
    """Derivative ``l'(u)`` of the penalised Plackett-Luce log-likelihood (see the module docstring).

    Args:
        u: response utility, a scalar or one per leading index of ``rankings``.
        rankings: ``[..., m, k]`` permutations (item 0 = the response).
        anchor_utilities: ``[..., m, k - 1]`` fixed anchor utilities.
        l2: ridge ``lambda``.

    Returns:
        ``l'(u)`` with the leading shape of ``rankings``.

    Example:
        >>> float(pl_response_score(0.0, np.array([[0, 1]]), np.array([[0.0]]), l2=0.0))
        0.5
    """
    lse, mask = _stage_logsumexp(rankings, anchor_utilities)
    u_arr = np.asarray(u, dtype=np.float64)[..., None, None]
    with np.errstate(over="ignore"):
        share = 1.0 / (1.0 + np.exp(lse - u_arr))
    per_window = 1.0 - np.where(mask, share, 0.0).sum(axis=-1)
    return per_window.sum(axis=-1) - l2 * np.asarray(u, dtype=np.float64)


def solve_response_utility(
    rankings: np.ndarray | torch.Tensor,
    anchor_utilities: np.ndarray | torch.Tensor,
    l2: float = 1e-3,
    bracket: tuple[float, float] = (-20.0, 20.0),
    tol: float = 1e-10,
    max_iter: int = 200,
) -> np.ndarray:
    """Root of ``l'(u)`` by bisection for every response (vectorised).

    Args:
        rankings: ``[R, m, k]`` (or ``[m, k]`` for one response) permutations, item 0 = the response.
        anchor_utilities: ``[R, m, k - 1]`` (or ``[m, k - 1]``) fixed anchor utilities.
        l2: ridge ``lambda`` (paper: ``1e-3``), ``>= 0``.
        bracket: search interval (paper: ``[-20, 20]``).
        tol: stop when the interval is shorter.
        max_iter: bisection steps at most.

    Returns:
        ``[R]`` (or scalar) maximum-likelihood utilities.

    Raises:
        ValueError: on bad rankings, mismatched shapes, a negative ``l2`` or an empty bracket.

    Example:
        >>> r = np.array([[1, 0, 2]] * 4)        # the response always second, between two anchors
        >>> round(float(solve_response_utility(r, np.array([[1.0, -1.0]] * 4))), 3)
        0.0
    """
    ranks = check_rankings(rankings)
    anchors = _np(anchor_utilities, np.float64)
    if anchors.shape != ranks.shape[:-1] + (ranks.shape[-1] - 1,):
        raise ValueError(
            f"anchor_utilities must have shape {ranks.shape[:-1] + (ranks.shape[-1] - 1,)}, got {anchors.shape}"
        )
    if l2 < 0:
        raise ValueError(f"l2 must be >= 0, got {l2}")
    lo_b, hi_b = bracket
    if not lo_b < hi_b:
        raise ValueError(f"bracket must be (low, high) with low < high, got {bracket}")
    single = ranks.ndim == 2
    if single:
        ranks, anchors = ranks[None], anchors[None]
    lo = np.full(ranks.shape[0], lo_b)
    hi = np.full(ranks.shape[0], hi_b)
    for _ in range(max_iter):
        mid = 0.5 * (lo + hi)
        positive = pl_response_score(mid, ranks, anchors, l2) > 0
        lo = np.where(positive, mid, lo)
        hi = np.where(positive, hi, mid)
        if np.all(hi - lo < tol):
            break
    root = 0.5 * (lo + hi)
    return root[0] if single else root


def calibrate_intensity(
    utilities: np.ndarray,
    rankings: np.ndarray,
    anchor_utilities: np.ndarray,
    anchor_intensities: np.ndarray,
    guard_margin: float = 0.0,
) -> np.ndarray:
    """Isotonic map from utility to intensity (fitted on each response's anchors), window guards and clipping.

    The isotonic regression is scikit-learn's (the ``valueflow`` extra).

    Args:
        utilities: ``[R]`` fitted response utilities.
        rankings: ``[R, m, k]`` rankings (for the guards).
        anchor_utilities: ``[R, m, k - 1]``.
        anchor_intensities: ``[R, m, k - 1]`` in ``[-10, 10]``.
        guard_margin: distance beyond the anchors' range of a response that lost (won) every window;
            ``0`` (default, as released by the authors) places it at the next float beyond the range.

    Returns:
        ``[R]`` intensities in ``[-10, 10]``.

    Raises:
        ValueError: if ``guard_margin`` is negative.

    Example:
        >>> r = np.array([[[0, 1, 2]]]); a = np.array([[[2.0, -2.0]]])
        >>> calibrate_intensity(np.array([5.0]), r, a, a, guard_margin=0.5).tolist()   # beat both: max + margin
        [2.5]
        >>> bool(calibrate_intensity(np.array([5.0]), r, a, a)[0] > 2.0)   # default: just above the max
        True
    """
    if not guard_margin >= 0:
        raise ValueError(f"guard_margin must be >= 0, got {guard_margin}")
    isotonic = require("sklearn.isotonic", "valueflow", "the isotonic calibration of the anchor evaluator")
    out = np.empty(len(utilities))
    position = np.argmax(rankings == 0, axis=-1)  # [R, m]
    k = rankings.shape[-1]
    for i, u in enumerate(utilities):
        x, y = anchor_utilities[i].reshape(-1), anchor_intensities[i].reshape(-1)
        low, high = float(y.min()), float(y.max())
        if np.all(position[i] == k - 1):
            value = low - guard_margin if guard_margin > 0 else float(np.nextafter(low, -np.inf))
        elif np.all(position[i] == 0):
            value = high + guard_margin if guard_margin > 0 else float(np.nextafter(high, np.inf))
        else:
            iso = isotonic.IsotonicRegression(increasing=True, out_of_bounds="clip").fit(x, y)
            value = float(np.clip(iso.predict([u])[0], low, high))
        out[i] = np.clip(value, *INTENSITY_RANGE)
    return out


def estimate_intensity(
    rankings: np.ndarray | torch.Tensor,
    anchor_intensities: np.ndarray | torch.Tensor,
    l2: float = 1e-3,
    utility_scale: float = 1.0,
    guard_margin: float = 0.0,
) -> np.ndarray:
    """Intensity of each response from its windows' rankings (fit, calibration, guards; see the module doc).

    Args:
        rankings: ``[R, m, k]`` permutations, best first; item 0 is the response.
        anchor_intensities: ``[R, m, k - 1]`` anchor intensities in ``[-10, 10]``.
        l2: ridge of the fit.
        utility_scale: anchor utilities are ``utility_scale * I_a`` (paper: 1).
        guard_margin: see :func:`calibrate_intensity`.

    Returns:
        ``[R]`` float64 intensities.

    Raises:
        ValueError: on bad rankings, intensities outside ``[-10, 10]`` or a non-positive ``utility_scale``.

    Example:
        >>> anchors = np.array([[[-8.0, -4.0, 0.0, 4.0, 8.0]] * 3])
        >>> rank = np.array([[[5, 4, 0, 3, 2, 1]] * 3])   # between the anchors 4 and 0
        >>> bool(0.0 <= estimate_intensity(rank, anchors)[0] <= 4.0)
        True
    """
    ranks = check_rankings(rankings)
    inten = _np(anchor_intensities, np.float64)
    if ranks.ndim != 3 or inten.shape != ranks.shape[:-1] + (ranks.shape[-1] - 1,):
        raise ValueError(
            f"rankings must be [R, m, k] and anchor_intensities [R, m, k - 1], got {ranks.shape} and {inten.shape}"
        )
    _check_intensities(inten, "anchor_intensities")
    if utility_scale <= 0:
        raise ValueError(f"utility_scale must be positive, got {utility_scale}")
    utilities = utility_scale * inten
    roots = solve_response_utility(ranks, utilities, l2)
    return calibrate_intensity(roots, ranks, utilities, inten, guard_margin)


def borda_interpolation(
    rankings: np.ndarray | torch.Tensor, anchor_intensities: np.ndarray | torch.Tensor, guard_margin: float = 0.5
) -> np.ndarray:
    """Baseline: place the response between the anchors it sits between, by rank position, averaged over windows.

    In a window where the response beats ``b`` of the ``k - 1`` anchors, its estimate is the midpoint of the
    ``b``-th and ``(b + 1)``-th lowest anchor intensities (``min - margin`` / ``max + margin`` at the ends).

    Args:
        rankings: ``[R, m, k]``.
        anchor_intensities: ``[R, m, k - 1]``.
        guard_margin: offset beyond the range at the ends.

    Returns:
        ``[R]`` intensities clipped to ``[-10, 10]``.

    Example:
        >>> borda_interpolation(np.array([[[1, 0, 2]]]), np.array([[[4.0, -2.0]]])).tolist()
        [1.0]
    """
    ranks = check_rankings(rankings)
    inten = _np(anchor_intensities, np.float64)
    k = ranks.shape[-1]
    beaten = k - 1 - np.argmax(ranks == 0, axis=-1)  # anchors ranked below the response
    ordered = np.sort(inten, axis=-1)
    padded = np.concatenate(
        [ordered[..., :1] - 2 * guard_margin, ordered, ordered[..., -1:] + 2 * guard_margin], axis=-1
    )
    low = np.take_along_axis(padded, beaten[..., None], axis=-1)[..., 0]
    high = np.take_along_axis(padded, beaten[..., None] + 1, axis=-1)[..., 0]
    return np.clip(0.5 * (low + high).mean(axis=-1), *INTENSITY_RANGE)


def sample_anchors(
    pool: np.ndarray | torch.Tensor, k: int, method: str = "bucket", rng: np.random.Generator | None = None
) -> np.ndarray:
    """Pick ``k - 1`` anchors from a pool of intensities.

    ``"bucket"`` splits the pool's range into ``k - 1`` equal-width bins and draws one anchor per bin;
    ``"random"`` draws ``k - 1`` distinct anchors uniformly.

    Args:
        pool: ``[P]`` intensities of the anchor pool, in ``[-10, 10]``.
        k: window size (response + ``k - 1`` anchors), ``>= 2``.
        method: ``"bucket"`` or ``"random"``.
        rng: numpy generator (default: a fresh unseeded one).

    Returns:
        ``[k - 1]`` indices into ``pool``.

    Raises:
        ValueError: on ``k < 2``, an unknown method, a pool smaller than ``k - 1`` or an empty bucket.

    Example:
        >>> idx = sample_anchors(np.linspace(-10, 10, 50), k=6, rng=np.random.default_rng(0))
        >>> len(idx), len(set(idx.tolist()))
        (5, 5)
    """
    if isinstance(k, bool) or not isinstance(k, int) or k < 2:
        raise ValueError(f"k must be an int >= 2, got {k!r}")
    if method not in ("bucket", "random"):
        raise ValueError(f"method must be 'bucket' or 'random', got {method!r}")
    values = _np(pool, np.float64).reshape(-1)
    _check_intensities(values, "pool")
    n = k - 1
    if len(values) < n:
        raise ValueError(f"pool holds {len(values)} anchors, fewer than the k - 1 = {n} needed")
    gen = rng if rng is not None else np.random.default_rng()
    if method == "random":
        return gen.choice(len(values), size=n, replace=False)
    edges = np.linspace(values.min(), values.max(), n + 1)
    bins = np.clip(np.searchsorted(edges, values, side="right") - 1, 0, n - 1)
    chosen = []
    for b in range(n):
        members = np.flatnonzero(bins == b)
        if len(members) == 0:
            raise ValueError(f"bucket {b} of {n} ([{edges[b]:.3g}, {edges[b + 1]:.3g}]) holds no anchor of the pool")
        chosen.append(int(gen.choice(members)))
    return np.array(chosen)


def posterior_median(
    rankings: np.ndarray, anchors: np.ndarray, low: float, high: float, points: int = 1801
) -> np.ndarray:
    """Posterior median of each response's utility under a uniform prior on ``[low, high]`` (exact PL, a grid).

    The Bayes reference of the evaluator: with responses drawn uniformly on ``[low, high]`` and a Plackett-Luce
    judge, no estimator has a smaller expected absolute error on these rankings.

    Args:
        rankings: ``(R, m, k)`` rankings, item 0 the response (as for :func:`estimate_intensity`).
        anchors: ``(R, m, k - 1)`` anchor utilities.
        low: prior's lower end.
        high: prior's upper end (``> low``).
        points: grid points.

    Example:
        >>> rankings = np.array([[[0, 1, 2], [1, 0, 2]]])  # the response first, then second of three
        >>> round(float(posterior_median(rankings, np.array([[[0.0, -2.0], [0.0, -2.0]]]), -5.0, 5.0)[0]), 2)
        0.44
    """
    if not high > low or points < 2:
        raise ValueError(f"need high > low and points >= 2, got low={low}, high={high}, points={points}")
    grid = np.linspace(low, high, points)
    loglik = np.stack([pl_log_likelihood(np.full(len(rankings), u), rankings, anchors, l2=0.0) for u in grid], 1)
    post = np.exp(loglik - loglik.max(axis=1, keepdims=True))
    cdf = np.cumsum(post, axis=1)
    return grid[np.argmax(cdf >= 0.5 * cdf[:, -1:], axis=1)]
