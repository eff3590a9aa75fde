"""G-Substrate: interleaved role-based SFT against task-isolated and naive multi-task SFT of the same model.

Three regimes train the same causal LM with the same optimizer, batch size and number of optimizer steps
(so the same number of samples, each seen once):

* ``isolated``: one model per task, trained on that task only (seven models);
* ``multitask``: one model on all tasks, every sample on a graph of its own;
* ``interleaved``: one model on the same task counts, where each algorithm sample's graph is re-used for a
  consistency and an extraction sample.

Every size shares the step budget in the isolated arm (``split_isolated``; ``--no-split-isolated`` gives each
isolated model all the steps, seven times the compute): the model of a task gets the steps of that task's
share of the mixture (the role ratio, split evenly over the algorithm tasks), so every arm makes the same
number of optimizer steps on the same number of samples and each task gets as many samples as in the
multi-task mixture. Training graphs have 4-7 nodes, so prompts stay short. Two models:

* default and ``--quick``: a random-weight Llama over byte tokens (``tiny_byte_llama``), full training; the
  default size (width, layers, learning rate, steps, seeds) is the one the sizing study chose on validation
  samples (``--sizing``, ``--choose``; ``benchmarks/results/g_substrate_sizing.json``);
* ``--full``: SmolLM2-135M-Instruct (offline, ``smollm2()``) with LoRA adapters (rank 8, alpha 16 on
  ``q_proj`` and ``v_proj``), one seed by default.

``--steps``, ``--batch``, ``--width``, ``--layers``, ``--lr``, ``--n-eval``, ``--seeds`` and
``--split-isolated/--no-split-isolated`` override the chosen size; the JSON records the size used. Seeds
run ``--workers`` (default 2) at a time, one process and one torch thread each.

Sizing (``--sizing``): the multi-task arm alone, scored at ``--checkpoints`` on *validation* samples drawn
like the held-out ones from another seed (``VALIDATION_SEED``; the test samples, ``TEST_SEED``, are never
scored there); each point is appended to ``--json`` and ``--choose`` applies the rule of :func:`choose`.

The JSON records per arm the optimizer steps, the training samples, the non-padding tokens and the answer
(scored) tokens actually consumed, summed over the arm's models.

All models are scored on the same held-out samples: generated graphs larger than in training (8-10 nodes
against 4-7) and networkx's real graphs (karate club and Florentine families for connectivity and cycles,
Davis's southern women for bipartite matching). The generated connectivity and cycle samples alternate Yes and
No (``BALANCED``): drawn freely, most larger random graphs answer Yes, and always saying Yes scores up to
100 %. Exact match per task (connectivity, cycle, shortest path,
matching, neighbours, consistency, extraction) and edge micro-F1 for extraction, from greedy generation.

Targets (fixed before any run; the paper's claim is that interleaving beats isolated and naive multi-task
training): interleaved at least 3 points above naive multi-task in mean exact match over the six QA tasks,
and not below isolated on any task (worst per-task difference >= 0), both as means over seeds.

    python -m benchmarks.g_substrate --quick --json outputs/g_substrate_quick.json
    python -m benchmarks.g_substrate --json benchmarks/results/g_substrate.json
    python -m benchmarks.g_substrate --full --json benchmarks/results/g_substrate_smollm2.json
    python -m benchmarks.g_substrate --sizing --steps 600 --checkpoints 150,300,450,600 --n-eval 16 \
        --json benchmarks/results/g_substrate_sizing.json
    python -m benchmarks.g_substrate --choose --json benchmarks/results/g_substrate_sizing.json
"""

from __future__ import annotations

import argparse
import fcntl
import json
import math
import multiprocessing
import random
import statistics
import tempfile
import time
import warnings
from collections.abc import Callable, Mapping
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import torch
from lightning.pytorch import Callback, Trainer, seed_everything
from torch import nn

from benchmarks._common import (
    benchmark_parser,
    check_poolable,
    markdown_table,
    print_targets,
    target,
    worst,
    write_json,
)
from lightning_icml26.data.graph_substrate import (
    GraphSubstrateDataModule,
    GraphTask,
    RoleTaskGenerator,
    real_graphs,
    sample_graph,
)
from lightning_icml26.data.graph_substrate.mixtures import make_task, task_kind
from lightning_icml26.llm import ByteTokenizer, smollm2
from lightning_icml26.modules import SubstrateSFTModule, evaluate_graph_tasks, tiny_byte_llama

