"""ReWA against L1 (proximal), spred and dense training: compression ratio at matched accuracy.

Full run (scaled-down reproduction of the paper's CIFAR-10 / ResNet-18 comparison, CPU sized): the same narrow
CIFAR-style ResNet-8 on a FashionMNIST subset (2x average-pooled to 14x14), the same epochs, batch size, momentum
and cosine learning-rate schedule for every method; each method's regularisation strength is tuned on the same
3-point half-decade grid around its own scale; then a magnitude-threshold sweep on the conv weights (no
retraining, the paper's ``eval_checkpoint.py --thr``). Reported: validation accuracy against compression ratio
(CR = conv weights / non-zero conv weights) and, per method, the largest CR whose validation accuracy is within
0.5 points of dense training, with its test accuracy. Target: ReWA's CR >= 2 x L1's.

``--quick``: the sparse-regression version (d = 1000, n = 200, 10-sparse truth), every method full-batch on the
same data, under a minute.

    .venv/bin/python benchmarks/rewa_sparsity.py --quick
    .venv/bin/python benchmarks/rewa_sparsity.py --json outputs/rewa_sparsity.json
"""

from __future__ import annotations

import functools
import math
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import benchmark_parser, markdown_table, print_targets, ratio, target, write_json
from lightning_icml26.callbacks import threshold_sweep
from lightning_icml26.data import FashionMNISTDataModule, make_sparse_regression
from lightning_icml26.metrics.functional import compression_ratio
from lightning_icml26.modules import CifarResNet, support_f1
from lightning_icml26.optim import L1SGD, LpSGD, ReWASGD, SpredSGD, rewa_param_groups

GRID = (1.0, math.sqrt(10), 10.0)  # the same half-decade grid (x base strength) for every method
THRESHOLDS = [0.0] + [float(f"{10 ** (e / 4):.3g}") for e in range(-20, -1)]  # 1e-5 .. 0.56

OptimFactory = Callable[[Any], torch.optim.Optimizer]


def _factories(lr: float, momentum: float) -> dict[str, tuple[float, Callable[[float], OptimFactory]]]:
    """method -> (base strength, strength -> optimizer factory over parameter groups)."""
    return {
        "dense": (1e-4, lambda s: functools.partial(torch.optim.SGD, lr=lr, momentum=momentum, weight_decay=s)),
        "L1": (3e-3, lambda s: functools.partial(L1SGD, lr=lr, momentum=momentum, l1=s, mode="proximal")),
        "spred": (3e-3, lambda s: functools.partial(SpredSGD, lr=lr, momentum=momentum, weight_decay=s)),
        "ReWA": (
            3e-3,
            lambda s: functools.partial(ReWASGD, lr=lr, momentum=momentum, K=9, M=2, eps=0.0, weight_decay=s),
        ),
    }


# --------------------------------------------------------------------------------------------- ResNet / FashionMNIST
def _fashion(num_train: int, num_val: int, num_test: int, seed: int) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
    dm = FashionMNISTDataModule(num_train=num_train, num_val=num_val, num_test=num_test, seed=seed)
    dm.setup()
    out = {}
    for split in ("train", "val", "test"):
        x, y = dm._splits[split].tensors
        out[split] = (F.avg_pool2d(x, 2), y)
    return out


@torch.no_grad()
def _accuracy(net: nn.Module, data: tuple[torch.Tensor, torch.Tensor], batch: int = 1000) -> float:
    net.eval()
    x, y = data
    correct = sum(int((net(x[i : i + batch]).argmax(-1) == y[i : i + batch]).sum()) for i in range(0, len(y), batch))
    net.train()
    return correct / len(y)


