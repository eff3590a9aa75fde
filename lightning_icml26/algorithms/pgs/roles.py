"""The Generator and Tester roles, and their implementations over any ``LanguageModel``.

A :class:`GeneratorRole` writes and repairs programs; a :class:`TesterRole` proposes property checks and test
inputs. :class:`LLMGenerator` and :class:`LLMTester` fill the roles with any object following
:class:`lightning_icml26.llm.LanguageModel` (the two may be different models); :class:`ReferenceTester`
uses a problem's own reference properties and Hypothesis strategy (no model). Prompt texts are a
:class:`PromptTemplates` dataclass, so a config can replace any of them.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from lightning_icml26.algorithms.pgs.minimise import draw_inputs
from lightning_icml26.algorithms.pgs.problem import CodeProblem
from lightning_icml26.algorithms.pgs.properties import extract_properties
from lightning_icml26.llm import LanguageModel

__all__ = [
    "GeneratorRole",
    "LLMGenerator",
    "LLMTester",
    "PromptTemplates",
    "ReferenceTester",
    "TesterRole",
    "extract_code",
]

_FENCE = re.compile(r"```(?:python|py)?\s*\n(.*?)(?:```|$)", re.DOTALL)


@runtime_checkable
class GeneratorRole(Protocol):
    """Writes a program for a problem and revises it from feedback."""

    def generate(self, problem: CodeProblem) -> str:
        """A first program for ``problem``."""
        ...

    def refine(self, problem: CodeProblem, program: str, feedback: str) -> str:
        """A revised program given the feedback on ``program``."""
        ...

    def reflect(self, problem: CodeProblem, program: str, feedback: str) -> str:
        """A short self-reflection on why ``program`` fails (Reflexion-style baseline)."""
        ...

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        """Token counts under the generator's own tokenizer."""
        ...


@runtime_checkable
class TesterRole(Protocol):
    """Proposes property checks and test inputs for a problem."""

    def properties(self, problem: CodeProblem, n: int) -> list[tuple[str, str]]:
        """Up to ``n`` candidate ``(name, source)`` properties."""
        ...

    def inputs(self, problem: CodeProblem, n: int) -> list[str]:
        """Up to ``n`` argument tuples as literal source."""
        ...


@dataclass(frozen=True)
class PromptTemplates:
    """Prompt texts (``str.format`` fields: ``{problem}``, ``{program}``, ``{feedback}``, ``{n}``, ``{entry_point}``).

    Example:
        >>> PromptTemplates().generate.format(problem="Add one.", entry_point="inc").splitlines()[0]
        'Write a Python function for this task.'
    """

    system: str = "You are an expert Python programmer. Answer with one ```python code block."
    generate: str = "Write a Python function for this task.\n\n{problem}\n\nDefine `{entry_point}`."
    refine: str = (
        "Task:\n{problem}\n\nYour code:\n```python\n{program}\n```\n\n{feedback}\n\n"
        "Fix the function `{entry_point}`. Answer with the whole corrected function."
    )
    reflect: str = (
        "Task:\n{problem}\n\nYour code:\n```python\n{program}\n```\n\n{feedback}\n\n"
        "In two sentences, explain what is wrong with the code."
    )
    properties: str = (
        "Task:\n{problem}\n\nWrite {n} Python functions `property_<name>(args, result)` that each assert one "
        "property every correct answer has (args is the tuple of arguments, result the return value)."
    )
    inputs: str = (
        "Task:\n{problem}\n\nWrite {n} different test inputs for `{entry_point}`, one per line, each as a Python "
        "tuple of the arguments, e.g. ([3, 1],). Cover edge cases."
    )


def extract_code(text: str, entry_point: str) -> str:
    r"""The program in a model's answer: the fenced block defining ``entry_point``, else the text from its ``def``.

    Example:
        >>> extract_code("Sure!\n```python\ndef f(x):\n    return x\n```\nDone.", "f")
        'def f(x):\n    return x\n'
        >>> extract_code("def f(x): return 1", "f")
        'def f(x): return 1'
    """
    blocks = _FENCE.findall(text)
    for block in blocks:
        if f"def {entry_point}(" in block:
            return str(block)
    start = text.find(f"def {entry_point}(")
    if start >= 0:
        # keep imports written before the def
        head = "\n".join(line for line in text[:start].splitlines() if line.startswith(("import ", "from ")))
        return (head + "\n" if head else "") + text[start:]
    return blocks[0] if blocks else text


def _check_lm(lm: LanguageModel, use_chat: bool) -> None:
    if not isinstance(lm, LanguageModel):
        raise TypeError(f"lm must follow the LanguageModel protocol, got {type(lm).__name__}")
    if use_chat:
        lm.format_chat([{"role": "user", "content": "hello"}])  # raises ValueError without a chat template


