"""G-Substrate: interleaved role-based SFT against task-isolated and naive multi-task SFT of the same model.

Three regimes train the same causal LM with the same optimizer, batch size and number of optimizer steps:

* ``isolated``: one model per task, trained on that task only (seven models); with ``split_isolated`` the model
  of a task gets that task's share of the mixture's steps (:func:`isolated_steps`), otherwise all the steps;
* ``multitask``: one model on all tasks, every sample on a graph of its own;
* ``interleaved``: one model on the same task counts, where each algorithm sample's graph is re-used for a
  consistency and an extraction sample.

Training graphs have 4-7 nodes. Every model is scored by greedy generation on the same held-out samples
(:func:`g_substrate_held_out`): generated graphs of 8-10 nodes, and networkx's real graphs. The model is a
random-weight byte Llama (``tiny_byte_llama``) or SmolLM2-135M-Instruct with LoRA (``model="smollm2"``).
"""

from __future__ import annotations

import math
import random
import statistics
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import torch
from lightning.pytorch import Callback, LightningModule, Trainer, seed_everything
from torch import nn

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
from lightning_icml26.tasks._config import TaskConfig

__all__ = [
    "G_SUBSTRATE_QA_TASKS",
    "G_SUBSTRATE_RATIOS",
    "G_SUBSTRATE_TASKS",
    "GSubstrateConfig",
    "g_substrate_held_out",
    "g_substrate_task",
    "isolated_steps",
]

G_SUBSTRATE_TASKS = ("connectivity", "cycle", "shortest_path", "matching", "neighbors", "consistency", "extraction")
G_SUBSTRATE_QA_TASKS = G_SUBSTRATE_TASKS[:-1]
G_SUBSTRATE_RATIOS = {"algorithm": 0.6, "consistency": 0.2, "extraction": 0.2}
_ALGO = [t for t in G_SUBSTRATE_TASKS if t not in ("consistency", "extraction")]
_BALANCED = ("connectivity", "cycle")  # held-out Yes/No tasks alternate Yes and No
SMOLLM2_LORA = {"r": 8, "lora_alpha": 16, "target_modules": ["q_proj", "v_proj"]}
TEST_SEED = 10_000
COUNTS = ("steps", "samples", "tokens", "answer_tokens")


