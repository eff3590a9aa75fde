"""torchmetrics ``KVBudget``: key/value bytes held per sequence and mean memory slots read per token."""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from lightning_icml26.metrics._plot import PlottableMetric
from lightning_icml26.metrics.functional.kv_budget import _kv_budget_compute, _kv_budget_update

__all__ = ["KVBudget"]


class KVBudget(PlottableMetric):
    """Mean KV bytes held per sequence and mean slots read per token, over every ``update`` (sum states).

    Use :func:`lightning_icml26.metrics.functional.kv_cache_bytes` to turn a model's per-layer decode caches
    into bytes per sequence.

    Args:
        **kwargs: forwarded to :class:`torchmetrics.Metric`.

    Example:
        >>> m = KVBudget()
        >>> m.update(torch.tensor([2048.0]), torch.tensor([4.0, 8.0]))
        >>> m.update(torch.tensor([2048.0]), torch.tensor([12.0]))
        >>> {k: v.item() for k, v in m.compute().items()}
        {'kv_bytes': 2048.0, 'slots_read': 8.0}
    """

    is_differentiable = False
    higher_is_better = False
    full_state_update = False
    bytes_sum: Tensor
    seqs: Tensor
    slots_sum: Tensor
    tokens: Tensor

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        for name in ("bytes_sum", "seqs", "slots_sum", "tokens"):
            self.add_state(name, default=torch.zeros((), dtype=torch.float64), dist_reduce_fx="sum")

    def update(self, kv_bytes: Tensor, slots_read: Tensor) -> None:
        """Add per-sequence bytes held and per-token slots read."""
        parts = _kv_budget_update(kv_bytes, slots_read)
        self.bytes_sum += parts[0].to(self.bytes_sum.device)
        self.seqs += parts[1].to(self.seqs.device)
        self.slots_sum += parts[2].to(self.slots_sum.device)
        self.tokens += parts[3].to(self.tokens.device)

    def compute(self) -> dict[str, Tensor]:
        """``{"kv_bytes", "slots_read"}`` means."""
        return _kv_budget_compute(self.bytes_sum, self.seqs, self.slots_sum, self.tokens)