TASKS = ["connectivity", "cycle", "shortest_path", "matching", "neighbors", "consistency", "extraction"]
QA_TASKS = TASKS[:-1]
RATIOS = {"algorithm": 0.6, "consistency": 0.2, "extraction": 0.2}
ALGO = [t for t in TASKS if t not in ("consistency", "extraction")]
SMOLLM2_LORA = {"r": 8, "lora_alpha": 16, "target_modules": ["q_proj", "v_proj"]}

ModelFactory = Callable[[int], tuple[nn.Module, Any, Mapping[str, Any] | None]]
"""``seed -> (causal LM, tokenizer, LoRA keyword arguments or None)``: a fresh model for every training run."""


@dataclass(frozen=True)
class Size:
    """One benchmark size: model, step budget and evaluation budget."""

    model: str  # "byte_llama" or "smollm2"
    steps: int
    batch: int
    n_eval: int
    seeds: int
    lr: float
    split_isolated: bool  # isolated models share the step budget (True) or each get all of it (False)
    width: int = 64  # byte Llama only
    num_layers: int = 2  # byte Llama only
    new_tokens_qa: int = 12
    new_tokens_extraction: int = 280
    max_length: int = 2048  # training samples longer than this raise (none at these graph sizes)


SIZES = {
    "quick": Size("byte_llama", steps=30, batch=8, n_eval=6, seeds=2, lr=2e-3, split_isolated=True),
    # chosen by the sizing study on validation samples (benchmarks/results/g_substrate_sizing.json): no candidate
    # was above chance, so the fallback rule took the best validation mean exact match within the budget
    "default": Size(
        "byte_llama", steps=300, batch=8, n_eval=16, seeds=3, lr=2e-3, split_isolated=True, width=64, num_layers=2
    ),
    "full": Size(
        "smollm2",
        steps=32,
        batch=4,
        n_eval=6,
        seeds=1,
        lr=1e-3,
        split_isolated=True,
        new_tokens_qa=16,
        new_tokens_extraction=160,
    ),  # fmt: skip
}


def model_factory(size: Size) -> ModelFactory:
    """Fresh model, tokenizer and LoRA settings for ``size.model``."""
    if size.model == "smollm2":

        def make_smollm2(seed: int) -> tuple[nn.Module, Any, Mapping[str, Any] | None]:
            torch.manual_seed(seed)  # the LoRA initialisation
            lm = smollm2()
            return lm.model, lm.tokenizer, SMOLLM2_LORA

        return make_smollm2

    def make_byte_llama(seed: int) -> tuple[nn.Module, Any, Mapping[str, Any] | None]:
        model = tiny_byte_llama(
            seed=seed, hidden_size=size.width, num_layers=size.num_layers, num_heads=4, max_positions=4096
        )
        return model, ByteTokenizer(), None

    return make_byte_llama


def isolated_steps(steps: int, tasks: list[str], ratios: Mapping[str, float]) -> dict[str, int]:
    """Optimizer steps of each isolated model when the arm shares ``steps``: each task's share of the mixture.

    A task's share is its role's ratio, split evenly over the tasks of that role; the steps are rounded by
    largest remainders, so they sum to ``steps``; every task gets at least one step.
    """
    role = {t: {"consistency": "consistency", "extraction": "extraction"}.get(t, "algorithm") for t in tasks}
    per_role = {r: sum(1 for t in tasks if role[t] == r) for r in set(role.values())}
    raw = {t: steps * ratios[role[t]] / per_role[role[t]] for t in tasks}
    out = {t: max(1, math.floor(v)) for t, v in raw.items()}
    for t in sorted(tasks, key=lambda t: (out[t] - raw[t], tasks.index(t)))[: max(0, steps - sum(out.values()))]:
        out[t] += 1
    return out


class TokenCounter(Callback):
    """Counts the optimizer's training batches: samples, non-padding tokens and answer (scored) tokens."""

    def __init__(self) -> None:
        self.samples = self.tokens = self.answer_tokens = 0

    def on_train_batch_start(self, trainer: Trainer, pl_module: Any, batch: Any, batch_idx: int) -> None:
        self.samples += int(batch["input_ids"].shape[0])
        self.tokens += int(batch["attention_mask"].sum())
        self.answer_tokens += int((batch["labels"][:, 1:] != -100).sum())


