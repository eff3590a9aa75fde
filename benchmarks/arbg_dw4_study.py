"""Why ArBG trails the flow on DW-4: validation NLL against training-set size and binning (diagnostic, one seed).

Both models train for the same number of optimiser steps (``--steps``, default 960: 60 epochs of 4000
conformations at batch 256) with the optimiser, augmentation and cosine schedule of ``arbg_vs_flow.py``, on
strided subsets (4000, 16000, 32000 by default) of one set of reference conformations; validation conformations
are the same 1000 for every run. Only validation NLL (nats per coordinate) and the NLL of 1000 training
conformations are measured: no test metric is computed, so the benchmark defaults chosen from this study are
chosen on validation.

Grids (each piece short, one seed):

* data size: ArBG at the benchmark binning, the flow at its benchmark configuration (parameter-matched, 4
  transforms), each at every size;
* ArBG binning: ``--bins`` x ``--ranges`` (bins over +-R standard deviations) at the smallest size;
* flow capacity, an equally sized search: ``--transforms`` x ``--spline-bins``, hidden width matched to the
  parameter count of the benchmark ArBG (512 bins), at the smallest size.

Its targets state the data-per-bin hypothesis as checkable claims: more data, or fewer / wider bins, closes at
least half of ArBG's validation-NLL gap to the flow at the smallest size.

    python benchmarks/arbg_dw4_study.py --quick
    python benchmarks/arbg_dw4_study.py --json benchmarks/results/arbg_dw4_study.json
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


def epochs_for(steps: int, n_train: int, batch_size: int = 256) -> int:
    """Epochs that give about ``steps`` optimiser steps on ``n_train`` conformations (at least one).

    Example:
        >>> epochs_for(960, 4000), epochs_for(960, 16000), epochs_for(960, 32000)
        (60, 15, 8)
    """
    return max(1, round(steps / math.ceil(n_train / batch_size)))


def make_arbg(scale: float, bins: int, half_range: float) -> ArBG:
    """ArBG on DW-4 with the benchmark's transformer and ``bins`` bins over ``+-half_range`` standard deviations."""
    system = get_system("dw4")
    _, _, hidden, layers = CONFIG["dw4"]
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
    )


def make_flow(scale: float, transforms: int, spline_bins: int, target_params: int) -> FlowBG:
    """zuko NSF on DW-4 with ``transforms`` transforms, two hidden layers of the width whose count is closest."""
    best: tuple[int, FlowBG] | None = None
    for width in range(8, 4097, 8):
        flow = FlowBG(4, 2, scale=scale, transforms=transforms, hidden_features=(width, width), bins=spline_bins)
        gap = abs(n_params(flow) - target_params)
        if best is None or gap < best[0]:
            best = (gap, flow)
        if n_params(flow) > target_params:
            break
    assert best is not None
    return best[1]


def fit(model: ArBG | FlowBG, train_x: torch.Tensor, val_x: torch.Tensor, steps: int, seed: int) -> dict[str, Any]:
    """Train for about ``steps`` steps; validation NLL curve and final train / validation NLL (nats per coord)."""
    torch.manual_seed(seed)
    epochs = epochs_for(steps, train_x.shape[0])
    info = train(model, train_x, val_x, epochs=epochs, budget_s=None, batch_size=256, lr=1e-3, seed=seed, evals=5)
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


