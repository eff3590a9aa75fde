"""PGS's two studies on the seeded mutant suite: which bugs its checks catch, and how well it repairs them.

* :func:`pgs_detection_task` (settings :class:`PgsDetectionConfig`, no generation): per non-equivalent mutant,
  whether the public tests and the PGS checks (public tests plus the reference's sound properties, on
  Hypothesis-drawn inputs) catch it; the size in tokens of the counterexample chosen by min-token selection, by
  Hypothesis shrinking and at random; and whether each executes the mutated line (traced in the sandbox).
  A Hypothesis search that stops at the sandbox's limits (a mutant that hangs on every input spends the CPU
  budget on shrinking steps) gives no counterexample; the row says so (``hypothesis_incomplete``) and
  :func:`summarise_detection` counts it. :func:`summarise_detection` pools the rows of several seeds.
* :func:`pgs_comparison_task` (settings :class:`PgsComparisonConfig`): PGS, Self-Debug and direct generation with
  one language model and the same refinement budget, judged on a hidden pool of inputs: fix rate and pass@1.

Equivalent mutants (passing the hidden judge, drawn apart from every input a method sees) are left out.
"""

from __future__ import annotations

import math
import random
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from lightning_icml26.algorithms.pgs import (
    CaseResult,
    CodeProblem,
    DirectGeneration,
    LLMGenerator,
    PGSRefiner,
    ReferenceTester,
    Sandbox,
    SelfDebug,
    ShrinkIncompleteError,
    draw_inputs,
    min_token_failure,
    random_failure,
    sound_properties,
)
from lightning_icml26.data.pgs import Mutant, classic_problems, mutant_suite
from lightning_icml26.llm import LanguageModel
from lightning_icml26.metrics import CounterexampleTokens, FixRate, PassAtK
from lightning_icml26.tasks._config import TaskConfig
from lightning_icml26.tasks.pgs_mutants import _hidden

__all__ = [
    "COUNTEREXAMPLE_CHOICES",
    "PgsComparisonConfig",
    "PgsDetectionConfig",
    "pgs_comparison_task",
    "pgs_detection_task",
    "summarise_detection",
]

COUNTEREXAMPLE_CHOICES = ("min_token", "hypothesis", "random")
"""How a counterexample is chosen among the failing inputs: fewest tokens, Hypothesis shrinking, at random."""


def _sandbox(isolation: str) -> Sandbox:
    return Sandbox(case_seconds=0.25, cpu_seconds=20, memory_mb=512, wall_seconds=30, isolation=isolation)


class _Judge:
    """The hidden judge of a problem: public tests plus reference outputs on a separate input pool."""

    def __init__(self, box: Sandbox, problem: CodeProblem, n: int, seed: int) -> None:
        self.inputs, self.expected = _hidden(box, problem, n, seed)
        self.box, self.problem = box, problem

    def passes(self, program: str) -> bool:
        return self.box.run(program, self.problem.entry_point, self.inputs, expected=self.expected).passed


@dataclass(frozen=True)
class PgsDetectionConfig(TaskConfig):
    """Settings of :func:`pgs_detection_task` (no generation; a tokenizer counts counterexample tokens).

    Attributes:
        counter: counts tokens (``count_tokens(texts) -> list[int]``), e.g. a
            :class:`~lightning_icml26.llm.LanguageModel`; ``None`` counts whitespace words.
        per_problem: mutants drawn per problem.
        seed: seed of the mutant sample, the inputs and the random choice.
        num_inputs: Hypothesis-drawn inputs the PGS checks run on.
        n_hidden: inputs drawn for the hidden judge.
        stride: every ``stride``-th problem of the suite (1: all 30).
        isolation: the sandbox's isolation (``"bwrap"`` or ``"process"``).

    Example:
        >>> PgsDetectionConfig(stride=0)
        Traceback (most recent call last):
        ...
        ValueError: PgsDetectionConfig.stride must be >= 1, got 0
    """

    counter: Any = None
    per_problem: int = 2
    seed: int = 0
    num_inputs: int = 64
    n_hidden: int = 96
    stride: int = 1
    isolation: str = "bwrap"

    def __post_init__(self) -> None:
        for name in ("per_problem", "num_inputs", "n_hidden", "stride"):
            if getattr(self, name) < 1:
                raise ValueError(f"PgsDetectionConfig.{name} must be >= 1, got {getattr(self, name)}")

    def count(self, texts: Sequence[str]) -> list[int]:
        """Token counts of ``texts`` by ``counter`` (whitespace words without one)."""
        return [len(t.split()) for t in texts] if self.counter is None else list(self.counter.count_tokens(texts))

    def run(self) -> dict[str, Any]:
        """Run :func:`pgs_detection_task` with these settings."""
        return pgs_detection_task(self)


