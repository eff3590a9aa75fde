"""What each piece a user adds costs against its plain alternative: optimizers, callbacks, metrics, ops, imports.

Each row times our piece and its plain alternative side by side, in interleaved rounds on one thread with the
process CPU clock (``lightning_icml26.optim.interleaved_cost``: the median of per-round ratios, which tolerates a
shared machine). Optimizers per step (``step_cost``, gradients fixed): ReWA against torch's foreach SGD/AdamW on an
MLP 784-300-100-10 and a transformer block (d 256). Callbacks per 100 ``Trainer`` steps of a ``ClassifierModule``.
Fairness metrics per update against fairlearn. ``soft_rank`` against ``torch.sort``; ARM decode per token against
SDPA over a preallocated KV cache (ARM at a KV budget of 1/8 of the context). Imports in a fresh interpreter.

    python -m benchmarks.overhead --quick
    python -m benchmarks.overhead --json benchmarks/results/overhead.json
"""

from __future__ import annotations

import argparse
import copy
import importlib.util
import logging
import math
import resource
import statistics
import subprocess
import sys
import tempfile
import warnings
from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F
from lightning.pytorch import Trainer, seed_everything
from torch import nn
from torch.nn.utils import prune
from torch.optim import SGD, AdamW
from torch.utils.data import DataLoader, TensorDataset

from benchmarks._common import benchmark_parser, markdown_table, print_targets, target, write_json
from lightning_icml26 import callbacks
from lightning_icml26.modules import ClassifierModule
from lightning_icml26.ops import soft_rank
from lightning_icml26.ops.attention import ARMAttention, ARMCache
from lightning_icml26.optim import ReWAAdamW, ReWASGD, interleaved_cost, rewa_param_groups, step_cost

__all__ = ["build_targets", "main"]

SOFT_RANK_SIZES = (8, 16, 32, 64, 128, 256, 1024)
SOFT_RANK_BATCHED = ((256, 100), (1024, 128))
ARM_CONTEXTS = (512, 4096)
CALLBACKS = ("GeoReg", "MagnitudePrune", "FailOnNonFiniteLoss", "SparsityMonitor")
SGD_ARGS: dict[str, Any] = {"lr": 1e-2, "momentum": 0.9, "weight_decay": 1e-4}
ADAMW_ARGS: dict[str, Any] = {"lr": 1e-3, "weight_decay": 1e-2}
OPTIMIZERS: tuple[tuple[str, Callable[[nn.Module], Any], Callable[[nn.Module], Any]], ...] = (
    ("ReWASGD", lambda m: ReWASGD(m.parameters(), **SGD_ARGS), lambda m: SGD(m.parameters(), **SGD_ARGS, foreach=True)),
    (
        "ReWASGD(rewa_param_groups)",
        lambda m: ReWASGD(rewa_param_groups(m), **SGD_ARGS),
        lambda m: SGD(m.parameters(), **SGD_ARGS, foreach=True),
    ),
    (
        "ReWAAdamW",
        lambda m: ReWAAdamW(m.parameters(), **ADAMW_ARGS),
        lambda m: AdamW(m.parameters(), **ADAMW_ARGS, foreach=True),
    ),
)
GROUPS = ("optimizer", "callback", "metric", "soft_rank", "arm", "import")
CPU: dict[str, Any] = {"limit_val_batches": 0, "num_sanity_val_steps": 0, "accelerator": "cpu", "devices": 1}
IMPORTS = (("lightning_icml26.metrics", "torchmetrics"), ("lightning_icml26.callbacks", "lightning.pytorch"))


def _row(group: str, piece: str, against: str, size: str, timing: dict[str, float]) -> dict[str, Any]:
    return {"group": group, "piece": piece, "against": against, "size": size, **timing}


def _mlp() -> nn.Module:
    return nn.Sequential(nn.Linear(784, 300), nn.ReLU(), nn.Linear(300, 100), nn.ReLU(), nn.Linear(100, 10))


def _transformer() -> nn.Module:
    return nn.TransformerEncoderLayer(d_model=256, nhead=4, dim_feedforward=1024, batch_first=True)


def _with_grads(model: nn.Module, seed: int) -> nn.Module:
    gen = torch.Generator().manual_seed(seed)
    for p in model.parameters():
        p.grad = torch.randn(p.shape, generator=gen) * 1e-2
    return model


