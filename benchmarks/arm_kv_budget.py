"""ARM (experimental) against KV-cache baselines at an equal KV budget: MQAR recall, byte perplexity, decode cost.

One ``ARMDecoder`` architecture, the attention kind the only difference, every trained kind trained for the
same steps on the same batches (same seed). Kinds: full KV (upper bound), StreamingLLM (4 sinks + window),
SnapKV- and H2O-style eviction (training-free: the full model's weights with an evicting decode cache), Gated
Slot Attention, ARM with a fixed read (all clusters), ARM with a top-p read (the fixed model's weights, reading
clusters until 0.9 of the routing mass) and ARM with a learned read budget (the fixed-read model's training up to
3/4 of the steps, then its own: the policy starts on the fixed read with probability 0.95 and learns under a read
cost ramped to 1.5: ``ARM_LEARNED_TRAINING``, ``--branch-from-fixed``). Runs before 2026-12-05 09:40 UTC used cost
0.05 and the default policy initialisation, runs from 09:40 to 12:55 UTC cost 2.0 with the policy frozen or
default-initialised, runs from 12:55 to 16:58 UTC trained the learned read on its own from step 0 (their JSON's
``config.arm_learned`` says which: ``branch_from_fixed`` is absent there); the default cost was 2.0 until
2026-12-06 (``config.arm_learned.budget_cost``).
Every ARM kind routes by argmax in training with a slot-level balance loss (``ARM_ROUTING``; with the standard
Gumbel noise ARM stayed at chance, see docs/arm.md) and, from half-way through training (``USAGE_START``), with
usage-aware writes (``usage_penalty`` 32: a write the gate deems worth storing avoids slots already written). Runs
before 2026-12-05 19:40 UTC had no usage penalty (``usage_penalty`` is absent from their ``config.arm_learned``);
``--usage-penalty 0`` reproduces them. The default penalty was 8 until 2026-12-05 23:41 UTC (each run's
``config.arm_learned`` records its own).

Data: generated MQAR (``lightning_icml26.data.make_recall_batch``), 512 tokens, 16 key-value pairs then filler,
then the 16 keys again in random order; a value is scored after each query key. The 16 stored pairs fit in
ARM's memory at every budget (value tokens <= slots). Evaluation prefills the context (pairs and filler) and
decodes the query block token by token with each kind's cache, so the eviction methods see what they would
keep in deployment. Training, validation-free evaluation and test samples use disjoint seeds.
Training uses the same task at 128 tokens (16 pairs, 64 filler tokens, 16 queries): the model has no positional
encoding, so it is evaluated at 512 tokens with more filler; one block with the decoder's token shift (which gives
each value token its key, the previous-token step associative recall needs), d_model 64, AdamW lr 3e-3 with a
50-step linear warm-up, batch 32, 3000 steps. The first size, 1500 steps, was set on full KV's seed 0 alone (it
left the loss plateau near step 1050); validation traces (``--trace-every``) of seeds 1 and 2 then showed full KV
still on the plateau at step 1500 on both (it left it between steps 1500 and 1750) and ARM leaving it between
1250 and 1750, its validation recall near flat from step 2250: 3000 steps, chosen on those traces (validation
sequences, full KV and fixed-read ARM only) before any 3000-step test figure of another kind existed.
KV budgets per head: 1/16, 1/8 and 1/4 of the sequence (32, 64, 128 tokens); ARM uses a quarter of the budget
as its exact window and the rest as slots in 4 clusters. H2O protects the same recent window, SnapKV observes
``min(16, budget / 4)`` queries.
Byte perplexity (full size only): the same kinds trained on 512-byte chunks of the standard library's source,
budget 1/8; the second half of each held-out chunk is decoded with the cache.
Decode cost: randomly initialised models, batch 1, prefill of 512 / 1024 / 2048 tokens then 32 timed decode
steps; KV bytes from ``kv_cache_bytes`` (the decode memory that grows with context), per-token CPU time.

Targets (the paper's claim, "better than fixed KV caching at the same memory", turned into numbers before
any run): at budget 1/8, ARM's recall >= 1.5 x StreamingLLM's and above every other budgeted baseline, within
5 points of full KV; the learned policy within 1 point of the fixed read while reading at most half its slots;
ARM's KV bytes constant and per-token time at most 1.5 x from 512 to 2048 tokens, full KV's bytes >= 3.5 x.

A validity target, full KV's recall >= 0.5, says whether the training budget sufficed for the task at all;
when it is missed the recall comparisons are between untrained models and show nothing.

``--quick`` is a smoke run of the same code paths (budget 1/8, one seed, 100 steps of 16, 32 test sequences,
a few minutes): too short for any kind to learn MQAR (full KV leaves its loss plateau after 1000-1750 steps),
so its validity target is missed by design and its recall rows show nothing. The measured comparison is
``--budget-1-8-only --seed S --seeds 1`` for S = 0 and 1 on two cores (every kind 3000 steps of 32, about 50
minutes each), joined by ``--pool``, or the full size: three budgets, two seeds, 128 test sequences, plus byte
perplexity (300 steps of 8 chunks), several hours on a CPU.

``--kinds a,b`` runs only those kinds (``snapkv``/``h2o`` train full KV, ``arm_top_p`` trains ``arm_fixed``);
``--merge STORED.json`` fills every other kind (and the decode cost of kinds not rerun) from an earlier run's JSON
and computes the targets from both; each row's ``source`` says ``rerun`` or ``stored``, and the JSON names the
rerun kinds and the stored file. Use it only with the stored run's size and seed; it refuses to keep stored ARM
rows routed with another ``usage_penalty`` / ``usage_start`` than this run's (``check_merge_routing``).

``--steps N`` changes every kind's training steps; ``--trace-every K`` logs, every K steps, each trained kind's mean
training loss, the mean and largest total gradient norm (before any ``--grad-clip``; runs before 2026-12-06 10:30
UTC have no norms), its recall on 32 validation sequences at 512 tokens (their own seed, never the test set) and,
for ARM kinds, the memory's writes replayed on those sequences (``mem_*``: ``arm_diagnose.memory_stats``; runs
before 2026-12-06 12:00 UTC have none), into ``figures.traces``: whether and when a kind left MQAR's loss plateau.
Probes run under a forked RNG (the Gumbel generator's state put back) and are not timed, so a traced run trains
exactly like an untraced one.

``--budgets 1/16,1/4`` runs only those budgets (the targets, all at 1/8, are then ``nan``); ``--text`` adds the byte
perplexity to a run that would skip it (it trains every kind).

``--pool A.json B.json ...`` trains nothing: it pools runs of other seeds with the same settings (e.g. two
``--seed S --seeds 1`` runs on two cores) into one record, recall mean and spread over all their seeds, targets
recomputed; it refuses differing settings, a repeated seed and ``--merge`` records. ``--pool A.json B.json --merge
STORED.json`` then fills the kinds the pooled runs lack from STORED (e.g. two one-seed ``--kinds arm_learned`` runs
joined with a stored run of every kind). ``--pool ... --kinds K,...`` pools only those kinds; a pool without ARM
kinds may join runs that differ in ARM's settings alone (e.g. the baselines of runs made before a change to ARM).

``--read-cost C``, ``--cost-start F``, ``--[no-]freeze-policy`` and ``--initial-full-read P`` change the learned
read's training (``LearnedTraining``, validated; defaults ``ARM_LEARNED_TRAINING``; ``--initial-full-read none``:
default initialisation); ``config.arm_learned`` records them. While the policy is frozen its gradient is zero but
AdamW's weight decay (0.01) still shrinks its weights, by about 6.5 % over the first 3/4 of a 3000-step run.
``--branch-from-fixed`` pairs the learned read with the fixed read of its seed: the fixed-read model is trained as
usual, its weights, AdamW state and RNGs (global and the decoder's Gumbel generator) are kept at the first step
of the cost phase (``LearnedTraining.branch_step``), and the learned read continues from there (its policy, the
only new weights, starts from its initialisation with fresh AdamW state), so the two differ only by what the cost
phase does; the learned row's trace repeats the fixed read's up to the branch and its ``train_s`` counts the shared
steps. With ``--kinds arm_learned`` alone the fixed read is trained up to the branch only and not evaluated. The
byte-perplexity run does not branch (``config.arm_learned`` describes the MQAR runs).

``--lr-schedule cosine`` (every kind; a diagnostic of ours, 2026-12-06) decays the learning rate after its warm-up
by a cosine to 0 at the last step instead of keeping it constant; ``--lr-schedule wsd`` keeps it constant and decays
it linearly to 0 over the last fifth of the steps (warmup-stable-decay); a run records it in ``config.lr_schedule``
(absent: constant, as in every run before). ``--grad-clip C`` (every kind; a diagnostic of ours, 2026-12-06) clips
the gradients' total norm to ``C`` before each step (``config.grad_clip``; absent: none, as before). Runs pool and
merge only with runs of the same schedule and clipping.

Run: ``python -m benchmarks.arm_kv_budget [--quick] [--json PATH] [--kinds K,...] [--merge STORED.json]
[--steps N] [--trace-every K] [--read-cost C] [--cost-start F] [--[no-]freeze-policy] [--initial-full-read P]
[--[no-]branch-from-fixed] [--lr-schedule constant|cosine|wsd] [--grad-clip C]`` or
``python -m benchmarks.arm_kv_budget --pool A.json B.json ... [--kinds K,...] [--merge STORED.json] --json OUT``.
"""