def _shrunk(box: Sandbox, mutant: Mutant, props: Any, row: dict[str, Any]) -> CaseResult | None:
    """Hypothesis's shrunk failing input, or ``None``; ``row["hypothesis_incomplete"]`` says if the search stopped."""
    problem = mutant.problem
    try:
        found = box.shrink(mutant.source, problem.entry_point, problem.strategy or "", props, max_examples=100)
    except ShrinkIncompleteError:  # a mutant that hangs on every input spends the child's CPU on shrinking
        row["hypothesis_incomplete"] = True
        return None
    row["hypothesis_incomplete"] = False
    return found


def _catch_row(
    config: PgsDetectionConfig, box: Sandbox, mutant: Mutant, checks: tuple[Any, list[str]], rng: random.Random
) -> dict[str, Any]:
    problem, (props, inputs) = mutant.problem, checks
    run = box.run(mutant.source, problem.entry_point, problem.public_inputs + inputs,
                  expected=problem.public_expected + [None] * len(inputs), properties=props)  # fmt: skip
    n_public = len(problem.public_inputs)
    row: dict[str, Any] = {
        "mutant": mutant.name,
        "public": any(c.kind != "pass" for c in run.cases[:n_public]),
        "pgs": not run.passed,
        "property": any(c.kind == "property_violation" for c in run.cases),
    }
    if row["pgs"]:
        picks = {
            "min_token": min_token_failure(run.failures, config.count),
            "random": random_failure(run.failures, rng),
            "hypothesis": _shrunk(box, mutant, props, row),
        }
        found = {name: case for name, case in picks.items() if case is not None}
        traced = box.run(mutant.source, problem.entry_point, [c.input for c in found.values()], trace=True)
        lines = dict(zip(found, (c.lines or () for c in traced.cases), strict=True))
        for name in COUNTEREXAMPLE_CHOICES:
            case = found.get(name)
            row[f"{name}_tokens"] = float("nan") if case is None else config.count([case.input])[0]
            row[f"{name}_covers"] = float("nan") if case is None else float(mutant.line in lines[name])
    return row


def pgs_detection_task(config: PgsDetectionConfig) -> dict[str, Any]:
    """One row per non-equivalent mutant: caught by the public tests, by PGS, by a property; counterexamples.

    Args:
        config: the settings (:class:`PgsDetectionConfig`).

    Returns:
        ``{"rows": [...]}``; a caught mutant's row also has ``<choice>_tokens`` and ``<choice>_covers`` per
        :data:`COUNTEREXAMPLE_CHOICES` (``nan`` where that choice found no counterexample).

    Example:
        >>> rows = PgsDetectionConfig(per_problem=1, num_inputs=8, n_hidden=16, stride=15).run()["rows"]
        >>> len(rows), "pgs" in rows[0]
        (2, True)
    """
    box, rng = _sandbox(config.isolation), random.Random(config.seed)
    rows: list[dict[str, Any]] = []
    for problem in classic_problems()[:: config.stride]:
        props = sound_properties(box, problem, problem.properties)
        public = set(problem.public_inputs)
        inputs = [
            x for x in draw_inputs(problem.strategy or "", config.num_inputs, seed=config.seed) if x not in public
        ]
        judge = _Judge(box, problem, config.n_hidden, config.seed)
        for mutant in mutant_suite(config.per_problem, seed=config.seed, problems=[problem]):
            if not judge.passes(mutant.source):  # an equivalent mutant has no bug to catch
                rows.append(_catch_row(config, box, mutant, (props, inputs), rng))
    return {"rows": rows}


