"""Actionability of a tabular row: immutable, monotone, bounded and discrete (grid) features.

:class:`ActionabilitySpec` is immutable; :meth:`ActionabilitySpec.project` maps any proposed row onto the set
of actions a person can take from ``x``; :meth:`ActionabilitySpec.cost` is the normalised ``L1 + L0`` cost
that recourse generators minimise.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["ActionabilitySpec"]

_DIRECTIONS = (-1, 0, 1)


def _as_tuple(values: Sequence[float] | np.ndarray, name: str) -> tuple[float, ...]:
    array = np.asarray(values, dtype=float)
    if array.ndim != 1 or not np.all(np.isfinite(array)):
        raise ValueError(f"{name} must be a 1-D sequence of finite numbers, got {values!r}")
    return tuple(float(v) for v in array)


@dataclass(frozen=True)
class ActionabilitySpec:
    """Per-feature actionability constraints.

    Args:
        lower: lowest allowed value of each feature.
        upper: highest allowed value of each feature.
        mutable: ``False`` for immutable features (kept equal to the original row).
        direction: ``+1`` (may only increase), ``-1`` (may only decrease) or ``0`` (either way).
        grids: ``None`` for a continuous feature, else the sorted allowed values of a discrete one.

    Example:
        >>> spec = ActionabilitySpec((0, 0, 0), (10, 1, 5), (True, False, True), (1, 0, 0), (None, None, (0, 2, 5)))
        >>> spec.project(np.array([3.0, 1.0, 2.0]), np.array([1.0, 0.0, 3.9]))
        array([3., 1., 5.])
        >>> float(spec.cost(np.array([3.0, 1.0, 2.0]), np.array([4.0, 1.0, 5.0])))
        1.1
    """

    lower: tuple[float, ...]
    upper: tuple[float, ...]
    mutable: tuple[bool, ...]
    direction: tuple[int, ...]
    grids: tuple[tuple[float, ...] | None, ...]

    def __post_init__(self) -> None:
        lower = _as_tuple(self.lower, "lower")
        upper = _as_tuple(self.upper, "upper")
        d = len(lower)
        for name, value in (("upper", upper), ("mutable", self.mutable), ("direction", self.direction)):
            if len(value) != d:
                raise ValueError(f"{name} must have {d} entries like lower, got {len(value)}")
        if len(self.grids) != d:
            raise ValueError(f"grids must have {d} entries like lower, got {len(self.grids)}")
        if d == 0:
            raise ValueError("lower must name at least one feature, got an empty sequence")
        if any(lo > hi for lo, hi in zip(lower, upper, strict=True)):
            raise ValueError(f"lower must be <= upper for every feature, got lower={lower}, upper={upper}")
        bad = [v for v in self.direction if v not in _DIRECTIONS]
        if bad:
            raise ValueError(f"direction entries must be -1, 0 or +1, got {self.direction!r}")
        grids: list[tuple[float, ...] | None] = []
        for j, grid in enumerate(self.grids):
            if grid is None:
                grids.append(None)
                continue
            values = np.unique(np.asarray(grid, dtype=float))
            if values.size == 0 or values[0] < lower[j] or values[-1] > upper[j]:
                raise ValueError(f"grids[{j}] must be a non-empty set inside [{lower[j]}, {upper[j]}], got {grid!r}")
            grids.append(tuple(float(v) for v in values))
        object.__setattr__(self, "lower", lower)
        object.__setattr__(self, "upper", upper)
        object.__setattr__(self, "mutable", tuple(bool(m) for m in self.mutable))
        object.__setattr__(self, "direction", tuple(int(v) for v in self.direction))
        object.__setattr__(self, "grids", tuple(grids))

    @classmethod
    def from_data(
        cls,
        X: np.ndarray,
        immutable: Sequence[int] = (),
        increasing: Sequence[int] = (),
        decreasing: Sequence[int] = (),
        max_levels: int = 10,
    ) -> ActionabilitySpec:
        """Ranges from the data's minimum and maximum; integer columns with few levels become grids.

        Args:
            X: ``(n, d)`` data.
            immutable: indices of immutable features.
            increasing: indices of features that may only increase.
            decreasing: indices of features that may only decrease.
            max_levels: an integer-valued column with at most this many distinct values is discrete.

        Returns:
            The spec.

        Example:
            >>> spec = ActionabilitySpec.from_data(np.array([[0.5, 1.0], [1.5, 3.0]]), increasing=[1])
            >>> spec.grids, spec.direction
            ((None, (1.0, 3.0)), (0, 1))
        """
        X = np.asarray(X, dtype=float)
        if X.ndim != 2 or X.shape[0] < 1 or not np.all(np.isfinite(X)):
            raise ValueError(f"X must be a finite 2-D array with rows, got shape {X.shape}")
        d = X.shape[1]
        for name, idx in (("immutable", immutable), ("increasing", increasing), ("decreasing", decreasing)):
            if any(not 0 <= int(j) < d for j in idx):
                raise ValueError(f"{name} must hold feature indices in [0, {d}), got {list(idx)!r}")
        if set(increasing) & set(decreasing):
            raise ValueError(f"a feature cannot be both increasing and decreasing, got {sorted(increasing)}")
        direction = [0] * d
        for j in increasing:
            direction[int(j)] = 1
        for j in decreasing:
            direction[int(j)] = -1
        grids: list[tuple[float, ...] | None] = []
        for j in range(d):
            levels = np.unique(X[:, j])
            grids.append(tuple(levels) if np.all(levels == np.round(levels)) and levels.size <= max_levels else None)
        mutable = tuple(j not in {int(i) for i in immutable} for j in range(d))
        return cls(tuple(X.min(0)), tuple(X.max(0)), mutable, tuple(direction), tuple(grids))

    @property
    def n_features(self) -> int:
        """Number of features ``d``."""
        return len(self.lower)

    @property
    def discrete(self) -> np.ndarray:
        """``(d,)`` boolean mask of discrete (grid) features."""
        return np.array([g is not None for g in self.grids])

    @property
    def ranges(self) -> np.ndarray:
        """``(d,)`` ``upper - lower``, with ``1`` where a feature is constant (the L1 normaliser)."""
        span = np.asarray(self.upper) - np.asarray(self.lower)
        return np.where(span > 0, span, 1.0)

    def _rows(self, x: np.ndarray, name: str) -> np.ndarray:
        x = np.asarray(x, dtype=float)
        if x.ndim not in (1, 2) or x.shape[-1] != self.n_features:
            raise ValueError(f"{name} must have shape (d,) or (n, d) with d={self.n_features}, got {x.shape}")
        return x

    def check(self, x: np.ndarray) -> None:
        """Raise ``ValueError`` unless every row of ``x`` lies inside the ranges and on the grids.

        Example:
            >>> ActionabilitySpec((0,), (1,), (True,), (0,), (None,)).check(np.array([2.0]))
            Traceback (most recent call last):
            ...
            ValueError: x breaks its own spec: feature 0 = 2.0 is outside [0.0, 1.0] ...
        """
        rows = self._rows(x, "x").reshape(-1, self.n_features)
        for j in range(self.n_features):
            column = rows[:, j]
            outside = (column < self.lower[j] - 1e-9) | (column > self.upper[j] + 1e-9) | ~np.isfinite(column)
            if outside.any():
                value = column[outside][0]
                raise ValueError(
                    f"x breaks its own spec: feature {j} = {value} is outside [{self.lower[j]}, {self.upper[j]}] "
                    "(widen the spec or fix the row)"
                )
            grid = self.grids[j]
            if grid is not None:
                off = ~np.isin(column, np.asarray(grid))
                if off.any():
                    raise ValueError(f"x breaks its own spec: feature {j} = {column[off][0]} is not on its grid {grid}")

    def bounds(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(lo, hi)`` of the values feature ``j`` may take from row ``x`` (monotone and immutable included).

        Example:
            >>> spec = ActionabilitySpec((0, 0), (4, 4), (True, False), (1, 0), (None, None))
            >>> spec.bounds(np.array([1.0, 2.0]))
            (array([1., 2.]), array([4., 2.]))
        """
        x = self._rows(x, "x")
        if x.ndim != 1:
            raise ValueError(f"x must be one row of shape (d,), got {x.shape}")
        lo, hi = np.array(self.lower), np.array(self.upper)
        direction, mutable = np.array(self.direction), np.array(self.mutable)
        lo = np.where(direction > 0, np.maximum(lo, x), lo)
        hi = np.where(direction < 0, np.minimum(hi, x), hi)
        lo = np.where(mutable, lo, x)
        hi = np.where(mutable, hi, x)
        return lo, hi

    def project(self, x: np.ndarray, x_new: np.ndarray) -> np.ndarray:
        """The action closest to ``x_new`` that is allowed from ``x`` (clip, snap to grid, monotone, immutable).

        Args:
            x: ``(d,)`` original row (assumed valid under the spec).
            x_new: ``(d,)`` or ``(n, d)`` proposed rows.

        Returns:
            Projected rows, same shape as ``x_new``. ``project(x, x) == x`` for a valid ``x``.
        """
        x = self._rows(x, "x")
        if x.ndim != 1:
            raise ValueError(f"x must be one row of shape (d,), got {x.shape}")
        out = np.array(self._rows(x_new, "x_new"), dtype=float, copy=True)
        out = np.clip(out, np.array(self.lower), np.array(self.upper))
        for j, grid in enumerate(self.grids):
            if grid is not None:
                values = np.asarray(grid)
                nearest = np.abs(out[..., j, None] - values).argmin(-1)
                out[..., j] = values[nearest]
        direction, mutable = np.array(self.direction), np.array(self.mutable)
        out = np.where(direction > 0, np.maximum(out, x), out)
        out = np.where(direction < 0, np.minimum(out, x), out)
        return np.where(mutable, out, x)

    def cost(self, x: np.ndarray, x_new: np.ndarray) -> np.ndarray:
        """Normalised ``L1`` over continuous features plus ``L0`` over discrete ones.

        ``sum_j |x'_j - x_j| / range_j`` (continuous) ``+ sum_j 1[x'_j != x_j]`` (discrete).

        Returns:
            A scalar array for one row, ``(n,)`` for ``(n, d)`` rows.
        """
        x = self._rows(x, "x")
        delta = np.abs(self._rows(x_new, "x_new") - x)
        discrete = self.discrete
        return (np.where(discrete, delta > 1e-12, delta / self.ranges)).sum(-1)