from __future__ import annotations

import argparse
import copy
import json
import math
import statistics
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F

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
from benchmarks.arm_diagnose import memory_stats
from lightning_icml26.callbacks import GumbelTemperatureScheduler
from lightning_icml26.data import load_stdlib_bytes, make_recall_batch
from lightning_icml26.metrics.functional import kv_cache_bytes
from lightning_icml26.modules import ARMDecoder
from lightning_icml26.ops.attention import read_cost_at

SEQ, PAIRS, TRAIN_LEN, WARMUP, LR = 512, 16, 128, 50, 3e-3
TRAINED = ("full", "streaming", "gsa", "arm_fixed", "arm_learned")
EVALUATED = ("full", "streaming", "snapkv", "h2o", "gsa", "arm_fixed", "arm_top_p", "arm_learned")
BASELINES = ("streaming", "snapkv", "h2o", "gsa")
DERIVED = {"full": ("full", "snapkv", "h2o"), "arm_fixed": ("arm_fixed", "arm_top_p")}  # evaluated from one training
COST_KINDS = ("full", "streaming", "gsa", "arm_fixed")
# ARM's training-time routing (both our additions to the reconstruction, see ``ARMAttention``): argmax routing in
# training (no Gumbel noise; the router keeps its straight-through gradient) and a slot-level balance loss.
# Chosen on ``benchmarks/arm_diagnose.py`` (64 tokens, 8 pairs, its own data), before this benchmark ran with
# them: with the standard Gumbel noise ARM stayed at chance there and here.
# The learned read policy's cost per share of the slots read: the smallest of 0.2, 0.5, 1 and 2 with which the
# policy read at most half the slots on ``arm_diagnose.py --freeze-policy`` (2026-12-05, docs/arm.md; was 0.05),
# 2 until 2026-12-06. With usage-aware writes at penalty 32, the same rule as the training below on this benchmark's
# final validation recall of seeds 0-1 (reading at most half the slots): cost 1 read 26.1 of 48 slots (excluded),
# cost 2 0.954 at 20.0, cost 1.5 0.981 at 20.3 (this one); seeds 2-5 were run after the choice (docs/arm.md).
ARM_BUDGET_COST = 1.5
# Usage-aware writes (``usage_penalty``, our addition) from half-way through training (``USAGE_START``: the layers
# route by their keys alone before): chosen on the fixed read's final validation recall of seeds 0-1 (penalty 8:
# 0.906 against 0.819 for the routing above alone, 0.22 with the penalty from step 0, where seed 0 never left MQAR's
# loss plateau; then penalty 32: 0.977), then checked on seeds 2-5 (docs/arm.md, 2026-12-05).
# ``--usage-penalty 0`` removes it (the routing of the runs before), ``--usage-penalty 8`` is the first default.
ARM_USAGE_PENALTY, ARM_USAGE_START = 32.0, 0.5  # the defaults; ``main`` sets the two below from its flags
# ``config`` keys that change the ARM kinds alone (a pool of other kinds may differ in them, ``pool_records``).
ARM_ONLY_SETTINGS = ("arm_learned", "usage_start")
ARM_ROUTING: dict[str, float] = {"noise_scale": 0.0, "slot_balance_weight": 1.0, "usage_penalty": ARM_USAGE_PENALTY}
USAGE_START = ARM_USAGE_START
# The learning rate after its warm-up: constant (every run so far), a cosine decay to 0 at the last step
# (``--lr-schedule cosine``) or warmup-stable-decay (``wsd``: constant, then a linear decay to 0 over the last
# ``WSD_DECAY_FRACTION`` of the steps), diagnostics of ours for the late drops of some seeds (docs/arm.md). The
# fraction 0.2 is the common choice for such schedules, fixed before any run (not tuned). ``main`` sets the schedule.
LR_SCHEDULES = ("constant", "cosine", "wsd")
LR_SCHEDULE = "constant"
WSD_DECAY_FRACTION = 0.2
# Gradient-norm clipping before each AdamW step (``--grad-clip C``, a diagnostic of ours; none in every run before
# 2026-12-06 and by default). ``main`` sets it; a run with clipping records it in ``config.grad_clip``.
GRAD_CLIP: float | None = None
# What every kind of a run trains under, with the value its config omits (the value of the runs made before the
# option): a config records only the settings that differ from these.
TRAINING_DEFAULTS: dict[str, Any] = {"lr_schedule": "constant", "grad_clip": None}


def training_settings(config: dict[str, Any]) -> dict[str, Any]:
    """A run config's :data:`TRAINING_DEFAULTS` settings, the omitted ones at their defaults.

    Example:
        >>> training_settings({"lr_schedule": "wsd"})
        {'lr_schedule': 'wsd', 'grad_clip': None}
    """
    return {key: config.get(key, default) for key, default in TRAINING_DEFAULTS.items()}


def has_arm_kind(kinds: tuple[str, ...]) -> bool:
    """Whether any of ``kinds`` is an ARM kind (the only kinds that ``ARM_ONLY_SETTINGS`` and the routing change).

    Example:
        >>> has_arm_kind(("full", "h2o")), has_arm_kind(("full", "arm_learned"))
        (False, True)
    """
    return any(name.startswith("arm") for name in kinds)


def usage_setting(config: dict[str, Any]) -> tuple[float | None, float | None]:
    """A run's ``(usage_penalty, usage_start)`` from its JSON ``config`` (``(None, None)``: routed by keys alone).

    Example:
        >>> usage_setting({"arm_learned": {"usage_penalty": 8.0}, "usage_start": 0.5}), usage_setting({})
        ((8.0, 0.5), (None, None))
    """
    return config.get("arm_learned", {}).get("usage_penalty"), config.get("usage_start")


