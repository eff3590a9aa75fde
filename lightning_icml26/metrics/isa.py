"""torchmetrics ``AttentionApproxError``: relative L2 error and cosine of sparse attention against dense."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from torch import Tensor

from lightning_icml26.metrics._plot import PlottableMetric
from lightning_icml26.metrics.functional.isa import (
    _attention_approx_compute,
    _attention_approx_update,
    _check_heads,
)

__all__ = ["AttentionApproxError"]


class AttentionApproxError(PlottableMetric):
    """Running mean of the relative L2 error and cosine of an attention output against dense attention.

    Each ``update`` scores every (sample, head) pair, or only the heads in ``heads`` (sampled heads keep
    the cost of the dense reference down); the states are sums and a count, so batches and DDP ranks add up.

    Args:
        heads: head indices to score (``None``: all).
        **kwargs: forwarded to :class:`torchmetrics.Metric`.

    Example:
        >>> m = AttentionApproxError(heads=[0])
        >>> t = torch.randn(2, 5, 3, 4)
        >>> m.update(t, t)
        >>> {k: round(float(v), 6) for k, v in m.compute().items()}
        {'rel_l2': 0.0, 'cosine': 1.0}
    """

    is_differentiable = False
    higher_is_better = False
    full_state_update = False
    plot_lower_bound = 0.0
    rel_sum: Tensor
    cos_sum: Tensor
    count: Tensor

    def __init__(self, heads: Sequence[int] | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.heads = _check_heads(heads)
        self.add_state("rel_sum", default=torch.tensor(0.0, dtype=torch.float64), dist_reduce_fx="sum")
        self.add_state("cos_sum", default=torch.tensor(0.0, dtype=torch.float64), dist_reduce_fx="sum")
        self.add_state("count", default=torch.tensor(0, dtype=torch.long), dist_reduce_fx="sum")

    def update(self, preds: Tensor, target: Tensor) -> None:
        """Add approximate outputs ``preds`` and dense outputs ``target``, both ``(batch, seq, heads, head_dim)``."""
        rel, cos, n = _attention_approx_update(preds, target, self.heads)
        self.rel_sum = self.rel_sum + rel.to(self.rel_sum.device)
        self.cos_sum = self.cos_sum + cos.to(self.cos_sum.device)
        self.count = self.count + n.to(self.count.device)

    def compute(self) -> dict[str, Tensor]:
        """``{"rel_l2", "cosine"}`` averaged over every scored (sample, head)."""
        return _attention_approx_compute(self.rel_sum, self.cos_sum, self.count)
