"""Differentiable soft ranks and soft sorting (Blondel, Teboul, Berthet, Djolonga, ICML 2020).

Both operators are Euclidean projections onto a permutahedron, computed through an isotonic regression
(Blondel et al. 2020, Prop. 3 and Eq. 6, quadratic regularisation):

* ``P(z, w) = argmin_{mu in perm(w)} ||mu - z||^2 = z - v(z, w)[sigma^-1]`` where ``sigma`` sorts ``z``
  in descending order, ``w`` is sorted in descending order and ``v(z, w)`` is the *decreasing* isotonic
  regression of ``z[sigma] - w``.
* soft ranks: with ``rho = (n, n-1, ..., 1)``, ``P(-theta / eps, rho)`` are the paper's (descending) soft
  ranks and ``P(theta / eps, rho)`` the ascending ones (smallest entry gets rank 1, like
  ``scipy.stats.rankdata``; the convention R4 uses).
* soft sort: ``s_eps(theta) = P(rho / eps, theta)``, the values of ``theta`` sorted, smoothed.

The isotonic regression is solved exactly, by one of three algorithms that give the same unique solution
(``ISOTONIC_SOLVER``; ``"auto"`` picks the first that applies):

* ``"compiled"`` (CPU, float32 / float64): pool-adjacent-violators compiled with numba
  (:mod:`lightning_icml26.ops.soft_rank_kernels`), ``O(n)`` per row after the sort. For ``soft_rank`` the sort,
  the pooling and the scatter back are one compiled call, and the backward pass is the block-averaging Jacobian
  in torch (so double backward works). Without autograd it costs about 2x ``torch.sort`` from ``n = 8`` to
  ``n = 1024`` and on batched rows (``benchmarks/overhead.py``), where the torch paths cost 13-70x on single rows;
  with autograd, forward and backward cost about half the torch path's.
* ``"pav"`` (any device): pool-adjacent-violators batched in torch; every round pools all adjacent violating
  blocks of every row at once, a few ``O(B n)`` tensor operations per round.
* ``"min_max"``: the classical min-max formula (Barlow et al. 1972; Robertson, Wright and Dykstra 1988,
  Thm. 1.4.4), ``v_i = min_{j <= i} max_{k >= i} mean(y_j..y_k)`` for a decreasing fit, in ``O(n^2)`` time and
  memory per row; kept as the independent reference the tests compare the other two with.

The blocks of the solution (maximal runs of equal values, the pools PAV forms) are then read off, and the
returned values are recomputed as block means of the input. Differentiating those block means with the blocks held
fixed gives the exact Jacobian of the isotonic regression (Blondel et al. 2020, Lemma 1: a block-diagonal
matrix whose block of size ``m`` has every entry ``1/m``); autograd then chains it through the sorting
permutations (on the torch paths; the compiled ``soft_rank`` applies the same Jacobian in its backward pass), so
forward and backward support double backward. At inputs where two adjacent
pools have equal means the map is not differentiable; there the returned Jacobian is the one of the merged pool,
an element of the generalised Jacobian.
"""

from __future__ import annotations

import functools
import importlib
from types import ModuleType
from typing import Any

import torch

from lightning_icml26._optional import is_available

__all__ = ["ISOTONIC_SOLVERS", "isotonic_regression_decreasing", "soft_rank", "soft_sort"]

_DIRECTIONS = ("ascending", "descending")
ISOTONIC_SOLVERS = ("auto", "compiled", "pav", "min_max")
# Which algorithm finds the pools (module docstring); tests set it to compare the paths.
ISOTONIC_SOLVER = "auto"
_COMPILED_DTYPES = (torch.float32, torch.float64)


@functools.cache
def _kernels() -> ModuleType | None:
    """The numba kernels, imported on first use (numba's import costs about half a second); ``None`` without numba."""
    if not is_available("numba"):
        return None
    return importlib.import_module("lightning_icml26.ops.soft_rank_kernels")


