"""Seen-Detector novelty reward against iteration collapse on the toy self-play world (and, with --llm, SmolLM2).

Four questioner rewards, on the same toy world and the same seeds, each one run of the ``novelty_toy`` recipe
(GRPO questioner, SGD lr 8, 4 prompts x 8 questions, 8 solver samples, solver band [0.25, 0.75]) through
``lightning_icml26.cli.run_recipe``, the arms as its documented overrides: ``uncertainty`` (R-Zero's uncertainty
reward only), ``r_zero`` (plus the batch repetition penalty), ``memory`` (plus an R-Diverse-style persistent
memory penalty, the strongest baseline) and ``seen`` (R-Zero plus the Seen-Detector novelty, beta chosen among
{1, 2, 4} on validation seeds 100.., never on test seeds). Per iteration, from the run's ``logs/metrics.csv``:
held-out solver score (points), coverage entropy, seen rate.

Targets (the paper reports no numbers; it claims collapse is mitigated with consistent gains):
``uncertainty_collapse`` (uncertainty's peak minus final >= 10 points: the premise; when missed every other
target is marked missed), ``seen_peak_minus_final`` <= 3, ``seen_final_over_uncertainty`` >= 1.2,
``seen_minus_memory_final`` > 0, ``seen_beats_memory_share`` >= 0.8, ``coverage_entropy_ratio`` >= 1.5.

    python -m benchmarks.novelty_selfplay --json benchmarks/results/novelty_selfplay.json     # 5 seeds, 40 it.
    python -m benchmarks.novelty_selfplay --quick --llm      # plus the novelty_smollm2 recipe, beta 0 and 1
"""

from __future__ import annotations

import csv
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks._common import benchmark_parser, markdown_table, print_targets, ratio, target, write_json
from lightning_icml26.cli import run_recipe

ARMS = ("uncertainty", "r_zero", "memory", "seen")
BETAS = (1.0, 2.0, 4.0)
ARM_OVERRIDES = {  # (beta or None for the chosen beta, lambda_rep, lambda_mem), as in the recipe's comments
    "uncertainty": (0.0, 0.0, 0.0), "r_zero": (0.0, 1.0, 0.0), "memory": (0.0, 1.0, 1.0), "seen": (None, 1.0, 0.0),
}  # fmt: skip


def recipe_history(recipe: str, overrides: list[str]) -> tuple[float, list[dict[str, float]]]:
    """Run a recipe; its seconds and per-iteration ``selfplay/*`` figures (from the run's ``logs/metrics.csv``)."""
    with tempfile.TemporaryDirectory() as run_dir:
        seconds = run_recipe(recipe, overrides, run_dir=run_dir)["seconds"]
        with open(Path(run_dir) / "logs" / "metrics.csv", newline="") as f:
            rows = [r for r in csv.DictReader(f) if r.get("selfplay/score")]
    return seconds, [
        {k.removeprefix("selfplay/"): float(v) for k, v in r.items() if "selfplay/" in k and v} for r in rows
    ]


def run_arm(arm: str, seed: int, iterations: int, beta: float = 2.0) -> dict[str, Any]:
    """One arm on one seed (one ``novelty_toy`` run): per-iteration score, coverage entropy and seen rate."""
    b, rep, mem = ARM_OVERRIDES[arm]
    overrides = [f"seed={seed}", f"trainer.max_epochs={iterations}", f"model.beta={beta if b is None else b}",
                 f"model.lambda_rep={rep}", f"model.lambda_mem={mem}"]  # fmt: skip
    seconds, hist = recipe_history("novelty_toy", overrides)
    return {
        "arm": arm, "seed": seed, "beta": beta, "seconds": seconds,
        "score": [r["score"] for r in hist], "coverage": [r["coverage_entropy"] for r in hist],
        "seen_rate": [r.get("seen_rate", float("nan")) for r in hist],
    }  # fmt: skip


def _summary(runs: list[dict[str, Any]]) -> dict[str, np.ndarray]:
    score = np.array([r["score"] for r in runs])
    cov = np.array([r["coverage"] for r in runs])
    seen = np.array([r["seen_rate"] for r in runs])
    return {"peak": score.max(1), "final": score[:, -1], "drop": score.max(1) - score[:, -1],
            "coverage_final": cov[:, -5:].mean(1), "seen_rate_final": np.nanmean(seen[:, -5:], 1)}  # fmt: skip


