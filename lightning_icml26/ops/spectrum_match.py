"""Feature-distribution matching losses for synthetic-data federated learning (FedUSD, DM).

Every loss compares a synthetic feature matrix ``(..., n_s, d)`` with a real one ``(..., n_r, d)`` (the
leading dimensions broadcast, e.g. one entry per class) and returns one value per leading index. All are
differentiable with respect to both inputs.

* :func:`hob_w1_loss`: the leading right-singular vector of the *uncentred* features (the high-energy
  orthogonal base, HOB, with one direction), its sign canonicalised so that its largest-magnitude entry is
  positive, the two vectors compared as 1-D distributions of their entries (Wasserstein-1 between the sorted
  entries). The canonical sign is an addition: singular vectors are defined up to sign only.
* :func:`var_w1_loss`: the per-dimension variances, compared the same way (sorted entries, Wasserstein-1).
* :func:`hob_projection_loss`: the top-``k`` principal directions of the *centred* features compared by the
  squared Frobenius distance of their projectors, ``2k - 2 ||U_s^T U_r||_F^2`` (sign- and rotation-free).
* :func:`mean_matching_loss`: squared distance of the mean features (distribution matching, DM).

Gradients of the singular vectors: ``torch.linalg.svd``'s backward divides by ``s_i^2 - s_j^2`` for *every*
pair of singular values, so features with two equal singular values, even two zeros that the loss never
looks at (ReLU features with dead units, a rank-deficient batch: exactly FedUSD's synthetic features), give a
``0 * inf = nan`` gradient, the synthetic images turn into NaN at the next step and the SVD after it fails.
:func:`top_right_singular_vectors` keeps only the terms of the top-``k`` directions against the others,
``1 / (s_i^2 - s_j^2)`` with ``i <= k < j``, which are finite whenever the top-``k`` subspace is well defined.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

__all__ = [
    "hob_projection_loss",
    "hob_w1_loss",
    "leading_right_singular_vector",
    "mean_matching_loss",
    "principal_subspace",
    "sorted_w1",
    "subspace_projection_distance",
    "top_right_singular_vectors",
    "var_w1_loss",
]


def _check_features(synthetic: Tensor, real: Tensor, min_rows: int = 1) -> None:
    for name, value in (("synthetic", synthetic), ("real", real)):
        if not isinstance(value, Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(value).__name__}")
        if value.ndim < 2:
            raise ValueError(f"{name} must have shape (..., n, d), got shape {tuple(value.shape)}")
        if value.shape[-2] < min_rows:
            raise ValueError(f"{name} needs at least {min_rows} rows (samples), got shape {tuple(value.shape)}")
    if synthetic.shape[-1] != real.shape[-1]:
        raise ValueError(
            f"synthetic and real features must share the feature dimension, got synthetic shape "
            f"{tuple(synthetic.shape)} and real shape {tuple(real.shape)}"
        )
    try:
        torch.broadcast_shapes(synthetic.shape[:-2], real.shape[:-2])
    except RuntimeError as err:
        raise ValueError(
            f"the leading (batch) dimensions of synthetic {tuple(synthetic.shape)} and real "
            f"{tuple(real.shape)} do not broadcast"
        ) from err


def sorted_w1(a: Tensor, b: Tensor) -> Tensor:
    """Wasserstein-1 distance between the entry sets of ``a`` and ``b`` along the last dimension.

    Both sets have the same size ``d``, so the distance is the mean absolute difference of the sorted entries.

    Args:
        a: ``(..., d)``.
        b: ``(..., d)`` (leading dimensions broadcast with ``a``).

    Returns:
        ``(...)`` distances.

    Example:
        >>> sorted_w1(torch.tensor([3.0, 1.0]), torch.tensor([0.0, 2.0]))
        tensor(1.)
    """
    if a.shape[-1] != b.shape[-1]:
        raise ValueError(f"a and b must have the same last dimension, got {tuple(a.shape)} and {tuple(b.shape)}")
    return (a.sort(dim=-1).values - b.sort(dim=-1).values).abs().mean(dim=-1)


class _TopRightSingular(torch.autograd.Function):
    """Top-``k`` right-singular vectors with the gradient of their subspace (see the module's notes)."""

    @staticmethod
    def forward(ctx: Any, features: Tensor, k: int) -> Tensor:
        u, s, vh = torch.linalg.svd(features, full_matrices=False)
        ctx.save_for_backward(features, s, vh)
        ctx.k = k
        return vh[..., :k, :].transpose(-1, -2)

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> tuple[Tensor, None]:
        features, s, vh = ctx.saved_tensors
        k = ctx.k
        v = vh.transpose(-1, -2)  # (..., d, r)
        lam = s.pow(2)  # eigenvalues of X^T X, descending
        kept, rest = v[..., :k], v[..., k:]
        lam_kept = lam[..., :k]
        scale = lam[..., :1].clamp_min(torch.finfo(lam.dtype).tiny)
        tol = torch.finfo(lam.dtype).eps * scale * max(features.shape[-2:])
        # the other singular directions: 1 / (lam_i - lam_j), i kept, j not (zero where undefined)
        gap = lam_kept.unsqueeze(-1) - lam[..., k:].unsqueeze(-2)  # (..., k, r - k)
        inv_gap = torch.where(gap > tol.unsqueeze(-1), 1.0 / gap.clamp_min(tol.unsqueeze(-1)), torch.zeros_like(gap))
        coeff = (rest.transpose(-1, -2) @ grad) * inv_gap.transpose(-1, -2)  # (..., r - k, k)
        w = rest @ coeff
        # the null space of X (eigenvalue 0): (I - V V^T) g_i / lam_i
        null = grad - v @ (v.transpose(-1, -2) @ grad)
        inv_lam = torch.where(lam_kept > tol, 1.0 / lam_kept.clamp_min(tol), torch.zeros_like(lam_kept))
        w = w + null * inv_lam.unsqueeze(-2)
        # d(loss)/dX = sum_i (X v_i) w_i^T + (X w_i) v_i^T
        grad_features = (features @ kept) @ w.transpose(-1, -2) + (features @ w) @ kept.transpose(-1, -2)
        return grad_features, None


def top_right_singular_vectors(features: Tensor, k: int = 1) -> Tensor:
    """The top-``k`` right-singular vectors ``(..., d, k)`` of ``(..., n, d)`` features, with a stable gradient.

    The value is ``torch.linalg.svd``'s. The gradient is that of the top-``k`` subspace: it involves only the
    gaps between the kept singular values and the others, so repeated singular values outside the top ``k``
    (dead ReLU units, rank-deficient batches) leave it finite, where ``torch.linalg.svd``'s is NaN. For
    ``k = 1`` it is the exact gradient of the leading vector; for ``k > 1`` the rotations within the subspace
    are left out (every loss of the projector, such as :func:`subspace_projection_distance`, ignores them).
    A pair with equal singular values across the cut (an ill-defined subspace) contributes no gradient.

    Args:
        features: ``(..., n, d)``.
        k: number of directions, ``1 <= k <= min(n, d)``.

    Example:
        >>> x = torch.cat([torch.randn(6, 3), torch.zeros(6, 3)], dim=1).requires_grad_()
        >>> top_right_singular_vectors(x, 1).sum().backward()
        >>> bool(torch.isfinite(x.grad).all())
        True
    """
    n, d = features.shape[-2], features.shape[-1]
    if not isinstance(k, int) or k < 1 or k > min(n, d):
        raise ValueError(f"k must be an integer in [1, min(n, d)] = [1, {min(n, d)}] (n={n}, d={d}), got {k}")
    out: Tensor = _TopRightSingular.apply(features, k)
    return out


def leading_right_singular_vector(features: Tensor) -> Tensor:
    """Leading right-singular vector of the uncentred ``(..., n, d)`` features, largest-|entry| positive.

    Args:
        features: ``(..., n, d)``.

    Returns:
        ``(..., d)`` unit vectors.

    Example:
        >>> v = leading_right_singular_vector(torch.tensor([[0.0, -2.0], [0.0, -1.0]]))
        >>> v.tolist()
        [0.0, 1.0]
    """
    _check_features(features, features)
    v = top_right_singular_vectors(features, 1)[..., 0]
    pick = v.abs().argmax(dim=-1, keepdim=True)
    sign = torch.sign(v.gather(-1, pick)).detach()
    sign = torch.where(sign == 0, torch.ones_like(sign), sign)
    return v * sign


def hob_w1_loss(synthetic: Tensor, real: Tensor) -> Tensor:
    """Sorted-entry Wasserstein-1 between the sign-canonical leading right-singular vectors (HOB, k = 1).

    Args:
        synthetic: ``(..., n_s, d)`` features of synthetic images.
        real: ``(..., n_r, d)`` features of real images.

    Returns:
        ``(...)`` losses (0 for identical features; unchanged by permuting samples or by ``features -> -features``).

    Example:
        >>> x = torch.randn(6, 4)
        >>> float(hob_w1_loss(x, x[torch.randperm(6)])) < 1e-6
        True
    """
    _check_features(synthetic, real)
    return sorted_w1(leading_right_singular_vector(synthetic), leading_right_singular_vector(real))


def var_w1_loss(synthetic: Tensor, real: Tensor, correction: int = 1) -> Tensor:
    """Sorted-entry Wasserstein-1 between the per-dimension feature variances.

    Args:
        synthetic: ``(..., n_s, d)``.
        real: ``(..., n_r, d)``.
        correction: variance degrees-of-freedom correction (1: unbiased, torch's default; 0: population).

    Returns:
        ``(...)`` losses.

    Example:
        >>> s = torch.tensor([[0.0, 0.0], [2.0, 4.0]]); r = torch.tensor([[0.0, 0.0], [4.0, 2.0]])
        >>> var_w1_loss(s, r)
        tensor(0.)
    """
    if correction not in (0, 1):
        raise ValueError(f"correction must be 0 or 1, got {correction}")
    _check_features(synthetic, real, min_rows=1 + correction)
    return sorted_w1(synthetic.var(dim=-2, correction=correction), real.var(dim=-2, correction=correction))


def principal_subspace(features: Tensor, k: int = 1) -> Tensor:
    """Orthonormal basis ``(..., d, k)`` of the top-``k`` eigenvectors of the feature covariance.

    Computed from the SVD of the centred features (the right-singular vectors), which avoids forming the
    covariance matrix.

    Args:
        features: ``(..., n, d)``.
        k: number of directions, ``1 <= k <= min(n, d)``.

    Example:
        >>> f = torch.tensor([[1.0, 0.0], [-1.0, 0.0], [0.0, 0.1], [0.0, -0.1]])
        >>> principal_subspace(f, 1).abs().squeeze(-1).tolist()
        [1.0, 0.0]
    """
    _check_features(features, features)
    n, d = features.shape[-2], features.shape[-1]
    if not isinstance(k, int) or k < 1 or k > min(n, d):
        raise ValueError(f"k must be an integer in [1, min(n, d)] = [1, {min(n, d)}] (n={n}, d={d}), got {k}")
    centred = features - features.mean(dim=-2, keepdim=True)
    return top_right_singular_vectors(centred, k)


def subspace_projection_distance(basis_s: Tensor, basis_r: Tensor) -> Tensor:
    """``||U_s U_s^T - U_r U_r^T||_F^2 = 2k - 2 ||U_s^T U_r||_F^2`` for orthonormal ``(..., d, k)`` bases.

    Example:
        >>> e = torch.eye(3)
        >>> subspace_projection_distance(e[:, :1], e[:, 1:2])
        tensor(2.)
    """
    if basis_s.shape[-2:] != basis_r.shape[-2:]:
        raise ValueError(
            f"basis_s and basis_r must both be (..., d, k) with equal d and k, got {tuple(basis_s.shape)} "
            f"and {tuple(basis_r.shape)}"
        )
    k = basis_s.shape[-1]
    overlap = basis_s.transpose(-1, -2) @ basis_r
    return 2.0 * k - 2.0 * overlap.pow(2).sum(dim=(-2, -1))


def hob_projection_loss(synthetic: Tensor, real: Tensor, k: int = 1) -> Tensor:
    """Projection distance between the top-``k`` covariance eigenspaces of synthetic and real features.

    Args:
        synthetic: ``(..., n_s, d)``.
        real: ``(..., n_r, d)``.
        k: number of principal directions (at most the feature dimension and each sample count).

    Returns:
        ``(...)`` losses in ``[0, 2k]``.

    Example:
        >>> x = torch.randn(8, 5)
        >>> float(hob_projection_loss(x, 3.0 * x + 1.0, k=2)) < 1e-5
        True
    """
    _check_features(synthetic, real)
    d = synthetic.shape[-1]
    if not isinstance(k, int) or k < 1 or k > d:
        raise ValueError(f"k must be an integer in [1, d] with feature dimension d={d}, got {k}")
    return subspace_projection_distance(principal_subspace(synthetic, k), principal_subspace(real, k))


def mean_matching_loss(synthetic: Tensor, real: Tensor) -> Tensor:
    """Squared Euclidean distance between the mean features (distribution matching, DM).

    Example:
        >>> mean_matching_loss(torch.tensor([[1.0, 1.0]]), torch.tensor([[0.0, 0.0], [0.0, 2.0]]))
        tensor(1.)
    """
    _check_features(synthetic, real)
    return (synthetic.mean(dim=-2) - real.mean(dim=-2)).pow(2).sum(dim=-1)
