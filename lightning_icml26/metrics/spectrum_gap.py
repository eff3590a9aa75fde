"""torchmetrics ``FeatureSpectrumGap``: HOB and variance gaps between synthetic and real features."""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from lightning_icml26.metrics._plot import PlottableMetric
from lightning_icml26.metrics.functional.spectrum_gap import _spectrum_gap_compute, _spectrum_gap_update

__all__ = ["FeatureSpectrumGap"]


class FeatureSpectrumGap(PlottableMetric):
    """How far synthetic features are from real ones in their leading direction and their variances.

    The states are sufficient statistics of each feature set (Gram matrix ``(d, d)``, sums, sums of squares,
    count; float64, summed over ranks), so the result over many batches, or over DDP ranks, equals the result
    on all features at once. The HOB is the sign-canonical leading right-singular vector of the uncentred
    features (the top eigenvector of the Gram matrix); the gaps are sorted-entry Wasserstein-1 distances.

    Args:
        num_features: feature dimension ``d``.
        **kwargs: forwarded to :class:`torchmetrics.Metric`.

    Example:
        >>> m = FeatureSpectrumGap(num_features=3)
        >>> x = torch.randn(8, 3)
        >>> m.update(x, x)
        >>> sorted(m.compute())
        ['hob_gap', 'var_gap']
    """

    is_differentiable = False
    higher_is_better = False
    full_state_update = False
    plot_lower_bound = 0.0
    gram_s: Tensor
    sum_s: Tensor
    sq_s: Tensor
    n_s: Tensor
    gram_r: Tensor
    sum_r: Tensor
    sq_r: Tensor
    n_r: Tensor

    def __init__(self, num_features: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if not isinstance(num_features, int) or num_features < 1:
            raise ValueError(f"num_features must be a positive integer, got {num_features!r}")
        self.num_features = num_features
        for side in ("s", "r"):
            zeros = torch.zeros(num_features, dtype=torch.float64)
            self.add_state(
                f"gram_{side}",
                default=torch.zeros(num_features, num_features, dtype=torch.float64),
                dist_reduce_fx="sum",
            )
            self.add_state(f"sum_{side}", default=zeros.clone(), dist_reduce_fx="sum")
            self.add_state(f"sq_{side}", default=zeros.clone(), dist_reduce_fx="sum")
            self.add_state(f"n_{side}", default=torch.tensor(0, dtype=torch.long), dist_reduce_fx="sum")

    def update(self, synthetic: Tensor, real: Tensor) -> None:
        """Add a batch of synthetic ``(n_s, d)`` and real ``(n_r, d)`` features (either may have 0 rows)."""
        for side, feats in (("s", synthetic), ("r", real)):
            gram, total, sq, n = _spectrum_gap_update(feats, self.num_features)
            setattr(self, f"gram_{side}", getattr(self, f"gram_{side}") + gram)
            setattr(self, f"sum_{side}", getattr(self, f"sum_{side}") + total)
            setattr(self, f"sq_{side}", getattr(self, f"sq_{side}") + sq)
            setattr(self, f"n_{side}", getattr(self, f"n_{side}") + n.to(self.n_s.device))

    def compute(self) -> dict[str, Tensor]:
        """``{"hob_gap", "var_gap"}`` over everything seen."""
        return _spectrum_gap_compute(
            self.gram_s, self.sum_s, self.sq_s, self.n_s, self.gram_r, self.sum_r, self.sq_r, self.n_r
        )
