"""ReWA against proximal and subgradient L1, gradual magnitude pruning (GMP) and dense training on FashionMNIST.

The paper's claim in miniature: at the same accuracy loss, ReWA leaves far fewer non-zero weights than L1
(about 3x at ResNet-18 / CIFAR-10 scale). Here: an over-parameterised MLP 784-300-100-10 on all of
FashionMNIST (55,000 training images, 5,000 held out as validation, the 10,000 test images used only for the
final report), trained with the paper's CIFAR recipe (SGD, momentum 0.875, batch 256, linear warm-up then
cosine learning rate, label smoothing 0.1). Per seed, every model (5 strengths of ReWA K=9 M=2, 5 of proximal
L1, 5 of subgradient L1, 5 GMP final sparsities, 1 dense) starts from the same initial weights and sees the
same mini-batches; all of them train together (one batched matmul per layer). Then each model's weight
matrices are magnitude-thresholded at a sweep of thresholds (no retraining, as the paper's
``eval_checkpoint.py --thr``). For each allowed drop (0.5 / 1 / 2 / 3.5 points below the dense model's
validation accuracy) the strength AND threshold with the largest compression ratio (weight entries / non-zero
entries, biases excluded) are chosen on validation; the table reports that point's test accuracy.

Target: ReWA's compression ratio at -3.5 pt is at least 2x that of L1 (the better of proximal and subgradient,
chosen on validation), mean over seeds.

Choices and deviations (this project's, stated so that a reader can weigh the figures):

* Epochs: 5 by default (1 warm-up), not the 30+ the paper-scale comparison would want. One epoch of the 21
  models of a seed took about 15 s on a quiet 2-core machine (extrapolated from 8k images) and 70-310 s on the
  shared, loaded one this figure was measured on, so 30 epochs x 3 seeds does not fit in about 30 minutes.
  ``--epochs 30`` runs the longer schedule. Short runs favour the method that sparsifies fastest; ReWA with
  ``M = 2`` cannot move a weight across zero without momentum (sign lock, see ``ReWASGD``), which also matters
  most when short. Measured at 5 epochs: ReWA's decay costs accuracy before it sparsifies (docs/rewa.md).
* One learning rate for every method (0.256, the paper's CIFAR value), weight decay 1e-4 for dense and GMP,
  no decay on biases (plain momentum SGD for every method's biases); ReWA K = 9, M = 2, eps = 0.
* GMP (Zhu & Gupta): cubic schedule from the end of warm-up to 75 % of training, masks recomputed every
  quarter epoch by GLOBAL magnitude over the three weight matrices (Zhu & Gupta prune each layer to the same
  sparsity; global ranking is the stronger and more common variant today), then fine-tuned with the mask fixed.
* Strength grids are half-decade steps placed by short probe runs on the validation split (see ``GRIDS``);
  the test split never enters a choice.

    python -m benchmarks.rewa_sparsity --quick
    python -m benchmarks.rewa_sparsity --json benchmarks/results/rewa_sparsity.json

A seed can run on its own and join a stored record: ``--seed 2 --seeds 1 --merge PATH --json PATH`` reads the
per-seed records of ``PATH`` (written by this script with the same settings apart from the seeds, the thread
count and the paths), trains only the seeds it does not hold yet, and writes the summary over all of them.
"""

from __future__ import annotations

import json
import math
import statistics
import time
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch.utils.data import TensorDataset

from benchmarks._common import benchmark_parser, markdown_table, print_targets, ratio, target, write_json
from benchmarks._rewa_mlp import (
    StackedMLP,
    compression_at_drop,
    global_magnitude_masks,
    gmp_sparsity,
    lr_at,
    sweep_thresholds,
)
from lightning_icml26.data import FashionMNISTDataModule
from lightning_icml26.optim import L1SGD, ReWASGD

