"""Alanine dipeptide through OpenMM: energy at the shipped coordinates, forces as gradients, MD, dihedrals."""

from __future__ import annotations

import math

import pytest
import torch

from lightning_icml26.data.boltzmann import AlanineDipeptideEnergy, BoltzmannReweighter, ChiralityFix, get_system
from lightning_icml26.data.boltzmann.systems import ALA2_CHIRAL, langevin_md_openmm
from tests._support.skips import requires_module

pytestmark = [requires_module("openmm"), requires_module("openmmtools")]


@pytest.fixture(scope="module")
def energy() -> AlanineDipeptideEnergy:
    return AlanineDipeptideEnergy(300.0)


def test_energy_at_shipped_coordinates(energy: AlanineDipeptideEnergy) -> None:
    x = energy.initial_positions()[None]
    assert float(energy(x)) * energy.kT == pytest.approx(-88.0886, abs=1e-3)  # DATA.md: -88.089 kJ/mol
    assert energy.kT == pytest.approx(8.314462618e-3 * 300.0)


def test_gradient_matches_finite_differences(energy: AlanineDipeptideEnergy) -> None:
    x = energy.initial_positions()[None].clone().requires_grad_(True)
    (grad,) = torch.autograd.grad(energy(x).sum(), x)
    h = 1e-5
    for atom, axis in ((0, 0), (8, 1), (14, 2)):
        plus, minus = x.detach().clone(), x.detach().clone()
        plus[0, atom, axis] += h
        minus[0, atom, axis] -= h
        fd = (float(energy(plus)) - float(energy(minus))) / (2 * h)
        assert float(grad[0, atom, axis]) == pytest.approx(fd, rel=1e-3, abs=1e-2)


def test_md_and_analysis(energy: AlanineDipeptideEnergy) -> None:
    traj = langevin_md_openmm(energy, 20, save_every=50, burn_in_steps=500)
    assert traj.shape == (20, 22, 3)
    e = energy(traj)
    assert bool(torch.isfinite(e).all())
    assert float(e.std()) > 0
    system = get_system("aldp")
    angles = system.torus(traj)
    assert angles is not None
    assert angles.shape == (20, 2)
    assert bool((angles.abs() <= math.pi).all())
    # alanine is an L amino acid: every MD frame has the same handedness; mirrored frames are fixed
    fix = ChiralityFix.from_reference(traj, [ALA2_CHIRAL])
    assert bool(fix.correct(traj).all())
    assert not bool(fix.correct(-traj).any())
    rw = BoltzmannReweighter(energy, clip_quantile=0.0, chirality=fix)
    res = rw.reweight(-traj, torch.zeros(20))
    torch.testing.assert_close(res.energies, e)  # energies are mirror-invariant, mirrored frames come back
    with pytest.raises(ValueError, match="temperature"):
        AlanineDipeptideEnergy(0.0)