def check_merge_routing(
    stored: dict[str, Any], rerun: tuple[str, ...], setting: tuple[float | None, float | None]
) -> None:
    """``ValueError`` when a stored run's ARM rows that stay in a merge were routed otherwise than this run's.

    Example:
        >>> old = {"figures": {"config": {}, "mqar": [{"kind": "arm_fixed"}, {"kind": "full"}]}}
        >>> check_merge_routing(old, ("arm_fixed",), (8.0, 0.5))  # its ARM row is replaced: fine
        >>> check_merge_routing(old, ("full",), (8.0, 0.5))  # no ARM kind rerun: the stored ARM rows stand alone
        >>> check_merge_routing(old, ("arm_learned",), (8.0, 0.5))
        Traceback (most recent call last):
        ValueError: --merge: the stored run's ['arm_fixed'] were routed with ... (None, None), this run with ...
    """
    kept = sorted({row["kind"] for row in stored["figures"]["mqar"] if row["kind"].startswith("arm")} - set(rerun))
    theirs = usage_setting(stored["figures"]["config"])
    if kept and has_arm_kind(rerun) and theirs != setting:  # routing changes nothing in the other kinds
        raise ValueError(
            f"--merge: the stored run's {kept} were routed with usage_penalty, usage_start = {theirs}, this run "
            f"with {setting}; rerun those kinds too"
        )


def check_merge_training(stored: dict[str, Any], ours: dict[str, Any]) -> None:
    """``ValueError`` when a stored run's rows were trained under other :func:`training_settings` than ``ours``
    (this run's learning-rate schedule and gradient clipping).

    Example:
        >>> check_merge_training({"figures": {"config": {}}}, {"lr_schedule": "constant", "grad_clip": None})
        >>> check_merge_training({"figures": {"config": {}}}, {"lr_schedule": "cosine", "grad_clip": None})
        Traceback (most recent call last):
        ValueError: --merge: the stored run trained with lr_schedule 'constant', this run with 'cosine'; ...
        >>> check_merge_training({"figures": {"config": {"grad_clip": 1.0}}}, training_settings({}))
        Traceback (most recent call last):
        ValueError: --merge: the stored run trained with grad_clip 1.0, this run with None; ...
    """
    for key, theirs in training_settings(stored["figures"]["config"]).items():
        if theirs != ours[key]:
            raise ValueError(
                f"--merge: the stored run trained with {key} {theirs!r}, this run with {ours[key]!r}; "
                "every kind of a comparison trains alike"
            )


@dataclass(frozen=True)
class LearnedTraining:
    """How the learned read policy is trained (our addition, see ``read_cost_at``; CLI: ``--read-cost`` etc.).

    No cost for the first ``start`` of training, then linear to ``cost`` over ``ramp``; with ``freeze_policy`` the
    policy keeps its initial choices (zero gradient) while the cost is 0; ``initial_full_read`` is
    ``ARMAttention``'s (the policy starts on the fixed read with that probability; ``None``: default initialisation).

    Example:
        >>> LearnedTraining(cost=1.0, start=0.5, ramp=0.1, freeze_policy=False).as_config()["cost_start"]
        0.5
    """

    cost: float = ARM_BUDGET_COST
    start: float = 0.75
    ramp: float = 0.1
    freeze_policy: bool = True
    initial_full_read: float | None = None
    branch_from_fixed: bool = False

    def __post_init__(self) -> None:
        read_cost_at(0, 1, self.cost, self.start, self.ramp)  # ValueError naming budget_cost, start or ramp
        if self.initial_full_read is not None and not 0.0 < self.initial_full_read < 1.0:
            raise ValueError(f"initial_full_read must be in (0, 1) or None, got {self.initial_full_read!r}")
        if not isinstance(self.branch_from_fixed, bool):
            raise ValueError(f"branch_from_fixed must be a bool, got {self.branch_from_fixed!r}")
        if self.branch_from_fixed and self.freeze_policy:
            raise ValueError(
                "freeze_policy and branch_from_fixed both decide the learned read before the cost phase; set one"
            )

    def cost_at(self, step: int, total_steps: int) -> float:
        """The read cost at ``step`` of ``total_steps``."""
        return read_cost_at(step, total_steps, self.cost, self.start, self.ramp)

    def branch_step(self, total_steps: int) -> int:
        """The first step of the cost phase, where its ramp begins (``total_steps`` if ``start`` is 1).

        Example:
            >>> LearnedTraining(start=0.75).branch_step(3000)
            2250
        """
        return next((s for s in range(total_steps) if s / total_steps >= self.start), total_steps)

    def as_config(self) -> dict[str, float | bool]:
        """The settings as stored in a run's ``config.arm_learned``."""
        config: dict[str, float | bool] = {
            "budget_cost": self.cost,
            "cost_start": self.start,
            "cost_ramp": self.ramp,
            "freeze_policy": self.freeze_policy,
        }
        if self.initial_full_read is not None:  # absent from runs made before the option existed
            config["initial_full_read"] = self.initial_full_read
        if self.branch_from_fixed:  # idem
            config["branch_from_fixed"] = True
        return config


# The default learned-read training (2026-12-05, docs/arm.md; rule: the highest mean final validation recall among
# the settings reading at most half the slots, over the seeds every candidate ran on). On seeds 0-1: the policy
# frozen until the cost starts (0.50), trained from the start (0.72), trained from the start beginning on the fixed
# read with probability 0.95 (0.84, the default until seeds 2-3 showed it failing: 0.66 over seeds 0-3). Then, over
# seeds 0-3: the learned read branched from the fixed-read model at the cost phase, its policy starting on the fixed
# read with probability 0.95 (0.82, this one). Its cost: ``ARM_BUDGET_COST`` (1.5 since 2026-12-06, 2 before).
ARM_LEARNED_TRAINING = LearnedTraining(freeze_policy=False, initial_full_read=0.95, branch_from_fixed=True)
VAL_SEQUENCES = 32  # validation sequences of the ``--trace-every`` probe (their own seed, never the test set)


def _attention(name: str, budget: int, learned: LearnedTraining = ARM_LEARNED_TRAINING) -> tuple[str, dict[str, Any]]:
    window = budget // 4
    if name.startswith("arm"):
        policy = {"arm_fixed": "fixed", "arm_top_p": "top_p", "arm_learned": "learned"}[name]
        kwargs = {"window": window, "num_clusters": 4, "read_policy": policy, "budget_cost": learned.cost}
        if policy == "learned" and learned.initial_full_read is not None:
            kwargs["initial_full_read"] = learned.initial_full_read
        return "arm", {**kwargs, **ARM_ROUTING}
    return name, {
        "streaming": {"sinks": 4},
        "snapkv": {"obs_window": min(16, window)},
        "h2o": {"recent": window},
    }.get(name, {})


def _model(
    name: str, budget: int, layers: int, seed: int, learned: LearnedTraining = ARM_LEARNED_TRAINING
) -> ARMDecoder:
    torch.manual_seed(seed)
    kind, kwargs = _attention(name, budget, learned)
    return ARMDecoder(
        d_model=64, num_layers=layers, num_heads=4, attention=kind, budget=budget, attention_kwargs=kwargs
    )


@dataclass(frozen=True)
class Probe:
    """A validation probe during training: recall on held-out sequences (never the test set) every ``every`` steps.

    ``ids``/``labels`` are MQAR sequences from their own seed with ``pairs`` key-value pairs; the context ends at
    ``start`` (as in the test). For an ARM model each probe also records the first layer's memory on these
    sequences (``arm_diagnose.memory_stats``, routed as the model routes at that step).
    """

    every: int
    ids: torch.Tensor
    labels: torch.Tensor
    start: int
    pairs: int = PAIRS

    def __post_init__(self) -> None:
        length = self.ids.shape[-1]
        if not 1 <= self.pairs <= length // 4:  # the pairs and the queries (2 * pairs tokens each) must fit
            allowed = f"1..{length // 4} for sequences of {length} tokens"
            raise ValueError(f"Probe pairs must be in {allowed}, got {self.pairs}")


@dataclass(frozen=True)
class Branch:
    """A training state after ``step`` of the steps: weights, AdamW state per parameter name, the global RNG and the
    decoder's Gumbel generator (``ARMDecoder.gumbel``), time, trace.

    ``LearnedTraining(branch_from_fixed=True)``: the fixed-read model's state at the learned read's first costed
    step, from which the learned read continues (see ``_train``).
    """

    step: int
    weights: dict[str, torch.Tensor]
    optimizer: dict[str, dict[str, Any]]
    rng: torch.Tensor
    gumbel: torch.Tensor
    seconds: float
    trace: list[dict[str, float]]
    losses: list[float]
    grad_norms: list[float]


