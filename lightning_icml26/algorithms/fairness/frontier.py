"""Accuracy against fairness gap over a sweep of tolerances, with a PNG plot.

The experiment that sweeps these frontiers on a data set (the ``fair_compas`` recipe) is
:func:`lightning_icml26.tasks.fair_frontier_task`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from lightning_icml26.algorithms.fairness._common import (
    check_alpha,
    check_count,
    check_criterion,
    check_labels,
    expected_gap,
    one_hot,
    to_numpy,
)

__all__ = ["fairness_frontier", "plot_frontier"]


def fairness_frontier(
    method: Callable[[float], Any],
    alphas: Sequence[float],
    y: Any,
    groups: Any,
    num_groups: int,
    criterion: str = "dp",
    plot_path: str | Path | None = None,
    label: str = "method",
) -> list[dict[str, float]]:
    """Evaluate ``method(alpha)`` at each tolerance: accuracy and achieved gap on held-out data.

    Args:
        method: maps a tolerance to predictions on the evaluation rows: labels ``(n,)`` or a class
            distribution ``(n, K)`` of a randomised classifier (rates are then expectations).
        alphas: tolerances, each in ``[0, 1]``.
        y: evaluation labels ``(n,)``.
        groups: evaluation group ids ``(n,)`` (used only to measure the gap).
        num_groups: number of groups.
        criterion: ``"dp"``, ``"eo"`` or ``"eopp"`` (largest pairwise gap over the cells).
        plot_path: where to write a PNG of accuracy against gap (``None``: no plot).
        label: legend label of the curve.

    Returns:
        One ``dict(alpha, accuracy, gap)`` per tolerance.

    Example:
        >>> import torch
        >>> y = torch.tensor([0, 1, 1, 0]); a = torch.tensor([0, 0, 1, 1])
        >>> fairness_frontier(lambda alpha: y, [0.0], y, a, num_groups=2)
        [{'alpha': 0.0, 'accuracy': 1.0, 'gap': 0.0}]
    """
    criterion = check_criterion(criterion)
    check_count("num_groups", num_groups)
    yy = check_labels("y", to_numpy("y", y), np.iinfo(np.int64).max)
    aa = check_labels("groups", to_numpy("groups", groups), num_groups, yy.shape[0])
    rows = []
    for alpha in alphas:
        alpha = check_alpha(alpha)
        pred = to_numpy("predictions", method(alpha))
        dist = pred.astype(np.float64) if pred.ndim == 2 else one_hot(pred.astype(np.int64), int(yy.max()) + 1)
        if dist.shape[0] != yy.shape[0]:
            raise ValueError(f"method({alpha}) returned {dist.shape[0]} predictions for {yy.shape[0]} rows")
        if dist.shape[1] <= yy.max():
            dist = np.pad(dist, ((0, 0), (0, int(yy.max()) + 1 - dist.shape[1])))
        accuracy = float(dist[np.arange(yy.shape[0]), yy].mean())
        rows.append({"alpha": alpha, "accuracy": accuracy, "gap": expected_gap(dist, yy, aa, num_groups, criterion)})
    if plot_path is not None:
        plot_frontier({label: rows}, plot_path)
    return rows


def plot_frontier(curves: dict[str, list[dict[str, float]]], path: str | Path, title: str = "") -> Path:
    """Write a PNG of accuracy (y) against achieved gap (x), one curve per method.

    Args:
        curves: label -> rows with ``gap`` and ``accuracy`` (and ``alpha``, drawn as the ``x = alpha`` guide).
        path: PNG file.
        title: figure title.

    Returns:
        The path written.

    Example:
        >>> import tempfile, os
        >>> out = plot_frontier({"m": [{"alpha": 0.1, "gap": 0.1, "accuracy": 0.7}]},
        ...                     os.path.join(tempfile.mkdtemp(), "f.png"))
        >>> out.is_file()
        True
    """
    # Lazy on purpose: matplotlib is only needed for plots, and the non-interactive Agg backend must be
    # selected before pyplot is first imported (a top-level import would fix the backend for the user).
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig, ax = plt.subplots(figsize=(5, 4))
    for name, rows in curves.items():
        ax.plot([r["gap"] for r in rows], [r["accuracy"] for r in rows], marker="o", label=name)
    ax.set_xlabel("achieved fairness gap (held-out)")
    ax.set_ylabel("accuracy (held-out)")
    if title:
        ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
