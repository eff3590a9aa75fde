"""Boltzmann systems: energies, reference samplers, token samplers, importance reweighting and the DataModule.

The torch energies (DW-4, LJ-13, LJ-55) need nothing beyond torch; alanine dipeptide goes through OpenMM (the
optional ``molecules`` extra), loaded only when that system is used.
"""

from __future__ import annotations

from lightning_icml26.algorithms.boltzmann_reweighting import (
    BoltzmannReweighter,
    ChiralityFix,
    ReweightResult,
    signed_volumes,
)
from lightning_icml26.data.boltzmann.alanine import AlanineDipeptideEnergy
from lightning_icml26.data.boltzmann.datamodule import BoltzmannDataModule
from lightning_icml26.data.boltzmann.energies import (
    DoubleWellEnergy,
    Energy,
    LennardJonesEnergy,
    check_energies,
    icosahedral_cluster,
    minimize_energy,
)
from lightning_icml26.data.boltzmann.sampler import (
    autoregressive_sample,
    check_sampling_args,
    masked_log_softmax,
    sequence_log_prob,
)
from lightning_icml26.data.boltzmann.systems import (
    SYSTEMS,
    BoltzmannSystem,
    dihedral_angles,
    get_system,
    langevin_md_openmm,
    metropolis_mcmc,
    reference_samples,
)

__all__ = [
    "SYSTEMS",
    "AlanineDipeptideEnergy",
    "BoltzmannDataModule",
    "BoltzmannReweighter",
    "BoltzmannSystem",
    "DoubleWellEnergy",
    "Energy",
    "LennardJonesEnergy",
    "ChiralityFix",
    "ReweightResult",
    "autoregressive_sample",
    "check_energies",
    "check_sampling_args",
    "dihedral_angles",
    "get_system",
    "icosahedral_cluster",
    "langevin_md_openmm",
    "masked_log_softmax",
    "metropolis_mcmc",
    "minimize_energy",
    "reference_samples",
    "sequence_log_prob",
    "signed_volumes",
]
