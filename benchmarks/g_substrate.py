"""G-Substrate: interleaved role-based SFT against task-isolated and naive multi-task SFT of the same model.

Each seed is one call of the task runner :func:`lightning_icml26.tasks.g_substrate_task` (its docs describe the
three regimes, the shared step budget, the held-out samples and the scores), run ``--workers`` at a time, one
process and one torch thread each; the JSON is rewritten after every seed. Sizes: ``--quick`` and the default are
a random-weight byte Llama, full training (the default size, 300 steps x 8 samples, width 64, 2 layers, lr 2e-3,
three seeds, was chosen by a sizing study on validation samples, ``e54e68d:benchmarks/g_substrate.py --sizing``);
``--full`` is SmolLM2-135M-Instruct with LoRA (rank 8, alpha 16 on ``q_proj`` and ``v_proj``), one seed.
``--steps``, ``--batch``, ``--width``, ``--layers``, ``--lr``, ``--n-eval``, ``--seeds`` and
``--split-isolated/--no-split-isolated`` override the size; ``--combine`` pools the seeds of earlier runs made
with the same settings. The JSON records per arm the optimizer steps, samples, non-padding and answer tokens.

Targets (fixed before any run; the paper's claim is that interleaving beats isolated and naive multi-task
training): interleaved at least 3 points above naive multi-task in mean exact match over the six QA tasks, and
not below isolated on any task (worst per-task difference >= 0), both as means over seeds.

    python -m benchmarks.g_substrate --quick --json outputs/g_substrate_quick.json
    python -m benchmarks.g_substrate --json benchmarks/results/g_substrate.json
    python -m benchmarks.g_substrate --full --json outputs/g_substrate_smollm2.json
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import statistics
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

import torch

from benchmarks._common import (
    benchmark_parser,
    check_poolable,
    markdown_table,
    print_targets,
    target,
    worst,
    write_json,
)
from lightning_icml26.tasks import G_SUBSTRATE_RATIOS, G_SUBSTRATE_TASKS, GSubstrateConfig, isolated_steps

COUNTS = ("steps", "samples", "tokens", "answer_tokens")
COLUMNS = [*G_SUBSTRATE_TASKS, "extraction_edge_f1", "mean_em", "real_connectivity", "real_cycle", "real_matching",
           *COUNTS]  # fmt: skip
SIZES = {  # (settings, seeds)
    "quick": (GSubstrateConfig(steps=30, n_eval=6), 2),
    "default": (GSubstrateConfig(), 3),
    "full": (GSubstrateConfig(model="smollm2", steps=32, batch=4, n_eval=6, lr=1e-3, new_tokens_qa=16,
                              new_tokens_extraction=160), 1),
}  # fmt: skip
FLAGS = {"steps": "steps", "batch": "batch", "width": "width", "layers": "num_layers", "lr": "lr", "n_eval": "n_eval",
         "split_isolated": "split_isolated"}  # fmt: skip
POOLABLE = ("seeds", "seeds_planned", "seeds_done", "workers", "combined_from")  # may differ between pooled runs


def build_parser() -> argparse.ArgumentParser:
    """The benchmark's flags: a size (``--quick``, default, ``--full``), overrides of it, ``--combine``."""
    parser = benchmark_parser(__doc__.splitlines()[0])
    parser.add_argument("--full", action="store_true", help="SmolLM2-135M-Instruct with LoRA, one seed")
    for flag, kind in (("--seeds", int), ("--steps", int), ("--batch", int), ("--width", int), ("--layers", int),
                       ("--lr", float), ("--n-eval", int)):  # fmt: skip
        parser.add_argument(flag, type=kind, default=None)
    parser.add_argument("--split-isolated", action=argparse.BooleanOptionalAction, default=None)
    parser.add_argument("--combine", type=Path, nargs="+", default=None, metavar="JSON", help="pool earlier runs")
    parser.add_argument("--workers", type=int, default=2, help="seeds trained at once, one process each")
    return parser


def chosen_size(args: argparse.Namespace) -> tuple[GSubstrateConfig, int]:
    """The size named by ``--quick`` / ``--full`` with the override flags applied, and the number of seeds."""
    if args.full and args.quick:
        raise ValueError("--full and --quick are exclusive; give one of them")
    config, seeds = SIZES["full" if args.full else "quick" if args.quick else "default"]
    if config.model == "smollm2" and (args.width is not None or args.layers is not None):
        raise ValueError("--width and --layers size the byte Llama; they are not allowed with --full")
    if args.seeds is not None and args.seeds < 1:
        raise ValueError(f"--seeds={args.seeds} is not allowed; give a positive integer")
    overrides = {field: getattr(args, flag) for flag, field in FLAGS.items() if getattr(args, flag) is not None}
    return replace(config, seed=args.seed, **overrides), args.seeds or seeds  # the settings check the values


def _run_seed(config: GSubstrateConfig) -> dict[str, Any]:
    torch.set_num_threads(1)
    return config.run()


