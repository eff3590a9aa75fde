"""ArBG vs a normalising-flow Boltzmann generator (zuko NSF) at equal parameter count and wall-clock budget.

Both models see the same reference samples (project MCMC / OpenMM MD), the same augmentation (centring, random
rotation, centre-of-mass noise) and the same evaluation: draw N samples, reweight towards exp(-E) (SNIS with
0.2 % log-weight clipping; chirality fix for alanine dipeptide), report Kish ESS / N, E-W2 between reference
and resampled energies (kT), and T-W2 on (phi, psi) for alanine dipeptide.

    python benchmarks/arbg_vs_flow.py --quick            # under a minute (tiny budget, first run also samples)
    python benchmarks/arbg_vs_flow.py --budget 60 --json out.json
"""

from __future__ import annotations

import math
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import benchmark_parser, markdown_table, ratio, write_json

from lightning_icml26.metrics.functional import energy_w2, torus_w2
from lightning_icml26.modules.arbg import (
    ArBG,
    BoltzmannReweighter,
    ChiralityFix,
    FlowBG,
    get_system,
    reference_samples,
)

CONFIG = {  # system: (num_bins, coord_range, hidden, layers)
    "dw4": (512, (-5.0, 5.0), 48, 2),
    "lj13": (512, (-6.0, 6.0), 48, 2),
    "aldp": (512, (-5.0, 5.0), 48, 2),
}


def n_params(module: torch.nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())


def matched_flow(n_atoms: int, dim: int, scale: float, target: int) -> FlowBG:
    """The zuko NSF (4 transforms, two hidden layers) whose width gives the parameter count closest to ``target``."""
    best = None
    for width in range(8, 1025, 8):
        flow = FlowBG(n_atoms, dim, scale=scale, transforms=4, hidden_features=(width, width))
        gap = abs(n_params(flow) - target)
        if best is None or gap < best[0]:
            best = (gap, flow)
        if n_params(flow) > target:
            break
    assert best is not None
    return best[1]


def train(model: torch.nn.Module, data: torch.Tensor, budget_s: float, batch_size: int, lr: float) -> int:
    """Train with AdamW (the module's own training_step) for ``budget_s`` seconds; return the number of steps."""
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
    model.train()
    steps, start = 0, time.perf_counter()
    gen = torch.Generator().manual_seed(0)
    while time.perf_counter() - start < budget_s:
        idx = torch.randint(0, data.shape[0], (batch_size,), generator=gen)
        loss = model._loss(data[idx], True) if isinstance(model, ArBG) else model._nll(data[idx], True)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        steps += 1
    model.eval()
    return steps


def evaluate(model: torch.nn.Module, system, reference: torch.Tensor, n: int, seed: int) -> dict[str, float]:
    torch.manual_seed(seed)
    x, log_q = model.sample_with_log_prob(n)
    chir = ChiralityFix.from_reference(reference, system.chiral_centres) if system.chiral_centres else None
    rw = BoltzmannReweighter(system.energy(), 0.002, chir, model.com_std or None, on_nonfinite="drop")
    res = rw.reweight(x, log_q, num_resample=0, generator=torch.Generator().manual_seed(seed))
    ref_e = rw.energies(reference)
    out = {"ess": res.ess, "e_w2": float(energy_w2(ref_e, res.resampled_energies))}
    if system.dihedrals:
        out["t_w2"] = float(torus_w2(system.torus(reference), system.torus(res.resampled)))
    return out


def main() -> None:
    parser = benchmark_parser(__doc__.splitlines()[0])
    parser.add_argument("--budget", type=float, default=60.0, help="training seconds per model and system")
    parser.add_argument("--systems", default="dw4,lj13,aldp")
    args = parser.parse_args()
    budget = 4.0 if args.quick else args.budget
    n_train, n_ref, n_eval = (1500, 500, 500) if args.quick else (4000, 1000, 1000)
    torch.manual_seed(args.seed)
    torch.set_num_threads(max(1, min(2, torch.get_num_threads())))
    rows, figures = [], {}
    for name in args.systems.split(","):
        system = get_system(name)
        kw = {"save_every": 100, "burn_in_steps": 5000} if (args.quick and name == "aldp") else {}
        t0 = time.perf_counter()
        data = reference_samples(name, n_train + n_ref, seed=args.seed, **kw)
        t_ref = time.perf_counter() - t0
        train_x, ref_x = data[:n_train], data[n_train:]
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
        res = {}
        for label, model, lr in (("arbg", arbg, 1e-3), ("flow", flow, 1e-3)):
            steps = train(model, train_x, budget, 256, lr)
            t1 = time.perf_counter()
            metrics = evaluate(model, system, ref_x, n_eval, args.seed)
            res[label] = {**metrics, "params": n_params(model), "steps": steps, "eval_s": time.perf_counter() - t1}
        figures[name] = {**res, "reference_s": t_ref, "budget_s": budget}
        for metric, better in (("ess", "higher"), ("e_w2", "lower"), ("t_w2", "lower")):
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
        print(markdown_table(rows[-3 if system.dihedrals else -2 :]), flush=True)
    print(
        f"\nbudget: {budget:.0f} s of training per model and system, {torch.get_num_threads()} threads; "
        f"{n_train} training / {n_ref} reference conformations; {n_eval} samples per evaluation\n"
    )
    print(markdown_table(rows))
    write_json(args.json, "arbg_vs_flow", {"rows": rows, "systems": figures}, args)
    if any(not math.isfinite(r["ArBG"]) for r in rows):
        print("warning: non-finite figures", file=sys.stderr)


if __name__ == "__main__":
    main()
