"""Label-only recourse for in-context-learning classifiers: ASR-ICL against Full-ZO RACOS and baselines.

Six tables (COMPAS, Pima, German credit for Australian credit, breast cancer, a generated credit table, wine) and
their ICL predictors (linear self-attention on binary tables, kernel soft-kNN, context logistic regression) run
through :func:`~lightning_icml26.tasks.asr_icl_task` (32-shot contexts, ``--rows`` rows predicted unfavourable,
budget 150) with every method; figures are averaged over predictors and ``--seeds`` context draws. A second table:
the linear self-attention ICL's closed-form recourse against least squares on the pool for M in {8, ..., 128} and
its log-log slope (theory: -1/2). Targets (the paper, TabPFN on Australian: Full-ZO cost 12.88, 144.3 queries;
ASR-ICL 3.83, 27.0): per table ``validity_gap_* >= -0.02``, ``query_ratio_* <= 0.3``, ``cost_ratio_* <= 0.5``
(refined methods), ``cost_vs_wachter_* <= 1.5``; ``convergence_slope_* <= -0.3``.

    python -m benchmarks.asr_icl --quick --json outputs/asr_icl_quick.json   # 8 rows, 1 context draw
    python -m benchmarks.asr_icl --json outputs/asr_icl.json                 # 40 rows, 3 context draws
"""

from __future__ import annotations

from concurrent.futures import ProcessPoolExecutor
from typing import Any

import numpy as np

from benchmarks._common import benchmark_parser, markdown_table, print_targets, ratio, target, write_json
from lightning_icml26.algorithms.recourse import LinearAttentionICL
from lightning_icml26.data.recourse_tables import load_recourse_table
from lightning_icml26.tasks import AsrIclConfig, asr_icl_task
from lightning_icml26.tasks.asr_icl import METHODS, sample_context

DATASETS = ("compas", "pima", "german", "breast_cancer", "credit", "wine")
CONVERGENCE = ("compas", "credit")
CONTEXT_SIZES = (8, 16, 32, 64, 128)
FIGURES = ("validity", "cost", "dense_cost", "sparsity", "queries", "seconds")


def predictors_for(dataset: str) -> tuple[str, ...]:
    """Linear self-attention is a two-class model: not on wine."""
    return ("kernel", "logistic") if dataset == "wine" else ("lsa", "kernel", "logistic")


def job(dataset: str, predictor: str, rows: int, seed: int) -> dict[str, Any]:
    """One table, one predictor, one context draw (``skipped`` when no row is predicted unfavourable)."""
    config = AsrIclConfig(None, dataset, predictor, n_context=32, n_rows=rows, budget=150, seed=seed)
    try:
        flat = asr_icl_task(config)
    except ValueError as error:
        return {"dataset": dataset, "predictor": predictor, "seed": seed, "skipped": str(error)}
    result = {m: {f: flat[f"{m}/{f}"] for f in FIGURES} for m in METHODS}
    return {"dataset": dataset, "predictor": predictor, "seed": seed, "result": result}