class _LLMRole:
    def __init__(
        self, lm: LanguageModel, templates: PromptTemplates | None, max_new_tokens: int, use_chat: bool
    ) -> None:
        _check_lm(lm, use_chat)
        if isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, int) or max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be a positive int, got {max_new_tokens!r}")
        self.lm = lm
        self.templates = templates or PromptTemplates()
        self.max_new_tokens = max_new_tokens
        self.use_chat = use_chat

    def _ask(self, user: str) -> str:
        if self.use_chat:
            prompt = self.lm.format_chat(
                [{"role": "system", "content": self.templates.system}, {"role": "user", "content": user}]
            )
        else:
            prompt = f"{self.templates.system}\n\n{user}\n\n"
        return self.lm.generate([prompt], max_new_tokens=self.max_new_tokens)[0]


class LLMGenerator(_LLMRole):
    """The Generator role over a language model.

    Args:
        lm: any ``LanguageModel``.
        templates: prompt texts (default :class:`PromptTemplates`).
        max_new_tokens: generation length per call.
        use_chat: wrap prompts with the model's chat template (``format_chat``); checked at construction.

    Raises:
        TypeError: if ``lm`` is not a ``LanguageModel``.
        ValueError: if ``use_chat`` and the model has no chat template, or ``max_new_tokens < 1``.
    """

    def __init__(
        self,
        lm: LanguageModel,
        templates: PromptTemplates | None = None,
        max_new_tokens: int = 256,
        use_chat: bool = True,
    ) -> None:
        super().__init__(lm, templates, max_new_tokens, use_chat)

    def _fields(self, problem: CodeProblem, **extra: str) -> dict[str, str]:
        return {"problem": problem.prompt_text(), "entry_point": problem.entry_point, **extra}

    def generate(self, problem: CodeProblem) -> str:
        """A first program."""
        return extract_code(self._ask(self.templates.generate.format(**self._fields(problem))), problem.entry_point)

    def refine(self, problem: CodeProblem, program: str, feedback: str) -> str:
        """A revised program."""
        text = self.templates.refine.format(**self._fields(problem, program=program, feedback=feedback))
        return extract_code(self._ask(text), problem.entry_point)

    def reflect(self, problem: CodeProblem, program: str, feedback: str) -> str:
        """A self-reflection."""
        return self._ask(self.templates.reflect.format(**self._fields(problem, program=program, feedback=feedback)))

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        """Token counts under the model's tokenizer."""
        return self.lm.count_tokens(texts)


class LLMTester(_LLMRole):
    """The Tester role over a language model (properties and synthesized inputs parsed from its answers).

    Args and Raises: as :class:`LLMGenerator` (default ``max_new_tokens=384``).
    """

    def __init__(
        self,
        lm: LanguageModel,
        templates: PromptTemplates | None = None,
        max_new_tokens: int = 384,
        use_chat: bool = True,
    ) -> None:
        super().__init__(lm, templates, max_new_tokens, use_chat)

    def properties(self, problem: CodeProblem, n: int) -> list[tuple[str, str]]:
        """Up to ``n`` properties parsed from the model's answer (non-compiling ones dropped)."""
        text = self.templates.properties.format(problem=problem.prompt_text(), n=n, entry_point=problem.entry_point)
        return extract_properties(self._ask(text), limit=n)

    def inputs(self, problem: CodeProblem, n: int) -> list[str]:
        """Up to ``n`` distinct argument tuples parsed line by line from the model's answer."""
        text = self.templates.inputs.format(problem=problem.prompt_text(), n=n, entry_point=problem.entry_point)
        out: list[str] = []
        for line in self._ask(text).splitlines():
            line = line.strip().strip("`").rstrip(",;").strip()
            line = re.sub(r"^\d+[.)]\s*", "", line)
            try:
                value = ast.literal_eval(line)
            except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
                continue
            args = value if isinstance(value, tuple) else (value,)
            text_args = repr(args)
            if text_args not in out:
                out.append(text_args)
        return out[:n]


class ReferenceTester:
    r"""A model-free tester: the problem's reference properties and inputs drawn from its Hypothesis strategy.

    Args:
        seed: seed of the Hypothesis draw.

    Example:
        >>> p = CodeProblem("inc", "inc", "Add one.", "def inc(n):", (("(1,)", "2"),),
        ...                 properties=(("grows", "def grows(args, result):\n    assert result > args[0]"),),
        ...                 strategy="st.tuples(st.integers(0, 3))")
        >>> t = ReferenceTester()
        >>> [n for n, _ in t.properties(p, 5)], sorted(t.inputs(p, 20))
        (['grows'], ['(0,)', '(1,)', '(2,)', '(3,)'])
    """

    def __init__(self, seed: int = 0) -> None:
        self.seed = seed

    def properties(self, problem: CodeProblem, n: int) -> list[tuple[str, str]]:
        """The first ``n`` reference properties."""
        return list(problem.properties[:n])

    def inputs(self, problem: CodeProblem, n: int) -> list[str]:
        """``n`` draws from the problem's strategy (none without one)."""
        return [] if problem.strategy is None else draw_inputs(problem.strategy, n, seed=self.seed)