def _train_resnet(
    factory: OptimFactory, data: dict, epochs: int, batch: int, width: int, seed: int
) -> tuple[nn.Module, float]:
    torch.manual_seed(seed)
    net = CifarResNet(depth=8, width=width, in_channels=1, num_classes=10)
    # the sparsifier acts on conv / linear weights; BN parameters and biases take plain momentum SGD, no decay
    groups = rewa_param_groups(net, excluded_weight_decay=0.0)
    sparse_group, plain_group = groups[0], groups[1]
    opt = factory([sparse_group])
    base_lr = opt.param_groups[0]["lr"]
    plain = torch.optim.SGD(plain_group["params"], lr=base_lr, momentum=opt.param_groups[0].get("momentum", 0.0))
    x, y = data["train"]
    steps_per_epoch = math.ceil(len(y) / batch)
    total = epochs * steps_per_epoch
    g = torch.Generator().manual_seed(seed)
    step = 0
    start = time.perf_counter()
    for _ in range(epochs):
        perm = torch.randperm(len(y), generator=g)
        for i in range(0, len(y), batch):
            idx = perm[i : i + batch]
            lr = 0.5 * base_lr * (1 + math.cos(math.pi * step / total))
            for o in (opt, plain):
                for group in o.param_groups:
                    group["lr"] = lr
            opt.zero_grad()
            plain.zero_grad()
            F.cross_entropy(net(x[idx]), y[idx]).backward()
            opt.step()
            plain.step()
            step += 1
    return net, time.perf_counter() - start


def _conv_include(net: nn.Module) -> dict[str, torch.Tensor]:
    return {n: m.weight for n, m in net.named_modules() if isinstance(m, nn.Conv2d)}


def run_resnet(args: Any) -> dict[str, Any]:
    data = _fashion(args.num_train, args.num_val, args.num_test, args.seed)
    factories = _factories(args.lr, args.momentum)
    runs = []
    for method, (base, make) in factories.items():
        for mult in GRID:
            strength = base * mult
            net, seconds = _train_resnet(make(strength), data, args.epochs, args.batch_size, args.width, args.seed)
            sweep = threshold_sweep(net, THRESHOLDS, lambda m: _accuracy(m, data["val"]), include="conv")
            runs.append({"method": method, "strength": strength, "seconds": seconds, "sweep": sweep, "net": net})
            best = max(sweep, key=lambda r: r["compression_ratio"] if r["score"] >= sweep[0]["score"] - 0.005 else 0)
            print(
                f"{method:6s} strength={strength:.3g} train {seconds:.0f}s val_acc(unpruned)={sweep[0]['score']:.4f} "
                f"exact-zero CR={sweep[0]['compression_ratio']:.2f} CR@-0.5pt(own)={best['compression_ratio']:.2f}",
                flush=True,
            )
    dense_runs = [r for r in runs if r["method"] == "dense"]
    dense_best = max(dense_runs, key=lambda r: r["sweep"][0]["score"])
    dense_acc = dense_best["sweep"][0]["score"]
    target = dense_acc - 0.005
    rows, curves = [], {}
    summary: dict[str, dict[str, float]] = {}
    for method in factories:
        candidates = []
        for r in (r for r in runs if r["method"] == method):
            for point in r["sweep"]:
                if point["score"] >= target:
                    candidates.append((point["compression_ratio"], point["score"], r, point))
        if candidates:
            cr, val_acc, r, point = max(candidates, key=lambda c: (c[0], c[1]))
            net = r["net"]
            saved = {n: w.detach().clone() for n, w in _conv_include(net).items()}
            with torch.no_grad():
                for w in _conv_include(net).values():
                    w.masked_fill_(w.abs() <= point["threshold"], 0.0)
            test_acc = _accuracy(net, data["test"])
            if not math.isclose(float(compression_ratio(net, include="conv")), cr):
                raise RuntimeError("the re-applied threshold does not reproduce the sweep's compression ratio")
            with torch.no_grad():
                for n, w in _conv_include(net).items():
                    w.copy_(saved[n])
            summary[method] = {
                "strength": r["strength"],
                "threshold": point["threshold"],
                "val_acc": val_acc,
                "test_acc": test_acc,
                "compression_ratio": cr,
            }
        else:
            summary[method] = {"strength": float("nan"), "threshold": float("nan"), "val_acc": float("nan")}
            summary[method].update({"test_acc": float("nan"), "compression_ratio": float("nan")})
        curves[method] = [
            {"strength": r["strength"], "sweep": r["sweep"], "seconds": r["seconds"]}
            for r in runs
            if r["method"] == method
        ]
    l1_cr = summary["L1"]["compression_ratio"]
    for method, s in summary.items():
        rows.append(
            {
                "method": method,
                "best strength": s["strength"],
                "threshold": s["threshold"],
                "val acc": s["val_acc"],
                "test acc": s["test_acc"],
                "CR @ dense-0.5pt": s["compression_ratio"],
                "CR / L1 CR": ratio(s["compression_ratio"], l1_cr),
            }
        )
    curve_rows = []
    for method in factories:
        for r in (r for r in runs if r["method"] == method):
            for point in r["sweep"]:
                if point["threshold"] in (0.0, 1e-3, 0.0100, 0.0316, 0.1):
                    curve_rows.append(
                        {
                            "method": method,
                            "strength": r["strength"],
                            "threshold": point["threshold"],
                            "CR": point["compression_ratio"],
                            "val acc": point["score"],
                        }
                    )
    print(
        f"\nFashionMNIST (14x14) ResNet-8 width {args.width}: {args.num_train} train / {args.num_val} val / "
        f"{args.num_test} test images, {args.epochs} epochs, batch {args.batch_size}, lr {args.lr} cosine, momentum "
        f"{args.momentum}; dense reference val acc {dense_acc:.4f} (match threshold {target:.4f})\n"
    )
    print("Accuracy against compression (validation; selected thresholds of the sweep):\n")
    print(markdown_table(curve_rows))
    print("\nCompression ratio at matched accuracy (within 0.5 pt of dense, selected on validation):\n")
    print(markdown_table(rows))
    rewa_vs_l1 = ratio(summary["ReWA"]["compression_ratio"], l1_cr)
    met = rewa_vs_l1 >= 2.0
    verdict = "MET" if met else "MISSED"
    print(f"\nTarget ReWA CR >= 2 x L1 CR at matched accuracy: measured {rewa_vs_l1:.3g} x -> {verdict}")
    return {"dense_val_acc": dense_acc, "summary": summary, "curves": curves, "rewa_over_l1": rewa_vs_l1, "met": met}