BALANCED = ("connectivity", "cycle")
"""Yes/no tasks whose held-out samples alternate Yes and No: most larger random graphs answer Yes."""


def held_out(n_per_task: int, seed: int) -> tuple[list[GraphTask], list[GraphTask]]:
    """Generated larger graphs (every task) and real-graph samples, the same for every regime and seed.

    For the tasks in ``BALANCED`` the i-th sample's answer is Yes for even i and No for odd i: a graph drawn
    with the wrong answer is redrawn from a side stream (``Random(f"{seed}-{task}-{i}")``, its own generator),
    so the main stream and every other task's samples do not depend on the redraws.
    """
    rng = random.Random(seed)
    gen = RoleTaskGenerator(seed=seed)
    generated = []
    for task in TASKS:
        for i in range(n_per_task):
            kind = task_kind(task) if task in ALGO else rng.choice([task_kind(t) for t in ALGO])
            sample = make_task(gen, task, _nonempty_graph(kind, rng), kind)
            if task in BALANCED:
                want = "Yes" if i % 2 == 0 else "No"
                side = random.Random(f"{seed}-{task}-{i}")
                side_gen = RoleTaskGenerator(seed=side.randrange(2**31))
                for _ in range(100_000):
                    if sample.target == want:
                        break
                    sample = make_task(side_gen, task, _nonempty_graph(kind, side), kind)
                else:
                    raise RuntimeError(f"no held-out {task} graph with answer {want} in 100000 draws")
            generated.append(sample)
    real = []
    graphs = real_graphs()
    for name in ("karate", "florentine"):
        kind, graph = graphs[name]
        real += [gen.nlgraph(graph, kind, "connectivity") for _ in range(3)] + [gen.nlgraph(graph, kind, "cycle")]
    kind, davis = graphs["davis"]
    real.append(gen.nlgraph(davis, kind, "matching"))
    return generated, real


def train(
    make_model: ModelFactory,
    mixture: str,
    tasks: list[str],
    ratios: dict[str, float],
    steps: int,
    size: Size,
    seed: int,
    callbacks: tuple[Callback, ...] = (),
) -> tuple[SubstrateSFTModule, dict[str, float]]:
    """Train a fresh model for exactly ``steps`` optimizer steps of ``size.batch`` samples; return it and its counts."""
    batch, lr = size.batch, size.lr
    seed_everything(seed, verbose=False)
    model, tok, lora = make_model(seed)
    dm = GraphSubstrateDataModule(
        tok, mixture, tasks, ratios, num_train=steps * batch, num_val=1, num_nodes=(4, 7), edge_prob=0.35,
        max_length=size.max_length, over_cutoff="error", batch_size=batch, seed=seed,
        kinds=[task_kind(t) for t in ALGO],
    )  # fmt: skip
    counter = TokenCounter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dm.setup()
        module = SubstrateSFTModule(
            model, tok, optimizer=lambda p: torch.optim.AdamW(p, lr=lr, weight_decay=0.0), lora=lora
        )
        trainer = Trainer(
            max_steps=steps, max_epochs=1, logger=False, enable_checkpointing=False, enable_progress_bar=False,
            enable_model_summary=False, accelerator="cpu", limit_val_batches=0, gradient_clip_val=1.0,
            callbacks=[counter, *callbacks],
        )  # fmt: skip
        trainer.fit(module, dm)
    if trainer.global_step != steps:
        raise RuntimeError(f"{mixture} run made {trainer.global_step} optimizer steps, expected {steps}")
    info: dict[str, float] = {"steps": trainer.global_step, "samples": counter.samples, "tokens": counter.tokens}
    return module, info | {"answer_tokens": counter.answer_tokens}


def score(module: SubstrateSFTModule, tasks: list[GraphTask], size: Size) -> dict[str, float]:
    """Greedy-generation scores of ``module`` on ``tasks`` (exact match per task, extraction edge F1)."""
    qa = [t for t in tasks if t.task != "extraction"]
    ext = [t for t in tasks if t.task == "extraction"]
    out: dict[str, float] = {}
    module.model.eval()
    if qa:
        out |= evaluate_graph_tasks(module.language_model(batch_size=8), qa, max_new_tokens=size.new_tokens_qa)
    if ext:
        lm = module.language_model(batch_size=8)
        out |= evaluate_graph_tasks(lm, ext, max_new_tokens=size.new_tokens_extraction)
    out.pop("mean_exact_match", None)
    return out


