"""IRT judge reliability: GRM diagnostics (C_V, rho) on simulated judges in the paper's regimes.

Regimes (simulated; sizes of the paper's data sets):

* ``clean`` (GPT-4o, SummEval Relevance: C_V 0.05, rho 0.92, pass): 1600 samples, 4 sharp, alike variants;
* ``prompt-sensitive`` (GPT-4o-mini, SummEval Consistency: C_V 0.92, fail): one variant barely follows quality;
* ``low-discrimination`` (Qwen3-235B, TopicalChat: rho 0.34, fail): 360 samples, alpha 0.5 on every variant.

For every regime and seed, in one process on the same scores: the project's EM (``fit_grm``) and girth's
``grm_mml`` (C_V and rho from girth's item parameters with the same EAP step), their discrimination agreement
and fit times, the verdicts of the paper's pass rules, and the observed-output statistics (Krippendorff's
ordinal alpha across variants, exact agreement of each variant with the original prompt, Spearman of the
mean judge score with the mean human rating). Beside them, on fewer seeds, the paper's estimator: the Bayesian
GRM with its priors sampled by NumPyro NUTS (written directly in NumPyro rather than through PyMC; 2 chains
instead of 4), when ``numpyro`` is installed. ``--llm`` adds SmolLM2-135M-Instruct as a
real judge of graded (degraded) standard-library docstrings.

    python -m benchmarks.irt_judge --quick --json outputs/irt_judge_quick.json
    python -m benchmarks.irt_judge --json outputs/irt_judge.json            # 20 seeds
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import torch
from scipy.stats import spearmanr

from benchmarks._common import benchmark_parser, markdown_table, ratio, target, write_json
from lightning_icml26.algorithms.irt import BayesianGRM, JudgeRunner, eap_abilities, fit_grm, scores_to_counts
from lightning_icml26.data.irt_judges import degraded_docstrings, simulate_judge
from lightning_icml26.llm import smollm2
from lightning_icml26.metrics.functional import (
    human_alignment,
    marginal_reliability,
    prompt_consistency,
)
from lightning_icml26.metrics.functional.irt import CV_PASS, RHO_PASS
from lightning_icml26.optional import is_available, require

GIRTH = require("girth", extra="irt", purpose="the girth baseline") if is_available("girth") else None
NUMPYRO = is_available("numpyro") and is_available("jax")
KRIPPENDORFF = require("krippendorff", extra="irt") if is_available("krippendorff") else None

REGIMES = {
    "clean": {"n_samples": 1600, "discrimination": 3.5},
    "prompt-sensitive": {"n_samples": 1600, "discrimination": 3.5, "sensitive_variant": 2},
    "low-discrimination": {"n_samples": 360, "discrimination": 0.5},
}


def _observed(scores: np.ndarray, human: np.ndarray) -> dict[str, float]:
    out = {"exact_agreement": float(np.mean(scores[:, 1:] == scores[:, :1]))}
    out["spearman_human"] = float(spearmanr(scores.mean(1), human.mean(1)).statistic)
    if KRIPPENDORFF is not None:
        out["kripp_alpha"] = float(KRIPPENDORFF.alpha(reliability_data=scores.T, level_of_measurement="ordinal"))
    return out


def _diagnostics(counts: torch.Tensor, theta: torch.Tensor, sd: torch.Tensor) -> tuple[float, float]:
    return float(prompt_consistency(theta, counts)), float(marginal_reliability(theta, sd))


def run_nuts(name: str, seed: int, draws: int) -> dict:
    """EM beside the paper's estimator (NUTS, 2 chains x (draws warm-up + draws)) on the same scores."""
    sim = simulate_judge(seed=seed, **REGIMES[name])  # type: ignore[arg-type]
    counts = scores_to_counts(sim.scores, 5)
    t0 = time.perf_counter()
    fit = fit_grm(counts)
    t_em = time.perf_counter() - t0
    t0 = time.perf_counter()
    nuts = BayesianGRM(5, num_warmup=draws, num_samples=draws, num_chains=2, seed=seed).fit(sim.scores.numpy())
    t_nuts = time.perf_counter() - t0
    cv, rho = _diagnostics(counts, fit.theta, fit.theta_sd)
    th = torch.as_tensor(nuts.theta_, dtype=torch.float64)
    cv_n, rho_n = _diagnostics(counts, th, torch.as_tensor(nuts.theta_sd_, dtype=torch.float64))
    return {
        "regime": name,
        "seed": seed,
        "cv_em": cv,
        "cv_nuts": cv_n,
        "rho_em": rho,
        "rho_nuts": rho_n,
        "time_em_s": t_em,
        "time_nuts_s": t_nuts,
        "speedup": ratio(t_nuts, t_em),
        "gap": max(abs(cv - cv_n), abs(rho - rho_n)),
        "verdicts_agree": (cv > CV_PASS or rho < RHO_PASS) == (cv_n > CV_PASS or rho_n < RHO_PASS),
        "corr_alpha": float(np.corrcoef(fit.discrimination.numpy(), nuts.discrimination_)[0, 1]),
    }


