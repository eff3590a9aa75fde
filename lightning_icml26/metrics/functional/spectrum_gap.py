"""Functional feature-spectrum gap between synthetic and real features (FedUSD's bias diagnostic).

Two numbers: the HOB gap (sorted-entry Wasserstein-1 between the sign-canonical leading right-singular
vectors of the uncentred features) and the variance gap (the same distance between the per-dimension
unbiased variances). Both are computed from sufficient statistics (Gram matrix, sums, sums of squares,
count), which add up over batches and ranks.
"""

from __future__ import annotations

import torch
from torch import Tensor

__all__ = ["feature_spectrum_gap"]


def _spectrum_gap_update(features: Tensor, num_features: int) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    if not isinstance(features, Tensor):
        raise TypeError(f"features must be a torch.Tensor, got {type(features).__name__}")
    if features.ndim != 2 or features.shape[1] != num_features:
        raise ValueError(f"features must have shape (n, {num_features}), got {tuple(features.shape)}")
    f = features.detach().to(torch.float64)
    return f.T @ f, f.sum(0), f.pow(2).sum(0), torch.tensor(f.shape[0], dtype=torch.long, device=f.device)


def _canonical_top_eigvec(gram: Tensor) -> Tensor:
    v = torch.linalg.eigh(gram).eigenvectors[:, -1]
    sign = torch.sign(v[v.abs().argmax()])
    return v * (sign if sign != 0 else 1.0)


def _spectrum_gap_compute(
    gram_s: Tensor, sum_s: Tensor, sq_s: Tensor, n_s: Tensor, gram_r: Tensor, sum_r: Tensor, sq_r: Tensor, n_r: Tensor
) -> dict[str, Tensor]:
    if int(n_s) < 2 or int(n_r) < 2:
        raise ValueError(f"need at least 2 synthetic and 2 real samples, got {int(n_s)} and {int(n_r)}")

    def var(total: Tensor, sq: Tensor, n: Tensor) -> Tensor:
        return (sq - total.pow(2) / n) / (n - 1)

    hob = (_canonical_top_eigvec(gram_s).sort().values - _canonical_top_eigvec(gram_r).sort().values).abs().mean()
    gap = (var(sum_s, sq_s, n_s).sort().values - var(sum_r, sq_r, n_r).sort().values).abs().mean()
    return {"hob_gap": hob, "var_gap": gap}


def feature_spectrum_gap(synthetic: Tensor, real: Tensor) -> dict[str, Tensor]:
    """HOB and variance gaps between synthetic ``(n_s, d)`` and real ``(n_r, d)`` features.

    Args:
        synthetic: features of synthetic images.
        real: features of real images (same ``d``).

    Returns:
        ``{"hob_gap": ..., "var_gap": ...}`` float64 scalars (0 when the two sets are equal).

    Example:
        >>> x = torch.randn(10, 4)
        >>> {k: round(float(v), 6) for k, v in feature_spectrum_gap(x, x.flip(0)).items()}
        {'hob_gap': 0.0, 'var_gap': 0.0}
    """
    if not isinstance(synthetic, Tensor):
        raise TypeError(f"synthetic must be a torch.Tensor, got {type(synthetic).__name__}")
    if synthetic.ndim != 2:
        raise ValueError(f"synthetic must have shape (n, d), got {tuple(synthetic.shape)}")
    d = synthetic.shape[1]
    return _spectrum_gap_compute(*_spectrum_gap_update(synthetic, d), *_spectrum_gap_update(real, d))
