"""Energies behind one protocol: a callable from coordinates ``(N, n_atoms, dim)`` to reduced energies ``(N,)``.

Reduced means in units of kT (the Boltzmann density is ``exp(-E)``). The torch energies (double well DW-4,
Lennard-Jones clusters LJ-13 / LJ-55) are differentiable; alanine dipeptide goes through OpenMM (an optional
extra, ``pip install 'lightning-icml26[molecules]'``), differentiable through the OpenMM forces.
"""

from __future__ import annotations

import importlib.util
import math
import os
from typing import Any, Protocol, runtime_checkable

import numpy as np
import torch
from scipy.optimize import minimize
from torch import Tensor

from lightning_icml26._optional import require

__all__ = [
    "AlanineDipeptideEnergy",
    "DoubleWellEnergy",
    "Energy",
    "LennardJonesEnergy",
    "check_coordinates",
    "check_energies",
    "icosahedral_cluster",
    "minimize_energy",
]

KB_KJ_PER_MOL_K = 0.0083144626181532


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


def _openmm_files() -> tuple[str, str]:
    spec = importlib.util.find_spec("openmmtools")
    if spec is None or spec.origin is None:
        raise ImportError(
            "the alanine-dipeptide files come from the optional package 'openmmtools'; install it with: "
            "pip install 'lightning-icml26[molecules]'"
        )
    folder = os.path.join(os.path.dirname(spec.origin), "data", "alanine-dipeptide-gbsa")
    return os.path.join(folder, "alanine-dipeptide.prmtop"), os.path.join(folder, "alanine-dipeptide.crd")


class _OpenMMEnergyFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, x: Tensor, bridge: AlanineDipeptideEnergy) -> Tensor:  # type: ignore[override]
        energies, forces = bridge._energies_and_forces(x.detach())
        ctx.save_for_backward(forces.to(x.dtype))
        return energies.to(x.dtype)

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> tuple[Tensor, None]:  # type: ignore[override]
        (forces,) = ctx.saved_tensors
        return -forces * grad[:, None, None], None


class AlanineDipeptideEnergy:
    """Alanine dipeptide (Ace-Ala-Nme, 22 atoms) in vacuum through OpenMM, reduced by ``kT`` at ``temperature``.

    Uses the Amber ff96 prmtop/crd files shipped by ``openmmtools`` (read with ``openmm.app``; importing
    ``openmmtools`` itself is not needed), no constraints, no cutoff, the ``Reference`` platform. Coordinates are in
    nm. Differentiable: the backward pass uses OpenMM's forces. Conformations with non-finite energy (e.g.
    overlapping atoms) get ``+inf``.

    Args:
        temperature: temperature in kelvin, positive.
        platform: OpenMM platform name.

    Example:
        >>> from lightning_icml26._optional import is_available
        >>> if is_available("openmm") and is_available("openmmtools"):
        ...     e = AlanineDipeptideEnergy()
        ...     print(round(float(e(e.initial_positions()[None])) * e.kT, 2))  # kJ/mol at the shipped coordinates
        ... else:
        ...     print(-88.09)
        -88.09
    """

    dim = 3

    def __init__(self, temperature: float = 300.0, platform: str = "Reference") -> None:
        if temperature <= 0:
            raise ValueError(f"temperature must be positive (kelvin), got {temperature}")
        self.temperature = float(temperature)
        self.kT = KB_KJ_PER_MOL_K * self.temperature
        self.platform = platform
        self._context: Any = None
        prmtop, _ = _openmm_files()
        app = require("openmm.app", extra="molecules", purpose="alanine dipeptide energies")
        self._prmtop = app.AmberPrmtopFile(prmtop)
        self.atom_names = [a.name for a in self._prmtop.topology.atoms()]
        self.elements = [a.element.symbol for a in self._prmtop.topology.atoms()]
        self.n_atoms = len(self.atom_names)

    def system(self) -> Any:
        """The ``openmm.System`` (vacuum, no constraints, no cutoff)."""
        return self._prmtop.createSystem(implicitSolvent=None, constraints=None, nonbondedCutoff=None)

    def topology(self) -> Any:
        """The ``openmm.app.Topology``."""
        return self._prmtop.topology

    def initial_positions(self) -> Tensor:
        """Shipped coordinates (nm), ``(22, 3)`` float64."""
        app = require("openmm.app", extra="molecules")
        unit = require("openmm.unit", extra="molecules")
        crd = app.AmberInpcrdFile(_openmm_files()[1])
        return torch.tensor(crd.getPositions(asNumpy=True).value_in_unit(unit.nanometer), dtype=torch.float64)

    def _ctx(self) -> Any:
        if self._context is None:
            openmm = require("openmm", extra="molecules")
            unit = require("openmm.unit", extra="molecules")
            integrator = openmm.VerletIntegrator(1.0 * unit.femtoseconds)
            self._context = openmm.Context(self.system(), integrator, openmm.Platform.getPlatformByName(self.platform))
        return self._context

    def _energies_and_forces(self, x: Tensor) -> tuple[Tensor, Tensor]:
        unit = require("openmm.unit", extra="molecules")
        ctx = self._ctx()
        arr = x.double().cpu().numpy()
        energies = np.empty(arr.shape[0])
        forces = np.zeros_like(arr)
        for i in range(arr.shape[0]):
            if not np.isfinite(arr[i]).all():
                energies[i] = np.inf
                continue
            ctx.setPositions(arr[i])
            state = ctx.getState(getEnergy=True, getForces=True)
            e = state.getPotentialEnergy().value_in_unit(unit.kilojoule_per_mole)
            f = state.getForces(asNumpy=True).value_in_unit(unit.kilojoule_per_mole / unit.nanometer)
            if np.isfinite(e) and np.isfinite(f).all():
                energies[i], forces[i] = e, f
            else:
                energies[i] = np.inf
        return torch.from_numpy(energies / self.kT).to(x.device), torch.from_numpy(forces / self.kT).to(x.device)

    def __call__(self, x: Tensor) -> Tensor:
        """Reduced energies of ``x`` (``(N, 22, 3)`` in nm)."""
        x = check_coordinates(x, self.n_atoms, self.dim)
        out: Tensor = _OpenMMEnergyFunction.apply(x, self)
        return out

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_context"] = None
        return state
