"""Baselines that share PGS's sandbox and refinement budget, with feedback from the public tests only.

- :class:`DirectGeneration`: no feedback; the first program is the answer.
- :class:`SelfDebug`: the first failing public test as an input/output mismatch (Self-Debugging style).
- :class:`ReflexionRefiner`: the generator first writes a self-reflection on the failing test; the
  reflections so far go into the revision prompt (a Reflexion-style verbal memory).
- :class:`SelfEditRefiner`: the execution results of every public test as a block of comments
  (Self-Edit style execution feedback).

These are reconstructions of the published methods' feedback signals within one shared loop, not
their original code or prompts.
"""

from __future__ import annotations

from lightning_icml26.algorithms.pgs.problem import CodeProblem, call_text
from lightning_icml26.algorithms.pgs.refiner import RefinementResult, _Refiner, describe_failure
from lightning_icml26.algorithms.pgs.roles import GeneratorRole
from lightning_icml26.algorithms.pgs.sandbox import CaseResult, RunResult, Sandbox

__all__ = ["DirectGeneration", "ReflexionRefiner", "SelfDebug", "SelfEditRefiner"]


class SelfDebug(_Refiner):
    """Revise from the first failing public test (input, returned or raised, expected).

    Args:
        generator: writes and revises programs.
        sandbox: where programs run (default ``Sandbox(isolation=isolation)``).
        max_refinements: the budget of revisions (at least 1).
        isolation: the default sandbox's isolation (``"bwrap"``, the default, or ``"process"``).

    Raises:
        ValueError: if ``max_refinements < 1`` or ``isolation`` is unknown.
    """

    def __init__(
        self,
        generator: GeneratorRole,
        sandbox: Sandbox | None = None,
        max_refinements: int = 5,
        isolation: str | None = None,
    ) -> None:
        super().__init__(generator, sandbox, max_refinements, isolation=isolation)

    def _feedback(self, problem: CodeProblem, program: str, run: RunResult) -> tuple[str, CaseResult | None]:
        case = run.failures[0]
        return describe_failure(problem.entry_point, case), case


class DirectGeneration(SelfDebug):
    """The first program is the answer (no refinement); ``passed`` reports the public tests.

    Args:
        generator: writes programs.
        sandbox: where programs run (default ``Sandbox(isolation=isolation)``).
        isolation: the default sandbox's isolation (``"bwrap"``, the default, or ``"process"``).
    """

    def __init__(self, generator: GeneratorRole, sandbox: Sandbox | None = None, isolation: str | None = None) -> None:
        _Refiner.__init__(self, generator, sandbox, max_refinements=0, min_budget=0, isolation=isolation)


class ReflexionRefiner(SelfDebug):
    """Self-Debug feedback plus the generator's own reflections, accumulated over the attempts."""

    def refine(self, problem: CodeProblem, program: str | None = None) -> RefinementResult:
        """As :meth:`SelfDebug.refine`, with a fresh reflection memory per problem."""
        self._memory: list[str] = []
        return super().refine(problem, program)

    def _revise(self, problem: CodeProblem, program: str, feedback: str) -> str:
        self._memory.append(self.generator.reflect(problem, program, feedback).strip())
        notes = "\n".join(f"- {m}" for m in self._memory)
        return self.generator.refine(problem, program, f"{feedback}\n\nYour reflections so far:\n{notes}")


class SelfEditRefiner(SelfDebug):
    """Revise from the execution results of all public tests, written as comments."""

    def _feedback(self, problem: CodeProblem, program: str, run: RunResult) -> tuple[str, CaseResult | None]:
        lines = ["# Execution results on the public tests:"]
        for case, expected in zip(run.cases, problem.public_expected, strict=True):
            got = case.output if case.kind in ("pass", "wrong_answer") else f"{case.kind}: {case.error}"
            status = "ok" if case.kind == "pass" else "FAILED"
            lines.append(f"# {call_text(problem.entry_point, case.input)} -> {got} (expected {expected}) {status}")
        return "\n".join(lines), run.failures[0]
