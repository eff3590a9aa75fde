"""Checks and small helpers shared by the fairness estimators."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import Tensor

from lightning_icml26._checks import check_int

CRITERIA = ("dp", "eo", "eopp")


def check_criterion(criterion: str) -> str:
    """Return ``criterion`` lower-cased, or raise for an unknown one.

    Args:
        criterion: ``"dp"`` (demographic parity), ``"eo"`` (equalized odds) or ``"eopp"`` (equal opportunity),
            in any case.

    Returns:
        The lower-cased criterion.

    Raises:
        ValueError: for any other value.

    Example:
        >>> check_criterion("DP")
        'dp'
    """
    if not isinstance(criterion, str) or criterion.lower() not in CRITERIA:
        raise ValueError(f"criterion must be one of {CRITERIA}, got {criterion!r}")
    return criterion.lower()


def check_alpha(alpha: float) -> float:
    """Return ``alpha`` as a float, or raise unless ``0 <= alpha <= 1``."""
    if isinstance(alpha, bool) or not isinstance(alpha, int | float):
        raise TypeError(f"alpha must be a number, got {type(alpha).__name__}")
    if not 0.0 <= float(alpha) <= 1.0:
        raise ValueError(f"alpha must be in [0, 1] (a tolerance on a gap of rates), got {alpha}")
    return float(alpha)


def check_count(name: str, value: Any, minimum: int = 2) -> int:
    """Return ``value`` as an int, or raise unless it is an integer ``>= minimum``."""
    return check_int(name, value, minimum)


def to_numpy(name: str, value: Any) -> np.ndarray:
    """A float64 or int64 numpy copy of a tensor or array."""
    if isinstance(value, Tensor):
        return value.detach().cpu().double().numpy() if value.is_floating_point() else value.detach().cpu().numpy()
    if isinstance(value, np.ndarray):
        return value
    raise TypeError(f"{name} must be a torch.Tensor or numpy.ndarray, got {type(value).__name__}")


def check_probabilities(name: str, probs: np.ndarray, shape: tuple[int | None, ...], atol: float = 1e-3) -> np.ndarray:
    """Check a probability array: shape (``None`` = any), finite, non-negative, rows summing to 1."""
    if probs.ndim != len(shape) or any(s is not None and s != d for s, d in zip(shape, probs.shape, strict=True)):
        raise ValueError(f"{name} must have shape {shape} (None = any), got {probs.shape}")
    probs = probs.astype(np.float64)
    if not np.isfinite(probs).all() or (probs < -1e-9).any():
        raise ValueError(f"{name} must hold finite non-negative probabilities")
    sums = probs.reshape(probs.shape[0], -1).sum(axis=1)
    worst = float(np.abs(sums - 1.0).max()) if sums.size else 0.0
    if worst > atol:
        raise ValueError(
            f"{name} must sum to 1 over its last {probs.ndim - 1} dim(s) per row (tolerance {atol}), "
            f"found a row summing to {sums[np.argmax(np.abs(sums - 1.0))]:.6g}"
        )
    return np.clip(probs, 0.0, None)


def check_labels(name: str, labels: np.ndarray, upper: int, length: int | None = None) -> np.ndarray:
    """Check integer labels in ``[0, upper)`` (and their count)."""
    labels = np.asarray(labels)
    if labels.ndim != 1 or not np.issubdtype(labels.dtype, np.integer):
        raise ValueError(f"{name} must be a 1-D integer array, got dtype {labels.dtype} and shape {labels.shape}")
    if length is not None and labels.shape[0] != length:
        raise ValueError(f"{name} must have {length} entries, got {labels.shape[0]}")
    if labels.size and (labels.min() < 0 or labels.max() >= upper):
        raise ValueError(f"{name} must hold integers in [0, {upper}), got values in [{labels.min()}, {labels.max()}]")
    return labels.astype(np.int64)


def expected_rates(dist: np.ndarray, y: np.ndarray, groups: np.ndarray, num_groups: int) -> tuple[np.ndarray, ...]:
    """Selection ``(G, K)`` and confusion ``(G, K, K)`` rates of a (randomised) classifier ``dist`` ``(n, K)``.

    Empty groups / cells give NaN.
    """
    num_classes = dist.shape[1]
    sel = np.zeros((num_groups, num_classes))
    conf = np.zeros((num_groups, num_classes, num_classes))
    np.add.at(sel, groups, dist)
    np.add.at(conf, (groups, y), dist)
    with np.errstate(invalid="ignore", divide="ignore"):
        sel_rate = sel / np.bincount(groups, minlength=num_groups)[:, None]
        conf_count = np.zeros((num_groups, num_classes))
        np.add.at(conf_count, (groups, y), 1.0)
        conf_rate = conf / conf_count[:, :, None]
    return sel_rate, conf_rate


def expected_gap(dist: np.ndarray, y: np.ndarray, groups: np.ndarray, num_groups: int, criterion: str) -> float:
    """Largest pairwise gap (max over cells of max minus min over groups) of a randomised classifier.

    Args:
        dist: ``(n, K)`` class distribution of the classifier per sample.
        y: ``(n,)`` labels.
        groups: ``(n,)`` group ids.
        num_groups: number of groups.
        criterion: ``"dp"``, ``"eo"`` or ``"eopp"`` (see :func:`check_criterion`).

    Example:
        >>> y, groups = np.array([0, 1, 0, 1]), np.array([0, 0, 1, 1])
        >>> expected_gap(one_hot(np.array([0, 0, 1, 1]), 2), y, groups, 2, "dp")  # group 0 always 0, group 1 always 1
        1.0
    """
    sel, conf = expected_rates(dist, y, groups, num_groups)
    if criterion == "dp":
        cells = sel
    elif criterion == "eo":
        cells = conf.reshape(num_groups, -1)
    else:
        cells = np.diagonal(conf, axis1=1, axis2=2)
    with np.errstate(invalid="ignore"):
        spread = np.nanmax(cells, axis=0) - np.nanmin(cells, axis=0)
    return float(np.nanmax(spread))


def one_hot(labels: np.ndarray, num_classes: int) -> np.ndarray:
    """``(n, K)`` float64 one-hot rows.

    Example:
        >>> one_hot(np.array([1, 0]), 3).tolist()
        [[0.0, 1.0, 0.0], [1.0, 0.0, 0.0]]
    """
    out = np.zeros((labels.shape[0], num_classes))
    out[np.arange(labels.shape[0]), labels] = 1.0
    return out


def as_tensor(array: np.ndarray) -> Tensor:
    """A torch tensor (int64 or float64) from a numpy array."""
    return torch.from_numpy(np.ascontiguousarray(array))
