"""ITC on MinAtar: world-model rollouts and an actor-critic trained purely in imagination (issue #28).

Per game (Breakout, Freeway; the ``minatar`` package, sticky actions 0.1), one run of the ``itc_minatar`` recipe
(``lightning_icml26.tasks.ItcMinatarConfig``): epsilon-greedy play tokenised as 5 x 5 grids of 2 x 2 patches with
the environment's noise floor; a token world model trained with Lightning until its validation loss is within
10 % of the floor (or the step budget ends); free-running rollouts decoded with ITC (alpha 0.2, tau 0.05,
MinAtar's official setting; exact assignment), plain sampling (same Gumbel noise) and argmax; an actor-critic
trained purely in imagination with each decoder (3 seeds), played in the real game.

Targets (same keys at ``--quick``): per game, ITC's mean real return >= sampling's; ITC's persistence error below
sampling's at every horizon; ITC's object motion within 20 % of the truth; world-model validation loss <= 1.1 x the
floor. ``--quick`` and the full size are recipe overrides (``QUICK``; the full size is the recipe's default).

    python -m benchmarks.itc_minatar --quick
    OMP_NUM_THREADS=1 python -m benchmarks.itc_minatar --json benchmarks/results/itc_minatar.json
"""

from __future__ import annotations

import json
import statistics
import tempfile
from pathlib import Path
from typing import Any

from benchmarks._common import benchmark_parser, markdown_table, print_targets, ratio, target, worst, write_json
from lightning_icml26.cli import run_recipe
from lightning_icml26.tasks.itc_minatar import DECODER_NAMES

QUICK = {
    "train_steps": 3000, "val_steps": 500, "max_episode_steps": 300, "d_model": 48, "wm_steps": 250,
    "val_every": 125, "horizon": 6, "rollout_starts": 48, "imagine_horizon": 6, "ac_updates": 10, "ac_batch": 16,
    "eval_episodes": 3, "eval_steps": 100,
}  # fmt: skip


def run_game(game: str, sizes: dict[str, Any], seed: int, run_dir: Path) -> dict[str, Any]:
    """One ``itc_minatar`` recipe run; the task's full record (``world_model``, ``rollouts``, ``agents``)."""
    overrides = [f"task.game={game}", f"seed={seed}", *(f"task.{k}={v}" for k, v in sizes.items())]
    summary = run_recipe("itc_minatar", overrides, run_dir=run_dir / game)
    record = json.loads((run_dir / game / "itc_minatar.json").read_text())
    return {**record, "tokens": record["summary"]["tokens"], "wall_s": summary["seconds"]}


def summarise(results: dict[str, dict[str, Any]], horizon: int) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Table rows and targets."""
    rows, targets = [], {}
    for game, res in results.items():
        ro, ag, wm = res["rollouts"], res["agents"], res["world_model"]
        truth_motion = statistics.fmean(ro["truth"]["object_motion"])
        for name in DECODER_NAMES:
            pe = ro[name]["persistence_error_rate"]
            returns = ag[name]
            rows.append({
                "game": game, "decoder": name,
                "persist_err_h1": pe[0], f"persist_err_h{horizon}": pe[-1],
                "ratio_to_sample_h_last": ratio(pe[-1], ro["sample"]["persistence_error_rate"][-1]),
                "token_acc_h1": ro[name]["token_accuracy"][0], f"token_acc_h{horizon}": ro[name]["token_accuracy"][-1],
                "motion/truth": ratio(statistics.fmean(ro[name]["object_motion"]), truth_motion),
                "real_return": statistics.fmean(returns),
                "return_sd": statistics.stdev(returns) if len(returns) > 1 else float("nan"),
            })  # fmt: skip
        rows.append({"game": game, "decoder": "random policy", "real_return": statistics.fmean(ag["random"])})
        itc_pe, sample_pe = ro["itc"]["persistence_error_rate"], ro["sample"]["persistence_error_rate"]
        targets[f"{game}_itc_minus_sample_return"] = target(
            statistics.fmean(ag["itc"]) - statistics.fmean(ag["sample"]), ">=", 0.0
        )
        targets[f"{game}_itc_over_sample_persistence_worst_h"] = target(
            worst([ratio(a, b) for a, b in zip(itc_pe, sample_pe, strict=True)], "max"), "<", 1.0
        )
        targets[f"{game}_itc_motion_rel_error"] = target(
            abs(ratio(statistics.fmean(ro["itc"]["object_motion"]), truth_motion) - 1.0), "<=", 0.2
        )
        targets[f"{game}_wm_val_loss_over_floor"] = target(ratio(wm["val_loss"], wm["floor"]), "<=", 1.1)
    return rows, targets


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Run every game through the recipe, print the table and targets, write the JSON; return the figures."""
    parser = benchmark_parser(__doc__.splitlines()[0])
    parser.add_argument("--games", nargs="+", default=["breakout", "freeway"])
    parser.add_argument("--wm-steps", type=int, default=None, help="override the world-model step budget")
    parser.add_argument("--ac-updates", type=int, default=None, help="override the imagination updates per agent")
    parser.add_argument("--zero-neighbor", action="store_true", help="ITC's official use_zero_neighbor_distance")
    args = parser.parse_args(argv)
    sizes: dict[str, Any] = dict(QUICK) if args.quick else {}
    extra = {"wm_steps": args.wm_steps, "ac_updates": args.ac_updates, "use_zero_neighbor_distance": args.zero_neighbor}
    sizes.update({k: v for k, v in extra.items() if v not in (None, False)})
    horizon = int(sizes.get("horizon", 12))
    with tempfile.TemporaryDirectory() as tmp:
        results = {game: run_game(game, sizes, args.seed, Path(tmp)) for game in args.games}
    rows, targets = summarise(results, horizon)
    print()
    print(markdown_table(rows))
    for game, res in results.items():
        wm = res["world_model"]
        print(f"\n{game}: world model val loss {wm['val_loss']:.4f} vs noise floor {wm['floor']:.4f} nats/cell "
              f"({wm['steps']:.0f} steps, {wm['train_s']:.0f} s); game total {res['wall_s']:.0f} s")  # fmt: skip
    print_targets(targets)
    figures = {"results": results, "rows": rows, "targets": targets}
    write_json(args.json, "itc_minatar", figures, args)
    return figures


if __name__ == "__main__":
    main()
