"""PGS: property-based, minimal-counterexample feedback on the seeded mutant suite.

Part 1 (``lightning_icml26.tasks.pgs_detection_task``, no LLM; every mutant of the sample, seeds for spread):
which bugs the public tests catch and which the PGS checks catch (public tests plus the reference properties,
kept by the soundness filter, asserted on 64 Hypothesis-drawn inputs); the size, in SmolLM2 tokens, of the
counterexample chosen by min-token selection, by Hypothesis shrinking and at random among the failing inputs; and
how often each counterexample executes the mutated line. Equivalent mutants are dropped by differential testing
against the reference on a separate hidden pool of inputs, which also judges every final program of part 2.

Part 2 (``pgs_comparison_task``; SmolLM2-135M-Instruct, or ``--model PATH`` of any local transformers causal LM):
starting from a mutant, PGS (reference tester) and Self-Debug revise it with the same budget of refinements;
direct generation writes a program from the specification. Pass@1 (greedy, n = 1) and fix rate on the hidden pool.

    python -m benchmarks.pgs --quick --json outputs/pgs_quick.json   # 15 problems, 1 mutant each: a smoke run
    python -m benchmarks.pgs --json benchmarks/results/pgs.json
"""

from __future__ import annotations

import time
from typing import Any

import torch

from benchmarks._common import benchmark_parser, markdown_table, print_targets, target, write_json
from lightning_icml26.llm import HFCausalLM, smollm2
from lightning_icml26.optional import require
from lightning_icml26.tasks import PgsComparisonConfig, PgsDetectionConfig, summarise_detection


def load_model(path: str | None) -> HFCausalLM:
    if path is None:
        return smollm2(batch_size=1)
    transformers = require("transformers", extra="llm", purpose="--model")
    tok = transformers.AutoTokenizer.from_pretrained(path)
    model = transformers.AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32).eval()
    return HFCausalLM(model, tok, batch_size=1)


def fix_ratio(ours: float, baseline: float) -> float:
    """``ours / baseline``; ``inf`` when only the baseline is zero, ``nan`` when both are."""
    if baseline == 0:
        return float("inf") if ours > 0 else float("nan")
    return ours / baseline


def build_targets(p1: dict[str, float], p2: dict[str, Any] | None) -> dict[str, dict[str, Any]]:
    fix = float("nan") if p2 is None else fix_ratio(p2["PGS"]["fix_rate"], p2["Self-Debug"]["fix_rate"])
    return {
        "properties_vs_public_bugs_caught": target(p1["catch_ratio"], ">=", 1.5),
        "min_token_vs_random_tokens": target(p1["min_token_vs_random"], "<=", 0.5),
        "pgs_vs_self_debug_fix_rate": target(fix, ">=", 1.4),
    }


def main() -> None:
    parser = benchmark_parser(__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--model", default=None, help="a local transformers causal LM folder (default SmolLM2)")
    parser.add_argument("--skip-llm", action="store_true", help="part 1 only (part 2's target is then missed)")
    parser.add_argument("--isolation", default="bwrap", choices=("bwrap", "process"), help="the sandbox's isolation")
    args = parser.parse_args()
    torch.set_num_threads(1)
    seeds = 1 if args.quick else args.seeds
    per_problem = 1 if args.quick else 2
    n_hidden = 48 if args.quick else 96
    n_mutants, refinements, new_tokens = (1, 1, 96) if args.quick else (3, 5, 96)
    lm = load_model(args.model)
    start = time.perf_counter()
    per_seed = [
        PgsDetectionConfig(lm, per_problem, args.seed + s, 64, n_hidden, 2 if args.quick else 1, args.isolation).run()
        for s in range(seeds)
    ]
    table, p1 = summarise_detection(per_seed)
    p1["seconds"] = time.perf_counter() - start
    size = f"{seeds} seed(s), {per_problem} mutant(s) per problem, {15 if args.quick else 30} problems"
    print(f"## Part 1: bugs caught and counterexamples ({size})\n")
    print(markdown_table(table))
    print(f"\nPGS checks catch {p1['pgs_caught']:.0f} of {p1['bugs']:.0f} bugs, public tests {p1['public_caught']:.0f}"
          f" (ratio {p1['catch_ratio']:.3g}, seed sd {p1['catch_ratio_seed_sd']:.3g}); tokens min-token"
          f" {p1['min_token_tokens']:.3g} / Hypothesis {p1['hypothesis_tokens']:.3g} / random"
          f" {p1['random_tokens']:.3g} (min-token / random {p1['min_token_vs_random']:.3g});"
          f" {p1['seconds']:.0f} s")  # fmt: skip
    p2 = None
    if not args.skip_llm:
        p2 = PgsComparisonConfig(lm, n_mutants, refinements, new_tokens, args.seed, args.isolation).run()
        print(f"\n## Part 2: refinement with {args.model or 'SmolLM2-135M-Instruct'} "
              f"({len(p2['mutants'])} mutants, {refinements} refinement(s))\n")  # fmt: skip
        rows = [{"method": m, **p2[m]} for m in ("PGS", "Self-Debug", "Direct")]
        for row in rows:
            row["fix rate x Self-Debug"] = fix_ratio(row["fix_rate"], p2["Self-Debug"]["fix_rate"])
        print(markdown_table(rows))
    targets = build_targets(p1, p2)
    print_targets(targets)
    figures = {"part1": p1, "part1_per_seed": table, "part2": p2, "targets": targets}
    write_json(args.json, "pgs", figures, args)


if __name__ == "__main__":
    main()