def _nonempty_graph(kind: str, rng: random.Random) -> Any:
    """A random held-out graph of ``kind`` with 8-10 nodes and at least one edge."""
    while True:
        graph = sample_graph(kind, rng.randint(8, 10), 0.3, rng)
        if graph.number_of_edges():
            return graph


COUNTS = ("steps", "samples", "tokens", "answer_tokens")

TEST_SEED = 10_000
"""Seed of the held-out test samples (:func:`held_out`): the benchmark's scores, never used to choose anything."""
VALIDATION_SEED = 20_000
"""Seed of the validation samples, drawn like the test samples but different: the sizing study scores on these."""
BUDGET_MIN = 45.0
"""Wall-clock budget, in minutes, of the full three-arm run (at least two seeds) that the sizing rule allows."""
ABOVE_CHANCE = 0.10
"""Margin over the majority-answer rate that counts as clearly above chance on a QA task."""


def validation_set(n_per_task: int) -> list[GraphTask]:
    """Generated validation samples: as :func:`held_out`'s generated ones, from ``VALIDATION_SEED``."""
    return held_out(n_per_task, seed=VALIDATION_SEED)[0]


def chance(tasks: list[GraphTask]) -> dict[str, float]:
    """Majority-answer rate per QA task: the exact match of always giving that task's most frequent target."""
    out = {}
    for name in QA_TASKS:
        targets = [t.target.strip().lower() for t in tasks if t.task == name]
        out[name] = max(targets.count(x) for x in set(targets)) / len(targets)
    return out


class Curve(Callback):
    """Scores the model on ``tasks`` at the given optimizer steps; training time excludes the scoring."""

    def __init__(self, points: list[int], tasks: list[GraphTask], size: Size) -> None:
        self.points, self.tasks, self.size = set(points), tasks, size
        self.records: list[dict[str, float]] = []
        self.eval_s = 0.0
        self.start = time.time()

    def on_train_batch_end(self, trainer: Trainer, pl_module: Any, outputs: Any, batch: Any, batch_idx: int) -> None:
        step = trainer.global_step
        if step not in self.points:
            return
        train_s = time.time() - self.start - self.eval_s
        t0 = time.time()
        scores = score(pl_module, self.tasks, self.size)
        pl_module.model.train()
        eval_s = time.time() - t0
        self.eval_s += eval_s
        scores["mean_em"] = statistics.fmean(scores[t] for t in QA_TASKS)
        self.records.append({"step": step, "s_per_step": train_s / step, "eval_s": eval_s, **scores})
        print(f"  step {step}: {self.records[-1]}", flush=True)


def choose(candidates: list[dict[str, Any]], budget_min: float = BUDGET_MIN, workers: int = 2) -> dict[str, Any] | None:
    """The sizing rule: the cheapest candidate above chance on most QA tasks whose full run fits the budget.

    A candidate is one (width, layers, lr, steps) point of a learning curve with its validation scores. Its full
    run is projected (``projected_min_per_seed``) as three arms, each ``steps`` times the measured seconds per
    step plus the measured scoring time scaled to the full run's held-out samples. Above chance: validation
    exact match at least ``ABOVE_CHANCE`` over the majority-answer rate on at least four of the six QA tasks.
    Seeds run ``workers`` at a time (the sizing runs measured their speed two at a time, so ``workers=2``
    matches the measurement); the candidate must fit two seeds in ``budget_min`` and gets three when they fit.

    Returns:
        The chosen candidate with ``seeds`` added, or ``None`` when none qualifies.
    """

    def wall(c: dict[str, Any], seeds: int) -> float:
        return math.ceil(seeds / workers) * c["projected_min_per_seed"]

    fit = [c for c in candidates if c["tasks_above_chance"] >= 4 and wall(c, 2) <= budget_min]
    if not fit:
        return None
    best = min(fit, key=lambda c: (c["projected_min_per_seed"], c["steps"]))
    return best | {"seeds": 3 if wall(best, 3) <= budget_min else 2}


