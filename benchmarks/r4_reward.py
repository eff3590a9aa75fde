"""R4 against the paper's baselines (RbRL, preference queries) at equal human effort: rank alignment of the reward.

The offline alignment grid of ``lightning_icml26.tasks.r4_alignment_task``: rating budgets ``--budgets`` (25 / 50 /
100 answers) x teacher label noise ``--noises`` (0 / 10 %) x ``--seeds`` seeds (5), one random-policy segment pool
per seed whose held-out part (``--num-heldout``) scores every reward by Kendall's tau and Spearman's rho. Every
method trains the same reward ensemble for ``--steps`` Adam steps: ``r4`` (permutahedron soft ranks), ``r4_ot``
(optimal-transport soft ranks), ``r4_ood`` (out-of-distribution regulariser), ``rbrl`` (RbRL, k = 30),
``bt_queries`` (Bradley-Terry on as many preference queries as ratings) and the ablation ``bt_ratings``
(Bradley-Terry on every pair of rated segments; not a target). ``r4``, ``rbrl`` and ``bt_queries`` run in every
cell, the others at the largest budget only. Target: R4's mean tau at least each paper baseline's in every cell.
``--full`` adds short SAC runs (``run_online``) with each learned reward and the true reward (3 seeds), plus a
uniformly random policy for scale; HalfCheetah joins when MuJoCo is installed. With ``--json`` the file is
rewritten after each finished policy run.

    python -m benchmarks.r4_reward --quick
    python -m benchmarks.r4_reward --json benchmarks/results/r4_reward.json
    python -m benchmarks.r4_reward --full --policy-only --seeds 3
    python -m benchmarks.r4_reward --full --policy-only --seeds 3 --envs HalfCheetah-v5 --timesteps 6000 \
        --policy-rewards rmse true_reward --json benchmarks/results/r4_policy_halfcheetah.json
"""

from __future__ import annotations

import logging
import time
from dataclasses import replace
from typing import Any

import numpy as np
import torch

from benchmarks._common import benchmark_parser, markdown_table, print_targets, target, worst, write_json
from lightning_icml26.optional import is_available
from lightning_icml26.tasks import (
    R4_ALIGNMENT_METHODS,
    R4_CORE_METHODS,
    R4_PAPER_BASELINES,
    R4AlignmentConfig,
    R4OnlineConfig,
    random_policy_returns,
    run_online,
    summarise_alignment,
    summarise_policy,
)

REWARDS = ["rmse", "rbrl", "bradley_terry", "true_reward"]
COLUMNS = ["env", "budget", "noise", "method", "role", "kendall_tau", "tau_std", "tau_sem", "spearman",
           "r4-method tau", "paired sem", "r4 wins (seeds)"]  # fmt: skip


