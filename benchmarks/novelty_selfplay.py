"""Seen-Detector novelty reward against iteration collapse on the toy self-play world (and, with --llm, SmolLM2).

Four questioner rewards, on the same toy world and the same seeds, each trained with the same GRPO questioner
(categorical policy, SGD lr 8, 4 prompts x 8 questions, 8 solver samples, solver band [0.25, 0.75]):

* ``uncertainty``: R-Zero's uncertainty reward only;
* ``r_zero``: plus the batch repetition penalty (BLEU clustering, lambda_rep = 1);
* ``memory``: plus an R-Diverse-style persistent memory penalty (max cosine similarity to every question asked
  before, lambda_mem = 1), the strongest available baseline;
* ``seen``: R-Zero plus the gated, calibrated Seen-Detector novelty (kNN distance, k = 5, FIFO buffer of 256,
  beta chosen among {1, 2, 4} on validation seeds 100.. by the mean final held-out score, never on test seeds).

Every arm carries the same seen detector for measurement (its seen rate), with beta = 0 outside ``seen``.
Per iteration: held-out solver score (mean solve probability over all template x difficulty cells, points),
coverage entropy of the asked questions' templates (nats), seen rate.

Targets (the paper reports no numbers; it claims collapse is mitigated with consistent gains):

* ``uncertainty_collapse``: the uncertainty-only arm's peak minus final score >= 10 points (the premise; when
  missed the comparison is void and every other target is marked missed);
* ``seen_peak_minus_final`` <= 3; ``seen_final_over_uncertainty`` >= 1.2;
* ``seen_minus_memory_final`` > 0 (mean over seeds) and ``seen_beats_memory_share`` >= 0.8 (4 of 5 seeds);
* ``coverage_entropy_ratio`` (seen over uncertainty, final 5 iterations) >= 1.5.

    python -m benchmarks.novelty_selfplay --quick --json outputs/novelty_selfplay_quick.json   # 2 seeds, 30 it.
    python -m benchmarks.novelty_selfplay --json benchmarks/results/novelty_selfplay.json     # 5 seeds, 40 it.
    python -m benchmarks.novelty_selfplay --quick --llm      # plus 3 SmolLM2-135M iterations with beta 0 and 1
"""

from __future__ import annotations

import logging
import time
import warnings
from concurrent.futures import ProcessPoolExecutor
from functools import partial
from typing import Any

import numpy as np
import torch
from lightning.pytorch import Trainer

from benchmarks._common import benchmark_parser, markdown_table, print_targets, ratio, target, write_json
from lightning_icml26.callbacks import SeenDetectorCallback
from lightning_icml26.data.selfplay import SelfPlayDataModule
from lightning_icml26.modules.novelty import toy_selfplay_module
from lightning_icml26.modules.novelty.llm import smollm2_selfplay_module

ARMS = ("uncertainty", "r_zero", "memory", "seen")
BETAS = (1.0, 2.0, 4.0)
QUESTIONER_LR = 8.0


def run_arm(arm: str, seed: int, iterations: int, beta: float = 2.0) -> dict[str, Any]:
    """One arm on one seed: per-iteration score, coverage entropy and seen rate."""
    warnings.filterwarnings("ignore")
    logging.getLogger("lightning.pytorch").setLevel(logging.ERROR)
    torch.set_num_threads(1)
    dm = SelfPlayDataModule(num_prompts=4, buffer_capacity=256, buffer_policy="fifo", seed=seed)
    module = toy_selfplay_module(
        beta=beta if arm == "seen" else 0.0,
        lambda_rep=0.0 if arm == "uncertainty" else 1.0,
        lambda_mem=1.0 if arm == "memory" else 0.0,
        detector="knn",
        min_buffer=16,
        optimizer=partial(torch.optim.SGD, lr=QUESTIONER_LR),
        seed=seed,
    )
    trainer = Trainer(
        max_epochs=iterations, logger=False, enable_checkpointing=False, enable_progress_bar=False,
        enable_model_summary=False, callbacks=[SeenDetectorCallback()], accelerator="cpu",
    )  # fmt: skip
    start = time.perf_counter()
    trainer.fit(module, dm)
    hist = module.history
    return {
        "arm": arm,
        "seed": seed,
        "beta": beta,
        "seconds": time.perf_counter() - start,
        "score": [r["score"] for r in hist],
        "coverage": [r["coverage_entropy"] for r in hist],
        "seen_rate": [r.get("seen_rate", float("nan")) for r in hist],
    }


def run_llm(beta: float, iterations: int, seed: int) -> dict[str, Any]:
    """SmolLM2-135M questioner and solver for a few iterations: seen rate and distinct-2 per iteration."""
    warnings.filterwarnings("ignore")
    logging.getLogger("lightning.pytorch").setLevel(logging.ERROR)
    dm = SelfPlayDataModule(num_prompts=1, prompt="Write one short arithmetic question.", seed=seed)
    module = smollm2_selfplay_module(beta=beta, group_size=4, num_samples=4, seed=seed)
    trainer = Trainer(
        max_epochs=iterations, logger=False, enable_checkpointing=False, enable_progress_bar=False,
        enable_model_summary=False, callbacks=[SeenDetectorCallback()], accelerator="cpu",
    )  # fmt: skip
    start = time.perf_counter()
    trainer.fit(module, dm)
    return {"beta": beta, "seconds": time.perf_counter() - start, "history": module.history}


