"""R4 against the paper's baselines (RbRL, preference queries) at equal human effort: rank alignment of the reward.

The offline alignment test of the official code, as a grid: rating budgets ``--budgets`` (25 / 50 / 100 answers)
x teacher label noise ``--noises`` (0 / 10 %) x ``--seeds`` seeds (5). For each seed, one pool of random-policy
segments (length 50, actions held for random spans) is collected once; its held-out part (``--num-heldout``
segments, the same for every budget and method) scores every reward by Kendall's tau and Spearman's rho (scipy)
between learned and true returns. Every method trains the same reward ensemble (3 MLPs, 64 wide, 2 layers) for the
same number of Adam steps (``--steps``, lr 3e-4, 64 items per batch). Methods:

* ``r4``: ranking MSE with the paper's permutahedron soft ranks (eps = 1), one segment per class per item.
* ``r4_ot``: the official optimal-transport soft-rank variant (eps = 0.1, standardised returns).
* ``r4_ood``: ``r4`` plus the official out-of-distribution regulariser (coefficient 0.1, 1024 uniform draws per
  step from the environment's declared state-action box).
* ``rbrl``: RbRL's rating cross-entropy (k = 30), the paper's rating baseline.
* ``bt_queries``: Bradley-Terry on as many fresh pairwise preference queries as there are ratings (PEBBLE's
  scripted teacher), the paper's preference baseline: the same number of human answers.
* ``bt_ratings``: an ablation the paper does not run: Bradley-Terry on every pair of rated segments with
  different ratings (about 4,000 pairs from 100 ratings in 5 classes); reported apart, not a target.

``r4``, ``rbrl`` and ``bt_queries`` run in every cell; the two R4 variants and the ablation at the largest
budget only (both noise levels), which keeps the full grid within about half an hour of two CPU cores.

Label noise: a wrong rating is a uniformly drawn different class; a wrong preference is the flipped answer.
Target (the paper's claim in miniature): R4's mean tau at least that of each paper baseline in every
(budget, noise) cell. ``--full`` adds short SAC runs on Pendulum with each learned reward and the true reward
(true episode return of the final policy, 3 seeds). HalfCheetah joins the offline grid when MuJoCo is installed
(the ``mujoco`` extra); ``--full --policy-only --envs HalfCheetah-v5`` runs the policy part there (short SAC
runs, far from convergence on a CPU). Every policy run also scores a uniformly random policy for scale, and
with ``--json`` the file is rewritten after each finished run.

    python -m benchmarks.r4_reward --quick
    python -m benchmarks.r4_reward --json benchmarks/results/r4_reward.json
    python -m benchmarks.r4_reward --full --policy-only --seeds 3
    python -m benchmarks.r4_reward --full --policy-only --seeds 3 --envs HalfCheetah-v5 --timesteps 6000 \
        --policy-rewards rmse true_reward --json benchmarks/results/r4_policy_halfcheetah.json
"""

from __future__ import annotations

import itertools
import logging
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from lightning.pytorch import seed_everything
from scipy.stats import kendalltau, spearmanr

from benchmarks._common import benchmark_parser, markdown_table, print_targets, target, worst, write_json
from lightning_icml26.data.rl import RatingDataModule, Segments, collect_segments, state_action_box
from lightning_icml26.modules.r4 import R4RewardModel
from lightning_icml26.optional import is_available, require
from lightning_icml26.tasks import R4OnlineConfig, fit_reward_model, run_online

METHODS: dict[str, dict[str, Any]] = {
    "r4": {"loss": "rmse"},
    "r4_ot": {"loss": "rmse", "soft_rank": "ot"},
    "r4_ood": {"loss": "rmse", "ood_coeff": 0.1},
    "rbrl": {"loss": "rbrl"},
    "bt_queries": {"loss": "bradley_terry", "preference_source": "queries"},
    "bt_ratings": {"loss": "bradley_terry", "preference_source": "ratings"},
}
PAPER_BASELINES = ("rbrl", "bt_queries")
ABLATIONS = ("bt_ratings",)
CORE = ("r4", *PAPER_BASELINES)


def _score(model: R4RewardModel, heldout: Segments) -> tuple[float, float]:
    model.eval()
    with torch.no_grad():
        pred = model.segment_returns(heldout.obs, heldout.act).mean(0).numpy()
    true = heldout.true_returns.numpy()
    return float(kendalltau(pred, true).statistic), float(spearmanr(pred, true).statistic)


