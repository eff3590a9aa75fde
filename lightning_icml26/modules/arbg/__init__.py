"""ArBG: autoregressive Boltzmann generators (Rehman et al., ICML 2026) and their evaluation pieces.

``transformers`` (ArBG's network), ``zuko`` (flow baseline) and ``openmm`` (alanine dipeptide) are imported lazily.
"""

from __future__ import annotations

from lightning_icml26.modules.arbg.energies import (
    AlanineDipeptideEnergy,
    DoubleWellEnergy,
    Energy,
    LennardJonesEnergy,
    check_energies,
    icosahedral_cluster,
    minimize_energy,
)
from lightning_icml26.modules.arbg.flow import FlowBG
from lightning_icml26.modules.arbg.module import ArBG, augment, random_rotations
from lightning_icml26.modules.arbg.reweighting import BoltzmannReweighter, ChiralityFix, ReweightResult
from lightning_icml26.modules.arbg.sampler import autoregressive_sample, masked_log_softmax, sequence_log_prob
from lightning_icml26.modules.arbg.systems import (
    SYSTEMS,
    BoltzmannSystem,
    dihedral_angles,
    get_system,
    langevin_md_openmm,
    metropolis_mcmc,
    reference_samples,
)
from lightning_icml26.modules.arbg.tokenizer import CoordinateTokenizer

__all__ = [
    "SYSTEMS",
    "AlanineDipeptideEnergy",
    "ArBG",
    "BoltzmannReweighter",
    "BoltzmannSystem",
    "ChiralityFix",
    "CoordinateTokenizer",
    "DoubleWellEnergy",
    "Energy",
    "FlowBG",
    "LennardJonesEnergy",
    "ReweightResult",
    "augment",
    "autoregressive_sample",
    "check_energies",
    "dihedral_angles",
    "get_system",
    "icosahedral_cluster",
    "langevin_md_openmm",
    "masked_log_softmax",
    "metropolis_mcmc",
    "minimize_energy",
    "random_rotations",
    "reference_samples",
    "sequence_log_prob",
]
