"""Why ArBG trails the flow on DW-4: validation NLL against training-set size and binning (diagnostic, one seed).

Both models train for the same number of optimiser steps (``--steps``, default 960: 60 epochs of 4000
conformations at batch 256) with the optimiser, augmentation and cosine schedule of ``arbg_vs_flow.py``, on
strided subsets (4000, 16000, 32000 by default) of one set of reference conformations; validation conformations
are the same 1000 for every run. Only validation NLL (nats per coordinate) and the NLL of 1000 training
conformations are measured: no test metric is computed, so the benchmark defaults chosen from this study are
chosen on validation.

Grids (each piece short, one seed; ``--grids`` picks which run):

* ``size``: ArBG at the benchmark binning, the flow at its benchmark configuration (parameter-matched, 4
  transforms), each at every size;
* ``bins``: ArBG ``--bins`` x ``--ranges`` (bins over +-R standard deviations) at the smallest size;
* ``capacity``: the flow's equally sized search, ``--transforms`` x ``--spline-bins``, hidden width matched to
  the parameter count of the benchmark ArBG (512 bins), at the smallest size;
* ``lr``: both models at each of ``--lrs`` (the other grids use 1e-3);
* ``arch``: ArBG at each ``--archs`` width x depth, and the flow (4 transforms) matched to that ArBG's
  parameter count;
* ``conditioning``: ArBG with the value embedding of the previous bins (``ArBG(value_embedding=True)``), and
  both models without the centre-of-mass noise augmentation (``com_noise=False``).

Its targets state hypotheses as checkable claims: more data, or fewer / wider bins, or the best setting of the
``lr`` / ``arch`` / ``conditioning`` grids closes at least half of ArBG's validation-NLL gap to the benchmark
flow at the smallest size (a target is only stated for the grids that ran). The record also holds a range check:
the fraction of (augmented) training and validation coordinates outside +-3 / 4 / 5 / 6 standard deviations.

    python benchmarks/arbg_dw4_study.py --quick
    python benchmarks/arbg_dw4_study.py --json benchmarks/results/arbg_dw4_study.json
    python benchmarks/arbg_dw4_study.py --sizes 4000 --grids size lr arch conditioning \
        --json benchmarks/results/arbg_dw4_study_axes.json
"""

from __future__ import annotations

import math
import sys
import time
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import benchmark_parser, markdown_table, print_targets, target, write_json
from arbg_vs_flow import CONFIG, MAX_TRANSFORMS, heldout_nll, n_params, split, train

from lightning_icml26.data.boltzmann import get_system, reference_samples
from lightning_icml26.modules.arbg import ArBG, FlowBG
from lightning_icml26.modules.arbg.module import augment

GRIDS = ("size", "bins", "capacity", "lr", "arch", "conditioning")
AXES_GRIDS = ("lr", "arch", "conditioning")


def epochs_for(steps: int, n_train: int, batch_size: int = 256) -> int:
    """Epochs that give about ``steps`` optimiser steps on ``n_train`` conformations (at least one).

    Example:
        >>> epochs_for(960, 4000), epochs_for(960, 16000), epochs_for(960, 32000)
        (60, 15, 8)
    """
    return max(1, round(steps / math.ceil(n_train / batch_size)))


def make_arbg(
    scale: float,
    bins: int,
    half_range: float,
    hidden: int | None = None,
    layers: int | None = None,
    value_embedding: bool = False,
    com_noise: bool = True,
) -> ArBG:
    """ArBG on DW-4 with ``bins`` bins over ``+-half_range`` standard deviations (default: benchmark transformer)."""
    system = get_system("dw4")
    _, _, bench_hidden, bench_layers = CONFIG["dw4"]
    hidden, layers = hidden or bench_hidden, layers or bench_layers
    return ArBG(
        system.n_atoms,
        system.dim,
        atom_types=system.atom_types,
        num_bins=bins,
        coord_range=(-half_range, half_range),
        scale=scale,
        hidden_size=hidden,
        num_layers=layers,
        num_heads=4,
        value_embedding=value_embedding,
        com_noise=com_noise,
    )


def make_flow(scale: float, transforms: int, spline_bins: int, target_params: int, com_noise: bool = True) -> FlowBG:
    """zuko NSF on DW-4 with ``transforms`` transforms, two hidden layers of the width whose count is closest."""
    best: tuple[int, FlowBG] | None = None
    for width in range(8, 4097, 8):
        flow = FlowBG(
            4,
            2,
            scale=scale,
            transforms=transforms,
            hidden_features=(width, width),
            bins=spline_bins,
            com_noise=com_noise,
        )
        gap = abs(n_params(flow) - target_params)
        if best is None or gap < best[0]:
            best = (gap, flow)
        if n_params(flow) > target_params:
            break
    assert best is not None
    return best[1]