def paired_difference(per_seed: list[dict], a: str, b: str, key: str = "mean_em") -> dict[str, Any]:
    """Per-seed ``100 x (a - b)`` of ``key`` (points), its mean and standard error over seeds (0 for one seed)."""
    diffs = [round(100 * (r[a][key] - r[b][key]), 10) for r in per_seed]
    sem = statistics.stdev(diffs) / len(diffs) ** 0.5 if len(diffs) > 1 else 0.0
    return {"per_seed": diffs, "mean": statistics.fmean(diffs), "sem": sem}


def combine_records(records: list[tuple[str, dict[str, Any]]]) -> tuple[list[dict], list[int], dict[str, Any]]:
    """Pool the per-seed results of runs with the same settings: results by seed, the seeds, the pooled settings."""
    if not records:
        raise ValueError("--combine needs at least one JSON record")
    reference = check_poolable(records, "g_substrate", "settings", "seeds_done", ignore=POOLABLE)
    pooled: dict[int, dict] = {}
    for name, record in records:
        seeds, results = record["figures"]["settings"]["seeds_done"], record["figures"]["per_seed"]
        if len(seeds) != len(results):
            raise ValueError(f"{name} lists {len(seeds)} seeds but holds {len(results)} results")
        pooled |= dict(zip(seeds, results, strict=True))
    order = sorted(pooled)
    settings = reference | {"seeds_planned": len(order), "seeds_done": order, "combined_from": [n for n, _ in records]}
    return [pooled[seed] for seed in order], order, settings


def report(per_seed: list[dict], settings: dict, args: Any, final: bool) -> None:
    """Means, spreads, paired differences and the targets into ``--json``; the tables when ``final``."""
    regimes = ("isolated", "multitask", "interleaved")

    def mean(regime: str, key: str) -> float:
        return statistics.fmean(r[regime].get(key, float("nan")) for r in per_seed)

    def spread(regime: str, key: str) -> float:
        values = [r[regime].get(key, float("nan")) for r in per_seed]
        return statistics.stdev(values) if len(values) > 1 else 0.0

    gap = 100 * (mean("interleaved", "mean_em") - mean("multitask", "mean_em"))
    worst_gap = worst([100 * (mean("interleaved", t) - mean("isolated", t)) for t in G_SUBSTRATE_TASKS], "min")
    targets = {
        "interleaved_minus_multitask_mean_em_points": target(gap, ">=", 3.0),
        "interleaved_minus_isolated_worst_task_points": target(worst_gap, ">=", 0.0),
    }
    paired = {f"interleaved_minus_{b}_points": paired_difference(per_seed, "interleaved", b) for b in regimes[:2]}
    figures = {"settings": settings, "per_seed": per_seed, "paired": paired, "targets": targets,
               "mean": {r: {k: mean(r, k) for k in COLUMNS} for r in regimes},
               "std": {r: {k: spread(r, k) for k in COLUMNS} for r in regimes}}  # fmt: skip
    write_json(args.json, "g_substrate", figures, args)
    if not final:
        return
    rows = [{"seed": s, "regime": g, **{k: r[g].get(k, float("nan")) for k in COLUMNS}}
            for s, r in zip(settings["seeds_done"], per_seed, strict=True) for g in regimes]  # fmt: skip
    print(markdown_table(rows, ["seed", "regime", *COLUMNS]))
    summary = [{"regime": g, **{k: mean(g, k) if k in COUNTS else f"{100 * mean(g, k):.1f} ± {100 * spread(g, k):.1f}"
                                for k in COLUMNS}} for g in regimes]  # fmt: skip
    print("\nMean ± std over seeds (percent; steps, samples, tokens: training totals of the arm):")
    print(markdown_table(summary, ["regime", *COLUMNS]))
    p = paired["interleaved_minus_multitask_points"]
    print(
        f"\ninterleaved - multi-task mean EM per seed: {p['per_seed']} points; mean {p['mean']:.1f} +- {p['sem']:.1f}"
    )
    print_targets(targets)


def main() -> None:
    args = build_parser().parse_args()
    config, seeds = chosen_size(args)
    if args.combine is not None:
        if args.json is None:
            raise ValueError("--combine needs --json PATH, where the pooled record is written")
        per_seed, _, settings = combine_records([(str(p), json.loads(p.read_text())) for p in args.combine])
        report(per_seed, settings, args, final=True)
        return
    if args.workers < 1:
        raise ValueError(f"--workers={args.workers} is not allowed; give a positive integer")
    settings = asdict(config) | {"seeds_planned": seeds, "held_out_seed": 10_000, "workers": args.workers}
    if config.split_isolated:
        settings["isolated_steps"] = isolated_steps(config.steps, G_SUBSTRATE_TASKS, G_SUBSTRATE_RATIOS)
    done: dict[int, dict] = {}
    with ProcessPoolExecutor(args.workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        jobs = {pool.submit(_run_seed, replace(config, seed=args.seed + s)): args.seed + s for s in range(seeds)}
        for job in as_completed(jobs):
            done[jobs[job]] = job.result()
            print(f"seed {jobs[job]} done", flush=True)
            settings["seeds_done"] = sorted(done)
            report([done[k] for k in sorted(done)], settings, args, final=len(done) == seeds)


if __name__ == "__main__":
    main()