def build_targets(summ: dict[str, dict[str, np.ndarray]]) -> dict[str, dict[str, Any]]:
    """The targets from per-arm, per-seed summaries; all but the premise missed when uncertainty does not collapse."""
    unc, seen, mem = summ["uncertainty"], summ["seen"], summ["memory"]
    finals, coverages = (
        [float(x["final"].mean()) for x in (seen, unc)],
        [float(x["coverage_final"].mean()) for x in (seen, unc)],
    )
    targets = {
        "uncertainty_collapse": target(float(unc["drop"].mean()), ">=", 10),
        "seen_peak_minus_final": target(float(seen["drop"].mean()), "<=", 3),
        "seen_final_over_uncertainty": target(ratio(*finals), ">=", 1.2),
        "seen_minus_memory_final": target(float((seen["final"] - mem["final"]).mean()), ">", 0),
        "seen_beats_memory_share": target(float((seen["final"] > mem["final"]).mean()), ">=", 0.8),
        "coverage_entropy_ratio": target(ratio(*coverages), ">=", 1.5),
    }
    if not targets["uncertainty_collapse"]["met"]:
        for name, entry in targets.items():
            entry["met"] = entry["met"] and name == "uncertainty_collapse"
    return targets


def main() -> None:
    parser = benchmark_parser(__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--iterations", type=int, default=40)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--llm", action="store_true", help="also the novelty_smollm2 recipe with beta 0 and 1")
    args = parser.parse_args()
    iterations = 30 if args.quick else args.iterations
    seeds = list(range(args.seed, args.seed + (2 if args.quick else args.seeds)))
    val_seeds = list(range(100, 101 if args.quick else 103))
    start = time.perf_counter()  # the validation runs choose beta; the test seeds never do
    with ProcessPoolExecutor(max_workers=args.workers) as pool:
        val = {(b, s): pool.submit(run_arm, "seen", s, iterations, b) for b in BETAS for s in val_seeds}
        val_final = {b: float(np.mean([val[(b, s)].result()["score"][-1] for s in val_seeds])) for b in BETAS}
        beta = max(BETAS, key=lambda b: val_final[b])
        print(f"validation seeds {val_seeds}: mean final score by beta {val_final} -> beta = {beta}", flush=True)
        jobs = {(a, s): pool.submit(run_arm, a, s, iterations, beta) for a in ARMS for s in seeds}
        runs = {key: job.result() for key, job in jobs.items()}
    summ = {a: _summary([runs[(a, s)] for s in seeds]) for a in ARMS}
    unc_final = float(summ["uncertainty"]["final"].mean())
    rows = [{
        "arm": a, "peak": s["peak"].mean(), "final": s["final"].mean(), "+-": s["final"].std(ddof=1),
        "peak - final": s["drop"].mean(), "final / uncertainty": ratio(float(s["final"].mean()), unc_final),
        "coverage H (nats)": s["coverage_final"].mean(), "seen rate": s["seen_rate_final"].mean(),
        "s / seed": np.mean([runs[(a, sd)]["seconds"] for sd in seeds]),
    } for a, s in summ.items()]  # fmt: skip
    print(markdown_table(rows))
    print("\nHeld-out score per iteration (mean over seeds, every 5th):")
    curve = {a: np.mean([runs[(a, sd)]["score"] for sd in seeds], axis=0)[::5] for a in ARMS}
    print(markdown_table([{"arm": a, **{f"it {5 * i + 1}": x for i, x in enumerate(c)}} for a, c in curve.items()]))
    targets = build_targets(summ)
    void = not targets["uncertainty_collapse"]["met"]
    print("\nThe uncertainty-only arm did not collapse: the comparison is VOID." if void else "")
    print_targets(targets)
    figures: dict[str, Any] = {
        "iterations": iterations, "seeds": seeds, "validation_seeds": val_seeds, "beta": beta,
        "validation_final_by_beta": val_final, "void": void, "rows": rows,
        "curves": {a: [runs[(a, sd)]["score"] for sd in seeds] for a in ARMS},
        "coverage_curves": {a: [runs[(a, sd)]["coverage"] for sd in seeds] for a in ARMS},
        "seconds": time.perf_counter() - start, "targets": targets,
    }  # fmt: skip
    if args.llm:
        figures["llm"] = []
        for b in (0.0, 1.0):  # the novelty_smollm2 recipe: SmolLM2-135M questioner and solver, 3 iterations
            seconds, hist = recipe_history("novelty_smollm2", [f"seed={args.seed}", f"model.beta={b}"])
            figures["llm"].append({"beta": b, "seconds": seconds, "history": hist})
        print("\nSmolLM2-135M questioner and solver (informative, no target):")
        llm_rows = [
            {"beta": r["beta"], "iteration": i + 1, **h} for r in figures["llm"] for i, h in enumerate(r["history"])
        ]
        print(markdown_table(llm_rows))
    write_json(args.json, "novelty_selfplay", figures, args)


if __name__ == "__main__":
    main()