def lr_factor(step: int, total_steps: int, schedule: str) -> float:
    """The learning rate's factor at ``step`` (0-based) of ``total_steps``: linear warm-up over ``WARMUP`` steps,
    then 1 (``"constant"``), times a cosine from 1 at step 0 to 0 at ``total_steps`` (``"cosine"``), or 1 until
    the last ``WSD_DECAY_FRACTION`` of the steps and from there linearly down to 0 at ``total_steps`` (``"wsd"``).

    Example:
        >>> [lr_factor(s, 100, "constant") for s in (0, 49, 99)]
        [0.02, 1.0, 1.0]
        >>> [round(lr_factor(s, 100, "cosine"), 3) for s in (0, 50, 99)]
        [0.02, 0.5, 0.0]
        >>> [round(lr_factor(s, 100, "wsd"), 3) for s in (0, 80, 90, 99)]
        [0.02, 1.0, 0.5, 0.05]
    """
    if schedule not in LR_SCHEDULES:
        raise ValueError(f"schedule must be one of {LR_SCHEDULES}, got {schedule!r}")
    warm = min(1.0, (step + 1) / WARMUP)
    if schedule == "constant":
        return warm
    if schedule == "wsd":
        decay_steps = max(1, round(WSD_DECAY_FRACTION * total_steps))
        return warm * min(1.0, max(0.0, total_steps - step) / decay_steps)
    return warm * 0.5 * (1.0 + math.cos(math.pi * min(step, total_steps) / total_steps))


def _train(
    model: ARMDecoder,
    batches: list[dict[str, torch.Tensor]],
    probe: Probe | None = None,
    learned: LearnedTraining = ARM_LEARNED_TRAINING,
    branch_at: int | None = None,
    stop: int | None = None,
    resume: Branch | None = None,
) -> tuple[float, list[dict[str, float]], Branch | None]:
    """Train in place on ``batches`` (steps ``0 .. stop``); the learned read policy's cost follows ``learned``.

    Returns the training seconds (probes excluded), with ``probe`` the trace (after every ``probe.every`` steps,
    the mean training loss since the last probe, the mean and largest total gradient norm since the last probe
    (before any clipping; one norm over every parameter's gradient, as ``clip_grad_norm_`` computes it), the
    validation recall with the decode cache and, for ARM, the memory's use on the validation sequences
    (``_probe_memory``)), and with
    ``branch_at`` the ``Branch`` taken before step ``branch_at`` runs. ``resume`` continues from a branch: its
    weights (a model may add parameters, e.g. the learned read's policy, which keep their initialisation), AdamW
    state and RNGs, at its step, with its seconds and trace; resuming a model of the branch's kind ends with the
    weights of the uninterrupted run (tested). Probes run under a forked RNG, so a traced run trains exactly like
    an untraced one.
    """
    opt = torch.optim.AdamW(model.parameters(), lr=LR, weight_decay=0.01)
    first, before, trace, losses, grad_norms = 0, 0.0, [], [], []
    if resume is not None:
        first, before, trace = resume.step, resume.seconds, list(resume.trace)
        losses, grad_norms = list(resume.losses), list(resume.grad_norms)
        _load_branch(model, opt, resume)
    schedule = LR_SCHEDULE
    warmup = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: lr_factor(s + first, len(batches), schedule))
    sched = GumbelTemperatureScheduler(tau_start=1.0, tau_min=0.2, schedule="linear", total_steps=len(batches))
    model.train()
    probing = 0.0
    branch = None
    start = time.perf_counter()

    def take_branch(step: int) -> Branch:
        names = {id(p): name for name, p in model.named_parameters()}
        return Branch(
            step=step,
            weights={k: v.detach().clone() for k, v in model.state_dict().items()},
            optimizer={names[id(p)]: copy.deepcopy(state) for p, state in opt.state.items()},
            rng=torch.get_rng_state(),
            gumbel=model.gumbel.get_state(),
            seconds=before + time.perf_counter() - start - probing,
            trace=list(trace),
            losses=list(losses),
            grad_norms=list(grad_norms),
        )

    last = len(batches) if stop is None else stop
    for step in range(first, last):
        if step == branch_at:
            branch = take_branch(step)
        for layer in model.arm_layers():
            layer.tau = sched.tau_at(step)
            if "usage_penalty" in ARM_ROUTING:
                on = step / len(batches) >= USAGE_START
                layer.usage_penalty = ARM_ROUTING["usage_penalty"] if on else 0.0
            if layer.read_policy == "learned":
                layer.budget_cost = learned.cost_at(step, len(batches))
                if learned.freeze_policy:
                    layer.train_read_policy = layer.budget_cost > 0
        batch = batches[step]
        logits = model(batch["input_ids"])
        loss = F.cross_entropy(logits.flatten(0, 1), batch["labels"].flatten(), ignore_index=-100)
        opt.zero_grad()
        (loss + model.aux_weight * model.aux_loss()).backward()
        if GRAD_CLIP is not None:
            grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), GRAD_CLIP)
        else:
            grad_norm = torch.nn.utils.get_total_norm([p.grad for p in model.parameters() if p.grad is not None])
        opt.step()
        warmup.step()
        losses.append(loss.item())
        grad_norms.append(grad_norm.item())
        if probe is not None and (step + 1) % probe.every == 0:
            began = time.perf_counter()
            with torch.random.fork_rng(devices=[]):
                scores = _decode_eval(model, probe.ids, probe.labels, probe.start)
            model.train()
            recall, slots = scores["acc"], scores["slots"]
            trace.append(
                {
                    "step": step + 1,
                    "train_loss": statistics.fmean(losses),
                    "grad_norm_mean": statistics.fmean(grad_norms),
                    "grad_norm_max": max(grad_norms),
                    "val_recall": recall,
                    "val_slots": slots,
                    **_probe_memory(model, probe),
                }
            )
            row = trace[-1]
            read = "" if math.isnan(slots) else f", {slots:.1f} slots read"
            norms = f"grad norm {row['grad_norm_mean']:.2f} (max {row['grad_norm_max']:.2f})"
            memory = ""
            if "mem_value_slots" in row:
                memory = (
                    f"; values in {row['mem_value_slots']:.1f} slots, {row['mem_overwritten']:.0%} overwritten,"
                    f" gate value {row.get('mem_gate_value', math.nan):.2f}"
                    f" filler {row.get('mem_gate_filler', math.nan):.2f}"
                )
            loss = f"loss {row['train_loss']:.3f}"
            print(f"    step {step + 1}: {loss} {norms} val recall {recall:.3f}{read}{memory}", flush=True)
            losses, grad_norms = [], []
            probing += time.perf_counter() - began
    if branch_at == last:
        branch = take_branch(last)
    return before + time.perf_counter() - start - probing, trace, branch


def _probe_memory(model: ARMDecoder, probe: Probe) -> dict[str, float]:
    """``memory_stats`` of an ARM ``model`` on the probe's sequences, prefixed ``mem_`` (nothing for other kinds).

    Run under a forked global RNG with the Gumbel generator's state put back, so probing changes no training step.
    """
    if not model.arm_layers():
        return {}
    gumbel = model.gumbel.get_state()
    with torch.random.fork_rng(devices=[]):
        stats = memory_stats(model, probe.ids, probe.pairs)
    model.gumbel.set_state(gumbel)
    return {f"mem_{key}": value for key, value in stats.items()}


