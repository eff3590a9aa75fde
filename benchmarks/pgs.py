"""PGS: property-based, minimal-counterexample feedback on the seeded mutant suite.

Part 1 (no LLM; every mutant of the sample, seeds for spread): which bugs the public tests catch and
which the PGS checks catch (public tests plus the reference properties, kept by the soundness filter,
asserted on 64 Hypothesis-drawn inputs); the size, in SmolLM2 tokens, of the counterexample chosen by
min-token selection, by Hypothesis shrinking and at random among the failing inputs; and how often each
counterexample executes the mutated line (``sys.settrace`` in the sandbox). Equivalent mutants are
dropped by differential testing against the reference on a separate hidden pool of inputs, which also
judges every final program of part 2 (nothing is chosen on it).

Part 2 (SmolLM2-135M-Instruct, or ``--model PATH`` of any local transformers causal LM, as generator):
starting from a mutant, PGS (reference tester) and Self-Debug revise it with the same budget of
refinements; direct generation writes a program from the specification. Pass@1 (greedy, n = 1) and fix
rate (fixed among the initially failing mutants) on the hidden pool.

    python -m benchmarks.pgs --quick --json benchmarks/results/pgs_quick.json   # 15 problems, 1 mutant each
    python -m benchmarks.pgs --json benchmarks/results/pgs.json
"""

from __future__ import annotations

import math
import random
import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

import torch

from benchmarks._common import benchmark_parser, markdown_table, print_targets, target, write_json
from lightning_icml26.algorithms.pgs import (
    CodeProblem,
    DirectGeneration,
    LLMGenerator,
    PGSRefiner,
    ReferenceTester,
    Sandbox,
    SelfDebug,
    draw_inputs,
    min_token_failure,
    random_failure,
    sound_properties,
)
from lightning_icml26.data.pgs import Mutant, classic_problems, mutant_suite
from lightning_icml26.llm import HFCausalLM, smollm2
from lightning_icml26.metrics import CounterexampleTokens, FixRate, PassAtK
from lightning_icml26.optional import require

CHOICES = ("min_token", "hypothesis", "random")


class Hidden:
    """The hidden judge of a problem: public tests plus reference outputs on a separate input pool."""

    def __init__(self, box: Sandbox, problem: CodeProblem, n: int, seed: int) -> None:
        public = set(problem.public_inputs)
        pool = [x for x in draw_inputs(problem.strategy or "", n, seed=10_000 + seed) if x not in public]
        ref = box.run(problem.reference or "", problem.entry_point, pool)
        self.inputs = problem.public_inputs + [x for x, c in zip(pool, ref.cases, strict=True) if c.kind == "pass"]
        self.expected: list[str | None] = [*problem.public_expected, *(c.output for c in ref.cases if c.kind == "pass")]
        self.box, self.problem = box, problem

    def passes(self, program: str) -> bool:
        return self.box.run(program, self.problem.entry_point, self.inputs, expected=self.expected).passed


def part1(
    box: Sandbox,
    count: Callable[[Sequence[str]], list[int]],
    per_problem: int,
    seed: int,
    n_inputs: int,
    n_hidden: int,
    stride: int = 1,
) -> dict[str, Any]:
    rng = random.Random(seed)
    rows: list[dict[str, Any]] = []
    for problem in classic_problems()[::stride]:
        props = sound_properties(box, problem, problem.properties)
        public = set(problem.public_inputs)
        inputs = [x for x in draw_inputs(problem.strategy or "", n_inputs, seed=seed) if x not in public]
        hidden = Hidden(box, problem, n_hidden, seed)
        for mutant in mutant_suite(per_problem, seed=seed, problems=[problem]):
            if hidden.passes(mutant.source):
                continue  # equivalent on the hidden pool: no bug to catch
            run = box.run(
                mutant.source,
                problem.entry_point,
                problem.public_inputs + inputs,
                expected=problem.public_expected + [None] * len(inputs),
                properties=props,
            )
            n_public = len(problem.public_inputs)
            row: dict[str, Any] = {
                "mutant": mutant.name,
                "public": any(c.kind != "pass" for c in run.cases[:n_public]),
                "pgs": not run.passed,
                "property": any(c.kind == "property_violation" for c in run.cases),
            }
            if row["pgs"]:
                picks = {
                    "min_token": min_token_failure(run.failures, count),
                    "random": random_failure(run.failures, rng),
                    "hypothesis": box.shrink(
                        mutant.source, problem.entry_point, problem.strategy or "", props, max_examples=100
                    ),
                }
                found = {name: case for name, case in picks.items() if case is not None}
                traced = box.run(mutant.source, problem.entry_point, [c.input for c in found.values()], trace=True)
                lines = dict(zip(found, (c.lines or () for c in traced.cases), strict=True))
                for name in CHOICES:
                    case = found.get(name)
                    row[f"{name}_tokens"] = float("nan") if case is None else count([case.input])[0]
                    row[f"{name}_covers"] = float("nan") if case is None else float(mutant.line in lines[name])
            rows.append(row)
    return {"rows": rows}


