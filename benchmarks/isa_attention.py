"""ISA against dense SDPA and two equal-budget sparse baselines on video-like in-context attention inputs.

Data: ``video_qkv`` (seeded): a target clip and its context clip of ``frames x side x side`` tokens each
(``--quick``: 4 x 16 x 16 = 1024 per clip; full: 4 x 32 x 32 = 4096), H = 4 heads, D = 64, blocks of 64 tokens.
The measurement is :func:`lightning_icml26.acceptance.compare_isa_attention` (its docs list the methods, dense,
``topk_block`` with ISA's score budget, ``isa_random`` and ``isa``, and the insight figures). With a CUDA device
and triton, and only then, the GPU rows of :func:`lightning_icml26.acceptance.measure_isa_latency` are measured
too (ISA's Triton path against SDPA's flash backend at 16K, 32K and 64K tokens, H = 4, bf16).

The inputs are generated at four logit scales (``--temperatures``, nearly flat to sharp attention) and every target
must hold at all of them (worst case over scales; the Spearman target at the lowest scale-mean). Targets: ISA
computes at most 0.4 x dense's scores, output cosine >= 0.99, a lower error than both equal-budget baselines,
context tokens less attended than target tokens, a positive sharpness/error Spearman correlation, and (GPU only)
latency at most 0.4 x SDPA's at 64K.

Run: ``python -m benchmarks.isa_attention [--quick] [--json PATH] [--seeds N] [--temperatures T ...]``.
"""

from __future__ import annotations

import statistics
from typing import Any

import torch

from benchmarks._common import benchmark_parser, markdown_table, print_targets, ratio, target, worst, write_json
from lightning_icml26.acceptance import (
    ISA_COMPARED_METHODS,
    IsaLatencySettings,
    compare_isa_attention,
    isa_latency_targets,
    measure_isa_latency,
)
from lightning_icml26.data import video_qkv
from lightning_icml26.optional import is_available


def gpu_latency() -> list[dict[str, Any]]:
    """The rows of ``measure_isa_latency`` at its defaults on CUDA with triton, else ``[]``."""
    if not (torch.cuda.is_available() and is_available("triton")):
        return []
    return list(measure_isa_latency(IsaLatencySettings(), "cuda")["rows"])


def run_seed(side: int, frames: int, seed: int, temperature: float) -> dict[str, Any]:
    """All methods and insight measurements on one seeded input."""
    q, k, v, n_t = video_qkv(frames, side, side, heads=4, head_dim=64, temperature=temperature, seed=seed)
    return compare_isa_attention(q, k, v, n_t, seed=seed)


def _mean_sd(values: list[float]) -> tuple[float, float]:
    return statistics.mean(values), (statistics.stdev(values) if len(values) > 1 else 0.0)


def _summary(runs: list[dict[str, Any]], temperature: float) -> list[dict[str, Any]]:
    table = []
    isa_err = statistics.mean(r["rows"]["isa"]["rel_l2"] for r in runs)
    for m in ISA_COMPARED_METHODS:
        row: dict[str, Any] = {"temperature": temperature, "method": m}
        for col in ("score_ratio", "rel_l2", "cosine", "cpu_s"):
            mean, sd = _mean_sd([r["rows"][m][col] for r in runs])
            row[col] = f"{mean:.4g} ± {sd:.2g}"
        row["flops_ratio"] = statistics.mean(r["rows"][m]["score_ratio"] for r in runs)
        row["err_over_isa"] = ratio(statistics.mean(r["rows"][m]["rel_l2"] for r in runs), isa_err)
        table.append(row)
    return table


def summarise_insights(by_temp: dict[float, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """Per temperature: (mean, sd) over seeds of the context-mass ratio and the Spearman correlations."""
    names = ("context_mass_ratio", "spearman_taylor", "spearman_taylor_abs", "spearman_zeroth",
             "all_context_err_over_random")  # fmt: skip
    return [{"temperature": t, **{n: _mean_sd([r[n] for r in runs]) for n in names}} for t, runs in by_temp.items()]


def build_targets(
    by_temp: dict[float, list[dict[str, Any]]], insights: list[dict[str, Any]], gpu: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    """The targets, each the worst case over temperatures (same keys at every size); GPU latency when measured."""

    def err(runs: list[dict[str, Any]], m: str) -> float:
        return statistics.mean(r["rows"][m]["rel_l2"] for r in runs)

    def err_over(m: str) -> float:
        return worst([ratio(err(runs, "isa"), err(runs, m)) for runs in by_temp.values()], "max")

    every = [r for runs in by_temp.values() for r in runs]
    gpu_ratio = isa_latency_targets(gpu or [])["isa_triton_latency_ratio_64k"]["value"]
    return {
        "isa_score_ratio": target(worst([r["rows"]["isa"]["score_ratio"] for r in every], "max"), "<=", 0.4),
        "isa_cosine_min": target(worst([r["rows"]["isa"]["cosine"] for r in every], "min"), ">=", 0.99),
        "isa_err_over_topk_block": target(err_over("topk_block"), "<", 1.0),
        "isa_err_over_isa_random": target(err_over("isa_random"), "<", 1.0),
        "context_mass_ratio": target(worst([row["context_mass_ratio"][0] for row in insights], "max"), "<", 1.0),
        "sharpness_error_spearman": target(worst([row["spearman_taylor"][0] for row in insights], "min"), ">", 0.0),
        "gpu_latency_ratio_64k": target(gpu_ratio, "<=", 0.4),
    }


def main() -> None:
    parser = benchmark_parser(__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--temperatures", type=float, nargs="+", default=[2.0, 5.0, 10.0, 20.0],
                        help="logit scales of the generated inputs; targets hold over all of them")  # fmt: skip
    args = parser.parse_args()
    side, frames = (16 if args.quick else 32), 4
    n_t = frames * side * side
    seeds = [args.seed + i for i in range(2 if args.quick else args.seeds)]
    by_temp = {t: [run_seed(side, frames, s, t) for s in seeds] for t in args.temperatures}
    print(f"\nISA vs baselines: N_t = N_c = {n_t}, H = 4, D = 64, block 64, seeds {seeds} (mean ± sd)\n")
    table = [row for t, runs in by_temp.items() for row in _summary(runs, t)]
    print(markdown_table(table))
    insights = summarise_insights(by_temp)
    print("\nInsights (mean ± sd over seeds):\n")
    print(markdown_table([{k: (f"{v[0]:.3g} ± {v[1]:.2g}" if isinstance(v, tuple) else v) for k, v in row.items()}
                          for row in insights]))  # fmt: skip
    gpu = gpu_latency()
    print(
        "\nGPU latency (bf16, H = 4, D = 64, 16K-64K tokens):", "measured" if gpu else "not measured (no CUDA/triton)"
    )
    targets = build_targets(by_temp, insights, gpu)
    print_targets(targets)
    figures = {
        "n_target": n_t,
        "seeds": seeds,
        "temperatures": args.temperatures,
        "runs": {str(t): runs for t, runs in by_temp.items()},
        "table": table,
        "insights": insights,
        "gpu_latency": gpu or "not measured (no CUDA device or no triton)",
        "targets": targets,
    }
    write_json(args.json, "isa_attention", figures, args)


if __name__ == "__main__":
    main()
