"""R4 vs RbRL vs Bradley-Terry reward models from the same rating budget: rank correlation with the true return.

For each environment and seed, one pool of random-policy segments (length 50, actions held for random spans) is
collected; ``--num-ratings`` of them are rated by the simulated teacher into quantile classes of the true
return, and every method trains the same reward ensemble (3 MLPs) for the same number of Adam steps on that
budget. Methods:

* ``r4``: ranking MSE (soft ranks, eps = 1), one segment per class per item.
* ``rbrl``: RbRL's rating cross-entropy (k = 30).
* ``bt_ratings``: Bradley-Terry on every pair of the rated segments with different ratings (same labels).
* ``bt_queries``: Bradley-Terry on ``--num-ratings`` fresh pairwise preference queries labelled by the true
  return (PEBBLE's scripted teacher): the same number of human answers, but each answer compares two segments.

``bt_queries`` is the preference baseline of the paper (PEBBLE-style queries); ``bt_ratings`` is an extra,
stronger use of the rating labels (every cross-class pair of rated segments, about 4,000 pairs for 100 ratings in
5 classes) that the paper does not evaluate.

The score is Kendall's tau and Spearman's rho (scipy) between the learned and the true return on held-out
segments. ``--full`` also runs short SAC policy-learning runs on Pendulum with each reward (and the true reward
as a reference) and reports the true episode return of the final policy (``--policy-only`` skips the offline
part). ``--l2-lambda`` adds the official code's penalty ``lambda * sum ||theta||_2`` to every method's loss
(0 by default; the official online configs use 0.01 for cheetah / walker).

    python benchmarks/r4_reward.py --quick
    python benchmarks/r4_reward.py --seeds 5 --json r4.json
    python benchmarks/r4_reward.py --full --seeds 3
    python benchmarks/r4_reward.py --full --policy-only --envs Pendulum-v1 --seeds 2 --timesteps 8000
"""

from __future__ import annotations

import logging
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch
from scipy.stats import kendalltau, spearmanr

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _common import benchmark_parser, markdown_table, ratio, write_json

from lightning_icml26._optional import is_available
from lightning_icml26.data.rl import RatingDataModule
from lightning_icml26.modules.r4 import R4RewardModel

METHODS = {
    "r4": {"loss": "rmse"},
    "rbrl": {"loss": "rbrl"},
    "bt_ratings": {"loss": "bradley_terry", "preference_source": "ratings"},
    "bt_queries": {"loss": "bradley_terry", "preference_source": "queries"},
}


def _score(model: R4RewardModel, heldout: Any) -> tuple[float, float]:
    model.eval()
    with torch.no_grad():
        pred = model.segment_returns(heldout.obs, heldout.act).mean(0).numpy()
    true = heldout.true_returns.numpy()
    return float(kendalltau(pred, true).statistic), float(spearmanr(pred, true).statistic)


def offline(env_id: str, seeds: list[int], args: Any) -> list[dict[str, Any]]:
    from lightning.pytorch import seed_everything

    from lightning_icml26.data.rl import collect_segments
    from lightning_icml26.tasks import fit_reward_model

    results = []
    for seed in seeds:
        pool = collect_segments(env_id, args.num_heldout + 2 * args.num_ratings, 50, seed=seed)
        for name, spec in METHODS.items():
            seed_everything(seed, verbose=False)
            dm = RatingDataModule(
                pool, loss=spec["loss"], num_classes=args.num_classes, num_ratings=args.num_ratings,
                num_heldout=args.num_heldout, label_noise=args.label_noise, batch_size=64,
                items_per_epoch=64 * 10, preference_source=spec.get("preference_source", "ratings"), seed=seed,
            )  # fmt: skip
            model = R4RewardModel(
                pool.obs.shape[-1], pool.act.shape[-1], loss=spec["loss"], num_classes=args.num_classes,
                ensemble_size=3, hidden=64, depth=2, l2_lambda=args.l2_lambda,
            )  # fmt: skip
            start = time.perf_counter()
            fit_reward_model(model, dm, max_steps=args.steps)
            tau, rho = _score(model, dm.heldout)
            results.append({"env": env_id, "seed": seed, "method": name, "kendall_tau": tau, "spearman": rho,
                            "fit_s": time.perf_counter() - start})  # fmt: skip
            print(f"  {env_id} seed={seed} {name:10s} tau={tau:.3f} rho={rho:.3f}", flush=True)
    return results


