"""Argument checks shared by every layer: each raises a ``ValueError``/``TypeError`` naming the argument.

The bottom layer of the package (see the import-linter ``layers`` contract): it imports only torch and numpy, so
``distributed``, ``ops``, ``algorithms`` and everything above may use it.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch
from torch import Tensor

__all__ = [
    "check_energies",
    "check_fraction",
    "check_int",
    "check_log_weights",
    "check_real",
    "check_sampling_args",
    "flat_double",
]


def check_int(name: str, value: Any, low: int) -> int:
    """Return ``value`` as an ``int``, or raise unless it is an integer (Python or numpy, not ``bool``) ``>= low``.

    Example:
        >>> check_int("num_nodes", 5, 2)
        5
        >>> check_int("num_nodes", 1, 2)
        Traceback (most recent call last):
        ...
        ValueError: num_nodes must be an integer >= 2, got 1
    """
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < low:
        raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
    return int(value)


def check_fraction(name: str, value: Any) -> float:
    """Return ``value`` as a float, or raise ``ValueError`` naming ``name`` unless it lies in ``(0, 1]``.

    Example:
        >>> check_fraction("keep", 0.25)
        0.25
        >>> check_fraction("keep", 0)
        Traceback (most recent call last):
        ...
        ValueError: keep must be a number in (0, 1], got 0
    """
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0.0 < float(value) <= 1.0:
        raise ValueError(f"{name} must be a number in (0, 1], got {value!r}")
    return float(value)


def check_real(name: str, value: Any) -> float:
    """Return ``value`` as a float: a finite real number (``TypeError`` for other types, ``ValueError`` if not finite).

    Example:
        >>> check_real("lr", 3)
        3.0
        >>> check_real("lr", float("nan"))
        Traceback (most recent call last):
        ...
        ValueError: lr must be finite, got nan
    """
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{name} must be a real number, got {value!r} of type {type(value).__name__}")
    if not math.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value}")
    return float(value)


def flat_double(t: Any, name: str) -> Tensor:
    """A non-empty tensor, detached, as a flat float64 tensor (``TypeError`` if not a tensor, ``ValueError`` if empty).

    Example:
        >>> flat_double(torch.ones(2, 2), "x").dtype, flat_double(torch.ones(2, 2), "x").shape
        (torch.float64, torch.Size([4]))
    """
    if not isinstance(t, Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    t = t.detach().double().flatten()
    if t.numel() == 0:
        raise ValueError(f"{name} must not be empty")
    return t


def check_energies(energies: Any, batch_size: int, name: str = "energy_fn", allow_nonfinite: bool = False) -> Tensor:
    """Check what an energy function returned: a tensor of shape ``(batch_size,)`` with finite values.

    Args:
        energies: the returned value.
        batch_size: number of conformations passed in.
        name: the energy function's name, quoted in errors.
        allow_nonfinite: accept ``nan``/``inf`` entries (the caller handles them explicitly).

    Returns:
        The energies as a 1-D tensor.

    Raises:
        TypeError: if not a tensor.
        ValueError: on a wrong shape or non-finite values (with their count and first indices).

    Example:
        >>> check_energies(torch.zeros(3), 3).shape
        torch.Size([3])
        >>> check_energies(torch.zeros(3, 1), 3)
        Traceback (most recent call last):
        ...
        ValueError: energy_fn returned shape (3, 1); expected (3,) (one reduced energy per conformation)
    """
    if not isinstance(energies, Tensor):
        raise TypeError(f"{name} must return a torch.Tensor, got {type(energies).__name__}")
    if tuple(energies.shape) != (batch_size,):
        raise ValueError(
            f"{name} returned shape {tuple(energies.shape)}; expected ({batch_size},) "
            "(one reduced energy per conformation)"
        )
    if not allow_nonfinite:
        bad = ~torch.isfinite(energies)
        if bool(bad.any()):
            idx = torch.nonzero(bad).flatten()[:5].tolist()
            raise ValueError(
                f"{name} returned {int(bad.sum())} non-finite energies out of {batch_size} "
                f"(first indices {idx}); fix the energy or the conformations (e.g. overlapping atoms)"
            )
    return energies


def check_log_weights(log_weights: Any, allow_empty: bool = False) -> Tensor:
    """Return log importance weights ``(N,)`` as a detached float64 tensor, or raise naming ``log_weights``.

    ``-inf`` entries are allowed (zero weights); ``nan`` and ``+inf`` are not, nor any shape but 1-D.

    Args:
        log_weights: unnormalised log importance weights, one per sample.
        allow_empty: accept ``N = 0`` (a metric's empty update).

    Raises:
        TypeError: if ``log_weights`` is not a tensor.
        ValueError: if it is not 1-D, is empty (unless allowed) or contains ``nan``/``+inf``.

    Example:
        >>> check_log_weights(torch.tensor([0.0, float("-inf")])).dtype
        torch.float64
        >>> check_log_weights(torch.zeros(2, 3))
        Traceback (most recent call last):
        ...
        ValueError: log_weights must be 1-D (N,), one log weight per sample, got shape (2, 3)
    """
    if not isinstance(log_weights, Tensor):
        raise TypeError(f"log_weights must be a torch.Tensor, got {type(log_weights).__name__}")
    if log_weights.ndim != 1:
        raise ValueError(
            f"log_weights must be 1-D (N,), one log weight per sample, got shape {tuple(log_weights.shape)}"
        )
    if log_weights.numel() == 0 and not allow_empty:
        raise ValueError("log_weights must not be empty")
    lw = log_weights.detach().double()
    if bool(torch.isnan(lw).any() | (lw == float("inf")).any()):
        raise ValueError("log_weights must not contain nan or +inf")
    return lw


def check_sampling_args(
    temperature: float, top_k: int | None, top_p: float | None, num_bins: int | None = None
) -> None:
    """Validate sampling settings.

    Raises:
        ValueError: if ``temperature <= 0`` (or not finite), ``top_k < 1`` or ``top_p`` outside ``(0, 1]``.

    Example:
        >>> check_sampling_args(0.0, None, None)
        Traceback (most recent call last):
        ...
        ValueError: temperature must be a finite number > 0, got 0.0
    """
    if isinstance(temperature, bool) or not isinstance(temperature, (int, float)):
        raise TypeError(f"temperature must be a float, got {type(temperature).__name__}")
    if not (math.isfinite(temperature) and temperature > 0):
        raise ValueError(f"temperature must be a finite number > 0, got {temperature}")
    if top_k is not None and (not isinstance(top_k, int) or top_k < 1):
        raise ValueError(f"top_k must be None or an integer >= 1, got {top_k!r}")
    if top_k is not None and num_bins is not None and top_k > num_bins:
        raise ValueError(f"top_k must be at most num_bins={num_bins}, got {top_k}")
    if top_p is not None and not (0.0 < float(top_p) <= 1.0):
        raise ValueError(f"top_p must be None or in (0, 1], got {top_p!r}")