DROPS = (0.005, 0.01, 0.02, 0.035)  # allowed accuracy drop below dense (fractions)
THRESHOLDS = [0.0] + [float(f"{10 ** (e / 6):.3g}") for e in range(-30, -2)]  # 1e-5 .. 0.46, increasing
GRIDS: dict[str, tuple[float, ...]] = {
    "ReWA": (1e-4, 3e-4, 1e-3, 3e-3, 1e-2),  # weight decay on y (K = 9, M = 2)
    "L1 prox": (3e-5, 1e-4, 3e-4, 1e-3, 3e-3),  # l1 coefficient, soft-threshold after each step
    "L1 sub": (3e-5, 1e-4, 3e-4, 1e-3, 3e-3),  # l1 coefficient, sign(w) added to the gradient
    "GMP": (0.5, 0.8, 0.9, 0.95, 0.98),  # final sparsity of the cubic schedule
    "dense": (1e-4,),  # ordinary weight decay
}
L1_METHODS = ("L1 prox", "L1 sub")


def _load(args: Any, seed: int) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
    dm = FashionMNISTDataModule(num_train=args.num_train, num_val=args.num_val, num_test=args.num_test, seed=seed)
    dm.setup()
    out = {}
    for split in ("train", "val", "test"):
        dataset = dm._splits[split]
        if not isinstance(dataset, TensorDataset):
            raise TypeError(f"expected a TensorDataset for split {split!r}, got {type(dataset).__name__}")
        x, y = dataset.tensors
        out[split] = (x.flatten(1).contiguous(), y)
    return out


def _optimizers(net: StackedMLP, args: Any) -> tuple[list[torch.optim.Optimizer], list[tuple[str, float]]]:
    """One optimizer per method (one parameter group per strength) and the (method, strength) of each model."""
    common = {"lr": args.lr, "momentum": args.momentum}
    models: list[tuple[str, float]] = [(m, s) for m, grid in GRIDS.items() for s in grid]
    groups: dict[str, list[dict[str, Any]]] = {m: [] for m in GRIDS}
    for g, (method, strength) in enumerate(models):
        params = net.model_weights(g)
        if method == "ReWA":
            groups[method].append({"params": params, "weight_decay": strength})
        elif method in L1_METHODS:
            groups[method].append({"params": params, "l1": strength})
        elif method == "GMP":
            groups[method].append({"params": params, "weight_decay": GRIDS["dense"][0]})
        else:
            groups[method].append({"params": params, "weight_decay": strength})
    biases = [b for layer in net.biases for b in layer]
    opts: list[torch.optim.Optimizer] = [
        ReWASGD(groups["ReWA"], K=9, M=2, eps=0.0, lr=args.rewa_lr or args.lr, momentum=args.momentum),
        L1SGD(groups["L1 prox"], mode="proximal", **common),
        L1SGD(groups["L1 sub"], mode="subgradient", **common),
        torch.optim.SGD(groups["GMP"] + groups["dense"], **common),
        torch.optim.SGD(biases, weight_decay=0.0, **common),  # biases: plain momentum SGD for every method
    ]
    for opt in opts:
        for group in opt.param_groups:
            group["initial_lr"] = group["lr"]
    return opts, models