def _load_branch(model: ARMDecoder, opt: torch.optim.Optimizer, branch: Branch) -> None:
    """Put ``branch``'s weights, AdamW state and RNGs into ``model`` and ``opt``; only policy weights may be new."""
    missing, unexpected = model.load_state_dict(branch.weights, strict=False)
    if unexpected or any(".policy." not in name for name in missing):
        raise ValueError(
            f"a branch continues only in a model with the same weights plus a read policy: missing {missing}, "
            f"unexpected {unexpected}"
        )
    params = dict(model.named_parameters())
    for name, state in branch.optimizer.items():
        opt.state[params[name]] = copy.deepcopy(state)
    torch.set_rng_state(branch.rng)
    model.gumbel.set_state(branch.gumbel)


@torch.no_grad()
def _decode_eval(model: ARMDecoder, ids: torch.Tensor, labels: torch.Tensor, start: int) -> dict[str, float]:
    """Prefill ``ids[:, :start]``, decode the rest; accuracy and NLL on the scored labels, mean slots read."""
    model.eval()
    logits, state = model.prefill(ids[:, :start])
    outs, slots = [logits[:, -1]], []
    for t in range(start, ids.shape[1]):
        step, state = model.step(ids[:, t], state)
        outs.append(step)
        slots += [float(layer.last_slots_read) for layer in model.arm_layers()]
    pred = torch.stack(outs, dim=1)
    gold = labels[:, start - 1 :]
    scored = gold != -100
    nll = F.cross_entropy(pred[scored], gold[scored]).item()
    acc = (pred.argmax(-1)[scored] == gold[scored]).float().mean().item()
    return {"acc": acc, "nll": nll, "slots": statistics.fmean(slots) if slots else float("nan")}


def _as_eval(trained: ARMDecoder, name: str, budget: int, layers: int) -> ARMDecoder:
    """The model ``name`` is evaluated with: trained weights, with the decode cache of ``name``."""
    model = _model(name, budget, layers, 0)
    model.load_state_dict(trained.state_dict())
    return model


def _mqar_run(
    budget: int,
    seed: int,
    steps: int,
    batch: int,
    layers: int,
    n_eval: int,
    kinds: tuple[str, ...] = EVALUATED,
    trace_every: int = 0,
    learned: LearnedTraining = ARM_LEARNED_TRAINING,
) -> tuple[dict[str, dict[str, float]], dict[str, list[dict[str, float]]], dict[str, dict[str, float]]]:
    """Recall rows of every evaluated kind, with ``trace_every > 0`` each trained kind's validation trace, and each
    trained ARM kind's memory statistics on the test context (``arm_diagnose.memory_stats``: share of stored values
    whose slot is written again before the queries, slots used, write gates)."""
    train = make_recall_batch("mqar", steps * batch, TRAIN_LEN, PAIRS, seed=1000 * seed + 1)
    batches = [{k: v[i * batch : (i + 1) * batch] for k, v in train.items()} for i in range(steps)]
    test = make_recall_batch("mqar", n_eval, SEQ, PAIRS, seed=1000 * seed + 2)
    start = SEQ - 2 * PAIRS + 1  # the context ends before the first query key is given
    probe = None
    if trace_every > 0:
        val = make_recall_batch("mqar", VAL_SEQUENCES, SEQ, PAIRS, seed=1000 * seed + 3)
        probe = Probe(trace_every, val["input_ids"], val["labels"], start)
    rows: dict[str, dict[str, float]] = {}
    traces: dict[str, list[dict[str, float]]] = {}
    memory: dict[str, dict[str, float]] = {}
    branch_at = learned.branch_step(steps) if learned.branch_from_fixed and "arm_learned" in kinds else None
    branch = None
    for trained_name in TRAINED:
        evaluated = [name for name in DERIVED.get(trained_name, (trained_name,)) if name in kinds]
        branches = trained_name == "arm_fixed" and branch_at is not None
        if not evaluated and not branches:
            continue
        trained = _model(trained_name, budget, layers, seed, learned)
        seconds, trace, taken = _train(
            trained,
            batches,
            probe,
            learned,
            branch_at=branch_at if branches else None,
            stop=None if evaluated else branch_at,  # the fixed read trained only as the learned read's first part
            resume=branch if trained_name == "arm_learned" else None,
        )
        branch = taken if branches else branch
        if not evaluated:
            continue
        traces[trained_name] = trace
        if trained_name.startswith("arm"):
            with torch.random.fork_rng(devices=[]):
                memory[trained_name] = memory_stats(trained, test["input_ids"], PAIRS)
        for name in evaluated:
            model = _as_eval(trained, name, budget, layers)
            rows[name] = {**_decode_eval(model, test["input_ids"], test["labels"], start), "train_s": seconds}
            print(f"  seed {seed} budget {budget} {name}: recall {rows[name]['acc']:.3f}", flush=True)
    return {name: rows[name] for name in EVALUATED if name in rows}, {k: v for k, v in traces.items() if v}, memory


