"""Functional Boltzmann-generator metrics: Kish ESS, energy W2, torus W2 and TICA W2.

The exact optimal-transport costs for the torus and TICA metrics come from POT (``ot.emd2``, the ``ot`` extra),
imported lazily; the 1-D energy W2 is computed exactly from the quantile functions without POT.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from scipy.linalg import eigh
from torch import Tensor

from lightning_icml26._checks import flat_double
from lightning_icml26._optional import require
from lightning_icml26.algorithms.boltzmann_reweighting import effective_sample_size

__all__ = [
    "effective_sample_size",
    "energy_w2",
    "fit_tica",
    "tica_w2",
    "torus_w2",
    "wasserstein_1d",
]


def wasserstein_1d(a: Tensor, b: Tensor, p: int = 2) -> Tensor:
    """Exact ``W_p^p`` between the empirical (uniform-weight) distributions of 1-D samples ``a`` and ``b``.

    Integrates ``|F_a^-1(t) - F_b^-1(t)|^p`` over ``t`` exactly on the merged breakpoints ``i / n`` and ``j / m``.

    Example:
        >>> float(wasserstein_1d(torch.tensor([0.0, 1.0]), torch.tensor([1.0, 2.0])))
        1.0
    """
    a, b = torch.sort(flat_double(a, "a")).values, torch.sort(flat_double(b, "b")).values
    n, m = a.numel(), b.numel()
    t = torch.unique(
        torch.cat([torch.arange(1, n + 1, dtype=torch.float64) / n, torch.arange(1, m + 1, dtype=torch.float64) / m])
    )
    t = t[t <= 1.0]
    left = torch.cat([torch.zeros(1, dtype=torch.float64), t[:-1]])
    mid = (left + t) / 2
    ia = (mid * n).floor().long().clamp_(max=n - 1)
    ib = (mid * m).floor().long().clamp_(max=m - 1)
    return ((a[ia] - b[ib]).abs().pow(p) * (t - left)).sum()


def energy_w2(generated: Tensor, reference: Tensor, clip: float | None = None) -> Tensor:
    """E-W2: square root of the exact 1-D Wasserstein-2 cost between reference and generated energies.

    Args:
        generated: generated (resampled) energies.
        reference: reference energies (e.g. MD), any shape (flattened).
        clip: clip energies to ``[-clip, clip]`` first (the "cropped" variant uses 1000); ``None``: no clipping.

    Example:
        >>> float(energy_w2(torch.tensor([0.0, 1.0]), torch.tensor([2.0, 3.0])))
        2.0
    """
    ref, gen = flat_double(reference, "reference"), flat_double(generated, "generated")
    if clip is not None:
        if not clip > 0:
            raise ValueError(f"clip must be None or positive, got {clip}")
        ref, gen = ref.clamp(-clip, clip), gen.clamp(-clip, clip)
    for name, t in (("reference", ref), ("generated", gen)):
        if not bool(torch.isfinite(t).all()):
            raise ValueError(
                f"{name} energies contain {int((~torch.isfinite(t)).sum())} non-finite values; "
                "pass clip=<float> or drop them"
            )
    return wasserstein_1d(ref, gen, p=2).sqrt()


def _emd2(cost: np.ndarray) -> float:
    ot = require("ot", extra="ot", purpose="exact optimal transport (torus / TICA W2)")
    n, m = cost.shape
    return float(ot.emd2(np.full(n, 1.0 / n), np.full(m, 1.0 / m), cost, numItermax=10_000_000))


def _check_2d(t: Tensor, name: str) -> Tensor:
    if not isinstance(t, Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    t = t.detach().double()
    if t.dim() == 1:
        t = t[:, None]
    if t.dim() != 2 or t.shape[0] == 0:
        raise ValueError(f"{name} must have shape (N, D) with N >= 1, got {tuple(t.shape)}")
    if not bool(torch.isfinite(t).all()):
        raise ValueError(f"{name} contains non-finite values")
    return t


def torus_w2(generated: Tensor, reference: Tensor) -> Tensor:
    """T-W2: exact W2 on the torus between angle sets ``(N, D)`` and ``(M, D)`` (radians), uniform weights.

    Cost ``c(a, b) = sum_d min(|a_d - b_d|, 2 pi - |a_d - b_d|)^2`` (after wrapping differences into
    ``[0, 2 pi)``); returns ``sqrt`` of the optimal cost.

    Example:
        >>> round(float(torus_w2(torch.tensor([[3.1]]), torch.tensor([[-3.1]]))), 4)  # across the seam
        0.0832
    """
    ref, gen = _check_2d(reference, "reference"), _check_2d(generated, "generated")
    if ref.shape[1] != gen.shape[1]:
        raise ValueError(
            f"reference and generated need the same number of angles, got {ref.shape[1]} and {gen.shape[1]}"
        )
    diff = torch.remainder(ref[:, None, :] - gen[None, :, :], 2 * math.pi)
    cost = torch.minimum(diff, 2 * math.pi - diff).pow(2).sum(-1)
    return torch.tensor(math.sqrt(max(_emd2(cost.numpy()), 0.0)), dtype=torch.float64)


def fit_tica(
    features: Tensor, lagtime: int = 1, n_components: int = 2, epsilon: float = 1e-10
) -> tuple[Tensor, Tensor]:
    """Fit TICA on a time-ordered trajectory of features ``(T, F)``.

    Solves the generalised eigenproblem ``C_tau v = lambda C_0 v`` with the symmetrised lagged covariance
    ``C_tau = (X_0^T X_tau + X_tau^T X_0) / 2`` and the instantaneous covariance
    ``C_0 = (X_0^T X_0 + X_tau^T X_tau) / 2`` of mean-free features (regularised by ``epsilon``).

    Returns:
        ``(mean (F,), projection (F, n_components))`` ordered by decreasing eigenvalue.

    Example:
        >>> mean, proj = fit_tica(torch.randn(200, 3), lagtime=2, n_components=2)
        >>> tuple(proj.shape)
        (3, 2)
    """
    x = _check_2d(features, "features")
    if not 1 <= lagtime < x.shape[0]:
        raise ValueError(f"lagtime must be in [1, {x.shape[0] - 1}] for {x.shape[0]} frames, got {lagtime}")
    if not 1 <= n_components <= x.shape[1]:
        raise ValueError(f"n_components must be in [1, {x.shape[1]}], got {n_components}")
    mean = x.mean(0)
    x0, xt = (x[:-lagtime] - mean).numpy(), (x[lagtime:] - mean).numpy()
    c0 = (x0.T @ x0 + xt.T @ xt) / (2 * len(x0))
    ct = (x0.T @ xt + xt.T @ x0) / (2 * len(x0))
    values, vectors = eigh(ct, c0 + epsilon * np.eye(c0.shape[0]))
    order = np.argsort(values)[::-1][:n_components]
    return mean, torch.from_numpy(np.ascontiguousarray(vectors[:, order]))


def tica_w2(generated: Tensor, reference: Tensor, lagtime: int = 1, n_components: int = 2) -> Tensor:
    """TICA-W2: exact Euclidean W2 between reference and generated features projected on the reference's TICA.

    Args:
        generated: generated features ``(M, F)``.
        reference: time-ordered reference trajectory features ``(T, F)`` (TICA is fitted on it).
        lagtime: TICA lag in frames.
        n_components: number of TICA components (2 in the paper).

    Example:
        >>> ref = torch.randn(100, 3, generator=torch.Generator().manual_seed(0))
        >>> float(tica_w2(ref, ref, lagtime=1)) < 1e-6
        True
    """
    ref, gen = _check_2d(reference, "reference"), _check_2d(generated, "generated")
    if ref.shape[1] != gen.shape[1]:
        raise ValueError(
            f"reference and generated need the same number of features, got {ref.shape[1]} and {gen.shape[1]}"
        )
    mean, proj = fit_tica(ref, lagtime, n_components)
    a, b = (ref - mean) @ proj, (gen - mean) @ proj
    cost = torch.cdist(a, b).pow(2)
    return torch.tensor(math.sqrt(max(_emd2(cost.numpy()), 0.0)), dtype=torch.float64)
