"""Robust human-AI pooling against averaging, deferral and a tuned weight over error correlations and AI levels.

The decision maker knows its own error scale (sigma_H = 1) and sees a small calibration split; the deployed AI's
error scale is only known to lie in a range. For every error correlation ``rho`` and every (calibration AI level,
test AI level) pair, on the same generated data, each method picks its weight on the AI from the calibration split:

* ``robust w*``: :class:`~lightning_icml26.metrics.RobustPoolingWeight` with rho's upper 99 % Fisher-z bound;
* ``combiner``: :class:`~lightning_icml26.modules.HumanAICombiner` trained with ``Trainer.fit`` on the split;
* ``average`` (w = 0.5), ``defer`` (the member with the lower calibration loss), ``tuned`` (the weight minimising
  the calibration loss over [0, 1]).

The figure is the team's gain over the human alone on the test split, worst over the calibration AI level: the
exact population gain for Gaussian tasks (``pooling_gain``), the empirical Brier gain for binary tasks.
"""

from __future__ import annotations

import logging
import math
import warnings
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import torch
from lightning.pytorch import Trainer
from torch.utils.data import DataLoader, TensorDataset

from lightning_icml26.algorithms import pooling_gain
from lightning_icml26.data.forecasts import ForecastTable, make_forecasting_task
from lightning_icml26.metrics import RobustPoolingWeight
from lightning_icml26.modules import HumanAICombiner
from lightning_icml26.tasks._config import TaskConfig

__all__ = ["COMPLEMENTARITY_METHODS", "ComplementarityGridConfig", "calibration_weights", "complementarity_grid_task"]

COMPLEMENTARITY_METHODS = ("robust w*", "combiner", "average", "defer", "tuned")
_BASELINES = ("average", "defer", "tuned")


@dataclass(frozen=True)
class ComplementarityGridConfig(TaskConfig):
    """Settings of :func:`complementarity_grid_task` (defaults: the benchmark's full grid, five seeds).

    Example:
        >>> cfg = ComplementarityGridConfig(rhos=(-0.6,), levels=(0.5, 3.0), binary_levels=(), n_test=2000,
        ...                                 epochs=5, seeds=1)
        >>> out = cfg.run()
        >>> len(out["rows"]), len(out["summary"]), out["summary"][0]["worst robust w*"] > 0
        (2, 1, True)
    """

    rhos: tuple[float, ...] = (-0.6, -0.3, 0.0, 0.3, 0.6)
    levels: tuple[float, ...] = (0.5, 1.0, 2.0, 3.0)
    binary_levels: tuple[float, ...] = (0.5, 1.0, 3.0)
    n_cal: int = 300
    n_test: int = 100_000
    epochs: int = 60
    seeds: int = 5
    seed: int = 0

    def __post_init__(self) -> None:
        if self.seeds < 1:
            raise ValueError(f"seeds must be >= 1, got {self.seeds}")
        if len(self.levels) < 1 or any(not x > 0 for x in (*self.levels, *self.binary_levels)):
            raise ValueError(f"levels must be positive and not empty, got {self.levels} and {self.binary_levels}")
        for name in ("n_cal", "n_test", "epochs"):
            if getattr(self, name) < (4 if name == "n_cal" else 1):
                raise ValueError(f"{name} must be at least {4 if name == 'n_cal' else 1}, got {getattr(self, name)}")

    def run(self) -> dict[str, Any]:
        """Run :func:`complementarity_grid_task` with these settings."""
        return complementarity_grid_task(self)


def _errors(table: ForecastTable) -> tuple[np.ndarray, np.ndarray]:
    return (table.p_human - table.resolution).numpy(), (table.p_model - table.resolution).numpy()


def _fit_combiner(cal: ForecastTable, sigma_range: tuple[float, float], epochs: int) -> float:
    """The combiner's weight after ``epochs`` full-batch epochs of ``Trainer.fit`` on the calibration split."""
    data = TensorDataset(cal.p_human.float(), cal.p_model.float(), cal.resolution.float())
    model = HumanAICombiner(
        sigma_ai_range=sigma_range,
        rho_confidence=0.99,
        loss="brier" if cal.kind == "probability" else "squared",
        optimizer=lambda p: torch.optim.Adam(p, lr=0.1),
    )
    trainer = Trainer(max_epochs=epochs, logger=False, enable_checkpointing=False, enable_progress_bar=False,
                      enable_model_summary=False, num_sanity_val_steps=0)  # fmt: skip
    trainer.fit(model, train_dataloaders=DataLoader(data, batch_size=len(cal)))
    if model.guaranteed_gain_ < 0:
        raise RuntimeError("the combiner lost its guarantee")
    return float(model.weight().detach())


