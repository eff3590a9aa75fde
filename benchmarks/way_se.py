"""Matching bandits without a global clock: Way-SE-inspired policies against the published baselines.

Markets (one per N, K = N, minimum gap 0.2, Gaussian rewards with standard deviation 0.2, ``--seeds`` markets):
every one-sided policy (Way-SE, centralised ETC-GS and UCB-GS, CA-UCB, ETGS) runs on the same markets, static and
with staggered arrivals over the first quarter of the horizon; Way-SE-2S runs on two-sided markets with staggered
arrivals and departures of half the players, at three horizons, for its log-log slope. Targets (the regret orders
of the abstract; no numbers are public): ``wayse_log_growth_N*`` (static regret / log T at the largest horizon over
the same at 1/100 of it) <= 1.2; ``wayse_over_etcgs_N*`` (static regret over centralised ETC-GS, ours) <= 3;
``wayse_over_etgs_staggered_N*`` (a global clock breaks under staggered arrivals) <= 0.2;
``wayse2s_slope_N*`` (the paper's T^((K-1)/K)) <= (K - 1)/K + 0.05.

    python -m benchmarks.way_se --quick --json outputs/way_se_quick.json     # T = 10^4
    python -m benchmarks.way_se --json outputs/way_se.json                   # T = 10^6, 10 seeds, 2 workers
"""

from __future__ import annotations

import math
import time
from concurrent.futures import ProcessPoolExecutor
from typing import Any

import numpy as np

from benchmarks._common import benchmark_parser, markdown_table, print_targets, ratio, target, write_json
from lightning_icml26.algorithms.matching import POLICIES, MatchingMarketEnv, market_schedule, run_market

GAP, NOISE_STD = 0.2, 0.2
ONE_SIDED = ("wayse", "etc_gs", "ucb_gs", "ca_ucb", "etgs")


def one_sided_job(n_players: int, policy: str, horizon: int, seeds: int, seed: int) -> dict[str, Any]:
    """One policy on ``seeds`` static and ``seeds`` staggered one-sided markets (same utilities per seed)."""
    rng = np.random.default_rng(seed + 1000 * n_players)
    static, _ = market_schedule("static", horizon, n_players, seeds, rng)
    staggered, _ = market_schedule("staggered", horizon, n_players, seeds, rng)
    env = MatchingMarketEnv(
        n_players, n_players, horizon, gap=GAP, noise_std=NOISE_STD, n_runs=2 * seeds, seed=seed + n_players,
        arrival_times=np.concatenate([static, staggered]),
    )  # fmt: skip
    start = time.perf_counter()
    run = run_market(env, POLICIES[policy](seed=seed))
    return {"n": n_players, "policy": policy, "seconds": time.perf_counter() - start, "checkpoints": run.checkpoints,
            "curve": run.regret_curve,  # (2 seeds, C): static runs first
            "collision_rate": run.collisions[:, -1] / np.maximum(run.proposals[:, -1], 1),
            "unstable_fraction": run.unstable_steps[:, -1] / horizon}  # fmt: skip


def two_sided_job(n_players: int, horizon: int, seeds: int, seed: int) -> dict[str, Any]:
    """Way-SE-2S on two-sided markets with staggered arrivals and departures."""
    env = MatchingMarketEnv(
        n_players, n_players, horizon, gap=GAP, noise_std=NOISE_STD, two_sided=True, arrivals="staggered",
        departures=True, n_runs=seeds, seed=seed + 7 * n_players,
    )  # fmt: skip
    start = time.perf_counter()
    run = run_market(env, POLICIES["wayse2s"](seed=seed))
    total = run.regret.sum(axis=1)
    return {"n": n_players, "horizon": horizon, "seconds": time.perf_counter() - start, "regret": total}


def _at(job: dict[str, Any], step: int, half: int, seeds: int) -> np.ndarray:
    column = int(np.searchsorted(job["checkpoints"], step))
    return job["curve"][half * seeds : (half + 1) * seeds, column]


def slope(horizons: list[int], regrets: list[float]) -> float:
    """Least-squares slope of log regret against log T (``nan`` unless every regret is positive)."""
    return float(np.polyfit(np.log(horizons), np.log(regrets), 1)[0]) if min(regrets) > 0 else float("nan")


