"""GeoReg: the geometric regulariser of LOES (spectral balance + class-centroid simplex area).

For a batch of embeddings ``Z (B, D)`` with labels ``y`` the penalty is (docs/loes.md; the reference
code's ``GeometricLoss``)::

    P(Z, y) = Var(eig(Cov(Z) + 1e-4 I)) - log(area(mu_a, mu_b, mu_c) + 1e-6)

where ``mu_a, mu_b, mu_c`` are the centroids of three distinct classes drawn at random among those present in
the batch and ``area`` is the triangle area ``1/2 sqrt(|ab|^2 |ac|^2 - (ab . ac)^2)``. A batch with fewer than
three classes contributes nothing (the term is skipped). The training loss is ``CE + w * P`` (``w = 0.1`` in
the reference code).

Implementation notes (deviations that do not change the value):

- ``Var(eig(C))`` is computed without an eigendecomposition, from ``sum(lambda) = tr C`` and
  ``sum(lambda^2) = ||C||_F^2`` (``C`` symmetric); the variance is the unbiased one (``torch.var``'s default,
  divisor ``D - 1``). This is exact and has a well-defined gradient even for repeated eigenvalues.
- ``Cov`` uses the unbiased divisor ``B - 1``.
- ``1e-12`` is added under the square root of the area so that its gradient stays finite for collinear
  centroids.

This module imports torch only.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

__all__ = ["GeoRegLoss", "georeg_penalty", "spectral_variance", "triangle_area"]


def spectral_variance(z: Tensor, eps: float = 1e-4) -> Tensor:
    """Unbiased variance of the eigenvalues of ``Cov(z) + eps * I``.

    Args:
        z: ``(B, D)`` batch of embeddings, ``B >= 2``.
        eps: ridge added to the covariance.

    Returns:
        A scalar tensor (differentiable in ``z``).

    Example:
        >>> z = torch.tensor([[1.0, 0.0], [-1.0, 0.0]])
        >>> round(spectral_variance(z).item(), 4)  # eigenvalues 2 + 1e-4 and 1e-4
        2.0
    """
    if z.ndim != 2 or z.shape[0] < 2:
        raise ValueError(f"z must be (B, D) with B >= 2, got shape {tuple(z.shape)}")
    dim = z.shape[1]
    zc = z - z.mean(dim=0, keepdim=True)
    cov = zc.T @ zc / (z.shape[0] - 1) + eps * torch.eye(dim, dtype=z.dtype, device=z.device)
    trace = torch.diagonal(cov).sum()
    sq = (cov * cov).sum()
    return (sq - trace * trace / dim) / max(dim - 1, 1)


def triangle_area(a: Tensor, b: Tensor, c: Tensor) -> Tensor:
    """Area of the triangle ``(a, b, c)`` in any dimension (Lagrange identity).

    Args:
        a: ``(..., D)`` first vertex.
        b: ``(..., D)`` second vertex.
        c: ``(..., D)`` third vertex.

    Returns:
        ``(...)`` areas.

    Example:
        >>> triangle_area(torch.zeros(3), torch.tensor([2.0, 0, 0]), torch.tensor([0.0, 3, 0])).item()
        3.0
    """
    ab, ac = b - a, c - a
    gram = (ab * ab).sum(-1) * (ac * ac).sum(-1) - (ab * ac).sum(-1) ** 2
    return 0.5 * torch.sqrt(gram.clamp_min(0.0) + 1e-12)


def georeg_penalty(
    z: Tensor,
    y: Tensor,
    generator: torch.Generator | None = None,
    cov_eps: float = 1e-4,
    area_eps: float = 1e-6,
) -> tuple[Tensor, bool]:
    """The GeoReg penalty ``Var(eig(Cov(z) + cov_eps I)) - log(area + area_eps)`` on one batch.

    Args:
        z: ``(B, D)`` embeddings.
        y: ``(B,)`` integer class labels.
        generator: CPU generator for the draw of the three classes (seed it for reproducibility).
        cov_eps: ridge of the covariance.
        area_eps: added to the area inside the log.

    Returns:
        ``(penalty, skipped)``: ``skipped`` is ``True`` (and the penalty a zero scalar without graph) when the
        batch holds fewer than three classes.

    Raises:
        ValueError: if the shapes do not match.

    Example:
        >>> z = torch.tensor([[0.0, 0.0], [2.0, 0.0], [0.0, 2.0]])
        >>> pen, skipped = georeg_penalty(z, torch.tensor([0, 1, 2]))
        >>> expected = spectral_variance(z) - torch.log(torch.tensor(2.0 + 1e-6))  # the triangle's area is 2
        >>> skipped, torch.allclose(pen, expected)
        (False, True)
        >>> georeg_penalty(z, torch.tensor([0, 0, 1]))[1]
        True
    """
    if z.ndim != 2:
        raise ValueError(f"z must be (B, D), got shape {tuple(z.shape)}")
    if y.ndim != 1 or y.shape[0] != z.shape[0]:
        raise ValueError(f"y must be (B,) with B = {z.shape[0]}, got shape {tuple(y.shape)}")
    if y.is_floating_point():
        raise TypeError(f"y must hold integer class labels, got dtype {y.dtype}")
    classes = torch.unique(y)
    if classes.numel() < 3:
        return z.new_zeros(()), True
    pick = classes[torch.randperm(classes.numel(), generator=generator)[:3].to(classes.device)]
    centroids = torch.stack([z[y == c].mean(dim=0) for c in pick])
    area = triangle_area(centroids[0], centroids[1], centroids[2])
    return spectral_variance(z, cov_eps) - torch.log(area + area_eps), False


class GeoRegLoss(nn.Module):
    """GeoReg penalty as a module with a seeded generator for the class-triplet draw.

    Args:
        cov_eps: ridge of the covariance (reference: ``1e-4``).
        area_eps: added to the area inside the log (reference: ``1e-6``).
        seed: seed of the triplet draw.

    Attributes:
        last_skipped: whether the last call skipped its batch (fewer than three classes).

    Example:
        >>> loss = GeoRegLoss(seed=0)
        >>> z = torch.randn(12, 4, requires_grad=True)
        >>> pen = loss(z, torch.arange(12) % 4)
        >>> pen.backward(); loss.last_skipped, z.grad.shape
        (False, torch.Size([12, 4]))
    """

    def __init__(self, cov_eps: float = 1e-4, area_eps: float = 1e-6, seed: int = 0) -> None:
        super().__init__()
        if cov_eps < 0 or area_eps <= 0:
            raise ValueError(f"cov_eps must be >= 0 and area_eps > 0, got {cov_eps} and {area_eps}")
        self.cov_eps = cov_eps
        self.area_eps = area_eps
        self.seed = seed
        self.generator = torch.Generator().manual_seed(seed)
        self.last_skipped = False

    def reseed(self, seed: int) -> None:
        """Restart the triplet draw from ``seed``."""
        self.seed = seed
        self.generator.manual_seed(seed)

    def forward(self, z: Tensor, y: Tensor) -> Tensor:
        """Penalty of the batch ``(z, y)``; a zero scalar when it has fewer than three classes."""
        penalty, self.last_skipped = georeg_penalty(z, y, self.generator, self.cov_eps, self.area_eps)
        return penalty
