"""A small sequential RACOS (classification-based derivative-free minimisation) over a mixed box.

RACOS keeps the best evaluated points (positives) and the others (negatives); each step it grows a random
axis-aligned region around one positive that excludes every negative, then samples a new point that differs
from the positive in a few coordinates drawn inside that region ("uncertain bits"). With probability
``1 - exploit`` it samples the whole box instead. Integer coordinates are handled as ordered levels.

The project ships its own RACOS (rather than ``zoopt``) so that every evaluation goes through the caller's
counting oracle and projection and a ``numpy.random.Generator`` makes runs reproducible.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

__all__ = ["RACOS", "RacosResult"]


@dataclass(frozen=True)
class RacosResult:
    """The best point found, its value and the number of evaluations made."""

    x: np.ndarray
    value: float
    evaluations: int


class RACOS:
    """Sequential RACOS over ``lower <= x <= upper`` with integer coordinates where ``integer`` is set.

    Args:
        lower: ``(p,)`` lower bounds.
        upper: ``(p,)`` upper bounds.
        integer: ``(p,)`` mask of integer (level-index) coordinates.
        train_size: points kept (positives + negatives).
        positive_size: best points used as positives.
        initial: random points evaluated before learning (at most the budget).
        exploit: probability of sampling from the learned region.
        uncertain_bits: coordinates resampled per step.

    Example:
        >>> racos = RACOS(np.zeros(2), np.ones(2), np.zeros(2, bool))
        >>> out = racos.minimize(lambda z: float(((z - 0.3) ** 2).sum()), 60, np.random.default_rng(0))
        >>> out.evaluations, bool(out.value < 0.01)
        (60, True)
    """

    def __init__(
        self,
        lower: np.ndarray,
        upper: np.ndarray,
        integer: np.ndarray,
        train_size: int = 10,
        positive_size: int = 1,
        initial: int = 5,
        exploit: float = 0.95,
        uncertain_bits: int = 1,
    ) -> None:
        self.lower, self.upper = np.asarray(lower, float), np.asarray(upper, float)
        self.integer = np.asarray(integer, bool)
        if self.lower.shape != self.upper.shape or self.lower.shape != self.integer.shape or self.lower.ndim != 1:
            raise ValueError(f"lower, upper and integer must be 1-D of one length, got {self.lower.shape}")
        if np.any(self.lower > self.upper):
            raise ValueError("lower must be <= upper in every coordinate")
        if not 1 <= positive_size < train_size:
            raise ValueError(f"positive_size must be in [1, train_size), got {positive_size}")
        if initial < 1 or not 0.0 <= exploit <= 1.0 or uncertain_bits < 1:
            raise ValueError(
                f"need initial >= 1, exploit in [0, 1], uncertain_bits >= 1; got {initial}, {exploit}, {uncertain_bits}"
            )
        self.train_size, self.positive_size, self.initial = train_size, positive_size, initial
        self.exploit, self.uncertain_bits = exploit, uncertain_bits

    def _uniform(self, lo: np.ndarray, hi: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        z = rng.uniform(lo, hi)
        ints = rng.integers(np.floor(lo + 0.5).astype(int), np.floor(hi + 0.5).astype(int) + 1)
        return np.where(self.integer, ints, z)

    def _region(
        self, positive: np.ndarray, negatives: list[np.ndarray], rng: np.random.Generator
    ) -> tuple[np.ndarray, np.ndarray]:
        lo, hi = self.lower.copy(), self.upper.copy()
        remaining = [n for n in negatives if np.any(n != positive)]
        while remaining:
            neg = remaining[rng.integers(len(remaining))]
            differ = np.flatnonzero(neg != positive)
            k = differ[rng.integers(differ.size)]
            if self.integer[k]:
                if neg[k] > positive[k]:
                    hi[k] = rng.integers(int(positive[k]), int(neg[k]))
                else:
                    lo[k] = rng.integers(int(neg[k]) + 1, int(positive[k]) + 1)
            elif neg[k] > positive[k]:
                hi[k] = rng.uniform(positive[k], neg[k])
            else:
                lo[k] = rng.uniform(neg[k], positive[k])
            remaining = [n for n in remaining if np.all((n >= lo) & (n <= hi)) and np.any(n != positive)]
        return lo, hi

    def minimize(
        self,
        f: Callable[[np.ndarray], float],
        budget: int,
        rng: np.random.Generator,
        start: tuple[np.ndarray, float] | None = None,
    ) -> RacosResult:
        """Minimise ``f`` with at most ``budget`` evaluations.

        Args:
            f: the objective; it may raise to stop early (the exception propagates after the best is kept
                by the caller).
            budget: evaluations allowed (``>= 1``).
            rng: the random generator.
            start: an already evaluated ``(point, value)`` that seeds the pool without an evaluation.

        Returns:
            The best point, its value and the evaluations made.
        """
        if budget < 1:
            raise ValueError(f"budget must be >= 1, got {budget}")
        pool: list[tuple[float, np.ndarray]] = [] if start is None else [(float(start[1]), np.asarray(start[0], float))]
        used = 0
        while used < budget:
            if used < self.initial or len(pool) <= self.positive_size or rng.random() > self.exploit:
                z = self._uniform(self.lower, self.upper, rng)
            else:
                pool.sort(key=lambda item: item[0])
                positive = pool[rng.integers(self.positive_size)][1]
                negatives = [p for _, p in pool[self.positive_size :]]
                lo, hi = self._region(positive, negatives, rng)
                bits = rng.choice(lo.size, size=min(self.uncertain_bits, lo.size), replace=False)
                z = positive.copy()
                z[bits] = self._uniform(lo, hi, rng)[bits]
            value = float(f(z))
            used += 1
            pool.append((value, z))
            pool.sort(key=lambda item: item[0])
            del pool[self.train_size :]
        best_value, best_x = pool[0]
        return RacosResult(best_x, best_value, used)
