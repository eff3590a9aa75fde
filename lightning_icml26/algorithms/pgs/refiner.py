"""The PGS refinement loop, on a shared base that the debugging baselines also use.

:class:`PGSRefiner` runs the paper's loop: the Tester proposes properties (kept only when they hold on
every public test) and inputs; the program is run, in the sandbox, on the public tests (checked against
their expected outputs) and on the synthesized inputs, with every kept property asserted on every result;
if anything fails, the Generator gets the failing input with the fewest tokens under its own tokenizer,
what the program returned or raised there, and the violated property, and revises the program; at most
``max_refinements`` times.

Deviations, written down: the Tester is asked for properties and inputs once per problem (the paper's
pseudo-code asks inside the loop; with a deterministic tester this is the same thing); with
``minimiser="hypothesis"`` the counterexample is Hypothesis's shrunk failing input from the problem's
strategy (a design option, not the paper's pool selection), falling back to the min-token pick when
Hypothesis finds none or its search stops at a sandbox limit (:class:`ShrinkIncompleteError`, e.g. a program
that hangs on every input spends the CPU budget on shrinking steps).
"""

from __future__ import annotations

import random
from abc import ABC, abstractmethod
from dataclasses import dataclass, field

from lightning_icml26.algorithms.pgs.minimise import min_token_failure, random_failure
from lightning_icml26.algorithms.pgs.problem import CodeProblem, call_text
from lightning_icml26.algorithms.pgs.properties import sound_properties
from lightning_icml26.algorithms.pgs.roles import GeneratorRole, TesterRole
from lightning_icml26.algorithms.pgs.sandbox import CaseResult, RunResult, Sandbox, ShrinkIncompleteError

__all__ = ["MINIMISERS", "PGSRefiner", "RefinementResult", "RefinementStep", "describe_failure", "sandbox_for"]

MINIMISERS = ("tokens", "hypothesis", "random")
"""Counterexample choices: fewest tokens (the paper), Hypothesis shrinking, a uniformly random failure."""


@dataclass(frozen=True)
class RefinementStep:
    """One evaluation of a program inside the loop.

    Attributes:
        program: the program evaluated.
        failures: how many cases failed.
        counterexample: the case reported (``None`` when nothing failed or no feedback was given).
        counterexample_tokens: its input's token count under the generator's tokenizer (0 without one).
        feedback: the text sent to the generator (``""`` on the last step).
    """

    program: str
    failures: int
    counterexample: CaseResult | None = None
    counterexample_tokens: int = 0
    feedback: str = ""


@dataclass
class RefinementResult:
    """What a refiner returns.

    Attributes:
        program: the final program.
        passed: whether the final program passed the refiner's own checks.
        initially_passed: whether the first program did.
        refinements: how many times the generator revised the program.
        steps: one :class:`RefinementStep` per evaluation.
        properties: the properties that were used (PGS only).
    """

    program: str
    passed: bool
    initially_passed: bool
    refinements: int
    steps: list[RefinementStep] = field(default_factory=list)
    properties: list[tuple[str, str]] = field(default_factory=list)


def describe_failure(entry_point: str, case: CaseResult, properties: dict[str, str] | None = None) -> str:
    """Feedback text for one failing case (input, what happened, and the violated property's source).

    Example:
        >>> case = CaseResult("([2, 1],)", "property_violation", output="[2, 1]", error="AssertionError: order",
        ...                   property="sorted_out")
        >>> print(describe_failure("f", case, {"sorted_out": "def sorted_out(args, result): ..."}))
        Your code fails on the input f([2, 1]).
        It returned [2, 1].
        This violates the property `sorted_out` (AssertionError: order):
        def sorted_out(args, result): ...
    """
    lines = [f"Your code fails on the input {call_text(entry_point, case.input)}."]
    if case.kind == "timeout":
        lines.append(f"It did not finish in time ({case.error}).")
    elif case.kind == "runtime_error":
        lines.append(f"It raised {case.error}.")
    else:
        lines.append(f"It returned {case.output}.")
    if case.kind == "wrong_answer":
        lines.append(f"The expected result is {case.expected}.")
    if case.kind == "property_violation":
        lines.append(f"This violates the property `{case.property}` ({case.error}):")
        if properties and case.property in properties:
            lines.append(properties[case.property])
    return "\n".join(lines)