def optimizer_rows(rounds: int, min_seconds: float, seed: int) -> list[dict[str, Any]]:
    """One row per (model, optimizer): ReWA's step against torch's foreach step on the same gradients."""
    rows = []
    for model_name, build in (("mlp_784_300_100_10", _mlp), ("transformer_d256", _transformer)):
        torch.manual_seed(seed)
        base = build()
        for name, ours_opt, plain_opt in OPTIMIZERS:
            # deepcopy does not copy .grad: each copy gets the same fixed gradients
            ours = ours_opt(_with_grads(copy.deepcopy(base), seed))
            plain = plain_opt(_with_grads(copy.deepcopy(base), seed))
            timing = step_cost(ours, plain, rounds, min_seconds)
            baseline = "SGD(foreach)" if "SGD" in name else "AdamW(foreach)"
            rows.append(_row("optimizer", f"{name} step", baseline, model_name, timing))
    return rows


def _callback(name: str) -> Any:
    if name == "GeoReg":
        return callbacks.GeoReg(feature_layer="net.3", weight=0.1, target=1)
    if name == "MagnitudePrune":  # pruned at the first epoch, then the fixed mask on every step
        return callbacks.MagnitudePrune(amount=0.5, include="linear", prune_at_epoch=0, evaluate=None)
    if name == "FailOnNonFiniteLoss":
        return callbacks.FailOnNonFiniteLoss()
    if name == "SparsityMonitor":
        return callbacks.SparsityMonitor(include="linear")
    raise ValueError(f"unknown callback {name!r}; allowed: {CALLBACKS}")


def _fit(callback: Any, steps: int, loader: Any, seed: int, torch_prune: bool = False) -> None:
    seed_everything(seed, verbose=False)
    module = ClassifierModule(_mlp(), num_classes=10)
    if torch_prune:  # torch's own fixed-mask pruning, MagnitudePrune's criterion: global magnitude, half the weights
        weights = [(m, "weight") for m in module.modules() if isinstance(m, nn.Linear)]
        prune.global_unstructured(weights, pruning_method=prune.L1Unstructured, amount=0.5)
    quiet: dict[str, Any] = {
        "logger": False,
        "enable_checkpointing": False,
        "enable_progress_bar": False,
        "enable_model_summary": False,
    }
    root = tempfile.mkdtemp(prefix="overhead_")  # MagnitudePrune writes its JSON there
    callbacks = [] if callback is None else [callback]
    trainer = Trainer(default_root_dir=root, max_steps=steps, max_epochs=1, callbacks=callbacks, **quiet, **CPU)
    trainer.fit(module, train_dataloaders=loader)


def callback_rows(rounds: int, steps: int, seed: int) -> list[dict[str, Any]]:
    """One row per callback: ``steps`` Trainer steps with it against the same steps with no callback."""
    for logger_name in ("lightning.pytorch", "lightning.fabric"):
        logging.getLogger(logger_name).setLevel(logging.ERROR)
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(steps * 32, 784, generator=gen)
    y = torch.randint(0, 10, (steps * 32,), generator=gen)
    loader = DataLoader(TensorDataset(x, y), batch_size=32)
    rows = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name in CALLBACKS:

            def ours(name: str = name) -> None:
                _fit(_callback(name), steps, loader, seed)

            def plain() -> None:
                _fit(None, steps, loader, seed)

            timing = interleaved_cost(ours, plain, rounds, min_seconds=1e-6)
            rows.append(_row("callback", name, "no callback", f"{steps} steps", timing))
        # A pruned model costs more to train than a dense one whoever keeps it pruned (AdamW's sqrt on the exact
        # zeros of the pruned weights' second moments): the same pruning with torch.nn.utils.prune, for context;
        # the target above stays against no callback.
        timing = interleaved_cost(
            lambda: _fit(_callback("MagnitudePrune"), steps, loader, seed),
            lambda: _fit(None, steps, loader, seed, torch_prune=True),
            rounds,
            min_seconds=1e-6,
        )
        rows.append(_row("callback", "MagnitudePrune", "torch.nn.utils.prune", f"{steps} steps", timing))
    return rows


