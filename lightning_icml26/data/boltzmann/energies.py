"""Energies behind one protocol: a callable from coordinates ``(N, n_atoms, dim)`` to reduced energies ``(N,)``.

Reduced means in units of kT (the Boltzmann density is ``exp(-E)``). The torch energies (double well DW-4,
Lennard-Jones clusters LJ-13 / LJ-55) are differentiable; alanine dipeptide goes through OpenMM
(:class:`~lightning_icml26.data.boltzmann.alanine.AlanineDipeptideEnergy`, an optional extra).
"""

from __future__ import annotations

import math
from typing import Any, Protocol, runtime_checkable

import numpy as np
import torch
from scipy.optimize import minimize
from torch import Tensor

from lightning_icml26._checks import check_energies

__all__ = [
    "DoubleWellEnergy",
    "Energy",
    "LennardJonesEnergy",
    "check_coordinates",
    "check_energies",
    "icosahedral_cluster",
    "minimize_energy",
]


@runtime_checkable
class Energy(Protocol):
    """Protocol: reduced energy (in kT) of a batch of conformations.

    Implementations take coordinates of shape ``(N, n_atoms, dim)`` and return ``(N,)`` energies;
    ``n_atoms`` and ``dim`` are attributes.

    Example:
        >>> isinstance(DoubleWellEnergy(), Energy)
        True
    """

    n_atoms: int
    dim: int

    def __call__(self, x: Tensor) -> Tensor:
        """Reduced energies of ``x`` (``(N, n_atoms, dim)``) as an ``(N,)`` tensor."""
        ...


def check_coordinates(x: Tensor, n_atoms: int, dim: int, name: str = "x") -> Tensor:
    """Validate a batch of conformations and return it as ``(N, n_atoms, dim)``.

    Flat ``(N, n_atoms * dim)`` input is reshaped.

    Args:
        x: coordinates.
        n_atoms: expected number of atoms.
        dim: expected spatial dimension.
        name: argument name quoted in errors.

    Raises:
        TypeError: if ``x`` is not a floating tensor.
        ValueError: on a wrong shape.

    Example:
        >>> tuple(check_coordinates(torch.zeros(5, 8), 4, 2).shape)
        (5, 4, 2)
    """
    if not isinstance(x, Tensor) or not x.is_floating_point():
        raise TypeError(f"{name} must be a floating-point torch.Tensor, got {type(x).__name__}")
    if x.dim() == 2 and x.shape[1] == n_atoms * dim:
        x = x.reshape(x.shape[0], n_atoms, dim)
    if x.dim() != 3 or tuple(x.shape[1:]) != (n_atoms, dim):
        raise ValueError(f"{name} must have shape (N, {n_atoms}, {dim}) or (N, {n_atoms * dim}), got {tuple(x.shape)}")
    return x


def _pair_distances(x: Tensor) -> Tensor:
    """Distances of every pair ``i < j``: ``(N, n (n - 1) / 2)``."""
    n = x.shape[1]
    i, j = torch.triu_indices(n, n, offset=1, device=x.device)
    return (x[:, i] - x[:, j]).norm(dim=-1)


class DoubleWellEnergy(torch.nn.Module):
    """Multi-particle double-well pair potential (DW-4 of Köhler et al. 2020), reduced by ``kT``.

    ``E(x) = 1/kT * sum_{i<j} a (d_ij - d0) + b (d_ij - d0)^2 + c (d_ij - d0)^4``; defaults ``a=0, b=-4,
    c=0.9, d0=4, kT=1`` on 4 particles in 2-D.

    Args:
        n_atoms: number of particles.
        dim: spatial dimension.
        a: linear coefficient.
        b: quadratic coefficient.
        c: quartic coefficient.
        d0: reference distance.
        kT: temperature (energy unit), positive.

    Example:
        >>> e = DoubleWellEnergy()
        >>> x = torch.tensor([[[0.0, 0.0], [4.0, 0.0], [0.0, 4.0], [4.0, 4.0]]])
        >>> round(float(e(x)), 3)  # two diagonals at 4 sqrt(2)
        -8.397
    """

    def __init__(
        self,
        n_atoms: int = 4,
        dim: int = 2,
        a: float = 0.0,
        b: float = -4.0,
        c: float = 0.9,
        d0: float = 4.0,
        kT: float = 1.0,
    ) -> None:
        super().__init__()
        if kT <= 0:
            raise ValueError(f"kT must be positive, got {kT}")
        if n_atoms < 2:
            raise ValueError(f"n_atoms must be at least 2, got {n_atoms}")
        self.n_atoms, self.dim = int(n_atoms), int(dim)
        self.a, self.b, self.c, self.d0, self.kT = a, b, c, d0, kT

    def forward(self, x: Tensor) -> Tensor:
        """Reduced energies of ``x`` (``(N, n_atoms, dim)``)."""
        x = check_coordinates(x, self.n_atoms, self.dim)
        r = _pair_distances(x) - self.d0
        return (self.a * r + self.b * r**2 + self.c * r**4).sum(-1) / self.kT


