"""What each piece a user adds costs against its plain alternative: optimizers, callbacks, metrics, ops, imports.

Every row runs the project's piece and its plain alternative side by side in one process, in interleaved
rounds (``ours, plain`` then ``plain, ours``), timed with the process CPU clock on one thread; the figure is the
median over rounds of the per-round ratio ``ours / plain`` (robust to a machine shared with other jobs, since
both sides of a round see the same load). Rows:

* optimizers, per step (gradients fixed, the step alone): ``ReWASGD`` against ``torch.optim.SGD(foreach=True)``
  and ``ReWAAdamW`` against ``torch.optim.AdamW(foreach=True)``, on an MLP 784-300-100-10 and on a transformer
  block of width 256 (``torch.nn.TransformerEncoderLayer``); ``ReWASGD`` on ``rewa_param_groups`` too;
* callbacks, per 100 ``Trainer`` steps of a ``ClassifierModule`` on the MLP: each callback against no callback;
* metrics, per update: the fairness metrics (update and compute) against fairlearn's functions on the same batch;
* ops, per call: ``soft_rank`` against ``torch.sort`` for one row of n = 8..1024 and for batched rows; ARM decode
  per token against SDPA over a preallocated KV cache at 512 and 4,096 tokens of context (ARM at a KV budget of
  1/8 of the context, as in ``arm_kv_budget.py``);
* import cost: ``import lightning_icml26.metrics`` / ``.callbacks`` against ``import torchmetrics`` /
  ``import lightning.pytorch``, each in a fresh interpreter (CPU time of the child process).

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
import time
import warnings
from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from benchmarks._common import benchmark_parser, markdown_table, print_targets, target, write_json
from lightning_icml26.ops import soft_rank
from lightning_icml26.optim import ReWAAdamW, ReWASGD, rewa_param_groups

__all__ = ["build_targets", "interleaved", "main"]

SOFT_RANK_SIZES = (8, 16, 32, 64, 128, 256, 1024)
SOFT_RANK_BATCHED = ((256, 100), (1024, 128))
ARM_CONTEXTS = (512, 4096)
CALLBACKS = ("GeoReg", "MagnitudePrune", "FailOnNonFiniteLoss", "SparsityMonitor")
IMPORTS = (("lightning_icml26.metrics", "torchmetrics"), ("lightning_icml26.callbacks", "lightning.pytorch"))


def interleaved(ours: Callable[[], Any], plain: Callable[[], Any], rounds: int, min_seconds: float) -> dict[str, float]:
    """Time ``ours`` and ``plain`` in interleaved rounds; the median per-round ratio and the median times.

    Each round calls both sides (the order alternates) enough times to take at least ``min_seconds`` of process
    CPU time (the count is fixed after a calibration call of each side), so a round's ratio compares the two
    under the same machine load.

    Args:
        ours: the project's piece, one call.
        plain: the plain alternative, one call.
        rounds: rounds, at least 1.
        min_seconds: CPU seconds per side and round, > 0.

    Returns:
        ``{"ours_us", "plain_us", "ratio"}``: median microseconds per call and the median of per-round ratios.

    Example:
        >>> out = interleaved(lambda: sum(range(200)), lambda: sum(range(100)), rounds=3, min_seconds=0.001)
        >>> sorted(out), out["ratio"] > 0
        (['ours_us', 'plain_us', 'ratio'], True)
    """
    if rounds < 1 or not min_seconds > 0:
        raise ValueError(f"rounds must be >= 1 and min_seconds > 0, got rounds={rounds}, min_seconds={min_seconds}")
    counts = []
    for fn in (ours, plain):
        fn()  # warm-up (lazy state, caches)
        start = time.process_time()
        fn()
        once = max(time.process_time() - start, 1e-6)
        counts.append(max(1, math.ceil(min_seconds / once)))
    times: tuple[list[float], list[float]] = ([], [])
    ratios = []
    for r in range(rounds):
        order = (0, 1) if r % 2 == 0 else (1, 0)
        for side in order:
            fn, n = (ours, plain)[side], counts[side]
            start = time.process_time()
            for _ in range(n):
                fn()
            times[side].append((time.process_time() - start) / n)
        ratios.append(times[0][-1] / max(times[1][-1], 1e-12))
    return {
        "ours_us": 1e6 * statistics.median(times[0]),
        "plain_us": 1e6 * statistics.median(times[1]),
        "ratio": statistics.median(ratios),
    }


# ----------------------------------------------------------------------------------------------- optimizers


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
        cases: list[tuple[str, Callable[[nn.Module], torch.optim.Optimizer], Callable[[nn.Module], Any]]] = [
            (
                "ReWASGD",
                lambda m: ReWASGD(m.parameters(), lr=1e-2, momentum=0.9, weight_decay=1e-4),
                lambda m: torch.optim.SGD(m.parameters(), lr=1e-2, momentum=0.9, weight_decay=1e-4, foreach=True),
            ),
            (
                "ReWASGD(rewa_param_groups)",
                lambda m: ReWASGD(rewa_param_groups(m), lr=1e-2, momentum=0.9, weight_decay=1e-4),
                lambda m: torch.optim.SGD(m.parameters(), lr=1e-2, momentum=0.9, weight_decay=1e-4, foreach=True),
            ),
            (
                "ReWAAdamW",
                lambda m: ReWAAdamW(m.parameters(), lr=1e-3, weight_decay=1e-2),
                lambda m: torch.optim.AdamW(m.parameters(), lr=1e-3, weight_decay=1e-2, foreach=True),
            ),
        ]
        for name, ours_opt, plain_opt in cases:
            # deepcopy does not copy .grad: each copy gets the same fixed gradients
            ours = ours_opt(_with_grads(copy.deepcopy(base), seed))
            plain = plain_opt(_with_grads(copy.deepcopy(base), seed))
            timing = interleaved(ours.step, plain.step, rounds, min_seconds)
            baseline = "SGD(foreach)" if "SGD" in name else "AdamW(foreach)"
            rows.append(
                {"group": "optimizer", "piece": f"{name} step", "against": baseline, "size": model_name, **timing}
            )
    return rows


# ------------------------------------------------------------------------------------------------ callbacks


def _callback(name: str) -> Any:
    from lightning_icml26 import callbacks

    if name == "GeoReg":
        return callbacks.GeoReg(feature_layer="net.3", weight=0.1, target=1)
    if name == "MagnitudePrune":  # pruned at the first epoch, then the fixed mask on every step
        return callbacks.MagnitudePrune(amount=0.5, include="linear", prune_at_epoch=0, evaluate=None)
    if name == "FailOnNonFiniteLoss":
        return callbacks.FailOnNonFiniteLoss()
    if name == "SparsityMonitor":
        return callbacks.SparsityMonitor(include="linear")
    raise ValueError(f"unknown callback {name!r}; allowed: {CALLBACKS}")


def _fit(callback: Any, steps: int, loader: Any, seed: int) -> None:
    from lightning.pytorch import Trainer, seed_everything

    from lightning_icml26.modules import ClassifierModule

    seed_everything(seed, verbose=False)
    module = ClassifierModule(_mlp(), num_classes=10)
    trainer = Trainer(
        default_root_dir=tempfile.mkdtemp(prefix="overhead_"),  # MagnitudePrune writes its JSON there
        max_steps=steps,
        max_epochs=1,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        limit_val_batches=0,
        num_sanity_val_steps=0,
        accelerator="cpu",
        devices=1,
        callbacks=[] if callback is None else [callback],
    )
    trainer.fit(module, train_dataloaders=loader)


def callback_rows(rounds: int, steps: int, seed: int) -> list[dict[str, Any]]:
    """One row per callback: ``steps`` Trainer steps with it against the same steps with no callback."""
    import lightning.pytorch  # noqa: F401  (imported first: it sets its own log level, lowered next)
    from torch.utils.data import DataLoader, TensorDataset

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

            timing = interleaved(
                ours,
                plain,
                rounds,
                min_seconds=1e-6,
            )
            rows.append(
                {"group": "callback", "piece": name, "against": "no callback", "size": f"{steps} steps", **timing}
            )
    return rows


# -------------------------------------------------------------------------------------------------- metrics


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
            timing = interleaved(ours, plain, rounds, min_seconds)
        rows.append({"group": "metric", "piece": name, "against": "fairlearn", "size": f"{n} samples", **timing})
    return rows


# ------------------------------------------------------------------------------------------------------ ops


def soft_rank_rows(rounds: int, min_seconds: float, seed: int, sizes: tuple[int, ...]) -> list[dict[str, Any]]:
    """``soft_rank`` against ``torch.sort`` (values and indices) on the same input: one row, then batched rows."""
    gen = torch.Generator().manual_seed(seed)
    rows = []
    shapes = [(1, n) for n in sizes] + list(SOFT_RANK_BATCHED)
    for b, n in shapes:
        x = torch.randn(b, n, generator=gen)
        values = x[0] if b == 1 else x

        def ours(values: torch.Tensor = values) -> Any:
            return soft_rank(values, 1.0)

        def plain(values: torch.Tensor = values) -> Any:
            return torch.sort(values)

        timing = interleaved(ours, plain, rounds, min_seconds)
        size = f"n={n}" if b == 1 else f"{b}x{n}"
        rows.append({"group": "op", "piece": "soft_rank", "against": "torch.sort", "size": size, **timing})
    return rows


def _arm_case(context: int, heads: int, dim: int, seed: int) -> tuple[Callable[[], Any], Callable[[], Any]]:
    """ARM's decode step and SDPA over a KV cache of ``context`` tokens, on the same new token."""
    from lightning_icml26.ops.attention import ARMAttention, ARMCache

    torch.manual_seed(seed)
    budget = context // 8
    window = budget // 4
    slots = budget - window
    attn = ARMAttention(heads, dim, num_slots=slots, num_clusters=4, window=window).eval()
    gen = torch.Generator().manual_seed(seed)
    # the state after a long context: every slot and window position filled (a decode step costs the same
    # whatever the slots hold; a prefill of 4k tokens through the parallel form would take minutes here)
    mem_k, mem_v = torch.randn(2, 1, heads, slots, dim, generator=gen).unbind(0)
    win_k, win_v = torch.randn(2, 1, heads, window, dim, generator=gen).unbind(0)
    cache = ARMCache(
        mem_k,
        mem_v,
        torch.ones(1, heads, slots, dtype=torch.bool),
        torch.rand(1, heads, slots, generator=gen),
        win_k,
        win_v,
        torch.ones(1, window, dtype=torch.bool),
        context,
        attn.signature,
    )
    k = torch.randn(1, context + 1, heads, dim, generator=gen)
    v = torch.randn(1, context + 1, heads, dim, generator=gen)
    qt, kt, vt = torch.randn(1, 1, heads, dim, generator=gen), k[:, context:], v[:, context:]
    kv_k = torch.zeros(1, heads, context + 1, dim)
    kv_v = torch.zeros(1, heads, context + 1, dim)
    kv_k[:, :, :context] = k[:, :context].transpose(1, 2)
    kv_v[:, :, :context] = v[:, :context].transpose(1, 2)

    @torch.no_grad()
    def ours() -> None:
        # each call decodes one token from the same full state (the ARM state has a fixed size)
        attn.step(qt, kt, vt, cache)

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
        timing = interleaved(*_arm_case(context, heads, dim, seed), rounds, min_seconds)
        rows.append(
            {
                "group": "op",
                "piece": "ARM decode (per token)",
                "against": "SDPA over a KV cache",
                "size": f"context {context}, H={heads}, d={dim}, budget 1/8",
                **timing,
            }
        )
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
        rows.append(
            {
                "group": "import",
                "piece": f"import {ours}",
                "against": f"import {plain}",
                "size": "fresh interpreter",
                "ours_us": 1e6 * statistics.median(times[0]),
                "plain_us": 1e6 * statistics.median(times[1]),
                "ratio": statistics.median(ratios),
            }
        )
    return rows


