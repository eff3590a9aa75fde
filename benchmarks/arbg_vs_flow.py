"""ArBG vs a normalising-flow Boltzmann generator (zuko NSF) at matched parameter count and equal epochs.

Each system x model x seed is one run of the recipe ``arbg_dw4`` / ``arbg_lj13`` (the flow: ``model=flowbg``):
same MCMC reference samples, augmentation, optimiser (AdamW lr 1e-3, weight decay 0.01, clipping 1.0, batch 256,
per-epoch cosine decay) and epochs. ArBG: 512 bins over +-6 sigma, 64 x 3 (264k parameters); the flow: 4 spline
transforms of the width that matches that count. The recipe's BoltzmannEvalCallback picks ArBG's temperature
by E-W2 on the validation frames and scores twice as many fresh samples against the test frames: ESS / N and
E-W2 (kT) after SNIS reweighting, E-W2 before it, and the validation NLL (nats per coordinate).

    python -m benchmarks.arbg_vs_flow --quick
    python -m benchmarks.arbg_vs_flow --systems dw4 --epochs 60 --json benchmarks/results/arbg_vs_flow_dw4.json
"""

from __future__ import annotations

import argparse
import math
import statistics
import time
from pathlib import Path
from typing import Any

import torch

from benchmarks._common import benchmark_parser, markdown_table, print_targets, ratio, target, write_json
from lightning_icml26.cli import run_recipe

FLOW_WIDTH = {"dw4": 264, "lj13": 120}  # 4 transforms of two hidden layers: 264k / 267k parameters like ArBG's
METRICS = {"e_w2": "test/energy_w2", "ess": "test/ess", "e_w2_raw": "test/energy_w2_raw", "val_nll": "eval/nll"}


def overrides(system: str, model: str, seed: int, args: argparse.Namespace) -> list[str]:
    """The recipe overrides of one cell: the shared settings, then the model's own, then ``--set``.

    Example:
        >>> ns = argparse.Namespace(epochs=2, num_train=64, sizes=(16, 16, 8), lr=1e-3, temperatures=[1.0],
        ...                         extra=[])
        >>> overrides("dw4", "flow", 0, ns)[-2:]
        ['model=flowbg', 'model.hidden_features=[264,264]']
    """
    n_val, n_test, n_eval = args.sizes
    out = [f"seed={seed}", f"trainer.max_epochs={args.epochs}", "trainer.enable_progress_bar=false"]
    out += [f"data.num_train={args.num_train}", f"data.num_val={n_val}", f"data.num_test={n_test}"]
    out += ["data.batch_size=256", "+model/lr_scheduler=cosine", f"model.optimizer.lr={args.lr}", "test_after_fit=true"]
    out += [f"callbacks.boltzmann.{k}={v}" for k, v in (("every_n_epochs", args.epochs), ("num_samples", n_eval))]
    out += [f"callbacks.boltzmann.test_num_samples={2 * n_eval}", "++callbacks.boltzmann.plot=false"]
    if model == "arbg":
        temps = ",".join(str(t) for t in args.temperatures)
        out += ["model.num_bins=512", "model.coord_range=[-6.0,6.0]", "model.num_layers=3"]
        out += [f"callbacks.boltzmann.temperatures=[{temps}]"]
    else:
        width = FLOW_WIDTH[system]
        out += ["model=flowbg", f"model.hidden_features=[{width},{width}]"]
    return out + list(args.extra)


def run_cell(system: str, seed: int, args: argparse.Namespace) -> dict[str, Any]:
    """Both models on one system and seed: one recipe run each, figures read from the run summaries."""
    out: dict[str, Any] = {"seed": seed}
    for model in ("arbg", "flow"):
        start = time.perf_counter()
        summary = run_recipe(
            f"arbg_{system}", overrides(system, model, seed, args), args.run_dir / f"{system}_{model}_{seed}"
        )
        if summary["status"] != "finished":
            raise RuntimeError(f"{system} {model} seed {seed}: {summary['status']} {summary.get('error', '')}")
        metrics = summary["metrics"]
        out[model] = {k: float(metrics[v]) for k, v in METRICS.items()}
        out[model].update(temperature=float(metrics["test/temperature"]), wall_s=time.perf_counter() - start)
    return out