def metric_rows(rounds: int, min_seconds: float, seed: int, n: int) -> list[dict[str, Any]]:
    """Fairness metrics (update + compute on one batch) against fairlearn's functions on the same batch."""
    if importlib.util.find_spec("fairlearn") is None:
        return []
    import numpy as np
    from fairlearn.metrics import demographic_parity_difference, equalized_odds_difference

    from lightning_icml26.metrics import BinaryDemographicParity, BinaryEqualizedOdds

    gen = torch.Generator().manual_seed(seed)
    preds = torch.randint(0, 2, (n,), generator=gen)
    target_ = torch.randint(0, 2, (n,), generator=gen)
    groups = torch.randint(0, 4, (n,), generator=gen)
    p_np, t_np, g_np = preds.numpy(), target_.numpy(), groups.numpy().astype(np.int64)
    rows = []
    for name, metric, fair in (
        ("BinaryDemographicParity", BinaryDemographicParity(num_groups=4), demographic_parity_difference),
        ("BinaryEqualizedOdds", BinaryEqualizedOdds(num_groups=4), equalized_odds_difference),
    ):

        def ours(metric: Any = metric) -> Any:
            metric.reset()
            metric.update(preds, target_, groups)
            return metric.compute()

        def plain(fair: Any = fair) -> Any:
            return fair(t_np, p_np, sensitive_features=g_np)

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            timing = interleaved_cost(ours, plain, rounds, min_seconds)
        rows.append(_row("metric", name, "fairlearn", f"{n} samples", timing))
    return rows


def soft_rank_rows(rounds: int, min_seconds: float, seed: int, sizes: tuple[int, ...]) -> list[dict[str, Any]]:
    """``soft_rank`` against ``torch.sort`` (values and indices) on the same input: one row, then batched rows."""
    gen, rows = torch.Generator().manual_seed(seed), []
    for b, n in [(1, n) for n in sizes] + list(SOFT_RANK_BATCHED):
        x = torch.randn(b, n, generator=gen)
        values = x[0] if b == 1 else x

        def ours(values: torch.Tensor = values) -> Any:
            return soft_rank(values, 1.0)

        def plain(values: torch.Tensor = values) -> Any:
            return torch.sort(values)

        timing = interleaved_cost(ours, plain, rounds, min_seconds)
        size = f"n={n}" if b == 1 else f"{b}x{n}"
        rows.append(_row("op", "soft_rank", "torch.sort", size, timing))
    return rows


def _arm_case(context: int, heads: int, dim: int, seed: int) -> tuple[Callable[[], Any], Callable[[], Any]]:
    """ARM's decode step and SDPA over a KV cache of ``context`` tokens, on the same new token."""
    torch.manual_seed(seed)
    window = context // 32  # budget context / 8: a quarter window, the rest slots
    slots = context // 8 - window
    attn = ARMAttention(heads, dim, num_slots=slots, num_clusters=4, window=window).eval()
    gen = torch.Generator().manual_seed(seed)
    # the state after a long context: every slot and window position filled (a decode step costs the same
    # whatever the slots hold; a prefill of 4k tokens through the parallel form would take minutes here)
    mem_k, mem_v = torch.randn(2, 1, heads, slots, dim, generator=gen).unbind(0)
    win_k, win_v = torch.randn(2, 1, heads, window, dim, generator=gen).unbind(0)
    occupied, usage = torch.ones(1, heads, slots, dtype=torch.bool), torch.rand(1, heads, slots, generator=gen)
    full = torch.ones(1, window, dtype=torch.bool)
    cache = ARMCache(mem_k, mem_v, occupied, usage, win_k, win_v, full, context, attn.signature)
    kv_k, kv_v = torch.randn(2, 1, heads, context + 1, dim, generator=gen).unbind(0)  # the SDPA cache, preallocated
    qt, kt, vt = torch.randn(3, 1, 1, heads, dim, generator=gen).unbind(0)

    @torch.no_grad()
    def ours() -> None:
        # one token per call, updating the state in place as a decode loop does (ARMDecoder.step(..., inplace=True))
        # and as the SDPA cache below is written; the ARM state has a fixed size, so every call costs the same,
        # the copy of W - 1 window rows every W + 1 tokens included
        attn.step(qt, kt, vt, cache, inplace=True)

    @torch.no_grad()
    def plain() -> None:
        kv_k[:, :, context] = kt[:, 0]
        kv_v[:, :, context] = vt[:, 0]
        F.scaled_dot_product_attention(qt.transpose(1, 2), kv_k, kv_v)

    return ours, plain


def arm_rows(rounds: int, min_seconds: float, seed: int, contexts: tuple[int, ...]) -> list[dict[str, Any]]:
    """ARM decode, one token, against SDPA of one query over a preallocated KV cache of the same context."""
    heads, dim = 8, 64
    rows = []
    for context in contexts:
        timing = interleaved_cost(*_arm_case(context, heads, dim, seed), rounds, min_seconds)
        size = f"context {context}, H={heads}, d={dim}, budget 1/8"
        rows.append(_row("op", "ARM decode (per token)", "SDPA over a KV cache", size, timing))
    return rows