def summarise(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    rows = []
    for env in dict.fromkeys(r["env"] for r in results):
        per = {m: [r for r in results if r["env"] == env and r["method"] == m] for m in METHODS}
        r4_tau = np.array([r["kendall_tau"] for r in per["r4"]])
        r4_rho = np.array([r["spearman"] for r in per["r4"]])
        for method, runs in per.items():
            tau = np.array([r["kendall_tau"] for r in runs])
            rho = np.array([r["spearman"] for r in runs])
            rows.append({
                "env": env, "method": method, "seeds": len(runs),
                "kendall_tau": float(tau.mean()), "tau_std": float(tau.std()),
                "spearman": float(rho.mean()), "rho_std": float(rho.std()),
                "r4/method tau": ratio(float(r4_tau.mean()), float(tau.mean())),
                "r4-method tau": float(r4_tau.mean() - tau.mean()),
                "r4-method rho": float(r4_rho.mean() - rho.mean()),
                "r4 wins tau (seeds)": f"{int((r4_tau >= tau).sum())}/{len(runs)}",
            })  # fmt: skip
    return rows


def policy_runs(seeds: list[int], args: Any) -> list[dict[str, Any]]:
    from lightning_icml26.tasks import run_online

    rows = []
    for loss in args.policy_rewards:
        figures = []
        for seed in seeds:
            start = time.perf_counter()
            out = run_online(
                "Pendulum-v1", loss=loss, num_classes=args.num_classes, num_ratings=args.num_ratings,
                query_schedule=tuple(range(0, args.timesteps // 2, args.timesteps // 10)),
                total_timesteps=args.timesteps, reward_steps=args.steps // 2, learning_starts=500, eval_episodes=5,
                num_heldout=100, seed=seed,
            )  # fmt: skip
            out["wall_s"] = time.perf_counter() - start
            print(f"  policy {loss:14s} seed={seed} true return {out['true_return_mean']:.1f}", flush=True)
            figures.append(out)
        ret = np.array([f["true_return_mean"] for f in figures])
        rows.append({"env": "Pendulum-v1", "reward": loss, "seeds": len(figures), "true_return": float(ret.mean()),
                     "return_std": float(ret.std()), "timesteps": args.timesteps,
                     "wall_s": float(np.mean([f["wall_s"] for f in figures]))})  # fmt: skip
    return rows


def main() -> None:
    parser = benchmark_parser(__doc__.splitlines()[0])
    parser.add_argument("--full", action="store_true", help="also run short SAC policy-learning runs")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=1000, help="Adam steps per reward model")
    parser.add_argument("--num-ratings", type=int, default=100)
    parser.add_argument("--num-classes", type=int, default=5)
    parser.add_argument("--num-heldout", type=int, default=500)
    parser.add_argument("--label-noise", type=float, default=0.0)
    parser.add_argument("--timesteps", type=int, default=8000, help="SAC steps per policy run (--full)")
    parser.add_argument("--envs", nargs="*", default=None)
    parser.add_argument("--l2-lambda", type=float, default=0.0, help="official L2 penalty weight (every method)")
    parser.add_argument("--policy-only", action="store_true", help="with --full: skip the offline comparison")
    parser.add_argument(
        "--policy-rewards",
        nargs="+",
        default=["rmse", "rbrl", "bradley_terry", "true_reward"],
        choices=["rmse", "rbrl", "bradley_terry", "true_reward"],
        help="with --full: the rewards to learn policies from",
    )
    args = parser.parse_args()
    torch.set_num_threads(1)
    logging.getLogger("lightning.pytorch").setLevel(logging.WARNING)
    envs = args.envs or ["Pendulum-v1"] + (["HalfCheetah-v5"] if is_available("mujoco") else [])
    if args.quick:
        envs, args.seeds, args.steps, args.num_heldout = envs[:1], 2, 200, 200
    seeds = [args.seed + i for i in range(args.seeds)]
    if args.policy_only and not args.full:
        parser.error("--policy-only needs --full")
    results = []
    for env_id in [] if args.policy_only else envs:
        results += offline(env_id, seeds, args)
    rows = summarise(results)
    figures: dict[str, Any] = {"alignment": rows, "runs": results}
    if rows:
        title = f"{args.num_ratings} ratings, {args.num_classes} classes, label noise {args.label_noise}"
        print(f"\n## Reward alignment: {title}, {args.steps} Adam steps, held-out {args.num_heldout} segments\n")
        print(markdown_table(rows))
    if args.full:
        policy = policy_runs(seeds[: min(len(seeds), 3)], args)
        print("\n## Short SAC runs on Pendulum-v1 with each learned reward (true episode return of the final policy)\n")
        print(markdown_table(policy))
        figures["policy"] = policy
    for env in [] if args.policy_only else envs:
        env_rows = {r["method"]: r for r in rows if r["env"] == env}
        r4 = env_rows["r4"]
        verdict = all(r4["kendall_tau"] >= r["kendall_tau"] and r4["spearman"] >= r["spearman"]
                      for r in env_rows.values())  # fmt: skip
        print(f"\n{env}: R4 >= every baseline on both tau and rho: {verdict}")
    write_json(args.json, "r4_reward", figures, args)


if __name__ == "__main__":
    main()