def sandbox_for(sandbox: Sandbox | None, isolation: str | None = None) -> Sandbox:
    """``sandbox``, or a default ``Sandbox(isolation=...)`` when it is ``None`` (``isolation`` default ``"bwrap"``).

    Raises:
        ValueError: if both are given and ``isolation`` is not the sandbox's own, or ``isolation`` is unknown.

    Example:
        >>> sandbox_for(None).isolation
        'bwrap'
    """
    if sandbox is None:
        return Sandbox(isolation="bwrap" if isolation is None else isolation)
    if isolation is not None and isolation != sandbox.isolation:
        raise ValueError(f"isolation={isolation!r} contradicts the given sandbox's isolation={sandbox.isolation!r}")
    return sandbox


def _positive_int(name: str, value: int, minimum: int = 1) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{name} must be an int >= {minimum}, got {value!r}")


class _Refiner(ABC):
    """The loop shared by PGS and the baselines: evaluate, stop on success, else feed back and revise."""

    def __init__(
        self,
        generator: GeneratorRole,
        sandbox: Sandbox | None,
        max_refinements: int,
        min_budget: int = 1,
        isolation: str | None = None,
    ) -> None:
        if not isinstance(generator, GeneratorRole):
            raise TypeError(f"generator must follow the GeneratorRole protocol, got {type(generator).__name__}")
        _positive_int("max_refinements", max_refinements, minimum=min_budget)
        self.generator = generator
        self.sandbox = sandbox_for(sandbox, isolation)
        self.max_refinements = max_refinements

    def _public_run(self, problem: CodeProblem, program: str) -> RunResult:
        return self.sandbox.run(program, problem.entry_point, problem.public_inputs, expected=problem.public_expected)

    def _prepare(self, problem: CodeProblem) -> list[tuple[str, str]]:
        return []

    def _evaluate(self, problem: CodeProblem, program: str) -> RunResult:
        return self._public_run(problem, program)

    @abstractmethod
    def _feedback(self, problem: CodeProblem, program: str, run: RunResult) -> tuple[str, CaseResult | None]:
        """The feedback text for a failing ``run`` of ``program`` and the failing case it is about (if any)."""

    def _revise(self, problem: CodeProblem, program: str, feedback: str) -> str:
        return self.generator.refine(problem, program, feedback)

    def refine(self, problem: CodeProblem, program: str | None = None) -> RefinementResult:
        """Run the loop on ``problem`` from ``program`` (default: the generator's first program).

        Raises:
            TypeError: if ``problem`` is not a ``CodeProblem``.
        """
        if not isinstance(problem, CodeProblem):
            raise TypeError(f"problem must be a CodeProblem, got {type(problem).__name__}")
        current = self.generator.generate(problem) if program is None else program
        properties = self._prepare(problem)
        result = RefinementResult(current, False, False, 0, properties=properties)
        for attempt in range(self.max_refinements + 1):
            run = self._evaluate(problem, current)
            if attempt == 0:
                result.initially_passed = run.passed
            if run.passed or attempt == self.max_refinements:
                result.steps.append(RefinementStep(current, len(run.failures)))
                result.program, result.passed = current, run.passed
                return result
            feedback, case = self._feedback(problem, current, run)
            tokens = self.generator.count_tokens([case.input])[0] if case is not None else 0
            result.steps.append(RefinementStep(current, len(run.failures), case, tokens, feedback))
            current = self._revise(problem, current, feedback)
            result.refinements += 1
        raise AssertionError("unreachable")  # pragma: no cover


