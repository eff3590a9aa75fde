"""``PGSValidationCallback``: run PGS on a set of coding problems at the end of validation epochs.

For code-LLM fine-tuning: the callback builds a Generator from the LightningModule being trained (e.g.
an :class:`~lightning_icml26.algorithms.pgs.LLMGenerator` over an ``HFCausalLM`` wrapping the module's
model), refines each problem's starting program with PGS and logs pass@1 before and after refinement
and the fix rate. It runs on rank zero only; the figures are logged with ``rank_zero_only=True``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import lightning.pytorch as pl
import torch

from lightning_icml26.algorithms.pgs import CodeProblem, GeneratorRole, PGSRefiner, Sandbox, TesterRole, sandbox_for
from lightning_icml26.metrics import CounterexampleTokens, FixRate, PassAtK

__all__ = ["PGSValidationCallback"]


class PGSValidationCallback(pl.Callback):
    r"""Refine problems with PGS every ``every_n_epochs`` validation epochs and log the outcome.

    Args:
        problems: the validation problems.
        generator: ``pl_module -> GeneratorRole``, called at each evaluation (so it sees the current weights).
        tester: the Tester role (e.g. ``ReferenceTester()`` or an ``LLMTester``).
        programs: a starting program per problem (e.g. buggy code to repair); ``None``: the generator writes one.
        max_refinements: PGS's budget per problem.
        every_n_epochs: evaluate when ``(epoch + 1) % every_n_epochs == 0``.
        sandbox: where programs run (default ``Sandbox(isolation=isolation)``).
        isolation: the default sandbox's isolation, ``"bwrap"`` (default; namespaces) or ``"process"``
            (weaker, warns); see :class:`~lightning_icml26.algorithms.pgs.Sandbox`.
        prefix: prefix of the logged names (``<prefix>/pass@1``, ``<prefix>/initial_pass@1``,
            ``<prefix>/fix_rate``, ``<prefix>/counterexample_tokens``).
        **refiner_kwargs: further :class:`~lightning_icml26.algorithms.pgs.PGSRefiner` arguments.

    Attributes:
        history: one dict per evaluation (epoch and the logged figures); checkpointed.

    Raises:
        ValueError: if ``problems`` is empty, ``programs`` has another length, ``every_n_epochs < 1`` or
            ``isolation`` is unknown.

    Example:
        >>> from lightning_icml26.algorithms.pgs import ReferenceTester
        >>> class Fixer:  # a scripted generator: any feedback makes it write the right program
        ...     def generate(self, problem): return "def inc(n):\n    return n"
        ...     def refine(self, problem, program, feedback): return "def inc(n):\n    return n + 1"
        ...     def reflect(self, problem, program, feedback): return ""
        ...     def count_tokens(self, texts): return [len(t) for t in texts]
        >>> problem = CodeProblem("inc", "inc", "Add one.", "def inc(n: int) -> int:", (("(1,)", "2"),))
        >>> callback = PGSValidationCallback([problem], lambda module: Fixer(), ReferenceTester())
        >>> callback.evaluate(None)["fix_rate"]
        1.0
    """

    def __init__(
        self,
        problems: Sequence[CodeProblem],
        generator: Callable[[pl.LightningModule], GeneratorRole],
        tester: TesterRole,
        programs: Sequence[str] | None = None,
        max_refinements: int = 5,
        every_n_epochs: int = 1,
        sandbox: Sandbox | None = None,
        prefix: str = "pgs",
        isolation: str | None = None,
        **refiner_kwargs: Any,
    ) -> None:
        if len(problems) == 0:
            raise ValueError("problems must hold at least one CodeProblem, got none")
        if programs is not None and len(programs) != len(problems):
            raise ValueError(f"programs must have one entry per problem ({len(problems)}), got {len(programs)}")
        if isinstance(every_n_epochs, bool) or not isinstance(every_n_epochs, int) or every_n_epochs < 1:
            raise ValueError(f"every_n_epochs must be a positive int, got {every_n_epochs!r}")
        if not callable(generator):
            raise TypeError(f"generator must be a callable pl_module -> GeneratorRole, got {type(generator).__name__}")
        self.problems = list(problems)
        self.programs = None if programs is None else list(programs)
        self.generator = generator
        self.tester = tester
        self.max_refinements = max_refinements
        self.every_n_epochs = every_n_epochs
        self.sandbox = sandbox_for(sandbox, isolation)
        self.prefix = prefix
        self.refiner_kwargs = refiner_kwargs
        self.history: list[dict[str, float]] = []
        PGSRefiner(_Probe(), tester, self.sandbox, max_refinements=max_refinements, **refiner_kwargs)  # validate

    def evaluate(self, pl_module: pl.LightningModule) -> dict[str, float]:
        """Refine every problem with a generator built from ``pl_module``; return the figures."""
        refiner = PGSRefiner(
            self.generator(pl_module), self.tester, self.sandbox, max_refinements=self.max_refinements,
            **self.refiner_kwargs,
        )  # fmt: skip
        before, after, fix, tokens = PassAtK(k=1), PassAtK(k=1), FixRate(), CounterexampleTokens()
        starts: list[str | None] = list(self.programs) if self.programs else [None] * len(self.problems)
        for problem, start in zip(self.problems, starts, strict=True):
            result = refiner.refine(problem, start)
            one = torch.ones(1, dtype=torch.long)
            before.update(one, torch.tensor([int(result.initially_passed)]))
            after.update(one, torch.tensor([int(result.passed)]))
            fix.update(torch.tensor([result.initially_passed]), torch.tensor([result.passed]))
            sizes = [s.counterexample_tokens for s in result.steps if s.counterexample is not None]
            if sizes:
                tokens.update(torch.tensor(sizes))
        return {
            "pass@1": float(after.compute()),
            "initial_pass@1": float(before.compute()),
            "fix_rate": float(fix.compute()),
            "counterexample_tokens": float(tokens.compute()) if int(tokens.count) else float("nan"),
        }

    def on_validation_epoch_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        """Evaluate on rank zero when the epoch is due (never during the sanity check)."""
        if trainer.sanity_checking or (trainer.current_epoch + 1) % self.every_n_epochs != 0:
            return
        if not trainer.is_global_zero:
            return
        figures = self.evaluate(pl_module)
        self.history.append({"epoch": float(trainer.current_epoch), **figures})
        for name, value in figures.items():
            pl_module.log(f"{self.prefix}/{name}", value, rank_zero_only=True)

    def state_dict(self) -> dict[str, Any]:
        """The evaluation history."""
        return {"history": [dict(h) for h in self.history]}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore the history (missing keys read as empty)."""
        self.history = [dict(h) for h in state_dict.get("history", [])]


class _Probe:
    """A stand-in generator used only to validate the refiner arguments at construction."""

    def generate(self, problem: CodeProblem) -> str:
        return ""

    def refine(self, problem: CodeProblem, program: str, feedback: str) -> str:
        return program

    def reflect(self, problem: CodeProblem, program: str, feedback: str) -> str:
        return ""

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        return [len(t) for t in texts]