@dataclass(frozen=True)
class GSubstrateConfig(TaskConfig):
    """Settings of :func:`g_substrate_task`: the model, the step budget, the evaluation budget, one seed.

    Example:
        >>> GSubstrateConfig(steps=0)
        Traceback (most recent call last):
        ...
        ValueError: steps must be a positive integer, got 0
    """

    model: str = "byte_llama"
    steps: int = 300
    batch: int = 8
    n_eval: int = 16
    lr: float = 2e-3
    split_isolated: bool = True
    width: int = 64
    num_layers: int = 2
    new_tokens_qa: int = 12
    new_tokens_extraction: int = 280
    max_length: int = 2048
    seed: int = 0
    real: bool = True

    def __post_init__(self) -> None:
        if self.model not in ("byte_llama", "smollm2"):
            raise ValueError(f"model must be 'byte_llama' or 'smollm2', got {self.model!r}")
        for name in ("steps", "batch", "n_eval", "num_layers", "new_tokens_qa", "new_tokens_extraction"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be a positive integer, got {getattr(self, name)}")
        if self.width < 4 or self.width % 4:
            raise ValueError(f"width must be a positive multiple of 4 (the model has 4 heads), got {self.width}")
        if not (math.isfinite(self.lr) and self.lr > 0):
            raise ValueError(f"lr must be a positive finite learning rate, got {self.lr}")

    def run(self) -> dict[str, Any]:
        """Run :func:`g_substrate_task` with these settings."""
        return g_substrate_task(self)


def isolated_steps(steps: int, tasks: tuple[str, ...] | list[str], ratios: Mapping[str, float]) -> dict[str, int]:
    """Optimizer steps of each isolated model when the arm shares ``steps``: each task's share of the mixture.

    A task's share is its role's ratio, split evenly over the tasks of that role; the steps are rounded by
    largest remainders, so they sum to ``steps``; every task gets at least one step.

    Example:
        >>> isolated_steps(50, G_SUBSTRATE_TASKS, G_SUBSTRATE_RATIOS)["extraction"]
        10
    """
    tasks = list(tasks)
    role = {t: {"consistency": "consistency", "extraction": "extraction"}.get(t, "algorithm") for t in tasks}
    per_role = {r: sum(1 for t in tasks if role[t] == r) for r in set(role.values())}
    raw = {t: steps * ratios[role[t]] / per_role[role[t]] for t in tasks}
    out = {t: max(1, math.floor(v)) for t, v in raw.items()}
    for t in sorted(tasks, key=lambda t: (out[t] - raw[t], tasks.index(t)))[: max(0, steps - sum(out.values()))]:
        out[t] += 1
    return out


def _nonempty_graph(kind: str, rng: random.Random) -> Any:
    while True:
        graph = sample_graph(kind, rng.randint(8, 10), 0.3, rng)
        if graph.number_of_edges():
            return graph


def _held_out_sample(gen: RoleTaskGenerator, rng: random.Random, task: str, i: int, seed: int) -> GraphTask:
    """The i-th held-out sample of ``task``; a Yes/No task alternates answers, redrawing from a side stream."""
    kind = task_kind(task) if task in _ALGO else rng.choice([task_kind(t) for t in _ALGO])
    sample = make_task(gen, task, _nonempty_graph(kind, rng), kind)
    if task not in _BALANCED:
        return sample
    want = "Yes" if i % 2 == 0 else "No"
    side = random.Random(f"{seed}-{task}-{i}")
    side_gen = RoleTaskGenerator(seed=side.randrange(2**31))
    for _ in range(100_000):
        if sample.target == want:
            return sample
        sample = make_task(side_gen, task, _nonempty_graph(kind, side), kind)
    raise RuntimeError(f"no held-out {task} graph with answer {want} in 100000 draws")


def g_substrate_held_out(n_per_task: int, seed: int = TEST_SEED) -> tuple[list[GraphTask], list[GraphTask]]:
    """Generated larger graphs (every task, ``n_per_task`` each) and real-graph samples, the same for every arm.

    Example:
        >>> generated, real = g_substrate_held_out(2)
        >>> len(generated), [t.target for t in generated if t.task == "cycle"]
        (14, ['Yes', 'No'])
    """
    rng = random.Random(seed)
    gen = RoleTaskGenerator(seed=seed)
    generated = [_held_out_sample(gen, rng, task, i, seed) for task in G_SUBSTRATE_TASKS for i in range(n_per_task)]
    real = []
    graphs = real_graphs()
    for name in ("karate", "florentine"):
        kind, graph = graphs[name]
        real += [gen.nlgraph(graph, kind, "connectivity") for _ in range(3)] + [gen.nlgraph(graph, kind, "cycle")]
    kind, davis = graphs["davis"]
    real.append(gen.nlgraph(davis, kind, "matching"))
    return generated, real


class _TokenCounter(Callback):
    """Counts the optimizer's training batches: samples, non-padding tokens and answer (scored) tokens."""

    def __init__(self) -> None:
        self.samples = self.tokens = self.answer_tokens = 0

    def on_train_batch_start(self, trainer: Trainer, pl_module: LightningModule, batch: Any, batch_idx: int) -> None:
        self.samples += int(batch["input_ids"].shape[0])
        self.tokens += int(batch["attention_mask"].sum())
        self.answer_tokens += int((batch["labels"][:, 1:] != -100).sum())


def _make_model(config: GSubstrateConfig, seed: int) -> tuple[nn.Module, Any, Mapping[str, Any] | None]:
    if config.model == "smollm2":
        torch.manual_seed(seed)  # the LoRA initialisation
        lm = smollm2()
        return lm.model, lm.tokenizer, SMOLLM2_LORA
    model = tiny_byte_llama(seed=seed, hidden_size=config.width, num_layers=config.num_layers, num_heads=4,
                            max_positions=4096)  # fmt: skip
    return model, ByteTokenizer(), None


def _train(config: GSubstrateConfig, mixture: str, tasks: list[str], ratios: dict[str, float],
           steps: int) -> tuple[SubstrateSFTModule, dict[str, float]]:  # fmt: skip
    """A fresh model trained for exactly ``steps`` optimizer steps of ``config.batch`` samples, and its counts."""
    seed_everything(config.seed, verbose=False)
    model, tok, lora = _make_model(config, config.seed)
    dm = GraphSubstrateDataModule(
        tok, mixture, tasks, ratios, num_train=steps * config.batch, num_val=1, num_nodes=(4, 7), edge_prob=0.35,
        max_length=config.max_length, over_cutoff="error", batch_size=config.batch, seed=config.seed,
        kinds=[task_kind(t) for t in _ALGO],
    )  # fmt: skip
    counter = _TokenCounter()
    lr = config.lr
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dm.setup()
        module = SubstrateSFTModule(model, tok, optimizer=lambda p: torch.optim.AdamW(p, lr=lr, weight_decay=0.0),
                                    lora=lora)  # fmt: skip
        trainer = Trainer(
            max_steps=steps, max_epochs=1, logger=False, enable_checkpointing=False, enable_progress_bar=False,
            enable_model_summary=False, accelerator="cpu", limit_val_batches=0, gradient_clip_val=1.0,
            callbacks=[counter],
        )  # fmt: skip
        trainer.fit(module, dm)
    if trainer.global_step != steps:
        raise RuntimeError(f"{mixture} run made {trainer.global_step} optimizer steps, expected {steps}")
    info: dict[str, float] = {"steps": trainer.global_step, "samples": counter.samples, "tokens": counter.tokens}
    return module, info | {"answer_tokens": counter.answer_tokens}


def _score(module: SubstrateSFTModule, tasks: list[GraphTask], config: GSubstrateConfig) -> dict[str, float]:
    """Greedy-generation scores of ``module`` on ``tasks`` (exact match per task, extraction edge F1)."""
    out: dict[str, float] = {}
    module.model.eval()
    for ext, new_tokens in ((False, config.new_tokens_qa), (True, config.new_tokens_extraction)):
        mine = [t for t in tasks if (t.task == "extraction") == ext]
        if mine:
            out |= evaluate_graph_tasks(module.language_model(batch_size=8), mine, max_new_tokens=new_tokens)
    out.pop("mean_exact_match", None)
    return out


def _isolated(config: GSubstrateConfig, generated: list[GraphTask], real: list[GraphTask]) -> dict[str, float]:
    """The isolated arm: one model per task; scores per task, counts summed over the models."""
    iso: dict[str, float] = dict.fromkeys(COUNTS, 0.0) | {"models": float(len(G_SUBSTRATE_TASKS))}
    budget = (
        isolated_steps(config.steps, G_SUBSTRATE_TASKS, G_SUBSTRATE_RATIOS)
        if config.split_isolated
        else dict.fromkeys(G_SUBSTRATE_TASKS, config.steps)
    )
    for task in G_SUBSTRATE_TASKS:
        role = {"consistency": "consistency", "extraction": "extraction"}.get(task, "algorithm")
        ratios = {r: float(r == role) for r in G_SUBSTRATE_RATIOS}
        module, info = _train(config, "isolated", [task], ratios, budget[task])
        iso |= _score(module, [t for t in generated if t.task == task], config)
        for key in COUNTS:
            iso[key] += info[key]
        mine_real = [t for t in real if t.task == task]
        if mine_real:
            iso |= {f"real_{k}": v for k, v in _score(module, mine_real, config).items()}
    return iso


def g_substrate_task(config: GSubstrateConfig) -> dict[str, Any]:
    """The three arms for one seed: per arm the scores and the training counts (summed over isolated models).

    Returns:
        ``{"isolated" | "multitask" | "interleaved": {task: exact match, "extraction_edge_f1", "real_<task>",
        "steps", "samples", "tokens", "answer_tokens", "models", "mean_em"}}`` (``mean_em``: the mean exact match
        over the six QA tasks).
    """
    generated, real = g_substrate_held_out(config.n_eval)
    real = real if config.real else []
    result: dict[str, Any] = {}
    for regime in ("multitask", "interleaved"):
        module, info = _train(config, regime, list(G_SUBSTRATE_TASKS), G_SUBSTRATE_RATIOS, config.steps)
        scores = _score(module, generated, config) | {f"real_{k}": v for k, v in _score(module, real, config).items()}
        result[regime] = scores | info | {"models": 1}
    result["isolated"] = _isolated(config, generated, real)
    for res in result.values():
        res["mean_em"] = statistics.fmean(res[t] for t in G_SUBSTRATE_QA_TASKS)
    return result
