"""Sample, reweight and score a Boltzmann generator during validation (ESS, E-W2, T-W2, TICA-W2, PNG plots)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import lightning.pytorch as pl
import torch
from lightning.pytorch.callbacks import Callback
from torch import Tensor
from typing_extensions import override

from lightning_icml26._checks import check_sampling_args
from lightning_icml26._optional import require_pyplot
from lightning_icml26._requirements import Requirement, declare_requirements
from lightning_icml26.algorithms.boltzmann_reweighting import BoltzmannReweighter, ChiralityFix
from lightning_icml26.metrics.functional.boltzmann import energy_w2, tica_w2, torus_w2

__all__ = ["BoltzmannEvalCallback", "plot_boltzmann"]


def plot_boltzmann(
    path: str | Path,
    reference_energies: Tensor,
    generated_energies: Tensor,
    reweighted_energies: Tensor | None = None,
    reference_angles: Tensor | None = None,
    generated_angles: Tensor | None = None,
    title: str = "",
) -> Path:
    """Write an energy histogram (and a Ramachandran plot when angles are given) as one PNG.

    Example:
        >>> import tempfile, os
        >>> p = plot_boltzmann(os.path.join(tempfile.mkdtemp(), "e.png"), torch.randn(50), torch.randn(50))
        >>> p.is_file()
        True
    """
    plt = require_pyplot()

    panels = 2 if reference_angles is not None and generated_angles is not None else 1
    fig, axes = plt.subplots(
        1, panels + (1 if panels == 2 else 0), figsize=(5 * (panels + (panels == 2)), 4), squeeze=False
    )
    ax = axes[0, 0]
    ref = reference_energies.double()
    lo, hi = float(ref.min()), float(ref.max())
    width = hi - lo
    bins = torch.linspace(lo - 0.5 * width, hi + 0.5 * width, 60).numpy()
    ax.hist(ref.numpy(), bins=bins, density=True, alpha=0.5, label="reference")
    ax.hist(
        generated_energies.double().clamp(bins[0], bins[-1]).numpy(),
        bins=bins,
        density=True,
        histtype="step",
        label="generated",
    )
    if reweighted_energies is not None:
        ax.hist(
            reweighted_energies.double().clamp(bins[0], bins[-1]).numpy(),
            bins=bins,
            density=True,
            histtype="step",
            label="reweighted",
        )
    ax.set_xlabel("reduced energy (kT)")
    ax.legend()
    ax.set_title(title or "energies")
    if panels == 2 and reference_angles is not None and generated_angles is not None:
        for axis, angles, name in (
            (axes[0, 1], reference_angles, "reference"),
            (axes[0, 2], generated_angles, "generated"),
        ):
            axis.hist2d(angles[:, 0].numpy(), angles[:, 1].numpy(), bins=60, range=[[-math.pi, math.pi]] * 2, cmin=1)
            axis.set_xlabel("phi")
            axis.set_ylabel("psi")
            axis.set_title(f"Ramachandran: {name}")
    fig.tight_layout()
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=80)
    plt.close(fig)
    return out


@declare_requirements([Requirement("matplotlib", "plots", "the evaluation figures")])
class BoltzmannEvalCallback(Callback):
    """At the end of validation (and of testing): sample from the model, reweight towards ``exp(-E)``, log the metrics.

    Needs a module with ``sample_with_log_prob(n, temperature=..., top_k=..., top_p=...)`` and ``com_std``
    (:class:`~lightning_icml26.modules.arbg.ArBG`, :class:`~lightning_icml26.modules.arbg.FlowBG`) and a data
    module with ``system`` and ``reference("val")`` (:class:`~lightning_icml26.data.BoltzmannDataModule`). Logs
    ``eval/ess`` (Kish ESS / N), ``eval/energy_w2`` (on the SNIS resample), ``eval/energy_w2_raw`` (before
    reweighting), ``eval/nll`` (the model's negative log density of the centred validation conformations, nats
    per coordinate, at temperature 1) and, for peptides, ``eval/torus_w2`` and ``eval/tica_w2``; writes
    ``boltzmann_epoch{N}.png`` on rank zero. Sampling runs on every rank with the same seed (identical results), so
    logged values agree.

    With ``temperatures``, each evaluation samples at every candidate temperature, logs the figures of the one with
    the lowest validation E-W2 and that temperature as ``eval/temperature``. At the end of testing
    (``trainer.test``, or ``test_after_fit`` in a recipe) the callback samples ``test_num_samples`` fresh
    conformations at the chosen temperature and logs the same figures against the *test* conformations under
    ``test/`` (``test/ess``, ``test/energy_w2``, ``test/nll``, ``test/temperature``, ...): the temperature is
    chosen on validation frames only.

    Args:
        num_samples: samples per evaluation.
        every_n_epochs: evaluate every this many validation epochs.
        temperature: sampling temperature (> 0).
        top_k: sampling top-k.
        top_p: sampling top-p.
        clip_quantile: log-weight clipping fraction.
        on_nonfinite: ``"drop"`` (default here: an untrained model may produce overlapping atoms) or ``"raise"``.
        max_ot_samples: cap on each set for the exact OT metrics.
        dirpath: folder for the PNGs (default: the trainer's ``default_root_dir``).
        plot: write PNGs.
        seed: sampling seed.
        temperatures: candidate sampling temperatures chosen on validation (``None``: ``[temperature]``).
        test_num_samples: samples of the test evaluation (``None``: ``num_samples``).

    Example:
        >>> cb = BoltzmannEvalCallback(num_samples=100, temperatures=[0.9, 1.0])
        >>> cb.state_dict()["evaluations"], cb.chosen_temperature
        (0, None)
    """

    def __init__(
        self,
        num_samples: int = 1000,
        every_n_epochs: int = 1,
        temperature: float = 1.0,
        top_k: int | None = None,
        top_p: float | None = None,
        clip_quantile: float = 0.002,
        on_nonfinite: str = "drop",
        max_ot_samples: int = 2000,
        dirpath: str | None = None,
        plot: bool = True,
        seed: int = 0,
        temperatures: Sequence[float] | None = None,
        test_num_samples: int | None = None,
    ) -> None:
        if num_samples < 1:
            raise ValueError(f"num_samples must be >= 1, got {num_samples}")
        if test_num_samples is not None and test_num_samples < 1:
            raise ValueError(f"test_num_samples must be >= 1 or None, got {test_num_samples}")
        if temperatures is not None and len(temperatures) == 0:
            raise ValueError("temperatures must hold at least one temperature or be None, got an empty list")
        for t in temperatures or ():
            check_sampling_args(float(t), top_k, top_p)
        if every_n_epochs < 1:
            raise ValueError(f"every_n_epochs must be >= 1, got {every_n_epochs}")
        check_sampling_args(temperature, top_k, top_p)
        self.num_samples, self.every_n_epochs = num_samples, every_n_epochs
        self.temperature, self.top_k, self.top_p = temperature, top_k, top_p
        self.clip_quantile, self.on_nonfinite, self.max_ot_samples = clip_quantile, on_nonfinite, max_ot_samples
        self.dirpath, self.plot, self.seed = dirpath, plot, seed
        self.temperatures = [float(t) for t in temperatures] if temperatures is not None else [temperature]
        self.test_num_samples = test_num_samples or num_samples
        self.evaluations = 0
        self.last: dict[str, float] = {}
        self.chosen_temperature: float | None = None

    def evaluate(
        self,
        model: Any,
        system: Any,
        reference: Tensor,
        temperature: float | None = None,
        num_samples: int | None = None,
        seed: int | None = None,
    ) -> tuple[dict[str, float], dict[str, Any]]:
        """Sample, reweight and compute the metrics; returns ``(figures, arrays for plotting)``.

        ``temperature``, ``num_samples`` and ``seed`` default to the callback's own (``seed + evaluations``).
        """
        torch.manual_seed(self.seed + self.evaluations if seed is None else seed)
        kwargs: dict[str, Any] = {"temperature": self.temperature if temperature is None else temperature}
        if self.top_k is not None or self.top_p is not None:
            kwargs.update(top_k=self.top_k, top_p=self.top_p)
        x, log_q = model.sample_with_log_prob(num_samples or self.num_samples, **kwargs)
        chirality = ChiralityFix.from_reference(reference, system.chiral_centres) if system.chiral_centres else None
        com = getattr(model, "com_std", 0.0) or None
        rw = BoltzmannReweighter(system.energy(), self.clip_quantile, chirality, com, self.on_nonfinite)
        res = rw.reweight(x, log_q, num_resample=0, generator=torch.Generator().manual_seed(self.seed))
        ref_e = rw.energies(reference)
        finite = torch.isfinite(res.energies)
        assert res.resampled is not None
        assert res.resampled_energies is not None
        cap = self.max_ot_samples
        figs = {
            "ess": res.ess,
            "energy_w2": float(energy_w2(res.resampled_energies, ref_e)),
            "energy_w2_raw": float(energy_w2(res.energies[finite], ref_e)) if bool(finite.any()) else float("inf"),
            "fraction_nonfinite": float((~finite).double().mean()),
        }
        arrays: dict[str, Any] = {"ref_e": ref_e, "gen_e": res.energies[finite], "rw_e": res.resampled_energies}
        if system.dihedrals:
            ref_t, gen_t = system.torus(reference), system.torus(res.resampled)
            figs["torus_w2"] = float(torus_w2(gen_t[:cap], ref_t[:cap]))
            figs["tica_w2"] = float(
                tica_w2(system.tica_features(res.resampled)[:cap], system.tica_features(reference)[:cap], lagtime=1)
            )
            arrays.update(ref_t=ref_t, gen_t=system.torus(res.samples))
        return figs, arrays

    @staticmethod
    def nll(model: Any, reference: Tensor) -> float:
        """Mean negative log density of the centred ``reference`` under ``model``, nats per coordinate.

        A model that drops conformations outside its support in training (``ArBG(out_of_range="drop")``) is
        scored on the conformations inside it.

        Example:
            >>> from lightning_icml26.modules.arbg import FlowBG
            >>> flow = FlowBG(n_atoms=2, dim=1, scale=1.0, transforms=1, hidden_features=(8,))
            >>> x = torch.randn(16, 2, 1, dtype=torch.float64)
            >>> c = x - x.mean(1, keepdim=True)
            >>> value = BoltzmannEvalCallback.nll(flow, x)
            >>> abs(value + float(flow.log_prob(c).mean()) / 2) < 1e-9
            True
        """
        centred = reference.double() - reference.double().mean(1, keepdim=True)
        if getattr(model, "out_of_range", "raise") == "drop":
            centred = centred[model.in_range(centred)]
        if centred.shape[0] == 0:
            return float("nan")
        return float(-model.log_prob(centred).mean()) / (centred.shape[1] * centred.shape[2])

    def _best(self, model: Any, system: Any, reference: Tensor) -> tuple[dict[str, float], dict[str, Any]]:
        """The figures at the candidate temperature with the lowest E-W2 on ``reference`` (``temperature`` key)."""
        scored = []
        for t in self.temperatures:
            figs, arrays = self.evaluate(model, system, reference, temperature=t)
            scored.append(({**figs, "temperature": t}, arrays))
        self.chosen_temperature = min(scored, key=lambda s: (math.isnan(s[0]["energy_w2"]), s[0]["energy_w2"]))[0][
            "temperature"
        ]
        return next(s for s in scored if s[0]["temperature"] == self.chosen_temperature)

    @override
    def on_validation_epoch_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        if trainer.sanity_checking or (trainer.current_epoch + 1) % self.every_n_epochs:
            return
        dm = trainer.datamodule  # type: ignore[attr-defined]
        if dm is None or not hasattr(dm, "system") or not hasattr(dm, "reference"):
            raise ValueError(
                "BoltzmannEvalCallback needs a data module with `system` and `reference()` "
                "(lightning_icml26.data.BoltzmannDataModule)"
            )
        figs, arrays = self._best(pl_module, dm.system, dm.reference("val"))
        figs["nll"] = self.nll(pl_module, dm.reference("val"))
        self.evaluations += 1
        self.last = figs
        for key, value in figs.items():
            pl_module.log(f"eval/{key}", value, sync_dist=False)
        if self.plot and trainer.is_global_zero:
            folder = Path(self.dirpath or trainer.default_root_dir)
            plot_boltzmann(
                folder / f"boltzmann_epoch{trainer.current_epoch}.png",
                arrays["ref_e"],
                arrays["gen_e"],
                arrays["rw_e"],
                arrays.get("ref_t"),
                arrays.get("gen_t"),
                title=f"{dm.system.name}: E-W2 {figs['energy_w2']:.3g}, ESS {figs['ess']:.3g}",
            )

    @override
    def on_test_epoch_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        dm = trainer.datamodule  # type: ignore[attr-defined]
        if dm is None or not hasattr(dm, "system") or not hasattr(dm, "reference"):
            raise ValueError(
                "BoltzmannEvalCallback needs a data module with `system` and `reference()` "
                "(lightning_icml26.data.BoltzmannDataModule)"
            )
        if self.chosen_temperature is None:  # no validation evaluation yet: choose on the validation frames now
            self._best(pl_module, dm.system, dm.reference("val"))
        assert self.chosen_temperature is not None
        test = dm.reference("test")
        seed = self.seed + 10_007  # fresh samples, not those of any validation evaluation
        figs, _ = self.evaluate(pl_module, dm.system, test, self.chosen_temperature, self.test_num_samples, seed)
        figs.update(temperature=self.chosen_temperature, nll=self.nll(pl_module, test))
        for key, value in figs.items():
            pl_module.log(f"test/{key}", value, sync_dist=False)

    @override
    def state_dict(self) -> dict[str, Any]:
        return {"evaluations": self.evaluations, "last": dict(self.last), "temperature": self.chosen_temperature}

    @override
    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.evaluations = int(state_dict.get("evaluations", 0))
        self.last = dict(state_dict.get("last", {}))
        chosen = state_dict.get("temperature")
        self.chosen_temperature = None if chosen is None else float(chosen)