def calibration_weights(cal: ForecastTable, sigma_range: tuple[float, float], epochs: int) -> dict[str, float]:
    """Each method's weight on the AI, chosen from the calibration split ``cal`` only.

    Example:
        >>> cal = make_forecasting_task(300, 1.0, 1.0, -0.5, kind="gaussian", seed=0)
        >>> w = calibration_weights(cal, (0.5, 3.0), epochs=5)
        >>> w["average"], 0.0 <= w["robust w*"] <= 1.0
        (0.5, True)
    """
    probabilities = cal.kind == "probability"
    metric = RobustPoolingWeight(sigma_ai_range=sigma_range, probabilities=probabilities)
    metric.update(cal.p_human, cal.p_model, cal.resolution)
    rho = max(-0.999999, min(0.999999, float(metric.compute()["rho"])))  # its upper 99 % bound, as the combiner
    rho_hi = math.tanh(math.atanh(rho) + 2.5758 / math.sqrt(len(cal) - 3))
    robust = RobustPoolingWeight(sigma_ai_range=sigma_range, rho_range=(-1.0, rho_hi), probabilities=probabilities)
    robust.update(cal.p_human, cal.p_model, cal.resolution)
    e_h, e_a = _errors(cal)
    shh, saa, sha = np.mean(e_h**2), np.mean(e_a**2), np.mean(e_h * e_a)
    ws = np.linspace(0.0, 1.0, 100_001)
    cal_loss = (1 - ws) ** 2 * shh + ws**2 * saa + 2 * ws * (1 - ws) * sha  # exact calibration MSE / Brier
    return {
        "robust w*": float(robust.compute()["robust_weight"]),
        "combiner": _fit_combiner(cal, sigma_range, epochs),
        "average": 0.5,
        "defer": 1.0 if cal_loss[-1] < cal_loss[0] else 0.0,
        "tuned": float(ws[cal_loss.argmin()]),
    }


def _sigma_range(kind: Literal["gaussian", "binary"], levels: tuple[float, ...]) -> tuple[float, float]:
    """The AI's uncertainty set: the levels' range (Gaussian) or the AI's Brier RMSE at the extreme levels."""
    if kind == "gaussian":
        return min(levels), max(levels)
    rmse = []
    for level in (min(levels), max(levels)):  # large generated samples, rho-independent
        t = make_forecasting_task(200_000, 1.0, level, 0.0, kind="binary", seed=99)
        rmse.append(float(np.sqrt(np.mean(_errors(t)[1] ** 2))))
    return min(rmse), max(rmse)


def _test_row(cell: tuple[str, float], s_test: float, weights: dict[float, dict[str, float]], test: ForecastTable,
              worst: dict[str, list[float]]) -> dict[str, Any]:  # fmt: skip
    """Each method's worst gain over the calibration levels on one test split; appends to ``worst[method]``.

    ``cell`` is the task kind and the error correlation ``rho``.
    """
    kind, rho = cell
    e_h, e_a = _errors(test)
    loss_h = float(np.mean(e_h**2))
    row: dict[str, Any] = {"task": kind, "rho": rho, "AI level": s_test}
    for method in COMPLEMENTARITY_METHODS:
        emp = [loss_h - float(np.mean(((1 - w[method]) * e_h + w[method] * e_a) ** 2)) for w in weights.values()]
        gains = (
            [float(pooling_gain(w[method], 1.0, s_test, rho)) for w in weights.values()] if kind == "gaussian" else emp
        )
        worst[method] += gains
        row[method] = min(gains) + 0.0  # no "-0" in the table
        if kind == "gaussian":
            row[f"{method} (emp)"] = min(emp) + 0.0
    row["losers"] = ",".join(m for m in COMPLEMENTARITY_METHODS if row[m] < -1e-12) or "-"
    row["_loss_h"], row["_corr"] = loss_h, float(np.corrcoef(e_h, e_a)[0, 1])
    return row


