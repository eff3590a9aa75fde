"""Benchmark systems (DW-4, LJ-13, LJ-55, alanine dipeptide) and the project's own reference samplers.

Reference samples come from Metropolis MCMC in torch (DW-4, LJ) or Langevin MD in OpenMM (alanine dipeptide),
are cached on disk (``.npz`` under ``cache_dir``, default ``~/.cache/lightning_icml26/boltzmann`` or
``$ICML26_CACHE``) after the first run and never committed.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor

from lightning_icml26._optional import require
from lightning_icml26.data.boltzmann.alanine import AlanineDipeptideEnergy
from lightning_icml26.data.boltzmann.energies import DoubleWellEnergy, LennardJonesEnergy

__all__ = [
    "BoltzmannSystem",
    "SYSTEMS",
    "dihedral_angles",
    "get_system",
    "langevin_md_openmm",
    "metropolis_mcmc",
    "reference_samples",
]

ALA2_PHI = (4, 6, 8, 14)  # C(ACE) - N - CA - C
ALA2_PSI = (6, 8, 14, 16)  # N - CA - C - N(NME)
ALA2_CHIRAL = (8, 6, 14, 10)  # CA with N, C, CB


def dihedral_angles(x: Tensor, quads: list[tuple[int, int, int, int]]) -> Tensor:
    """Dihedral angles (radians, in ``(-pi, pi]``) of atom quadruples: ``(N, len(quads))``.

    Example:
        >>> x = torch.tensor([[[1.0, 0, 0], [0, 0, 0], [0, 1, 0], [0, 1, 1]]])
        >>> round(float(dihedral_angles(x, [(0, 1, 2, 3)])[0, 0]), 4)  # 90 degrees
        -1.5708
    """
    idx = torch.tensor(quads, dtype=torch.long)
    p0, p1, p2, p3 = (x[:, idx[:, k]] for k in range(4))
    b0, b1, b2 = p0 - p1, p2 - p1, p3 - p2
    b1n = b1 / b1.norm(dim=-1, keepdim=True)
    v = b0 - (b0 * b1n).sum(-1, keepdim=True) * b1n
    w = b2 - (b2 * b1n).sum(-1, keepdim=True) * b1n
    xx = (v * w).sum(-1)
    yy = (torch.cross(b1n, v, dim=-1) * w).sum(-1)
    return torch.atan2(yy, xx)


@dataclass
class BoltzmannSystem:
    """A benchmark system: its energy, shape, reference-sampler settings and analysis functions.

    Attributes:
        name: system name.
        n_atoms: atoms.
        dim: spatial dimension.
        make_energy: builds the :class:`~lightning_icml26.data.boltzmann.energies.Energy`.
        atom_types: type id per atom (for the model's atom-type embedding).
        sampler: ``"mcmc"`` or ``"md"``.
        sampler_kwargs: defaults of the reference sampler.
        dihedrals: atom quadruples of backbone dihedrals (for T-W2 / Ramachandran), empty if none.
        chiral_centres: chiral centres ``(centre, a, b, c)`` for the chirality fix, empty if none.
    """

    name: str
    n_atoms: int
    dim: int
    make_energy: Callable[[], Any]
    atom_types: list[int]
    sampler: str = "mcmc"
    sampler_kwargs: dict[str, Any] = field(default_factory=dict)
    dihedrals: list[tuple[int, int, int, int]] = field(default_factory=list)
    chiral_centres: list[tuple[int, int, int, int]] = field(default_factory=list)

    def energy(self) -> Any:
        """A fresh energy function."""
        return self.make_energy()

    def torus(self, x: Tensor) -> Tensor | None:
        """Backbone dihedrals ``(N, D)`` (radians) or ``None`` when the system has none."""
        return dihedral_angles(x.double(), self.dihedrals) if self.dihedrals else None

    def tica_features(self, x: Tensor) -> Tensor:
        """Features for TICA: all pairwise distances of heavy atoms (type > 0) or of all atoms."""
        heavy = [i for i, t in enumerate(self.atom_types) if t > 0] if self.dihedrals else list(range(self.n_atoms))
        sub = x.double()[:, heavy]
        i, j = torch.triu_indices(len(heavy), len(heavy), offset=1)
        return (sub[:, i] - sub[:, j]).norm(dim=-1)


_ELEMENT_TYPES = {"H": 0, "C": 1, "N": 2, "O": 3, "S": 4}
_ALA2_ELEMENTS = [
    "H",
    "C",
    "H",
    "H",
    "C",
    "O",
    "N",
    "H",
    "C",
    "H",
    "C",
    "H",
    "H",
    "H",
    "C",
    "O",
    "N",
    "H",
    "C",
    "H",
    "H",
    "H",
]

SYSTEMS: dict[str, BoltzmannSystem] = {
    "dw4": BoltzmannSystem(
        "dw4",
        4,
        2,
        lambda: DoubleWellEnergy(),
        [0] * 4,
        sampler_kwargs={"step_size": 0.5, "n_chains": 64, "burn_in": 2000, "thin": 20, "init_scale": 2.0},
    ),
    "lj13": BoltzmannSystem(
        "lj13",
        13,
        3,
        lambda: LennardJonesEnergy(13, sigma=2 ** (-1 / 6), oscillator=1.0),
        [0] * 13,
        sampler_kwargs={"step_size": 0.05, "n_chains": 200, "burn_in": 1500, "thin": 10, "init_scale": 0.0},
    ),
    "lj55": BoltzmannSystem(
        "lj55",
        55,
        3,
        lambda: LennardJonesEnergy(55, sigma=2 ** (-1 / 6), oscillator=1.0),
        [0] * 55,
        sampler_kwargs={"step_size": 0.02, "n_chains": 32, "burn_in": 4000, "thin": 100, "init_scale": 0.0},
    ),
    "aldp": BoltzmannSystem(
        "aldp",
        22,
        3,
        lambda: AlanineDipeptideEnergy(300.0),
        [_ELEMENT_TYPES[e] for e in _ALA2_ELEMENTS],
        sampler="md",
        sampler_kwargs={"timestep_fs": 1.0, "save_every": 200, "burn_in_steps": 20_000},
        dihedrals=[ALA2_PHI, ALA2_PSI],
        chiral_centres=[ALA2_CHIRAL],
    ),
}


def get_system(name: str) -> BoltzmannSystem:
    """Look up a system by name.

    Raises:
        ValueError: for an unknown name (the message lists the known ones).

    Example:
        >>> get_system("lj13").n_atoms
        13
    """
    if name not in SYSTEMS:
        raise ValueError(f"system must be one of {sorted(SYSTEMS)}, got {name!r}")
    return SYSTEMS[name]


def metropolis_mcmc(
    energy: Callable[[Tensor], Tensor],
    x0: Tensor,
    num_samples: int,
    step_size: float,
    burn_in: int = 1000,
    thin: int = 10,
    seed: int = 0,
    target_acceptance: float = 0.4,
) -> Tensor:
    """Random-walk Metropolis on centre-of-mass-free coordinates with parallel chains.

    Every proposal is a Gaussian step projected to zero centre of mass (a symmetric proposal on that subspace,
    where translation-invariant energies define a proper density). The step size adapts towards
    ``target_acceptance`` during burn-in only.

    Args:
        energy: reduced energy.
        x0: initial states ``(C, n_atoms, dim)`` (C chains).
        num_samples: samples to return (rounded up to a multiple of ``C``, then truncated).
        step_size: initial proposal std.
        burn_in: adaptation steps (discarded).
        thin: steps between kept states.
        seed: RNG seed.
        target_acceptance: acceptance rate aimed at during burn-in.

    Returns:
        ``(num_samples, n_atoms, dim)`` float64 samples (chain-interleaved, ordered in time).

    Example:
        >>> s = metropolis_mcmc(lambda x: 0.5 * x.pow(2).sum(dim=(1, 2)), torch.zeros(8, 2, 1), 400, 1.0,
        ...                     burn_in=200, thin=2)
        >>> tuple(s.shape), bool(s.mean(dim=1).abs().max() < 1e-12)
        ((400, 2, 1), True)
    """
    gen = torch.Generator().manual_seed(seed)
    x = x0.double() - x0.double().mean(dim=1, keepdim=True)
    e = energy(x)
    step = torch.full((x.shape[0], 1, 1), float(step_size), dtype=torch.float64)
    out: list[Tensor] = []
    total = burn_in + thin * math.ceil(num_samples / x.shape[0])
    for it in range(total):
        prop = x + step * torch.randn(x.shape, dtype=torch.float64, generator=gen)
        prop = prop - prop.mean(dim=1, keepdim=True)
        e_new = energy(prop)
        log_u = torch.log(torch.rand(x.shape[0], dtype=torch.float64, generator=gen))
        accept = (log_u < (e - e_new)) & torch.isfinite(e_new)
        x = torch.where(accept[:, None, None], prop, x)
        e = torch.where(accept, e_new, e)
        if it < burn_in:
            step = step * torch.exp(0.05 * (accept.double() - target_acceptance))[:, None, None]
        elif (it - burn_in + 1) % thin == 0:
            out.append(x.clone())
    return torch.stack(out, dim=1).transpose(0, 1).reshape(-1, *x.shape[1:])[:num_samples]


def langevin_md_openmm(
    energy: AlanineDipeptideEnergy,
    num_samples: int,
    timestep_fs: float = 1.0,
    save_every: int = 200,
    burn_in_steps: int = 20_000,
    friction_per_ps: float = 1.0,
    seed: int = 0,
) -> Tensor:
    """Langevin MD (OpenMM ``LangevinMiddleIntegrator``, Reference platform, no constraints) of a molecule.

    Returns ``(num_samples, n_atoms, 3)`` positions in nm, one frame every ``save_every`` steps (a time-ordered
    trajectory, so it can be used for TICA).

    Example:
        >>> from lightning_icml26._optional import is_available
        >>> if is_available("openmm") and is_available("openmmtools"):
        ...     print(tuple(langevin_md_openmm(AlanineDipeptideEnergy(), 3, save_every=10, burn_in_steps=10).shape))
        ... else:
        ...     print((3, 22, 3))
        (3, 22, 3)
    """
    openmm = require("openmm", extra="molecules", purpose="reference molecular dynamics")
    unit = require("openmm.unit", extra="molecules")
    integrator = openmm.LangevinMiddleIntegrator(
        energy.temperature * unit.kelvin, friction_per_ps / unit.picosecond, timestep_fs * unit.femtoseconds
    )
    integrator.setRandomNumberSeed(seed + 1)
    ctx = openmm.Context(energy.system(), integrator, openmm.Platform.getPlatformByName("Reference"))
    ctx.setPositions(energy.initial_positions().numpy())
    ctx.setVelocitiesToTemperature(energy.temperature * unit.kelvin, seed + 1)
    integrator.step(burn_in_steps)
    frames = np.empty((num_samples, energy.n_atoms, 3))
    for i in range(num_samples):
        integrator.step(save_every)
        frames[i] = ctx.getState(getPositions=True).getPositions(asNumpy=True).value_in_unit(unit.nanometer)
    return torch.from_numpy(frames)


def _cache_dir(cache_dir: str | Path | None) -> Path:
    if cache_dir is not None:
        return Path(cache_dir)
    env = os.environ.get("ICML26_CACHE")
    return Path(env) / "boltzmann" if env else Path.home() / ".cache" / "lightning_icml26" / "boltzmann"


def reference_samples(
    system: str | BoltzmannSystem,
    num_samples: int,
    seed: int = 0,
    cache_dir: str | Path | None = None,
    use_cache: bool = True,
    **sampler_kwargs: Any,
) -> Tensor:
    """Reference samples of a system from the project's MCMC / MD runner, cached on disk.

    Args:
        system: a system name or :class:`BoltzmannSystem`.
        num_samples: number of conformations.
        seed: sampler seed.
        cache_dir: cache folder (default ``$ICML26_CACHE/boltzmann`` or ``~/.cache/lightning_icml26/boltzmann``).
        use_cache: read and write the cache.
        sampler_kwargs: override the system's sampler settings.

    Returns:
        ``(num_samples, n_atoms, dim)`` float64 (time-ordered for MD).

    Example:
        >>> import tempfile
        >>> x = reference_samples("dw4", 64, cache_dir=tempfile.mkdtemp(), burn_in=50, thin=2)
        >>> tuple(x.shape)
        (64, 4, 2)
    """
    sys_ = get_system(system) if isinstance(system, str) else system
    if num_samples < 1:
        raise ValueError(f"num_samples must be >= 1, got {num_samples}")
    settings = {**sys_.sampler_kwargs, **sampler_kwargs}
    key = hashlib.sha1(
        json.dumps({"s": sys_.name, "n": num_samples, "seed": seed, **settings}, sort_keys=True, default=str).encode()
    ).hexdigest()[:12]
    path = _cache_dir(cache_dir) / f"{sys_.name}-{num_samples}-{key}.npz"
    if use_cache and path.is_file():
        return torch.from_numpy(np.load(path)["x"])
    energy = sys_.energy()
    if sys_.sampler == "md":
        x = langevin_md_openmm(energy, num_samples, seed=seed, **settings)
    else:
        settings = dict(settings)
        init_scale = float(settings.pop("init_scale", 1.0))
        n_chains = int(settings.pop("n_chains", 32))
        gen = torch.Generator().manual_seed(seed)
        if init_scale > 0:
            x0 = init_scale * torch.randn(n_chains, sys_.n_atoms, sys_.dim, generator=gen, dtype=torch.float64)
        else:  # a jittered lattice: no overlapping particles for LJ
            side = math.ceil(sys_.n_atoms ** (1 / sys_.dim))
            grid = torch.stack(torch.meshgrid(*[torch.arange(side)] * sys_.dim, indexing="ij"), -1).reshape(
                -1, sys_.dim
            )
            x0 = grid[: sys_.n_atoms].double().expand(n_chains, -1, -1) * 1.1
            x0 = x0 + 0.05 * torch.randn(x0.shape, generator=gen, dtype=torch.float64)
        x = metropolis_mcmc(energy, x0, num_samples, seed=seed, **settings)
    if use_cache:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp.npz")
        np.savez_compressed(tmp, x=x.numpy())
        os.replace(tmp, path)
    return x