def _solver(y: torch.Tensor) -> str:
    """The solver for ``y``: ``ISOTONIC_SOLVER``, with ``"auto"`` resolved by device, dtype and numba."""
    if ISOTONIC_SOLVER not in ISOTONIC_SOLVERS:
        raise ValueError(f"ISOTONIC_SOLVER must be one of {ISOTONIC_SOLVERS}, got {ISOTONIC_SOLVER!r}")
    compiled_applies = y.device.type == "cpu" and y.dtype in _COMPILED_DTYPES and _kernels() is not None
    if ISOTONIC_SOLVER == "compiled" and not compiled_applies:
        raise ValueError(
            f"ISOTONIC_SOLVER='compiled' needs a float32/float64 CPU tensor and numba, got {y.dtype} on {y.device}"
        )
    if ISOTONIC_SOLVER == "auto":
        return "compiled" if compiled_applies else "pav"
    return ISOTONIC_SOLVER


def _check(values: torch.Tensor, regularization_strength: float, direction: str) -> None:
    if not isinstance(values, torch.Tensor):
        raise TypeError(f"values must be a torch.Tensor, got {type(values).__name__}")
    if not values.is_floating_point():
        raise TypeError(f"values must be a floating-point tensor, got dtype {values.dtype}")
    if values.dim() < 1:
        raise ValueError(f"values must have at least one dimension (..., n), got shape {tuple(values.shape)}")
    if not isinstance(regularization_strength, (int, float)) or not regularization_strength > 0:
        raise ValueError(f"regularization_strength must be a positive number, got {regularization_strength!r}")
    if direction not in _DIRECTIONS:
        raise ValueError(f"direction must be one of {_DIRECTIONS}, got {direction!r}")


def _pool_ids(y: torch.Tensor) -> torch.Tensor:
    """Pool (block) index of every position of the decreasing isotonic regression of ``y`` (shape (B, n))."""
    solver = _solver(y)
    if solver == "compiled":
        return _pool_ids_compiled(y)
    if solver == "pav":
        return _pool_ids_pav(y)
    return _pool_ids_min_max(y)


def _pool_ids_compiled(y: torch.Tensor) -> torch.Tensor:
    """:func:`_pool_ids` by the compiled stack PAV (:mod:`lightning_icml26.ops.soft_rank_kernels`), row by row."""
    kernels = _kernels()
    assert kernels is not None  # _solver checked it
    pools = torch.empty(y.shape, dtype=torch.int64)
    kernels.decreasing_pool_ids(y.detach().contiguous().numpy(), pools.numpy())
    return pools


def _pool_ids_pav(y: torch.Tensor) -> torch.Tensor:
    """:func:`_pool_ids` by pool-adjacent-violators, batched: every row's violating neighbours are pooled at once.

    Start from one block per position; each round computes the block means and pools every pair of adjacent blocks
    whose means violate the decreasing order (left mean at most the right one, up to the same ``1e-9`` relative
    tolerance the min-max path reads its pools with), then repeats until no pair violates. Pooling adjacent
    violators in any order reaches the unique solution (Barlow et al. 1972), and a run of increasing means pooled
    together is such an order (pooling a run's first two blocks leaves it increasing). Each round is a few
    ``O(B n)`` tensor operations over the whole batch; a round removes at least one block per row that has a
    violation, and on soft-rank inputs a handful of rounds suffice.
    """
    b, n = y.shape
    with torch.no_grad():
        yd = y.detach().to(torch.float64)
        tol = 1e-9 * yd.abs().amax(-1, keepdim=True).clamp_min(1.0)
        ids = torch.arange(n, device=y.device).expand(b, n)
        starts = torch.ones(b, n - 1, dtype=torch.bool, device=y.device)  # a block starts at position i + 1
        ones = torch.ones_like(yd)
        while True:
            sums = torch.zeros_like(yd).scatter_add_(-1, ids, yd)
            counts = torch.zeros_like(yd).scatter_add_(-1, ids, ones).clamp_min_(1.0)
            mean = sums.div_(counts).gather(-1, ids)
            merge = mean[:, :-1] <= mean[:, 1:].add_(tol)
            merge &= starts
            if not bool(merge.any()):
                return ids
            starts &= ~merge
            ids = torch.nn.functional.pad(starts.cumsum(-1), (1, 0))