def convergence(dataset: str, contexts: int, seed: int) -> dict[int, float]:
    """Mean ``||delta_ICL(M) - delta_classical||`` over ``contexts`` draws and 50 rows, for each M."""
    table = load_recourse_table(dataset)
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(table.y))
    pool, rows = order[: len(order) // 2], table.X[order[len(order) // 2 :][:50]]
    gamma = table.X[pool].T @ table.X[pool] / len(pool)
    classical = np.linalg.solve(gamma, table.X[pool].T @ np.where(table.y[pool] == 1, 1.0, -1.0) / len(pool))
    gap_classical = np.maximum(1e-6 - rows @ classical, 0.0)[:, None] * classical / (classical @ classical)
    out = {}
    for m in CONTEXT_SIZES:
        gaps = []
        for _ in range(contexts):
            idx = pool[sample_context(table.y[pool], m, rng)]
            icl = LinearAttentionICL(table.X[idx], table.y[idx], gamma=gamma)
            delta = np.stack([icl.closed_form_recourse(x) for x in rows])
            gaps.append(float(np.linalg.norm(delta - gap_classical, axis=1).mean()))
        out[m] = float(np.mean(gaps))
    return out


def summarise(done: list[dict[str, Any]], dataset: str, detail: list[dict[str, Any]]) -> dict[str, float]:
    """Per-method means over predictors (each a mean over context draws), ratios to Full-ZO; rows to ``detail``."""
    per_method: dict[str, dict[str, list[float]]] = {m: {f: [] for f in FIGURES} for m in METHODS}
    for predictor in predictors_for(dataset):
        results = [
            r["result"] for r in done if (r["dataset"], r["predictor"]) == (dataset, predictor) and "result" in r
        ]
        if not results:
            continue
        zo = {f: float(np.mean([r["full_zo"][f] for r in results])) for f in FIGURES}
        for method in METHODS:
            means = {f: float(np.mean([r[method][f] for r in results])) for f in FIGURES}
            for f in FIGURES:
                per_method[method][f].append(means[f])
            detail.append({"data": dataset, "ICL": predictor, "method": method, **means,
                           "queries x ZO": ratio(means["queries"], zo["queries"]),
                           "cost x ZO": ratio(means["cost"], zo["cost"])})  # fmt: skip
    mean = {m: {f: float(np.mean(v[f])) if v[f] else float("nan") for f in FIGURES} for m, v in per_method.items()}
    asr, zo = mean["asr_icl"], mean["full_zo"]
    return {
        "validity_gap": asr["validity"] - zo["validity"],
        "query_ratio": ratio(asr["queries"], zo["queries"]),
        "cost_ratio": ratio(asr["cost"], zo["cost"]),
        "cost_vs_wachter": ratio(asr["cost"], mean["wachter"]["cost"]),
        "cost_ratio_norefine": ratio(mean["asr_icl_norefine"]["cost"], mean["full_zo_norefine"]["cost"]),
        "cost_vs_zo_norefine": ratio(asr["cost"], mean["full_zo_norefine"]["cost"]),
        "dense_cost_ratio": ratio(asr["dense_cost"], zo["dense_cost"]),
        "dense_cost_vs_zo_norefine": ratio(asr["dense_cost"], mean["full_zo_norefine"]["dense_cost"]),
        **{f"{m}/{f}": v for m, figs in mean.items() for f, v in figs.items()},
    }


def build_targets(summary: dict[str, dict[str, float]], slopes: dict[str, float]) -> dict[str, dict[str, Any]]:
    """``summary[dataset]`` holds ``validity_gap``, ``query_ratio``, ``cost_ratio``, ``cost_vs_wachter``."""
    targets: dict[str, dict[str, Any]] = {}
    for dataset, row in summary.items():
        targets[f"validity_gap_{dataset}"] = target(row["validity_gap"], ">=", -0.02)
        targets[f"query_ratio_{dataset}"] = target(row["query_ratio"], "<=", 0.3)
        targets[f"cost_ratio_{dataset}"] = target(row["cost_ratio"], "<=", 0.5)
        targets[f"cost_vs_wachter_{dataset}"] = target(row["cost_vs_wachter"], "<=", 1.5)
    for dataset, value in slopes.items():
        targets[f"convergence_slope_{dataset}"] = target(value, "<=", -0.3)
    return targets


def main(argv: list[str] | None = None) -> None:
    parser = benchmark_parser(__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=40)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args(argv)
    rows, seeds, contexts = (8, 1, 10) if args.quick else (args.rows, args.seeds, 50)
    jobs = [(d, p, rows, args.seed + s) for d in DATASETS for p in predictors_for(d) for s in range(seeds)]
    with ProcessPoolExecutor(max_workers=args.workers) as pool:
        futures = [pool.submit(job, *j) for j in jobs]
        conv_futures = {d: pool.submit(convergence, d, contexts, args.seed) for d in CONVERGENCE}
        done = [f.result() for f in futures]
        curves = {d: f.result() for d, f in conv_futures.items()}
    detail: list[dict[str, Any]] = []
    summary = {dataset: summarise(done, dataset, detail) for dataset in DATASETS}
    skipped = [f"{r['dataset']}/{r['predictor']}/seed {r['seed']}: {r['skipped']}" for r in done if "skipped" in r]
    print(markdown_table(detail))
    print("\nPer table (mean over predictors and context draws), ASR-ICL against Full-ZO:")
    print(markdown_table([{"data": d, **dict(list(s.items())[:8])} for d, s in summary.items()]))
    slopes = {d: float(np.polyfit(np.log(list(c)), np.log(list(c.values())), 1)[0]) for d, c in curves.items()}
    print("\n||delta_ICL - delta_classical|| (linear self-attention ICL, closed form):")
    print(markdown_table([{"data": d, **{f"M={m}": g for m, g in c.items()}, "slope": slopes[d]}
                          for d, c in curves.items()]))  # fmt: skip
    print("\nskipped:", *skipped, sep="\n- ") if skipped else None
    targets = build_targets(summary, slopes)
    print_targets(targets)
    figures = {"rows": detail, "summary": summary, "slopes": slopes, "skipped": skipped, "targets": targets,
               "convergence": {d: {str(m): g for m, g in c.items()} for d, c in curves.items()},
               "rows_per_job": rows, "seeds": seeds}  # fmt: skip
    write_json(args.json, "asr_icl", figures, args)


if __name__ == "__main__":
    main()
