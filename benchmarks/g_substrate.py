"""G-Substrate: interleaved role-based SFT against task-isolated and naive multi-task SFT of the same model.

Three regimes train the same causal LM (a random-weight Llama over byte tokens, ``tiny_byte_llama``) with
the same optimizer, the same number of optimizer steps and the same batch size (so the same number of
samples, each seen once):

* ``isolated``: one model per task, trained on that task only (seven models);
* ``multitask``: one model on all tasks, every sample on a graph of its own;
* ``interleaved``: one model on the same task counts, where each algorithm sample's graph is re-used for a
  consistency and an extraction sample.

All models are scored on the same held-out samples: generated graphs larger than in training (8-10 nodes
against 4-7) and networkx's real graphs (karate club and Florentine families for connectivity and cycles,
Davis's southern women for bipartite matching). Exact match per task (connectivity, cycle, shortest path,
matching, neighbours, consistency, extraction) and edge micro-F1 for extraction, from greedy generation.

Targets (fixed before any run; the paper's claim is that interleaving beats isolated and naive multi-task
training): interleaved at least 3 points above naive multi-task in mean exact match over the six QA tasks,
and not below isolated on any task (worst per-task difference >= 0), both as means over seeds.

    python benchmarks/g_substrate.py --quick --json outputs/g_substrate_quick.json
    python benchmarks/g_substrate.py --json benchmarks/results/g_substrate.json
"""

from __future__ import annotations

import random
import statistics
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import torch
from lightning.pytorch import Trainer, seed_everything

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._common import benchmark_parser, markdown_table, print_targets, target, worst, write_json
from lightning_icml26.data.graph_substrate import (
    GraphSubstrateDataModule,
    GraphTask,
    RoleTaskGenerator,
    real_graphs,
    sample_graph,
)
from lightning_icml26.data.graph_substrate.mixtures import make_task, task_kind
from lightning_icml26.llm import ByteTokenizer
from lightning_icml26.modules import SubstrateSFTModule, evaluate_graph_tasks, tiny_byte_llama

TASKS = ["connectivity", "cycle", "shortest_path", "matching", "neighbors", "consistency", "extraction"]
QA_TASKS = TASKS[:-1]
RATIOS = {"algorithm": 0.6, "consistency": 0.2, "extraction": 0.2}
ALGO = [t for t in TASKS if t not in ("consistency", "extraction")]


def held_out(n_per_task: int, seed: int) -> tuple[list[GraphTask], list[GraphTask]]:
    """Generated larger graphs (every task) and real-graph samples, the same for every regime and seed."""
    rng = random.Random(seed)
    gen = RoleTaskGenerator(seed=seed)
    generated = []
    for task in TASKS:
        for _ in range(n_per_task):
            kind = task_kind(task) if task in ALGO else rng.choice([task_kind(t) for t in ALGO])
            while True:
                graph = sample_graph(kind, rng.randint(8, 10), 0.3, rng)
                if graph.number_of_edges():
                    break
            generated.append(make_task(gen, task, graph, kind))
    real = []
    graphs = real_graphs()
    for name in ("karate", "florentine"):
        kind, graph = graphs[name]
        real += [gen.nlgraph(graph, kind, "connectivity") for _ in range(3)] + [gen.nlgraph(graph, kind, "cycle")]
    kind, davis = graphs["davis"]
    real.append(gen.nlgraph(davis, kind, "matching"))
    return generated, real


def train(mixture: str, tasks: list[str], ratios: dict[str, float], steps: int, batch: int, seed: int, width: int):
    seed_everything(seed, verbose=False)
    tok = ByteTokenizer()
    dm = GraphSubstrateDataModule(
        tok, mixture, tasks, ratios, num_train=steps * batch, num_val=1, num_nodes=(4, 7), edge_prob=0.35,
        max_length=1024, batch_size=batch, seed=seed, kinds=[task_kind(t) for t in ALGO],
    )  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dm.setup()
        model = tiny_byte_llama(seed=seed, hidden_size=width, num_layers=2, num_heads=4, max_positions=4096)
        module = SubstrateSFTModule(model, tok, optimizer=lambda p: torch.optim.AdamW(p, lr=2e-3, weight_decay=0.0))
        trainer = Trainer(
            max_steps=steps, max_epochs=1, logger=False, enable_checkpointing=False, enable_progress_bar=False,
            enable_model_summary=False, accelerator="cpu", limit_val_batches=0, gradient_clip_val=1.0,
        )  # fmt: skip
        trainer.fit(module, dm)
    tokens = sum(len(r["input_ids"]) for r in dm._rows["train"][: steps * batch])
    return module, {"dropped": dm.over_cutoff["train"], "tokens": tokens}


