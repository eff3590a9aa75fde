"""``arm_kv_budget``: one attention kind of the ARM comparison trained with a ``Trainer``, then decoded at a KV budget.

ARM (experimental, inspired by "Attention with Routed Memory") against KV-cache baselines at an equal KV budget per
head. One :class:`~lightning_icml26.modules.ARMDecoder` architecture, the attention kind the only difference:
every kind trains on the same generated MQAR batches (short sequences, in order), then each is evaluated by
prefilling a long context and decoding the queries token by token with its own cache, so that an eviction cache
sees what it would keep in deployment. Training-free kinds come from a trained one: SnapKV and H2O evaluate full
KV's weights with an evicting cache, ARM's top-p read the fixed read's weights.

ARM trains as in the package's recipes: argmax routing in training with a slot-level balance loss,
usage-aware writes from ``usage_start`` of the run (:class:`~lightning_icml26.callbacks.UsagePenaltyScheduler`),
a linearly annealed Gumbel temperature (:class:`~lightning_icml26.callbacks.GumbelTemperatureScheduler`) and,
for the learned read, the fixed read until ``cost_start`` then a ramped read cost
(:class:`~lightning_icml26.callbacks.ReadCostScheduler` with ``fixed_read_before_cost``).
"""

from __future__ import annotations

import math
import statistics
import time
from dataclasses import dataclass
from functools import partial
from typing import Any

import lightning.pytorch as pl
import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader

from lightning_icml26.callbacks import GumbelTemperatureScheduler, ReadCostScheduler, UsagePenaltyScheduler
from lightning_icml26.data import make_recall_batch
from lightning_icml26.metrics.functional import kv_cache_bytes
from lightning_icml26.modules import ARMDecoder
from lightning_icml26.tasks._config import TaskConfig

__all__ = [
    "ARM_KV_EVALUATED",
    "ARMKVBudgetConfig",
    "arm_kv_budget_task",
    "build_kv_decoder",
    "decode_cost",
    "decode_recall",
    "train_kv_decoder",
]

#: The kinds a run trains, each with the kinds evaluated from its weights.
ARM_KV_EVALUATED: dict[str, tuple[str, ...]] = {
    "full": ("full", "snapkv", "h2o"),
    "streaming": ("streaming",),
    "gsa": ("gsa",),
    "arm_fixed": ("arm_fixed", "arm_top_p"),
    "arm_learned": ("arm_learned",),
}
_READ = {"arm_fixed": "fixed", "arm_top_p": "top_p", "arm_learned": "learned"}


