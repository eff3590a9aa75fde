"""Fair classification frontier on Adult and COMPAS: the project's attribute-blind methods against fairlearn.

Per data set, seed and tolerance alpha (largest pairwise demographic-parity gap), the task runner
:func:`~lightning_icml26.tasks.fair_frontier_task` fits on one 50/25/25 split (train / calibration / test) an
``unconstrained`` MLP, ``ours-post`` (LP post-processing, attribute-blind), ``ours-EG`` (the EG reduction) and
``ours-cb`` (the reduction as ``Trainer`` + ``FairReductionCallback``). On the same split (``fair_splits``):
``fl-EG`` (fairlearn ``ExponentiatedGradient(LogisticRegression, DemographicParity(alpha/2))``, one-vs-rest for
COMPAS) and ``fl-TO`` (``ThresholdOptimizer``, which NEEDS the group at prediction time). Accuracy and gap on the
test split; ``fl-best`` is the more accurate fairlearn method within alpha on test (in the baseline's favour).
Targets (ours; the paper reports no numbers), seed means over data sets and alpha > 0: ``accuracy_over_fairlearn_min
>= 1`` (ours / fl-best), ``gap_excess_max <= 0`` (test gap - alpha).
"""

from __future__ import annotations

import dataclasses
import math
import tempfile
from typing import Any

import numpy as np
import torch

from benchmarks._common import benchmark_parser, markdown_table, print_targets, ratio, target, worst, write_json
from lightning_icml26.algorithms.fairness import expected_gap, one_hot
from lightning_icml26.optional import require
from lightning_icml26.tasks import FairFrontierConfig, fair_frontier_task, fair_splits

OURS = {"ours_post": "postprocess", "ours_eg": "reduction", "ours_callback": "reduction_callback"}
RATIO_KEYS = ("post/fl-best", "ourEG/fl-best", "cb/fl-best")
DATASETS = {"adult": ("adult(sex)", {"groups": "sex"}), "compas": ("compas(score_text,race3)", {})}


def _ovr(scores: list[np.ndarray], k: int) -> np.ndarray:
    """One-vs-rest: binary positive probabilities -> distribution (binary) or argmax one-hot (multi-class)."""
    return np.stack([1 - scores[0], scores[0]], 1) if k == 2 else one_hot(np.stack(scores, 1).argmax(1), k)


def fairlearn_baselines(config: FairFrontierConfig) -> dict[str, list[float]]:
    """``{"fairlearn_to": [acc, gap], "fairlearn_eg@<alpha>": [acc, gap], ...}`` on the task's own split."""
    modules = ("fairlearn.reductions", "fairlearn.postprocessing", "sklearn.linear_model")
    reductions, postprocessing, linear = (require(m, "tabular", "the fairlearn baseline") for m in modules)
    train, cal, test = fair_splits(config)
    k, g, (y_te, a_te), x_te = train.num_classes, train.num_groups, (test.y.numpy(), test.a.numpy()), test.x.double()
    x_fit, y_fit, a_fit = (torch.cat([getattr(train, n), getattr(cal, n)]).numpy() for n in ("x", "y", "a"))

    def score(dist: np.ndarray) -> list[float]:
        return [float(dist[np.arange(len(y_te)), y_te].mean()), expected_gap(dist, y_te, a_te, g, "dp")]

    classes, to_scores = ([1] if k == 2 else list(range(k))), []
    for c in classes:
        lr = linear.LogisticRegression(max_iter=1000).fit(train.x.double().numpy(), (train.y.numpy() == c).astype(int))
        to = postprocessing.ThresholdOptimizer(estimator=lr, constraints="demographic_parity", prefit=True,
                                               predict_method="predict_proba")  # fmt: skip
        to.fit(cal.x.double().numpy(), (cal.y.numpy() == c).astype(int), sensitive_features=cal.a.numpy())
        to_scores.append(to._pmf_predict(x_te.numpy(), sensitive_features=a_te)[:, 1])
    out = {"fairlearn_to": score(_ovr(to_scores, k))}
    iters = config.reduction_iter
    for alpha in config.alphas:
        eg_scores = []
        for c in classes:
            bound = reductions.DemographicParity(difference_bound=alpha / 2)
            eg = reductions.ExponentiatedGradient(linear.LogisticRegression(max_iter=1000), bound, max_iter=iters)
            eg.fit(x_fit.astype(np.float64), (y_fit == c).astype(int), sensitive_features=a_fit)
            eg_scores.append(eg._pmf_predict(x_te.numpy())[:, 1])
        out[f"fairlearn_eg@{alpha:g}"] = score(_ovr(eg_scores, k))
    return out


