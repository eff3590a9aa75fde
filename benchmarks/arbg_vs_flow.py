"""ArBG vs a normalising-flow Boltzmann generator (zuko NSF) at equal parameter count and training-time budget.

Both models see the same reference samples (project MCMC / OpenMM MD), the same augmentation (centring, random
rotation, centre-of-mass noise), the same optimiser (AdamW, lr 1e-3, weight decay 0.01, gradient clipping 1.0,
batch 256) and the same evaluation: draw N samples, reweight towards exp(-E) (SNIS with 0.2 % log-weight
clipping; chirality fix for alanine dipeptide), report Kish ESS / N, E-W2 between reference and resampled
energies (kT), and T-W2 on (phi, psi) for alanine dipeptide.

Fairness rules:

* Parameters are counted as those that can change the output: zuko's masked (MADE) layers keep a full weight
  matrix of which the autoregressive mask zeroes about half; those masked-out entries are not counted.
* The flow is zuko's NSF (8 spline bins, two hidden layers per transform, its default) with up to 4 transforms.
  Its hidden width must be at least the number of coordinates: a MADE layer narrower than that has no hidden
  unit for some autoregressive degrees, so late coordinates cannot depend on most earlier ones (a crippled
  flow). When 4 transforms at the parameter budget would be narrower than that, fewer transforms are used.
* The training budget is measured in CPU seconds of this process (``--clock cpu``, the default, with one
  thread), so other jobs on a shared machine do not shift the budget between the two models; ``--clock wall``
  uses wall-clock time instead.

    python benchmarks/arbg_vs_flow.py --quick            # under a minute (tiny budget, first run also samples)
    python benchmarks/arbg_vs_flow.py --budget 180 --json outputs/arbg_vs_flow.json
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch import Tensor, nn

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import benchmark_parser, markdown_table, print_targets, ratio, target, worst, write_json

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
    "dw4": (512, (-5.0, 5.0), 48, 2),
    "lj13": (512, (-6.0, 6.0), 48, 2),
    "aldp": (512, (-5.0, 5.0), 48, 2),
}
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


def train(model: Model, data: Tensor, budget_s: float, batch_size: int, lr: float, clock: str) -> int:
    """Train with AdamW on the module's own loss for ``budget_s`` seconds of ``clock``; return the step count."""
    now: Callable[[], float] = time.process_time if clock == "cpu" else time.perf_counter
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
    model.train()
    steps, start = 0, now()
    gen = torch.Generator().manual_seed(0)
    while now() - start < budget_s:
        idx = torch.randint(0, data.shape[0], (batch_size,), generator=gen)
        loss = model._loss(data[idx], True) if isinstance(model, ArBG) else model._nll(data[idx], True)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        steps += 1
    model.eval()
    return steps


@torch.no_grad()
def heldout_nll(model: Model, data: Tensor) -> float:
    """Mean negative log density per coordinate of centred held-out conformations (nats, physical units)."""
    x = data - data.mean(1, keepdim=True)
    return float(-model.log_prob(x).mean()) / (x.shape[1] * x.shape[2])


def evaluate(model: Model, system: BoltzmannSystem, reference: Tensor, n: int, seed: int) -> dict[str, float]:
    """Sample ``n`` conformations, reweight them (SNIS) and compare with the reference."""
    torch.manual_seed(seed)
    x, log_q = model.sample_with_log_prob(n)
    chir = ChiralityFix.from_reference(reference, system.chiral_centres) if system.chiral_centres else None
    rw = BoltzmannReweighter(system.energy(), 0.002, chir, model.com_std or None, on_nonfinite="drop")
    res = rw.reweight(x, log_q, num_resample=0, generator=torch.Generator().manual_seed(seed))
    assert res.resampled is not None
    assert res.resampled_energies is not None
    ref_e = rw.energies(reference)
    out = {"ess": res.ess, "e_w2": float(energy_w2(res.resampled_energies, ref_e))}
    # without reweighting: how close the raw proposal is (not part of the target, reported for diagnosis)
    raw_e = rw.energies(x)
    finite = torch.isfinite(raw_e)
    out["e_w2_raw"] = float(energy_w2(raw_e[finite], ref_e)) if bool(finite.any()) else float("nan")
    ref_t, res_t = system.torus(reference), system.torus(res.resampled)
    if ref_t is not None and res_t is not None:
        out["t_w2"] = float(torus_w2(res_t, ref_t))
    return out


def _model_row(name: str, label: str, res: dict[str, Any]) -> dict[str, Any]:
    r = res[label]
    return {"system": name, "model": label, **{k: r[k] for k in ("params", "params_raw", "steps", "nll")}}