def _summary(cell: tuple[str, float], sigma_range: tuple[float, float], rows: list[dict[str, Any]],
             all_gains: dict[str, list[float]], weights: dict[float, dict[str, float]]) -> dict[str, Any]:  # fmt: skip
    """The worst case of every method over the whole uncertainty set at one ``rho`` (``cell`` = kind, rho)."""
    kind, rho = cell
    worst = {m: min(r[m] for r in rows) for m in COMPLEMENTARITY_METHODS}
    worst_loss = {m: max(r["_loss_h"] - r[m] for r in rows) for m in COMPLEMENTARITY_METHODS}

    def loss_ratio(m: str) -> float:
        return float("nan") if worst_loss[m] == 0 else worst_loss["combiner"] / worst_loss[m]

    mean_w = [float(np.mean([w[m] for w in weights.values()])) for m in ("robust w*", "combiner")]
    return {
        "task": kind, "rho": rho, "sigma_A set": f"[{sigma_range[0]:.3g}, {sigma_range[1]:.3g}]",
        "max error corr": max(r["_corr"] for r in rows),
        **{f"worst {m}": worst[m] for m in COMPLEMENTARITY_METHODS},
        **{f"mean {m}": float(np.mean(all_gains[m])) for m in COMPLEMENTARITY_METHODS},
        "combiner never < 0": worst["combiner"] >= -1e-12,
        "combiner - best baseline": worst["combiner"] - max(worst[m] for m in _BASELINES),
        "worst-loss ratio combiner/tuned": loss_ratio("tuned"),
        "worst-loss ratio combiner/average": loss_ratio("average"),
        "mean w* / combiner w": "{:.3f} / {:.3f}".format(*mean_w),
    }  # fmt: skip


def _grid(
    config: ComplementarityGridConfig, kind: Literal["gaussian", "binary"], levels: tuple[float, ...], seed: int
) -> tuple[list, list]:
    """Rows per (rho, test AI level) and one summary per rho, for one task kind and one seed."""
    sigma_range = _sigma_range(kind, levels)
    rows, summary = [], []
    for rho in config.rhos:
        weights = {}
        for j, s_cal in enumerate(levels):
            cal = make_forecasting_task(config.n_cal, 1.0, s_cal, rho, kind=kind, seed=seed + 1000 * j + 7)
            weights[s_cal] = calibration_weights(cal, sigma_range, config.epochs)
        gains: dict[str, list[float]] = {m: [] for m in COMPLEMENTARITY_METHODS}
        mine = []
        for k, s_test in enumerate(levels):
            test = make_forecasting_task(config.n_test, 1.0, s_test, rho, kind=kind, seed=seed + 77 * k + 3)
            mine.append(_test_row((kind, rho), s_test, weights, test, gains))
        summary.append(_summary((kind, rho), sigma_range, mine, gains, weights))
        rows += [{k: v for k, v in r.items() if not k.startswith("_")} for r in mine]
    return rows, summary


def _spread(summary: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per task and rho: each method's worst-case gain as mean and standard deviation over the seeds."""
    out = []
    for task, rho in dict.fromkeys((row["task"], row["rho"]) for row in summary):
        mine = [row for row in summary if row["task"] == task and row["rho"] == rho]
        entry: dict[str, Any] = {"task": task, "rho": rho, "seeds": len(mine)}
        for method in COMPLEMENTARITY_METHODS:
            values = np.array([row[f"worst {method}"] for row in mine])
            entry[f"{method} mean"] = float(values.mean())
            entry[f"{method} sd"] = float(values.std(ddof=1)) if len(values) > 1 else 0.0
        out.append(entry)
    return out


def complementarity_grid_task(config: ComplementarityGridConfig) -> dict[str, Any]:
    """Every method over the grid and seeds (seed ``s`` draws with ``config.seed + 10000 s``).

    Returns:
        ``rows`` (per seed, task, rho and test AI level: each method's worst gain over the calibration level),
        ``summary`` (per seed, task and rho: worst and mean gains over the whole uncertainty set, the measured
        error correlation, the combiner's margin over the best baseline) and ``spread`` (mean and sd over seeds).
    """
    logging.getLogger("lightning.pytorch").setLevel(logging.ERROR)
    rows, summary = [], []
    grids: list[tuple[Literal["gaussian", "binary"], tuple[float, ...]]] = [("gaussian", config.levels)]
    if config.binary_levels:
        grids.append(("binary", config.binary_levels))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for k in range(config.seeds):
            seed = config.seed + 10_000 * k  # far apart: no split of one seed reuses another seed's draws
            for kind, levels in grids:
                kind_rows, kind_summary = _grid(config, kind, levels, seed)
                rows += [{"seed": seed, **row} for row in kind_rows]
                summary += [{"seed": seed, **row} for row in kind_summary]
    return {"rows": rows, "summary": summary, "spread": _spread(summary)}
