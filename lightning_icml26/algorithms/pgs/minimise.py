"""Choosing the counterexample to report: fewest tokens (the paper), Hypothesis shrinking, or random.

Also draws inputs from a Hypothesis strategy expression, the second input source next to an LLM tester.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence

from lightning_icml26._optional import require
from lightning_icml26.algorithms.pgs.problem import CodeProblem
from lightning_icml26.algorithms.pgs.sandbox import CaseResult, Sandbox

__all__ = ["draw_inputs", "hypothesis_failure", "min_token_failure", "random_failure"]

TokenCounter = Callable[[Sequence[str]], list[int]]


def min_token_failure(failures: Sequence[CaseResult], count_tokens: TokenCounter) -> CaseResult:
    """The failing case whose input has the fewest tokens (the first one on ties).

    Args:
        failures: failing cases (at least one).
        count_tokens: the generator's token counter, e.g. ``LanguageModel.count_tokens``.

    Returns:
        The case with the shortest input.

    Raises:
        ValueError: if ``failures`` is empty.

    Example:
        >>> cases = [CaseResult("([5, 4, 3],)", "wrong_answer"), CaseResult("([2, 1],)", "wrong_answer")]
        >>> min_token_failure(cases, lambda texts: [len(t) for t in texts]).input
        '([2, 1],)'
    """
    if len(failures) == 0:
        raise ValueError("failures must hold at least one failing case, got none")
    counts = count_tokens([c.input for c in failures])
    return failures[min(range(len(failures)), key=counts.__getitem__)]


def random_failure(failures: Sequence[CaseResult], rng: random.Random) -> CaseResult:
    """A failing case drawn uniformly (the no-minimisation baseline).

    Example:
        >>> random_failure([CaseResult("(1,)", "timeout")], random.Random(0)).input
        '(1,)'
    """
    if len(failures) == 0:
        raise ValueError("failures must hold at least one failing case, got none")
    return failures[rng.randrange(len(failures))]


def hypothesis_failure(
    sandbox: Sandbox,
    program: str,
    problem: CodeProblem,
    properties: Sequence[tuple[str, str]],
    max_examples: int = 200,
) -> CaseResult | None:
    """Hypothesis's shrunk failing input for ``program`` under ``problem.strategy`` (a design option).

    Raises:
        ValueError: if the problem has no strategy.
    """
    if problem.strategy is None:
        raise ValueError(f"problem {problem.name!r} has no Hypothesis strategy (strategy=None)")
    return sandbox.shrink(program, problem.entry_point, problem.strategy, properties, max_examples=max_examples)


def draw_inputs(strategy: str, n: int, seed: int = 0) -> list[str]:
    """``n`` argument tuples drawn by Hypothesis from a strategy expression, as literal source.

    The strategy text is evaluated with ``st`` bound to ``hypothesis.strategies``; only pass strategy
    text you trust (it is Python). Duplicates are dropped, so fewer than ``n`` may come back.

    Args:
        strategy: e.g. ``"st.tuples(st.integers(0, 9))"``.
        n: how many to draw (at least 1).
        seed: the Hypothesis seed.

    Returns:
        Distinct inputs in drawing order.

    Example:
        >>> xs = draw_inputs("st.tuples(st.integers(0, 3))", 10, seed=1)
        >>> sorted(xs)
        ['(0,)', '(1,)', '(2,)', '(3,)']
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be a positive int, got {n!r}")
    hypothesis = require("hypothesis", extra="pgs", purpose="drawing inputs from Hypothesis strategies")
    st = require("hypothesis.strategies", extra="pgs")
    drawn: list[str] = []

    @hypothesis.seed(seed)
    @hypothesis.settings(
        max_examples=n,
        database=None,
        deadline=None,
        derandomize=False,
        suppress_health_check=list(hypothesis.HealthCheck),
        phases=[hypothesis.Phase.generate],
    )
    @hypothesis.given(eval(strategy, {"st": st}))
    def collect(args: tuple) -> None:
        text = repr(tuple(args))
        if text not in drawn:
            drawn.append(text)

    collect()
    return drawn
