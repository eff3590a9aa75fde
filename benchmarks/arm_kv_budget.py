"""ARM (experimental) against KV-cache baselines at an equal KV budget: MQAR recall and decode cost.

One ``run_recipe("arm_kv_budget", ...)`` per trained kind and seed (the recipe's task,
``lightning_icml26.tasks.ARMKVBudgetConfig``, trains one ``ARMDecoder`` with a ``Trainer`` and the shipped ARM
callbacks, then decodes long MQAR sequences with the kind's cache). Trained kinds: full KV (its weights also
give SnapKV and H2O), StreamingLLM, GSA, ARM's fixed read (its weights also give the top-p read) and ARM's
learned read (fixed read until 3/4 of the steps, then the policy under a read cost ramped to 1.5). Every kind
trains on the same batches: MQAR at 128 tokens, 16 pairs, d_model 64, one block, AdamW lr 3e-3 after a 50-step
linear warm-up, batch 32, 3000 steps; test: 64 sequences of 512 tokens, context prefilled, queries decoded.

Targets (the paper's claim, "better than fixed KV caching at the same memory", turned into numbers before any
run): at the KV budget (1/8 by default) ARM's recall >= 1.5 x StreamingLLM's and above every other budgeted
baseline, within 5 points of full KV; the learned read within 1 point of the fixed read while reading at most
half its slots; ARM's KV bytes constant and per-token time at most 1.5 x from 512 to 2048 tokens, full KV's
bytes >= 3.5 x. Full KV's recall >= 0.5 is the validity target (did training suffice for the task at all).

``--quick``: 100 steps of 16, 32 test sequences, one seed (a smoke run: no kind learns MQAR that fast).
``--pool A.json B.json ...`` trains nothing and pools the per-seed cells of runs with the same settings; one seed's
kinds may be split between runs (``--seed 5 --kinds full,snapkv,h2o,streaming,gsa`` on one core, ``--seed 5
--kinds arm_fixed,arm_top_p,arm_learned`` on another), each kind and seed pooled once.

Run: ``python -m benchmarks.arm_kv_budget [--quick] [--seed S] [--seeds N] [--kinds K,...] [--budget 1/8]
[--steps N] [--set task.KEY=VALUE ...] [--json PATH]`` or ``python -m benchmarks.arm_kv_budget --pool A.json
B.json ... --json OUT``.
"""

from __future__ import annotations

import json
import statistics
import tempfile
from pathlib import Path
from typing import Any

import torch

from benchmarks._common import (
    benchmark_parser,
    check_poolable,
    markdown_table,
    print_targets,
    ratio,
    target,
    worst,
    write_json,
)
from lightning_icml26.cli import run_recipe
from lightning_icml26.tasks.arm_kv_budget import ARM_KV_EVALUATED

EVALUATED = ("full", "streaming", "snapkv", "h2o", "gsa", "arm_fixed", "arm_top_p", "arm_learned")
BASELINES = ("streaming", "snapkv", "h2o", "gsa")
COST_KINDS = ("full", "arm_fixed")
BUDGETS = {"1/16": 32, "1/8": 64, "1/4": 128}
QUICK = ["task.steps=100", "task.batch_size=16", "task.n_eval=32"]


def trained_kinds(kinds: tuple[str, ...]) -> list[str]:
    """The kinds to train so that every one of ``kinds`` is evaluated.

    Example:
        >>> trained_kinds(("h2o", "arm_top_p"))
        ['full', 'arm_fixed']
    """
    unknown = [name for name in kinds if name not in EVALUATED]
    if not kinds or unknown:
        raise ValueError(f"kinds must be a non-empty subset of {EVALUATED}, got {kinds!r}")
    return [trained for trained, derived in ARM_KV_EVALUATED.items() if set(derived) & set(kinds)]


def run_cells(trained: list[str], seeds: list[int], overrides: list[str], root: Path) -> dict[str, Any]:
    """``{trained kind: {seed: the recipe's metrics}}``: one ``run_recipe`` call per cell (decode cost: first seed)."""
    cells: dict[str, Any] = {}
    for kind in trained:
        for seed in seeds:
            cost = kind in COST_KINDS and seed == seeds[0]
            cell = [f"task.kind={kind}", f"seed={seed}", f"task.decode_cost={cost}", *overrides]
            summary = run_recipe("arm_kv_budget", cell, run_dir=root / f"{kind}_seed{seed}")
            cells.setdefault(kind, {})[str(seed)] = summary["metrics"]
            print(f"  {kind} seed {seed}: " + ", ".join(f"{k} {v:.3f}" for k, v in summary["metrics"].items()))
    return cells