def _mean(values: list[float]) -> float:
    clean = [v for v in values if not math.isnan(v)]
    return statistics.fmean(clean) if clean else float("nan")


def summarise_part1(per_seed: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], dict[str, float]]:
    """Per-seed table rows and pooled figures."""
    table, pooled_rows = [], []
    for seed, result in enumerate(per_seed):
        rows = result["rows"]
        pooled_rows += rows
        caught = [r for r in rows if r["pgs"]]
        table.append({
            "seed": seed, "bugs": len(rows), "public caught": sum(r["public"] for r in rows),
            "PGS caught": len(caught), "property caught": sum(r["property"] for r in rows),
            **{f"{c} tokens": _mean([r[f"{c}_tokens"] for r in caught]) for c in CHOICES},
            **{f"{c} covers": _mean([r[f"{c}_covers"] for r in caught]) for c in CHOICES},
        })  # fmt: skip
    caught = [r for r in pooled_rows if r["pgs"]]
    public = sum(r["public"] for r in pooled_rows)
    figures = {
        "bugs": float(len(pooled_rows)),
        "public_caught": float(public),
        "pgs_caught": float(len(caught)),
        "catch_ratio": len(caught) / public if public else float("inf") if caught else float("nan"),
        "hypothesis_found": float(sum(not math.isnan(r["hypothesis_tokens"]) for r in caught)),
    }
    for c in CHOICES:
        figures[f"{c}_tokens"] = _mean([r[f"{c}_tokens"] for r in caught])
        figures[f"{c}_covers"] = _mean([r[f"{c}_covers"] for r in caught])
    figures["min_token_vs_random"] = figures["min_token_tokens"] / figures["random_tokens"]
    figures["hypothesis_vs_random"] = figures["hypothesis_tokens"] / figures["random_tokens"]
    ratios = [row["PGS caught"] / row["public caught"] for row in table if row["public caught"]]
    figures["catch_ratio_seed_sd"] = statistics.stdev(ratios) if len(ratios) > 1 else float("nan")
    return table, figures


def load_model(path: str | None) -> HFCausalLM:
    if path is None:
        return smollm2(batch_size=1)
    transformers = require("transformers", extra="llm", purpose="--model")
    tok = transformers.AutoTokenizer.from_pretrained(path)
    model = transformers.AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32).eval()
    return HFCausalLM(model, tok, batch_size=1)


def part2(box: Sandbox, lm: HFCausalLM, n_mutants: int, refinements: int, tokens: int, seed: int) -> dict[str, Any]:
    gen = LLMGenerator(lm, max_new_tokens=tokens)
    rng = random.Random(seed)
    problems = classic_problems()
    rng.shuffle(problems)
    chosen: list[tuple[Mutant, Hidden]] = []
    for problem in problems:  # one non-equivalent mutant per problem, in a seeded order
        hidden = Hidden(box, problem, 96, seed)
        for mutant in mutant_suite(3, seed=seed, problems=[problem]):
            if not hidden.passes(mutant.source):
                chosen.append((mutant, hidden))
                break
        if len(chosen) == n_mutants:
            break
    methods = {
        "PGS": PGSRefiner(gen, ReferenceTester(seed), box, max_refinements=refinements),
        "Self-Debug": SelfDebug(gen, box, max_refinements=refinements),
        "Direct": DirectGeneration(gen, box),
    }
    out: dict[str, Any] = {}
    for name, method in methods.items():
        fix, pass1, cx = FixRate(), PassAtK(k=1), CounterexampleTokens()
        start, calls, n_cx = time.perf_counter(), 0, 0
        for mutant, hidden in chosen:
            result = method.refine(mutant.problem, None if name == "Direct" else mutant.source)
            final = hidden.passes(result.program)
            fix.update(torch.tensor([False]), torch.tensor([final]))
            pass1.update(torch.tensor([1]), torch.tensor([int(final)]))
            steps = [s.counterexample_tokens for s in result.steps if s.counterexample is not None]
            if steps:
                cx.update(torch.tensor(steps))
                n_cx += 1
            calls += result.refinements + (1 if name == "Direct" else 0)
        out[name] = {
            "fix_rate": float(fix.compute()), "pass@1": float(pass1.compute()),
            "counterexample_tokens": float(cx.compute()) if n_cx else float("nan"), "generator_calls": calls,
            "seconds": time.perf_counter() - start,
        }  # fmt: skip
    out["mutants"] = [m.name for m, _ in chosen]
    return out


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
    box = Sandbox(case_seconds=0.25, cpu_seconds=20, memory_mb=512, wall_seconds=30, isolation=args.isolation)
    lm = load_model(args.model)
    start = time.perf_counter()
    per_seed = [
        part1(box, lm.count_tokens, per_problem, args.seed + s, 64, n_hidden, 2 if args.quick else 1)
        for s in range(seeds)
    ]
    table, p1 = summarise_part1(per_seed)
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
        p2 = part2(box, lm, n_mutants, refinements, new_tokens, args.seed)
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