def _mean(values: list[float]) -> float:
    clean = [v for v in values if not math.isnan(v)]
    return statistics.fmean(clean) if clean else float("nan")


def _seed_row(seed: int, rows: list[dict[str, Any]]) -> dict[str, Any]:
    caught = [r for r in rows if r["pgs"]]
    return {
        "seed": seed, "bugs": len(rows), "public caught": sum(r["public"] for r in rows),
        "PGS caught": len(caught), "property caught": sum(r["property"] for r in rows),
        **{f"{c} tokens": _mean([r[f"{c}_tokens"] for r in caught]) for c in COUNTEREXAMPLE_CHOICES},
        **{f"{c} covers": _mean([r[f"{c}_covers"] for r in caught]) for c in COUNTEREXAMPLE_CHOICES},
    }  # fmt: skip


def summarise_detection(per_seed: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], dict[str, float]]:
    """Per-seed table rows and figures pooled over the seeds' rows of :func:`pgs_detection_task`.

    ``catch_ratio`` is PGS-caught over public-caught bugs; ``min_token_vs_random`` the ratio of mean counterexample
    tokens; ``catch_ratio_seed_sd`` the standard deviation of the per-seed catch ratio.

    Example:
        >>> rows = [{"public": p, "pgs": True, "property": not p, **{f"{c}_{k}": t for c in COUNTEREXAMPLE_CHOICES
        ...          for k in ("tokens", "covers")}} for p, t in ((True, 4.0), (False, 8.0))]
        >>> table, figures = summarise_detection([{"rows": rows}])
        >>> figures["catch_ratio"], figures["min_token_tokens"], figures["min_token_vs_random"]
        (2.0, 6.0, 1.0)
    """
    table = [_seed_row(seed, result["rows"]) for seed, result in enumerate(per_seed)]
    pooled = [row for result in per_seed for row in result["rows"]]
    caught = [r for r in pooled if r["pgs"]]
    public = sum(r["public"] for r in pooled)
    figures = {
        "bugs": float(len(pooled)),
        "public_caught": float(public),
        "pgs_caught": float(len(caught)),
        "catch_ratio": len(caught) / public if public else float("inf") if caught else float("nan"),
        "hypothesis_found": float(sum(not math.isnan(r["hypothesis_tokens"]) for r in caught)),
        "hypothesis_incomplete": float(sum(r.get("hypothesis_incomplete", False) for r in caught)),
    }
    for c in COUNTEREXAMPLE_CHOICES:
        figures[f"{c}_tokens"] = _mean([r[f"{c}_tokens"] for r in caught])
        figures[f"{c}_covers"] = _mean([r[f"{c}_covers"] for r in caught])
    figures["min_token_vs_random"] = figures["min_token_tokens"] / figures["random_tokens"]
    figures["hypothesis_vs_random"] = figures["hypothesis_tokens"] / figures["random_tokens"]
    ratios = [row["PGS caught"] / row["public caught"] for row in table if row["public caught"]]
    figures["catch_ratio_seed_sd"] = statistics.stdev(ratios) if len(ratios) > 1 else float("nan")
    return table, figures