def run_cell(name: str, config: FairFrontierConfig) -> list[dict[str, Any]]:
    """One data set and seed: our three methods through the task runner, fairlearn on the same split."""
    with tempfile.TemporaryDirectory() as out:
        summary = fair_frontier_task(dataclasses.replace(config, out_dir=out))
    fl = fairlearn_baselines(config)
    rows = []
    for alpha in config.alphas:
        figs = {"unconstrained": [summary["unconstrained/accuracy"], summary["unconstrained/gap"]]}
        figs |= {m: [summary[f"{key}/alpha={alpha:g}/{f}"] for f in ("accuracy", "gap")] for m, key in OURS.items()}
        figs |= {"fairlearn_eg": fl[f"fairlearn_eg@{alpha:g}"], "fairlearn_to": fl["fairlearn_to"]}
        best = max([a for a, gp in (figs["fairlearn_eg"], figs["fairlearn_to"]) if gp <= alpha + 1e-9] or [math.nan])
        row: dict[str, Any] = {"data": name, "seed": config.seed, "alpha": alpha}
        row |= {m: f"{a:.3f}/{gp:.3f}" for m, (a, gp) in figs.items()}
        row |= {key: ratio(figs[m][0], best) for key, m in zip(RATIO_KEYS, OURS, strict=True)}
        rows.append({**row, "_figures": figs})
        print(markdown_table([row]).splitlines()[-1], flush=True)
    return rows


def seed_means(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per data set and alpha: each method's accuracy and gap (mean, sd over seeds) and each ratio."""
    out = []
    for data, alpha in dict.fromkeys((row.get("data"), row["alpha"]) for row in rows):
        mine = [row for row in rows if row.get("data") == data and row["alpha"] == alpha]
        values = {m: np.array([r["_figures"][m] for r in mine], dtype=float) for m in mine[0]["_figures"]}
        figs = {m: v.mean(0).tolist() for m, v in values.items()}
        sd = {m: (v.std(0, ddof=1) if len(mine) > 1 else np.zeros(2)).tolist() for m, v in values.items()}
        entry = {"data": data, "alpha": alpha, "seeds": len(mine), "_figures": figs, "sd": sd}
        ratios = {key: [r[key] for r in mine if not math.isnan(r[key])] for key in RATIO_KEYS}
        out.append(entry | {key: float(np.mean(v)) if v else float("nan") for key, v in ratios.items()})
    return out


def build_targets(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Over every alpha > 0 and our three methods, from seed means: worst accuracy ratio and gap excess."""
    constrained = [entry for entry in seed_means(rows) if entry["alpha"] > 0]
    acc = [entry[key] for entry in constrained for key in RATIO_KEYS if not math.isnan(entry[key])]
    excess = [entry["_figures"][name][1] - entry["alpha"] for entry in constrained for name in OURS]
    return {
        "accuracy_over_fairlearn_min": target(worst(acc, "min"), ">=", 1.0),
        "gap_excess_max": target(worst(excess, "max"), "<=", 0.0),
    }


def main(argv: list[str] | None = None) -> None:
    parser = benchmark_parser(__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--eg-iter", type=int, default=15)
    parser.add_argument("--adult-rows", type=int, default=45222, help="Adult subsample (all: 45222)")
    parser.add_argument("--callback-epochs", type=int, default=20, help="epochs (EG rounds) of the callback")
    parser.add_argument("--datasets", default="adult,compas", help="comma-separated subset of adult,compas")
    parser.add_argument("--seeds", type=int, default=3, help="splits and initialisations (seed, seed + 1, ...)")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    chosen = args.datasets.split(",")
    if not chosen or set(chosen) - set(DATASETS) or args.seeds < 1:
        raise SystemExit(f"--datasets must be a subset of adult,compas and --seeds >= 1, got {args.datasets!r}")
    if args.quick:
        args.steps, args.eg_iter, args.callback_epochs, args.seeds = 150, 5, 8, 2
    alphas, rows = (0.05, 0.1) if args.quick else (0.0, 0.02, 0.05, 0.1, 0.2), []
    for seed in range(args.seed, args.seed + args.seeds):
        for dataset in chosen:
            name, kwargs = DATASETS[dataset]
            rows_cap = 2000 if args.quick else args.adult_rows if dataset == "adult" else None
            config = FairFrontierConfig("", dataset, kwargs, "dp", alphas, tuple(OURS.values()), (32,), args.steps,
                                        args.eg_iter, 50, args.callback_epochs, max_rows=rows_cap, sample_seed=7,
                                        seed=seed)  # fmt: skip
            rows += run_cell(name, config)
        means, targets = seed_means(rows), build_targets(rows)
        figures = {"rows": rows, "seed_means": means, "seeds_done": seed - args.seed + 1, "targets": targets}
        write_json(args.json, "fairness_frontier", figures, args)  # after every seed: a stopped run keeps them
    print(f"\nMean over {args.seeds} seed(s) (test accuracy/gap; ratios: seed means):\n")
    print(markdown_table([{"data": e["data"], "alpha": e["alpha"], **{m: "{:.3f}/{:.3f}".format(*f) for m, f in
                                                                      e["_figures"].items()},
                           **{k: e[k] for k in RATIO_KEYS}} for e in means]))  # fmt: skip
    print_targets(targets)


if __name__ == "__main__":
    main()