def train_seed(args: Any, seed: int) -> dict[str, Any]:
    """Train every model of one seed together; return the validation sweeps and the chosen points' test scores."""
    data = _load(args, seed)
    x, y = data["train"]
    torch.manual_seed(seed)
    net = StackedMLP(sum(len(grid) for grid in GRIDS.values()), seed=seed)
    opts, models = _optimizers(net, args)
    gmp = [g for g, (m, _) in enumerate(models) if m == "GMP"]
    masks: dict[int, list[torch.Tensor]] = {}
    steps_per_epoch = -(-len(y) // args.batch_size)
    total, warmup = args.epochs * steps_per_epoch, args.warmup_epochs * steps_per_epoch
    prune_start, prune_end = warmup, int(0.75 * total)  # Zhu & Gupta: prune from t0 over n steps, then fine-tune
    prune_every = max(1, steps_per_epoch // 4)
    gen = torch.Generator().manual_seed(seed)
    start, step = time.perf_counter(), 0
    for epoch in range(args.epochs):
        perm = torch.randperm(len(y), generator=gen)
        for i in range(0, len(y), args.batch_size):
            idx = perm[i : i + args.batch_size]
            factor = lr_at(step, total, warmup, 1.0)
            for opt in opts:
                for group in opt.param_groups:
                    group["lr"] = factor * group["initial_lr"]
                opt.zero_grad(set_to_none=True)
            logits = net(x[idx])
            targets = y[idx].repeat(len(models))
            loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets, label_smoothing=0.1) * len(models)
            loss.backward()
            for opt in opts:
                opt.step()
            with torch.no_grad():
                if prune_start <= step <= prune_end and (step - prune_start) % prune_every == 0:
                    for g in gmp:
                        sparsity = gmp_sparsity(step, models[g][1], prune_start, prune_end)
                        masks[g] = global_magnitude_masks(net.model_weights(g), sparsity)
                for g, mask in masks.items():
                    for w, m in zip(net.model_weights(g), mask, strict=True):
                        w.mul_(m)
            step += 1
        if epoch == 0 or epoch == args.epochs - 1:
            print(f"  seed {seed} epoch {epoch + 1}/{args.epochs} {time.perf_counter() - start:.0f} s", flush=True)
    train_seconds = time.perf_counter() - start
    sweeps = [sweep_thresholds(net, g, THRESHOLDS, data["val"]) for g in range(len(models))]
    dense_g = models.index(("dense", GRIDS["dense"][0]))
    reference = sweeps[dense_g][0]["accuracy"]
    dense_test = sweep_thresholds(net, dense_g, [0.0], data["test"])[0]["accuracy"]
    candidates: dict[str, list[dict[str, Any]]] = {m: [] for m in (*GRIDS, "L1")}
    for g, (method, strength) in enumerate(models):
        for point in sweeps[g]:
            c = {"model": g, "method": method, "strength": strength, **point}
            c["val_accuracy"] = c.pop("accuracy")
            candidates[method].append(c)
            if method in L1_METHODS:
                candidates["L1"].append(c)
    chosen: dict[str, dict[str, Any]] = {}
    for method, cands in candidates.items():
        for drop in DROPS:
            best = compression_at_drop(cands, reference, drop)
            key = f"{method}@{drop * 100:g}"
            if best is None:
                chosen[key] = {"method": method, "compression_ratio": float("nan"), "test_accuracy": float("nan")}
                continue
            test = sweep_thresholds(net, best["model"], [best["threshold"]], data["test"])[0]
            if abs(test["compression_ratio"] - best["compression_ratio"]) > 1e-9 * best["compression_ratio"]:
                raise RuntimeError("the threshold re-applied on test gives another compression ratio")
            chosen[key] = {**best, "test_accuracy": test["accuracy"]}
    unpruned = {
        f"{m}={s:g}": {"val_accuracy": sweeps[g][0]["accuracy"], "exact_zero_cr": sweeps[g][0]["compression_ratio"]}
        for g, (m, s) in enumerate(models)
    }
    print(f"  seed {seed}: trained {len(models)} models in {train_seconds:.0f} s; dense val {reference:.4f}")
    text = "; ".join(f"{k} val {v['val_accuracy']:.3f} CR {v['exact_zero_cr']:.3g}" for k, v in unpruned.items())
    print(f"  unpruned: {text}")
    return {
        "seed": seed,
        "dense_val_accuracy": reference,
        "dense_test_accuracy": dense_test,
        "train_seconds": train_seconds,
        "chosen": chosen,
        "unpruned": unpruned,
        "sweeps": {f"{m}={s:g}": sweeps[g] for g, (m, s) in enumerate(models)},
    }


def _mean_sd(values: list[float]) -> tuple[float, float]:
    """Mean and sample standard deviation; ``nan`` when a value is not finite (an unmeasured point).

    Python 3.11's ``statistics.stdev`` raises on ``nan`` / ``inf`` instead of returning ``nan``.
    """
    if not all(math.isfinite(v) for v in values):
        return float("nan"), float("nan")
    return statistics.fmean(values), statistics.stdev(values) if len(values) > 1 else 0.0


def summarise(per_seed: list[dict[str, Any]]) -> dict[str, Any]:
    """Mean and spread over seeds of each method's chosen compression ratio and test accuracy, and the CR ratios."""
    rows: list[dict[str, Any]] = []
    summary: dict[str, dict[str, Any]] = {}
    for method in ("ReWA", "L1", "L1 prox", "L1 sub", "GMP", "dense"):
        for drop in DROPS:
            key = f"{method}@{drop * 100:g}"
            crs = [s["chosen"][key]["compression_ratio"] for s in per_seed]
            test_drop = [100 * (s["dense_test_accuracy"] - s["chosen"][key]["test_accuracy"]) for s in per_seed]
            l1 = [s["chosen"][f"L1@{drop * 100:g}"]["compression_ratio"] for s in per_seed]
            over_l1 = [ratio(c, b) for c, b in zip(crs, l1, strict=True)]
            cr_m, cr_sd = _mean_sd(crs)
            td_m, td_sd = _mean_sd(test_drop)
            r_m, r_sd = _mean_sd(over_l1)
            summary[key] = {"cr_mean": cr_m, "cr_sd": cr_sd, "test_drop_mean": td_m, "test_drop_sd": td_sd}
            summary[key].update({"cr_over_l1_mean": r_m, "cr_over_l1_sd": r_sd, "cr_over_l1_per_seed": over_l1})
            rows.append(
                {
                    "method": method,
                    "val drop allowed (pt)": drop * 100,
                    "CR mean": cr_m,
                    "CR sd": cr_sd,
                    "test drop (pt) mean": td_m,
                    "test drop sd": td_sd,
                    "CR / L1 CR mean": r_m,
                    "CR / L1 CR sd": r_sd,
                }
            )
    return {"rows": rows, "summary": summary}


# arguments that may differ between the runs whose seeds are merged (they do not change a seed's figures)
MERGE_FREE_ARGS = frozenset({"seed", "seeds", "json", "merge", "threads"})


def load_for_merge(record: dict[str, Any], args: Any) -> list[dict[str, Any]]:
    """The per-seed records of a stored JSON record, after checking that it was made with the same settings.

    Args:
        record: a record written by this script (``write_json``): ``args`` and ``figures["per_seed"]``.
        args: this run's arguments; every argument outside ``MERGE_FREE_ARGS`` must equal the stored one
            (compared as text, as ``write_json`` stores them).

    Returns:
        The stored per-seed records, in their stored order.

    Raises:
        ValueError: the record is not this benchmark's, holds no per-seed records, a seed twice, or was made
            with other settings (the first differing argument is named).
    """
    if record.get("benchmark") != "rewa_sparsity":
        raise ValueError(f"record must come from rewa_sparsity, got benchmark={record.get('benchmark')!r}")
    per_seed = record.get("figures", {}).get("per_seed")
    if not isinstance(per_seed, list) or not per_seed:
        raise ValueError(f"record must hold a non-empty figures['per_seed'] list, got {per_seed!r}")
    seeds = [s["seed"] for s in per_seed]
    if len(set(seeds)) != len(seeds):
        raise ValueError(f"record holds a seed twice: seeds {seeds}")
    stored = record.get("args", {})
    for name, value in sorted(vars(args).items()):
        if name in MERGE_FREE_ARGS:
            continue
        if stored.get(name) != str(value):
            raise ValueError(
                f"cannot merge: argument {name!r} is {value!r} here but {stored.get(name)!r} in the stored record"
            )
    return list(per_seed)


def build_targets(figures: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """ReWA's compression ratio over L1's at 3.5 points below dense (validation-chosen), mean over seeds.

    The same key at ``--quick`` and full size; ``nan`` (an unmeasured point) is never met.
    """
    value = figures.get("summary", {}).get("ReWA@3.5", {}).get("cr_over_l1_mean", float("nan"))
    return {"rewa_cr_over_l1": target(value, ">=", 2.0)}


def main() -> None:
    parser = benchmark_parser(__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--epochs", type=int, default=5, help="5 fits the shared 2-core CPU; the issue asks 30+")
    parser.add_argument("--warmup-epochs", type=int, default=1)
    parser.add_argument("--num-train", type=int, default=None, help="training images (None: all 55,000)")
    parser.add_argument("--num-val", type=int, default=5000)
    parser.add_argument("--num-test", type=int, default=None, help="test images (None: all 10,000)")
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--lr", type=float, default=0.256)
    parser.add_argument("--momentum", type=float, default=0.875)
    parser.add_argument("--rewa-lr", type=float, default=None, help="ReWA's own peak learning rate (None: --lr)")
    parser.add_argument("--rewa-grid", type=str, default=None, help="comma-separated ReWA weight decays")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--merge", type=Path, default=None, metavar="PATH", help="join the seeds stored in PATH")
    args = parser.parse_args()
    if args.quick:
        args.seeds, args.epochs, args.warmup_epochs = 1, 3, 1
        args.num_train, args.num_val, args.num_test = 8000, 2000, 2000
    if args.rewa_grid:
        GRIDS["ReWA"] = tuple(float(v) for v in args.rewa_grid.split(","))
    torch.set_num_threads(args.threads)
    start = time.perf_counter()
    per_seed: list[dict[str, Any]] = []
    merged_from = None
    if args.merge is not None:
        stored = json.loads(args.merge.read_text())
        per_seed = load_for_merge(stored, args)
        merged_from = {"path": str(args.merge), "command": stored.get("command"), "time": stored.get("time")}
        print(f"merging with seeds {[s['seed'] for s in per_seed]} from {args.merge}")
    done = {s["seed"] for s in per_seed}
    todo = [args.seed + k for k in range(args.seeds) if args.seed + k not in done]
    if not todo:
        raise SystemExit(f"seeds {args.seed}..{args.seed + args.seeds - 1} are all in {args.merge}: nothing to run")
    for seed in todo:
        per_seed.append(train_seed(args, seed))
        per_seed.sort(key=lambda s: s["seed"])
        figures: dict[str, Any] = {"per_seed": per_seed, **summarise(per_seed)}
        figures["seconds"] = time.perf_counter() - start  # this run's wall time (each seed: its train_seconds)
        figures["seeds_done"] = len(per_seed)
        if merged_from is not None:
            figures["merged_from"] = merged_from
        figures["targets"] = build_targets(figures)
        write_json(args.json, "rewa_sparsity", figures, args)  # after every seed: a cut-off run keeps its seeds
    n_train = args.num_train or 55000
    print(
        f"\nFashionMNIST MLP 784-300-100-10: {n_train} train / {args.num_val} val / {args.num_test or 10000} test, "
        f"{args.epochs} epochs ({args.warmup_epochs} warm-up), batch {args.batch_size}, lr {args.lr} cosine, "
        f"momentum {args.momentum}, label smoothing 0.1, {len(per_seed)} seed(s). Dense val accuracy "
        + ", ".join(f"{s['dense_val_accuracy']:.4f}" for s in per_seed)
        + "; dense test "
        + ", ".join(f"{s['dense_test_accuracy']:.4f}" for s in per_seed)
        + ".\n\nCompression ratio (weights / non-zero weights) at the largest strength and threshold whose validation"
        " accuracy is within the allowed drop of dense; test drop = dense test accuracy - chosen point's (pt):\n"
    )
    print(markdown_table(figures["rows"]))
    print(f"\ntotal {figures['seconds']:.0f} s")
    print_targets(figures["targets"])


if __name__ == "__main__":
    main()