def fallback(candidates: list[dict[str, Any]], budget_min: float = BUDGET_MIN, workers: int = 2) -> dict[str, Any]:
    """When :func:`choose` finds nothing: the candidate with the best validation mean exact match among those
    whose two-seed run fits the budget (three seeds when they fit too), so the benchmark runs at the size that
    learns most within the time; ties go to the cheaper one.

    Raises:
        ValueError: no candidate fits the budget even with two seeds.
    """
    fit = [c for c in candidates if math.ceil(2 / workers) * c["projected_min_per_seed"] <= budget_min]
    if not fit:
        raise ValueError(f"no sizing candidate fits two seeds in budget_min={budget_min}")
    best = max(fit, key=lambda c: (c["mean_em"], -c["projected_min_per_seed"]))
    return best | {"seeds": 3 if math.ceil(3 / workers) * best["projected_min_per_seed"] <= budget_min else 2}


def rechoose(path: Path) -> None:
    """Apply :func:`choose` (or :func:`fallback`) to the candidates stored at ``path`` (``--choose``; no training)."""
    record = json.loads(path.read_text())
    figures = record["figures"]
    figures["rule"] = choose.__doc__
    figures["chosen"] = choose(figures["candidates"])
    if figures["chosen"] is None:
        figures["fallback_rule"] = fallback.__doc__
        figures["fallback"] = fallback(figures["candidates"])
    path.write_text(json.dumps(record, indent=2))
    print(json.dumps({k: figures.get(k) for k in ("chosen", "fallback")}, indent=1))


def sizing(size: Size, seed: int, points: list[int], path: Path | None) -> None:
    """Sizing study: train the multi-task arm at ``size`` and score it on the validation set at ``points``.

    Each point is appended to the JSON at ``path`` (shared by several sizing runs, under a file lock), which
    then holds every candidate so far and the one :func:`choose` picks.
    """
    val = validation_set(size.n_eval)
    base = chance(val)
    curve = Curve(points, val, size)
    train(model_factory(size), "multitask", TASKS, RATIOS, size.steps, size, seed, callbacks=(curve,))
    n_full = SIZES["default"].n_eval
    n_real = len(held_out(1, seed=VALIDATION_SEED)[1])
    new = []
    for rec in curve.records:
        above = sum(rec[t] >= base[t] + ABOVE_CHANCE for t in QA_TASKS)
        # the full run scores n_full generated samples per task and the real graphs' samples
        arm_s = rec["step"] * rec["s_per_step"] + rec["eval_s"] * (len(TASKS) * n_full + n_real) / len(val)
        new.append({
            "width": size.width, "layers": size.num_layers, "lr": size.lr, "batch": size.batch, "steps": rec["step"],
            "seed": seed, "n_val_per_task": size.n_eval, "tasks_above_chance": above,
            "projected_min_per_seed": 3 * arm_s / 60, **rec,
        })  # fmt: skip
    if path is None:
        print(json.dumps({"chance": base, "candidates": new, "chosen": choose(new)}, indent=1))
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(Path(tempfile.gettempdir()) / f"{path.name}.lock", "w") as lock:  # outside the repository
        fcntl.flock(lock, fcntl.LOCK_EX)
        old = json.loads(path.read_text())["figures"]["candidates"] if path.exists() else []
        candidates = old + new
        record = {
            "benchmark": "g_substrate_sizing",
            "time": time.strftime("%Y-%m-%d %H:%M:%S"),
            "figures": {
                "validation_seed": VALIDATION_SEED, "test_seed_never_scored": TEST_SEED, "chance": base,
                "rule": choose.__doc__, "budget_min": BUDGET_MIN, "above_chance_margin": ABOVE_CHANCE,
                "candidates": candidates, "chosen": choose(candidates),
            },
        }  # fmt: skip
        path.write_text(json.dumps(record, indent=2))
    print(json.dumps(record["figures"]["chosen"], indent=1))


