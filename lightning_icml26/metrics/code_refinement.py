"""torchmetrics ``PassAtK``, ``FixRate`` and ``CounterexampleTokens`` for code refinement (sum states)."""

from __future__ import annotations

from typing import Any

import torch

from lightning_icml26.metrics._plot import PlottableMetric
from lightning_icml26.metrics.functional.code_refinement import _check_k, _counts, _fix_counts, pass_at_k_per_problem

__all__ = ["CounterexampleTokens", "FixRate", "PassAtK"]


class PassAtK(PlottableMetric):
    """Mean unbiased pass@k (Chen et al., 2021) over the problems seen.

    Args:
        k: programs drawn per problem.
        **kwargs: forwarded to :class:`torchmetrics.Metric`.

    Example:
        >>> m = PassAtK(k=1)
        >>> m.update(torch.tensor([10, 10]), torch.tensor([3, 0]))
        >>> m.update(torch.tensor([10]), torch.tensor([10]))
        >>> m.compute()
        tensor(0.4333, dtype=torch.float64)
    """

    is_differentiable = False
    higher_is_better = True
    full_state_update = False
    plot_lower_bound = 0.0
    plot_upper_bound = 1.0
    total: torch.Tensor
    problems: torch.Tensor

    def __init__(self, k: int = 1, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        _check_k(k)
        self.k = k
        self.add_state("total", default=torch.zeros((), dtype=torch.float64), dist_reduce_fx="sum")
        self.add_state("problems", default=torch.zeros((), dtype=torch.long), dist_reduce_fx="sum")

    def update(self, num_samples: torch.Tensor, num_correct: torch.Tensor) -> None:
        """Add problems with ``num_samples`` programs of which ``num_correct`` pass."""
        per = pass_at_k_per_problem(num_samples, num_correct, self.k)
        self.total += per.sum().to(self.total.device)
        self.problems += per.numel()

    def compute(self) -> torch.Tensor:
        """The mean pass@k (``nan`` before any update)."""
        if int(self.problems) == 0:
            return torch.tensor(float("nan"), dtype=torch.float64)
        return self.total / self.problems


class FixRate(PlottableMetric):
    """Fraction of the initially failing problems that pass after refinement.

    Args:
        **kwargs: forwarded to :class:`torchmetrics.Metric`.

    Example:
        >>> m = FixRate()
        >>> m.update(torch.tensor([False, True, False]), torch.tensor([True, True, False]))
        >>> m.compute()
        tensor(0.5000, dtype=torch.float64)
    """

    is_differentiable = False
    higher_is_better = True
    full_state_update = False
    plot_lower_bound = 0.0
    plot_upper_bound = 1.0
    fixed: torch.Tensor
    failing: torch.Tensor

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.add_state("fixed", default=torch.zeros((), dtype=torch.long), dist_reduce_fx="sum")
        self.add_state("failing", default=torch.zeros((), dtype=torch.long), dist_reduce_fx="sum")

    def update(self, initially_passed: torch.Tensor, finally_passed: torch.Tensor) -> None:
        """Add problems by whether they passed before and after refinement."""
        fixed, failing = _fix_counts(initially_passed, finally_passed)
        self.fixed += fixed
        self.failing += failing

    def compute(self) -> torch.Tensor:
        """Fixed over initially failing (``nan`` when none failed)."""
        if int(self.failing) == 0:
            return torch.tensor(float("nan"), dtype=torch.float64)
        return self.fixed.double() / self.failing


class CounterexampleTokens(PlottableMetric):
    """Mean token count of the counterexamples fed back to the generator.

    Args:
        **kwargs: forwarded to :class:`torchmetrics.Metric`.

    Example:
        >>> m = CounterexampleTokens()
        >>> m.update(torch.tensor([4, 6]))
        >>> m.update(torch.tensor([11]))
        >>> m.compute()
        tensor(7., dtype=torch.float64)
    """

    is_differentiable = False
    higher_is_better = False
    full_state_update = False
    plot_lower_bound = 0.0
    tokens: torch.Tensor
    count: torch.Tensor

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.add_state("tokens", default=torch.zeros((), dtype=torch.float64), dist_reduce_fx="sum")
        self.add_state("count", default=torch.zeros((), dtype=torch.long), dist_reduce_fx="sum")

    def update(self, tokens: torch.Tensor) -> None:
        """Add the token counts of some counterexamples."""
        t = _counts("tokens", tokens)
        self.tokens += t.sum().to(self.tokens.device)
        self.count += t.numel()

    def compute(self) -> torch.Tensor:
        """The mean token count (``nan`` before any counterexample)."""
        if int(self.count) == 0:
            return torch.tensor(float("nan"), dtype=torch.float64)
        return self.tokens / self.count
