"""``pgs_mutants_task``: repair the mutant suite's bugs with PGS or a baseline and judge the results.

Every mutant starts as the program to repair. The final program is judged against the reference on the
public tests plus a hidden pool of inputs drawn apart from the ones the method sees; mutants that pass
the hidden judge from the start (equivalent mutants) are left out.

Generators: ``"smollm2"`` (SmolLM2-135M-Instruct through :class:`~lightning_icml26.algorithms.pgs.LLMGenerator`),
any :class:`~lightning_icml26.llm.LanguageModel`, or ``"oracle"``: a mock that returns the reference
program with probability ``exp(-feedback_tokens / repair_scale)`` per refinement (seeded). The mock
exercises the loop, the budget and the metrics quickly; its figures say nothing about a real model.
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from lightning_icml26._requirements import Requirement, declare_requirements
from lightning_icml26.algorithms.pgs import (
    CodeProblem,
    DirectGeneration,
    GeneratorRole,
    LLMGenerator,
    PGSRefiner,
    ReferenceTester,
    ReflexionRefiner,
    Sandbox,
    SelfDebug,
    SelfEditRefiner,
    draw_inputs,
)
from lightning_icml26.data.pgs import mutant_suite
from lightning_icml26.llm import LanguageModel, smollm2
from lightning_icml26.metrics import CounterexampleTokens, FixRate, PassAtK
from lightning_icml26.tasks._config import TaskConfig

__all__ = ["METHODS", "PgsMutantsConfig", "RepairOracle", "pgs_mutants_task"]

METHODS = ("pgs", "self_debug", "reflexion", "self_edit", "direct")
"""The refinement methods the task runs."""


class RepairOracle:
    r"""A mock generator that knows the reference programs and repairs with a chance falling in feedback size.

    Args:
        scale: repair probability per refinement is ``exp(-tokens / scale)``, tokens = whitespace words of
            the feedback.
        seed: seed of the draws.

    Example:
        >>> problem = CodeProblem("inc", "inc", "Add one.", "def inc(n):", (("(1,)", "2"),),
        ...                       reference="def inc(n):\n    return n + 1")
        >>> RepairOracle(scale=1e9).refine(problem, "def inc(n):\n    return n", "It returned 1.")
        'def inc(n):\n    return n + 1'
    """

    def __init__(self, scale: float = 20.0, seed: int = 0) -> None:
        if not scale > 0:
            raise ValueError(f"scale must be positive, got {scale!r}")
        self.scale = float(scale)
        self._rng = random.Random(seed)

    def generate(self, problem: CodeProblem) -> str:
        """A stub that returns ``None`` (never passes)."""
        return f"def {problem.entry_point}(*args):\n    return None\n"

    def refine(self, problem: CodeProblem, program: str, feedback: str) -> str:
        """The reference with probability ``exp(-tokens / scale)``, else the same program."""
        chance = math.exp(-self.count_tokens([feedback])[0] / self.scale)
        return problem.reference or program if self._rng.random() < chance else program

    def reflect(self, problem: CodeProblem, program: str, feedback: str) -> str:
        """No reflection."""
        return ""

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        """Whitespace-separated words."""
        return [len(t.split()) for t in texts]


def _hidden(box: Sandbox, problem: CodeProblem, n: int, seed: int) -> tuple[list[str], list[str | None]]:
    public = set(problem.public_inputs)
    pool = [x for x in draw_inputs(problem.strategy or "", n, seed=10_000 + seed) if x not in public]
    ref = box.run(problem.reference or "", problem.entry_point, pool)
    keep = [(x, c.output) for x, c in zip(pool, ref.cases, strict=True) if c.kind == "pass"]
    return problem.public_inputs + [x for x, _ in keep], [*problem.public_expected, *(o for _, o in keep)]


@declare_requirements(
    lambda args: [
        *([Requirement("hypothesis", "pgs", "Hypothesis shrinking")] if args["minimiser"] == "hypothesis" else []),
        *([Requirement("transformers", "llm", "the SmolLM2 generator")] if args["generator"] == "smollm2" else []),
    ]
)
@dataclass(frozen=True)
class PgsMutantsConfig(TaskConfig):
    """Settings of :func:`pgs_mutants_task` (the ``pgs_mutants`` recipe); ``run()`` runs it.

    Args:
        out_dir: where ``pgs_mutants.json`` is written (nothing written when ``None``).
        generator: ``"oracle"``, ``"smollm2"`` or a ``LanguageModel``.
        method: one of :data:`METHODS`.
        per_problem: mutants drawn per problem.
        n_mutants: keep at most this many non-equivalent mutants (``None``: all).
        max_refinements: the budget (shared by every method except ``direct``).
        num_properties: PGS's candidate properties.
        num_inputs: PGS's synthesized inputs.
        minimiser: PGS's counterexample choice (``tokens``, ``hypothesis``, ``random``).
        repair_scale: the oracle's scale.
        max_new_tokens: generation length of a language-model generator.
        n_hidden: inputs drawn for the hidden judge.
        seed: seed of the mutant sample, the inputs and the oracle.
        isolation: the sandbox's isolation, ``"bwrap"`` (namespaces; needs bubblewrap) or ``"process"``
            (weaker, warns); see :class:`~lightning_icml26.algorithms.pgs.Sandbox`.

    Raises:
        ValueError: if ``method`` or ``generator`` is unknown.

    Example:
        >>> PgsMutantsConfig(method="reflexion").max_refinements
        5
        >>> PgsMutantsConfig(method="ldb")
        Traceback (most recent call last):
        ...
        ValueError: method must be one of ('pgs', 'self_debug', 'reflexion', 'self_edit', 'direct'), got 'ldb'
    """

    out_dir: str | Path | None = None
    generator: str | LanguageModel = "oracle"
    method: str = "pgs"
    per_problem: int = 1
    n_mutants: int | None = None
    max_refinements: int = 5
    num_properties: int = 5
    num_inputs: int = 64
    minimiser: str = "tokens"
    repair_scale: float = 20.0
    max_new_tokens: int = 192
    n_hidden: int = 96
    seed: int = 0
    isolation: str = "bwrap"

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise ValueError(f"method must be one of {METHODS}, got {self.method!r}")
        if isinstance(self.generator, str) and self.generator not in ("oracle", "smollm2"):
            raise ValueError(f"generator must be 'oracle', 'smollm2' or a LanguageModel, got {self.generator!r}")

    def run(self) -> dict[str, float]:
        """Run :func:`pgs_mutants_task` with these settings."""
        return pgs_mutants_task(self)


def _refiner(config: PgsMutantsConfig, box: Sandbox) -> Any:
    """The repair method of ``config.method`` with its generator."""
    c = config
    gen: GeneratorRole
    if c.generator == "oracle":
        gen = RepairOracle(c.repair_scale, c.seed)
    else:
        model = smollm2(batch_size=1) if isinstance(c.generator, str) else c.generator
        gen = LLMGenerator(model, max_new_tokens=c.max_new_tokens)
    if c.method == "pgs":
        tester = ReferenceTester(c.seed)
        return PGSRefiner(gen, tester, box, c.num_properties, c.num_inputs, c.max_refinements, c.minimiser, c.seed)
    if c.method == "direct":
        return DirectGeneration(gen, box)
    kind = {"self_debug": SelfDebug, "reflexion": ReflexionRefiner, "self_edit": SelfEditRefiner}[c.method]
    return kind(gen, box, c.max_refinements)


class _Scores:
    """The running figures over the judged mutants."""

    def __init__(self) -> None:
        self.fix, self.pass1, self.initial, self.tokens = FixRate(), PassAtK(k=1), PassAtK(k=1), CounterexampleTokens()
        self.judged, self.refinements = 0, 0

    def add(self, result: Any, final: bool) -> None:
        one = torch.ones(1, dtype=torch.long)
        self.fix.update(torch.tensor([False]), torch.tensor([final]))
        self.pass1.update(one, torch.tensor([int(final)]))
        self.initial.update(one, torch.tensor([0]))
        sizes = [s.counterexample_tokens for s in result.steps if s.counterexample is not None]
        if sizes:
            self.tokens.update(torch.tensor(sizes))
        self.judged += 1
        self.refinements += result.refinements

    def figures(self) -> dict[str, float]:
        return {
            "mutants": float(self.judged),
            "fix_rate": float(self.fix.compute()),
            "pass@1": float(self.pass1.compute()),
            "initial_pass@1": float(self.initial.compute()),
            "counterexample_tokens": float(self.tokens.compute()) if int(self.tokens.count) else float("nan"),
            "mean_refinements": self.refinements / self.judged if self.judged else float("nan"),
        }


def pgs_mutants_task(config: PgsMutantsConfig) -> dict[str, float]:
    """Repair mutants with one method; report fix rate, pass@1 and counterexample size.

    Args:
        config: the settings (:class:`PgsMutantsConfig`).

    Returns:
        ``{"mutants", "fix_rate", "pass@1", "initial_pass@1", "counterexample_tokens", "mean_refinements"}``.

    Raises:
        ValueError: if ``isolation`` is unknown.
        SandboxUnavailableError: if ``isolation="bwrap"`` cannot run here (the message says how to fix it).

    Example:
        >>> out = pgs_mutants_task(PgsMutantsConfig(n_mutants=3, method="pgs", num_inputs=16, n_hidden=24))
        >>> out["mutants"], 0.0 <= out["fix_rate"] <= 1.0
        (3.0, True)
    """
    box = Sandbox(case_seconds=1.0, cpu_seconds=20, wall_seconds=60, isolation=config.isolation)
    refiner = _refiner(config, box)
    scores = _Scores()
    hidden_cache: dict[str, tuple[list[str], list[str | None]]] = {}
    for mutant in mutant_suite(config.per_problem, seed=config.seed):
        problem = mutant.problem
        if problem.name not in hidden_cache:
            hidden_cache[problem.name] = _hidden(box, problem, config.n_hidden, config.seed)
        inputs, expected = hidden_cache[problem.name]
        if box.run(mutant.source, problem.entry_point, inputs, expected=expected).passed:
            continue  # equivalent mutant
        result = refiner.refine(problem, mutant.source)
        scores.add(result, box.run(result.program, problem.entry_point, inputs, expected=expected).passed)
        if config.n_mutants is not None and scores.judged >= config.n_mutants:
            break
    out = scores.figures()
    if config.out_dir is not None:
        path = Path(config.out_dir)
        path.mkdir(parents=True, exist_ok=True)
        (path / "pgs_mutants.json").write_text(json.dumps({"method": config.method, **out}, indent=2))
    return out