def _summary(runs: list[dict[str, Any]]) -> dict[str, np.ndarray]:
    score = np.array([r["score"] for r in runs])
    cov = np.array([r["coverage"] for r in runs])
    seen = np.array([r["seen_rate"] for r in runs])
    return {
        "peak": score.max(1),
        "final": score[:, -1],
        "drop": score.max(1) - score[:, -1],
        "coverage_final": cov[:, -5:].mean(1),
        "seen_rate_final": np.nanmean(seen[:, -5:], 1),
    }


def build_targets(summ: dict[str, dict[str, np.ndarray]]) -> dict[str, dict[str, Any]]:
    """The targets from per-arm, per-seed summaries (see :func:`_summary`); the void rule marks all but the
    premise missed when the uncertainty-only arm does not collapse."""
    unc, seen, mem = summ["uncertainty"], summ["seen"], summ["memory"]
    collapse = float(unc["drop"].mean())
    targets = {
        "uncertainty_collapse": target(collapse, ">=", 10),
        "seen_peak_minus_final": target(float(seen["drop"].mean()), "<=", 3),
        "seen_final_over_uncertainty": target(
            ratio(float(seen["final"].mean()), float(unc["final"].mean())), ">=", 1.2
        ),
        "seen_minus_memory_final": target(float((seen["final"] - mem["final"]).mean()), ">", 0),
        "seen_beats_memory_share": target(float((seen["final"] > mem["final"]).mean()), ">=", 0.8),
        "coverage_entropy_ratio": target(
            ratio(float(seen["coverage_final"].mean()), float(unc["coverage_final"].mean())), ">=", 1.5
        ),
    }
    if not targets["uncertainty_collapse"]["met"]:
        for name, entry in targets.items():
            if name != "uncertainty_collapse":
                entry["met"] = False
    return targets


def main() -> None:
    parser = benchmark_parser(__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--iterations", type=int, default=40)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--llm", action="store_true", help="also 3 SmolLM2-135M iterations with and without beta")
    args = parser.parse_args()
    iterations = 30 if args.quick else args.iterations
    seeds = list(range(args.seed, args.seed + (2 if args.quick else args.seeds)))
    val_seeds = list(range(100, 101 if args.quick else 103))
    start = time.perf_counter()
    with ProcessPoolExecutor(max_workers=args.workers) as pool:
        val = {(b, s): pool.submit(run_arm, "seen", s, iterations, b) for b in BETAS for s in val_seeds}
        val_final = {b: float(np.mean([val[(b, s)].result()["score"][-1] for s in val_seeds])) for b in BETAS}
        beta = max(BETAS, key=lambda b: val_final[b])
        print(f"validation seeds {val_seeds}: mean final score by beta {val_final} -> beta = {beta}", flush=True)
        jobs = {(a, s): pool.submit(run_arm, a, s, iterations, beta) for a in ARMS for s in seeds}
        runs = {key: job.result() for key, job in jobs.items()}
    summ = {a: _summary([runs[(a, s)] for s in seeds]) for a in ARMS}
    rows = []
    unc_final = float(summ["uncertainty"]["final"].mean())
    for a in ARMS:
        s = summ[a]
        rows.append({
            "arm": a, "peak": s["peak"].mean(), "final": s["final"].mean(), "+-": s["final"].std(ddof=1),
            "peak - final": s["drop"].mean(), "final / uncertainty": ratio(float(s["final"].mean()), unc_final),
            "coverage H (nats)": s["coverage_final"].mean(), "seen rate": s["seen_rate_final"].mean(),
            "s / seed": np.mean([runs[(a, sd)]["seconds"] for sd in seeds]),
        })  # fmt: skip
    print(markdown_table(rows))
    print("\nHeld-out score per iteration (mean over seeds, every 5th):")
    every = range(0, iterations, 5)
    curve_rows = [
        {"arm": a, **{f"it {i + 1}": np.mean([runs[(a, sd)]["score"][i] for sd in seeds]) for i in every}} for a in ARMS
    ]
    print(markdown_table(curve_rows))
    targets = build_targets(summ)
    void = not targets["uncertainty_collapse"]["met"]
    if void:
        print("\nThe uncertainty-only arm did not collapse (peak - final < 10): the comparison is VOID.")
    print_targets(targets)
    figures: dict[str, Any] = {
        "iterations": iterations, "seeds": seeds, "validation_seeds": val_seeds, "beta": beta,
        "validation_final_by_beta": val_final, "void": void, "rows": rows,
        "curves": {a: [runs[(a, sd)]["score"] for sd in seeds] for a in ARMS},
        "coverage_curves": {a: [runs[(a, sd)]["coverage"] for sd in seeds] for a in ARMS},
        "seconds": time.perf_counter() - start, "targets": targets,
    }  # fmt: skip
    if args.llm:
        llm_rows: list[dict[str, Any]] = []
        llm_runs: list[dict[str, Any]] = []
        for b in (0.0, 1.0):
            res = run_llm(b, 3, args.seed)
            llm_runs.append(res)
            for i, r in enumerate(res["history"]):
                llm_rows.append({"beta": b, "iteration": i + 1, **r})
        print("\nSmolLM2-135M questioner and solver (informative, no target):")
        print(markdown_table(llm_rows))
        figures["llm"] = llm_runs
    write_json(args.json, "novelty_selfplay", figures, args)


if __name__ == "__main__":
    main()