def _fit(pool: Segments, method: str, budget: int, noise: float, seed: int, box: Any, args: Any) -> tuple[float, float]:
    spec = METHODS[method]
    seed_everything(seed, verbose=False)
    dm = RatingDataModule(
        pool, loss=spec["loss"], num_classes=args.num_classes, num_ratings=budget, num_heldout=args.num_heldout,
        label_noise=noise, batch_size=64, items_per_epoch=64 * 10,
        preference_source=spec.get("preference_source", "ratings"), seed=seed,
    )  # fmt: skip
    ood = {"ood_coeff": spec["ood_coeff"], "ood_low": box[0], "ood_high": box[1]} if "ood_coeff" in spec else {}
    model = R4RewardModel(
        pool.obs.shape[-1], pool.act.shape[-1], loss=spec["loss"], num_classes=args.num_classes, ensemble_size=3,
        hidden=64, depth=2, soft_rank=spec.get("soft_rank", "pav"), **ood,
    )  # fmt: skip
    fit_reward_model(model, dm, max_steps=args.steps)
    assert dm.heldout is not None
    return _score(model, dm.heldout)


def offline(env_id: str, seeds: list[int], args: Any) -> list[dict[str, Any]]:
    """Every (seed, budget, noise, method) fit on one pool per seed; one row per fit."""
    box = state_action_box(env_id)
    results = []
    for seed in seeds:
        pool = collect_segments(env_id, args.num_heldout + 2 * max(args.budgets), 50, seed=seed)
        for budget, noise in itertools.product(args.budgets, args.noises):
            # the variants and the ablation run at the largest budget only (they are not part of the targets)
            methods = [m for m in args.methods if m in CORE or budget == max(args.budgets)]
            for method in methods:
                start = time.perf_counter()
                tau, rho = _fit(pool, method, budget, noise, seed, box, args)
                results.append({"env": env_id, "seed": seed, "budget": budget, "noise": noise, "method": method,
                                "kendall_tau": tau, "spearman": rho, "fit_s": time.perf_counter() - start})  # fmt: skip
                print(f"  {env_id} seed={seed} budget={budget} noise={noise} {method:10s} tau={tau:.3f} rho={rho:.3f} "
                      f"({results[-1]['fit_s']:.0f} s)", flush=True)  # fmt: skip
    return results