def score(module: SubstrateSFTModule, tasks: list[GraphTask]) -> dict[str, float]:
    qa = [t for t in tasks if t.task != "extraction"]
    ext = [t for t in tasks if t.task == "extraction"]
    out = {}
    module.model.eval()
    if qa:
        out |= evaluate_graph_tasks(module.language_model(batch_size=8), qa, max_new_tokens=12)
    if ext:
        out |= evaluate_graph_tasks(module.language_model(batch_size=8), ext, max_new_tokens=280)
    out.pop("mean_exact_match", None)
    return out


def main() -> None:
    parser = benchmark_parser(__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=None)
    args = parser.parse_args()
    torch.set_num_threads(1)
    steps, batch, width, n_eval, seeds = (30, 8, 64, 6, 2) if args.quick else (120, 8, 64, 16, 3)
    seeds = args.seeds or seeds
    generated, real = held_out(n_eval, seed=10_000)
    rows, per_seed = [], []
    start = time.time()
    for s in range(seeds):
        seed = args.seed + s
        result: dict[str, dict[str, float]] = {}
        for regime in ("multitask", "interleaved"):
            module, info = train(regime, TASKS, RATIOS, steps, batch, seed, width)
            result[regime] = score(module, generated) | {f"real_{k}": v for k, v in score(module, real).items()}
            result[regime] |= info
        iso: dict[str, float] = {"tokens": 0.0, "dropped": 0.0}
        for task in TASKS:
            role = {"consistency": "consistency", "extraction": "extraction"}.get(task, "algorithm")
            ratios = {r: float(r == role) for r in RATIOS}
            module, info = train("isolated", [task], ratios, steps, batch, seed, width)
            mine = [t for t in generated if t.task == task]
            iso |= score(module, mine)
            iso["tokens"] += info["tokens"] / len(TASKS)
            iso["dropped"] += info["dropped"]
            mine_real = [t for t in real if t.task == task]
            if mine_real:
                iso |= {f"real_{k}": v for k, v in score(module, mine_real).items()}
        result["isolated"] = iso
        for regime, res in result.items():
            res["mean_em"] = statistics.fmean(res[t] for t in QA_TASKS)
            rows.append({"seed": seed, "regime": regime, **{k: res.get(k, float("nan")) for k in _COLUMNS}})
        per_seed.append(result)
        print(f"seed {seed} done after {time.time() - start:.0f} s", flush=True)
        # written after every seed, so a run stopped by a time limit keeps the seeds it finished
        settings = {"steps": steps, "batch": batch, "width": width, "n_eval_per_task": n_eval, "seeds_planned": seeds}
        report(per_seed, rows, settings | {"seeds_done": len(per_seed)}, args, final=s == seeds - 1)


def report(per_seed: list[dict], rows: list[dict], settings: dict, args: Any, final: bool) -> None:
    regimes = ("isolated", "multitask", "interleaved")

    def mean(regime: str, key: str) -> float:
        return statistics.fmean(r[regime][key] for r in per_seed)

    def spread(regime: str, key: str) -> float:
        values = [r[regime][key] for r in per_seed]
        return statistics.stdev(values) if len(values) > 1 else 0.0

    gap = 100 * (mean("interleaved", "mean_em") - mean("multitask", "mean_em"))
    worst_gap = worst([100 * (mean("interleaved", t) - mean("isolated", t)) for t in TASKS], "min")
    targets = {
        "interleaved_minus_multitask_mean_em_points": target(gap, ">=", 3.0),
        "interleaved_minus_isolated_worst_task_points": target(worst_gap, ">=", 0.0),
    }
    figures = {
        "settings": settings,
        "per_seed": per_seed,
        "mean": {r: {k: mean(r, k) for k in _COLUMNS} for r in regimes},
        "std": {r: {k: spread(r, k) for k in _COLUMNS} for r in regimes},
        "targets": targets,
    }
    write_json(args.json, "g_substrate", figures, args)
    if not final:
        return
    summary = []
    for regime in regimes:
        row: dict[str, Any] = {"regime": regime}
        for key in _COLUMNS:
            row[key] = (
                mean(regime, key)
                if key == "tokens"
                else f"{100 * mean(regime, key):.1f} ± {100 * spread(regime, key):.1f}"
            )
        summary.append(row)
    print(markdown_table(rows, ["seed", "regime", *_COLUMNS]))
    print("\nMean ± std over seeds (percent; tokens = training tokens per model):")
    print(markdown_table(summary, ["regime", *_COLUMNS]))
    print_targets(targets)


_COLUMNS = [*TASKS, "extraction_edge_f1", "mean_em", "real_connectivity", "real_cycle", "real_matching", "tokens"]

if __name__ == "__main__":
    main()
