"""A coding problem as PGS sees it: a specification, a signature, public tests and optional extras."""

from __future__ import annotations

import ast
from dataclasses import dataclass

__all__ = ["CodeProblem", "call_text"]


def call_text(entry_point: str, args: str) -> str:
    """A call of ``entry_point`` on an argument tuple written as literal source.

    Example:
        >>> call_text("f", "(1,)"), call_text("g", "([2], 3)")
        ('f(1)', 'g([2], 3)')
    """
    return entry_point + (args[:-2] + ")" if args.endswith(",)") else args)


@dataclass(frozen=True)
class CodeProblem:
    """One function to write.

    Args:
        name: a short identifier.
        entry_point: the function's name.
        spec: the natural-language specification shown to the model.
        signature: the ``def`` line (with type hints) the program must keep.
        public_tests: ``(input, expected)`` pairs as Python literal source; ``input`` is the argument tuple.
        reference: a correct solution (optional; used by benchmarks and tests, never shown to the model).
        properties: reference ``(name, source)`` property checks (optional; a tester may ignore them).
        strategy: a Hypothesis strategy expression over ``st`` that draws argument tuples (optional).

    Raises:
        ValueError: if ``entry_point`` is not an identifier or a public test is not a Python literal.

    Example:
        >>> p = CodeProblem("inc", "inc", "Add one.", "def inc(n: int) -> int:", (("(1,)", "2"),))
        >>> p.public_inputs, p.public_expected
        (['(1,)'], ['2'])
    """

    name: str
    entry_point: str
    spec: str
    signature: str
    public_tests: tuple[tuple[str, str], ...]
    reference: str | None = None
    properties: tuple[tuple[str, str], ...] = ()
    strategy: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.entry_point, str) or not self.entry_point.isidentifier():
            raise ValueError(f"entry_point must be a Python identifier, got {self.entry_point!r}")
        for i, pair in enumerate(self.public_tests):
            if len(pair) != 2:
                raise ValueError(f"public_tests[{i}] must be an (input, expected) pair, got {pair!r}")
            for text in pair:
                try:
                    ast.literal_eval(text)
                except (ValueError, SyntaxError, TypeError):
                    raise ValueError(f"public_tests[{i}] must hold Python literals, got {text!r}") from None

    @property
    def public_inputs(self) -> list[str]:
        """The argument tuples of the public tests."""
        return [i for i, _ in self.public_tests]

    @property
    def public_expected(self) -> list[str]:
        """The expected outputs of the public tests."""
        return [o for _, o in self.public_tests]

    def prompt_text(self) -> str:
        """The specification, signature and public tests as one block of text for a prompt."""
        tests = "\n".join(f"{call_text(self.entry_point, i)} == {o}" for i, o in self.public_tests)
        return f"{self.spec}\n\n{self.signature}\n\nExamples:\n{tests}"