def build_targets(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The data-per-bin hypothesis as claims: data or binning close >= half of ArBG's gap at the smallest size.

    Example:
        >>> rows = [
        ...     {"model": "arbg", "grid": "size", "n_train": 4000, "val_nll": 2.0},
        ...     {"model": "arbg", "grid": "size", "n_train": 32000, "val_nll": 1.9},
        ...     {"model": "arbg", "grid": "bins", "n_train": 4000, "val_nll": 1.7},
        ...     {"model": "flow", "grid": "size", "n_train": 4000, "val_nll": 1.6},
        ... ]
        >>> {k: round(v["value"], 3) for k, v in build_targets(rows).items()}
        {'arbg_data_gain_share_of_gap': 0.25, 'arbg_binning_gain_share_of_gap': 0.75}
    """
    size = [r for r in rows if r["model"] == "arbg" and r["grid"] == "size"]
    small = min(r["n_train"] for r in size)
    arbg_small = next(r["val_nll"] for r in size if r["n_train"] == small)
    arbg_large = min([r["val_nll"] for r in size if not math.isnan(r["val_nll"])], default=math.nan)
    flow_small = next(r["val_nll"] for r in rows if r["model"] == "flow" and r["n_train"] == small)
    binning = [  # a binning whose range the data leave (nan) cannot be chosen
        r["val_nll"]
        for r in rows
        if r["model"] == "arbg" and r["grid"] == "bins" and r["n_train"] == small and not math.isnan(r["val_nll"])
    ]
    gap = arbg_small - flow_small
    best_bins = min([arbg_small, *binning])
    return {
        "arbg_data_gain_share_of_gap": target((arbg_small - arbg_large) / gap, ">=", 0.5),
        "arbg_binning_gain_share_of_gap": target((arbg_small - best_bins) / gap, ">=", 0.5),
    }


def main() -> None:
    parser = benchmark_parser((__doc__ or "").splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=None, help="training-set sizes")
    parser.add_argument("--steps", type=int, default=None, help="optimiser steps per model")
    parser.add_argument("--bins", type=int, nargs="+", default=[128, 256, 512], help="ArBG bins per coordinate")
    parser.add_argument("--ranges", type=float, nargs="+", default=[4.0, 6.0], help="ArBG half ranges (std units)")
    parser.add_argument("--transforms", type=int, nargs="+", default=[1, 2, 4], help="flow transforms")
    parser.add_argument("--spline-bins", type=int, nargs="+", default=[8, 16], help="flow spline bins")
    parser.add_argument("--threads", type=int, default=1, help="torch threads")
    args = parser.parse_args()
    sizes = sorted(args.sizes or ([500, 1000] if args.quick else [4000, 16000, 32000]))
    steps = args.steps or (20 if args.quick else 960)
    if sizes[0] < 1 or steps < 1 or any(t < 1 or t > MAX_TRANSFORMS for t in args.transforms):
        parser.error(f"need sizes >= 1, steps >= 1, transforms in 1..{MAX_TRANSFORMS}; got {sizes}, {steps}, ...")
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
    plan: list[tuple[str, str, int, dict[str, Any]]] = []
    for n in sizes:
        plan.append(("arbg", "size", n, {"bins": bench_bins, "range": bench_range}))
        plan.append(("flow", "size", n, {"transforms": MAX_TRANSFORMS, "spline_bins": 8}))
    plan += [
        ("arbg", "bins", sizes[0], {"bins": b, "range": r})
        for b in args.bins
        for r in args.ranges
        if (b, r) != (bench_bins, bench_range)
    ]
    plan += [
        ("flow", "capacity", sizes[0], {"transforms": t, "spline_bins": s})
        for t in args.transforms
        for s in args.spline_bins
        if (t, s) != (MAX_TRANSFORMS, 8)
    ]
    rows: list[dict[str, Any]] = []
    for model_name, grid, n, cfg in plan:
        t0 = time.perf_counter()
        torch.manual_seed(args.seed)
        row: dict[str, Any] = {"model": model_name, "grid": grid, "n_train": n, **cfg}
        if model_name == "arbg":
            model: ArBG | FlowBG = make_arbg(scale, cfg["bins"], cfg["range"])
        else:
            model = make_flow(scale, cfg["transforms"], cfg["spline_bins"], ref_params)
            row["hidden"] = model.hparams["hidden_features"][0]
        try:
            row.update(fit(model, subsets[n], val_x, steps, args.seed))
        except ValueError as err:  # an (augmented) coordinate outside ArBG's binning range
            row.update(val_nll=float("nan"), note=str(err).split(";")[0])
        rows.append(row)
        print(f"{row} ({time.perf_counter() - t0:.0f} s wall)", flush=True)
        if any(r["model"] == "flow" for r in rows):  # partial record after each run
            write_json(args.json, "arbg_dw4_study", _record(rows, scale, max_u, steps), args)
    cols = ["model", "grid", "n_train", "bins", "range", "transforms", "spline_bins", "hidden", "params", "epochs"]
    print(markdown_table(rows, [*cols, "train_nll", "val_nll"]))
    record = _record(rows, scale, max_u, steps)
    print_targets(record["targets"])
    write_json(args.json, "arbg_dw4_study", record, args)


def _record(rows: list[dict[str, Any]], scale: float, max_u: float, steps: int) -> dict[str, Any]:
    return {"rows": rows, "scale": scale, "max_abs_coord_std": max_u, "steps": steps, "targets": build_targets(rows)}


if __name__ == "__main__":
    main()