def _child_cpu_seconds(module: str) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([sys.executable, "-c", f"import {module}"], check=True, capture_output=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def import_rows(rounds: int) -> list[dict[str, Any]]:
    """Import cost in a fresh interpreter (child CPU time), ours against the plain package, interleaved."""
    rows = []
    for ours, plain in IMPORTS:
        times: tuple[list[float], list[float]] = ([], [])
        ratios = []
        for r in range(rounds):
            order = (0, 1) if r % 2 == 0 else (1, 0)
            for side in order:
                times[side].append(_child_cpu_seconds((ours, plain)[side]))
            ratios.append(times[0][-1] / max(times[1][-1], 1e-9))
        timing = {"ours_us": 1e6 * statistics.median(times[0]), "plain_us": 1e6 * statistics.median(times[1])}
        timing["ratio"] = statistics.median(ratios)
        rows.append(_row("import", f"import {ours}", f"import {plain}", "fresh interpreter", timing))
    return rows


def _against_no_callback(row: dict[str, Any]) -> bool:
    return row["group"] == "callback" and row.get("against", "no callback") == "no callback"


def build_targets(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The issue's targets (worst row of each kind; a row that did not run gives ``nan``, missed).

    Example:
        >>> t = build_targets([{"group": "optimizer", "piece": "ReWASGD step", "ratio": 1.2}])
        >>> t["rewa_sgd_over_sgd_foreach_max"]["met"], t["callback_over_none_max"]["value"]
        (True, nan)
    """

    def worst_of(select: Callable[[dict[str, Any]], bool]) -> float:
        values = [float(r["ratio"]) for r in rows if select(r)]
        return max(values) if values and not any(math.isnan(v) for v in values) else float("nan")

    def arm(context: int) -> float:
        return worst_of(lambda r: r["piece"].startswith("ARM decode") and r["size"].startswith(f"context {context},"))

    return {
        "rewa_sgd_over_sgd_foreach_max": target(worst_of(lambda r: r["piece"].startswith("ReWASGD")), "<=", 1.5),
        "rewa_adamw_over_adamw_foreach_max": target(worst_of(lambda r: r["piece"].startswith("ReWAAdamW")), "<=", 1.5),
        "soft_rank_over_sort_max": target(worst_of(lambda r: r["piece"] == "soft_rank"), "<=", 4.0),
        "callback_over_none_max": target(worst_of(_against_no_callback), "<=", 1.15),
        "arm_decode_over_sdpa_4k": target(arm(4096), "<=", 1.0),
        "arm_decode_over_sdpa_512": target(arm(512), "<=", 2.0),
        "import_over_plain_max": target(worst_of(lambda r: r["group"] == "import"), "<=", 1.1),
    }


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line (``--quick``, ``--json``, ``--seed``, ``--only``)."""
    parser = benchmark_parser(__doc__.splitlines()[0])
    parser.add_argument("--only", default=",".join(GROUPS), help=f"comma-separated groups to run, of {GROUPS}")
    args = parser.parse_args(argv)
    groups, allowed = {g.strip() for g in args.only.split(",") if g.strip()}, set(GROUPS)
    if not groups or groups - allowed:
        parser.error(f"--only must be a comma-separated subset of {sorted(allowed)}, got {args.only!r}")
    args.groups = groups
    return args


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Run the selected rows, print the table and the targets, write the JSON; returns the figures."""
    args = parse_args(argv)
    torch.set_num_threads(1)
    rounds = 5 if args.quick else 11
    min_s = 0.01 if args.quick else 0.05
    rows: list[dict[str, Any]] = []
    if "optimizer" in args.groups:
        rows += optimizer_rows(rounds, min_s, args.seed)
    if "callback" in args.groups:
        rows += callback_rows(3 if args.quick else 7, 100, args.seed)
    if "metric" in args.groups:
        rows += metric_rows(rounds, min_s, args.seed, 4096 if args.quick else 65536)
    if "soft_rank" in args.groups:
        rows += soft_rank_rows(rounds, min_s, args.seed, SOFT_RANK_SIZES)
    if "arm" in args.groups:
        rows += arm_rows(rounds, min_s, args.seed, ARM_CONTEXTS)
    if "import" in args.groups:
        rows += import_rows(3 if args.quick else 7)
    print(markdown_table(rows, ["group", "piece", "against", "size", "ours_us", "plain_us", "ratio"]))
    targets = build_targets(rows)
    print_targets(targets)
    figures = {
        "rows": rows,
        "settings": {"rounds": rounds, "min_seconds_per_side": min_s, "threads": 1, "clock": "process CPU time"},
        "targets": targets,
    }
    write_json(args.json, "overhead", figures, args)
    return figures


if __name__ == "__main__":
    main()