def summarize(cells: dict[str, Any], kinds: tuple[str, ...]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Recall rows (mean and population spread over seeds, ``vs_full``) and the decode-cost rows.

    A kind whose cells measured no decode cost has no decode-cost rows.

    Example:
        >>> cells = {"full": {"0": {"recall_full": 1.0, "slots_full": float("nan"), "train_s": 2.0}},
        ...          "arm_fixed": {"0": {"recall_arm_fixed": 0.4, "slots_arm_fixed": 48.0, "train_s": 3.0},
        ...                        "1": {"recall_arm_fixed": 0.8, "slots_arm_fixed": 48.0, "train_s": 3.0}}}
        >>> rows, _ = summarize(cells, ("full", "arm_fixed"))
        >>> [(r["kind"], round(r["recall"], 3), round(r["recall_sd"], 3), round(r["vs_full"], 3)) for r in rows]
        [('full', 1.0, 0.0, 1.0), ('arm_fixed', 0.6, 0.2, 0.6)]
    """
    source = {name: trained for trained, derived in ARM_KV_EVALUATED.items() for name in derived}
    rows: list[dict[str, Any]] = []
    for name in (k for k in EVALUATED if k in kinds and source[k] in cells):
        per_seed = cells[source[name]]
        recalls = [float(m[f"recall_{name}"]) for m in per_seed.values()]
        rows.append(
            {
                "kind": name,
                "recall": statistics.fmean(recalls),
                "recall_sd": statistics.pstdev(recalls),
                "slots_read": statistics.fmean(float(m[f"slots_{name}"]) for m in per_seed.values()),
                "train_s": statistics.fmean(float(m["train_s"]) for m in per_seed.values()),
                "seeds": [int(s) for s in per_seed],
                "recall_per_seed": recalls,
            }
        )
    full = next((row["recall"] for row in rows if row["kind"] == "full"), float("nan"))
    for row in rows:
        row["vs_full"] = ratio(row["recall"], full)
    cost = []
    for kind in (k for k in COST_KINDS if k in cells):
        measured = (m for m in cells[kind].values() if any(key.startswith("kv_bytes_") for key in m))
        metrics: dict[str, Any] = next(measured, {})
        for key in sorted((k for k in metrics if k.startswith("kv_bytes_")), key=lambda k: int(k.split("_")[-1])):
            length = key.split("_")[-1]
            row = {"kind": kind, "context": int(length), "ms_per_token": metrics[f"ms_per_token_{length}"]}
            cost.append({**row, "kv_bytes": metrics[key]})
    return rows, cost


def compute_targets(table: list[dict[str, Any]], cost: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The targets from the recall rows and the decode cost; a missing kind's target is ``nan``, missed."""
    by_kind = {row["kind"]: row for row in table}

    def mean(name: str, key: str = "recall") -> float:
        return float(by_kind[name][key]) if name in by_kind else float("nan")

    def cost_ratio(name: str, key: str) -> float:
        by_len = sorted((int(c["context"]), float(c[key])) for c in cost if c["kind"] == name)
        return ratio(by_len[-1][1], by_len[0][1]) if len(by_len) > 1 else float("nan")

    best_baseline = worst([mean(b) for b in BASELINES], "max")
    return {
        "full_kv_recall_1_8": target(mean("full"), ">=", 0.5),
        "arm_recall_over_streaming_1_8": target(ratio(mean("arm_fixed"), mean("streaming")), ">=", 1.5),
        "arm_recall_minus_best_baseline_1_8": target(mean("arm_fixed") - best_baseline, ">", 0.0),
        "full_minus_arm_recall_1_8": target(mean("full") - mean("arm_fixed"), "<=", 0.05),
        "fixed_minus_learned_recall_1_8": target(mean("arm_fixed") - mean("arm_learned"), "<=", 0.01),
        "learned_slots_fraction_of_fixed_1_8": target(
            ratio(mean("arm_learned", "slots_read"), mean("arm_fixed", "slots_read")), "<=", 0.5
        ),
        "arm_decode_time_ratio_2048_over_512": target(cost_ratio("arm_fixed", "ms_per_token"), "<=", 1.5),
        "arm_kv_bytes_ratio_2048_over_512": target(cost_ratio("arm_fixed", "kv_bytes"), "<=", 1.0),
        "full_kv_bytes_ratio_2048_over_512": target(cost_ratio("full", "kv_bytes"), ">=", 3.5),
    }


def pool(paths: list[Path]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The config and the joined cells of runs with the same settings.

    One seed's kinds may come from several runs (``--seed 5 --kinds full,streaming`` in one, ``--seed 5 --kinds
    arm_fixed`` in another), but each trained kind and seed is pooled once, and every trained kind must have the
    same seeds. The decode-cost rows come from the first run that measured them.

    Raises:
        ValueError: runs of another benchmark or with other settings, a kind and seed in two runs (naming both),
            or a trained kind missing seeds that another kind has (naming the kind and the seeds).
    """
    records = [(str(path), json.loads(path.read_text())) for path in paths]
    check_poolable(records, "arm_kv_budget", "config", "seeds", unique_seeds=False)
    cells: dict[str, Any] = {}
    owner: dict[tuple[str, str], str] = {}
    for name, record in records:
        for kind, per_seed in record["figures"]["cells"].items():
            for seed, metrics in per_seed.items():
                if (kind, seed) in owner:
                    raise ValueError(f"{kind} seed {seed} is in both {owner[kind, seed]} and {name}; pool each once")
                owner[kind, seed] = name
                cells.setdefault(kind, {})[seed] = metrics
    seeds = sorted({int(seed) for per_seed in cells.values() for seed in per_seed})
    for kind, per_seed in cells.items():
        missing = sorted(set(seeds) - {int(seed) for seed in per_seed})
        if missing:
            raise ValueError(f"pooled runs have no {kind} cell for seed(s) {missing}, which other kinds have")
    config = records[0][1]["figures"]["config"]
    return {**config, "seeds": seeds, "pooled_from": [name for name, _ in records]}, cells


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Run (or pool) the comparison, print the tables and targets, write the JSON; return the figures."""
    parser = benchmark_parser(__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=1, help="seeds from --seed on (default 1)")
    parser.add_argument("--kinds", default=",".join(EVALUATED), help=f"comma-separated subset of {EVALUATED}")
    parser.add_argument("--budget", choices=tuple(BUDGETS), default="1/8", help="KV budget per head (of 512)")
    parser.add_argument("--steps", type=int, default=None, help="training steps (default 3000, --quick 100)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="more recipe overrides")
    parser.add_argument("--pool", type=Path, nargs="+", default=None, metavar="RUN.json", help="pool runs")
    args = parser.parse_args(argv)
    kinds = tuple(name.strip() for name in args.kinds.split(",") if name.strip())
    try:
        trained = trained_kinds(kinds)
    except ValueError as err:
        parser.error(f"--kinds: {err}")
    if args.seeds < 1 or (args.steps is not None and args.steps < 1):
        parser.error(f"--seeds and --steps must be >= 1, got {args.seeds} and {args.steps}")
    torch.set_num_threads(max(1, min(2, torch.get_num_threads())))
    if args.pool is not None:
        config, cells = pool(args.pool)
    else:
        own = [f"task.budget={BUDGETS[args.budget]}", *(QUICK if args.quick else [])]
        own += [f"task.steps={args.steps}"] if args.steps is not None else []
        given = {item.split("=")[0] for item in args.set}  # --set wins over the flags
        overrides = [item for item in own if item.split("=")[0] not in given] + args.set
        seeds = [args.seed + i for i in range(args.seeds)]
        with tempfile.TemporaryDirectory() as root:
            cells = run_cells(trained, seeds, overrides, Path(root))
        config = {"recipe": "arm_kv_budget", "overrides": overrides, "seeds": seeds, "budget": args.budget}
    table, cost = summarize(cells, kinds)
    print(markdown_table([{k: v for k, v in row.items() if not k.endswith("seed") and k != "seeds"} for row in table]))
    print(markdown_table(cost))
    targets = compute_targets(table, cost)
    figures = {"config": config, "mqar": table, "decode_cost": cost, "cells": cells, "targets": targets}
    print_targets(targets)
    write_json(args.json, "arm_kv_budget", figures, args)
    return figures


if __name__ == "__main__":
    main()
