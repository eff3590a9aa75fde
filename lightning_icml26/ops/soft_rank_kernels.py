"""Compiled CPU kernels of :mod:`lightning_icml26.ops.soft_rank`: pool-adjacent-violators in numba.

:func:`lightning_icml26.ops.soft_rank.soft_rank` loads this module on its first CPU call (numba takes about half
a second to import, so importing the package does not pull it in). Each kernel walks the rows one at a time with
the classical stack form of pool-adjacent-violators (Barlow et al. 1972): push every value as a block, then merge
the top two blocks while their means violate the decreasing order. That is ``O(n)`` per row after the ``O(n log
n)`` sort, with no Python-level work per element, which is what lets a soft rank cost a few ``torch.sort`` calls.

Two blocks are merged when the left mean is at most the right one plus ``1e-9 * max(1, max |y|)``, the tolerance
the torch paths use, so every path reads off the same pools (they matter for the Jacobian at ties).
"""

from __future__ import annotations

import numba
import numpy as np

__all__ = ["decreasing_pool_ids", "project_onto_rank_permutahedron", "soft_ranks"]


@numba.njit(cache=True, nogil=True)
def _pav_stack(y: np.ndarray, sums: np.ndarray, counts: np.ndarray) -> int:
    """Pool ``y`` (one row) into decreasing blocks; fills ``sums``/``counts``, returns the number of blocks."""
    n = y.shape[0]
    scale = 1.0
    for i in range(n):
        scale = max(scale, abs(y[i]))
    tol = 1e-9 * scale
    top = -1
    for i in range(n):
        top += 1
        sums[top] = y[i]
        counts[top] = 1
        while top > 0 and sums[top - 1] / counts[top - 1] <= sums[top] / counts[top] + tol:
            sums[top - 1] += sums[top]
            counts[top - 1] += counts[top]
            top -= 1
    return top + 1


@numba.njit(cache=True, nogil=True)
def decreasing_pool_ids(y: np.ndarray, pools: np.ndarray) -> None:
    """Write into ``pools`` (int64, shape ``(B, n)``) the pool index of every entry of the rows of ``y``.

    The pools are those of the decreasing isotonic regression of each row (maximal runs of equal fitted values).

    Example:
        >>> pools = np.empty((1, 4), dtype=np.int64)
        >>> decreasing_pool_ids(np.array([[1.0, 3.0, 2.0, 0.0]]), pools)
        >>> pools
        array([[0, 0, 0, 1]])
    """
    b, n = y.shape
    sums = np.empty(n)
    counts = np.empty(n, dtype=np.int64)
    for r in range(b):
        blocks = _pav_stack(y[r], sums, counts)
        i = 0
        for k in range(blocks):
            for _ in range(counts[k]):
                pools[r, i] = k
                i += 1


@numba.njit(cache=True, nogil=True)
def _project_rows(
    values: np.ndarray, scale: float, out: np.ndarray, order: np.ndarray, pools: np.ndarray, with_backward: bool
) -> None:
    """Soft ranks of the rows of ``values`` into ``out``; with ``with_backward`` also ``order`` and ``pools``."""
    b, n = values.shape
    sums = np.empty(n)
    counts = np.empty(n, dtype=np.int64)
    z = np.empty(n)
    y = np.empty(n)
    for r in range(b):
        for i in range(n):
            z[i] = values[r, i] * scale
        row_order = np.argsort(-z)
        for i in range(n):
            y[i] = z[row_order[i]] - (n - i)
        blocks = _pav_stack(y, sums, counts)
        i = 0
        for k in range(blocks):
            mean = sums[k] / counts[k]
            for _ in range(counts[k]):
                j = row_order[i]
                out[r, j] = z[j] - mean
                if with_backward:
                    order[r, i] = j
                    pools[r, i] = k
                i += 1


@numba.njit(cache=True, nogil=True)
def project_onto_rank_permutahedron(values: np.ndarray, scale: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Soft ranks of the rows of ``values``: the projection of ``scale * values`` onto ``perm((n, ..., 1))``.

    Returns ``(out, order, pools)``: the projection (same dtype as ``values``), the descending sort order of
    ``scale * values`` and the pool index of every sorted position (both int64), which the backward pass needs.
    The arithmetic is in float64 whatever the input dtype.

    Example:
        >>> out, order, pools = project_onto_rank_permutahedron(np.array([[3.0, 1.0, 2.0]]), 10.0)
        >>> out
        array([[3., 1., 2.]])
        >>> project_onto_rank_permutahedron(np.array([[3.0, 1.0, 2.0]]), 0.1)[0]
        array([[2.1, 1.9, 2. ]])
    """
    out = np.empty_like(values)
    order = np.empty(values.shape, dtype=np.int64)
    pools = np.empty(values.shape, dtype=np.int64)
    _project_rows(values, scale, out, order, pools, True)
    return out, order, pools


@numba.njit(cache=True, nogil=True)
def soft_ranks(values: np.ndarray, scale: float) -> np.ndarray:
    """:func:`project_onto_rank_permutahedron` without the backward pass's sort order and pools.

    Example:
        >>> soft_ranks(np.array([[3.0, 1.0, 2.0]]), 0.1)
        array([[2.1, 1.9, 2. ]])
    """
    out = np.empty_like(values)
    unused = np.empty((0, 0), dtype=np.int64)
    _project_rows(values, scale, out, unused, unused, False)
    return out
