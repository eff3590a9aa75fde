"""IRT judge reliability: GRM diagnostics (C_V, rho) on simulated judges in the paper's regimes.

Regimes (``lightning_icml26.tasks.IRT_REGIMES``, simulated at the sizes of the paper's data sets): ``clean``
(GPT-4o, SummEval Relevance: C_V 0.05, rho 0.92, pass), ``prompt-sensitive`` (GPT-4o-mini, SummEval Consistency:
C_V 0.92, fail) and ``low-discrimination`` (Qwen3-235B, TopicalChat: rho 0.34, fail).

For every regime and seed (``irt_regime_task``), on the same scores: the project's EM (``fit_grm``) and girth's
``grm_mml`` (C_V and rho from girth's item parameters with the same EAP step), their discrimination agreement and
fit times, the verdicts of the paper's pass rules, and the observed-output statistics (Krippendorff's ordinal
alpha, exact agreement with the original prompt, Spearman with the mean human rating). Beside them, on fewer
seeds, the paper's estimator (``irt_nuts_task``): the Bayesian GRM sampled by NumPyro NUTS (2 chains instead of
4), when ``numpyro`` is installed. ``--llm`` adds SmolLM2-135M-Instruct as a real judge of degraded docstrings.

    python -m benchmarks.irt_judge --quick --json outputs/irt_judge_quick.json
    python -m benchmarks.irt_judge --json outputs/irt_judge.json            # 20 seeds
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from benchmarks._common import benchmark_parser, markdown_table, target, write_json
from lightning_icml26.optional import is_available
from lightning_icml26.tasks import (
    IRT_REGIMES,
    IrtDocstringJudgeConfig,
    IrtNutsConfig,
    IrtRegimeConfig,
    summarise_irt_regimes,
)

NUMPYRO = is_available("numpyro") and is_available("jax")
SHARP = "clean and prompt-sensitive regimes"


def build_targets(rows: list[dict[str, Any]], nuts_rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The paper's verdicts (flag rates), EM against girth and against NUTS (agreement, speed)."""

    def rate(name: str, key: str) -> float:
        return float(np.mean([r[key] for r in rows if r["regime"] == name]))

    def extreme(values: list[float], fn: Any) -> float:
        return fn(values) if values else float("nan")

    sharp_nuts = [r for r in nuts_rows if r["regime"] != "low-discrimination"]
    agree = [r["corr_alpha_em_girth"] for r in rows if "corr_alpha_em_girth" in r]
    sharp = [r for r in rows if r["regime"] != "low-discrimination" and "cv_girth" in r]
    sharp_gap = [max(abs(r["cv_em"] - r["cv_girth"]), abs(r["rho_em"] - r["rho_girth"])) for r in sharp]
    gaps = [abs(r["cv_em"] - r["cv_girth"]) for r in rows if "cv_girth" in r]
    gaps += [abs(r["rho_em"] - r["rho_girth"]) for r in rows if "rho_girth" in r]
    return {
        "prompt_sensitive_flag_rate": target(rate("prompt-sensitive", "cv_flag"), ">=", 0.95),
        "low_discrimination_flag_rate": target(rate("low-discrimination", "rho_flag"), ">=", 0.95),
        "clean_false_alarm_rate": target(rate("clean", "fail_em"), "<=", 0.05),
        "em_girth_alpha_corr_min": target(extreme(agree, min), ">=", 0.98),
        "em_girth_cv_rho_gap_max": target(extreme(gaps, max), "<=", 0.02),
        "em_girth_cv_rho_gap_max_sharp_judges": target(
            extreme(sharp_gap, max), "<=", 0.02, note=f"{SHARP} (well-identified likelihood)"
        ),
        "em_speedup_vs_nuts": target(
            extreme([r["speedup"] for r in nuts_rows], min),
            ">=",
            100,
            note="slowest ratio over regimes; NumPyro NUTS, 2 chains",
        ),  # fmt: skip
        "em_speedup_vs_nuts_sharp_judges": target(extreme([r["speedup"] for r in sharp_nuts], min), ">=", 100, SHARP),
        "em_nuts_cv_rho_gap_max_sharp_judges": target(extreme([r["gap"] for r in sharp_nuts], max), "<=", 0.02, SHARP),
        "em_nuts_cv_rho_gap_max": target(extreme([r["gap"] for r in nuts_rows], max), "<=", 0.02),
    }


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
    rows = [IrtRegimeConfig(name, args.seed + s).run() for name in IRT_REGIMES for s in range(n_seeds)]
    summary = summarise_irt_regimes(rows)
    print(markdown_table(summary))
    clean = [r for r in rows if r["regime"] == "clean"]
    print("\nclean judge, human alignment (humans on the same quality; humans on 0.5 x quality):")
    keys = {"theta_ratio h1.0": "theta_ratio_h1.0", "D_W h1.0": "dw_h1.0", "theta_ratio h0.5": "theta_ratio_h0.5",
            "D_W h0.5": "dw_h0.5"}  # fmt: skip
    print(markdown_table([{name: np.mean([r[key] for r in clean]) for name, key in keys.items()}]))
    nuts_rows: list[dict[str, Any]] = []
    if NUMPYRO:
        n_nuts, draws = args.nuts_seeds or (1 if args.quick else 2), args.nuts_draws or (250 if args.quick else 500)
        nuts_rows = [IrtNutsConfig(name, args.seed + s, draws).run() for name in IRT_REGIMES for s in range(n_nuts)]
        print(f"\nEM beside NUTS (2 chains x ({draws} + {draws}) draws, the paper's priors):")
        print(markdown_table(nuts_rows))
    targets = build_targets(rows, nuts_rows)
    print("\n" + markdown_table([{"name": k, **v} for k, v in targets.items()]))
    figures: dict[str, Any] = {"summary": summary, "rows": rows, "nuts": nuts_rows, "targets": targets}
    if args.llm:
        llm = IrtDocstringJudgeConfig(args.llm_samples or (20 if args.quick else 50)).run()
        print("\nSmolLM2-135M judge of degraded docstrings:\n" + markdown_table([llm]))
        figures["llm"] = llm
    write_json(args.json, "irt_judge", figures, args)


if __name__ == "__main__":
    main()
