"""Alanine dipeptide in implicit solvent through OpenMM: reduced energies differentiable through the forces.

OpenMM and the system files of ``openmmtools`` are optional (the ``molecules`` extra,
``pip install 'lightning-icml26[molecules]'``) and are loaded when an :class:`AlanineDipeptideEnergy` is built.
"""

from __future__ import annotations

import importlib.util
import os
from typing import Any

import numpy as np
import torch
from torch import Tensor

from lightning_icml26._optional import require
from lightning_icml26.data.boltzmann.energies import check_coordinates

__all__ = ["KB_KJ_PER_MOL_K", "AlanineDipeptideEnergy"]

KB_KJ_PER_MOL_K = 0.0083144626181532  # Boltzmann constant in kJ / (mol K)


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