def build_targets(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """ArBG better than the flow on every system: worst ESS ratio (>= 1) and worst energy-W2 ratio (<= 1)."""
    ess = [r["ArBG/flow"] for r in rows if r["metric"] == "ess"]
    ew2 = [r["ArBG/flow"] for r in rows if r["metric"] == "e_w2"]
    return {
        "ess_ratio_min": target(worst(ess, "min"), ">=", 1.0),
        "energy_w2_ratio_max": target(worst(ew2, "max"), "<=", 1.0),
    }


def main() -> None:
    parser = benchmark_parser((__doc__ or "").splitlines()[0])
    parser.add_argument("--budget", type=float, default=60.0, help="training seconds per model and system")
    parser.add_argument("--clock", choices=("cpu", "wall"), default="cpu", help="how the budget is measured")
    parser.add_argument("--threads", type=int, default=1, help="torch threads")
    parser.add_argument("--systems", default="dw4,lj13,aldp")
    parser.add_argument("--num-eval", type=int, default=None, help="generated samples per evaluation")
    args: argparse.Namespace = parser.parse_args()
    budget = 4.0 if args.quick else args.budget
    n_train, n_ref, n_eval = (1500, 500, 500) if args.quick else (4000, 1000, 1000)
    n_eval = args.num_eval or n_eval
    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    rows: list[dict[str, Any]] = []
    model_rows: list[dict[str, Any]] = []
    figures: dict[str, Any] = {}
    for name in args.systems.split(","):
        system = get_system(name)
        kw: dict[str, Any] = {"save_every": 100, "burn_in_steps": 5000} if (args.quick and name == "aldp") else {}
        t0 = time.perf_counter()
        data = reference_samples(name, n_train + n_ref, seed=args.seed, **kw)
        t_ref = time.perf_counter() - t0
        # every k-th frame is the reference: MD frames are time-ordered, and a contiguous tail could sit in one
        # metastable state; the strided reference spans the whole trajectory
        stride = (n_train + n_ref) // n_ref
        is_ref = torch.zeros(data.shape[0], dtype=torch.bool)
        is_ref[stride - 1 :: stride] = True
        train_x, ref_x = data[~is_ref][:n_train], data[is_ref][:n_ref]
        centred = train_x - train_x.mean(1, keepdim=True)
        scale = float(centred.pow(2).mean().sqrt())
        bins, rng, hidden, layers = CONFIG[name]
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
        )
        flow = matched_flow(system.n_atoms, system.dim, scale, n_params(arbg))
        res: dict[str, dict[str, Any]] = {}
        model: Model
        for label, model, lr in (("arbg", arbg, 1e-3), ("flow", flow, 1e-3)):
            steps = train(model, train_x, budget, 256, lr, args.clock)
            t1 = time.perf_counter()
            metrics = evaluate(model, system, ref_x, n_eval, args.seed)
            res[label] = {
                **metrics,
                "nll": heldout_nll(model, ref_x),
                "params": n_params(model),
                "params_raw": n_params_raw(model),
                "steps": steps,
                "eval_s": time.perf_counter() - t1,
            }
        res["flow"]["config"] = {k: flow.hparams[k] for k in ("transforms", "hidden_features", "bins")}
        figures[name] = {**res, "reference_s": t_ref, "budget_s": budget, "clock": args.clock}
        model_rows += [_model_row(name, "arbg", res), _model_row(name, "flow", res)]
        n_before = len(rows)
        for metric, better in (("ess", "higher"), ("e_w2", "lower"), ("t_w2", "lower"), ("e_w2_raw", "lower")):
            if metric not in res["arbg"]:
                continue
            a, f = res["arbg"][metric], res["flow"][metric]
            win = (a > f) if better == "higher" else (a < f)
            rows.append(
                {
                    "system": name,
                    "metric": metric,
                    "ArBG": a,
                    "flow": f,
                    "ArBG/flow": ratio(a, f),
                    "better": better,
                    "ArBG wins": "yes" if win else "no",
                    "params ArBG/flow": f"{res['arbg']['params']}/{res['flow']['params']}",
                    "steps ArBG/flow": f"{res['arbg']['steps']}/{res['flow']['steps']}",
                }
            )
        print(markdown_table(rows[n_before:]), flush=True)
    print(
        f"\nbudget: {budget:.0f} s ({args.clock} clock) of training per model and system, "
        f"{torch.get_num_threads()} thread(s); {n_train} training / {n_ref} reference conformations; "
        f"{n_eval} samples per evaluation (e_w2_raw: before reweighting, diagnostic)\n"
    )
    print(markdown_table(rows))
    print("\nmodels (params: effective, excluding masked-out MADE weights; nll: held-out nats per coordinate)\n")
    print(markdown_table(model_rows))
    targets = build_targets(rows)
    print_targets(targets)
    record = {"rows": rows, "models": model_rows, "systems": figures, "targets": targets}
    write_json(args.json, "arbg_vs_flow", record, args)
    if any(not math.isfinite(r["ArBG"]) for r in rows):
        print("warning: non-finite figures", file=sys.stderr)


if __name__ == "__main__":
    main()