# -------------------------------------------------------------------------------------------------- targets


def build_targets(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The issue's targets from the rows; a row that did not run gives ``nan`` (missed).

    Names (the same at ``--quick`` and full size): ``rewa_sgd_over_sgd_foreach_max`` and
    ``rewa_adamw_over_adamw_foreach_max`` (worst over the two models, ``<= 1.5``),
    ``soft_rank_over_sort_max`` (worst over every n >= 8 and the batched rows, ``<= 4``),
    ``callback_over_none_max`` (worst callback, ``<= 1.15``), ``arm_decode_over_sdpa_4k`` (``<= 1``),
    ``arm_decode_over_sdpa_512`` (``<= 2``), ``import_over_plain_max`` (``<= 1.1``).

    Example:
        >>> rows = [{"group": "optimizer", "piece": "ReWASGD step", "ratio": 1.2},
        ...         {"group": "optimizer", "piece": "ReWAAdamW step", "ratio": 1.7}]
        >>> t = build_targets(rows)
        >>> t["rewa_sgd_over_sgd_foreach_max"]["met"], t["rewa_adamw_over_adamw_foreach_max"]["met"]
        (True, False)
        >>> t["callback_over_none_max"]["value"]
        nan
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
        "callback_over_none_max": target(worst_of(lambda r: r["group"] == "callback"), "<=", 1.15),
        "arm_decode_over_sdpa_4k": target(arm(4096), "<=", 1.0),
        "arm_decode_over_sdpa_512": target(arm(512), "<=", 2.0),
        "import_over_plain_max": target(worst_of(lambda r: r["group"] == "import"), "<=", 1.1),
    }


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line (``--quick``, ``--json``, ``--seed``, ``--only``)."""
    parser = benchmark_parser(__doc__.splitlines()[0])
    parser.add_argument(
        "--only",
        default="optimizer,callback,metric,soft_rank,arm,import",
        help="comma-separated groups to run (optimizer, callback, metric, soft_rank, arm, import)",
    )
    args = parser.parse_args(argv)
    groups = {g.strip() for g in args.only.split(",") if g.strip()}
    allowed = {"optimizer", "callback", "metric", "soft_rank", "arm", "import"}
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