def _pool_ids_min_max(y: torch.Tensor) -> torch.Tensor:
    """:func:`_pool_ids` by the batched min-max formula: ``O(n^2)`` time and memory per row."""
    n = y.shape[-1]
    with torch.no_grad():
        yd = y.detach().to(torch.float64)
        csum = torch.nn.functional.pad(yd.cumsum(-1), (1, 0))  # (B, n + 1)
        j = torch.arange(n, device=y.device)
        length = (j[None, :] - j[:, None] + 1).to(torch.float64)  # length[j, k] = k - j + 1
        means = (csum[:, None, 1:] - csum[:, :-1, None]) / length  # means[b, j, k] = mean(y_j..y_k)
        valid = j[None, :] >= j[:, None]  # k >= j
        means = means.masked_fill(~valid, float("-inf"))
        # max over k >= i of means[j, k]: reverse cumulative max along k.
        tail_max = means.flip(-1).cummax(-1).values.flip(-1)  # tail_max[b, j, i]
        tail_max = tail_max.masked_fill(~valid, float("inf"))  # only j <= i count
        fit = tail_max.min(dim=-2).values  # (B, n): v_i = min_{j <= i} max_{k >= i} mean(j..k)
        scale = fit.abs().amax(-1, keepdim=True).clamp_min(1.0)
        # A new pool starts where the fitted value drops; 1e-9 relative is far above float64 round-off of the
        # means and far below any difference that matters for a first-order Jacobian.
        step = (fit[:, :-1] - fit[:, 1:]) > 1e-9 * scale
        return torch.nn.functional.pad(step.long().cumsum(-1), (1, 0))