def run_regime(name: str, seed: int) -> dict:
    sim = simulate_judge(seed=seed, **REGIMES[name])  # type: ignore[arg-type]
    counts = scores_to_counts(sim.scores, 5)
    t0 = time.perf_counter()
    fit = fit_grm(counts)
    t_em = time.perf_counter() - t0
    cv, rho = _diagnostics(counts, fit.theta, fit.theta_sd)
    row = {"regime": name, "seed": seed, "cv_em": cv, "rho_em": rho, "fail_em": cv > CV_PASS or rho < RHO_PASS}
    row.update({"cv_flag": cv > CV_PASS, "rho_flag": rho < RHO_PASS, "time_em_s": t_em})
    row["corr_true_alpha"] = float(np.corrcoef(fit.discrimination.numpy(), sim.discrimination.numpy())[0, 1])
    row["corr_true_theta"] = float(np.corrcoef(fit.theta.numpy(), sim.theta.numpy())[0, 1])
    if GIRTH is not None:
        t0 = time.perf_counter()
        ref = GIRTH.grm_mml(sim.scores.T.numpy().astype(int))
        row["time_girth_s"] = time.perf_counter() - t0
        a, b = torch.as_tensor(ref["Discrimination"]), torch.as_tensor(np.asarray(ref["Difficulty"], dtype=float))
        if bool(torch.isfinite(b).all()):
            th, sd = eap_abilities(counts, a, b)
            row["cv_girth"], row["rho_girth"] = _diagnostics(counts, th, sd)
        row["corr_alpha_em_girth"] = float(np.corrcoef(fit.discrimination.numpy(), a.numpy())[0, 1])
    row.update(_observed(sim.scores.numpy(), sim.human_scores.numpy()))
    if name == "clean":
        s, v, y = sim.triples()
        n = sim.scores.shape[0]
        for scale in (1.0, 0.5):
            other = simulate_judge(seed=seed, human_scale=scale, **REGIMES[name])  # type: ignore[arg-type]
            out = human_alignment(s, v, y, *other.human_triples(), n, 4, 3, 5)
            row[f"theta_ratio_h{scale}"] = float(out["theta_ratio"])
            row[f"dw_h{scale}"] = float(out["wasserstein"])
    return row


def run_llm(n_samples: int) -> dict:
    texts, levels = degraded_docstrings(n_samples=n_samples, n_levels=5, seed=0)
    t0 = time.perf_counter()
    runner = JudgeRunner(smollm2(), "Rate how fluent, grammatical and complete this Python docstring is.", 5)
    scores = runner.score(texts)
    counts = scores_to_counts(scores, 5)
    paraphrase = " ".join(runner.instructions[3].split())
    out: dict = {"n_samples": n_samples, "paraphrase": paraphrase[:80].replace("|", "/")}
    fit = fit_grm(counts)
    out["cv"], out["rho"] = _diagnostics(counts, fit.theta, fit.theta_sd)
    s, v, y = torch.arange(n_samples).repeat_interleave(4), torch.arange(4).repeat(n_samples), scores.reshape(-1)
    ids = torch.arange(n_samples)
    ali = human_alignment(s, v, y, ids, torch.zeros_like(ids), levels, n_samples, 4, 1, 5)
    out["theta_ratio"], out["dw"] = float(ali["theta_ratio"]), float(ali["wasserstein"])
    out["spearman_level"] = float(spearmanr(scores.float().mean(1), levels).statistic)
    out["score_histogram"] = torch.bincount(scores.flatten(), minlength=6)[1:].tolist()
    out["seconds"] = time.perf_counter() - t0
    return out