def fit(
    model: ArBG | FlowBG, train_x: torch.Tensor, val_x: torch.Tensor, steps: int, seed: int, lr: float = 1e-3
) -> dict[str, Any]:
    """Train for about ``steps`` steps; validation NLL curve and final train / validation NLL (nats per coord)."""
    torch.manual_seed(seed)
    epochs = epochs_for(steps, train_x.shape[0])
    info = train(model, train_x, val_x, epochs=epochs, budget_s=None, batch_size=256, lr=lr, seed=seed, evals=5)
    sub = train_x[:: max(1, train_x.shape[0] // 1000)][:1000]
    return {
        "epochs": epochs,
        "steps": info["steps"],
        "train_cpu_s": info["train_cpu_s"],
        "val_nll_curve": info["val_nll_curve"],
        "val_nll": info["val_nll_curve"][-1][1],
        "train_nll": heldout_nll(model, sub),
        "params": n_params(model),
    }


def parse_arch(text: str) -> tuple[int, int]:
    """``"WIDTHxDEPTH"`` as ``(width, depth)``.

    Example:
        >>> parse_arch("128x4")
        (128, 4)
    """
    parts = text.lower().split("x")
    if len(parts) != 2 or not all(p.isdigit() and int(p) > 0 for p in parts):
        raise ValueError(f"--archs entries must be WIDTHxDEPTH with positive integers (e.g. 128x4), got {text!r}")
    return int(parts[0]), int(parts[1])


def range_check(train_x: torch.Tensor, val_x: torch.Tensor, scale: float, seed: int) -> dict[str, Any]:
    """Fractions of coordinates (and conformations) beyond +-3 / 4 / 5 / 6 standard deviations.

    Training conformations go through the training augmentation (centring, random rotation, centre-of-mass
    noise of std ``scale / 2``) five times; validation conformations are centred only, as they are scored.

    Example:
        >>> x = torch.tensor([[[0.0, 0.0], [1.0, 0.0], [-1.0, 0.0], [0.0, 0.0]]]).repeat(10, 1, 1)
        >>> range_check(x, x, 1.0, 0)["val"]["3"]
        {'coords': 0.0, 'conformations': 0.0, 'max_abs': 1.0}
    """
    gen = torch.Generator().manual_seed(seed)
    n = train_x.shape[1]
    aug = torch.cat([augment(train_x.double(), True, scale / math.sqrt(n), gen) for _ in range(5)])
    out: dict[str, Any] = {}
    for name, x in (("train_augmented", aug), ("val", val_x.double() - val_x.double().mean(1, keepdim=True))):
        u = x.reshape(x.shape[0], -1).abs() / scale
        out[name] = {
            str(r): {
                "coords": float((u > r).double().mean()),
                "conformations": float((u > r).any(1).double().mean()),
                "max_abs": float(u.max()),
            }
            for r in (3, 4, 5, 6)
        }
    return out


def build_targets(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Hypotheses as claims: data, binning or the best lr / arch / conditioning setting close >= half of the gap.

    Shares of ArBG's validation-NLL gap to the benchmark flow at the smallest size; a claim is stated only for the
    grids present in ``rows`` (the data claim needs two sizes).

    Example:
        >>> rows = [
        ...     {"model": "arbg", "grid": "size", "n_train": 4000, "val_nll": 2.0},
        ...     {"model": "arbg", "grid": "size", "n_train": 32000, "val_nll": 1.9},
        ...     {"model": "arbg", "grid": "bins", "n_train": 4000, "val_nll": 1.7},
        ...     {"model": "arbg", "grid": "lr", "n_train": 4000, "val_nll": 1.8},
        ...     {"model": "flow", "grid": "size", "n_train": 4000, "val_nll": 1.6},
        ... ]
        >>> for name, claim in build_targets(rows).items():
        ...     print(name, round(claim["value"], 3))
        arbg_data_gain_share_of_gap 0.25
        arbg_binning_gain_share_of_gap 0.75
        arbg_axes_gain_share_of_gap 0.5
    """
    size = [r for r in rows if r["model"] == "arbg" and r["grid"] == "size"]
    small = min(r["n_train"] for r in size)
    arbg_small = next(r["val_nll"] for r in size if r["n_train"] == small)
    arbg_large = min([r["val_nll"] for r in size if not math.isnan(r["val_nll"])], default=math.nan)
    flow_small = next(
        r["val_nll"] for r in rows if r["model"] == "flow" and r["grid"] == "size" and r["n_train"] == small
    )
    gap = arbg_small - flow_small

    def best(grids: tuple[str, ...]) -> float:  # a setting that could not run (nan) cannot be chosen
        vals = [
            r["val_nll"]
            for r in rows
            if r["model"] == "arbg" and r["grid"] in grids and r["n_train"] == small and not math.isnan(r["val_nll"])
        ]
        return min([arbg_small, *vals])

    grids = {r["grid"] for r in rows if r["model"] == "arbg"}
    out: dict[str, dict[str, Any]] = {}
    if len({r["n_train"] for r in size}) > 1:
        out["arbg_data_gain_share_of_gap"] = target((arbg_small - arbg_large) / gap, ">=", 0.5)
    if "bins" in grids:
        out["arbg_binning_gain_share_of_gap"] = target((arbg_small - best(("bins",))) / gap, ">=", 0.5)
    if grids & set(AXES_GRIDS):
        out["arbg_axes_gain_share_of_gap"] = target((arbg_small - best(AXES_GRIDS)) / gap, ">=", 0.5)
    return out


def plan_runs(args: Any, sizes: list[int], bench_bins: int, bench_range: float) -> list[tuple[str, str, int, dict]]:
    """The ordered list of ``(model, grid, n_train, settings)`` probes of the chosen ``args.grids``."""
    small = sizes[0]
    base_arbg = {"bins": bench_bins, "range": bench_range}
    base_flow = {"transforms": MAX_TRANSFORMS, "spline_bins": 8}
    plan: list[tuple[str, str, int, dict[str, Any]]] = []
    if "size" in args.grids:
        for n in sizes:
            plan += [("arbg", "size", n, dict(base_arbg)), ("flow", "size", n, dict(base_flow))]
    if "bins" in args.grids:
        plan += [
            ("arbg", "bins", small, {"bins": b, "range": r})
            for b in args.bins
            for r in args.ranges
            if (b, r) != (bench_bins, bench_range)
        ]
    if "capacity" in args.grids:
        plan += [
            ("flow", "capacity", small, {"transforms": t, "spline_bins": s})
            for t in args.transforms
            for s in args.spline_bins
            if (t, s) != (MAX_TRANSFORMS, 8)
        ]
    if "conditioning" in args.grids:
        plan += [
            ("arbg", "conditioning", small, {**base_arbg, "value_embedding": True}),
            ("arbg", "conditioning", small, {**base_arbg, "com_noise": False}),
            ("flow", "conditioning", small, {**base_flow, "com_noise": False}),
        ]
    if "lr" in args.grids:
        for lr in args.lrs:
            if lr != 1e-3:
                plan += [("arbg", "lr", small, {**base_arbg, "lr": lr}), ("flow", "lr", small, {**base_flow, "lr": lr})]
    if "arch" in args.grids:
        for hidden, layers in map(parse_arch, args.archs):
            arch = {"hidden": hidden, "layers": layers}
            plan += [
                ("arbg", "arch", small, {**base_arbg, **arch}),
                ("flow", "arch", small, {**base_flow, "match": arch}),
            ]
    return plan


def main() -> None:
    parser = benchmark_parser((__doc__ or "").splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=None, help="training-set sizes")
    parser.add_argument("--steps", type=int, default=None, help="optimiser steps per model")
    parser.add_argument("--grids", nargs="+", choices=GRIDS, default=list(GRIDS), help="which grids to run")
    parser.add_argument("--bins", type=int, nargs="+", default=[128, 256, 512], help="ArBG bins per coordinate")
    parser.add_argument("--ranges", type=float, nargs="+", default=[4.0, 6.0], help="ArBG half ranges (std units)")
    parser.add_argument("--transforms", type=int, nargs="+", default=[1, 2, 4], help="flow transforms")
    parser.add_argument("--spline-bins", type=int, nargs="+", default=[8, 16], help="flow spline bins")
    parser.add_argument("--lrs", type=float, nargs="+", default=[3e-4, 1e-3, 3e-3], help="learning rates (lr grid)")
    parser.add_argument("--archs", nargs="+", default=["128x4"], help="ArBG WIDTHxDEPTH (arch grid)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads")
    args = parser.parse_args()
    sizes = sorted(args.sizes or ([500, 1000] if args.quick else [4000, 16000, 32000]))
    steps = args.steps or (20 if args.quick else 960)
    if sizes[0] < 1 or steps < 1 or any(t < 1 or t > MAX_TRANSFORMS for t in args.transforms):
        parser.error(f"need sizes >= 1, steps >= 1, transforms in 1..{MAX_TRANSFORMS}; got {sizes}, {steps}, ...")
    if any(not lr > 0 for lr in args.lrs):
        parser.error(f"--lrs must be positive, got {args.lrs}")
    try:
        [parse_arch(a) for a in args.archs]
    except ValueError as err:
        parser.error(str(err))
    if "size" not in args.grids:
        parser.error(f"--grids must include 'size' (the reference rows every claim compares with), got {args.grids}")
    n_val = 200 if args.quick else 1000
    torch.set_num_threads(args.threads)
    data = reference_samples("dw4", sizes[-1] + 2 * n_val, seed=args.seed)
    big, val_x, _ = split(data, n_val, n_val)  # the test conformations are never touched
    subsets = {n: big[:: big.shape[0] // n][:n] for n in sizes}
    centred = subsets[sizes[0]] - subsets[sizes[0]].mean(1, keepdim=True)
    scale = float(centred.pow(2).mean().sqrt())  # one scale for every run: the smallest set's, as in the benchmark
    bench_bins, bench_range = CONFIG["dw4"][0], CONFIG["dw4"][1][1]
    ref_params = n_params(make_arbg(scale, bench_bins, bench_range))
    everything = torch.cat([big, val_x])
    max_u = float((everything - everything.mean(1, keepdim=True)).norm(dim=-1).max()) / scale  # reach under rotation
    ranges = range_check(subsets[sizes[0]], val_x, scale, args.seed)
    rows: list[dict[str, Any]] = []
    for model_name, grid, n, cfg in plan_runs(args, sizes, bench_bins, bench_range):
        t0 = time.perf_counter()
        torch.manual_seed(args.seed)
        row: dict[str, Any] = {"model": model_name, "grid": grid, "n_train": n, **cfg}
        lr = cfg.get("lr", 1e-3)
        com_noise = cfg.get("com_noise", True)
        if model_name == "arbg":
            model: ArBG | FlowBG = make_arbg(
                scale,
                cfg["bins"],
                cfg["range"],
                cfg.get("hidden"),
                cfg.get("layers"),
                value_embedding=cfg.get("value_embedding", False),
                com_noise=com_noise,
            )
        else:
            match = cfg.get("match")
            params = (
                ref_params
                if match is None
                else n_params(make_arbg(scale, bench_bins, bench_range, match["hidden"], match["layers"]))
            )
            model = make_flow(scale, cfg["transforms"], cfg["spline_bins"], params, com_noise=com_noise)
            row["hidden"] = model.hparams["hidden_features"][0]
        row["lr"] = lr
        try:
            row.update(fit(model, subsets[n], val_x, steps, args.seed, lr=lr))
        except ValueError as err:  # an (augmented) coordinate outside ArBG's binning range
            row.update(val_nll=float("nan"), note=str(err).split(";")[0])
        rows.append(row)
        print(f"{row} ({time.perf_counter() - t0:.0f} s wall)", flush=True)
        partial = _record(rows, scale, max_u, steps, ranges) if any(r["model"] == "flow" for r in rows) else None
        if partial is not None and partial["targets"]:  # partial record after each run, once a claim can be stated
            write_json(args.json, "arbg_dw4_study", partial, args)
    cols = ["model", "grid", "n_train", "bins", "range", "transforms", "spline_bins", "hidden", "layers", "lr"]
    print(markdown_table(rows, [*cols, "value_embedding", "com_noise", "params", "epochs", "train_nll", "val_nll"]))
    record = _record(rows, scale, max_u, steps, ranges)
    print_targets(record["targets"])
    write_json(args.json, "arbg_dw4_study", record, args)


def _record(
    rows: list[dict[str, Any]], scale: float, max_u: float, steps: int, ranges: dict[str, Any]
) -> dict[str, Any]:
    return {
        "rows": rows,
        "scale": scale,
        "max_abs_coord_std": max_u,
        "range_check": ranges,
        "steps": steps,
        "targets": build_targets(rows),
    }


if __name__ == "__main__":
    main()
