"""torchmetrics ``GRMReliability`` and ``HumanAlignment``: IRT diagnostics of an LLM judge.

The state is a count tensor ``[samples, variants, K]`` (and ``[samples, raters, K]`` for humans) summed
across ranks; ``compute()`` fits the graded response model on the summed counts, so a DDP run gives the same
numbers as one process that saw every score. See :mod:`lightning_icml26.metrics.functional.irt` for the
definitions and the choices made where the method's description is silent.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from lightning_icml26.metrics._plot import PlottableMetric
from lightning_icml26.metrics.functional.irt import (
    _alignment_from_counts,
    _reliability_from_counts,
    accumulate_counts,
)

__all__ = ["GRMReliability", "HumanAlignment"]


def _positive(name: str, value: int, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{name} must be an int >= {minimum}, got {value!r}")
    return value


class GRMReliability(PlottableMetric):
    """Prompt consistency ``C_V`` and marginal reliability ``rho`` of a judge from ``(sample, variant, score)``.

    Args:
        n_samples: number of evaluated samples (ids ``0..n_samples-1``).
        n_variants: number of prompt variants (ids ``0..n_variants-1``).
        n_categories: score levels ``K`` (scores ``1..K``).
        **kwargs: forwarded to :class:`torchmetrics.Metric`.

    ``compute()`` returns ``{"prompt_consistency", "marginal_reliability", "consistent", "reliable"}``; the last
    two apply the pass rules ``C_V <= 0.10`` and ``rho >= 0.70``. It raises ``ValueError`` if a variant has no
    responses.

    Example:
        >>> g = torch.Generator().manual_seed(0)
        >>> m = GRMReliability(n_samples=40, n_variants=2, n_categories=5)
        >>> quality = torch.arange(40) % 5 + 1
        >>> for variant in (0, 1):
        ...     noisy = (quality + torch.randint(-1, 2, (40,), generator=g)).clamp(1, 5)
        ...     m.update(torch.arange(40), torch.full((40,), variant), noisy)
        >>> bool(m.compute()["reliable"])
        True
    """

    is_differentiable = False
    higher_is_better = None
    full_state_update = False
    counts: Tensor

    def __init__(self, n_samples: int, n_variants: int, n_categories: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.n_samples = _positive("n_samples", n_samples, 2)
        self.n_variants = _positive("n_variants", n_variants)
        self.n_categories = _positive("n_categories", n_categories, 2)
        self.add_state("counts", torch.zeros(n_samples, n_variants, n_categories, dtype=torch.long), "sum")

    def update(self, sample_ids: Tensor, variant_ids: Tensor, scores: Tensor) -> None:
        """Add scores (``1..K``) given to ``sample_ids`` under ``variant_ids`` (1-D integer tensors)."""
        accumulate_counts(self.counts, sample_ids, variant_ids, scores, self.n_categories)

    def compute(self) -> dict[str, Tensor]:
        """Fit the GRM on all scores and return the diagnostics."""
        return _reliability_from_counts(self.counts)


class HumanAlignment(PlottableMetric):
    """``theta_ratio`` and Wasserstein distance ``D_W`` between a judge's and human raters' GRM abilities.

    Args:
        n_samples: number of samples.
        n_variants: judge prompt variants.
        n_raters: human raters.
        n_categories: score levels ``K`` (judge and humans share the scale).
        **kwargs: forwarded to :class:`torchmetrics.Metric`.

    ``update(sample_ids, variant_ids, scores, human_sample_ids, rater_ids, human_scores)`` adds judge and human
    triples (either may be empty). ``compute()`` raises ``ValueError`` if the two cover different samples.

    Example:
        >>> m = HumanAlignment(n_samples=50, n_variants=3, n_raters=3, n_categories=5)
        >>> g = torch.Generator().manual_seed(0)
        >>> q = (torch.arange(50) % 5 + 1).repeat(3)
        >>> s, v = torch.arange(50).repeat(3), torch.arange(3).repeat_interleave(50)
        >>> judge, human = ((q + torch.randint(-1, 2, (150,), generator=g)).clamp(1, 5) for _ in range(2))
        >>> m.update(s, v, judge, s, v, human)
        >>> sorted(m.compute())
        ['theta_ratio', 'wasserstein']
    """

    is_differentiable = False
    higher_is_better = None
    full_state_update = False
    judge_counts: Tensor
    human_counts: Tensor

    def __init__(self, n_samples: int, n_variants: int, n_raters: int, n_categories: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.n_samples = _positive("n_samples", n_samples, 2)
        self.n_categories = _positive("n_categories", n_categories, 2)
        _positive("n_variants", n_variants)
        _positive("n_raters", n_raters)
        self.add_state("judge_counts", torch.zeros(n_samples, n_variants, n_categories, dtype=torch.long), "sum")
        self.add_state("human_counts", torch.zeros(n_samples, n_raters, n_categories, dtype=torch.long), "sum")

    def update(
        self,
        sample_ids: Tensor,
        variant_ids: Tensor,
        scores: Tensor,
        human_sample_ids: Tensor,
        rater_ids: Tensor,
        human_scores: Tensor,
    ) -> None:
        """Add judge triples ``(sample, variant, score)`` and human triples ``(sample, rater, score)``."""
        accumulate_counts(self.judge_counts, sample_ids, variant_ids, scores, self.n_categories)
        accumulate_counts(self.human_counts, human_sample_ids, rater_ids, human_scores, self.n_categories)

    def compute(self) -> dict[str, Tensor]:
        """Fit both GRMs and return ``{"theta_ratio", "wasserstein"}``."""
        return _alignment_from_counts(self.judge_counts, self.human_counts)