def main(argv: list[str] | None = None) -> None:
    parser = benchmark_parser(__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=None, help="seeds per regime (default 3 quick, 20 full)")
    parser.add_argument("--nuts-seeds", type=int, default=None, help="NUTS fits per regime (default 1 quick, 2)")
    parser.add_argument("--nuts-draws", type=int, default=None, help="warm-up = kept draws per chain (250 / 500)")
    parser.add_argument("--llm", action="store_true", help="add SmolLM2-135M as a real judge")
    parser.add_argument("--llm-samples", type=int, default=None, help="docstrings judged (default 20 quick, 50)")
    args = parser.parse_args(argv)
    torch.manual_seed(args.seed)
    n_seeds = args.seeds or (3 if args.quick else 20)
    rows = [run_regime(name, args.seed + s) for name in REGIMES for s in range(n_seeds)]
    summary = []
    for name in REGIMES:
        rs = [r for r in rows if r["regime"] == name]
        line: dict = {"regime": name, "seeds": len(rs)}
        for key in ("cv_em", "cv_girth", "rho_em", "rho_girth", "kripp_alpha", "exact_agreement", "spearman_human"):
            vals = [r[key] for r in rs if key in r]
            if vals:
                line[key] = f"{np.mean(vals):.3f} ± {np.std(vals):.3f}"
        gap = [max(abs(r["cv_em"] - r["cv_girth"]), abs(r["rho_em"] - r["rho_girth"])) for r in rs if "cv_girth" in r]
        if gap:
            line["max EM-girth gap"] = float(max(gap))
        line["fail rate"] = float(np.mean([r["fail_em"] for r in rs]))
        line["cv flag"] = float(np.mean([r["cv_flag"] for r in rs]))
        line["rho flag"] = float(np.mean([r["rho_flag"] for r in rs]))
        t_em = float(np.mean([r["time_em_s"] for r in rs]))
        t_girth = [r["time_girth_s"] for r in rs if "time_girth_s" in r]
        line["EM s"] = t_em
        if t_girth:
            line["girth s"] = float(np.mean(t_girth))
            line["EM/girth time"] = ratio(t_em, float(np.mean(t_girth)))
        summary.append(line)
    print(markdown_table(summary))
    clean = [r for r in rows if r["regime"] == "clean"]
    print("\nclean judge, human alignment (humans on the same quality; humans on 0.5 x quality):")
    print(markdown_table([{
        "theta_ratio h1.0": np.mean([r["theta_ratio_h1.0"] for r in clean]),
        "D_W h1.0": np.mean([r["dw_h1.0"] for r in clean]),
        "theta_ratio h0.5": np.mean([r["theta_ratio_h0.5"] for r in clean]),
        "D_W h0.5": np.mean([r["dw_h0.5"] for r in clean]),
    }]))  # fmt: skip

    def rate(name: str, key: str) -> float:
        return float(np.mean([r[key] for r in rows if r["regime"] == name]))

    nuts_rows: list[dict] = []
    if NUMPYRO:
        n_nuts, draws = args.nuts_seeds or (1 if args.quick else 2), args.nuts_draws or (250 if args.quick else 500)
        nuts_rows = [run_nuts(name, args.seed + s, draws) for name in REGIMES for s in range(n_nuts)]
        print(f"\nEM beside NUTS (2 chains x ({draws} + {draws}) draws, the paper's priors):")
        print(markdown_table(nuts_rows))
    sharp_nuts = [r for r in nuts_rows if r["regime"] != "low-discrimination"]
    agree = [r["corr_alpha_em_girth"] for r in rows if "corr_alpha_em_girth" in r]
    sharp = [r for r in rows if r["regime"] != "low-discrimination" and "cv_girth" in r]
    sharp_gap = [max(abs(r["cv_em"] - r["cv_girth"]), abs(r["rho_em"] - r["rho_girth"])) for r in sharp]
    gaps = [abs(r["cv_em"] - r["cv_girth"]) for r in rows if "cv_girth" in r]
    gaps += [abs(r["rho_em"] - r["rho_girth"]) for r in rows if "rho_girth" in r]
    nan = float("nan")
    sharp_note = "clean and prompt-sensitive regimes"
    targets: dict[str, dict[str, Any]] = {
        "prompt_sensitive_flag_rate": target(rate("prompt-sensitive", "cv_flag"), ">=", 0.95),
        "low_discrimination_flag_rate": target(rate("low-discrimination", "rho_flag"), ">=", 0.95),
        "clean_false_alarm_rate": target(rate("clean", "fail_em"), "<=", 0.05),
        "em_girth_alpha_corr_min": target(min(agree) if agree else nan, ">=", 0.98),
        "em_girth_cv_rho_gap_max": target(max(gaps) if gaps else nan, "<=", 0.02),
        "em_girth_cv_rho_gap_max_sharp_judges": target(
            max(sharp_gap) if sharp_gap else nan, "<=", 0.02, note=f"{sharp_note} (well-identified likelihood)"
        ),
        "em_speedup_vs_nuts": target(
            min(r["speedup"] for r in nuts_rows) if nuts_rows else nan,
            ">=",
            100,
            note="slowest ratio over regimes; NumPyro NUTS, 2 chains",
        ),
        "em_speedup_vs_nuts_sharp_judges": target(
            min(r["speedup"] for r in sharp_nuts) if sharp_nuts else nan, ">=", 100, note=sharp_note
        ),
        "em_nuts_cv_rho_gap_max_sharp_judges": target(
            max(r["gap"] for r in sharp_nuts) if sharp_nuts else nan, "<=", 0.02, note=sharp_note
        ),
        "em_nuts_cv_rho_gap_max": target(max(r["gap"] for r in nuts_rows) if nuts_rows else nan, "<=", 0.02),
    }
    print("\n" + markdown_table([{"name": k, **v} for k, v in targets.items()]))
    figures: dict = {"summary": summary, "rows": rows, "nuts": nuts_rows, "targets": targets}
    if args.llm:
        llm = run_llm(args.llm_samples or (20 if args.quick else 50))
        print("\nSmolLM2-135M judge of degraded docstrings:\n" + markdown_table([llm]))
        figures["llm"] = llm
    write_json(args.json, "irt_judge", figures, args)


if __name__ == "__main__":
    main()