@dataclass(frozen=True)
class PgsComparisonConfig(TaskConfig):
    """Settings of :func:`pgs_comparison_task`: PGS, Self-Debug and direct generation with one language model.

    Attributes:
        model: the generator's :class:`~lightning_icml26.llm.LanguageModel`.
        n_mutants: one non-equivalent mutant from each of this many problems (in a seeded order).
        refinements: the refinement budget of PGS and Self-Debug.
        max_new_tokens: generation length.
        seed: seed of the problem order, the mutants and PGS's tester.
        isolation: the sandbox's isolation (``"bwrap"`` or ``"process"``).

    Example:
        >>> PgsComparisonConfig(model=None)
        Traceback (most recent call last):
        ...
        TypeError: PgsComparisonConfig.model must be a LanguageModel, got None
    """

    model: LanguageModel | None = None
    n_mutants: int = 3
    refinements: int = 5
    max_new_tokens: int = 96
    seed: int = 0
    isolation: str = "bwrap"

    def __post_init__(self) -> None:
        if not isinstance(self.model, LanguageModel):
            raise TypeError(f"PgsComparisonConfig.model must be a LanguageModel, got {self.model!r}")

    def run(self) -> dict[str, Any]:
        """Run :func:`pgs_comparison_task` with these settings."""
        return pgs_comparison_task(self)


def _chosen(box: Sandbox, n_mutants: int, seed: int) -> list[tuple[Mutant, _Judge]]:
    problems = classic_problems()
    random.Random(seed).shuffle(problems)
    chosen: list[tuple[Mutant, _Judge]] = []
    for problem in problems:  # one non-equivalent mutant per problem, in a seeded order
        judge = _Judge(box, problem, 96, seed)
        for mutant in mutant_suite(3, seed=seed, problems=[problem]):
            if not judge.passes(mutant.source):
                chosen.append((mutant, judge))
                break
        if len(chosen) == n_mutants:
            break
    return chosen


def _score(name: str, method: Any, chosen: list[tuple[Mutant, _Judge]]) -> dict[str, float]:
    fix, pass1, cx = FixRate(), PassAtK(k=1), CounterexampleTokens()
    start, calls, n_cx = time.perf_counter(), 0, 0
    for mutant, judge in chosen:
        result = method.refine(mutant.problem, None if name == "Direct" else mutant.source)
        final = judge.passes(result.program)
        fix.update(torch.tensor([False]), torch.tensor([final]))
        pass1.update(torch.tensor([1]), torch.tensor([int(final)]))
        steps = [s.counterexample_tokens for s in result.steps if s.counterexample is not None]
        if steps:
            cx.update(torch.tensor(steps))
            n_cx += 1
        calls += result.refinements + (1 if name == "Direct" else 0)
    return {
        "fix_rate": float(fix.compute()), "pass@1": float(pass1.compute()),
        "counterexample_tokens": float(cx.compute()) if n_cx else float("nan"), "generator_calls": calls,
        "seconds": time.perf_counter() - start,
    }  # fmt: skip


def pgs_comparison_task(config: PgsComparisonConfig) -> dict[str, Any]:
    """Repair the chosen mutants with PGS (reference tester), Self-Debug and direct generation.

    Args:
        config: the settings (:class:`PgsComparisonConfig`).

    Returns:
        Per method (``"PGS"``, ``"Self-Debug"``, ``"Direct"``) its ``fix_rate``, ``pass@1``,
        ``counterexample_tokens``, ``generator_calls`` and ``seconds``; ``"mutants"``: the mutants' names.

    Example:
        ``PgsComparisonConfig(model=smollm2(), n_mutants=1, refinements=1).run()`` generates code with SmolLM2
        (minutes on a CPU); without a model the settings are refused:

        >>> PgsComparisonConfig()
        Traceback (most recent call last):
        ...
        TypeError: PgsComparisonConfig.model must be a LanguageModel, got None
    """
    box = _sandbox(config.isolation)
    assert config.model is not None  # checked by PgsComparisonConfig
    gen = LLMGenerator(config.model, max_new_tokens=config.max_new_tokens)
    chosen = _chosen(box, config.n_mutants, config.seed)
    methods = {
        "PGS": PGSRefiner(gen, ReferenceTester(config.seed), box, max_refinements=config.refinements),
        "Self-Debug": SelfDebug(gen, box, max_refinements=config.refinements),
        "Direct": DirectGeneration(gen, box),
    }
    out: dict[str, Any] = {name: _score(name, method, chosen) for name, method in methods.items()}
    out["mutants"] = [m.name for m, _ in chosen]
    return out