def summarise(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Mean, standard deviation and standard error over seeds per (env, budget, noise, method), with R4's margin."""
    rows = []
    cells = dict.fromkeys((r["env"], r["budget"], r["noise"]) for r in results)
    for env, budget, noise in cells:
        per = {m: [r for r in results if (r["env"], r["budget"], r["noise"], r["method"]) == (env, budget, noise, m)]
               for m in METHODS}  # fmt: skip
        r4_tau = np.array([r["kendall_tau"] for r in per["r4"]]) if per["r4"] else np.array([np.nan])
        for method, runs in per.items():
            if not runs:
                continue
            tau = np.array([r["kendall_tau"] for r in runs])
            rho = np.array([r["spearman"] for r in runs])
            paired = r4_tau - tau if len(r4_tau) == len(tau) else np.array([np.nan])
            rows.append({
                "env": env, "budget": budget, "noise": noise, "method": method, "seeds": len(runs),
                "kendall_tau": float(tau.mean()), "tau_std": float(tau.std(ddof=1)) if len(tau) > 1 else 0.0,
                "tau_sem": float(tau.std(ddof=1) / np.sqrt(len(tau))) if len(tau) > 1 else 0.0,
                "spearman": float(rho.mean()),
                "r4-method tau": float(paired.mean()),
                "paired sem": float(paired.std(ddof=1) / np.sqrt(len(paired))) if len(paired) > 1 else 0.0,
                "r4 wins (seeds)": "—" if method == "r4" else f"{int((paired >= 0).sum())}/{len(paired)}",
                "role": "paper baseline" if method in PAPER_BASELINES else "ablation" if method in ABLATIONS else "R4",
            })  # fmt: skip
    return rows


def random_returns(env_id: str, episodes: int, seed: int) -> list[float]:
    """True episode returns of a uniformly random policy, on the evaluation resets of ``run_online`` (for scale)."""
    gym = require("gymnasium", "rl", "random-policy returns")
    env = gym.make(env_id)
    env.action_space.seed(seed)
    returns = []
    for episode in range(episodes):
        env.reset(seed=10_000 + seed * 1000 + episode)  # the reset seeds of run_online's final evaluation
        done, total = False, 0.0
        while not done:
            _, reward, terminated, truncated, _ = env.step(env.action_space.sample())
            total += float(reward)
            done = bool(terminated or truncated)
        returns.append(total)
    env.close()
    return returns


def summarise_policy(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Mean and standard deviation over seeds of the final policy's true return, per (env, reward)."""
    rows = []
    for env_id, reward in dict.fromkeys((r["env"], r["reward"]) for r in runs):
        mine = [r for r in runs if (r["env"], r["reward"]) == (env_id, reward)]
        ret = np.array([r["true_return_mean"] for r in mine])
        rows.append({"env": env_id, "reward": reward, "seeds": len(mine), "true_return": float(ret.mean()),
                     "return_std": float(ret.std(ddof=1)) if len(ret) > 1 else 0.0,
                     "per_seed": " / ".join(f"{v:.1f}" for v in ret), "timesteps": mine[0]["timesteps"],
                     "wall_s": float(np.mean([r["wall_s"] for r in mine]))})  # fmt: skip
    return rows


def policy_runs(
    envs: list[str], seeds: list[int], args: Any, on_run: Callable[[list[dict[str, Any]]], None] | None = None
) -> list[dict[str, Any]]:
    """Short SAC runs with each learned reward (refitted online) and the true reward; true returns of the policy.

    Per environment and seed, every reward of ``--policy-rewards`` runs in turn (seed-major, so a run stopped
    early keeps whole seeds), then a uniformly random policy is scored on the same evaluation resets for scale.
    The query schedule scales with ``--timesteps``: ``--queries`` queries spread over the first half of learning
    (0, T/10, ..., 4T/10 by default); SAC's random warm-up is T/16 steps unless ``--learning-starts`` is given.
    ``on_run`` receives the list of finished runs after each one (to write partial results).
    """
    runs: list[dict[str, Any]] = []
    learning_starts = args.learning_starts if args.learning_starts is not None else args.timesteps // 16
    schedule = tuple(range(0, args.timesteps // 2, args.timesteps // (2 * args.queries)))[: args.queries]
    for env_id in envs:
        for seed in seeds:
            for loss in args.policy_rewards:
                start = time.perf_counter()
                out = run_online(R4OnlineConfig(
                    env_id, loss=loss, num_classes=args.num_classes, num_ratings=max(args.budgets),
                    query_schedule=schedule, total_timesteps=args.timesteps, reward_steps=args.steps // 2,
                    learning_starts=learning_starts, eval_episodes=args.eval_episodes, num_heldout=100, seed=seed,
                ))  # fmt: skip
                out.update(env=env_id, reward=loss, wall_s=time.perf_counter() - start, query_schedule=list(schedule),
                           learning_starts=learning_starts)  # fmt: skip
                runs.append(out)
                print(f"  policy {env_id} {loss:14s} seed={seed} true return {out['true_return_mean']:.1f} "
                      f"({out['wall_s']:.0f} s)", flush=True)  # fmt: skip
                if on_run is not None:
                    on_run(runs)
            start = time.perf_counter()
            returns = random_returns(env_id, args.eval_episodes, seed)
            runs.append({"env": env_id, "reward": "random_policy", "seed": seed, "timesteps": 0,
                         "true_return_mean": float(np.mean(returns)), "true_return_std": float(np.std(returns)),
                         "wall_s": time.perf_counter() - start})  # fmt: skip
            if on_run is not None:
                on_run(runs)
    return runs


def build_targets(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """R4 at least each paper baseline (RbRL, preference queries) in every cell: the smallest mean-tau margin.

    One target per noise level, each the minimum over environments and budgets of ``tau(r4) - tau(baseline)``
    (means over seeds). Bradley-Terry on every pair of rated segments is an ablation and is left out.
    """
    targets = {}
    for noise_name, noise in (("clean", 0.0), ("noisy", 0.1)):
        margins = [r["r4-method tau"] for r in rows if r["method"] in PAPER_BASELINES and r["noise"] == noise]
        targets[f"r4_minus_paper_baselines_tau_min_{noise_name}"] = target(worst(margins, "min"), ">=", 0.0)
    return targets


def main() -> None:
    parser = benchmark_parser(__doc__.splitlines()[0])
    parser.add_argument("--full", action="store_true", help="also run short SAC policy-learning runs on Pendulum")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=500, help="Adam steps per reward model")
    parser.add_argument("--budgets", type=int, nargs="+", default=[25, 50, 100], help="rating budgets (answers)")
    parser.add_argument("--noises", type=float, nargs="+", default=[0.0, 0.1], help="teacher label-noise levels")
    parser.add_argument("--methods", nargs="+", default=list(METHODS), choices=list(METHODS))
    parser.add_argument("--num-classes", type=int, default=5)
    parser.add_argument("--num-heldout", type=int, default=500)
    parser.add_argument("--timesteps", type=int, default=8000, help="SAC steps per policy run (--full)")
    parser.add_argument("--queries", type=int, default=5, help="rating queries per policy run (--full)")
    parser.add_argument("--learning-starts", type=int, default=None, help="SAC warm-up steps (default timesteps/16)")
    parser.add_argument("--eval-episodes", type=int, default=5, help="true-return episodes of the final policy")
    parser.add_argument(
        "--envs", nargs="*", default=None, help="environments (default: Pendulum, plus HalfCheetah offline if MuJoCo)"
    )
    parser.add_argument("--policy-only", action="store_true", help="with --full: skip the offline grid")
    parser.add_argument(
        "--policy-rewards",
        nargs="+",
        default=["rmse", "rbrl", "bradley_terry", "true_reward"],
        choices=["rmse", "rbrl", "bradley_terry", "true_reward"],
        help="with --full: the rewards to learn policies from",
    )
    args = parser.parse_args()
    if args.policy_only and not args.full:
        parser.error("--policy-only needs --full")
    if args.queries < 1 or args.timesteps < 2 * args.queries:
        parser.error(f"--queries must be >= 1 and at most timesteps/2, got {args.queries} with {args.timesteps}")
    for name in CORE:
        if name not in args.methods:
            parser.error(f"--methods must include {name!r}: the targets compare R4 with the paper's baselines")
    torch.set_num_threads(1)
    logging.getLogger("lightning.pytorch").setLevel(logging.WARNING)
    envs = args.envs or ["Pendulum-v1"] + (["HalfCheetah-v5"] if is_available("mujoco") else [])
    if args.quick:
        envs, args.seeds, args.steps, args.num_heldout = envs[:1], 2, 200, 200
        args.budgets, args.methods = [25, 100], list(CORE)
    seeds = [args.seed + i for i in range(args.seeds)]
    results = []
    for env_id in [] if args.policy_only else envs:
        results += offline(env_id, seeds, args)
    rows = summarise(results)
    figures: dict[str, Any] = {"alignment": rows, "runs": results}
    if rows:
        print(f"\n## Reward alignment with the true return ({args.steps} Adam steps, {args.num_classes} classes, "
              f"{args.num_heldout} held-out segments, {len(seeds)} seeds; mean, std and sem over seeds)\n")  # fmt: skip
        columns = ["env", "budget", "noise", "method", "role", "kendall_tau", "tau_std", "tau_sem", "spearman",
                   "r4-method tau", "paired sem", "r4 wins (seeds)"]  # fmt: skip
        print(markdown_table(rows, columns))
    figures["targets"] = build_targets(rows)  # unmeasured (nan, not met) with --policy-only
    if args.full:

        def save(runs: list[dict[str, Any]]) -> None:  # after every finished run: a stopped job keeps its runs
            figures.update(policy=summarise_policy(runs), policy_runs=runs)
            write_json(args.json, "r4_reward", figures, args)

        policy_envs = args.envs or ["Pendulum-v1"]
        runs = policy_runs(policy_envs, seeds[: min(len(seeds), 3)], args, on_run=save)
        print("\n## Short SAC runs with each learned reward (true episode return of the final policy)\n")
        print(markdown_table(summarise_policy(runs)))
        figures.update(policy=summarise_policy(runs), policy_runs=runs)
    print_targets(figures["targets"])
    write_json(args.json, "r4_reward", figures, args)


if __name__ == "__main__":
    main()
