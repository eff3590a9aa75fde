"""GeoReg: the geometric regulariser of LOES (spectral balance + class-centroid simplex area).

For a batch of embeddings ``Z (B, D)`` with labels ``y`` the penalty is (docs/loes.md; the reference
code's ``GeometricLoss``)::

    P(Z, y) = Var(eig(Cov(Z) + 1e-4 I)) - log(area(mu_a, mu_b, mu_c) + 1e-6)

where ``mu_a, mu_b, mu_c`` are the centroids of three distinct classes drawn at random among those present in
the batch and ``area`` is the triangle area ``1/2 sqrt(|ab|^2 |ac|^2 - (ab . ac)^2)``. A batch with fewer than
three classes contributes nothing (the term is skipped). The training loss is ``CE + w * P`` (``w = 0.1`` in
the reference code).

Implementation notes (deviations that do not change the value, only its rounding):

- ``Var(eig(C))`` is computed without an eigendecomposition, from ``sum(lambda) = tr C`` and
  ``sum(lambda^2) = ||C||_F^2`` (``C`` symmetric); the variance is the unbiased one (``torch.var``'s default,
  divisor ``D - 1``). This is exact and has a well-defined gradient even for repeated eigenvalues. The ridge
  ``eps I`` shifts every eigenvalue by ``eps`` and so leaves their variance unchanged: it cancels exactly and is
  not formed. With ``Zc`` the centred batch, ``tr C = ||Zc||_F^2 / (B - 1)`` and
  ``||Zc^T Zc||_F = ||Zc Zc^T||_F``, so the Gram matrix is taken on the smaller side (``B x B`` or ``D x D``).
- ``Cov`` uses the unbiased divisor ``B - 1``.
- The three centroids are never formed one by one: the two edge vectors ``mu_b - mu_a`` and ``mu_c - mu_a``
  are one product ``A @ Zc`` with a constant ``(2, B)`` matrix ``A`` of class-mean weights built from the
  labels (no gradient flows through it), and their three dot products are one ``2 x 2`` product.
- When ``z`` requires a gradient, the gradient in ``z`` is computed in closed form in the forward pass (about
  a dozen more operations) and the penalty enters the graph as one node whose backward is one multiply, in
  place of about thirty small nodes; it matches autograd through the per-class formula to rounding
  (tests/callbacks/test_georeg.py). That node is differentiable once: a second derivative
  (``create_graph=True``, then a backward through the gradient) raises, and ``torch.func`` transforms are not
  supported.
- ``1e-12`` is added under the square root of the area so that its gradient stays finite for collinear
  centroids.

This module imports torch only.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor, nn
from torch.autograd.function import once_differentiable

__all__ = ["GeoRegLoss", "georeg_penalty", "spectral_variance", "triangle_area"]


def spectral_variance(z: Tensor, eps: float = 1e-4) -> Tensor:
    """Unbiased variance of the eigenvalues of ``Cov(z) + eps * I``.

    Args:
        z: ``(B, D)`` batch of embeddings, ``B >= 2``.
        eps: ridge added to the covariance, ``>= 0``. It shifts every eigenvalue by ``eps`` and so leaves
            their variance unchanged (it is validated, not computed with).

    Returns:
        A scalar tensor (differentiable in ``z``).

    Example:
        >>> z = torch.tensor([[1.0, 0.0], [-1.0, 0.0]])
        >>> round(spectral_variance(z).item(), 4)  # eigenvalues 2 + 1e-4 and 1e-4
        2.0
    """
    if z.ndim != 2 or z.shape[0] < 2:
        raise ValueError(f"z must be (B, D) with B >= 2, got shape {tuple(z.shape)}")
    if not eps >= 0:
        raise ValueError(f"eps must be >= 0, got {eps!r}")
    return _spectral_terms(z - z.mean(dim=0, keepdim=True))[2]


def _spectral_terms(zc: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """``(K, tr Cov, variance)`` of a centred ``(B, D)`` batch ``zc``, with one Gram product on the smaller side.

    ``K`` is ``zc zc^T / (B - 1)`` when ``B <= D``, else ``Cov = zc^T zc / (B - 1)``; both have the trace and the
    Frobenius norm of ``Cov`` (scaled like ``Cov``: the same range in half precision).
    """
    n, dim = zc.shape
    gram = (zc @ zc.mT if n <= dim else zc.mT @ zc).div_(n - 1)
    trace = gram.diagonal().sum()
    spread = max(dim - 1, 1)
    return gram, trace, torch.addcmul(gram.square().sum() / spread, trace, trace, value=-1.0 / (dim * spread))


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
        cov_eps: ridge of the covariance (it does not change the value: see :func:`spectral_variance`).
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
    edges = _centroid_edges(y, pick, z.dtype)
    if torch.is_grad_enabled() and z.requires_grad:
        return _GeoRegPenalty.apply(z, edges, area_eps), False
    return _penalty(z, edges, area_eps, with_grad=False)[0], False


def _centroid_edges(y: Tensor, pick: Tensor, dtype: torch.dtype) -> Tensor:
    """The constant ``(2, B)`` matrix ``A`` with ``A @ z = (mu_b - mu_a, mu_c - mu_a)`` for the classes ``pick``."""
    member = (y.unsqueeze(0) == pick.unsqueeze(1)).to(dtype)  # (3, B) one-hot rows
    weights = member / member.sum(dim=1, keepdim=True)  # row k averages class pick[k]
    return weights[1:] - weights[:1]


def _penalty(z: Tensor, edges: Tensor, area_eps: float, with_grad: bool) -> tuple[Tensor, Tensor | None]:
    """The penalty of ``z`` (no graph) and, ``with_grad``, its gradient in ``z`` in closed form.

    ``edges`` is the constant ``(2, B)`` matrix of :func:`_centroid_edges`. With ``Zc`` the centred batch,
    ``S = Zc^T Zc / (B - 1)``, ``t = tr S``, ``k = max(D - 1, 1)``, ``E = A Zc`` the two triangle edges,
    ``G = E E^T``, ``g = G00 G11 - G01^2``, ``r = sqrt(max(g, 0) + 1e-12)`` and ``s = r / 2 + area_eps``:

    - value ``(||S||_F^2 - t^2 / D) / k - log s``;
    - ``d/dZc`` of the variance ``4 (Zc S - (t / D) Zc) / (k (B - 1))`` (``Zc S = (Zc Zc^T / (B - 1)) Zc``);
    - ``d/dE`` of ``-log s``: ``2 c adj(G) E`` with ``c = -1 / (4 r s)`` where ``g >= 0`` (else 0, as
      ``clamp_min``) and ``adj(G) = [[G11, -G01], [-G10, G00]] = tr(G) I - G``; ``d/dZc = A^T d/dE``;
    - ``d/dZ`` is ``d/dZc`` minus its column means (the centring), as autograd would return it.
    """
    n, dim = z.shape
    zc = z - z.mean(dim=0, keepdim=True)
    gram_z, trace, variance = _spectral_terms(zc)
    sides = edges @ zc  # (mu_b - mu_a, mu_c - mu_a); centring leaves them unchanged
    dots = sides @ sides.mT  # [[ab.ab, ab.ac], [ac.ab, ac.ac]]
    d00, d01, _, d11 = dots.view(4).unbind()
    lagrange = torch.addcmul(d00 * d11, d01, d01, value=-1.0)
    root = lagrange.clamp_min(0.0).add_(1e-12).sqrt_()
    shifted = root.mul(0.5).add_(area_eps)  # area + area_eps
    value = variance - shifted.log()
    if not with_grad:
        return value, None
    zc_cov = gram_z @ zc if n <= dim else zc @ gram_z  # Zc S
    grad = torch.addcmul(zc_cov, zc, trace, value=-1.0 / dim)  # Zc S - (t / D) Zc
    coef = (lagrange >= 0) / (root * shifted)  # -2 c; clamp_min passes no gradient below 0
    adjugate_sides = torch.addmm(sides * dots.trace(), dots, sides, alpha=-1.0).mul_(coef)  # adj(G) = tr(G) I - G
    grad.addmm_(edges.mT, adjugate_sides, beta=4.0 / (max(dim - 1, 1) * (n - 1)), alpha=-0.5)
    return value, grad.sub_(grad.mean(dim=0, keepdim=True))


class _GeoRegPenalty(torch.autograd.Function):
    """The penalty with its closed-form gradient: one node in the graph instead of about thirty."""

    @staticmethod
    def forward(ctx: Any, z: Tensor, edges: Tensor, area_eps: float) -> Tensor:
        value, grad = _penalty(z, edges, area_eps, with_grad=True)
        ctx.save_for_backward(grad)
        ctx.z_dtype = z.dtype
        return value

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, grad_output: Tensor) -> tuple[Tensor, None, None]:
        (grad,) = ctx.saved_tensors
        return (grad * grad_output).to(ctx.z_dtype), None, None


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
