"""Robust human-AI pooling against naive averaging, deferral and a tuned weight, over error correlations and
AI quality levels (docs/complementarity.md; the formalisation is this project's reconstruction).

Setting (asymmetric information): the decision maker knows its own error scale (sigma_H = 1) and sees a small
calibration split, but the deployed AI's error scale is only known to lie in [0.5, 3.0]; the AI seen on the
calibration split may be any AI of that set (sigma_cal), and so may the deployed one (sigma_test). For every
error correlation rho and every (sigma_cal, sigma_test) pair, in one process on the same generated data:

* ``robust w*``: :class:`RobustPoolingWeight` on the calibration split (sigma_H and rho estimated, rho's
  upper 99% Fisher-z bound, sigma_A in [0.5, 3]); closed-form weight, no training;
* ``combiner``: :class:`HumanAICombiner` (Lightning ``Trainer.fit`` on the calibration split): minimises the
  calibration loss inside the robust safe set ``[0, cap]``;
* ``average``: w = 0.5;
* ``defer``: all weight on the member with the lower calibration loss (w in {0, 1});
* ``tuned``: the weight minimising the calibration loss over [0, 1] (the unconstrained learned weight).

Reported: the team's gain over the human alone on the test split (``L_H - L_team``; > 0 is better than the
human). For Gaussian tasks the gain is the exact population value (closed form with the true sigma_A, rho);
the empirical test gain on ``n_test`` items is reported beside it. The worst case per row is over
sigma_cal; the summary's worst case (and mean) is over sigma_cal and sigma_test. For binary tasks
(probability forecasts, Brier score) the AI levels are latent-logit noise scales and the uncertainty set is
the range of the AI's Brier RMSE over those levels; gains are empirical.

Seeds (``--seeds``; seed s uses ``--seed + 10000 s``): each seed draws new calibration and test splits; the
targets take the worst case over every seed, and the spread table gives each method's worst-case gain per rho
as mean and standard deviation over seeds.

Targets (the same names at ``--quick`` and full size):

* ``robust_worst_gain_min >= 0`` (this project's safety target): the robust weight and the combiner never do
  worse than the human alone, over every rho, AI level and seed;
* ``negative_rho_robust_gain_min > 0`` (the paper's claim in miniature: with negatively correlated errors robust
  strategies guarantee an improvement): their worst-case gain over the whole uncertainty set is strictly positive
  in every summary row whose measured error correlation (Pearson, test residuals) is negative at every AI level.
  The generator's ``rho`` is the error correlation for Gaussian tasks; for binary tasks it correlates latent
  logit noise, and the outcome's shared Bernoulli noise makes the Brier residuals positively correlated
  (about 0.6 to 0.95 on this grid), so binary rows never qualify;
* ``robust_minus_best_baseline_min >= 0`` (ours): the combiner's worst-case gain is at least that of the best of
  averaging, deferral and the tuned weight, at every rho and seed.
"""

from __future__ import annotations

import argparse
import math
import time
from typing import Any, Literal

import numpy as np
import torch

from benchmarks._common import benchmark_parser, markdown_table, print_targets, ratio, target, worst, write_json
from lightning_icml26.algorithms import pooling_gain
from lightning_icml26.data.forecasts import ForecastTable, make_forecasting_task
from lightning_icml26.metrics import RobustPoolingWeight

METHODS = ("robust w*", "combiner", "average", "defer", "tuned")


def _errors(table: ForecastTable) -> tuple[np.ndarray, np.ndarray]:
    return (table.p_human - table.resolution).numpy(), (table.p_model - table.resolution).numpy()


def _fit_combiner(cal: ForecastTable, sigma_range: tuple[float, float], epochs: int, probabilities: bool) -> float:
    from lightning.pytorch import Trainer
    from torch.utils.data import DataLoader, TensorDataset

    from lightning_icml26.modules import HumanAICombiner

    data = TensorDataset(cal.p_human.float(), cal.p_model.float(), cal.resolution.float())
    loader = DataLoader(data, batch_size=len(cal))
    model = HumanAICombiner(
        sigma_ai_range=sigma_range,
        rho_confidence=0.99,
        loss="brier" if probabilities else "squared",
        optimizer=lambda p: torch.optim.Adam(p, lr=0.1),
    )
    trainer = Trainer(
        max_epochs=epochs,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        num_sanity_val_steps=0,
    )
    trainer.fit(model, train_dataloaders=loader)
    if model.guaranteed_gain_ < 0:
        raise RuntimeError("combiner lost its guarantee")
    return float(model.weight().detach())