class PGSRefiner(_Refiner):
    r"""Property-based, minimal-counterexample refinement (PGS).

    Args:
        generator: writes and revises programs (e.g. :class:`~lightning_icml26.algorithms.pgs.LLMGenerator`).
        tester: proposes properties and inputs (e.g. ``LLMTester`` or ``ReferenceTester``).
        sandbox: where programs run (default ``Sandbox(isolation=isolation)``).
        num_properties: candidate properties asked from the tester (paper: 5).
        num_inputs: synthesized inputs asked from the tester (paper: 64).
        max_refinements: the budget of revisions (paper: 5; at least 1).
        minimiser: ``"tokens"`` (paper), ``"hypothesis"`` or ``"random"`` (see :data:`MINIMISERS`).
        seed: seed of the ``"random"`` minimiser.
        isolation: the default sandbox's isolation, ``"bwrap"`` (default) or ``"process"`` (see
            :class:`~lightning_icml26.algorithms.pgs.Sandbox`); only with ``sandbox=None`` or matching it.

    Raises:
        TypeError: if a role does not follow its protocol.
        ValueError: if a count or the budget is < 1, or ``minimiser`` or ``isolation`` is unknown.

    Example:
        >>> from lightning_icml26.algorithms.pgs import ReferenceTester
        >>> class Fixer:  # a scripted generator: repairs the bug once it is told about it
        ...     def generate(self, problem): return "def neg(n):\n    return n if n < 5 else -n"
        ...     def refine(self, problem, program, feedback): return "def neg(n):\n    return -n"
        ...     def reflect(self, problem, program, feedback): return ""
        ...     def count_tokens(self, texts): return [len(t) for t in texts]
        >>> problem = CodeProblem("neg", "neg", "Negate n.", "def neg(n: int) -> int:", (("(7,)", "-7"),),
        ...     properties=(("sign", "def sign(args, result):\n    assert result == -args[0]"),),
        ...     strategy="st.tuples(st.integers(0, 9))")
        >>> out = PGSRefiner(Fixer(), ReferenceTester(), num_inputs=16).refine(problem)
        >>> out.passed, out.refinements, out.steps[0].counterexample.property
        (True, 1, 'sign')
    """

    def __init__(
        self,
        generator: GeneratorRole,
        tester: TesterRole,
        sandbox: Sandbox | None = None,
        num_properties: int = 5,
        num_inputs: int = 64,
        max_refinements: int = 5,
        minimiser: str = "tokens",
        seed: int = 0,
        isolation: str | None = None,
    ) -> None:
        super().__init__(generator, sandbox, max_refinements, isolation=isolation)
        if not isinstance(tester, TesterRole):
            raise TypeError(f"tester must follow the Tester protocol, got {type(tester).__name__}")
        _positive_int("num_properties", num_properties)
        _positive_int("num_inputs", num_inputs)
        if minimiser not in MINIMISERS:
            raise ValueError(f"minimiser must be one of {MINIMISERS}, got {minimiser!r}")
        self.tester = tester
        self.num_properties = num_properties
        self.num_inputs = num_inputs
        self.minimiser = minimiser
        self._rng = random.Random(seed)
        self._properties: list[tuple[str, str]] = []
        self._inputs: list[str] = []

    def _prepare(self, problem: CodeProblem) -> list[tuple[str, str]]:
        candidates = self.tester.properties(problem, self.num_properties)[: self.num_properties]
        self._properties = sound_properties(self.sandbox, problem, candidates)
        public = set(problem.public_inputs)
        self._inputs = [x for x in self.tester.inputs(problem, self.num_inputs)[: self.num_inputs] if x not in public]
        return list(self._properties)

    def _evaluate(self, problem: CodeProblem, program: str) -> RunResult:
        inputs = problem.public_inputs + self._inputs
        expected = problem.public_expected + [None] * len(self._inputs)
        return self.sandbox.run(program, problem.entry_point, inputs, expected=expected, properties=self._properties)

    def _feedback(self, problem: CodeProblem, program: str, run: RunResult) -> tuple[str, CaseResult | None]:
        case: CaseResult | None = None
        if self.minimiser == "hypothesis" and problem.strategy is not None:
            try:
                case = self.sandbox.shrink(program, problem.entry_point, problem.strategy, self._properties)
            except ShrinkIncompleteError:
                case = None  # falls back to the fewest-token failure below
        if case is None and self.minimiser == "random":
            case = random_failure(run.failures, self._rng)
        if case is None:
            case = min_token_failure(run.failures, self.generator.count_tokens)
        return describe_failure(problem.entry_point, case, dict(self._properties)), case