# ------------------------------------------------------------------------------------------------ sparse regression
def _fit_regression(factory: OptimFactory, X: torch.Tensor, y: torch.Tensor, steps: int, seed: int) -> torch.Tensor:
    torch.manual_seed(seed)
    w = nn.Parameter(0.01 * torch.randn(X.shape[1], dtype=X.dtype))
    opt = factory([w])
    for _ in range(steps):
        opt.zero_grad()
        (0.5 * (X @ w - y).pow(2).mean()).backward()
        opt.step()
    return w.detach()


def run_regression(args: Any) -> dict[str, Any]:
    n, n_val, d, k = 200, 200, 1000, 10
    X, y, w_star = make_sparse_regression(n + n_val, d, k, noise=0.01, seed=args.seed)
    X, y, w_star = X.double(), y.double(), w_star.double()
    Xtr, ytr, Xv, yv = X[:n], y[:n], X[n:], y[n:]
    lrs, steps = (0.005, 0.02), 1500
    p = 8 / 9
    methods: dict[str, tuple[float, Callable[[float, float], OptimFactory]]] = {
        "ReWA K9 M2": (3e-3, lambda lr, s: functools.partial(ReWASGD, lr=lr, K=9, M=2, weight_decay=s)),
        "L1 prox": (3e-3, lambda lr, s: functools.partial(L1SGD, lr=lr, l1=s, mode="proximal")),
        "spred": (3e-3, lambda lr, s: functools.partial(SpredSGD, lr=lr, weight_decay=s)),
        "Lp p=8/9": (3e-3, lambda lr, s: functools.partial(LpSGD, lr=lr, p=p, weight_decay=s)),
        "dense (ridge)": (1e-4, lambda lr, s: functools.partial(torch.optim.SGD, lr=lr, weight_decay=s)),
    }
    rows, figures = [], {}
    fits: dict[str, tuple[float, float, torch.Tensor, float]] = {}
    var = float(yv.var())
    for name, (base, make) in methods.items():
        best = None
        for lr in lrs:
            for mult in GRID:
                strength = base * mult
                w = _fit_regression(make(lr, strength), Xtr, ytr, steps, args.seed)
                if not bool(torch.isfinite(w).all()):
                    continue
                val_r2 = 1 - float((Xv @ w - yv).pow(2).mean()) / var
                if best is None or val_r2 > best[0]:
                    best = (val_r2, strength, w, lr)
        if best is None:
            figures[name] = {"diverged": True}
            continue
        fits[name] = best
    target = max(b[0] for b in fits.values()) - 0.005  # matched quality: within 0.005 R2 of the best method
    for name, (val_r2, strength, w, lr) in fits.items():
        sweep = []
        for thr in THRESHOLDS:
            wt = torch.where(w.abs() > thr, w, torch.zeros_like(w))
            r2 = 1 - float((Xv @ wt - yv).pow(2).mean()) / var
            sweep.append({"threshold": thr, "r2": r2, "cr": float(compression_ratio(wt))})
        reached = [s for s in sweep if s["r2"] >= target]
        matched = max(reached, key=lambda s: s["cr"]) if reached else {"cr": float("nan"), "threshold": 0.0}
        figures[name] = {
            "strength": strength,
            "lr": lr,
            "val_r2": val_r2,
            "rel_error": float(torch.linalg.vector_norm(w - w_star) / torch.linalg.vector_norm(w_star)),
            "support_f1_exact": support_f1(w, w_star),
            "exact_zero_cr": float(compression_ratio(w)),
            "cr_at_matched_r2": matched["cr"],
            "support_f1_matched": support_f1(w, w_star, matched["threshold"]),
        }
    l1 = figures["L1 prox"]
    for name, f in figures.items():
        if f.get("diverged"):
            rows.append({"method": name, "val R2": "diverged"})
            continue
        rows.append(
            {
                "method": name,
                "best strength": f["strength"],
                "best lr": f["lr"],
                "val R2": f["val_r2"],
                "||w-w*||/||w*||": f["rel_error"],
                "support F1 (exact zeros)": f["support_f1_exact"],
                "exact-zero CR": f["exact_zero_cr"],
                "CR @ best R2-0.005": f["cr_at_matched_r2"],
                "CR ratio / L1 prox": ratio(f["cr_at_matched_r2"], l1["cr_at_matched_r2"]),
                "error ratio / L1 prox": ratio(f["rel_error"], l1["rel_error"]),
            }
        )
    print(f"Sparse regression: d={d}, n={n} (+{n_val} validation), {k}-sparse truth, noise 0.01, {steps} full-batch")
    grid = [round(g, 2) for g in GRID]
    print(f"steps; lr in {lrs} and strength in {grid} x base tuned per method on validation R2.\n")
    print(markdown_table(rows))
    return {"regression": figures}