def build_targets(summary: dict[str, dict[str, float]]) -> dict[str, dict[str, Any]]:
    """``summary[N]`` holds ``log_growth``, ``over_etcgs``, ``over_etgs_staggered``, ``slope_2s`` and ``k``."""
    targets: dict[str, dict[str, Any]] = {}
    for n, row in summary.items():
        k = row["k"]
        targets[f"wayse_log_growth_N{n}"] = target(row["log_growth"], "<=", 1.2)
        targets[f"wayse_over_etcgs_N{n}"] = target(row["over_etcgs"], "<=", 3.0)
        targets[f"wayse_over_etgs_staggered_N{n}"] = target(row["over_etgs_staggered"], "<=", 0.2)
        bound = min((k - 1) / k + 0.05, 0.999)
        targets[f"wayse2s_slope_N{n}"] = target(row["slope_2s"], "<=", round(bound, 4))
    return targets


def main(argv: list[str] | None = None) -> None:
    parser = benchmark_parser(__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--players", type=int, nargs="+", default=[3, 5, 10])
    args = parser.parse_args(argv)
    horizon, seeds = (10_000, 4) if args.quick else (1_000_000, args.seeds)
    horizons = [horizon // 100, horizon // 10, horizon]
    with ProcessPoolExecutor(max_workers=args.workers) as pool:
        first = {
            (n, p): pool.submit(one_sided_job, n, p, horizon, seeds, args.seed) for n in args.players for p in ONE_SIDED
        }
        second = {(n, h): pool.submit(two_sided_job, n, h, seeds, args.seed) for n in args.players for h in horizons}
        one_sided = {key: future.result() for key, future in first.items()}
        two_sided = {key: future.result() for key, future in second.items()}
    rows, summary, log = [], {}, math.log
    for n in args.players:
        etc = _at(one_sided[(n, "etc_gs")], horizon, 0, seeds).mean()
        etgs = _at(one_sided[(n, "etgs")], horizon, 1, seeds).mean()
        for policy in ONE_SIDED:
            job = one_sided[(n, policy)]
            for half, arrivals in ((0, "static"), (1, "staggered")):
                final = _at(job, horizon, half, seeds)
                rows.append({
                    "N=K": n, "policy": POLICIES[policy].name, "arrivals": arrivals, "T": horizon,
                    "regret": final.mean(), "+-": final.std(ddof=1), "regret/logT": final.mean() / log(horizon),
                    "collision rate": job["collision_rate"][half * seeds : (half + 1) * seeds].mean(),
                    "unstable steps": job["unstable_fraction"][half * seeds : (half + 1) * seeds].mean(),
                    "x ETC-GS": ratio(final.mean(), etc) if arrivals == "static" else float("nan"),
                    "x ETGS": ratio(final.mean(), etgs) if arrivals == "staggered" else float("nan"),
                    "s": job["seconds"],
                })  # fmt: skip
        way = one_sided[(n, "wayse")]
        early, late = _at(way, horizons[0], 0, seeds).mean(), _at(way, horizon, 0, seeds).mean()
        means_2s = [float(two_sided[(n, h)]["regret"].mean()) for h in horizons]
        summary[n] = {
            "k": n,
            "log_growth": ratio(late / log(horizon), early / log(horizons[0])),
            "over_etcgs": ratio(late, etc),
            "over_etgs_staggered": ratio(_at(way, horizon, 1, seeds).mean(), etgs),
            "slope_2s": slope(horizons, means_2s),
            "wayse2s_regret": dict(zip(map(str, horizons), means_2s, strict=True)),
            "wayse2s_regret_std": {str(h): float(two_sided[(n, h)]["regret"].std(ddof=1)) for h in horizons},
        }
    print(markdown_table(rows))
    print("\nWay-SE-2S (two-sided, staggered arrivals and departures):")
    print(markdown_table([{"N=K": n, **{f"regret T={h}": s["wayse2s_regret"][str(h)] for h in horizons},
                           "slope": s["slope_2s"], "(K-1)/K": (n - 1) / n} for n, s in summary.items()]))  # fmt: skip
    targets = build_targets(summary)
    print_targets(targets)
    figures = {"rows": rows, "summary": {str(n): s for n, s in summary.items()}, "targets": targets,
               "horizons": horizons, "seeds": seeds}  # fmt: skip
    write_json(args.json, "way_se", figures, args)


if __name__ == "__main__":
    main()
