"""ITC on MinAtar: world-model rollouts and an actor-critic trained purely in imagination (issue #28).

Per game (Breakout, Freeway; the ``minatar`` package, sticky actions 0.1):

1. Data: epsilon-greedy play (epsilon 0.5 around a simple game heuristic: track the ball / go up), tokenised as
   5 x 5 grids of 2 x 2 patches. The validation play also records the exact next-frame distribution of every step,
   from which the environment's noise floor (mean per-cell entropy of the next token given the full game state and
   the action) is computed and printed.
2. A :class:`~lightning_icml26.modules.itc.TokenWorldModel` is trained until its validation loss (on the same
   transitions as the floor) is within 10 % of the floor, or the step budget ends.
3. Free-running rollouts from held-out starts under the recorded actions, decoded with ITC (alpha 0.2, tau 0.05,
   MinAtar's official setting; exact assignment), plain sampling (same Gumbel noise) and argmax: persistence
   errors (duplications + disappearances + transmutations per true object), token accuracy and object motion by
   horizon.
4. A small actor-critic trained purely in imagination with each decoder (3 seeds each), evaluated in the real game.

Targets (same keys at ``--quick``): per game, ITC's mean real return >= sampling's; ITC's persistence error below
sampling's at every horizon; ITC's object motion within 20 % of the truth; world-model validation loss <= 1.1 x the
floor.

Run: ``python -m benchmarks.itc_minatar --quick`` (< 3 min) or the full size with ``--json PATH``.
"""

from __future__ import annotations

import statistics
import time
from typing import Any

import torch

from benchmarks._common import benchmark_parser, markdown_table, print_targets, ratio, target, worst, write_json
from lightning_icml26.algorithms import ImaginationConfig
from lightning_icml26.tasks.itc_minatar import (
    DECODER_NAMES,
    fit_world_model,
    next_frame_fn,
    official_itc,
    prepare_minatar,
    rollout_figures,
    train_agents,
)


def run_game(game: str, args: Any) -> dict[str, Any]:
    """All four stages for one game (the pieces live in :mod:`lightning_icml26.tasks.itc_minatar`)."""
    t0 = time.perf_counter()
    data = prepare_minatar(game, train_steps=args.train_steps, val_steps=args.val_steps, context=args.context,
                           seed=args.seed, max_episode_steps=args.max_episode_steps,
                           floor_samples=args.floor_samples)  # fmt: skip
    print(f"{game}: {data.train.num_steps} train / {data.val.num_steps} val steps, {data.book.size} tokens, noise "
          f"floor {data.floor:.4f} nats/cell over {len(data.val_frames)} validation transitions "
          f"({time.perf_counter() - t0:.0f} s)", flush=True)  # fmt: skip
    model, record = fit_world_model(data, d_model=args.d_model, num_layers=args.layers, num_heads=4, lr=args.lr,
                                    batch_size=args.batch_size, max_steps=args.wm_steps, val_every=args.val_every,
                                    seed=args.seed)  # fmt: skip
    itc = official_itc(args.zero_neighbor)
    logits_fn = next_frame_fn(model)
    rollouts = rollout_figures(logits_fn, data, itc, horizon=args.horizon, starts=args.rollout_starts, seed=args.seed)
    print(f"  ITC frame equals the sampled frame on {rollouts['itc_equals_sample_h1']:.4f} of cells at h1", flush=True)
    config = ImaginationConfig(horizon=args.imagine_horizon, updates=args.ac_updates, batch_size=args.ac_batch)
    agents = train_agents(logits_fn, data, itc, config, seeds=args.seeds, eval_episodes=args.eval_episodes,
                          eval_steps=args.eval_steps)  # fmt: skip
    return {"world_model": record, "rollouts": rollouts, "agents": agents, "tokens": data.book.size,
            "wall_s": time.perf_counter() - t0}  # fmt: skip


def summarise(results: dict[str, dict[str, Any]], horizon: int) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Table rows and targets."""
    rows, targets = [], {}
    for game, res in results.items():
        ro, ag, wm = res["rollouts"], res["agents"], res["world_model"]
        truth_motion = statistics.fmean(ro["truth"]["object_motion"])
        for name in DECODER_NAMES:
            pe = ro[name]["persistence_error_rate"]
            motion = statistics.fmean(ro[name]["object_motion"])
            returns = ag[name]
            rows.append({
                "game": game, "decoder": name,
                "persist_err_h1": pe[0], f"persist_err_h{horizon}": pe[-1],
                "ratio_to_sample_h_last": ratio(pe[-1], ro["sample"]["persistence_error_rate"][-1]),
                "token_acc_h1": ro[name]["token_accuracy"][0], f"token_acc_h{horizon}": ro[name]["token_accuracy"][-1],
                "motion/truth": ratio(motion, truth_motion),
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


def main() -> None:
    parser = benchmark_parser(__doc__.splitlines()[0])
    parser.add_argument("--games", nargs="+", default=["breakout", "freeway"])
    parser.add_argument("--wm-steps", type=int, default=None, help="override the world-model step budget")
    parser.add_argument("--ac-updates", type=int, default=None, help="override the imagination updates per agent")
    zero_help = "ITC's official use_zero_neighbor_distance option (no move cost to direct neighbours)"
    parser.add_argument("--zero-neighbor", action="store_true", help=zero_help)
    args = parser.parse_args()
    overrides = {"wm_steps": args.wm_steps, "ac_updates": args.ac_updates}
    size = {
        "train_steps": 3000, "val_steps": 500, "floor_samples": 2, "max_episode_steps": 300, "context": 4,
        "d_model": 48, "layers": 2, "lr": 2e-3, "batch_size": 32, "wm_steps": 250, "val_every": 125,
        "horizon": 6, "rollout_starts": 48, "imagine_horizon": 6, "ac_updates": 10, "ac_batch": 16, "seeds": 3,
        "eval_episodes": 3, "eval_steps": 100,
    } if args.quick else {
        "train_steps": 15000, "val_steps": 2000, "floor_samples": 2, "max_episode_steps": 500, "context": 4,
        "d_model": 64, "layers": 2, "lr": 2e-3, "batch_size": 32, "wm_steps": 1500, "val_every": 250,
        "horizon": 12, "rollout_starts": 128, "imagine_horizon": 10, "ac_updates": 40, "ac_batch": 32, "seeds": 3,
        "eval_episodes": 6, "eval_steps": 300,
    }  # fmt: skip
    for key, value in size.items():
        setattr(args, key, value if overrides.get(key) is None else overrides[key])
    torch.set_num_threads(max(1, torch.get_num_threads()))
    results = {game: run_game(game, args) for game in args.games}
    rows, targets = summarise(results, args.horizon)
    print()
    print(markdown_table(rows))
    for game, res in results.items():
        wm = res["world_model"]
        print(f"\n{game}: world model val loss {wm['val_loss']:.4f} vs noise floor {wm['floor']:.4f} nats/cell "
              f"({wm['steps']:.0f} steps, {wm['train_s']:.0f} s); game total {res['wall_s']:.0f} s")  # fmt: skip
        for name in DECODER_NAMES:
            print(f"  {name:7s} persistence error by horizon: "
                  + " ".join(f"{v:.3f}" for v in res["rollouts"][name]["persistence_error_rate"]))  # fmt: skip
    print_targets(targets)
    write_json(args.json, "itc_minatar", {"results": results, "rows": rows, "targets": targets}, args)


if __name__ == "__main__":
    main()