def build_targets(figures: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The ReWA target, from a full run (ResNet ``summary``) or a ``--quick`` run (``regression``).

    Both sizes report the same figure: ReWA's compression ratio at matched accuracy (or R2) over L1's.
    """
    if "regression" in figures:
        reg = figures["regression"]
        ours, base = reg.get("ReWA K9 M2", {}), reg.get("L1 prox", {})
        value = ratio(ours.get("cr_at_matched_r2", math.nan), base.get("cr_at_matched_r2", math.nan))
    else:
        value = figures["rewa_over_l1"]
    return {"rewa_cr_over_l1": target(value, ">=", 2.0)}


def main() -> None:
    parser = benchmark_parser(__doc__.splitlines()[0])
    parser.add_argument("--num-train", type=int, default=5000)
    parser.add_argument("--num-val", type=int, default=2000)
    parser.add_argument("--num-test", type=int, default=2000)
    parser.add_argument("--epochs", type=int, default=6)
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--width", type=int, default=8)
    parser.add_argument("--lr", type=float, default=0.1)
    parser.add_argument("--momentum", type=float, default=0.875)
    parser.add_argument("--threads", type=int, default=1, help="torch threads (1 is fastest on a shared 2-core box)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    start = time.perf_counter()
    figures = run_regression(args) if args.quick else run_resnet(args)
    figures["seconds"] = time.perf_counter() - start
    print(f"\ntotal {figures['seconds']:.0f} s")
    figures["targets"] = build_targets(figures)
    print_targets(figures["targets"])
    write_json(args.json, "rewa_sparsity", figures, args)


if __name__ == "__main__":
    main()