def _text_run(
    budget: int, seed: int, steps: int, batch: int, layers: int, n_eval: int, learned: LearnedTraining
) -> dict[str, float]:
    data = load_stdlib_bytes(max_bytes=(steps * batch + n_eval) * (SEQ + 1) + 1).long()
    chunks = data[: (data.numel() // (SEQ + 1)) * (SEQ + 1)].view(-1, SEQ + 1)
    tr, te = chunks[: steps * batch], chunks[steps * batch : steps * batch + n_eval]
    batches = [
        {"input_ids": tr[i * batch : (i + 1) * batch, :-1], "labels": tr[i * batch : (i + 1) * batch, 1:]}
        for i in range(steps)
    ]
    trained: dict[str, ARMDecoder] = {}
    for name in TRAINED:
        trained[name] = _model(name, budget, layers, seed, learned)
        _train(trained[name], batches, learned=learned)  # no branch: the learned read trains on its own here
    source = {"snapkv": "full", "h2o": "full", "arm_top_p": "arm_fixed"}
    out = {}
    for name in EVALUATED:
        model = _as_eval(trained[source.get(name, name)], name, budget, layers)
        out[name] = math.exp(_decode_eval(model, te[:, :-1], te[:, 1:], SEQ // 2)["nll"])
    return out


@torch.no_grad()
def _decode_cost(name: str, length: int, layers: int, steps: int = 32) -> dict[str, float]:
    model = _model(name, 64, layers, 0).eval()
    ids = torch.randint(0, 256, (1, length + steps), generator=torch.Generator().manual_seed(0))
    _, state = model.prefill(ids[:, :length])
    start = time.perf_counter()
    for t in range(length, length + steps):
        _, state = model.step(ids[:, t], state)
    per_token = (time.perf_counter() - start) / steps
    return {"ms_per_token": 1000 * per_token, "kv_bytes": float(kv_cache_bytes(state.caches, 1))}


def parse_kinds(text: str) -> tuple[str, ...]:
    """The comma-separated ``--kinds`` as a tuple in :data:`EVALUATED` order; ``ValueError`` for an unknown kind.

    Example:
        >>> parse_kinds("arm_learned,full")
        ('full', 'arm_learned')
    """
    names = [name.strip() for name in text.split(",") if name.strip()]
    unknown = [name for name in names if name not in EVALUATED]
    if not names or unknown:
        raise ValueError(f"--kinds must be a comma-separated subset of {EVALUATED}, got {text!r}")
    return tuple(name for name in EVALUATED if name in names)


def merge_stored(
    table: list[dict[str, Any]], cost: list[dict[str, Any]], stored: dict[str, Any], kinds: tuple[str, ...]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Rows of this run for ``kinds``, the stored JSON's rows for every other kind; each row says its ``source``.

    Example:
        >>> old = {"figures": {"mqar": [{"budget": "1/8", "kind": "full", "recall": 1.0}], "decode_cost": []}}
        >>> rows, _ = merge_stored([{"budget": "1/8", "kind": "arm_learned", "recall": 0.5}], [], old, ("arm_learned",))
        >>> [(r["kind"], r["source"]) for r in rows]
        [('full', 'stored'), ('arm_learned', 'rerun')]
    """
    figures = stored["figures"]
    budgets = {row["budget"] for row in table}
    new = {(row["budget"], row["kind"]): {**row, "source": "rerun"} for row in table}
    old = {
        (row["budget"], row["kind"]): {**row, "source": "stored"}
        for row in figures["mqar"]
        if row["budget"] in budgets and row["kind"] not in kinds
    }
    merged = [new.get(key) or old[key] for key in sorted(new | old, key=lambda key: EVALUATED.index(key[1]))]
    full = {row["budget"]: row["recall"] for row in merged if row["kind"] == "full"}
    for row in merged:
        if row["source"] == "rerun" and row["budget"] in full:
            row["vs_full"] = ratio(row["recall"], full[row["budget"]])
    merged_cost = [{**row, "source": "rerun"} for row in cost] + [
        {**row, "source": "stored"} for row in figures["decode_cost"] if row["kind"] not in kinds
    ]
    return merged, merged_cost


def summarize(per_seed: dict[tuple[str, str], list[tuple[float, float, float]]]) -> list[dict[str, Any]]:
    """Table rows from each (budget, kind)'s per-seed ``(recall, slots read, training seconds)``.

    Mean and population spread over seeds; ``vs_full`` against full KV's mean at the same budget; the per-seed
    recalls are kept (``recall_per_seed``) so that runs of other seeds can be pooled (:func:`pool_records`).

    Example:
        >>> per_seed = {("1/8", "full"): [(1.0, 0.0, 5.0)], ("1/8", "arm_fixed"): [(0.4, 48, 9.0), (0.8, 48, 11.0)]}
        >>> rows = summarize(per_seed)
        >>> [(r["kind"], round(r["recall"], 3), round(r["recall_sd"], 3), round(r["vs_full"], 3)) for r in rows]
        [('full', 1.0, 0.0, 1.0), ('arm_fixed', 0.6, 0.2, 0.6)]
    """
    full = {
        budget: statistics.fmean(v[0] for v in values) for (budget, kind), values in per_seed.items() if kind == "full"
    }
    table = []
    for (budget, kind), values in per_seed.items():
        accs = [v[0] for v in values]
        table.append(
            {
                "budget": budget,
                "kind": kind,
                "recall": statistics.fmean(accs),
                "recall_sd": statistics.pstdev(accs),
                "vs_full": ratio(statistics.fmean(accs), full[budget]) if budget in full else float("nan"),
                "slots_read": statistics.fmean(v[1] for v in values),
                "train_s": statistics.fmean(v[2] for v in values),
                "recall_per_seed": accs,
                "slots_per_seed": [v[1] for v in values],
                "train_s_per_seed": [v[2] for v in values],
            }
        )
    return table


def compute_targets(table: list[dict[str, Any]], cost: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The issue's targets from the budget-1/8 rows and the decode cost; a missing kind's target is ``nan``, missed."""
    at_1_8 = {row["kind"]: row for row in table if row["budget"] == "1/8"}

    def mean(name: str, key: str = "recall") -> float:
        return float(at_1_8[name][key]) if name in at_1_8 else float("nan")

    def cost_ratio(name: str, key: str) -> float:
        by_len = {int(c["context"]): float(c[key]) for c in cost if c["kind"] == name}
        return ratio(by_len[2048], by_len[512]) if {512, 2048} <= set(by_len) else float("nan")

    best_baseline = worst([mean(b) for b in BASELINES], "max")
    return {
        "full_kv_recall_1_8": target(mean("full"), ">=", 0.5),  # the upper bound learned the task at all
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


def _seed_values(path: str, row: dict[str, Any], figures: dict[str, Any]) -> list[tuple[float, float, float]]:
    """A row's per-seed ``(recall, slots, seconds)``; a one-seed run written before the per-seed lists is its row."""
    if "recall_per_seed" in row:
        return list(zip(row["recall_per_seed"], row["slots_per_seed"], row["train_s_per_seed"], strict=True))
    if len(figures["config"]["seeds"]) != 1:
        raise ValueError(f"--pool: {path} has several seeds but no per-seed recalls; rerun it with this version")
    return [(row["recall"], row["slots_read"], row["train_s"])]


def pool_records(records: list[tuple[str, dict[str, Any]]], kinds: tuple[str, ...] | None = None) -> dict[str, Any]:
    """The figures of several runs of other seeds with the same settings, pooled as one run of all their seeds.

    Every record must be an ``arm_kv_budget`` run (not a ``--merge``, no byte perplexity), with the same
    ``config`` apart from its seeds and ``budgets`` (the rows' budgets are compared instead), no seed twice
    (``check_poolable``), and the same kinds and budgets; otherwise ``ValueError`` names the file and what differs.
    Recall rows are pooled per seed (:func:`summarize`), decode times averaged over the runs (KV bytes are the
    same), traces joined; targets are recomputed.

    ``kinds`` pools only those kinds (``--pool ... --kinds``), which every record must hold; when none of them is
    an ARM kind, the records may differ in the settings that change ARM alone (:data:`ARM_ONLY_SETTINGS`), which
    the pooled ``config`` then leaves out: e.g. the baselines of a run made before a change to ARM's training,
    pooled with baseline runs of other seeds made after it.
    """
    if len(records) < 2:
        raise ValueError(f"--pool needs at least two JSON files, got {len(records)}")
    arm_free = kinds is not None and not has_arm_kind(kinds)
    dropped = ARM_ONLY_SETTINGS if arm_free else ()
    # "budgets" (absent from runs made before --budgets) is not compared: the rows' budgets are, below
    check_poolable(records, "arm_kv_budget", "config", "seeds", ignore=("budgets", *dropped))
    first_path, first = records[0]

    def kept(kind: str) -> bool:
        return kinds is None or kind in kinds

    def kept_key(path: str, key: str) -> bool:  # traces and memory are keyed "budget kind seed S"
        parts = key.split()
        if len(parts) != 4:
            raise ValueError(f"--pool: {path} has a trace or memory key {key!r}, not 'budget kind seed S'")
        return kept(parts[1])

    seeds: list[int] = []
    per_seed: dict[tuple[str, str], list[tuple[float, float, float]]] = {}
    cost: dict[tuple[str, int], list[dict[str, Any]]] = {}
    traces: dict[str, Any] = {}
    memory: dict[str, Any] = {}
    for path, record in records:
        figures = record["figures"]
        if "merged_from" in figures:
            raise ValueError(f"--pool takes plain runs; {path} was made with --merge")
        if figures.get("byte_perplexity_1_8"):
            raise ValueError(f"--pool covers MQAR and decode cost only; {path} holds byte perplexity")
        seeds += figures["config"]["seeds"]
        rows = [row for row in figures["mqar"] if kept(row["kind"])]
        missing = sorted(set(kinds or ()) - {row["kind"] for row in rows})
        if missing:
            raise ValueError(f"--pool --kinds: {path} has no rows of {missing}")
        keys = {(row["budget"], row["kind"]) for row in rows}
        if per_seed and keys != set(per_seed):
            raise ValueError(f"--pool: {path} has other budgets or kinds than {first_path}")
        for row in rows:
            per_seed.setdefault((row["budget"], row["kind"]), []).extend(_seed_values(path, row, figures))
        for row in figures["decode_cost"]:
            if kept(row["kind"]):
                cost.setdefault((row["kind"], int(row["context"])), []).append(row)
        traces |= {key: value for key, value in figures.get("traces", {}).items() if kept_key(path, key)}
        memory |= {key: value for key, value in figures.get("memory", {}).items() if kept_key(path, key)}
    pooled_cost = [
        {
            "kind": kind,
            "context": context,
            "ms_per_token": statistics.fmean(float(r["ms_per_token"]) for r in rows),
            "kv_bytes": rows[0]["kv_bytes"],
        }
        for (kind, context), rows in cost.items()
    ]
    order = sorted(per_seed, key=lambda key: (key[0], EVALUATED.index(key[1])))
    table = summarize({key: per_seed[key] for key in order})
    config = {key: value for key, value in first["figures"]["config"].items() if key not in dropped}
    budgets = list(dict.fromkeys(budget for budget, _ in order))
    return {
        "config": {**config, "seeds": seeds, "budgets": budgets},
        **({"pooled_kinds": list(kinds)} if kinds is not None else {}),
        "mqar": table,
        "traces": traces,
        "memory": memory,
        "byte_perplexity_1_8": {},
        "decode_cost": pooled_cost,
        "targets": compute_targets(table, pooled_cost),
        "pooled_from": [
            {"path": path, "command": record["command"], "time": record["time"]} for path, record in records
        ],
    }


def merged_config(config: dict[str, Any], stored: dict[str, Any], rerun: tuple[str, ...]) -> dict[str, Any]:
    """The ``config`` of a merged record: with no ARM kind in ``rerun``, its ARM rows, and so the settings that
    change ARM alone (:data:`ARM_ONLY_SETTINGS`), are the stored run's.

    Example:
        >>> stored = {"figures": {"config": {"usage_start": 0.5, "arm_learned": {"budget_cost": 2.0}}}}
        >>> merged_config({"steps": 8, "usage_start": 0.2}, stored, ("full",))
        {'steps': 8, 'arm_learned': {'budget_cost': 2.0}, 'usage_start': 0.5}
        >>> merged_config({"steps": 8, "usage_start": 0.2}, stored, ("arm_fixed",))
        {'steps': 8, 'usage_start': 0.2}
    """
    if has_arm_kind(rerun):
        return config
    theirs = stored["figures"]["config"]
    own = {key: value for key, value in config.items() if key not in ARM_ONLY_SETTINGS}
    return {**own, **{key: theirs[key] for key in ARM_ONLY_SETTINGS if key in theirs}}


def merge_pooled(pooled: dict[str, Any], path: str, stored: dict[str, Any]) -> dict[str, Any]:
    """Pooled figures (:func:`pool_records`) with every kind they lack filled from a stored run's JSON at ``path``.

    The targets are recomputed from both; rows say their ``source`` and the record names the stored run, as a
    ``--merge`` run does.
    """
    kinds = tuple(name for name in EVALUATED if any(row["kind"] == name for row in pooled["mqar"]))
    check_merge_routing(stored, kinds, usage_setting(pooled["config"]))
    check_merge_training(stored, training_settings(pooled["config"]))
    table, cost = merge_stored(pooled["mqar"], pooled["decode_cost"], stored, kinds)
    return {
        **pooled,
        "config": merged_config(pooled["config"], stored, kinds),
        "mqar": table,
        "decode_cost": cost,
        "targets": compute_targets(table, cost),
        "rerun_kinds": list(kinds),
        "merged_from": {"path": path, "command": stored["command"], "time": stored["time"]},
    }


def _probability_or_none(text: str) -> float | None:
    """``--initial-full-read``'s value: ``"none"`` or a number (its range is checked by ``LearnedTraining``)."""
    return None if text.strip().lower() == "none" else float(text)


def _pool_main(parser: argparse.ArgumentParser, args: argparse.Namespace, learned: LearnedTraining) -> None:
    """``--pool A.json B.json ... [--merge STORED.json]``: pool runs of other seeds, fill other kinds from STORED."""
    training = [f for f in ("quick", "budget_1_8_only", "budgets", "text", "steps") if getattr(args, f)]
    if learned != ARM_LEARNED_TRAINING:
        training.append("--read-cost/--cost-start/--freeze-policy/--initial-full-read/--branch-from-fixed")
    if args.usage_penalty != ARM_USAGE_PENALTY or args.usage_start is not None:
        training.append("--usage-penalty/--usage-start")
    if args.lr_schedule != "constant":
        training.append("--lr-schedule")
    if args.grad_clip is not None:
        training.append("--grad-clip")
    if training or args.trace_every:
        parser.error(f"--pool trains nothing: drop the training options {training or ['--trace-every']}")
    try:
        kinds = None if args.kinds == ",".join(EVALUATED) else parse_kinds(args.kinds)
        pooled = pool_records([(str(path), json.loads(path.read_text())) for path in args.pool], kinds)
    except ValueError as err:
        parser.error(str(err))
    if args.merge is not None:
        try:
            pooled = merge_pooled(pooled, str(args.merge), json.loads(args.merge.read_text()))
        except ValueError as err:
            parser.error(str(err))
    print(markdown_table([{k: v for k, v in row.items() if not k.endswith("_per_seed")} for row in pooled["mqar"]]))
    print_targets(pooled["targets"])
    write_json(args.json, "arm_kv_budget", pooled, args)


def main() -> None:
    global USAGE_START, LR_SCHEDULE, GRAD_CLIP
    parser = benchmark_parser(__doc__.splitlines()[0])
    parser.add_argument(
        "--budget-1-8-only", action="store_true", help="only the target's KV budget, 1/8 (64 test sequences)"
    )
    parser.add_argument("--seeds", type=int, default=2, help="seeds at full size (from --seed on)")
    parser.add_argument(
        "--kinds",
        default=",".join(EVALUATED),
        help=f"comma-separated subset of {EVALUATED} to run (snapkv/h2o train full, arm_top_p trains arm_fixed); "
        "with --pool, the kinds to pool",
    )
    parser.add_argument(
        "--budgets",
        default=None,
        help="comma-separated KV budgets from 1/16,1/8,1/4 to run (default: all three at full size)",
    )
    parser.add_argument(
        "--text",
        action="store_true",
        help="also measure byte perplexity at budget 1/8 (on by default only at full size, all budgets and kinds)",
    )
    parser.add_argument(
        "--steps", type=int, default=None, help="training steps of every kind (default 3000, --quick 100)"
    )
    parser.add_argument(
        "--trace-every",
        type=int,
        default=0,
        help="every K steps, log the training loss and the recall on 32 validation sequences (0: off)",
    )
    parser.add_argument(
        "--read-cost",
        type=float,
        default=ARM_LEARNED_TRAINING.cost,
        help=f"learned read: cost per share of the slots read (default {ARM_LEARNED_TRAINING.cost})",
    )
    parser.add_argument(
        "--cost-start",
        type=float,
        default=ARM_LEARNED_TRAINING.start,
        help=f"learned read: fraction of training without cost (default {ARM_LEARNED_TRAINING.start})",
    )
    parser.add_argument(
        "--freeze-policy",
        action=argparse.BooleanOptionalAction,
        default=ARM_LEARNED_TRAINING.freeze_policy,
        help="learned read: keep the policy's initial choices while the cost is 0",
    )
    parser.add_argument(
        "--initial-full-read",
        type=_probability_or_none,
        default=ARM_LEARNED_TRAINING.initial_full_read,
        metavar="P",
        help="learned read: start the policy on the fixed read with probability P in (0, 1), or 'none' for the "
        f"default initialisation (default {ARM_LEARNED_TRAINING.initial_full_read})",
    )
    parser.add_argument(
        "--branch-from-fixed",
        action=argparse.BooleanOptionalAction,
        default=ARM_LEARNED_TRAINING.branch_from_fixed,
        help="learned read: train the fixed-read model until the cost starts and continue the learned read from "
        "its weights, optimizer state and RNGs there (paired with the fixed read; MQAR only)",
    )
    parser.add_argument(
        "--merge",
        type=Path,
        default=None,
        help="stored JSON of an earlier run: its rows fill the kinds not in --kinds, and the targets use both",
    )
    parser.add_argument(
        "--usage-penalty",
        type=float,
        default=ARM_USAGE_PENALTY,
        metavar="BETA",
        help="ARM kinds: ARMAttention's usage_penalty (writes the gate deems worth storing avoid used slots; "
        f"default {ARM_USAGE_PENALTY}; 0 turns it off)",
    )
    parser.add_argument(
        "--usage-start",
        type=float,
        default=None,
        metavar="F",
        help="with --usage-penalty: route by the keys alone for the first fraction F of the steps "
        f"(default {ARM_USAGE_START})",
    )
    parser.add_argument(
        "--lr-schedule",
        choices=LR_SCHEDULES,
        default="constant",
        help="every kind: the learning rate after its warm-up, constant (default), a cosine decay to 0, or "
        f"constant then a linear decay to 0 over the last {WSD_DECAY_FRACTION} of the steps (wsd)",
    )
    parser.add_argument(
        "--grad-clip",
        type=float,
        default=None,
        metavar="C",
        help="every kind: clip the gradients' total norm to C before each step (default: no clipping)",
    )
    parser.add_argument(
        "--pool",
        type=Path,
        nargs="+",
        default=None,
        metavar="RUN.json",
        help="pool the JSON of runs of other seeds with the same settings into one record (nothing is trained)",
    )
    args = parser.parse_args()
    if not (args.usage_penalty >= 0 and math.isfinite(args.usage_penalty)):
        parser.error(f"--usage-penalty must be a finite number >= 0, got {args.usage_penalty}")
    if args.usage_start is not None and not 0.0 <= args.usage_start < 1.0:
        parser.error(f"--usage-start must be in [0, 1), got {args.usage_start}")
    if args.usage_start is not None and args.usage_penalty == 0:
        parser.error("--usage-start needs a --usage-penalty above 0")
    # set on every call from the flags alone (nothing carries over from an earlier call in the same process)
    USAGE_START = ARM_USAGE_START if args.usage_start is None else args.usage_start
    LR_SCHEDULE = args.lr_schedule
    if args.grad_clip is not None and not (math.isfinite(args.grad_clip) and args.grad_clip > 0):
        parser.error(f"--grad-clip must be a finite number > 0 (the largest gradient norm), got {args.grad_clip}")
    GRAD_CLIP = args.grad_clip
    training = {"lr_schedule": LR_SCHEDULE, "grad_clip": GRAD_CLIP}  # keys: TRAINING_DEFAULTS
    if args.usage_penalty > 0:  # recorded in config.arm_learned and config.usage_start
        ARM_ROUTING["usage_penalty"] = args.usage_penalty
    else:  # absent from the config, as in the runs made before the option
        ARM_ROUTING.pop("usage_penalty", None)
    try:
        learned = LearnedTraining(
            args.read_cost,
            args.cost_start,
            ARM_LEARNED_TRAINING.ramp,
            args.freeze_policy,
            args.initial_full_read,
            args.branch_from_fixed,
        )
    except ValueError as err:
        parser.error(
            "--read-cost must be >= 0, --cost-start in [0, 1], --initial-full-read in (0, 1) or none, and "
            f"--freeze-policy goes with --no-branch-from-fixed: {err}"
        )
    if args.pool is not None:
        _pool_main(parser, args, learned)
        return
    if args.seeds < 1:
        parser.error(f"--seeds must be >= 1, got {args.seeds}")
    if args.steps is not None and args.steps < 1:
        parser.error(f"--steps must be >= 1, got {args.steps}")
    if args.trace_every < 0:
        parser.error(f"--trace-every must be >= 0, got {args.trace_every}")
    try:
        kinds = parse_kinds(args.kinds)
    except ValueError as err:
        parser.error(str(err))
    stored: dict[str, Any] | None = None
    if args.merge is not None:
        stored = json.loads(args.merge.read_text())
        setting = (ARM_ROUTING["usage_penalty"], USAGE_START) if "usage_penalty" in ARM_ROUTING else (None, None)
        try:
            check_merge_routing(stored, kinds, setting)
            check_merge_training(stored, training)
        except ValueError as err:
            parser.error(str(err))
    torch.set_num_threads(max(1, min(2, torch.get_num_threads())))
    quick = args.quick
    budgets = {"1/16": SEQ // 16, "1/8": SEQ // 8, "1/4": SEQ // 4}
    if args.budgets is not None:
        chosen = [b.strip() for b in args.budgets.split(",") if b.strip()]
        if not chosen or any(b not in budgets for b in chosen) or args.budget_1_8_only or quick:
            parser.error(
                f"--budgets must be a comma-separated subset of {tuple(budgets)} "
                f"(without --budget-1-8-only or --quick), got {args.budgets!r}"
            )
        budgets = {b: budgets[b] for b in budgets if b in chosen}
    if quick or args.budget_1_8_only:
        budgets = {"1/8": budgets["1/8"]}
    if args.text and kinds != EVALUATED:
        parser.error("--text trains every kind: it cannot be combined with --kinds")
    seeds = [args.seed + i for i in range(1 if quick else args.seeds)]
    steps, batch, layers, n_eval = (100, 16, 1, 32) if quick else (3000, 32, 1, 64 if args.budget_1_8_only else 128)
    steps = args.steps or steps
    runs: dict[str, list[dict[str, dict[str, float]]]] = {}
    traces: dict[str, list[dict[str, float]]] = {}
    memory: dict[str, dict[str, float]] = {}
    for label, budget in budgets.items():
        runs[label] = []
        for s in seeds:
            rows, seed_traces, seed_memory = _mqar_run(
                budget, s, steps, batch, layers, n_eval, kinds, args.trace_every, learned
            )
            memory |= {f"{label} {name} seed {s}": stats for name, stats in seed_memory.items()}
            runs[label].append(rows)
            traces |= {f"{label} {name} seed {s}": trace for name, trace in seed_traces.items()}
        print(f"budget {label} done", flush=True)
    table = summarize(
        {
            (label, name): [(r[name]["acc"], r[name]["slots"], r[name]["train_s"]) for r in per_seed]
            for label, per_seed in runs.items()
            for name in kinds
        }
    )
    perplexity: dict[str, float] = {}
    if args.text or (not quick and not args.budget_1_8_only and args.budgets is None and kinds == EVALUATED):
        perplexity = _text_run(SEQ // 8, args.seed, 300, 8, layers, 16, learned)
        print(markdown_table([{"kind": k, "byte_ppl_1_8": v} for k, v in perplexity.items()]))
    cost = []
    for name in (k for k in COST_KINDS if k in kinds):
        for length in (512, 1024, 2048):
            cost.append({"kind": name, "context": length, **_decode_cost(name, length, layers)})
    if stored is not None:
        table, cost = merge_stored(table, cost, stored, kinds)
    print(markdown_table(table))
    print(markdown_table(cost))
    targets = compute_targets(table, cost)
    figures: dict[str, Any] = {
        "config": {
            "seq_len": SEQ,
            "train_len": TRAIN_LEN,
            "pairs": PAIRS,
            "steps": steps,
            "batch": batch,
            "layers": layers,
            "lr": LR,
            "warmup": WARMUP,
            "seeds": seeds,
            "budgets": list(budgets),
            "arm_learned": {**_attention("arm_learned", SEQ // 8, learned)[1], **learned.as_config()},
            **({"usage_start": USAGE_START} if "usage_penalty" in ARM_ROUTING else {}),
            # absent at their defaults, as in the runs made before the options
            **{key: value for key, value in training.items() if value != TRAINING_DEFAULTS[key]},
        },
        "mqar": table,
        "traces": traces,
        "memory": memory,
        "byte_perplexity_1_8": perplexity,
        "decode_cost": cost,
        "targets": targets,
    }
    if stored is not None:
        figures["config"] = merged_config(figures["config"], stored, kinds)
        figures["rerun_kinds"] = list(kinds)
        figures["merged_from"] = {"path": str(args.merge), "command": stored["command"], "time": stored["time"]}
    print_targets(targets)
    write_json(args.json, "arm_kv_budget", figures, args)


if __name__ == "__main__":
    main()