def summarise(name: str, runs: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Mean and standard deviation over seeds of each metric, and the ratio of the means."""
    rows, means = [], {}
    for metric, better in (("e_w2", "lower"), ("ess", "higher"), ("e_w2_raw", "lower"), ("val_nll", "lower")):
        stats = {}
        for model in ("arbg", "flow"):
            values = [r[model][metric] for r in runs]
            stats[model] = statistics.fmean(values)
            spread = statistics.stdev(values) if len(values) > 1 and not any(map(math.isnan, values)) else 0.0
            stats[f"{model}_std"] = math.nan if any(map(math.isnan, values)) else spread
        win = stats["arbg"] > stats["flow"] if better == "higher" else stats["arbg"] < stats["flow"]
        means[metric] = stats
        rows.append({"system": name, "metric": metric, **stats, "ArBG/flow": ratio(stats["arbg"], stats["flow"]),
                     "better": better, "ArBG wins": "yes" if win else "no"})  # fmt: skip
    return rows, means


def build_targets(name: str, means: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Targets of one system: ArBG's mean E-W2 at most the flow's and its mean ESS at least the flow's.

    Example:
        >>> m = {"e_w2": {"arbg": 1.0, "flow": 2.0}, "ess": {"arbg": 0.1, "flow": 0.2}}
        >>> {k: v["met"] for k, v in build_targets("dw4", m).items()}
        {'dw4_e_w2_ratio': True, 'dw4_ess_ratio': False}
    """
    return {
        f"{name}_e_w2_ratio": target(ratio(means["e_w2"]["arbg"], means["e_w2"]["flow"]), "<=", 1.0),
        f"{name}_ess_ratio": target(ratio(means["ess"]["arbg"], means["ess"]["flow"]), ">=", 1.0),
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Run the benchmark; return the figures (also written to ``--json``)."""
    parser = benchmark_parser((__doc__ or "").splitlines()[0])
    parser.add_argument("--systems", default="dw4,lj13", help="comma-separated: dw4, lj13")
    parser.add_argument("--epochs", type=int, default=None, help="training epochs per model (default 60, quick 3)")
    parser.add_argument("--seeds", type=int, default=None, help="number of seeds (seed, seed + 1, ...)")
    parser.add_argument("--temperatures", type=float, nargs="+", default=[0.9, 0.95, 1.0, 1.05])
    parser.add_argument("--lr", type=float, default=1e-3, help="AdamW learning rate of both models")
    parser.add_argument("--threads", type=int, default=1, help="torch threads")
    parser.add_argument("--num-train", type=int, default=None, help="training conformations (4000, quick 1000)")
    parser.add_argument("--num-eval", type=int, default=None, help="samples per validation temperature (test: x2)")
    parser.add_argument("--run-dir", type=Path, default=Path("outputs/arbg_vs_flow"), help="the runs' folders")
    parser.add_argument("--set", dest="extra", nargs="+", default=[], help="more overrides (++model.rotate=false)")
    args = parser.parse_args(argv)
    for name in ("epochs", "seeds", "num_train", "num_eval"):
        if getattr(args, name) is not None and getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be a positive integer, got {getattr(args, name)}")
    if not args.lr > 0 or any(not t > 0 for t in args.temperatures):
        parser.error(f"--lr and --temperatures must be positive, got {args.lr} and {args.temperatures}")
    systems = args.systems.split(",")
    if any(s not in FLOW_WIDTH for s in systems):
        parser.error(f"--systems entries must be among {sorted(FLOW_WIDTH)}, got {args.systems!r}")
    held = (250, 250) if args.quick else (1000, 1000)
    args.sizes = (*held, args.num_eval or held[0])
    args.epochs = args.epochs or (3 if args.quick else 60)
    args.num_train = args.num_train or (1000 if args.quick else 4000)
    torch.set_num_threads(args.threads)
    rows: list[dict[str, Any]] = []
    record: dict[str, Any] = {"rows": rows, "systems": {}, "targets": {}, "flow_width": FLOW_WIDTH}
    for name in systems:
        runs = []
        for seed in range(args.seed, args.seed + (args.seeds or (2 if args.quick else 3))):
            runs.append(run_cell(name, seed, args))
            print(f"{name} seed {seed}: {runs[-1]}", flush=True)
        sys_rows, means = summarise(name, runs)
        rows += sys_rows
        record["systems"][name] = {"runs": runs, "means": means}
        record["targets"].update(build_targets(name, means))
        write_json(args.json, "arbg_vs_flow", record, args)  # after each system, so a stopped run keeps it
    print(f"\n{args.epochs} epochs per model; {args.num_train} / {args.sizes[0]} / {args.sizes[1]} conformations\n")
    print(markdown_table(rows))
    print_targets(record["targets"])
    return record


if __name__ == "__main__":
    main()