def policy_runs(envs: list[str], seeds: list[int], args: Any, save: Any = lambda runs: None) -> list[dict[str, Any]]:
    """Seed-major SAC runs per reward of ``--policy-rewards``, then a random policy; ``save(runs)`` after each."""
    runs: list[dict[str, Any]] = []
    starts = args.learning_starts if args.learning_starts is not None else args.timesteps // 16
    schedule = tuple(range(0, args.timesteps // 2, args.timesteps // (2 * args.queries)))[: args.queries]
    for env_id in envs:
        for seed in seeds:
            for loss in args.policy_rewards:
                start = time.perf_counter()
                out = run_online(R4OnlineConfig(
                    env_id, loss=loss, num_classes=args.num_classes, num_ratings=max(args.budgets),
                    query_schedule=schedule, total_timesteps=args.timesteps, reward_steps=args.steps // 2,
                    learning_starts=starts, eval_episodes=args.eval_episodes, num_heldout=100, seed=seed,
                ))  # fmt: skip
                out.update(env=env_id, reward=loss, wall_s=time.perf_counter() - start, query_schedule=list(schedule),
                           learning_starts=starts)  # fmt: skip
                runs.append(out)
                print(f"  policy {env_id} {loss:14s} seed={seed} true return {out['true_return_mean']:.1f}", flush=True)
                save(runs)
            start = time.perf_counter()
            returns = random_policy_returns(env_id, args.eval_episodes, seed)
            runs.append({"env": env_id, "reward": "random_policy", "seed": seed, "timesteps": 0,
                         "true_return_mean": float(np.mean(returns)), "true_return_std": float(np.std(returns)),
                         "wall_s": time.perf_counter() - start})  # fmt: skip
            save(runs)
    return runs


def build_targets(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per noise level, the smallest mean-tau margin of R4 over a paper baseline (over envs and budgets)."""
    targets = {}
    for noise_name, noise in (("clean", 0.0), ("noisy", 0.1)):
        margins = [r["r4-method tau"] for r in rows if r["method"] in R4_PAPER_BASELINES and r["noise"] == noise]
        targets[f"r4_minus_paper_baselines_tau_min_{noise_name}"] = target(worst(margins, "min"), ">=", 0.0)
    return targets


def main() -> None:
    parser = benchmark_parser(__doc__.splitlines()[0])
    add = parser.add_argument
    add("--full", action="store_true", help="also run short SAC policy-learning runs on Pendulum")
    add("--seeds", type=int, default=5)
    add("--steps", type=int, default=500, help="Adam steps per reward model")
    add("--budgets", type=int, nargs="+", default=[25, 50, 100], help="rating budgets (answers)")
    add("--noises", type=float, nargs="+", default=[0.0, 0.1], help="teacher label-noise levels")
    add("--methods", nargs="+", default=list(R4_ALIGNMENT_METHODS), choices=list(R4_ALIGNMENT_METHODS))
    add("--num-classes", type=int, default=5)
    add("--num-heldout", type=int, default=500)
    add("--timesteps", type=int, default=8000, help="SAC steps per policy run (--full)")
    add("--queries", type=int, default=5, help="rating queries per policy run (--full)")
    add("--learning-starts", type=int, default=None, help="SAC warm-up steps (default timesteps/16)")
    add("--eval-episodes", type=int, default=5, help="true-return episodes of the final policy")
    add("--envs", nargs="*", default=None, help="environments (default: Pendulum, plus HalfCheetah if MuJoCo)")
    add("--policy-only", action="store_true", help="with --full: skip the offline grid")
    add("--policy-rewards", nargs="+", default=REWARDS, choices=REWARDS, help="with --full: rewards to learn from")
    args = parser.parse_args()
    if args.policy_only and not args.full:
        parser.error("--policy-only needs --full")
    if args.queries < 1 or args.timesteps < 2 * args.queries:
        parser.error(f"--queries must be >= 1 and at most timesteps/2, got {args.queries} with {args.timesteps}")
    if missing := [m for m in R4_CORE_METHODS if m not in args.methods]:
        parser.error(f"--methods must include {missing}: the targets compare R4 with the paper's baselines")
    torch.set_num_threads(1)
    logging.getLogger("lightning.pytorch").setLevel(logging.WARNING)
    envs = args.envs or ["Pendulum-v1"] + (["HalfCheetah-v5"] if is_available("mujoco") else [])
    if args.quick:
        envs, args.seeds, args.steps, args.num_heldout = envs[:1], 2, 200, 200
        args.budgets, args.methods = [25, 100], list(R4_CORE_METHODS)
    seeds = [args.seed + i for i in range(args.seeds)]
    grid = R4AlignmentConfig(seeds=tuple(seeds), steps=args.steps, budgets=tuple(args.budgets),
                             noises=tuple(args.noises), methods=tuple(args.methods), num_classes=args.num_classes,
                             num_heldout=args.num_heldout)  # fmt: skip
    results = [r for env in ([] if args.policy_only else envs) for r in replace(grid, env_id=env).run()["runs"]]
    rows = summarise_alignment(results)
    figures: dict[str, Any] = {"alignment": rows, "runs": results}
    if rows:
        print(f"\n## Reward alignment with the true return ({args.steps} Adam steps, {args.num_classes} classes, "
              f"{args.num_heldout} held-out segments, {len(seeds)} seeds; mean, std and sem over seeds)\n")  # fmt: skip
        print(markdown_table(rows, COLUMNS))
    figures["targets"] = build_targets(rows)  # unmeasured (nan, not met) with --policy-only
    if args.full:

        def save(runs: list[dict[str, Any]]) -> None:  # after every finished run: a stopped job keeps its runs
            figures.update(policy=summarise_policy(runs), policy_runs=runs)
            write_json(args.json, "r4_reward", figures, args)

        runs = policy_runs(args.envs or ["Pendulum-v1"], seeds[: min(len(seeds), 3)], args, save)
        print("\n## Short SAC runs with each learned reward (true episode return of the final policy)\n")
        print(markdown_table(summarise_policy(runs)))
    print_targets(figures["targets"])
    write_json(args.json, "r4_reward", figures, args)


if __name__ == "__main__":
    main()