@dataclass(frozen=True)
class ARMKVBudgetConfig(TaskConfig):
    """Settings of :func:`arm_kv_budget_task` (defaults: the benchmark's full size at a KV budget of 1/8).

    Args:
        kind: the trained kind, a key of :data:`ARM_KV_EVALUATED`.
        budget: key/value tokens per head while decoding; ARM keeps a quarter as its exact window.
        seq_len: test sequence length (prefill, then the queries decoded one by one).
        train_len: training sequence length (the model has no positional encoding).
        pairs: MQAR key-value pairs (and queries) per sequence.
        steps: optimizer steps (one batch each, in order).
        batch_size: sequences per step.
        n_eval: test sequences.
        d_model: decoder width.
        num_layers: decoder blocks.
        num_heads: heads per block.
        num_clusters: ARM's clusters.
        lr: AdamW's learning rate after its linear warm-up.
        warmup: warm-up steps (``LinearLR`` from ``1 / warmup`` of ``lr``).
        weight_decay: AdamW's weight decay.
        usage_penalty: ARM's usage-aware write penalty (0: none).
        usage_start: fraction of the steps routed by the keys alone.
        read_cost: learned read's cost per share of the slots read.
        cost_start: fraction of the steps on the fixed read before the learned read's cost.
        cost_ramp: fraction of the steps over which the cost ramps up.
        initial_full_read: probability with which the learned read starts on the fixed read.
        tau_start: Gumbel temperature at step 0 (linear to ``tau_min`` at the last step).
        tau_min: Gumbel temperature at the last step.
        decode_cost: also time decoding after a prefill of 1, 2 and 4 times ``seq_len`` tokens (batch 1).
        accelerator: the ``Trainer``'s accelerator.
        seed: model initialisation; the data use ``1000 * seed + 1`` (train) and ``+ 2`` (test).

    Example:
        >>> out = ARMKVBudgetConfig(kind="arm_fixed", budget=16, seq_len=64, train_len=32, pairs=4, steps=2,
        ...                         batch_size=2, n_eval=2, d_model=16, num_heads=2).run()
        >>> sorted(k for k in out if k.startswith("recall_"))
        ['recall_arm_fixed', 'recall_arm_top_p']
    """

    kind: str = "arm_fixed"
    budget: int = 64
    seq_len: int = 512
    train_len: int = 128
    pairs: int = 16
    steps: int = 3000
    batch_size: int = 32
    n_eval: int = 64
    d_model: int = 64
    num_layers: int = 1
    num_heads: int = 4
    num_clusters: int = 4
    lr: float = 3e-3
    warmup: int = 50
    weight_decay: float = 0.01
    usage_penalty: float = 32.0
    usage_start: float = 0.5
    read_cost: float = 1.5
    cost_start: float = 0.75
    cost_ramp: float = 0.1
    initial_full_read: float = 0.95
    tau_start: float = 1.0
    tau_min: float = 0.2
    decode_cost: bool = False
    accelerator: str = "cpu"
    seed: int = 0

    def __post_init__(self) -> None:
        if self.kind not in ARM_KV_EVALUATED:
            raise ValueError(f"kind must be one of {tuple(ARM_KV_EVALUATED)}, got {self.kind!r}")
        for name in ("budget", "seq_len", "train_len", "pairs", "steps", "batch_size", "n_eval", "warmup"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        if self.budget < 4 or self.budget >= self.seq_len:
            raise ValueError(f"budget must be in [4, seq_len={self.seq_len}), got {self.budget!r}")

    def run(self) -> dict[str, Any]:
        """Run :func:`arm_kv_budget_task` with these settings."""
        return arm_kv_budget_task(self)


def _attention(name: str, config: ARMKVBudgetConfig) -> tuple[str, dict[str, Any]]:
    window = config.budget // 4
    if name in _READ:
        kwargs: dict[str, Any] = {"window": window, "num_clusters": config.num_clusters, "read_policy": _READ[name]}
        kwargs |= {"budget_cost": config.read_cost, "noise_scale": 0.0, "slot_balance_weight": 1.0}
        if name == "arm_learned":
            kwargs["initial_full_read"] = config.initial_full_read
        if config.usage_penalty > 0:
            kwargs["usage_penalty"] = config.usage_penalty
        return "arm", kwargs
    extra = {"streaming": {"sinks": 4}, "snapkv": {"obs_window": min(16, window)}, "h2o": {"recent": window}}
    return name, extra.get(name, {})


def build_kv_decoder(name: str, config: ARMKVBudgetConfig) -> ARMDecoder:
    """The decoder of kind ``name`` (a trained or an evaluated kind), initialised from ``config.seed``.

    Example:
        >>> build_kv_decoder("h2o", ARMKVBudgetConfig(d_model=16, num_heads=2)).hparams.attention
        'h2o'
    """
    torch.manual_seed(config.seed)
    attention, kwargs = _attention(name, config)
    optimizer = partial(torch.optim.AdamW, lr=config.lr, weight_decay=config.weight_decay)
    warmup = partial(torch.optim.lr_scheduler.LinearLR, start_factor=1 / config.warmup, total_iters=config.warmup - 1)
    return ARMDecoder(
        d_model=config.d_model, num_layers=config.num_layers, num_heads=config.num_heads, attention=attention,
        budget=config.budget, attention_kwargs=kwargs, optimizer=optimizer, lr_scheduler=warmup, seed=config.seed,
    )  # fmt: skip


def _callbacks(name: str, config: ARMKVBudgetConfig) -> list[pl.Callback]:
    if name not in _READ:
        return []
    steps = config.steps
    out: list[pl.Callback] = [GumbelTemperatureScheduler(config.tau_start, config.tau_min, "linear", total_steps=steps)]
    if config.usage_penalty > 0:
        out.append(UsagePenaltyScheduler(start=config.usage_start, total_steps=steps))
    if name == "arm_learned":
        out.append(ReadCostScheduler(None, config.cost_start, config.cost_ramp, steps, fixed_read_before_cost=True))
    return out


def train_kv_decoder(model: ARMDecoder, config: ARMKVBudgetConfig) -> float:
    """Train ``model`` (of kind ``config.kind``) with a ``Trainer`` on the MQAR batches; the seconds it took.

    Example:
        >>> config = ARMKVBudgetConfig(kind="full", budget=8, train_len=32, pairs=4, steps=2, batch_size=2,
        ...                            d_model=16, num_heads=2)
        >>> train_kv_decoder(build_kv_decoder("full", config), config) > 0
        True
    """
    seed = 1000 * config.seed + 1
    data = make_recall_batch("mqar", config.steps * config.batch_size, config.train_len, config.pairs, seed=seed)
    size = config.batch_size
    batches = [{k: v[i * size : (i + 1) * size] for k, v in data.items()} for i in range(config.steps)]
    trainer = pl.Trainer(
        max_steps=config.steps, accelerator=config.accelerator, devices=1, logger=False, enable_checkpointing=False,
        enable_progress_bar=False, enable_model_summary=False, num_sanity_val_steps=0, limit_val_batches=0,
        callbacks=_callbacks(config.kind, config),
    )  # fmt: skip
    start = time.perf_counter()
    trainer.fit(model, DataLoader(batches, batch_size=None))  # type: ignore[arg-type]
    return time.perf_counter() - start


@torch.no_grad()
def decode_recall(model: ARMDecoder, ids: torch.Tensor, labels: torch.Tensor, start: int) -> dict[str, float]:
    """Prefill ``ids[:, :start]``, decode the rest one token at a time; accuracy and NLL on the scored labels.

    Returns ``{"acc", "nll", "slots"}``; ``slots`` is the ARM layers' mean slots read per decoded token (``nan``
    for the other kinds).

    Example:
        >>> model = ARMDecoder(d_model=16, num_layers=1, num_heads=2, attention="full", budget=8)
        >>> b = make_recall_batch("mqar", 2, 24, 4)
        >>> 0 <= decode_recall(model, b["input_ids"], b["labels"], 17)["acc"] <= 1
        True
    """
    model.eval()
    logits, state = model.prefill(ids[:, :start])
    outs, slots = [logits[:, -1]], []
    for t in range(start, ids.shape[1]):
        step, state = model.step(ids[:, t], state, inplace=True)
        outs.append(step)
        slots += [float(layer.last_slots_read) for layer in model.arm_layers()]
    pred, gold = torch.stack(outs, dim=1), labels[:, start - 1 :]
    scored = gold != -100
    nll = F.cross_entropy(pred[scored], gold[scored]).item()
    acc = (pred.argmax(-1)[scored] == gold[scored]).float().mean().item()
    return {"acc": acc, "nll": nll, "slots": statistics.fmean(slots) if slots else math.nan}


@torch.no_grad()
def decode_cost(model: ARMDecoder, length: int, steps: int = 32) -> dict[str, float]:
    """Per-token decode time (ms, batch 1) after a prefill of ``length`` tokens, and the cache's KV bytes.

    Example:
        >>> model = ARMDecoder(d_model=16, num_layers=1, num_heads=2, attention="streaming", budget=8)
        >>> decode_cost(model, 32, steps=2)["kv_bytes"] == decode_cost(model, 64, steps=2)["kv_bytes"]
        True
    """
    model.eval()
    ids = torch.randint(0, 256, (1, length + steps), generator=torch.Generator().manual_seed(0))
    _, state = model.prefill(ids[:, :length])
    start = time.perf_counter()
    for t in range(length, length + steps):
        _, state = model.step(ids[:, t], state, inplace=True)
    per_token = (time.perf_counter() - start) / steps
    return {"ms_per_token": 1000 * per_token, "kv_bytes": float(kv_cache_bytes(state.caches, 1))}


def arm_kv_budget_task(config: ARMKVBudgetConfig) -> dict[str, Any]:
    """Train ``config.kind``, then evaluate it and the kinds derived from its weights on long MQAR sequences.

    Returns:
        ``train_s``; per evaluated kind ``recall_<kind>``, ``nll_<kind>`` and ``slots_<kind>``; with
        ``decode_cost`` also ``ms_per_token_<L>`` and ``kv_bytes_<L>`` of the trained model for
        ``L = seq_len, 2 seq_len, 4 seq_len``.

    Example:
        >>> out = arm_kv_budget_task(ARMKVBudgetConfig(kind="streaming", budget=16, seq_len=64, train_len=32,
        ...                          pairs=4, steps=2, batch_size=2, n_eval=2, d_model=16, num_heads=2))
        >>> sorted(out)
        ['nll_streaming', 'recall_streaming', 'slots_streaming', 'train_s']
    """
    trained = build_kv_decoder(config.kind, config)
    out: dict[str, Any] = {"train_s": train_kv_decoder(trained, config)}
    trained = trained.cpu()
    test = make_recall_batch("mqar", config.n_eval, config.seq_len, config.pairs, seed=1000 * config.seed + 2)
    start = config.seq_len - 2 * config.pairs + 1  # the context ends before the first query key
    for name in ARM_KV_EVALUATED[config.kind]:
        model = build_kv_decoder(name, config)
        model.load_state_dict(trained.state_dict())
        scores = decode_recall(model, test["input_ids"], test["labels"], start)
        out |= {f"recall_{name}": scores["acc"], f"nll_{name}": scores["nll"], f"slots_{name}": scores["slots"]}
    if config.decode_cost:
        for length in (config.seq_len, 2 * config.seq_len, 4 * config.seq_len):
            out |= {f"{key}_{length}": value for key, value in decode_cost(trained, length).items()}
    return out