class LennardJonesEnergy(torch.nn.Module):
    """Lennard-Jones cluster ``4 eps sum_{i<j} (s/r)^12 - (s/r)^6`` plus an optional harmonic confinement.

    The confinement ``oscillator/2 * sum_i |x_i - com|^2`` keeps a hot cluster together (the LJ-13 benchmark of
    Köhler et al. uses ``sigma = 2^(-1/6)`` (minimum at ``r = 1``), ``eps = 1``, ``kT = 1``, ``oscillator = 1``).
    With ``oscillator = 0`` and ``kT = 1`` the values are plain LJ energies in units of ``eps`` (LJ-13 global
    minimum -44.326801, LJ-55 -279.248470).

    Args:
        n_atoms: number of particles.
        dim: spatial dimension.
        epsilon: well depth.
        sigma: length scale.
        oscillator: strength of the harmonic confinement (0 disables it).
        kT: temperature, positive.

    Example:
        >>> e = LennardJonesEnergy(n_atoms=2, oscillator=0.0)
        >>> x = torch.tensor([[[0.0, 0.0, 0.0], [2 ** (1 / 6), 0.0, 0.0]]])
        >>> round(float(e(x)), 6)
        -1.0
    """

    def __init__(
        self,
        n_atoms: int = 13,
        dim: int = 3,
        epsilon: float = 1.0,
        sigma: float = 1.0,
        oscillator: float = 0.0,
        kT: float = 1.0,
    ) -> None:
        super().__init__()
        if kT <= 0:
            raise ValueError(f"kT must be positive, got {kT}")
        if sigma <= 0 or epsilon <= 0:
            raise ValueError(f"sigma and epsilon must be positive, got sigma={sigma}, epsilon={epsilon}")
        self.n_atoms, self.dim = int(n_atoms), int(dim)
        self.epsilon, self.sigma, self.oscillator, self.kT = epsilon, sigma, oscillator, kT

    def forward(self, x: Tensor) -> Tensor:
        """Reduced energies of ``x`` (``(N, n_atoms, dim)``)."""
        x = check_coordinates(x, self.n_atoms, self.dim)
        s6 = (self.sigma / _pair_distances(x)) ** 6
        energy = 4 * self.epsilon * (s6 * s6 - s6).sum(-1)
        if self.oscillator:
            centred = x - x.mean(dim=1, keepdim=True)
            energy = energy + 0.5 * self.oscillator * centred.pow(2).sum(dim=(1, 2))
        return energy / self.kT


def icosahedral_cluster(n_atoms: int, spacing: float = 1.12) -> Tensor:
    """Starting coordinates of a Mackay icosahedron with 13 or 55 atoms (for :func:`minimize_energy`).

    Args:
        n_atoms: 13 or 55.
        spacing: nearest-neighbour distance of the first shell.

    Example:
        >>> tuple(icosahedral_cluster(55).shape)
        (55, 3)
    """
    if n_atoms not in (13, 55):
        raise ValueError(f"n_atoms must be 13 or 55 for an icosahedral cluster, got {n_atoms}")
    phi = (1 + math.sqrt(5)) / 2
    verts = []
    for s1 in (-1.0, 1.0):
        for s2 in (-1.0, 1.0):
            verts += [(0.0, s1, s2 * phi), (s1, s2 * phi, 0.0), (s2 * phi, 0.0, s1)]
    v = torch.tensor(verts, dtype=torch.float64)
    v = v / v.norm(dim=1, keepdim=True)  # unit vertices; edge length = 1.0515 * radius
    radius = spacing / 1.0515
    shells = [torch.zeros(1, 3, dtype=torch.float64), radius * v]
    if n_atoms == 55:
        outer = 2 * radius * v
        d = torch.cdist(outer, outer)
        edge = d[d > 1e-9].min()
        i, j = torch.nonzero((d - edge).abs() < 1e-6 * edge, as_tuple=True)
        keep = i < j
        mids = (outer[i[keep]] + outer[j[keep]]) / 2
        shells += [outer, mids]
    return torch.cat(shells)


def minimize_energy(energy: Any, x0: Tensor, max_iter: int = 2000) -> tuple[Tensor, float]:
    """Local minimisation of a differentiable energy with scipy's L-BFGS.

    Args:
        energy: an :class:`Energy` (torch, differentiable).
        x0: starting coordinates ``(n_atoms, dim)``.
        max_iter: L-BFGS iterations.

    Returns:
        ``(x_min, e_min)``.

    Example:
        >>> e = LennardJonesEnergy(n_atoms=13)
        >>> _, e_min = minimize_energy(e, icosahedral_cluster(13))
        >>> round(e_min, 4)
        -44.3268
    """
    shape = tuple(x0.shape)

    def fun(flat: np.ndarray) -> tuple[float, np.ndarray]:
        x = torch.tensor(flat, dtype=torch.float64).reshape(1, *shape).requires_grad_(True)
        e = energy(x).sum()
        (g,) = torch.autograd.grad(e, x)
        return float(e.detach()), g.flatten().numpy()

    res = minimize(
        fun,
        x0.detach().double().flatten().numpy(),
        jac=True,
        method="L-BFGS-B",
        options={"maxiter": max_iter, "gtol": 1e-10, "ftol": 1e-14},
    )
    return torch.tensor(res.x).reshape(shape), float(res.fun)