def _block_means(y: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
    sums = torch.zeros_like(y).scatter_add(-1, ids, y)
    counts = torch.zeros_like(y).scatter_add(-1, ids, torch.ones_like(y))
    return (sums / counts.clamp_min(1.0)).gather(-1, ids)


def isotonic_regression_decreasing(y: torch.Tensor) -> torch.Tensor:
    """Exact decreasing isotonic regression ``argmin_{v_1 >= ... >= v_n} ||v - y||^2`` along the last dim.

    Differentiable: the gradient is the exact block-averaging Jacobian of the solution (module docstring).

    Args:
        y: a floating tensor of shape ``(..., n)``.

    Returns:
        The fitted values, same shape as ``y``.

    Example:
        >>> isotonic_regression_decreasing(torch.tensor([1.0, 3.0, 2.0, 0.0]))
        tensor([2., 2., 2., 0.])
    """
    _check(y, 1.0, "ascending")
    shape = y.shape
    flat = y.reshape(-1, shape[-1])
    if flat.shape[0] == 0 or shape[-1] == 0:
        return y.clone()
    return _block_means(flat, _pool_ids(flat)).reshape(shape)


def _project_permutahedron(z: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """``argmin_{mu in perm(w)} ||mu - z||^2`` along the last dim; ``w`` must be sorted in descending order."""
    order = torch.argsort(z, dim=-1, descending=True)
    z_sorted = z.gather(-1, order)
    fit = isotonic_regression_decreasing(z_sorted - w)
    return z - torch.empty_like(fit).scatter(-1, order, fit)


def _compiled_ranks(values: torch.Tensor, scale: float) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Soft ranks of ``(B, n)`` CPU rows of ``scale * values``, their descending sort order and pool ids."""
    kernels = _kernels()
    assert kernels is not None  # _solver checked it
    out, order, pools = kernels.project_onto_rank_permutahedron(values.detach().contiguous().numpy(), scale)
    return torch.from_numpy(out), torch.from_numpy(order), torch.from_numpy(pools)


def _compiled_ranks_no_grad(values: torch.Tensor, scale: float) -> torch.Tensor:
    """Soft ranks of CPU ``values`` of any shape ``(..., n)`` without autograd (reshapes in numpy: cheaper)."""
    kernels = _kernels()
    assert kernels is not None  # _solver checked it
    array = values.detach().contiguous().numpy()
    out = kernels.soft_ranks(array.reshape(-1, array.shape[-1]), scale)
    return torch.from_numpy(out.reshape(array.shape))


class _CompiledRankProjection(torch.autograd.Function):
    """Soft ranks of ``(B, n)`` CPU rows in one compiled call; backward is the exact block-averaging Jacobian.

    With ``out = z - scatter(order, blockmean(z[order] - rho))`` and ``z = scale * values``, the vector-Jacobian
    product is ``scale * (g - scatter(order, blockmean(g[order])))`` (the pools held fixed, Blondel et al. 2020,
    Lemma 1). It is computed with torch operations, so it is itself differentiable (double backward).
    """

    @staticmethod
    def forward(ctx: Any, values: torch.Tensor, scale: float) -> torch.Tensor:
        out, order, pools = _compiled_ranks(values, scale)
        ctx.save_for_backward(order, pools)
        ctx.scale = scale
        return out

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, None]:
        order, pools = ctx.saved_tensors
        pooled = _block_means(grad.gather(-1, order), pools)
        return ctx.scale * (grad - torch.empty_like(pooled).scatter(-1, order, pooled)), None


def soft_rank(values: torch.Tensor, regularization_strength: float = 1.0, direction: str = "ascending") -> torch.Tensor:
    """Soft ranks of ``values`` along the last dimension (Blondel et al. 2020, quadratic regularisation).

    The soft ranks are the Euclidean projection of ``values / eps`` onto the permutahedron of ``(1, ..., n)``.
    They sum to ``n (n + 1) / 2`` like hard ranks, equal the hard ranks (1-based) when the gaps between the
    values are large compared with ``eps`` (``eps -> 0``), and shrink towards the mean rank ``(n + 1) / 2``
    as ``eps`` grows. They are piecewise linear in ``values`` and differentiable almost everywhere.

    Args:
        values: floating tensor of shape ``(..., n)``; every leading dimension is a batch dimension.
        regularization_strength: ``eps > 0``; the paper's R4 uses ``1.0``.
        direction: ``"ascending"`` (smallest value gets rank 1, like ``scipy.stats.rankdata``) or
            ``"descending"`` (largest value gets rank 1).

    Returns:
        Soft ranks, same shape and dtype as ``values``.

    Raises:
        TypeError: if ``values`` is not a floating tensor.
        ValueError: for a non-positive strength or an unknown direction.

    Example:
        >>> soft_rank(torch.tensor([3.0, 1.0, 2.0]), regularization_strength=0.1)
        tensor([3., 1., 2.])
        >>> soft_rank(torch.tensor([3.0, 1.0, 2.0]), regularization_strength=10.0)
        tensor([2.1000, 1.9000, 2.0000])
    """
    _check(values, regularization_strength, direction)
    n = values.shape[-1]
    # Projecting +values / eps onto perm(rho), rho = (n, ..., 1), gives the largest value the largest rank n;
    # projecting -values / eps gives it rank 1.
    sign = 1.0 if direction == "ascending" else -1.0
    if n > 0 and values.numel() > 0 and _solver(values) == "compiled":
        scale = sign / regularization_strength
        if torch.is_grad_enabled() and values.requires_grad:
            return _CompiledRankProjection.apply(values.reshape(-1, n), scale).reshape(values.shape)
        return _compiled_ranks_no_grad(values, scale)
    rho = torch.arange(n, 0, -1, dtype=values.dtype, device=values.device)
    return _project_permutahedron(values * (sign / regularization_strength), rho.expand_as(values))


def soft_sort(values: torch.Tensor, regularization_strength: float = 1.0, direction: str = "ascending") -> torch.Tensor:
    """Soft sorted values along the last dimension (Blondel et al. 2020, quadratic regularisation).

    ``P(rho / eps, values)``: the projection of ``(n, ..., 1) / eps`` onto the permutahedron of ``values``.
    It sums to ``values.sum()``, tends to the sorted values as ``eps -> 0`` and to their mean as ``eps`` grows.

    Args:
        values: floating tensor of shape ``(..., n)``.
        regularization_strength: ``eps > 0``.
        direction: ``"ascending"`` or ``"descending"`` output order.

    Returns:
        Soft sorted values, same shape and dtype as ``values``.

    Raises:
        TypeError: if ``values`` is not a floating tensor.
        ValueError: for a non-positive strength or an unknown direction.

    Example:
        >>> soft_sort(torch.tensor([3.0, 1.0, 2.0]), regularization_strength=0.1)
        tensor([1., 2., 3.])
        >>> soft_sort(torch.tensor([3.0, 1.0, 2.0]), regularization_strength=10.0)
        tensor([1.9000, 2.0000, 2.1000])
    """
    _check(values, regularization_strength, direction)
    n = values.shape[-1]
    # Descending soft sort of x is P(rho / eps, x); the ascending one is -(descending soft sort of -x).
    sign = 1.0 if direction == "descending" else -1.0
    x = values * sign
    rho = torch.arange(n, 0, -1, dtype=values.dtype, device=values.device) / regularization_strength
    w = torch.sort(x, dim=-1, descending=True).values
    z = rho.expand_as(x)
    # z is already sorted descending, so no permutation of the output is needed.
    out = z - isotonic_regression_decreasing(z - w)
    return out * sign
