"""ArBG vs a normalising-flow Boltzmann generator (zuko NSF) at equal parameter count and equal training epochs.

For each system (DW-4, LJ-13 by default) and seed, both models see the same reference samples (project MCMC),
split by stride into training / validation / test conformations, the same augmentation (centring, random
rotation, centre-of-mass noise), the same optimiser (AdamW, lr 1e-3, weight decay 0.01, gradient clipping 1.0,
batch 256, cosine decay to zero over the run) and the same number of epochs (``--budget-mode epochs``, the
default; ``--budget-mode seconds`` trains each model for ``--budget`` CPU seconds at constant lr instead).

Evaluation: draw N samples, reweight them towards exp(-E) (SNIS with 0.2 % log-weight clipping), report Kish
ESS / N and E-W2 between reference and resampled energies (kT). ArBG's sampling temperature is chosen from
``--temperatures`` (0.9, 0.95, 1.0, 1.05) by the lowest E-W2 on the *validation* conformations, and the test
figures are measured with fresh samples at that temperature against the *test* conformations; the flow has no
temperature (T = 1). The validation NLL (nats per coordinate) is recorded during training to show the plateau.

Fairness rules:

* Parameters are counted as those that can change the output: zuko's masked (MADE) layers keep a full weight
  matrix of which the autoregressive mask zeroes about half; those masked-out entries are not counted.
* The flow is zuko's NSF (8 spline bins, two hidden layers per transform) with up to 4 transforms and a hidden
  width of at least the number of coordinates (narrower MADE layers cut autoregressive dependencies).

    python -m benchmarks.arbg_vs_flow --quick            # under three minutes
    python -m benchmarks.arbg_vs_flow --json benchmarks/results/arbg_vs_flow.json
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor, nn

from benchmarks._common import benchmark_parser, markdown_table, print_targets, ratio, target, write_json
from lightning_icml26.data.boltzmann import (
    BoltzmannReweighter,
    BoltzmannSystem,
    ChiralityFix,
    get_system,
    reference_samples,
)
from lightning_icml26.metrics.functional import energy_w2, torus_w2
from lightning_icml26.modules.arbg import ArBG, FlowBG

CONFIG = {  # system: (num_bins, coord_range, hidden, layers)
    "dw4": (512, (-6.0, 6.0), 64, 3),
    "lj13": (512, (-6.0, 6.0), 64, 3),
    "aldp": (512, (-5.0, 5.0), 64, 3),
}
NUM_TRAIN = {"dw4": 4000, "lj13": 4000, "aldp": 4000}  # training conformations (full runs)
VALUE_EMBEDDING = {"dw4": False, "lj13": False, "aldp": False}  # ArBG(value_embedding=...) under --value-embedding auto
MAX_TRANSFORMS = 4
Model = ArBG | FlowBG


def n_params(module: nn.Module) -> int:
    """Parameters that can change the output: entries a ``mask`` buffer zeroes (zuko's MaskedLinear) are excluded.

    Example:
        >>> n_params(nn.Linear(3, 2))
        8
    """
    masked: set[int] = set()
    total = 0
    for layer in module.modules():
        mask = getattr(layer, "mask", None)
        if isinstance(layer, nn.Linear) and isinstance(mask, Tensor) and mask.shape == layer.weight.shape:
            masked.add(id(layer.weight))
            total += int(mask.bool().sum())
    return total + sum(p.numel() for p in module.parameters() if id(p) not in masked)


def n_params_raw(module: nn.Module) -> int:
    """Every stored parameter entry, masked or not."""
    return sum(p.numel() for p in module.parameters())


def matched_flow(n_atoms: int, dim: int, scale: float, target: int) -> FlowBG:
    """The zuko NSF whose effective parameter count is closest to ``target`` with hidden width >= coordinates.

    Tries 4, 3, 2, 1 transforms (two hidden layers of equal width, 8 spline bins) and returns the first whose
    matched width is at least ``n_atoms * dim`` (full MADE connectivity), or the widest 1-transform flow.
    """
    features = n_atoms * dim
    best: tuple[int, FlowBG] | None = None
    for transforms in range(MAX_TRANSFORMS, 0, -1):
        best = None
        for width in range(8, 2049, 8):
            flow = FlowBG(n_atoms, dim, scale=scale, transforms=transforms, hidden_features=(width, width))
            gap = abs(n_params(flow) - target)
            if best is None or gap < best[0]:
                best = (gap, flow)
            if n_params(flow) > target:
                break
        assert best is not None
        if best[1].hparams["hidden_features"][0] >= features:
            return best[1]
    assert best is not None
    return best[1]


def _loss(model: Model, batch: Tensor) -> Tensor:
    return model._loss(batch, True) if isinstance(model, ArBG) else model._nll(batch, True)


def train(
    model: Model,
    data: Tensor,
    val: Tensor,
    *,
    epochs: int | None,
    budget_s: float | None,
    batch_size: int,
    lr: float,
    seed: int,
    evals: int = 10,
    on_epoch: Callable[[int, int], None] | None = None,
) -> dict[str, Any]:
    """Train with AdamW on the module's own loss for ``epochs`` epochs (cosine lr) or ``budget_s`` CPU seconds.

    ``on_epoch(epoch, steps)``, when given, is called after every epoch (model in eval mode, back to training
    mode at the next epoch), e.g. to measure checkpoints of one run.

    Returns the step count, CPU seconds and the validation NLL curve (``evals`` points, nats per coordinate).
    """
    torch.manual_seed(seed)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
    per_epoch = math.ceil(data.shape[0] / batch_size)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=epochs * per_epoch) if epochs is not None else None
    gen = torch.Generator().manual_seed(seed)
    steps, start, epoch, curve = 0, time.process_time(), 0, []
    eval_at = {max(1, round(epochs * (i + 1) / evals)) for i in range(evals)} if epochs is not None else set()
    while (epochs is not None and epoch < epochs) or (budget_s is not None and time.process_time() - start < budget_s):
        model.train()
        for idx in torch.randperm(data.shape[0], generator=gen).split(batch_size):
            loss = _loss(model, data[idx])
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            if sched is not None:
                sched.step()
            steps += 1
            if budget_s is not None and time.process_time() - start >= budget_s:
                break
        epoch += 1
        if epoch in eval_at:
            model.eval()
            curve.append((epoch, heldout_nll(model, val)))
        if on_epoch is not None:
            model.eval()
            on_epoch(epoch, steps)
    model.eval()
    if budget_s is not None:
        curve.append((epoch, heldout_nll(model, val)))
    return {"steps": steps, "epochs": epoch, "train_cpu_s": time.process_time() - start, "val_nll_curve": curve}


@torch.no_grad()
def heldout_nll(model: Model, data: Tensor) -> float:
    """Mean negative log density per coordinate of centred held-out conformations (nats, physical units)."""
    x = data - data.mean(1, keepdim=True)
    return float(-model.log_prob(x).mean()) / (x.shape[1] * x.shape[2])


def evaluate(
    model: Model, system: BoltzmannSystem, reference: Tensor, n: int, seed: int, temperature: float = 1.0
) -> dict[str, float]:
    """Sample ``n`` conformations at ``temperature``, reweight them (SNIS) and compare with ``reference``."""
    torch.manual_seed(seed)
    if isinstance(model, ArBG):
        x, log_q = model.sample_with_log_prob(n, temperature, generator=torch.Generator().manual_seed(seed))
    else:
        x, log_q = model.sample_with_log_prob(n, temperature)
    chir = ChiralityFix.from_reference(reference, system.chiral_centres) if system.chiral_centres else None
    rw = BoltzmannReweighter(system.energy(), 0.002, chir, model.com_std or None, on_nonfinite="drop")
    res = rw.reweight(x, log_q, num_resample=0, generator=torch.Generator().manual_seed(seed))
    assert res.resampled is not None
    assert res.resampled_energies is not None
    ref_e = rw.energies(reference)
    out = {"ess": res.ess, "e_w2": float(energy_w2(res.resampled_energies, ref_e))}
    raw_e = rw.energies(x)  # before reweighting: diagnostic, not part of the targets
    finite = torch.isfinite(raw_e)
    out["e_w2_raw"] = float(energy_w2(raw_e[finite], ref_e)) if bool(finite.any()) else float("nan")
    ref_t, res_t = system.torus(reference), system.torus(res.resampled)
    if ref_t is not None and res_t is not None:
        out["t_w2"] = float(torus_w2(res_t, ref_t))
    return out


def split(data: Tensor, n_val: int, n_test: int) -> tuple[Tensor, Tensor, Tensor]:
    """Training, validation and test conformations: held-out frames evenly spaced over the (time-ordered) chains.

    Example:
        >>> tr, va, te = split(torch.arange(10.0)[:, None, None], 2, 2)
        >>> tr.flatten().tolist(), va.flatten().tolist(), te.flatten().tolist()
        ([1.0, 3.0, 4.0, 6.0, 8.0, 9.0], [0.0, 5.0], [2.0, 7.0])
    """
    m = n_val + n_test
    if data.shape[0] <= m:
        raise ValueError(f"need more than n_val + n_test = {m} conformations, got {data.shape[0]}")
    held = (torch.arange(m) * data.shape[0]) // m
    order = torch.cat([torch.arange(0, m, 2), torch.arange(1, m, 2)])  # alternate validation / test frames
    is_train = torch.ones(data.shape[0], dtype=torch.bool)
    is_train[held] = False
    return data[is_train], data[held[order[:n_val]]], data[held[order[n_val:]]]


def run_seed(name: str, seed: int, args: argparse.Namespace, sizes: tuple[int, int, int, int]) -> dict[str, Any]:
    """Train ArBG and the matched flow on one system and seed; choose ArBG's temperature on validation."""
    n_train, n_val, n_test, n_eval = sizes
    system = get_system(name)
    data = reference_samples(name, n_train + n_val + n_test, seed=seed)
    train_x, val_x, test_x = split(data, n_val, n_test)
    centred = train_x - train_x.mean(1, keepdim=True)
    scale = float(centred.pow(2).mean().sqrt())
    bins, rng, hidden, layers = CONFIG[name]
    value_embedding = VALUE_EMBEDDING[name] if args.value_embedding == "auto" else args.value_embedding == "on"
    torch.manual_seed(seed)
    arbg = ArBG(
        system.n_atoms,
        system.dim,
        atom_types=system.atom_types,
        num_bins=bins,
        coord_range=rng,
        scale=scale,
        hidden_size=hidden,
        num_layers=layers,
        num_heads=4,
        dequantization=args.dequantization,
        value_embedding=value_embedding,
    )
    if args.dequantization == "empirical":
        arbg.fit_dequantization(train_x, generator=torch.Generator().manual_seed(seed))
    flow = matched_flow(system.n_atoms, system.dim, scale, n_params(arbg))
    epochs = args.epochs if args.budget_mode == "epochs" else None
    budget = args.budget if args.budget_mode == "seconds" else None
    out: dict[str, Any] = {"seed": seed, "scale": scale, "value_embedding": value_embedding, "lr": args.lr}
    for label, model in (("arbg", arbg), ("flow", flow)):
        info = train(model, train_x, val_x, epochs=epochs, budget_s=budget, batch_size=256, lr=args.lr, seed=seed)
        temps = args.temperatures if label == "arbg" else [1.0]
        val_ew2 = {t: evaluate(model, system, val_x, n_eval, seed + 1, t)["e_w2"] for t in temps}
        best_t = min(temps, key=lambda t: (math.isnan(val_ew2[t]), val_ew2[t]))
        test = evaluate(model, system, test_x, 2 * n_eval, seed + 2, best_t)
        curve = info["val_nll_curve"]
        out[label] = {
            **test,
            **info,
            "temperature": best_t,
            "val_e_w2": {str(t): v for t, v in val_ew2.items()},
            "val_nll": curve[-1][1],
            "val_nll_drop_last_quarter": curve[max(0, (3 * len(curve)) // 4 - 1)][1] - curve[-1][1],
            "params": n_params(model),
            "params_raw": n_params_raw(model),
        }
    out["flow"]["config"] = {k: flow.hparams[k] for k in ("transforms", "hidden_features", "bins")}
    return out


def _stats(values: list[float]) -> tuple[float, float]:
    t = torch.tensor(values, dtype=torch.float64)
    return float(t.mean()), float(t.std()) if len(values) > 1 else 0.0


def summarise(name: str, runs: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Mean and standard deviation over seeds of each test metric, and the ratio of the means."""
    rows, means = [], {}
    for metric, better in (("e_w2", "lower"), ("ess", "higher"), ("e_w2_raw", "lower"), ("val_nll", "lower")):
        a_m, a_s = _stats([r["arbg"][metric] for r in runs])
        f_m, f_s = _stats([r["flow"][metric] for r in runs])
        win = a_m > f_m if better == "higher" else a_m < f_m
        means[metric] = {"arbg": a_m, "arbg_std": a_s, "flow": f_m, "flow_std": f_s}
        rows.append(
            {
                "system": name,
                "metric": metric,
                "ArBG mean": a_m,
                "ArBG std": a_s,
                "flow mean": f_m,
                "flow std": f_s,
                "ArBG/flow": ratio(a_m, f_m),
                "better": better,
                "ArBG wins": "yes" if win else "no",
            }
        )
    return rows, means


def build_targets(name: str, means: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Targets of one system: ArBG's mean E-W2 at most the flow's and its mean ESS at least the flow's.

    Example:
        >>> m = {"e_w2": {"arbg": 1.0, "flow": 2.0}, "ess": {"arbg": 0.1, "flow": 0.2}}
        >>> {k: v["met"] for k, v in build_targets("dw4", m).items()}
        {'dw4_e_w2_ratio': True, 'dw4_ess_ratio': False}
    """
    return {
        f"{name}_e_w2_ratio": target(ratio(means["e_w2"]["arbg"], means["e_w2"]["flow"]), "<=", 1.0),
        f"{name}_ess_ratio": target(ratio(means["ess"]["arbg"], means["ess"]["flow"]), ">=", 1.0),
    }


def main() -> None:
    parser = benchmark_parser((__doc__ or "").splitlines()[0])
    parser.add_argument("--budget-mode", choices=("epochs", "seconds"), default="epochs")
    parser.add_argument("--epochs", type=int, default=None, help="training epochs per model (epochs mode)")
    parser.add_argument("--budget", type=float, default=None, help="training CPU seconds per model (seconds mode)")
    parser.add_argument("--seeds", type=int, default=None, help="number of seeds (seed, seed + 1, ...)")
    parser.add_argument("--temperatures", type=float, nargs="+", default=[0.9, 0.95, 1.0, 1.05])
    parser.add_argument("--dequantization", choices=("uniform", "empirical"), default="uniform")
    parser.add_argument(
        "--value-embedding",
        choices=("auto", "on", "off"),
        default="auto",
        help="ArBG's value embedding of the previous bins (auto: the per-system default, VALUE_EMBEDDING)",
    )
    parser.add_argument("--lr", type=float, default=1e-3, help="AdamW learning rate of both models")
    parser.add_argument("--threads", type=int, default=1, help="torch threads")
    parser.add_argument("--systems", default="dw4,lj13", help="comma-separated: dw4, lj13, aldp")
    parser.add_argument("--num-eval", type=int, default=None, help="generated samples per validation evaluation")
    parser.add_argument(
        "--num-train", type=int, default=None, help="training conformations (default: per system, NUM_TRAIN)"
    )
    args: argparse.Namespace = parser.parse_args()
    if not args.lr > 0:
        parser.error(f"--lr must be positive, got {args.lr}")
    if any(not t > 0 for t in args.temperatures):
        parser.error(f"--temperatures must be positive, got {args.temperatures}")
    sizes = (1000, 250, 250, 250) if args.quick else (4000, 1000, 1000, 1000)
    if args.num_train is not None and args.num_train < 1:
        parser.error(f"--num-train must be a positive integer, got {args.num_train}")
    if args.num_eval:
        sizes = (*sizes[:3], args.num_eval)
    args.epochs = args.epochs or (3 if args.quick else 60)
    args.budget = args.budget or (4.0 if args.quick else 120.0)
    n_seeds = args.seeds or (2 if args.quick else 3)
    torch.set_num_threads(args.threads)
    rows: list[dict[str, Any]] = []
    systems: dict[str, Any] = {}
    targets: dict[str, dict[str, Any]] = {}
    for name in args.systems.split(","):
        if name not in CONFIG:
            parser.error(f"--systems entries must be among {sorted(CONFIG)}, got {name!r}")
        runs = []
        sys_sizes = (args.num_train or (sizes[0] if args.quick else NUM_TRAIN[name]), *sizes[1:])
        for seed in range(args.seed, args.seed + n_seeds):
            t0 = time.perf_counter()
            runs.append(run_seed(name, seed, args, sys_sizes))
            a, f = runs[-1]["arbg"], runs[-1]["flow"]
            print(
                f"{name} seed {seed}: ArBG T={a['temperature']} E-W2 {a['e_w2']:.4g} ESS {a['ess']:.4g} "
                f"val NLL {a['val_nll']:.4g} | flow E-W2 {f['e_w2']:.4g} ESS {f['ess']:.4g} "
                f"val NLL {f['val_nll']:.4g} ({time.perf_counter() - t0:.0f} s wall)",
                flush=True,
            )
            # partial record after each seed, so a long run that is stopped keeps its finished seeds
            part_rows, part_means = summarise(name, runs)
            part = {"rows": rows + part_rows, "systems": {**systems, name: {"runs": runs, "means": part_means}}}
            write_json(
                args.json, "arbg_vs_flow", {**part, "targets": {**targets, **build_targets(name, part_means)}}, args
            )
        sys_rows, means = summarise(name, runs)
        rows += sys_rows
        systems[name] = {"runs": runs, "means": means, "config": CONFIG[name], "num_train": sys_sizes[0]}
        targets.update(build_targets(name, means))
        write_json(args.json, "arbg_vs_flow", {"rows": rows, "systems": systems, "targets": targets}, args)
        print(markdown_table(sys_rows), flush=True)
    budget = f"{args.epochs} epochs" if args.budget_mode == "epochs" else f"{args.budget:.0f} CPU s"
    print(
        f"\n{budget} of training per model, {n_seeds} seeds, {torch.get_num_threads()} thread(s); "
        f"{args.num_train or 'default'} training / {sizes[1]} validation / {sizes[2]} test conformations; "
        f"{sizes[3]} samples per validation temperature, {2 * sizes[3]} at test "
        "(e_w2_raw: before reweighting; val_nll: nats per coordinate)\n"
    )
    print(markdown_table(rows))
    print_targets(targets)
    record = {"rows": rows, "systems": systems, "targets": targets}
    write_json(args.json, "arbg_vs_flow", record, args)


if __name__ == "__main__":
    main()