def run_seed(size: Size, seed: int, generated: list[GraphTask], real: list[GraphTask]) -> dict[str, dict[str, float]]:
    """The three arms for one seed: scores and training counts (summed over the isolated arm's models)."""
    make_model = model_factory(size)
    result: dict[str, dict[str, float]] = {}
    start = time.time()
    for regime in ("multitask", "interleaved"):
        module, info = train(make_model, regime, TASKS, RATIOS, size.steps, size, seed)
        result[regime] = score(module, generated, size) | {f"real_{k}": v for k, v in score(module, real, size).items()}
        result[regime] |= info | {"models": 1}
        print(f"  {regime}: {result[regime]}, {time.time() - start:.0f} s", flush=True)
    iso: dict[str, float] = dict.fromkeys(COUNTS, 0.0) | {"models": float(len(TASKS))}
    budget = isolated_steps(size.steps, TASKS, RATIOS) if size.split_isolated else dict.fromkeys(TASKS, size.steps)
    for task in TASKS:
        role = {"consistency": "consistency", "extraction": "extraction"}.get(task, "algorithm")
        ratios = {r: float(r == role) for r in RATIOS}
        module, info = train(make_model, "isolated", [task], ratios, budget[task], size, seed)
        iso |= score(module, [t for t in generated if t.task == task], size)
        for key in COUNTS:
            iso[key] += info[key]
        mine_real = [t for t in real if t.task == task]
        if mine_real:
            iso |= {f"real_{k}": v for k, v in score(module, mine_real, size).items()}
        print(f"  isolated {task}: {info}, {time.time() - start:.0f} s; so far {iso}", flush=True)
    result["isolated"] = iso
    for res in result.values():
        res["mean_em"] = statistics.fmean(res[t] for t in QA_TASKS)
    return result


def build_parser() -> argparse.ArgumentParser:
    """The benchmark's flags: a size (``--quick``, default, ``--full``), overrides of it, and ``--sizing``."""
    parser = benchmark_parser(__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=None)
    parser.add_argument("--full", action="store_true", help="SmolLM2-135M-Instruct with LoRA, one seed (about 30 min)")
    parser.add_argument("--steps", type=int, default=None, help="optimizer steps per arm")
    parser.add_argument("--batch", type=int, default=None, help="samples per optimizer step")
    parser.add_argument("--width", type=int, default=None, help="byte Llama hidden size (a multiple of 4)")
    parser.add_argument("--layers", type=int, default=None, help="byte Llama decoder layers")
    parser.add_argument("--lr", type=float, default=None, help="AdamW learning rate")
    parser.add_argument("--n-eval", type=int, default=None, help="held-out generated samples per task")
    parser.add_argument(
        "--split-isolated", action=argparse.BooleanOptionalAction, default=None,
        help="the isolated models share the step budget (default of every size) or each get all of it",
    )  # fmt: skip
    parser.add_argument("--choose", action="store_true", help="apply the sizing rule to the sizing JSON at --json")
    parser.add_argument(
        "--combine", type=Path, nargs="+", default=None, metavar="JSON",
        help="pool the seeds of earlier runs with the same settings into --json (means, spreads, targets)",
    )  # fmt: skip
    parser.add_argument(
        "--workers", type=int, default=2, help="seeds trained at once, one process (and one torch thread) each"
    )
    parser.add_argument(
        "--sizing", action="store_true",
        help="sizing study: the multi-task arm only, scored on the validation samples at --checkpoints",
    )  # fmt: skip
    parser.add_argument(
        "--checkpoints", type=str, default=None, metavar="S1,S2,...",
        help="--sizing: optimizer steps at which the model is scored (default: --steps only)",
    )  # fmt: skip
    return parser


_POSITIVE_INT = {"steps": "--steps", "batch": "--batch", "width": "--width", "layers": "--layers"}


def chosen_size(args: argparse.Namespace) -> Size:
    """The size named by ``--quick`` / ``--full`` (default otherwise) with the override flags applied.

    Raises:
        ValueError: exclusive or out-of-range flags, naming the flag, its value and what is allowed.
    """
    if args.full and args.quick:
        raise ValueError("--full and --quick are exclusive; give one of them")
    size = SIZES["full" if args.full else "quick" if args.quick else "default"]
    for key, flag in _POSITIVE_INT.items():
        value = getattr(args, key)
        if value is not None and value < 1:
            raise ValueError(f"{flag}={value} is not allowed; give a positive integer")
    if args.n_eval is not None and args.n_eval < 1:
        raise ValueError(f"--n-eval={args.n_eval} is not allowed; give a positive integer")
    if args.seeds is not None and args.seeds < 1:
        raise ValueError(f"--seeds={args.seeds} is not allowed; give a positive integer")
    if args.width is not None and args.width % 4:
        raise ValueError(f"--width={args.width} is not allowed; give a multiple of 4 (the model has 4 heads)")
    if args.lr is not None and not (math.isfinite(args.lr) and args.lr > 0):
        raise ValueError(f"--lr={args.lr} is not allowed; give a positive finite learning rate")
    if size.model == "smollm2" and (args.width is not None or args.layers is not None):
        raise ValueError("--width and --layers size the byte Llama; they are not allowed with --full")
    overrides = {
        "steps": args.steps, "batch": args.batch, "width": args.width, "num_layers": args.layers, "lr": args.lr,
        "n_eval": args.n_eval, "split_isolated": args.split_isolated, "seeds": args.seeds,
    }  # fmt: skip
    return replace(size, **{k: v for k, v in overrides.items() if v is not None})