def calibration_weights(cal: ForecastTable, sigma_range: tuple[float, float], epochs: int) -> dict[str, float]:
    """Each method's weight on the AI, chosen from the calibration split only."""
    probabilities = cal.kind == "probability"
    metric = RobustPoolingWeight(sigma_ai_range=sigma_range, probabilities=probabilities)
    metric.update(cal.p_human, cal.p_model, cal.resolution)
    stats = metric.compute()
    # the metric's point estimate of rho -> replace by its upper 99% bound, as the combiner does
    n = len(cal)
    rho_hi = math.tanh(math.atanh(max(-0.999999, min(0.999999, float(stats["rho"])))) + 2.5758 / math.sqrt(n - 3))
    robust = RobustPoolingWeight(sigma_ai_range=sigma_range, rho_range=(-1.0, rho_hi), probabilities=probabilities)
    robust.update(cal.p_human, cal.p_model, cal.resolution)
    e_h, e_a = _errors(cal)
    shh, saa, sha = np.mean(e_h**2), np.mean(e_a**2), np.mean(e_h * e_a)
    ws = np.linspace(0.0, 1.0, 100_001)
    cal_loss = (1 - ws) ** 2 * shh + ws**2 * saa + 2 * ws * (1 - ws) * sha  # exact calibration MSE / Brier
    tuned = float(ws[cal_loss.argmin()])
    return {
        "robust w*": float(robust.compute()["robust_weight"]),
        "combiner": _fit_combiner(cal, sigma_range, epochs, probabilities),
        "average": 0.5,
        "defer": 1.0 if cal_loss[-1] < cal_loss[0] else 0.0,
        "tuned": tuned,
    }


def run_grid(
    kind: Literal["gaussian", "binary"], rhos: list[float], levels: list[float], args: argparse.Namespace
) -> tuple[list[dict], list[dict]]:
    """Rows per (rho, sigma_test) with each method's worst gain over sigma_cal, and a summary per rho."""
    if kind == "gaussian":
        sigma_range = (min(levels), max(levels))
    else:  # Brier RMSE of the AI at the extreme latent levels (large generated samples, rho-independent)
        rmse = []
        for level in (min(levels), max(levels)):
            t = make_forecasting_task(200_000, 1.0, level, 0.0, kind="binary", seed=99)
            rmse.append(float(np.sqrt(np.mean(_errors(t)[1] ** 2))))
        sigma_range = (min(rmse), max(rmse))
    rows, summary = [], []
    for rho in rhos:
        weights = {}
        for j, s_cal in enumerate(levels):
            cal = make_forecasting_task(args.n_cal, 1.0, s_cal, rho, kind=kind, seed=args.seed + 1000 * j + 7)
            weights[s_cal] = calibration_weights(cal, sigma_range, args.epochs)
        per_method_worst = dict.fromkeys(METHODS, math.inf)
        per_method_worst_loss = dict.fromkeys(METHODS, -math.inf)
        per_method_all: dict[str, list[float]] = {m: [] for m in METHODS}
        error_corr: list[float] = []
        for k, s_test in enumerate(levels):
            test = make_forecasting_task(args.n_test, 1.0, s_test, rho, kind=kind, seed=args.seed + 77 * k + 3)
            e_h, e_a = _errors(test)
            loss_h = float(np.mean(e_h**2))
            error_corr.append(float(np.corrcoef(e_h, e_a)[0, 1]))
            row: dict = {"task": kind, "rho": rho, "AI level": s_test}
            for method in METHODS:
                gains, emp = [], []
                for s_cal in levels:
                    w = weights[s_cal][method]
                    empirical = loss_h - float(np.mean(((1 - w) * e_h + w * e_a) ** 2))
                    emp.append(empirical)
                    if kind == "gaussian":
                        gains.append(float(pooling_gain(w, 1.0, s_test, rho)))
                    else:
                        gains.append(empirical)
                worst = min(gains) + 0.0  # no "-0" in the table
                per_method_all[method] += gains
                per_method_worst[method] = min(per_method_worst[method], worst)
                per_method_worst_loss[method] = max(per_method_worst_loss[method], loss_h - worst)
                row[method] = worst
                if kind == "gaussian":
                    row[f"{method} (emp)"] = min(emp) + 0.0
            row["losers"] = ",".join(m for m in METHODS if row[m] < -1e-12) or "-"
            rows.append(row)
        best_baseline = max(per_method_worst[m] for m in ("average", "defer", "tuned"))
        summary.append(
            {
                "task": kind,
                "rho": rho,
                "sigma_A set": f"[{sigma_range[0]:.3g}, {sigma_range[1]:.3g}]",
                "max error corr": max(error_corr),
                **{f"worst {m}": per_method_worst[m] for m in METHODS},
                **{f"mean {m}": float(np.mean(per_method_all[m])) for m in METHODS},
                "combiner never < 0": per_method_worst["combiner"] >= -1e-12,
                "combiner - best baseline": per_method_worst["combiner"] - best_baseline,
                "worst-loss ratio combiner/tuned": ratio(
                    per_method_worst_loss["combiner"], per_method_worst_loss["tuned"]
                ),
                "worst-loss ratio combiner/average": ratio(
                    per_method_worst_loss["combiner"], per_method_worst_loss["average"]
                ),
                "mean w* / combiner w": "{:.3f} / {:.3f}".format(
                    float(np.mean([weights[s]["robust w*"] for s in levels])),
                    float(np.mean([weights[s]["combiner"] for s in levels])),
                ),
            }
        )
        print(markdown_table([summary[-1]]).splitlines()[-1], flush=True)
    return rows, summary


