"""What an optimizer step (or any call) costs against a plain alternative, measured side by side.

:func:`interleaved_cost` times two callables in interleaved rounds (``ours, plain`` then ``plain, ours``) with the
process CPU clock; its figure is the median over rounds of the per-round ratio ``ours / plain``, which tolerates a
machine shared with other jobs (both sides of a round see the same load). :func:`step_cost` applies it to two
optimizers' ``step()`` on the gradients their parameters hold, the way ``benchmarks/overhead.py`` compares ReWA with
``torch.optim``'s foreach steps.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable
from typing import Any

from torch.optim import Optimizer

__all__ = ["interleaved_cost", "step_cost"]


def interleaved_cost(
    ours: Callable[[], Any], plain: Callable[[], Any], rounds: int = 11, min_seconds: float = 0.05
) -> dict[str, float]:
    """Time ``ours`` and ``plain`` in interleaved rounds; the median per-round ratio and the median times.

    Each round calls both sides (the order alternates) enough times to take at least ``min_seconds`` of process
    CPU time (the count is fixed after a warm-up and a calibration call of each side).

    Args:
        ours: the piece measured, one call.
        plain: its plain alternative, one call.
        rounds: rounds, at least 1.
        min_seconds: CPU seconds per side and round, > 0.

    Returns:
        ``{"ours_us", "plain_us", "ratio"}``: median microseconds per call and the median of per-round ratios.

    Raises:
        ValueError: for ``rounds < 1`` or ``min_seconds <= 0``.

    Example:
        >>> out = interleaved_cost(lambda: sum(range(200)), lambda: sum(range(100)), rounds=3, min_seconds=0.001)
        >>> sorted(out), out["ratio"] > 0
        (['ours_us', 'plain_us', 'ratio'], True)
    """
    if isinstance(rounds, bool) or not isinstance(rounds, int) or rounds < 1:
        raise ValueError(f"rounds must be an int >= 1, got {rounds!r}")
    if not min_seconds > 0:
        raise ValueError(f"min_seconds must be > 0, got {min_seconds!r}")
    counts = []
    for fn in (ours, plain):
        fn()  # warm-up (lazy state, caches)
        start = time.process_time()
        fn()
        counts.append(max(1, math.ceil(min_seconds / max(time.process_time() - start, 1e-6))))
    times: tuple[list[float], list[float]] = ([], [])
    ratios = []
    for r in range(rounds):
        for side in (0, 1) if r % 2 == 0 else (1, 0):
            fn, n = (ours, plain)[side], counts[side]
            start = time.process_time()
            for _ in range(n):
                fn()
            times[side].append((time.process_time() - start) / n)
        ratios.append(times[0][-1] / max(times[1][-1], 1e-12))
    return {
        "ours_us": 1e6 * statistics.median(times[0]),
        "plain_us": 1e6 * statistics.median(times[1]),
        "ratio": statistics.median(ratios),
    }


def step_cost(ours: Optimizer, plain: Optimizer, rounds: int = 11, min_seconds: float = 0.05) -> dict[str, float]:
    """:func:`interleaved_cost` of ``ours.step()`` against ``plain.step()`` on the gradients already set.

    The gradients are not recomputed between steps (the step alone is timed); each optimizer moves its own
    parameters, so give each one its own copy of the model with the same gradients.

    Args:
        ours: the optimizer measured.
        plain: the plain alternative (e.g. ``torch.optim.SGD(..., foreach=True)``).
        rounds: rounds, at least 1.
        min_seconds: CPU seconds per side and round, > 0.

    Returns:
        ``{"ours_us", "plain_us", "ratio"}`` as :func:`interleaved_cost`.

    Raises:
        TypeError: if either argument is not a ``torch.optim.Optimizer``.
        ValueError: if no parameter of an optimizer holds a gradient (its step would do nothing).

    Example:
        >>> import torch
        >>> a, b = torch.nn.Linear(4, 2), torch.nn.Linear(4, 2)
        >>> for p in (*a.parameters(), *b.parameters()):
        ...     p.grad = torch.ones_like(p)
        >>> out = step_cost(torch.optim.SGD(a.parameters(), lr=0.1), torch.optim.SGD(b.parameters(), lr=0.1),
        ...                 rounds=1, min_seconds=1e-4)
        >>> out["ratio"] > 0
        True
    """
    for name, opt in (("ours", ours), ("plain", plain)):
        if not isinstance(opt, Optimizer):
            raise TypeError(f"{name} must be a torch.optim.Optimizer, got {type(opt).__name__}")
        if not any(p.grad is not None for group in opt.param_groups for p in group["params"]):
            raise ValueError(f"{name} ({type(opt).__name__}) has no parameter with a gradient: set .grad first")
    return interleaved_cost(ours.step, plain.step, rounds, min_seconds)