def checkpoints(text: str | None, steps: int) -> list[int]:
    """``--checkpoints``: increasing optimizer steps in ``1..steps``; ``[steps]`` when not given.

    Raises:
        ValueError: not a comma-separated list of increasing integers in ``1..steps``.
    """
    if text is None:
        return [steps]
    try:
        points = [int(p) for p in text.split(",")]
    except ValueError:
        raise ValueError(f"--checkpoints={text!r} is not allowed; give comma-separated integers") from None
    if points != sorted(set(points)) or points[0] < 1 or points[-1] > steps:
        raise ValueError(f"--checkpoints={text!r} is not allowed; give increasing steps in 1..{steps} (--steps)")
    return points


def main() -> None:
    args = build_parser().parse_args()
    size = chosen_size(args)
    torch.set_num_threads(1)
    if args.choose:
        if args.json is None:
            raise ValueError("--choose needs --json PATH, the sizing study to read")
        rechoose(args.json)
        return
    if args.sizing:
        sizing(size, args.seed, checkpoints(args.checkpoints, size.steps), args.json)
        return
    if args.combine is not None:
        if args.json is None:
            raise ValueError("--combine needs --json PATH, where the pooled record is written")
        records = [(str(path), json.loads(path.read_text())) for path in args.combine]
        per_seed, seeds, settings = combine_records(records)
        rows = [
            {"seed": seed, "regime": regime, **{k: res.get(k, float("nan")) for k in _COLUMNS}}
            for seed, result in zip(seeds, per_seed, strict=True)
            for regime, res in result.items()
        ]
        report(per_seed, rows, settings, args, final=True)
        return
    if args.checkpoints is not None:
        raise ValueError(f"--checkpoints={args.checkpoints!r} is only allowed with --sizing")
    if args.workers < 1:
        raise ValueError(f"--workers={args.workers} is not allowed; give a positive integer")
    seeds = size.seeds
    generated, real = held_out(size.n_eval, seed=TEST_SEED)
    rows: list[dict] = []
    done: dict[int, dict] = {}
    start = time.time()
    # seeds run in up to --workers processes (one torch thread each); the JSON is written after every seed, so a
    # run stopped by a time limit keeps the seeds it finished
    with ProcessPoolExecutor(args.workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        jobs = {
            pool.submit(_run_seed_1thread, size, args.seed + s, generated, real): args.seed + s for s in range(seeds)
        }
        for job in as_completed(jobs):
            seed = jobs[job]
            result = done[seed] = job.result()
            for regime, res in result.items():
                rows.append({"seed": seed, "regime": regime, **{k: res.get(k, float("nan")) for k in _COLUMNS}})
            print(f"seed {seed} done after {time.time() - start:.0f} s", flush=True)
            settings = asdict(size) | {
                "seeds_planned": seeds, "seeds_done": sorted(done), "held_out_seed": TEST_SEED, "workers": args.workers,
            }  # fmt: skip
            if size.model == "smollm2":
                settings["lora"] = SMOLLM2_LORA
            if size.split_isolated:
                settings["isolated_steps"] = isolated_steps(size.steps, TASKS, RATIOS)
            rows.sort(key=lambda r: r["seed"])
            report([done[k] for k in sorted(done)], rows, settings, args, final=len(done) == seeds)


def _run_seed_1thread(
    size: Size, seed: int, generated: list[GraphTask], real: list[GraphTask]
) -> dict[str, dict[str, float]]:
    """:func:`run_seed` in a worker process, with one torch thread as in the main process."""
    torch.set_num_threads(1)
    return run_seed(size, seed, generated, real)


# settings that may differ between runs pooled by ``--combine``: which seeds ran, and how many processes ran them
_POOLABLE = ("seeds", "seeds_planned", "seeds_done", "workers", "combined_from")


def combine_records(records: list[tuple[str, dict[str, Any]]]) -> tuple[list[dict], list[int], dict[str, Any]]:
    """Pool the per-seed results of several runs of this benchmark made with the same settings.

    Args:
        records: ``(name, record)`` pairs, a record being a JSON written by this script (``figures.settings``,
            ``figures.per_seed`` in the order of ``settings.seeds_done``).

    Returns:
        The per-seed results sorted by seed, the seeds, and the settings of the pooled run (``seeds_done`` all
        seeds, ``combined_from`` the names).

    Raises:
        ValueError: no record, a record of another benchmark, settings that differ (naming the record and the
            setting), or a seed present twice (naming both records).

    Example:
        >>> rec = lambda seeds: {"benchmark": "g_substrate", "figures": {"settings": {"steps": 8, "seeds_done": seeds},
        ...     "per_seed": [{"multitask": {"mean_em": s / 10}} for s in seeds]}}
        >>> per_seed, seeds, settings = combine_records([("a", rec([1])), ("b", rec([0, 2]))])
        >>> seeds, [r["multitask"]["mean_em"] for r in per_seed], settings["combined_from"]
        ([0, 1, 2], [0.0, 0.1, 0.2], ['a', 'b'])
    """
    if not records:
        raise ValueError("--combine needs at least one JSON record")
    reference = check_poolable(records, "g_substrate", "settings", "seeds_done", ignore=_POOLABLE)
    pooled: dict[int, dict] = {}
    for name, record in records:
        figures = record["figures"]
        seeds = figures["settings"]["seeds_done"]
        if len(seeds) != len(figures["per_seed"]):
            raise ValueError(f"{name} lists {len(seeds)} seeds but holds {len(figures['per_seed'])} results")
        pooled |= dict(zip(seeds, figures["per_seed"], strict=True))
    order = sorted(pooled)
    settings = reference | {
        "seeds_planned": len(order), "seeds_done": order, "combined_from": [name for name, _ in records],
    }  # fmt: skip
    return [pooled[seed] for seed in order], order, settings


def paired_difference(per_seed: list[dict], a: str, b: str, key: str = "mean_em") -> dict[str, Any]:
    """Per-seed ``100 x (a - b)`` of ``key`` (points), its mean and standard error over seeds (0 for one seed).

    Example:
        >>> paired_difference([{"x": {"mean_em": 0.5}, "y": {"mean_em": 0.4}},
        ...                    {"x": {"mean_em": 0.3}, "y": {"mean_em": 0.4}}], "x", "y")
        {'per_seed': [10.0, -10.0], 'mean': 0.0, 'sem': 10.0}
    """
    diffs = [round(100 * (r[a][key] - r[b][key]), 10) for r in per_seed]
    sem = statistics.stdev(diffs) / len(diffs) ** 0.5 if len(diffs) > 1 else 0.0
    return {"per_seed": diffs, "mean": statistics.fmean(diffs), "sem": sem}


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
        "paired": {
            "interleaved_minus_multitask_points": paired_difference(per_seed, "interleaved", "multitask"),
            "interleaved_minus_isolated_points": paired_difference(per_seed, "interleaved", "isolated"),
        },
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
                if key in COUNTS
                else f"{100 * mean(regime, key):.1f} ± {100 * spread(regime, key):.1f}"
            )
        summary.append(row)
    print(markdown_table(rows, ["seed", "regime", *_COLUMNS]))
    print("\nMean ± std over seeds (percent; steps, samples, tokens: training totals of the arm):")
    print(markdown_table(summary, ["regime", *_COLUMNS]))
    paired = figures["paired"]["interleaved_minus_multitask_points"]
    print(
        f"\ninterleaved - multi-task mean EM per seed: {paired['per_seed']} points; mean {paired['mean']:.1f} "
        f"+- {paired['sem']:.1f} (standard error over {len(per_seed)} seeds)"
    )
    print_targets(targets)


_COLUMNS = [*TASKS, "extraction_edge_f1", "mean_em", "real_connectivity", "real_cycle", "real_matching", *COUNTS]

if __name__ == "__main__":
    main()