def build_targets(summary: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Targets over the summary rows (one per task, rho and seed); see the module docstring.

    ``robust_worst_gain_min``: the robust methods' smallest worst-case gain (>= 0 up to rounding);
    ``negative_rho_robust_gain_min``: the same over the rows whose measured error correlation is negative at
    every AI level (``"max error corr" < 0``; > 0: a guaranteed improvement; ``nan`` when no row qualifies);
    ``robust_minus_best_baseline_min``: the smallest ``combiner - best baseline`` worst-case difference.
    """
    lows = [min(row["worst combiner"], row["worst robust w*"]) for row in summary]
    negative = [min(row["worst combiner"], row["worst robust w*"]) for row in summary if row["max error corr"] < 0]
    margin = [row["combiner - best baseline"] for row in summary]
    return {
        "robust_worst_gain_min": target(worst(lows, "min"), ">=", -1e-12),
        "negative_rho_robust_gain_min": target(worst(negative, "min"), ">", 0.0),
        "robust_minus_best_baseline_min": target(worst(margin, "min"), ">=", -1e-12),
    }


def spread(summary: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per task and rho: each method's worst-case gain as mean and standard deviation over the seeds."""
    out = []
    for task, rho in dict.fromkeys((row["task"], row["rho"]) for row in summary):
        mine = [row for row in summary if row["task"] == task and row["rho"] == rho]
        entry: dict[str, Any] = {"task": task, "rho": rho, "seeds": len(mine)}
        for method in METHODS:
            values = np.array([row[f"worst {method}"] for row in mine])
            entry[f"{method} mean"] = float(values.mean())
            entry[f"{method} sd"] = float(values.std(ddof=1)) if len(values) > 1 else 0.0
        out.append(entry)
    return out


def main() -> None:
    parser = benchmark_parser(__doc__.splitlines()[0])
    parser.add_argument("--n-cal", type=int, default=300, help="calibration items")
    parser.add_argument("--n-test", type=int, default=100_000, help="test items")
    parser.add_argument("--epochs", type=int, default=60, help="full-batch epochs of the combiner")
    parser.add_argument("--no-binary", action="store_true", help="skip the binary (Brier) grid")
    parser.add_argument("--seeds", type=int, default=5, help="calibration and test draws (seed, seed + 1, ...)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    import logging

    logging.getLogger("lightning.pytorch").setLevel(logging.ERROR)
    import warnings

    warnings.filterwarnings("ignore")
    start = time.perf_counter()
    if args.quick:
        rhos, levels, blevels = [-0.6, 0.0, 0.6], [0.5, 1.0, 3.0], [0.5, 3.0]
        args.n_test, args.epochs = 20_000, 30
        args.no_binary, args.seeds = True, 2
    else:
        rhos, levels, blevels = [-0.6, -0.3, 0.0, 0.3, 0.6], [0.5, 1.0, 2.0, 3.0], [0.5, 1.0, 3.0]
    if args.seeds < 1:
        raise SystemExit(f"--seeds must be >= 1, got {args.seeds}")
    rows, summary = [], []
    base_seed = args.seed
    for k in range(args.seeds):
        args.seed = base_seed + 10_000 * k  # far apart: no split of one seed reuses another seed's draws
        grids: list[tuple[Literal["gaussian", "binary"], list[float]]] = [("gaussian", levels)]
        if not args.no_binary:
            grids.append(("binary", blevels))
        for kind, grid_levels in grids:
            kind_rows, kind_summary = run_grid(kind, rhos, grid_levels, args)
            rows += [{"seed": args.seed, **row} for row in kind_rows]
            summary += [{"seed": args.seed, **row} for row in kind_summary]
    args.seed = base_seed
    print("\nPer AI level (gain over the human alone, worst over the AI seen at calibration; 'losers' < 0):\n")
    print(markdown_table([row for row in rows if row["seed"] == base_seed]))
    print(f"\n(seed {base_seed} shown; every seed is in the JSON)\n\nWorst case over the whole uncertainty set:\n")
    print(markdown_table(summary))
    spreads = spread(summary)
    print(f"\nWorst-case gain over the uncertainty set, mean and sd over {args.seeds} seed(s):\n")
    print(markdown_table(spreads))
    ok = all(s["combiner never < 0"] for s in summary) and all(s["worst robust w*"] >= -1e-12 for s in summary)
    print(f"\nrobust methods never below the human: {ok}; {time.perf_counter() - start:.0f} s")
    targets = build_targets(summary)
    print_targets(targets)
    figures = {"rows": rows, "summary": summary, "spread": spreads, "robust_never_negative": ok, "targets": targets}
    write_json(args.json, "complementarity", figures, args)


if __name__ == "__main__":
    main()
